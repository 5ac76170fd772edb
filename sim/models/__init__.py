"""Bit-exact integer golden models: same widths, rounding and order of operations as the RTL.

Pure Python over transactions, free of simulator imports; they run under plain pytest in
milliseconds and are what the cocotb testbenches compare the Verilated RTL against.
"""
