"""DCTCP hosts for the network simulator, driven by the DCTCP golden model.

The interface between a host and its congestion engine is narrow: the host asks the engine
whether it may send (``can_send``), tells it what it sent (``next_seq``), and hands it every
ACK (``on_ack(acked_upto, ece)``).  Any engine with these three members can replace the model.
"""

from __future__ import annotations

from hw.layouts import Ecn
from sim.models.dctcp import DctcpConfig, DctcpReceiver, DctcpSender

from .engine import Simulator
from .network import ACK, DATA, PRIO_CONTROL, PRIO_DATA, EgressPort, Packet

ACK_BYTES = 64


class DctcpFlow:
    """One long-lived (or ``packets``-long) DCTCP flow from ``src`` to ``dst``.

    Loss recovery is go-back-N on a retransmission timeout (no progress for ``rto_ps``); the
    reproductions below run without loss, and the timeout only keeps a flow from stalling.
    """

    def __init__(self, sim: Simulator, flow: int, src: int, dst: int, nic: EgressPort,
                 cfg: DctcpConfig, mtu: int, packets: int | None = None, start_ps: int = 0,
                 rto_ps: int = 10**9):
        self.sim, self.flow, self.src, self.dst, self.nic = sim, flow, src, dst, nic
        self.mtu, self.packets, self.rto_ps = mtu, packets, rto_ps
        self.engine = DctcpSender(cfg)
        self.receiver = DctcpReceiver(cfg)
        self.reverse_nic: EgressPort | None = None   # the receiver host's NIC, set by topology
        self.last_progress = start_ps
        self.finished_ps: int | None = None
        sim.at(start_ps, self._pump)
        sim.at(start_ps + rto_ps, self._check_timeout)

    # -- sender ---------------------------------------------------------------------------
    def _pump(self) -> None:
        e = self.engine
        while e.can_send() and (self.packets is None or e.next_seq < self.packets):
            self.nic.send(Packet(DATA, self.flow, self.src, self.dst, e.next_seq, self.mtu,
                                 Ecn.ECT0, PRIO_DATA))
            e.next_seq += 1

    def on_ack(self, pkt: Packet) -> None:
        before = self.engine.acked
        self.engine.on_ack(pkt.seq, pkt.ece)
        if self.engine.acked > before:
            self.last_progress = self.sim.now
        if self.packets is not None and self.engine.acked >= self.packets:
            if self.finished_ps is None:
                self.finished_ps = self.sim.now
            return
        self._pump()

    def _check_timeout(self) -> None:
        if self.finished_ps is not None:
            return
        if self.sim.now - self.last_progress >= self.rto_ps:
            self.engine.next_seq = self.engine.acked       # go back N
            self.last_progress = self.sim.now
            self._pump()
        self.sim.after(self.rto_ps, self._check_timeout)

    # -- receiver -------------------------------------------------------------------------
    def on_data(self, pkt: Packet) -> None:
        for acked, ece in self.receiver.on_packet(pkt.seq, pkt.ecn == Ecn.CE):
            self.reverse_nic.send(Packet(ACK, self.flow, self.dst, self.src, acked, ACK_BYTES,
                                         Ecn.NOT_ECT, PRIO_CONTROL, ece))
