"""The Verilated RTL in the loop: :mod:`sim.rtl.bridge` (build and drive a top through ctypes),
:mod:`sim.rtl.engines` (the ``"rtl"`` rate engines of :mod:`sim.net.engine_api`: DCQCN and QCN
reaction points) and :mod:`sim.rtl.ldcp` (the ``"rtl"`` LDCP sender and receiver)."""
