"""Test infrastructure shared by every block's cocotb testbench.

- :mod:`.build`: export a configuration to Verilog in its own build folder, build it with
  Verilator once per test session (file-locked, so parallel pytest workers share it), and run a
  cocotb test module on it under pytest.
- :mod:`.stream`: driver and monitor for Amaranth ``x__payload / x__valid / x__ready`` streams,
  with idle and back-pressure patterns.
- :mod:`.scoreboard`: in-order comparison against a golden model, empty at the end.
- :mod:`.tb`: clock, reset and the seed every testbench prints.
"""
