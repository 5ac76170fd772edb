"""Discrete-event core: integer time, deterministic order.

Time is an integer number of picoseconds (``PS_PER_S = 10**12``): exact for every link rate
whose bit time is a whole number of picoseconds (1, 10, 25, 40, 100, 200, 400 Gb/s...) and for
the engines' clock (4000 ps at 250 MHz).  Events at the same time run in the order they were
scheduled (a sequence number breaks ties), so a seeded run is reproducible.  No wall-clock and
no float time anywhere.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable

PS_PER_S = 10**12
PS_PER_US = 10**6
PS_PER_NS = 10**3


class Simulator:
    """Event queue with integer time in picoseconds."""

    def __init__(self):
        self.now = 0
        self._queue: list = []
        self._seq = 0
        self.events = 0

    def at(self, time: int, fn: Callable, *args) -> None:
        if time < self.now:
            raise ValueError(f"event scheduled in the past: {time} < now {self.now}")
        heapq.heappush(self._queue, (time, self._seq, fn, args))
        self._seq += 1

    def after(self, delay: int, fn: Callable, *args) -> None:
        self.at(self.now + delay, fn, *args)

    def run(self, until: int) -> None:
        """Run every event with time <= ``until``; ``now`` ends at ``until``."""
        queue = self._queue
        pop = heapq.heappop
        while queue and queue[0][0] <= until:
            time, _, fn, args = pop(queue)
            self.now = time
            self.events += 1
            fn(*args)
        self.now = until


def serialization_ps(size_bytes: int, rate_bps: int) -> int:
    """Time to put ``size_bytes`` on a link of ``rate_bps``, rounded up to a picosecond."""
    return -(-size_bytes * 8 * PS_PER_S // rate_bps)
