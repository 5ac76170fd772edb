"""Maximal-length LFSR shared by the RTL and the golden models.

One :class:`LfsrParams` object gives both the hardware (:meth:`LfsrParams.next_state`, an
Amaranth expression) and the software model (:meth:`LfsrParams.step`), in the manner of
``amaranth.lib.crc``; the two are the same function, so a seeded run makes the same decisions in
RTL and model.

Form: Fibonacci, shifting left.  One step computes ``feedback = parity(state & taps)`` and
``state = ((state << 1) | feedback) mod 2**width``.  A *draw* advances the register by ``bits``
steps at once (unrolled into one clock in hardware) and returns the ``bits`` newest bits, i.e.
the low ``bits`` bits of the new state; consecutive draws therefore share no bits.

Default polynomial: x^32 + x^22 + x^2 + x + 1 (taps at bits 31, 21, 1, 0), primitive over GF(2)
(checked by ``tests/test_lfsr.py``), period 2**32 - 1; the all-zero state is excluded.
"""

from __future__ import annotations

from dataclasses import dataclass

from .params import ConfigError, check_int

__all__ = ["LfsrParams", "POLY32"]

#: x^32 + x^22 + x^2 + x + 1 as a tap mask on bits 31, 21, 1, 0.
POLY32 = (1 << 31) | (1 << 21) | (1 << 1) | (1 << 0)


@dataclass(frozen=True)
class LfsrParams:
    width: int = 32
    taps: int = POLY32
    seed: int = 0x1D872B41

    def __post_init__(self):
        check_int(self, "width", self.width, 2, 64)
        check_int(self, "taps", self.taps, 1, (1 << self.width) - 1)
        if not (self.taps >> (self.width - 1)) & 1:
            raise ConfigError(self, "taps", self.taps, f"a mask with bit {self.width - 1} set")
        check_int(self, "seed", self.seed, 1, (1 << self.width) - 1)

    # -- software model ---------------------------------------------------------------------
    def step(self, state: int, steps: int = 1) -> int:
        """Advance ``state`` by ``steps`` single-bit steps."""
        mask = (1 << self.width) - 1
        for _ in range(steps):
            fb = (state & self.taps).bit_count() & 1
            state = ((state << 1) | fb) & mask
        return state

    def draw(self, state: int, bits: int) -> tuple[int, int]:
        """Return ``(new_state, value)``: advance by ``bits`` steps and take the newest bits.

        Uses byte-wise tables of the same linear map as :meth:`transition_masks` (the result is
        identical to ``step(state, bits)``; ``tests/test_lfsr.py`` checks it)."""
        tables = self._jump_tables(bits)
        new = 0
        for k, table in enumerate(tables):
            new ^= table[(state >> (8 * k)) & 0xFF]
        return new, new & ((1 << bits) - 1)

    def _jump_tables(self, steps: int) -> list[list[int]]:
        cache = self.__dict__.setdefault("_tables", {})
        if steps not in cache:
            masks = self.transition_masks(steps)
            tables = []
            for k in range((self.width + 7) // 8):
                table = []
                for v in range(256):
                    x = (v << (8 * k)) & ((1 << self.width) - 1)
                    table.append(sum((((x & mk).bit_count() & 1) << i)
                                     for i, mk in enumerate(masks)))
                tables.append(table)
            cache[steps] = tables
        return cache[steps]

    def transition_masks(self, steps: int = 1) -> list[int]:
        """The ``steps``-step transition as a linear map over GF(2): output bit ``i`` is the
        XOR of the input bits set in ``masks[i]``."""
        masks = [1 << i for i in range(self.width)]
        for _ in range(steps):
            fb = 0
            for i in range(self.width):
                if (self.taps >> i) & 1:
                    fb ^= masks[i]
            masks = [fb] + masks[:-1]
        return masks

    # -- hardware ----------------------------------------------------------------------------
    def next_state(self, state, steps: int = 1):
        """Amaranth expression for ``state`` advanced by ``steps`` steps: one flat XOR per bit."""
        from amaranth.hdl import Cat

        out = []
        for mask in self.transition_masks(steps):
            terms = [state[j] for j in range(self.width) if (mask >> j) & 1]
            bit = terms[0]
            for t in terms[1:]:
                bit = bit ^ t
            out.append(bit)
        return Cat(*out)
