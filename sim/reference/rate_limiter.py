"""Float reference of per-packet pacing, straight from the DCQCN paper's rate limiter (Zhu et al.,
SIGCOMM 2015):
``next send time = now + packet bytes / Rc``, in real numbers, with Rc in Mb/s clamped to
[min rate, line rate] and taken at the moment the packet leaves.  Shares no code with the model.
"""

from __future__ import annotations

import math


def next_send_cycle(now: int, nbytes: int, rc_mbps: float, clk_hz: int, min_mbps: float,
                    line_mbps: float) -> float:
    """The real-valued cycle at which a flow that sent ``nbytes`` at cycle ``now`` (with no
    credit left) may send again."""
    rc = min(max(rc_mbps, min_mbps), line_mbps)
    seconds = nbytes * 8 / (rc * 1e6)
    return now + seconds * clk_hz


def first_eligible_cycle(now: int, nbytes: int, rc_mbps: float, clk_hz: int, min_mbps: float,
                         line_mbps: float) -> int:
    """The first whole cycle at or after the real next-send time."""
    return math.ceil(next_send_cycle(now, nbytes, rc_mbps, clk_hz, min_mbps, line_mbps) - 1e-9)
