"""Pieces shared by the delay-based hosts (TIMELY, Swift): NIC timestamps, a packet-numbered
message, a go-back-N receiver that echoes the NIC send stamp in its ACKs, the retransmission
timer, and the switch profile (no marking: the signal is delay).

NIC timestamps are integer cycles of the network's engine clock (``net.clk_ps``): the sending
NIC stamps a data packet when its first bit goes on the wire (``Packet.sent_ps``, set by the
host's NIC port), the receiver copies that stamp into the ACK, and the sending NIC stamps the
ACK when it arrives (``sim.now``).  Their difference is what a NIC with hardware timestamps
measures: queueing in both directions, propagation, and the serialization of the packets
timed, but no host software delay.
"""

from __future__ import annotations

from hw.layouts import Ecn
from hw.switch.marker_config import MarkerConfig

from .engine import IDLE
from .packet import ACK, DATA, NAK, Packet, control

__all__ = ["DelayEndpoint", "EchoReceiver", "path_hops", "no_marking", "RttTrace"]


def no_marking(params, *, ports, mtu, buf_max, shared_buffer, sample_at):
    """Delay-based senders send Not-ECT frames; the DCTCP profile with K at the buffer size
    forwards them and never marks (the queue limit still drops)."""
    return MarkerConfig.dctcp(ports=ports, priorities=2, k=buf_max, buf_max=buf_max,
                              shared_buffer=shared_buffer, compare="gt", sample_at=sample_at)


def path_hops(net, src: int, dst: int) -> int:
    """Switches on the path from host ``src`` to host ``dst`` (what an IP TTL would count)."""
    probe = Packet(DATA, 0, src, dst, 0, net.mtu)
    node = net.hosts[src].nic.peer
    hops = 0
    while node.id != dst:
        hops += 1
        node = node.route(probe).peer
    return hops


class RttTrace:
    """An endpoint's RTT samples: ``times_ps[i]`` (ACK arrival) and ``rtt_cycles[i]``."""

    def __init__(self):
        self.times_ps: list[int] = []
        self.rtt_cycles: list[int] = []

    def add(self, t_ps: int, rtt: int) -> None:
        self.times_ps.append(t_ps)
        self.rtt_cycles.append(rtt)


class DelayEndpoint:
    """A flow's message of ``spec.size_bytes`` bytes (None: long-lived until ``stop_ps``) cut
    into MTU-sized packets numbered from 0, with go-back-N retransmission."""

    def __init__(self, net, spec, host):
        self.net, self.sim, self.spec, self.host = net, net.sim, spec, host
        self.mtu = net.mtu
        self.packets = None if spec.size_bytes is None else -(-spec.size_bytes // net.mtu)
        self.high = 0
        self.retx_bytes = 0
        self.started = False      # senders: start() was called (a wake-up before is a no-op)
        self.clk_ps = net.clk_ps
        self.clk_hz = 10**12 // net.clk_ps

    def cycle(self, t_ps: int) -> int:
        """A NIC timestamp: cycles of the engine clock, modulo 2**32 as the NIC's counter."""
        return (t_ps // self.clk_ps) & 0xFFFFFFFF

    def size_of(self, seq: int) -> int:
        if self.packets is not None and seq == self.packets - 1:
            return self.spec.size_bytes - seq * self.mtu
        return self.mtu

    def more(self, seq: int) -> bool:
        if self.packets is not None:
            return seq < self.packets
        stop = self.spec.stop_ps
        return stop is None or self.sim.now < stop

    def send_seq(self, seq: int) -> Packet:
        retx = seq < self.high
        pkt = Packet(DATA, self.spec.flow_id, self.spec.src, self.spec.dst, seq,
                     self.size_of(seq), Ecn.NOT_ECT, retx=retx,
                     last=self.packets is not None and seq == self.packets - 1)
        if retx:
            self.retx_bytes += pkt.size
            self.net.counters["retransmitted_packets"] += 1
        self.high = max(self.high, seq + 1)
        self.host.nic.send(pkt)
        return pkt


class EchoReceiver(DelayEndpoint):
    """Go-back-N receiver: in-order packets count, a gap is NAKed once, the rest discarded.
    An ACK goes out when ``ack_due(seq)`` says so (and for the last packet) and carries the NIC
    send stamp of ``stamp_of`` (the packet itself, or the first packet of its segment), after
    ``turnaround_ps`` (the endpoint delay a host adds; 0 for a NIC-generated ACK)."""

    def __init__(self, net, spec, host, every: int = 1, turnaround_ps: int = 0):
        super().__init__(net, spec, host)
        self.expected = 0
        self.every = every
        self.turnaround_ps = turnaround_ps
        self.nak_sent = False
        self.delivered_bytes = 0
        self.done_ps = None
        self.first_stamp = 0

    def on_data(self, pkt: Packet) -> None:
        f = self.spec
        if pkt.seq != self.expected:
            if pkt.seq > self.expected and not self.nak_sent:
                self.nak_sent = True
                self.host.nic.send(control(NAK, f.flow_id, f.dst, f.src, self.expected))
            return
        if pkt.seq % self.every == 0 or self.nak_sent:
            # the segment's first packet, or the first one after a go-back-N (a retransmitted
            # segment is timed from its retransmission, not from its first attempt)
            self.first_stamp = pkt.sent_ps
        self.nak_sent = False
        self.expected += 1
        self.delivered_bytes += pkt.size
        if pkt.last:
            self.done_ps = self.sim.now
        if self.expected % self.every == 0 or pkt.last:
            stamp = self.first_stamp if self.every > 1 else pkt.sent_ps
            ack = control(ACK, f.flow_id, f.dst, f.src, self.expected, sent_ps=stamp)
            if self.turnaround_ps:
                self.sim.after(self.turnaround_ps, self.host.nic.send, ack)
            else:
                self.host.nic.send(ack)


class RtoTimer:
    """No cumulative progress for ``rto_ps`` with data outstanding: ``owner._timeout()``."""

    def __init__(self, owner, rto_ps: int):
        self.owner, self.rto_ps = owner, rto_ps
        self.last_progress = 0

    def arm(self) -> None:
        self.last_progress = self.owner.sim.now
        self.owner.sim.after(self.rto_ps, self._check)

    def progress(self) -> None:
        self.last_progress = self.owner.sim.now

    def _check(self):
        o = self.owner
        if o.finished:
            return IDLE
        now = o.sim.now
        fired = now - self.last_progress >= self.rto_ps and o.outstanding()
        if fired:
            o.net.counters["timeouts"] += 1
            self.last_progress = now
            o.timeout()
        o.sim.at(max(self.last_progress + self.rto_ps, now + 1), self._check)
        return None if fired else IDLE      # a check that finds nothing is not an event
