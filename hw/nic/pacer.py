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
- ``ival`` (UQ.F cycles): the inter-packet interval (per byte in byte mode);
- ``bytes``: byte mode (the NIC reports each granted packet's size, charged ``size x ival``);
- ``wait``: a byte-mode grant waits for that report (the flow has no deadline meanwhile);
- ``last``: the size of the last packet charged (byte mode; a CN rescales its charge).

Update at time ``t`` (the engine's contract: due timers first, as of their deadline, then the
event):

1. timer: if ``armed``, not ``wait`` and ``next[F:] <= t``: with a backlog, a GRANT (backlog
   -= 1, grants += 1; its deadline first capped to ``max(next[F:], t - burst)`` keeping the
   fraction; then packet mode: next += ival, the old deadline plus the interval, never ``t``
   plus it: no drift; byte mode: wait := 1); without one, ``armed := 0`` (the flow went idle
   at its send time: it keeps no credit);
2. event: ``tx`` {count n, size}: backlog += n; if the backlog was 0 (and n > 0) and the flow
   is not waiting, it is armed at ``max(next, t)``; a ``size`` (!= 0) while a byte-mode flow
   waits is the report: next += size x ival, wait := 0, last := size (if that time is past:
   kept, the grant is late, unless the flow had no backlog: then ``t``);
   ``cn`` (payload: a new interval): ival := new, and an armed flow's pending send time moves
   to ``max(next + d, t)`` with d = new - old (packet mode) or last x (new - old) (byte mode,
   not waiting): the new interval counts from the previous grant;
3. if the event (2) made the flow due at ``t`` and (1) did not grant, a GRANT now (capped and
   charged as in 1; at most one grant per event).

``wake`` = ``next[F:]`` while armed and not waiting.  ``expired``/``late`` are the grants and
their lateness (``t - next[F:]``, before the cap), so the engine's counters measure the pacing
error.  docs/pacer.md has the rules, the burst allowance, fairness and the measured figures.
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

    Registers: ``ival_init`` (the interval START/RESET load, UQ.F, at most 32 bits), ``burst``
    (cycles, ``PacerConfig.burst_width`` bits, reset the maximum = no cap), ``bytes_init`` (the
    START/RESET load of the per-flow ``bytes`` bit, reset 0 = packet mode).
    ``tx`` events carry ``{count, size}`` (``tx_bytes_width = count_width + size_width``:
    packets enqueued, and the bytes of the packet sent for the last grant, 0 = no report);
    ``cn`` events carry ``{ival}`` (a new interval).
    Latency 1 (the engine's modify stage); one event per clock.  Byte mode adds one
    ``size_width x (W + F)`` multiplier to the update (on its longest path).
    """

    name = "pacer"
    latency = 1

    def __init__(self, config: PacerConfig | None = None):
        self.config = cfg = PacerConfig() if config is None else config
        self.time_width = cfg.engine.time_width
        self.frac_bits = cfg.frac_bits
        # fields 0 ... 4 as before the byte mode (their ctl WRITE numbers are unchanged)
        self.state_layout = data.StructLayout({
            "grants": cfg.grant_width,
            "backlog": cfg.backlog_width,
            "armed": 1,
            "next": cfg.next_width,
            "ival": cfg.ival_width,
            "bytes": 1,
            "wait": 1,
            "last": cfg.size_width,
        })
        self.cn_layout = data.StructLayout({"ival": cfg.ival_width})
        self.tx_bytes_width = cfg.tx_width
        self.rate_field = "grants"
        self.regs = [("ival_init", cfg.init_reg_width, min(100 << cfg.frac_bits,
                                                          (1 << cfg.init_reg_width) - 1)),
                     ("burst", cfg.burst_width, cfg.burst_max),
                     ("bytes_init", 1, 0)]

    def init_state(self, regs) -> dict:
        return {"ival": regs.ival_init, "bytes": regs.bytes_init}

    def pre(self, m, *, kind, tx_bytes, cn, t, regs) -> dict:
        # t as a biased deadline: t + 1 - 2**-F (fraction all ones); t - burst, the earliest
        # deadline a grant keeps (registers do not change while an event is in flight)
        F, W = self.frac_bits, self.time_width
        return {"tb": Cat(Const((1 << F) - 1, F), t), "tmb": (t - regs.burst)[:W]}

    def build(self, m, *, state, kind, tx_bytes, cn, t, regs, pre, valid=None) -> DatapathOut:
        W, F = self.time_width, self.frac_bits
        cfg = self.config
        NW = cfg.next_width
        s = state
        tb, tmb = pre["tb"], pre["tmb"]
        bl_max = (1 << cfg.backlog_width) - 1

        def capped(nxt, name):
            # the burst cap: a grant's deadline is at least t - burst, its fraction (the
            # grid's sub-cycle phase) kept.  Only used for a due flow, whose lateness
            # t - nxt[F:] is in [0, 2**(W-1)), like burst: so the sign of nxt[F:] - (t - burst)
            # = burst - lateness is exact
            low = ~time_le(tmb, nxt[F:], W)
            return named_wire(m, name, Mux(low, Cat(nxt[:F], tmb), nxt), width=NW)

        # 1. the due timer, as of its deadline (a byte-mode flow waiting for the size of its
        # last packet has no deadline yet)
        due = named_wire(m, "pc_due", s.armed & ~s.wait & time_le(s.next[F:], t, W))
        has = s.backlog != 0
        g1 = named_wire(m, "pc_g1", due & has)
        bl1 = named_wire(m, "pc_bl1", s.backlog - g1, width=cfg.backlog_width)
        armed1 = named_wire(m, "pc_armed1", s.armed & ~(due & ~has))
        base1 = capped(s.next, "pc_base1")
        # packet mode: the next deadline now; byte mode: charged when the size is reported
        next1 = named_wire(m, "pc_next1",
                           Mux(g1, Mux(s.bytes, base1, (base1 + s.ival)[:NW]), s.next),
                           width=NW)
        wait1 = named_wire(m, "pc_wait1", s.wait | (g1 & s.bytes))

        # 2. the event
        is_tx = kind == EventKind.TX
        is_cn = kind == EventKind.CN
        n = tx_bytes[:cfg.count_width]
        size = tx_bytes[cfg.count_width:cfg.tx_width]
        total = bl1 + n
        bl2 = named_wire(m, "pc_bl2", Mux(is_tx, Mux(total > bl_max, bl_max, total), bl1),
                         width=cfg.backlog_width)
        future1 = ~time_le(next1[F:], t, W)
        # (a flow waiting for a size report keeps its pending charge: not re-armed)
        arm = named_wire(m, "pc_arm", is_tx & (bl1 == 0) & (n != 0) & ~wait1)
        # a size report for the last grant of a byte-mode flow (step 1 did not grant: the flow
        # was waiting)
        report = named_wire(m, "pc_report", is_tx & s.bytes & s.wait & (size != 0))
        # One multiplier: the report's charge size x ival, or a byte-mode CN's move of the
        # pending deadline, last x (new - old) (mod 2**NW: the difference may be negative).
        # Its operands are selected by the event's kind (a register), not by `report` (a
        # decode of the state): the product is used only by a report (a TX) or a CN.
        mul_a = named_wire(m, "pc_mul_a", Mux(is_tx, size, s.last), width=cfg.size_width)
        # (new - old is signed: the assignment to an NW-bit wire sign-extends it)
        diff = named_wire(m, "pc_diff", cn.ival - s.ival, width=NW)
        mul_b = named_wire(m, "pc_mul_b", Mux(is_tx, s.ival, diff), width=NW)
        prod = named_wire(m, "pc_prod", (mul_a * mul_b)[:NW], width=NW)
        # where the product is used (byte mode: a report, a CN) step 1 did not grant (the flow
        # waited, or its grant made it wait and the CN does not move it), so next1 = s.next:
        # the product is added to the stored deadline, not behind step 1's adder; both
        # candidates and their compares in parallel
        use_prod = s.bytes
        cand_b = named_wire(m, "pc_cand_b", (s.next + prod)[:NW], width=NW)
        cand_p = named_wire(m, "pc_cand_p", (next1 + diff)[:NW], width=NW)
        cand = named_wire(m, "pc_cand", Mux(use_prod, cand_b, cand_p), width=NW)
        cand_future = named_wire(m, "pc_cand_future",
                                 Mux(use_prod, ~time_le(cand_b[F:], t, W),
                                     ~time_le(cand_p[F:], t, W)))
        resched = named_wire(m, "pc_resched", is_cn & armed1 & ~wait1)
        # next2 is one of next1, cand, tb; its compares (due at t, below t - burst) are made
        # on each candidate in parallel and selected, not on next2 after its select (tb is due
        # and never capped: its lateness is 0)
        sel_cand = named_wire(m, "pc_sel_cand",
                              (report & (cand_future | (bl1 != 0))) | (resched & cand_future))
        sel_tb = named_wire(m, "pc_sel_tb",
                            (arm & ~(armed1 & future1)) | ((report | resched) & ~sel_cand))
        next2 = named_wire(m, "pc_next2", Mux(sel_tb, tb, Mux(sel_cand, cand, next1)), width=NW)
        armed2 = named_wire(m, "pc_armed2", armed1 | arm)
        wait2 = named_wire(m, "pc_wait2", wait1 & ~report)
        ival2 = named_wire(m, "pc_ival2", Mux(is_cn, cn.ival, s.ival), width=cfg.ival_width)

        # 3. a grant caused by the event itself (a late report keeps the grid: lateness, made
        # up under the burst cap, unless the flow had nothing waiting: then no credit, as
        # after idle)
        due2 = Mux(sel_tb, 1, Mux(sel_cand, ~cand_future, ~future1))
        g2 = named_wire(m, "pc_g2", ~g1 & armed2 & ~wait2 & (bl2 != 0) & due2)
        grant = named_wire(m, "pc_grant", g1 | g2)
        gmax = (1 << cfg.grant_width) - 1
        low2 = Mux(sel_tb, 0, Mux(sel_cand, ~time_le(tmb, cand[F:], W),
                                  ~time_le(tmb, next1[F:], W)))
        base2 = named_wire(m, "pc_base2", Mux(low2, Cat(next2[:F], tmb), next2), width=NW)

        nxt = Signal(self.state_layout, name="pc_state")
        m.d.comb += [
            nxt.grants.eq(Mux(grant, Mux(s.grants == gmax, 1, s.grants + 1), s.grants)),
            nxt.backlog.eq(bl2 - g2),
            nxt.armed.eq(armed2),
            nxt.next.eq(Mux(g2, Mux(s.bytes, base2, (base2 + ival2)[:NW]), next2)),
            nxt.ival.eq(ival2),
            nxt.bytes.eq(s.bytes),
            nxt.wait.eq(wait2 | (g2 & s.bytes)),
            nxt.last.eq(Mux(report, size, s.last)),
        ]
        late = Mux(g1, (t - s.next[F:])[:W], (t - next2[F:])[:W])
        return DatapathOut(next_state=nxt, wake_valid=nxt.armed & ~nxt.wait, wake=nxt.next[F:],
                           expired=grant, late=late)


def pacer_engine(config: PacerConfig | None = None):
    """The pacer top: :class:`~hw.nic.flow_engine.FlowEngine` around a :class:`PacerDatapath`."""
    from .flow_engine import FlowEngine
    cfg = PacerConfig() if config is None else config
    return FlowEngine(cfg.engine, PacerDatapath(cfg))
