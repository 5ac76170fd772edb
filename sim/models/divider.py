"""The unsigned divider the delay-based models (TIMELY, Swift) share with their future RTL.

:func:`udiv_sat` is the model's form: ``floor(num / den)`` saturated to ``2**qbits - 1``.
:func:`restoring_divide` is the hardware's form written out bit by bit: a ``qbits``-step
restoring divider (one quotient bit per step, most significant first, the partial remainder
kept below ``den``) with the overflow check ``num >= den * 2**qbits`` that saturates.  The two
agree on every input (``tests/test_timely_model.py`` compares them on random operands), so an
RTL built as a restoring or non-restoring divider, pipelined one step per stage for one event
per clock, matches the models bit for bit.
"""

from __future__ import annotations

__all__ = ["udiv_sat", "restoring_divide"]


def udiv_sat(num: int, den: int, qbits: int) -> int:
    """``floor(num / den)`` saturated to ``2**qbits - 1``; ``num >= 0``, ``den >= 1``."""
    if num >= den << qbits:
        return (1 << qbits) - 1
    return num // den


def restoring_divide(num: int, den: int, qbits: int) -> int:
    """The same quotient, computed as the hardware does: ``qbits`` conditional subtractions of
    ``den << i`` from the remainder, ``i`` from ``qbits - 1`` down to 0."""
    if num >= den << qbits:
        return (1 << qbits) - 1
    rem, q = num, 0
    for i in range(qbits - 1, -1, -1):
        q <<= 1
        if rem >= den << i:
            rem -= den << i
            q |= 1
    return q
