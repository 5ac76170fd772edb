"""The network: ports, switches, hosts and the run loop; every decision is a golden model's.

* An :class:`EgressPort` is one direction of a link: per-priority FIFOs served in strict
  priority (MAC control > control > data), serialization at the link rate, then the propagation
  delay.  PFC pauses its data priority only.
* A :class:`Switch` is output-queued with one shared buffer.  Its egress queues' occupancy,
  admission and ECN marking are :class:`sim.models.marker.MarkerModel` (the bit-exact model of
  the RTL ``EgressMarker``): every packet entering a queue is an enqueue descriptor, every packet
  starting transmission a dequeue descriptor.  Optional per-port QCN congestion points
  (:class:`sim.models.qcn.CpModel`) sample data frames at enqueue and send CNMs to their source;
  optional L3QCN turns the marker's CE marks into switch-built CNPs; optional PFC (ingress
  accounting per port, XOFF/XON, PAUSE frames with a pause time, refreshed while above XON) and a
  deadlock watchdog.  Routing is shortest path with ECMP by a hash of the flow id.
* A :class:`Host` is a NIC (one port, unbounded queue, honours PAUSE) and the flows' endpoints,
  which come from the algorithm registry (:mod:`sim.net.algorithms`).

The narrow interface between a host and its endpoints is documented in
:mod:`sim.net.algorithms`; the one between the endpoints' transport and the congestion engines
(golden models, LDCP's fast twin, later the Verilated RTL) in :mod:`sim.net.engine_api`.
"""

from __future__ import annotations

import functools
import hashlib
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field

from hw.layouts import DropReason, Ecn, QueueOp
from hw.lfsr import LfsrParams
from hw.params import ConfigError, check_bool, check_choice, check_int
from sim.models.marker import Descriptor, MarkerModel
from sim.models.qcn import CpFrame, CpModel

from .algos.common import THRESHOLD_MAX
from .engine import PS_PER_US, Simulator, serialization_ps
from .packet import (
    ACK,
    CNM,
    CNP,
    CONTROL_BYTES,
    DATA,
    PAUSE,
    PRIO_CONTROL,
    PRIO_DATA,
    PRIO_MAC,
    Packet,
    control,
)

# --------------------------------------------------------------------------------------------
# Configuration
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PfcConfig:
    """Priority flow control on the data priority (IEEE 802.1Qbb).

    A switch counts, per ingress port, the data bytes it holds that arrived on that port.  Above
    ``xoff_bytes`` it sends PAUSE(``pause_time_ps``) upstream and refreshes it every half pause
    time while the count stays above ``xon_bytes``; below ``xon_bytes`` it sends PAUSE(0)
    (resume).  With PFC on, the data priority is lossless: no egress-queue limit, admission
    up to the shared buffer plus ``headroom_bytes`` per port (bytes in flight after a PAUSE).
    The watchdog checks every ``watchdog_period_ps``; a
    port paused with data waiting for ``watchdog_checks`` consecutive checks ignores PAUSE for
    ``watchdog_recovery_ps`` (0 checks = no watchdog)."""

    enabled: bool = False
    xoff_bytes: int = 200_000
    xon_bytes: int = 150_000
    headroom_bytes: int = 100_000
    pause_time_ps: int = 50 * PS_PER_US
    watchdog_period_ps: int = 1000 * PS_PER_US
    watchdog_checks: int = 0
    watchdog_recovery_ps: int = 1000 * PS_PER_US

    def __post_init__(self):
        check_bool(self, "enabled", self.enabled)
        check_int(self, "xoff_bytes", self.xoff_bytes, 1)
        check_int(self, "xon_bytes", self.xon_bytes, 0, self.xoff_bytes, hi_name="xoff_bytes")
        check_int(self, "headroom_bytes", self.headroom_bytes, 0)
        check_int(self, "pause_time_ps", self.pause_time_ps, 1000)
        check_int(self, "watchdog_period_ps", self.watchdog_period_ps, 1000)
        check_int(self, "watchdog_checks", self.watchdog_checks, 0, 1000)
        check_int(self, "watchdog_recovery_ps", self.watchdog_recovery_ps, 0)


