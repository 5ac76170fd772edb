"""The RoCEv2 ICRC: the CRC-32 of Ethernet (IEEE 802.3; zlib's ``crc32``), computed by
``amaranth.lib.crc`` from its catalog entry, one 32-bit word per clock."""

from __future__ import annotations

from amaranth.lib.crc import Processor
from amaranth.lib.crc.catalog import CRC32_ETHERNET

__all__ = ["icrc_processor"]


def icrc_processor(data_bits: int = 32) -> Processor:
    """A CRC-32 (Ethernet) processor over ``data_bits``-bit words.  A word's bit 0 enters first
    (Ethernet sends each byte LSB first), so wire byte i of a word sits in bits [8i, 8i+8).
    ``start`` reloads the initial value; ``crc`` is the final value (reflected, complemented),
    sent least significant byte first."""
    return CRC32_ETHERNET(data_width=data_bits).create()
