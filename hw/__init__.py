"""Amaranth RTL of the congestion-control engines (source; `gateware/` holds what is built from it)."""
