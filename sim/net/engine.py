"""Discrete-event core: integer time, deterministic order.

Time is an integer number of picoseconds (``PS_PER_S = 10**12``): exact for every link rate
whose bit time is a whole number of picoseconds (1, 10, 25, 40, 100, 200, 400 Gb/s...) and for
the engines' clock (4000 ps at 250 MHz).  Events at the same time run in the order they were
scheduled (a sequence number breaks ties), so a seeded run is reproducible.  No wall-clock and
no float time anywhere.

Timers that usually do not fire (a retransmission timeout re-armed by every ACK, a sender's
wake-up superseded by an input) must not show in a run: a scheduled entry can be cancelled
(:meth:`Simulator.cancel`; it is then skipped and not counted), and a callback that only found
nothing to do returns :data:`IDLE` (not counted in ``events``).  So ``events`` counts what
happened, and a run does not depend on the value of a timer that never fires.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable

PS_PER_S = 10**12
PS_PER_US = 10**6
PS_PER_NS = 10**3

#: Returned by a callback that did nothing (a timer check that found no expiry): not an event.
IDLE = object()


class Simulator:
    """Event queue with integer time in picoseconds."""

    def __init__(self):
        self.now = 0
        self._queue: list = []
        self._seq = 0
        self.events = 0

    def at(self, time: int, fn: Callable, *args) -> list:
        """Schedule ``fn(*args)`` at ``time``; returns the entry (for :meth:`cancel`)."""
        if time < self.now:
            raise ValueError(f"event scheduled in the past: {time} < now {self.now}")
        entry = [time, self._seq, fn, args]
        heapq.heappush(self._queue, entry)
        self._seq += 1
        return entry

    def after(self, delay: int, fn: Callable, *args) -> list:
        return self.at(self.now + delay, fn, *args)

    @staticmethod
    def cancel(entry: list) -> None:
        """The entry will not run (nor count as an event)."""
        entry[2] = None

    def run(self, until: int) -> None:
        """Run every event with time <= ``until``; ``now`` ends at ``until``."""
        queue = self._queue
        pop = heapq.heappop
        while queue and queue[0][0] <= until:
            time, _, fn, args = pop(queue)
            if fn is None:
                continue
            self.now = time
            self.events += 1
            if fn(*args) is IDLE:
                self.events -= 1
        self.now = until


class Alarm:
    """One pending wake-up of an endpoint: :meth:`set` moves it (the superseded entry is
    cancelled), :meth:`keep` moves it only if the time differs (so that a spurious wake-up that
    recomputes the same time leaves the schedule, including the order among events of the same
    time, untouched)."""

    __slots__ = ("sim", "fn", "entry", "time")

    def __init__(self, sim: Simulator, fn: Callable):
        self.sim, self.fn = sim, fn
        self.entry: list | None = None
        self.time: int | None = None

    def _fire(self) -> object:
        self.entry = self.time = None
        return self.fn()

    def set(self, time: int | None) -> None:
        if self.entry is not None:
            self.entry[2] = None
        if time is None:
            self.entry = self.time = None
        else:
            self.entry = self.sim.at(time, self._fire)
            self.time = time

    def keep(self, time: int | None) -> None:
        if time != self.time or self.entry is None:
            self.set(time)

    def cancel(self) -> None:
        self.set(None)


def serialization_ps(size_bytes: int, rate_bps: int) -> int:
    """Time to put ``size_bytes`` on a link of ``rate_bps``, rounded up to a picosecond."""
    return -(-size_bytes * 8 * PS_PER_S // rate_bps)
