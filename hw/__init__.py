"""Amaranth RTL of the congestion-control engines.

This is the source; `gateware/` holds what is built from it (Verilog, lint, synthesis).
"""
