"""LDCP transport receivers for many flows: the receiver of :mod:`hw.nic.ldcp_transport` (expected
LSN, per-packet or delayed ACK with the CE echo, one NAK per gap) as a datapath of the
multi-flow engine (:mod:`hw.nic.flow_engine`), the delayed-ACK flush timer a deadline of the
engine's timer service.

Per flow (:func:`ldcp_rx_state_layout`): ``rec`` (the streamed field: the expected LSN and the
last ACK record), ``pend`` (unmarked in-order packets not yet acknowledged), ``nak_sent``,
``fl_on`` / ``fl_dl`` (the flush deadline).  Events: ``cn`` = a data packet ``{lsn, length,
ce, last}``; ``TIMER`` = the flush; ``tx`` carries nothing (it only applies a due flush); a new
message is the ``ctl`` RESET (or START) of the flow.

One update at ``t`` (the golden model :class:`sim.models.ldcp_engine.LdcpRxDatapathModel`
calls the one-flow rule :func:`sim.models.ldcp_transport.rx_core` itself):

1. the flush, as of its deadline (``fl_on`` and ``fl_dl <= t``): ``ACK(E, n = pend)``,
   ``pend := 0``;
2. a packet: the one-flow rule (malformed: dropped; in order: delivered, ``E += length``, ACK
   per ``m`` unmarked packets, on the last packet, or on CE - the pending ones first; a gap:
   one NAK; a duplicate: a duplicate ACK);
3. the flush deadline: ``t + ack_delay`` when the first packet becomes pending.

The record ``rec`` = ``{exp, seq, pre, main, ece, n, nak, n_pre}``: ``exp`` the expected LSN
after the update (every in-order byte moves it: the delivery); ``seq`` + 1 (mod 4) when the
update emits ACKs: ``pre``: ``ACK(E_old, n = n_pre)`` (a due flush, or the pending packets a
CE mark flushes), then ``main``: the packet's own ``ACK(exp, ece, n, nak)`` (its cumulative LSN
is always the new ``exp``).  The engine streams ``rec`` on every change: one record per delivery
or ACK.  Latency: ``latency`` cycles of modify stage (default 1: back-to-back packets of one
flow, forwarded); throughput one packet per clock across flows.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import data

from ..lib.arith import delayed, named_wire
from ..params import BlockConfig, check_int
from .flow_datapath import DatapathOut, EventKind, FlowDatapath, time_le
from .flow_engine_config import FlowEngineConfig
from .ldcp_engine import check_deadline, check_out_fifo, check_parts
from .ldcp_transport_config import LdcpTransportConfig
from .ldcp_window_config import MTU_WIDTH, LdcpWindowConfig

__all__ = ["LdcpRxEngineConfig", "LdcpRxDatapath", "ldcp_rx_engine", "ldcp_rx_state_layout",
           "REC_FIELDS"]

#: the record's fields above ``exp`` (``lsn_width`` bits), in order: (name, width or "n")
REC_FIELDS = (("seq", 2), ("pre", 1), ("main", 1), ("ece", 1), ("n", "n"), ("nak", 1),
              ("n_pre", "n"))


@dataclass(frozen=True)
class LdcpRxEngineConfig(BlockConfig):
    """The multi-flow LDCP receiver.

    engine: the multi-flow engine (flows, ``time_width`` W, wheel, output FIFOs);
    transport: the one-flow transport's configuration (LSN width; the reset values of ``m``,
      the MTU and the flush time ``ack_delay``, run-time registers here);
    latency: modify-stage cycles, 1 ... 4 (1: the same flow's packets back to back).
    """

    engine: FlowEngineConfig = FlowEngineConfig()
    transport: LdcpTransportConfig = field(
        default_factory=lambda: LdcpTransportConfig(window=LdcpWindowConfig(m=4)))
    latency: int = 1

    def __post_init__(self):
        # (the checks the LDCP engine tops share, hw.nic.ldcp_engine)
        check_parts(self, "transport", LdcpTransportConfig)
        check_int(self, "latency", self.latency, 1, 4)
        check_out_fifo(self)
        check_deadline(self, "transport.ack_delay_us", self.transport.ack_delay_us,
                       self.transport.registers().ack_delay, self.delay_width, "the flush")

    @property
    def delay_width(self) -> int:
        return min(24, self.engine.time_width - 2)

    def register_map(self, name: str = "ldcp_rx_engine"):
        """The engine's register map (:func:`hw.nic.engine_regs.engine_register_map`): the
        datapath's registers, the engine's counters, the header and the per-flow windows
        (``rec``, the receive record, is two words)."""
        from .engine_regs import engine_register_map
        return engine_register_map(name, LdcpRxDatapath(self), "LDRE",
                                   f"LDCP receiver engine, {self.engine.n_flows} flows",
                                   flows=self.engine.n_flows,
                                   timer=self.engine.timer)


def ldcp_rx_state_layout(cfg: LdcpRxEngineConfig) -> data.StructLayout:
    """``rec`` (``exp`` in the low ``lsn_width`` bits, then :data:`REC_FIELDS`), ``pend``,
    ``nak_sent``, ``fl_on``, ``fl_dl``."""
    t = cfg.transport
    nw = t.n_width
    rec = t.lsn_width + sum(nw if w == "n" else w for _, w in REC_FIELDS)
    return data.StructLayout({"rec": rec, "pend": nw, "nak_sent": 1, "fl_on": 1,
                              "fl_dl": cfg.engine.time_width})


def rec_layout(cfg: LdcpRxEngineConfig) -> data.StructLayout:
    nw = cfg.transport.n_width
    return data.StructLayout({"exp": cfg.transport.lsn_width,
                              **{n: (nw if w == "n" else w) for n, w in REC_FIELDS}})


class LdcpRxDatapath(FlowDatapath):
    """The multi-flow LDCP receiver's per-flow update (module docstring).

    Interface (the :mod:`hw.nic.flow_datapath` protocol): state :func:`ldcp_rx_state_layout`;
    CN payload ``{lsn, length, ce, last}`` (:func:`hw.layouts.ldcp_rx_packet_layout`); registers
    ``m`` (delayed-ACK limit, packets), ``mtu`` (bytes: longer packets are malformed),
    ``ack_delay`` (cycles; 0 counts as 1); rate field ``rec``.  Latency ``config.latency``
    (the update is one combinational cycle, its result registered ``latency - 1`` more times).
    """

    name = "ldcp_rx"

    def __init__(self, config: LdcpRxEngineConfig | None = None):
        cfg = LdcpRxEngineConfig() if config is None else config
        if not isinstance(cfg, LdcpRxEngineConfig):
            raise TypeError(f"LdcpRxDatapath needs a LdcpRxEngineConfig, not {cfg!r}")
        self.config = cfg
        t = cfg.transport
        self.time_width = cfg.engine.time_width
        self.latency = cfg.latency
        self.state_layout = ldcp_rx_state_layout(cfg)
        self.rec_layout = rec_layout(cfg)
        self.cn_layout = data.StructLayout({"lsn": t.lsn_width, "length": t.len_width,
                                            "ce": 1, "last": 1})
        self.tx_bytes_width = 1
        self.rate_field = "rec"
        r = t.registers()
        self.regs = [("m", t.n_width, r.m), ("mtu", MTU_WIDTH, r.mtu),
                     ("ack_delay", cfg.delay_width, r.ack_delay)]

    def init_state(self, regs) -> dict:
        return {}                              # expected LSN 0, nothing pending, no timer

    def build(self, m: Module, *, state, kind, tx_bytes, cn, t, regs, pre,
              valid=None) -> DatapathOut:
        cfg = self.config
        W = self.time_width
        LW = cfg.transport.lsn_width
        s = state
        rec = self.rec_layout(s.rec)
        p = cn

        def wire(name, expr, width=None):
            return named_wire(m, "rx_" + name, expr, width)

        exp = rec.exp
        # 1. the flush, as of its deadline
        due = wire("due", s.fl_on & time_le(s.fl_dl, t, W))
        pend0 = wire("pend0", Mux(due, 0, s.pend), len(s.pend))
        # 2. the packet
        is_pkt = kind == EventKind.CN
        bad = (p.length == 0) | (p.length > regs.mtu) | (p.lsn + p.length)[LW]
        ok = wire("ok", is_pkt & ~bad)
        in_order = wire("in_order", ok & (p.lsn == exp))
        gap = wire("gap", ok & (p.lsn > exp))
        dup = wire("dup", ok & (p.lsn < exp))
        e2 = wire("e2", (exp + p.length)[:LW], LW)
        k1 = wire("k1", (pend0 + 1)[:len(s.pend)], len(s.pend))
        ack_now = wire("ack_now", in_order & (p.ce | (k1 == regs.m) | p.last))
        nak = wire("nak", gap & ~s.nak_sent)
        main = wire("main", ack_now | nak | dup)
        ce_pre = in_order & p.ce & (pend0 != 0)
        pre_v = wire("pre_v", due | ce_pre)
        nxt = Signal(self.state_layout, name="rx_next")
        nrec = Signal(self.rec_layout, name="rx_rec")
        pend1 = Signal.like(s.pend, name="rx_pend1")
        m.d.comb += [nxt.eq(s), nrec.eq(rec), pend1.eq(pend0)]
        with m.If(in_order):
            m.d.comb += [nrec.exp.eq(e2), nxt.nak_sent.eq(0),
                         pend1.eq(Mux(p.ce | ack_now, 0, k1))]
        with m.Elif(nak | dup):
            m.d.comb += pend1.eq(0)
        with m.If(nak):
            m.d.comb += nxt.nak_sent.eq(1)
        # the record: the ACK at the old E (a due flush, or the pending packets a CE mark
        # flushes), then the packet's own ACK (whose cumulative LSN is the new E)
        m.d.comb += [nrec.pre.eq(pre_v), nrec.main.eq(main),
                     nrec.n_pre.eq(Mux(due, s.pend, Mux(ce_pre, pend0, 0))),
                     nrec.ece.eq(main & in_order & p.ce),
                     nrec.n.eq(Mux(main, Mux(in_order, Mux(p.ce, 1, k1), pend0), 0)),
                     nrec.nak.eq(main & gap)]
        with m.If(main | pre_v):
            m.d.comb += nrec.seq.eq(rec.seq + 1)
        # 3. the flush deadline
        delay = regs.ack_delay
        arm = (pend0 == 0) & (pend1 != 0)
        m.d.comb += [
            nxt.rec.eq(nrec), nxt.pend.eq(pend1), nxt.fl_on.eq(pend1 != 0),
            nxt.fl_dl.eq(Mux(arm, (t + Mux(delay == 0, 1, delay))[:W], s.fl_dl)),
        ]
        d = self.latency - 1
        return DatapathOut(next_state=delayed(m, nxt, d, "rx_next"),
                           wake_valid=delayed(m, nxt.fl_on, d, "rx_wv"),
                           wake=delayed(m, nxt.fl_dl, d, "rx_wake"),
                           expired=delayed(m, due, d, "rx_due"),
                           late=delayed(m, (t - s.fl_dl)[:W], d, "rx_late"))


def ldcp_rx_engine(config: LdcpRxEngineConfig | None = None):
    """The top: :class:`~hw.nic.flow_engine.FlowEngine` around an :class:`LdcpRxDatapath`,
    with the register map's header and per-flow windows
    (:class:`hw.nic.engine_regs.EngineRegs`)."""
    from .engine_regs import EngineRegs
    from .flow_engine import FlowEngine
    cfg = LdcpRxEngineConfig() if config is None else config
    return EngineRegs(FlowEngine(cfg.engine, LdcpRxDatapath(cfg)), cfg.register_map())