@dataclass(frozen=True)
class SwitchConfig:
    """Switch buffers (bytes), where the marker samples the queue, PFC, ECMP hash seed, the
    base of the switches' LFSR seeds (``lfsr_seed``: each marker's LFSR and each QCN congestion
    point's are seeded from (``lfsr_seed``, switch, port) as :meth:`Network.seeded` draws them;
    None, the default, is the run's seed, so ``lfsr_seed = s`` gives the switches the LFSRs of
    a run of seed s while everything else keeps the run's seed), and the MTU (bytes on the wire
    of a full data packet) used by every host."""

    buffer_bytes: int = 4_000_000
    queue_bytes: int = 2_000_000
    marking_point: str = "enqueue"
    pfc: PfcConfig = field(default_factory=PfcConfig)
    ecmp_seed: int = 0
    mtu: int = 1000
    lfsr_seed: int | None = None

    def __post_init__(self):
        check_int(self, "queue_bytes", self.queue_bytes, 1000, THRESHOLD_MAX)
        check_int(self, "buffer_bytes", self.buffer_bytes, self.queue_bytes, THRESHOLD_MAX,
                  lo_name="queue_bytes")
        check_choice(self, "marking_point", self.marking_point, ("enqueue", "dequeue"))
        if not isinstance(self.pfc, PfcConfig):
            raise ConfigError(self, "pfc", self.pfc, "a PfcConfig")
        check_int(self, "ecmp_seed", self.ecmp_seed, 0, (1 << 32) - 1)
        check_int(self, "mtu", self.mtu, 256, 9000)
        if self.lfsr_seed is not None:
            check_int(self, "lfsr_seed", self.lfsr_seed, 0, 2**63 - 1)


@dataclass(frozen=True)
class FlowSpec:
    """One flow: ``size_bytes`` None is long-lived (sends until ``stop_ps`` or the end)."""

    flow_id: int
    src: int
    dst: int
    size_bytes: int | None = None
    start_ps: int = 0
    stop_ps: int | None = None
    tag: str = ""
    track: bool = False


@dataclass
class FlowRecord:
    flow_id: int
    src: int
    dst: int
    tag: str
    size_bytes: int | None
    start_ps: int
    finish_ps: int | None
    delivered_bytes: int
    ideal_fct_ps: int | None        # see Network.ideal_fct_ps
    retransmitted_bytes: int
    stop_ps: int | None = None
    #: the sender engine's per-flow settings where they depend on the flow (LDCP: the base RTT
    #: taken from the path and what derives from it), else empty
    settings: dict = field(default_factory=dict)
    #: what the sender measured of its own run where it measures anything (LDCP: time below one
    #: packet and at the floor gamma, minimum window, fast-start exit, NAKs, timeouts), else empty
    measured: dict = field(default_factory=dict)


@dataclass
class RunResult:
    algorithm: str
    duration_ps: int
    events: int
    sample_ps: int
    seed: int
    flows: list[FlowRecord]
    queue_series: dict[str, list[int]]
    flow_series: dict[int, list[int]]
    port_tx_bytes: dict[str, int]
    port_rate_bps: dict[str, int]
    counters: dict[str, int]
    pause_series: dict[str, list[int]] = field(default_factory=dict)
    window_series: dict[int, list[float]] = field(default_factory=dict)   # packets (windowed)
    #: the tracked flows' state changes, sorted by time (:mod:`sim.net.trace`: rows of
    #: ``(time_ps, flow, event, *trace.FIELDS)``) and the fields the algorithm fills
    trace: list[tuple] = field(default_factory=list)
    trace_fields: tuple[str, ...] = ()


# --------------------------------------------------------------------------------------------
# Ports
# --------------------------------------------------------------------------------------------


