"""Packets, links, hosts' NICs and an output-queued switch whose egress is the marker model.

The switch's queue occupancy, admission and ECN marking are :class:`sim.models.marker.MarkerModel`
itself (the bit-exact model of the RTL ``EgressMarker``): every packet that enters an egress
queue is an enqueue descriptor, every packet that starts transmission a dequeue descriptor, and
the model's decision (drop and reason, new ECN field) is applied to the packet.  So a simulated
queue marks and drops exactly as the hardware would.

Each egress port has one queue per priority, served in strict priority (priority 1, ACKs and
CNPs, before priority 0, data), and transmits one packet at a time at its link rate; the packet
reaches the next node one propagation delay after its last bit.
"""

from __future__ import annotations

from collections import Counter, deque
from dataclasses import dataclass

from hw.layouts import DropReason, Ecn, QueueOp
from sim.models.marker import Descriptor, MarkerModel

from .engine import Simulator, serialization_ps

DATA, ACK = 0, 1
PRIO_DATA, PRIO_CONTROL = 0, 1


@dataclass(slots=True)
class Packet:
    kind: int          # DATA or ACK
    flow: int
    src: int           # host ids
    dst: int
    seq: int           # DATA: packet number in the flow; ACK: cumulative packets acknowledged
    size: int          # bytes on the wire
    ecn: Ecn
    prio: int
    ece: bool = False  # ACK: ECN-echo


class EgressPort:
    """A transmitter: per-priority FIFOs, strict priority, serialization, propagation delay.

    With ``marker`` set (a switch port), admission and marking come from the marker model;
    without (a host NIC), the queue is unbounded and nothing is marked.
    """

    def __init__(self, sim: Simulator, rate_bps: int, delay_ps: int, deliver,
                 marker: MarkerModel | None = None, index: int = 0, name: str = ""):
        self.sim, self.rate_bps, self.delay_ps, self.deliver = sim, rate_bps, delay_ps, deliver
        self.marker, self.index, self.name = marker, index, name
        self.queues = (deque(), deque())
        self.busy = False
        self.drops: Counter = Counter()
        self.marks = 0

    def send(self, pkt: Packet) -> bool:
        """Offer a packet to this port; returns False if it was dropped."""
        if self.marker is not None:
            d = self.marker.step(Descriptor(QueueOp.ENQUEUE, self.index, pkt.prio, pkt.size,
                                            pkt.ecn))
            if d.drop:
                self.drops[d.reason] += 1
                return False
            if d.marked:
                self.marks += 1
            pkt.ecn = d.ecn
        self.queues[pkt.prio].append(pkt)
        if not self.busy:
            self._start()
        return True

    def _start(self) -> None:
        queue = self.queues[PRIO_CONTROL] or self.queues[PRIO_DATA]
        if not queue:
            self.busy = False
            return
        pkt = queue.popleft()
        if self.marker is not None:
            d = self.marker.step(Descriptor(QueueOp.DEQUEUE, self.index, pkt.prio, pkt.size,
                                            pkt.ecn))
            assert d.reason == DropReason.NONE, d
            if d.marked:
                self.marks += 1
            pkt.ecn = d.ecn
        self.busy = True
        done = serialization_ps(pkt.size, self.rate_bps)
        self.sim.after(done, self._finish, pkt)

    def _finish(self, pkt: Packet) -> None:
        self.sim.after(self.delay_ps, self.deliver, pkt)
        self._start()


class Switch:
    """Output-queued switch: a routing table host id -> egress port, one marker model for all
    its egress queues (ports x priorities, one shared buffer)."""

    def __init__(self, sim: Simulator, marker: MarkerModel, name: str = "sw"):
        self.sim, self.marker, self.name = sim, marker, name
        self.ports: list[EgressPort] = []
        self.route: dict[int, int] = {}

    def add_port(self, rate_bps: int, delay_ps: int, deliver) -> int:
        index = len(self.ports)
        self.ports.append(EgressPort(self.sim, rate_bps, delay_ps, deliver, self.marker, index,
                                     f"{self.name}.p{index}"))
        return index

    def receive(self, pkt: Packet) -> None:
        self.ports[self.route[pkt.dst]].send(pkt)
