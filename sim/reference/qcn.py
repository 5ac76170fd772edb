"""Float references of QCN (IEEE 802.1Qau), written from the equations of IEEE 802.1Qau and
``qcn.md`` (not from the bit-exact models).

Congestion point: :func:`cp_feedback`, :func:`cp_quantize`, :func:`cp_interval`.
"""

from __future__ import annotations

import math

__all__ = ["cp_feedback", "cp_quantize", "cp_interval", "RpFloat"]


def cp_feedback(q: float, q_old: float, q_eq: float, w: float) -> float:
    """Fb = -(Q_off + w Q_delta)."""
    return -((q - q_eq) + w * (q - q_old))


def cp_quantize(fb: float, q_eq: float, w: float) -> int:
    """|Fb| saturated at Fb_max = Q_eq (2w + 1), mapped onto 0..63 rounding up (0 iff Fb >= 0)."""
    if fb >= 0:
        return 0
    fb_max = q_eq * (2 * w + 1)
    return math.ceil(min(-fb, fb_max) / fb_max * 63)


def cp_interval(table, qntz: int, jitter: float, u: float) -> float:
    """The sampling interval S[qntz >> 3] scaled by 1 - jitter + 2 jitter u (u uniform [0, 1))."""
    return table[qntz >> 3] * (1.0 - jitter + 2.0 * jitter * u)


class RpFloat:
    """Float QCN reaction point rate equations (qcn.md), driven by the rate actions of a run:
    ``cut(fb)``, ``increase(b_stage, t_stage)``.  Rates in Mb/s."""

    def __init__(self, line, min_rate, ai, hai, gd, min_dec_fac, threshold, guard=True):
        self.line, self.min_rate, self.ai, self.hai = line, min_rate, ai, hai
        self.gd, self.mdf, self.F, self.guard = 2.0 ** -gd, min_dec_fac, threshold, guard
        self.cr = self.tr = float(line)
        self.fresh = False

    def cut(self, fb: int):
        self.tr = self.cr
        self.cr = max(self.cr * (1 - self.gd * fb), self.cr * self.mdf, self.min_rate)
        self.fresh = True

    def increase(self, b_stage: int, t_stage: int):
        if self.fresh and self.guard and self.tr > 10 * self.cr:
            self.tr /= 8
        self.fresh = False
        if b_stage > self.F and t_stage > self.F:
            self.tr += (min(b_stage, t_stage) - self.F) * self.hai
        elif b_stage > self.F or t_stage > self.F:
            self.tr += self.ai
        self.tr = min(self.tr, self.line)
        self.cr = min((self.cr + self.tr) / 2, self.line)
