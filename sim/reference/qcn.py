"""Float references of QCN (IEEE 802.1Qau), written from the equations of ``switch.md`` §2 and
``qcn.md`` (not from the bit-exact models).

Congestion point: :func:`cp_feedback`, :func:`cp_quantize`, :func:`cp_interval`.
"""

from __future__ import annotations

import math

__all__ = ["cp_feedback", "cp_quantize", "cp_interval"]


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
