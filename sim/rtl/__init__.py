"""The Verilated RTL in the loop: :mod:`sim.rtl.bridge` (build and drive a top through ctypes)
and :mod:`sim.rtl.engines` (the ``"rtl"`` congestion engines of :mod:`sim.net.engine_api`)."""
