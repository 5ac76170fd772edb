"""Configuration of the timer service (:mod:`hw.nic.timer_wheel`): a timing wheel of one-cycle
slots with an occupancy bitmap, sized so that "no free slot" cannot happen.

Capacity argument (why ``overflow`` is unreachable under a validated configuration).  An entry
is placed at the first free slot at or after its target; the target is at most ``H +
word_bits - 1`` slots after the cursor's word (parking, see :class:`TimerWheelConfig`), and the
slots it skips are all occupied, by at most ``max_entries - 1`` other entries.  So the slot
chosen lies less than ``H + word_bits + max_entries - 1`` slots after the cursor's word, and the
wheel's window (``slots`` slots from the cursor's word) holds it if ``slots >= horizon +
max_entries + word_bits``: that is the rule checked here.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..params import BlockConfig, ConfigError, bits_for, check_int

__all__ = ["SlotRing", "TimerWheelConfig", "INSERT_LATENCY", "INSERT_LATENCIES", "POP_BUFFER"]

#: An entry accepted on ``ins`` in the cycle where ``now == n`` can pop (``pop.valid``) at the
#: earliest in the cycle where ``now == n + INSERT_LATENCY``: the insert stage, the search
#: stage, the decision stage (bitmap write) and the pop stage (slot RAM read).  A deadline
#: nearer than that is placed at ``n + INSERT_LATENCY`` (late by the difference).  This is the
#: default (``TimerWheelConfig.insert_latency``); 5 adds a stage that registers the bitmap
#: reads before the decision uses them (see :mod:`hw.nic.timer_wheel`).
INSERT_LATENCY = 4
#: The insert latencies the wheel can be built with (6: 5 plus the pop buffer, see
#: :attr:`TimerWheelConfig.pop_buffer`).
INSERT_LATENCIES = (4, 5, 6)
#: Entries of the pop buffer (insert latency 6): the two pops in flight through the slot RAM
#: and one more, so that pops issue one per cycle while the consumer takes them.
POP_BUFFER = 3


def _pow2(owner, field, value, lo, hi):
    check_int(owner, field, value, lo, hi)
    if value & (value - 1):
        raise ConfigError(owner, field, value, f"a power of two, {lo} <= {field} <= {hi}")
    return value


class SlotRing:
    """The geometry shared by the timer services (:class:`TimerWheelConfig`,
    :class:`~hw.nic.timer_calendar_config.TimerCalendarConfig`): ``slots`` one-cycle slots
    (a power of two) in bitmap words of ``word_bits`` bits."""

    @property
    def slot_bits(self) -> int:
        return self.slots.bit_length() - 1

    @property
    def word_shift(self) -> int:
        return self.word_bits.bit_length() - 1

    @property
    def n_words(self) -> int:
        return self.slots // self.word_bits

    @property
    def word_index_bits(self) -> int:
        return max(1, self.n_words.bit_length() - 1)


@dataclass(frozen=True)
class TimerWheelConfig(SlotRing, BlockConfig):
    """Timing-wheel sizing.

    - ``slots`` (S): one-cycle slots, a power of two; one entry per slot.
    - ``horizon`` (H): targets beyond ``now + H`` are parked at ``now + H`` (when the cursor
      lags by more than a word, at the cursor's word end + H instead: see the model).
    - ``max_entries``: the most entries the user ever has in the wheel at once (e.g. flows x
      entries per flow); the capacity rule ``slots >= horizon + max_entries + word_bits``
      makes overflow impossible.
    - ``flow_bits``, ``gen_bits``: payload of an entry.
    - ``time_width`` (W): width of ``now`` and of deadlines (wrap-safe stamps);
      ``W >= log2(S) + 2`` so the window never aliases a wrap-safe compare.
    - ``word_bits`` (B): bits per bitmap word in block RAM (the cursor's catch-up skips one
      word, i.e. B slots, per cycle).
    - ``insert_latency``: 4 (insert, search, decision, pop stages) or 5 (a stage between the
      search and the decision registers the bitmap RAM's outputs, so no logic follows a
      block-RAM read in the wheel; the search then keeps three candidate words instead of
      two).  6: as 5, and the pop leaves through the pop buffer (:attr:`pop_buffer`).  An
      entry inserted at ``now == n`` pops at ``n + insert_latency`` at the earliest.
    """

    slots: int = 65536
    horizon: int = 32768
    max_entries: int = 8192
    flow_bits: int = 12
    gen_bits: int = 2
    time_width: int = 26
    word_bits: int = 32
    insert_latency: int = INSERT_LATENCY

    def __post_init__(self):
        if self.insert_latency not in INSERT_LATENCIES:
            raise ConfigError(self, "insert_latency", self.insert_latency,
                              f"one of {INSERT_LATENCIES}")
        _pow2(self, "word_bits", self.word_bits, 4, 64)
        _pow2(self, "slots", self.slots, 2 * self.word_bits, 1 << 24)
        check_int(self, "flow_bits", self.flow_bits, 1, 24)
        check_int(self, "gen_bits", self.gen_bits, 1, 8)
        check_int(self, "time_width", self.time_width, self.slot_bits + 2, 48,
                  lo_name="log2(slots) + 2")
        # H >= 4 words: a parked entry lands at least 3 words ahead of the cursor's word at
        # acceptance, so it can never fall into a word the cursor leaves meanwhile
        check_int(self, "horizon", self.horizon, 4 * self.word_bits,
                  self.slots - self.word_bits - 1, lo_name="4 * word_bits",
                  hi_name="slots - word_bits - 1")
        check_int(self, "max_entries", self.max_entries, 1,
                  self.slots - self.horizon - self.word_bits,
                  hi_name="slots - horizon - word_bits (the capacity rule)")

    # -- derived -------------------------------------------------------------------------
    @property
    def occ_width(self) -> int:
        return bits_for(self.slots)

    @property
    def entry_bits(self) -> int:
        return self.flow_bits + self.gen_bits

    @property
    def latency(self) -> int:
        return self.insert_latency

    @property
    def candidates(self) -> int:
        """Non-full words the search stage keeps after the target's word: one more than the
        decisions that can fill one before the decision stage sees the summary again."""
        return min(self.insert_latency, 5) - 2

    @property
    def pop_buffer(self) -> bool:
        """Insert latency 6: the slot RAM is read with latency 2 (its output register on) and
        the pops leave through a buffer of :data:`POP_BUFFER` entries whose free room, from
        registers, decides whether the cursor may issue: ``pop.ready`` only drains the buffer
        and never reaches the cursor in the same cycle.  The cursor looks one cycle further
        ahead (:attr:`lookahead`) so that a pop still appears at its deadline."""
        return self.insert_latency == 6

    @property
    def lookahead(self) -> int:
        """The cursor issues the slots due by ``now + lookahead``: 1, or 2 with the pop
        buffer (a pop issued at c is on ``pop`` from c + lookahead)."""
        return 2 if self.pop_buffer else 1

    def check_capacity(self, entries: int, what: str = "max_entries") -> int:
        """Raise :class:`ConfigError` unless ``entries`` entries fit the capacity rule."""
        return check_int(self, what, entries, 0, self.slots - self.horizon - self.word_bits,
                         hi_name="slots - horizon - word_bits (the capacity rule)")

    def bram_bits(self) -> dict:
        """Block-RAM bits: slot RAM (S x (flow + gen)) and the bitmap (S bits, replicated per
        read port: the target word, the candidates and the cursor's look-ahead, see
        :mod:`hw.nic.timer_wheel`)."""
        return {"slot_ram": self.slots * self.entry_bits, "bitmap": self.slots,
                "bitmap_copies": self.candidates + 2}