class EgressPort:
    """One direction of a link.  ``send`` offers a packet (False: the switch dropped it).
    ``name`` is the link it feeds, ``<node>-><peer>`` (set by :meth:`Network.connect`): the
    name of its queue trace, utilization and pause series."""

    def __init__(self, net: Network, owner, index: int, rate_bps: int, delay_ps: int, name: str):
        self.net, self.sim, self.owner, self.index = net, net.sim, owner, index
        self.rate_bps, self.delay_ps, self.name = rate_bps, delay_ps, name
        self.peer = None          # receiving node
        self.peer_port = -1       # its port index for this link
        self.queues = (deque(), deque(), deque())
        self.busy = False
        self.tx_bytes = 0
        self.marker: MarkerModel | None = None
        self.cp: CpModel | None = None
        # PFC state of the data priority
        self.paused_until = 0
        self.pause_start: int | None = None
        self.paused_ps = 0
        self.ignore_pause_until = 0
        self.watchdog_count = 0
        self.is_nic = isinstance(owner, Host)
        self.waiters: list = []   # NIC: senders waiting for the data queue to drain

    def data_backlog(self) -> int:
        return len(self.queues[PRIO_DATA])

    # -- admission -----------------------------------------------------------------------------
    def send(self, pkt: Packet) -> bool:
        marker = self.marker
        if marker is not None and pkt.prio != PRIO_MAC:
            ecn_in = pkt.ecn
            d = marker.step(Descriptor(QueueOp.ENQUEUE, self.index, pkt.prio, pkt.size, ecn_in))
            if d.drop:
                self.owner.on_drop(self, pkt, d.reason)
                return False
            pkt.ecn = d.ecn
            if d.marked:
                self.owner.on_mark(self, pkt, ecn_in)
        self.queues[pkt.prio].append(pkt)
        self.kick()
        return True

    # -- transmission --------------------------------------------------------------------------
    def data_paused(self) -> bool:
        now = self.sim.now
        return now < self.paused_until and now >= self.ignore_pause_until

    def _start(self) -> None:
        q = self.queues
        if q[PRIO_MAC]:
            queue = q[PRIO_MAC]
        elif q[PRIO_CONTROL]:
            queue = q[PRIO_CONTROL]
        elif q[PRIO_DATA] and not self.data_paused():
            queue = q[PRIO_DATA]
        else:
            self.busy = False
            return
        pkt = queue.popleft()
        if self.marker is not None and pkt.prio != PRIO_MAC:
            ecn_in = pkt.ecn
            d = self.marker.step(Descriptor(QueueOp.DEQUEUE, self.index, pkt.prio, pkt.size,
                                            ecn_in))
            assert d.reason == DropReason.NONE, d
            pkt.ecn = d.ecn
            if d.marked:
                self.owner.on_mark(self, pkt, ecn_in)
            if pkt.ingress >= 0:
                self.owner.release(pkt)
        self.busy = True
        self.tx_bytes += pkt.size
        if self.is_nic and pkt.kind == DATA:
            pkt.sent_ps = self.sim.now            # left the sender (feedback-delay statistics)
            if self.waiters and len(q[PRIO_DATA]) < 2:
                waiters, self.waiters = self.waiters, []
                for wake in waiters:
                    wake()
        self.sim.after(serialization_ps(pkt.size, self.rate_bps), self._finish, pkt)

    def _finish(self, pkt: Packet) -> None:
        self.sim.after(self.delay_ps, self.peer.receive, pkt, self.peer_port)
        self._start()

    # -- PFC -------------------------------------------------------------------------------------
    def pause(self, pause_ps: int) -> None:
        """A PAUSE frame arrived for this port's data priority (0 = resume)."""
        now = self.sim.now
        self._close_expired_pause(now)
        if pause_ps and self.pause_start is None:
            self.pause_start = now
        self.paused_until = now + pause_ps
        if pause_ps:
            self.sim.at(self.paused_until, self._pause_expiry)
        else:
            self._pause_expiry()

    def _close_expired_pause(self, now: int) -> None:
        if self.pause_start is not None and now >= self.paused_until:
            self.paused_ps += self.paused_until - self.pause_start
            self.pause_start = None

    def _pause_expiry(self) -> None:
        self._close_expired_pause(self.sim.now)
        self.kick()

    def kick(self) -> None:
        """Start a transmission if the port is idle (after a pause ends or is ignored)."""
        if not self.busy:
            self._start()

    def paused_total(self, now: int) -> int:
        if self.pause_start is None:
            return self.paused_ps
        return self.paused_ps + min(now, self.paused_until) - self.pause_start


# --------------------------------------------------------------------------------------------
# Nodes
# --------------------------------------------------------------------------------------------


class Node:
    def __init__(self, net: Network, node_id: int, name: str):
        self.net, self.sim, self.id, self.name = net, net.sim, node_id, name
        self.ports: list[EgressPort] = []

    def add_port(self, rate_bps: int, delay_ps: int) -> EgressPort:
        port = EgressPort(self.net, self, len(self.ports), rate_bps, delay_ps,
                          f"{self.name}.p{len(self.ports)}")
        self.ports.append(port)
        return port


