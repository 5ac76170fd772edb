"""Configuration of the calendar timer service (:mod:`hw.nic.timer_calendar`): one-cycle slots,
each holding any number of entries in a linked list, so that no insert searches for a free
slot and nothing can overflow (see :class:`TimerCalendarConfig`)."""

from __future__ import annotations

from dataclasses import dataclass

from ..params import BlockConfig, ConfigError, bits_for, check_int
from .timer_wheel_config import SlotRing

__all__ = ["TimerCalendarConfig", "INSERT_LATENCY", "LOOKAHEAD", "POP_BUFFER", "HEAD_QUEUE",
           "LOOKAHEAD_WORDS"]

#: The cursor issues the slots due by ``now + LOOKAHEAD``: an issued slot's head is read one
#: cycle later (the address from a register), arrives from the head RAM two cycles after
#: that (latency 2), is registered (the head RAM's bank multiplexer and the route from the
#: block-RAM columns are a cycle of their own), enters the pop buffer in the next cycle and
#: is on ``pop`` in the one after.
LOOKAHEAD = 5
#: An insert accepted at ``now == n`` pops at ``n + INSERT_LATENCY`` at the earliest: it is
#: visible to the cursor from ``n + 5`` (the target over two stages, n and n + 1, the bitmap
#: read issued at n + 2, data and the read-modify-write at n + 4, written into the cursor's
#: registers at its end), and the cursor issues it ``LOOKAHEAD`` cycles before its time, so
#: ``5 + LOOKAHEAD``.
INSERT_LATENCY = 5 + LOOKAHEAD
#: Entries of the pop buffer (registers; two are enough for one pop per cycle with the room
#: counted from the registered level).
POP_BUFFER = 2
#: Entries of the head queue: heads read while a list is still being chased wait there, in
#: slot order; the cursor issues only while the queue has room for every head in flight
#: (up to 4: one issue per cycle, 4 cycles from the issue to the sequencer).
HEAD_QUEUE = 5
#: Bitmap words the cursor holds ahead of its own word (registers) plus the reads in flight
#: (3 cycles each: the block RAM's latency 2, then the raw word registered before it is
#: masked and placed); 5 keeps one word per cycle through empty words.
LOOKAHEAD_WORDS = 5


def _pow2(owner, field, value, lo, hi):
    check_int(owner, field, value, lo, hi)
    if value & (value - 1):
        raise ConfigError(owner, field, value, f"a power of two, {lo} <= {field} <= {hi}")
    return value


@dataclass(frozen=True)
class TimerCalendarConfig(SlotRing, BlockConfig):
    """Calendar sizing.

    - ``slots`` (S): one-cycle slots (slot = time mod S), a power of two, at least 8 bitmap
      words; a slot holds any number of entries.
    - ``horizon`` (H): targets beyond ``now + H`` are parked at ``now + H`` (when the cursor
      lags by more than a word, at the cursor's word end + H), the wheel's rule.
      ``5 * word_bits <= H <= slots - 2 * word_bits``: a target lies at most H + B slots
      after the cursor's word, so it never aliases a slot of the cursor's window, and a
      parked entry lands at least 5 words ahead of the cursor (which moves one word per
      cycle), so it is visible (from n + 5) before the cursor can leave its word.  No
      capacity rule: the lists are unbounded (the user guarantees an id is in the calendar
      at most once).
    - ``flow_bits``, ``gen_bits``: the entry id is {flow, gen}; the link RAM has
      ``2 ** (flow_bits + gen_bits)`` words.
    - ``time_width`` (W): width of ``now`` and deadlines, ``W >= log2(S) + 2``.
    - ``word_bits`` (B): bits per occupancy-bitmap word (the cursor skips one word per cycle).
    """

    slots: int = 65536
    horizon: int = 32768
    flow_bits: int = 12
    gen_bits: int = 2
    time_width: int = 26
    word_bits: int = 32

    def __post_init__(self):
        _pow2(self, "word_bits", self.word_bits, 8, 64)
        _pow2(self, "slots", self.slots, 8 * self.word_bits, 1 << 24)
        check_int(self, "flow_bits", self.flow_bits, 1, 20)
        check_int(self, "gen_bits", self.gen_bits, 1, 4)
        check_int(self, "time_width", self.time_width, self.slot_bits + 2, 48,
                  lo_name="log2(slots) + 2")
        check_int(self, "horizon", self.horizon, 5 * self.word_bits,
                  self.slots - 2 * self.word_bits, lo_name="5 * word_bits",
                  hi_name="slots - 2 * word_bits")

    # -- derived -------------------------------------------------------------------------
    @property
    def id_bits(self) -> int:
        return self.flow_bits + self.gen_bits

    @property
    def occ_width(self) -> int:
        """Width of ``occupancy``: every id at once fits."""
        return bits_for(1 << self.id_bits)

    @property
    def insert_latency(self) -> int:
        return INSERT_LATENCY

    @property
    def lookahead(self) -> int:
        return LOOKAHEAD

    def bram_bits(self) -> dict:
        """Block-RAM bits: head RAM (S x (id + more)), link RAM (2**id x (id + more)),
        bitmap (S bits, one copy)."""
        return {"head_ram": self.slots * (self.id_bits + 1),
                "link_ram": (1 << self.id_bits) * (self.id_bits + 1), "bitmap": self.slots}
