"""The multi-flow pacer: a datapath of the multi-flow engine (:mod:`hw.nic.flow_engine`) that
grants one transmission per clock to the flow whose send time has come.

Per flow (``state_layout``, in this order, which is also the order of ``ctl`` WRITE fields):

- ``grants`` (G bits): grants so far, wrapping from 2**G - 1 to 1 (never 0 on a grant).  It is
  the datapath's ``rate_field``: the engine streams ``{flow, grants}`` on ``rate`` at every
  change, i.e. ONE RECORD PER GRANT (a record with value 0 is START/RESET, not a grant);
- ``backlog``: packets waiting (saturating);
- ``armed``: ``next`` is a live deadline (the flow is in the wheel);
- ``next`` (W + F bits): the next send time as a fixed-point cycle stamp, stored BIASED by
  ``1 - 2**-F`` so that its integer part ``next[F:]`` is the ideal time rounded UP (a grant is
  never earlier than its ideal time);
- ``ival`` (UQ.F cycles): the inter-packet interval.

Update at time ``t`` (the engine's contract: due timers first, as of their deadline, then the
event):

1. timer: if ``armed`` and ``next[F:] <= t``: with a backlog, a GRANT (backlog -= 1, grants += 1,
   next += ival: the old deadline plus the interval, never ``t`` plus it: no drift); without one,
   ``armed := 0`` (the flow went idle at its send time: it keeps no credit);
2. event: ``tx`` (payload: packet count n): backlog += n; if the backlog was 0 (and n > 0) the
   flow is armed at ``max(next, t)`` (its pending send time if still in the future, else now);
   ``cn`` (payload: a new interval): ival := new, and an armed flow's pending send time moves to
   ``max(next - old + new, t)`` (the new interval counts from the previous grant);
3. if the event (2) made the flow due at ``t`` and (1) did not grant, a GRANT now (at most one
   grant per event).

``wake`` = ``next[F:]`` while armed.  ``expired``/``late`` are the grants and their lateness
(``t - next[F:]``), so the engine's counters measure the pacing error.  docs/pacer.md has the
rules, the burst allowance, fairness and the measured figures.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Mux, Signal
from amaranth.lib import data

from ..lib.arith import named_wire
from .flow_datapath import DatapathOut, EventKind, FlowDatapath, time_le
from .pacer_config import PacerConfig

__all__ = ["PacerDatapath", "pacer_engine"]


class PacerDatapath(FlowDatapath):
    """The pacer's per-flow update (one clock, ``latency = 1``).

    Registers: ``ival_init`` (the interval START/RESET load, UQ.F, at most 32 bits).
    ``tx`` events carry a packet count (``tx_bytes_width = count_width``); ``cn`` events carry
    ``{ival}`` (a new interval).
    """

    name = "pacer"
    latency = 1

    def __init__(self, config: PacerConfig | None = None):
        self.config = cfg = PacerConfig() if config is None else config
        self.time_width = cfg.engine.time_width
        self.frac_bits = cfg.frac_bits
        self.state_layout = data.StructLayout({
            "grants": cfg.grant_width,
            "backlog": cfg.backlog_width,
            "armed": 1,
            "next": cfg.next_width,
            "ival": cfg.ival_width,
        })
        self.cn_layout = data.StructLayout({"ival": cfg.ival_width})
        self.tx_bytes_width = cfg.count_width
        self.rate_field = "grants"
        self.regs = [("ival_init", cfg.init_reg_width, min(100 << cfg.frac_bits,
                                                          (1 << cfg.init_reg_width) - 1))]

    def init_state(self, regs) -> dict:
        return {"ival": regs.ival_init}

    def pre(self, m, *, kind, tx_bytes, cn, t, regs) -> dict:
        # t as a biased deadline: t + 1 - 2**-F (fraction all ones)
        F = self.frac_bits
        return {"tb": Cat(Const((1 << F) - 1, F), t)}

    def build(self, m, *, state, kind, tx_bytes, cn, t, regs, pre, valid=None) -> DatapathOut:
        W, F = self.time_width, self.frac_bits
        cfg = self.config
        NW = cfg.next_width
        s = state
        tb = pre["tb"]
        bl_max = (1 << cfg.backlog_width) - 1

        # 1. the due timer, as of its deadline
        due = named_wire(m, "pc_due", s.armed & time_le(s.next[F:], t, W))
        has = s.backlog != 0
        g1 = named_wire(m, "pc_g1", due & has)
        bl1 = named_wire(m, "pc_bl1", s.backlog - g1, width=cfg.backlog_width)
        armed1 = named_wire(m, "pc_armed1", s.armed & ~(due & ~has))
        next1 = named_wire(m, "pc_next1", Mux(g1, (s.next + s.ival)[:NW], s.next), width=NW)

        # 2. the event
        is_tx = kind == EventKind.TX
        is_cn = kind == EventKind.CN
        n = tx_bytes
        total = bl1 + n
        bl2 = named_wire(m, "pc_bl2", Mux(is_tx, Mux(total > bl_max, bl_max, total), bl1),
                         width=cfg.backlog_width)
        future1 = ~time_le(next1[F:], t, W)
        arm = named_wire(m, "pc_arm", is_tx & (bl1 == 0) & (n != 0))
        cand = named_wire(m, "pc_cand", (next1 + cn.ival - s.ival)[:NW], width=NW)
        resched = named_wire(m, "pc_resched", is_cn & armed1)
        next2 = Signal(NW, name="pc_next2")
        with m.If(arm):
            m.d.comb += next2.eq(Mux(armed1 & future1, next1, tb))
        with m.Elif(resched):
            m.d.comb += next2.eq(Mux(~time_le(cand[F:], t, W), cand, tb))
        with m.Else():
            m.d.comb += next2.eq(next1)
        armed2 = named_wire(m, "pc_armed2", armed1 | arm)
        ival2 = named_wire(m, "pc_ival2", Mux(is_cn, cn.ival, s.ival), width=cfg.ival_width)

        # 3. a grant caused by the event itself
        g2 = named_wire(m, "pc_g2", ~g1 & armed2 & (bl2 != 0) & time_le(next2[F:], t, W))
        grant = named_wire(m, "pc_grant", g1 | g2)
        gmax = (1 << cfg.grant_width) - 1

        nxt = Signal(self.state_layout, name="pc_state")
        m.d.comb += [
            nxt.grants.eq(Mux(grant, Mux(s.grants == gmax, 1, s.grants + 1), s.grants)),
            nxt.backlog.eq(bl2 - g2),
            nxt.armed.eq(armed2),
            nxt.next.eq(Mux(g2, (next2 + ival2)[:NW], next2)),
            nxt.ival.eq(ival2),
        ]
        late = Mux(g1, (t - s.next[F:])[:W], (t - next2[F:])[:W])
        return DatapathOut(next_state=nxt, wake_valid=nxt.armed, wake=nxt.next[F:],
                           expired=grant, late=late)


def pacer_engine(config: PacerConfig | None = None):
    """The pacer top: :class:`~hw.nic.flow_engine.FlowEngine` around a :class:`PacerDatapath`."""
    from .flow_engine import FlowEngine
    cfg = PacerConfig() if config is None else config
    return FlowEngine(cfg.engine, PacerDatapath(cfg))