class Host(Node):
    """A NIC and the endpoints of the flows that start or end here."""

    def __init__(self, net: Network, node_id: int, name: str):
        super().__init__(net, node_id, name)
        self.senders: dict = {}
        self.receivers: dict = {}
        self.tor: Switch | None = None

    @property
    def nic(self) -> EgressPort:
        return self.ports[0]

    def receive(self, pkt: Packet, in_port: int) -> None:
        kind = pkt.kind
        if kind == DATA:
            self.receivers[pkt.flow].on_data(pkt)
        elif kind == PAUSE:
            self.ports[in_port].pause(pkt.pause_ps)
        else:
            sender = self.senders.get(pkt.flow)
            if sender is not None:
                sender.on_control(pkt)


class Switch(Node):
    def __init__(self, net: Network, node_id: int, name: str):
        super().__init__(net, node_id, name)
        self.host_port: dict[int, int] = {}           # directly attached host -> port
        self.tor_ports: dict[int, list[int]] = {}     # destination ToR id -> ECMP ports
        self.marker: MarkerModel | None = None
        self.pfc = net.switch.pfc
        self.ingress_bytes: list[int] = []
        self.pause_sent: list[bool] = []
        self.refresh_pending: list[bool] = []
        self.l3qcn_np: dict = {}          # flow -> its notification point (CnpPacer)

    # -- forwarding ----------------------------------------------------------------------------
    def route(self, pkt: Packet) -> EgressPort:
        p = self.host_port.get(pkt.dst)
        if p is None:
            cands = self.tor_ports[self.net.tor_of[pkt.dst]]
            p = cands[0] if len(cands) == 1 else \
                cands[self.net.ecmp_hash(pkt.flow, pkt.kind != DATA, self.id) % len(cands)]
        return self.ports[p]

    def receive(self, pkt: Packet, in_port: int) -> None:
        if pkt.kind == PAUSE:
            self.ports[in_port].pause(pkt.pause_ps)
            return
        port = self.route(pkt)
        if pkt.kind == DATA and port.cp is not None:
            self._qcn_sample(port, pkt)
        if not (self.pfc.enabled and pkt.prio == PRIO_DATA):
            port.send(pkt)
            return
        # account before the send: an idle port dequeues (and releases) inside send()
        pkt.ingress = in_port
        self.ingress_bytes[in_port] += pkt.size
        if not port.send(pkt):
            pkt.ingress = -1
            self.ingress_bytes[in_port] -= pkt.size
            return
        if self.ingress_bytes[in_port] > self.pfc.xoff_bytes and not self.pause_sent[in_port]:
            self.pause_sent[in_port] = True
            self._pause_frame(in_port, self.pfc.pause_time_ps)
            if not self.refresh_pending[in_port]:
                self.refresh_pending[in_port] = True
                self.sim.after(self.pfc.pause_time_ps // 2, self._refresh_pause, in_port)

    # -- hooks from the ports ----------------------------------------------------------------------
    def on_drop(self, port, pkt, reason) -> None:
        self.net.counters["drops_not_ect_at_k" if reason == DropReason.NOT_ECT_AT_K
                          else "drops_buffer"] += 1
        self.net.counters[f"drops_{_drop_class(pkt)}"] += 1

    def on_mark(self, port, pkt, ecn_in) -> None:
        net = self.net
        net.counters["marks"] += 1
        if net.l3qcn and pkt.kind == DATA:
            # L3QCN for RoCEv2: the congested switch itself tells the source, and the packet
            # continues unmarked (the receiver's NP must not answer the same congestion twice).
            pkt.ecn = ecn_in
            np = self.l3qcn_np.get(pkt.flow)
            if np is None:
                np = self.l3qcn_np[pkt.flow] = net.l3qcn_np()
            if np.on_ce(self.sim.now):
                net.counters["cnps"] += 1
                net.counters["cnps_by_switch"] += 1
                self.route_control(control(CNP, pkt.flow, pkt.dst, pkt.src, by_switch=True,
                                           sent_ps=pkt.sent_ps))

    def route_control(self, pkt: Packet) -> None:
        self.route(pkt).send(pkt)

    def _qcn_sample(self, port: EgressPort, pkt: Packet) -> None:
        d = port.cp.step(CpFrame(qlen=self.marker.queue(port.index, PRIO_DATA), length=pkt.size))
        if d.cnm:
            self.net.counters["cnms"] += 1
            self.route_control(control(CNM, pkt.flow, pkt.dst, pkt.src, count=d.qntz_fb,
                                       sent_ps=pkt.sent_ps))

    # -- PFC -------------------------------------------------------------------------------------
    def release(self, pkt: Packet) -> None:
        i = pkt.ingress
        pkt.ingress = -1
        b = self.ingress_bytes[i] - pkt.size
        self.ingress_bytes[i] = b
        if self.pause_sent[i] and b <= self.pfc.xon_bytes:
            self.pause_sent[i] = False
            self._pause_frame(i, 0)

    def _pause_frame(self, in_port: int, pause_ps: int) -> None:
        self.net.counters["pause_frames"] += 1
        self.ports[in_port].send(Packet(PAUSE, -1, -1, -1, 0, 64, Ecn.NOT_ECT, PRIO_MAC,
                                        pause_ps=pause_ps))

    def _refresh_pause(self, in_port: int) -> None:
        """Every half pause time while above XON, PAUSE again.  One chain per port: a chain
        still scheduled from an earlier XOFF episode serves the next one."""
        if not self.pause_sent[in_port]:
            self.refresh_pending[in_port] = False
            return
        self._pause_frame(in_port, self.pfc.pause_time_ps)
        self.sim.after(self.pfc.pause_time_ps // 2, self._refresh_pause, in_port)

    def watchdog(self) -> None:
        pfc = self.pfc
        now = self.sim.now
        for port in self.ports:
            if port.queues[PRIO_DATA] and now < port.paused_until:
                port.watchdog_count += 1
                if port.watchdog_count >= pfc.watchdog_checks:
                    port.ignore_pause_until = now + pfc.watchdog_recovery_ps
                    port.watchdog_count = 0
                    self.net.counters["watchdog_trips"] += 1
                    port.kick()
            else:
                port.watchdog_count = 0
        self.sim.after(pfc.watchdog_period_ps, self.watchdog)


def _drop_class(pkt: Packet) -> str:
    if pkt.kind != DATA:
        return "control"
    return "ect" if pkt.ecn != Ecn.NOT_ECT else "not_ect"


# --------------------------------------------------------------------------------------------
# The network
# --------------------------------------------------------------------------------------------


class Network:
    """Nodes, links, flows and the run loop for one algorithm (see ``docs/simulator.md``)."""

    def __init__(self, algorithm: str, params=None, switch: SwitchConfig | None = None,
                 seed: int = 1, sample_ps: int = 10 * PS_PER_US, clk_ps: int = 4000,
                 trace: bool = True):
        from .algorithms import ALGORITHMS
        if algorithm not in ALGORITHMS:
            raise ConfigError("Network", "algorithm", algorithm, f"one of {sorted(ALGORITHMS)}")
        self.algorithm = ALGORITHMS[algorithm]
        self.params = params if params is not None else self.algorithm.params_cls()
        if not isinstance(self.params, self.algorithm.params_cls):
            raise ConfigError("Network", "params", self.params,
                              f"a {self.algorithm.params_cls.__name__}")
        self.switch = switch or SwitchConfig()
        self.mtu = self.switch.mtu
        check_int("Network", "seed", seed, 0, 2**63 - 1)
        self.seed, self.sample_ps, self.clk_ps = seed, sample_ps, clk_ps
        self._ecmp_mix = self.draw("ecmp")
        self.sim = Simulator()
        self.nodes: list[Node] = []
        self.hosts: dict[int, Host] = {}
        self.switches: list[Switch] = []
        self.tor_of: dict[int, int] = {}
        self.flows: list[FlowSpec] = []
        self.counters: Counter = Counter()
        self.monitored: list[EgressPort] = []
        self.l3qcn = False
        self.l3qcn_np = None              # () -> a switch's per-flow notification point
        # the congestion engines' implementation (sim.net.engine_api; None: each algorithm's
        # default, the golden models or LDCP's fast twin)
        self.engine: str | None = None
        # the switches' markers: None follows ``engine`` ("rtl": the Verilated EgressMarker,
        # sim.rtl.marker; else the golden MarkerModel); "golden" or "rtl" chooses explicitly
        self.marker_engine: str | None = None
        self.flows_by_id: dict[int, FlowSpec] = {}
        self._sampling = False
        self._finalized = False
        self.queue_series: dict[str, list[int]] = {}
        self.pause_series: dict[str, list[int]] = {}
        self.flow_series: dict[int, list[int]] = {}
        self.window_series: dict[int, list[float]] = {}
        self.trace = trace            # trace the tracked flows' engines (sim.net.trace)
        self.trace_rows: list[tuple] = []

    # -- building --------------------------------------------------------------------------------
    def add_host(self, name: str | None = None) -> Host:
        node_id = len(self.nodes)
        host = Host(self, node_id, name or f"h{len(self.hosts)}")
        self.nodes.append(host)
        self.hosts[node_id] = host
        return host

    def add_switch(self, name: str | None = None) -> Switch:
        sw = Switch(self, len(self.nodes), name or f"s{len(self.switches)}")
        self.nodes.append(sw)
        self.switches.append(sw)
        return sw

    def connect(self, a: Node, b: Node, rate_bps: int, delay_ps: int) -> tuple[EgressPort,
                                                                                EgressPort]:
        """A full-duplex link; returns (a's port towards b, b's port towards a)."""
        check_int("link", "rate_bps", rate_bps, 10**6, 10**13)
        check_int("link", "delay_ps", delay_ps, 0, 10**12)
        pa, pb = a.add_port(rate_bps, delay_ps), b.add_port(rate_bps, delay_ps)
        # a port is named after the link it feeds ("s0->h5"; "#2" on a second parallel link):
        # the names of queue traces, utilization and pause series
        for p, x, y in ((pa, a, b), (pb, b, a)):
            same = sum(q.peer is y for q in x.ports[:-1])
            p.name = f"{x.name}->{y.name}" + (f"#{same + 1}" if same else "")
        pa.peer, pa.peer_port = b, pb.index
        pb.peer, pb.peer_port = a, pa.index
        if isinstance(a, Host):
            a.tor = b
        if isinstance(b, Host):
            b.tor = a
        return pa, pb

    # -- randomness --------------------------------------------------------------------------
    def draw(self, *key, base: int | None = None) -> int:
        """A 32-bit number fixed by the run's ``seed`` and ``key`` (what it seeds: a switch's
        marker, a port's congestion point, a flow's reaction point, ECMP).  Every random source
        of the network takes its seed from here, so the seed reproduces a run exactly and
        another seed changes every draw.  ``base`` replaces the run's seed (the switches'
        ``lfsr_seed``)."""
        text = repr((self.seed if base is None else base,) + key).encode()
        return int.from_bytes(hashlib.blake2b(text, digest_size=4).digest(), "little")

    def seeded(self, lfsr: LfsrParams, *key, base: int | None = None) -> LfsrParams:
        """``lfsr`` (polynomial kept) with its seed drawn for ``key`` (never the all-zero
        state, where an LFSR stays)."""
        seed = self.draw(*key, base=base) & ((1 << lfsr.width) - 1)
        return LfsrParams(lfsr.width, lfsr.taps, seed or 1)

    def ecmp_hash(self, flow: int, reverse: bool, switch_id: int) -> int:
        x = (flow * 0x9E3779B1 + switch_id * 0x85EBCA77 + reverse * 0xC2B2AE3D
             + self.switch.ecmp_seed + self._ecmp_mix) & 0xFFFFFFFF
        x ^= x >> 15
        x = (x * 0x2C1B3C6D) & 0xFFFFFFFF
        return x ^ (x >> 12)

    def _finalize(self) -> None:
        if self._finalized:
            return
        self._finalized = True
        # routes: hosts hang off one switch each (their ToR); shortest paths between switches
        for h in self.hosts.values():
            if h.tor is None or not isinstance(h.tor, Switch):
                raise ConfigError("Network", "topology", h.name, "every host linked to a switch")
            self.tor_of[h.id] = h.tor.id
            h.tor.host_port[h.id] = h.nic.peer_port
        tors = sorted(set(self.tor_of.values()))
        for tor in tors:
            dist = {tor: 0}
            frontier = [self.nodes[tor]]
            while frontier:
                nxt = []
                for sw in frontier:
                    for p in sw.ports:
                        if isinstance(p.peer, Switch) and p.peer.id not in dist:
                            dist[p.peer.id] = dist[sw.id] + 1
                            nxt.append(p.peer)
                frontier = nxt
            for sw in self.switches:
                if sw.id == tor or sw.id not in dist:
                    continue
                sw.tor_ports[tor] = [p.index for p in sw.ports if isinstance(p.peer, Switch)
                                     and dist.get(p.peer.id, -1) == dist[sw.id] - 1]
        pfc = self.switch.pfc
        limit = THRESHOLD_MAX
        cp_cfg = self.algorithm.cp_config(self.params, self.mtu)
        make_marker = MarkerModel
        if (self.marker_engine or self.engine) == "rtl":
            from sim.rtl.marker import rtl_marker as make_marker
        for sw in self.switches:
            if pfc.enabled:
                # lossless: no egress-queue limit, the shared buffer plus every ingress port's
                # headroom (what PFC's XOFF reserves for the bytes in flight after a PAUSE)
                buf_max = shared = min(self.switch.buffer_bytes
                                       + pfc.headroom_bytes * len(sw.ports), limit)
            else:
                buf_max, shared = self.switch.queue_bytes, self.switch.buffer_bytes
            mcfg = self.algorithm.marker_config(
                self.params, ports=len(sw.ports), mtu=self.mtu, buf_max=buf_max,
                shared_buffer=shared, sample_at=self.switch.marking_point)
            # (one LFSR per marker, drawn for every descriptor of every port, as in the RTL)
            sw.marker = make_marker(mcfg.replace(lfsr=self.seeded(
                mcfg.lfsr, "marker", sw.id, base=self.switch.lfsr_seed)))
            sw.ingress_bytes = [0] * len(sw.ports)
            sw.pause_sent = [False] * len(sw.ports)
            sw.refresh_pending = [False] * len(sw.ports)
            for p in sw.ports:
                p.marker = sw.marker
                if cp_cfg is not None:
                    p.cp = CpModel(cp_cfg.replace(lfsr=self.seeded(
                        cp_cfg.lfsr, "cp", sw.id, p.index, base=self.switch.lfsr_seed)))
            if pfc.enabled and pfc.watchdog_checks:
                self.sim.at(pfc.watchdog_period_ps, sw.watchdog)
        self.l3qcn = self.algorithm.l3qcn(self.params)
        if self.l3qcn:     # the switch's NP paces CNPs (sim.net.algos.l3qcn.switch_np)
            from .algos.l3qcn import switch_np
            self.l3qcn_np = functools.partial(switch_np, self.params)
        for p in self.monitored:
            self.queue_series[p.name] = []
            self.pause_series[p.name] = []

    def monitor(self, port: EgressPort) -> None:
        self.monitored.append(port)

    # -- flows -------------------------------------------------------------------------------------
    def add_flow(self, spec: FlowSpec) -> None:
        self._finalize()
        for name, host in (("src", spec.src), ("dst", spec.dst)):
            if host not in self.hosts:
                raise ConfigError(f"flow {spec.flow_id}", name, host, "a host id of the topology")
        if spec.src == spec.dst:
            raise ConfigError(f"flow {spec.flow_id}", "dst", spec.dst, "a host other than src")
        if spec.size_bytes is not None:
            check_int(f"flow {spec.flow_id}", "size_bytes", spec.size_bytes, 1, 1 << 40)
        self.flows.append(spec)
        self.flows_by_id[spec.flow_id] = spec
        src, dst = self.hosts[spec.src], self.hosts[spec.dst]
        dst.receivers[spec.flow_id] = self.algorithm.make_receiver(self, spec, dst)
        sender = self.algorithm.make_sender(self, spec, src)
        src.senders[spec.flow_id] = sender
        self.sim.at(spec.start_ps, sender.start)
        if spec.track or spec.size_bytes is None:
            self.flow_series[spec.flow_id] = []
            if hasattr(sender, "window_packets"):
                self.window_series[spec.flow_id] = []
            if self.trace:
                from . import trace
                trace.attach(self, spec, sender)

    # -- running -----------------------------------------------------------------------------------
    def _sample(self) -> None:
        for p in self.monitored:
            self.queue_series[p.name].append(p.owner.marker.queue(p.index, PRIO_DATA))
            self.pause_series[p.name].append(int(p.data_paused()))
        for fid, series in self.flow_series.items():
            series.append(self.receiver(fid).delivered_bytes)
        for fid, series in self.window_series.items():
            series.append(self.sender(fid).window_packets())
        self.sim.after(self.sample_ps, self._sample)

    def sender(self, fid: int):
        """The sender endpoint of flow ``fid``."""
        spec = self.flows_by_id[fid]
        return self.hosts[spec.src].senders[fid]

    def receiver(self, fid: int):
        """The receiver endpoint of flow ``fid``."""
        spec = self.flows_by_id[fid]
        return self.hosts[spec.dst].receivers[fid]

    def run(self, until_ps: int, progress: Callable[[int], None] | None = None) -> None:
        self._finalize()
        if not self._sampling:
            self._sampling = True
            self.sim.at(0, self._sample)
        if progress is None:
            self.sim.run(until_ps)
        else:
            step = max(until_ps // 100, 1)
            t = self.sim.now
            while t < until_ps:
                t = min(t + step, until_ps)
                self.sim.run(t)
                progress(t)

    def ideal_fct_ps(self, src: int, dst: int, size: int) -> int:
        """The earliest a message of ``size`` bytes can be delivered on an empty path (FCT is
        measured at the receiver): its bytes at the path's slowest rate, plus the propagation
        of every hop and the store-and-forward serialization of one packet at every other hop."""
        path = self._path(src, dst)
        first = min(size, self.mtu)
        rate = min(p.rate_bps for p in path)
        return (sum(p.delay_ps + serialization_ps(first, p.rate_bps) for p in path)
                - serialization_ps(first, rate) + serialization_ps(size, rate))

    def base_rtt_ps(self, src: int, dst: int, flow: int = 0) -> int:
        """The round trip of flow ``flow`` on an empty network, as the topology knows it: the
        propagation delay of every link of the data path and of the ACK path back, plus the
        serialization of a full data packet at every hop there and of an ACK at every hop back
        (the ECMP choices are the flow's own)."""
        fwd = self._path(src, dst, flow)
        back = self._path(dst, src, flow, ACK)
        return (sum(p.delay_ps + serialization_ps(self.mtu, p.rate_bps) for p in fwd)
                + sum(p.delay_ps + serialization_ps(CONTROL_BYTES, p.rate_bps) for p in back))

    def max_queueing_ps(self, src: int, dst: int, flow: int = 0) -> int:
        """The longest flow ``flow``'s data can wait in the switches' queues on its path: every
        switch egress port of the path full to its limit (its marker's ``buf_max``), drained at
        the port's rate."""
        return sum(serialization_ps(p.marker.cfg.buf_max, p.rate_bps)
                   for p in self._path(src, dst, flow) if p.marker is not None)

    def _path(self, src: int, dst: int, flow: int = 0, kind: int = DATA) -> list[EgressPort]:
        self._finalize()
        probe = Packet(kind, flow, src, dst, 0, self.mtu)
        node = self.hosts[src]
        port = node.nic
        path = [port]
        while port.peer.id != dst:
            port = port.peer.route(probe)
            path.append(port)
        return path

    def result(self) -> RunResult:
        from . import trace
        now = self.sim.now
        records = []
        for f in self.flows:
            rx, tx = self.receiver(f.flow_id), self.sender(f.flow_id)
            ideal = None if f.size_bytes is None else self.ideal_fct_ps(f.src, f.dst,
                                                                        f.size_bytes)
            settings = tx.settings() if hasattr(tx, "settings") else {}
            measured = tx.measured() if hasattr(tx, "measured") else {}
            records.append(FlowRecord(f.flow_id, f.src, f.dst, f.tag, f.size_bytes, f.start_ps,
                                      rx.done_ps, rx.delivered_bytes, ideal, tx.retx_bytes,
                                      f.stop_ps, settings, measured))
        counters = dict(self.counters)
        for k in ("marks", "drops_not_ect_at_k", "drops_buffer", "cnps", "cnms", "pause_frames",
                  "timeouts", "retransmitted_packets", "watchdog_trips", "cnps_by_switch",
                  "flows_below_one_packet"):
            counters.setdefault(k, 0)
        ports = [p for n in self.nodes for p in n.ports]
        counters["paused_ps"] = sum(p.paused_total(now) for p in ports)
        switch_ports = [p for s in self.switches for p in s.ports]
        return RunResult(
            algorithm=self.algorithm.name, duration_ps=now, events=self.sim.events,
            sample_ps=self.sample_ps, seed=self.seed, flows=records,
            queue_series=self.queue_series, flow_series=self.flow_series,
            port_tx_bytes={p.name: p.tx_bytes for p in switch_ports},
            port_rate_bps={p.name: p.rate_bps for p in switch_ports},
            counters=counters, pause_series=self.pause_series,
            window_series=self.window_series, trace=trace.rows(self),
            trace_fields=trace.fields(self))
