"""A cycle-level loop for testing the LDCP transport: sender -> data channel -> receiver -> ACK
channel -> sender.  The channels delay (a base delay plus a random jitter, never reordering),
drop and CE-mark; the data channel drops ECN-incapable packets with its own probability (a
switch's ``q >= K`` drop of fast-start packets).  Each direction can also drop by a predicate
(directed tests).  Used by the model tests and by the cocotb testbenches (which put the RTL in
place of one end).
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from hw.params import BlockConfig, check_int, check_real

from .ldcp_transport import RxPacket, TAck, TxPacket

__all__ = ["ChannelConfig", "Channel"]


@dataclass(frozen=True)
class ChannelConfig(BlockConfig):
    delay: int = 20                 # cycles, one way
    jitter: int = 0                 # extra random delay 0..jitter (order kept)
    p_drop: float = 0.0             # any packet
    p_drop_not_ect: float = 0.0     # ECN-incapable data packets (fast-start drop at K)
    p_mark: float = 0.0             # CE mark of ECN-capable data packets

    def __post_init__(self):
        check_int(self, "delay", self.delay, 0)
        check_int(self, "jitter", self.jitter, 0)
        for name in ("p_drop", "p_drop_not_ect", "p_mark"):
            check_real(self, name, getattr(self, name), 0.0, 1.0)


class Channel:
    """One direction.  ``push(cycle, item)`` at the cycle the item leaves; ``head(cycle)`` is
    the item offered at ``cycle`` (one per cycle, in order); ``pop()`` when it was taken."""

    def __init__(self, cfg: ChannelConfig, rng: random.Random,
                 drop: Callable[[object], bool] | None = None):
        self.cfg, self.rng, self.drop = cfg, rng, drop
        self.q: deque = deque()
        self.last = -1
        self.dropped = 0
        self.marked = 0

    def push(self, cycle: int, item) -> None:
        c, rng = self.cfg, self.rng
        if self.drop is not None and self.drop(item):
            self.dropped += 1
            return
        p = c.p_drop
        if isinstance(item, TxPacket) and not item.ect:
            p = max(p, c.p_drop_not_ect)
        if p and rng.random() < p:
            self.dropped += 1
            return
        if isinstance(item, TxPacket):
            ce = item.ect and c.p_mark > 0 and rng.random() < c.p_mark
            self.marked += ce
            item = RxPacket(item.lsn, item.length, ce, item.last)
        at = cycle + c.delay + (rng.randint(0, c.jitter) if c.jitter else 0)
        self.last = at = max(at, self.last + 1)
        self.q.append((at, item))

    def head(self, cycle: int) -> RxPacket | TAck | None:
        return self.q[0][1] if self.q and self.q[0][0] <= cycle else None

    def pop(self) -> None:
        self.q.popleft()

    def clear(self) -> None:
        self.q.clear()

    def __len__(self) -> int:
        return len(self.q)


class Loop:
    """The cycle-level models of both ends and the two channels, stepped together.
    ``pkt_ready`` / ``ack_ready``: probability that the sender's NIC scheduler takes an offered
    packet, and that the receiver's ACK output is taken, in a cycle (back-pressure)."""

    def __init__(self, tx, rx, data: Channel, acks: Channel, rng: random.Random,
                 pkt_ready: float = 1.0, ack_ready: float = 1.0):
        self.tx, self.rx, self.data, self.acks, self.rng = tx, rx, data, acks, rng
        self.pkt_ready, self.ack_ready = pkt_ready, ack_ready
        self.cycle = 0
        self.released: list[tuple[int, TxPacket]] = []
        self.ack_log: list[tuple[int, TAck]] = []
        self.delivered: list = []
        self._start: int | None = None

    def start(self, length: int) -> None:
        self._start = length

    def step(self) -> None:
        rng, cyc = self.rng, self.cycle
        tx, rx = self.tx, self.rx
        pkt = tx.outputs().pkt
        prdy = self.pkt_ready >= 1 or rng.random() < self.pkt_ready
        ardy = self.ack_ready >= 1 or rng.random() < self.ack_ready
        ack_in = self.acks.head(cyc)
        r_out = rx.outputs(ardy)
        taken = tx.edge(ack_in, prdy, self._start)
        if taken[0]:
            self.acks.pop()
        if taken[1]:
            self.released.append((cyc, pkt))
            self.data.push(cyc, pkt)
        if taken[2]:
            self._start = None
        if r_out.ack is not None and ardy:
            self.ack_log.append((cyc, r_out.ack))
            self.acks.push(cyc, r_out.ack)
        if rx.edge(self.data.head(cyc), ardy):
            self.data.pop()
        if rx.deliver is not None:
            self.delivered.append(rx.deliver)
        self.cycle += 1

    def run_message(self, length: int, max_cycles: int) -> int:
        """Start a message and step until the sender is done; returns the cycles taken."""
        t0 = self.cycle
        self.start(length)
        self.step()
        while not self.tx.s.done or self._start is not None:
            if self.cycle - t0 > max_cycles:
                raise AssertionError(f"message of {length} bytes not done in {max_cycles} "
                                     f"cycles: {self.tx.s}")
            self.step()
        return self.cycle - t0
