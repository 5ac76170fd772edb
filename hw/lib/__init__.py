"""Shared RTL helpers: logic that more than one block needs lives here once.

``arith``     saturating increment, popcount, unsigned min/max, named wires
``checksum``  the RFC 1071 ones'-complement sum and the 16-bit words it adds
``frame``     headers as Values (pack, wire bytes, view over bytes) and the frame shift-out
``crc``       the RoCEv2 ICRC (CRC-32 of Ethernet) through ``amaranth.lib.crc``
``axis``      AXI-Stream ports for the frame streams (``AxisWrapper``, adapters)
"""
