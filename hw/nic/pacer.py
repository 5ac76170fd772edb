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

and in a byte-mode build only (``PacerConfig.byte_mode``):

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
2. event: ``tx`` {count n, size}: backlog += n; if the backlog was 0 or the flow is not armed
   (and n > 0) and the flow is not waiting, it is armed at ``max(next, t)`` (an unarmed flow:
   at ``t``; "not armed with a backlog" is only reachable by a register write, docs/pacer.md
   "Registers and ports": the enqueue arms it as if it were idle); a ``size`` (!= 0) while a
   byte-mode flow waits is the report: next += size x ival, wait := 0, last := size (if that
   time is past: kept, the grant is late, unless the flow had no backlog: then ``t``);
   ``cn`` (payload: a new interval): ival := new, and an armed flow's pending send time moves
   to ``max(next + d, t)`` with d = new - old (packet mode) or last x (new - old) (byte mode,
   not waiting): the new interval counts from the previous grant;
3. if the event (2) made the flow due at ``t`` and (1) did not grant, a GRANT now (capped and
   charged as in 1; at most one grant per event);
4. work-conserving: a PULL (an empty ``tx``: no packets, no size) with register ``wc`` set, of
   a flow that is armed, not waiting, backlogged and not due: a GRANT now that restarts the
   flow's grid at ``t`` (packet mode next := t + ival, biased; byte mode next := t, wait := 1);
   its lateness is 0.

``wake`` = ``next[F:]`` while armed and not waiting.  ``expired``/``late`` are the grants and
their lateness (``t - next[F:]``, before the cap), so the engine's counters measure the pacing
error.  docs/pacer.md has the rules, the burst allowance, fairness and the measured figures.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Mux, Signal, Value
from amaranth.lib import data

from ..lib.arith import named_wire
from .flow_datapath import DatapathOut, EventKind, FlowDatapath, time_le
from .pacer_config import PacerConfig

__all__ = ["PacerDatapath", "pacer_engine"]


class PacerDatapath(FlowDatapath):
    """The pacer's per-flow update.

    Parameters: ``config``, a :class:`PacerConfig` (``byte_mode`` chooses the build).
    Registers: ``ival_init`` (the interval START/RESET load, UQ.F, at most 32 bits), ``burst``
    (cycles, ``PacerConfig.burst_width`` bits, reset the maximum = no cap), ``wc`` (1:
    work-conserving, an empty ``tx`` event pulls a grant; reset 0) and, in a byte-mode
    build only, ``bytes_init`` (the START/RESET load of the per-flow ``bytes`` bit, reset 0 =
    packet mode).
    ``tx`` events carry ``{count, size}`` (``tx_bytes_width = count_width + size_width``:
    packets enqueued, and the bytes of the packet sent for the last grant, 0 = no report;
    ``{count}`` alone in a packet-only build); ``cn`` events carry ``{ival}`` (a new interval).
    Latency: packet-only build 1 (the engine's one-cycle modify stage: one event per clock,
    same-flow events back to back); byte-mode build 2 (the ``size_width x (W + F)``
    multiplier has the first modify cycle to itself: one event per clock across flows, the
    engine keeps two events of ONE flow at least 2 cycles apart).
    """

    name = "pacer"
    latency = 1

    def __init__(self, config: PacerConfig | None = None):
        self.config = cfg = PacerConfig() if config is None else config
        # byte mode: a modify cycle of its own for the multiplier (see build)
        self.latency = 2 if cfg.byte_mode else 1
        self.time_width = cfg.engine.time_width
        self.frac_bits = cfg.frac_bits
        # fields 0 ... 4 as before the byte mode (their ctl WRITE numbers are unchanged)
        fields = {
            "grants": cfg.grant_width,
            "backlog": cfg.backlog_width,
            "armed": 1,
            "next": cfg.next_width,
            "ival": cfg.ival_width,
        }
        if cfg.byte_mode:
            # fields 5 ... 7 and register 3 exist in byte-mode builds only (their numbers are
            # after the packet-mode ones: a packet build's numbering is a prefix of a byte
            # build's)
            fields.update({"bytes": 1, "wait": 1, "last": cfg.size_width})
        self.state_layout = data.StructLayout(fields)
        self.cn_layout = data.StructLayout({"ival": cfg.ival_width})
        self.tx_bytes_width = cfg.tx_width
        self.rate_field = "grants"
        # the register window (hw.nic.engine_regs): a WRITE of grants would be streamed on rate
        # as a grant (a phantom packet), of wait would park a byte-mode flow until a report
        # that never comes: both read-only there (the engine's ctl stream can still write them)
        self.window_readonly = ("grants", "wait")
        self.regs = [("ival_init", cfg.init_reg_width, min(100 << cfg.frac_bits,
                                                          (1 << cfg.init_reg_width) - 1)),
                     ("burst", cfg.burst_width, cfg.burst_max),
                     ("wc", 1, 0)]
        if cfg.byte_mode:
            self.regs.append(("bytes_init", 1, 0))

    def init_state(self, regs) -> dict:
        if self.config.byte_mode:
            return {"ival": regs.ival_init, "bytes": regs.bytes_init}
        return {"ival": regs.ival_init}

    def pre(self, m, *, kind, tx_bytes, cn, t, regs) -> dict:
        # t as a biased deadline: t + 1 - 2**-F (fraction all ones); t - burst, the earliest
        # deadline a grant keeps (registers do not change while an event is in flight)
        F, W = self.frac_bits, self.time_width
        return {"tb": Cat(Const((1 << F) - 1, F), t), "tmb": (t - regs.burst)[:W]}

    def build(self, m, *, state, kind, tx_bytes, cn, t, regs, pre, valid=None) -> DatapathOut:
        cfg = self.config
        if not cfg.byte_mode:
            return self._update(m, state, kind, tx_bytes, cn, t, regs, pre, None)
        # Byte mode, latency 2: the first cycle only multiplies, the second is the packet-mode
        # update plus an adder.  The product is the report's charge size x ival or a byte-mode
        # CN's move of the pending deadline last x (new - old) (mod 2**NW: the difference may
        # be negative); it depends on the event and on the flow's stored ival / last, which
        # the engine's RAM delivers in the first modify cycle at the earliest, so it cannot be
        # computed before the modify stage: it gets a modify cycle of its own instead, and the
        # engine keeps two events of one flow at least two cycles apart (exact, no forwarding
        # of a half-done update is needed).  Its operands are selected by the event's kind (a
        # register), not by a decode of the state: only a report (a TX) or a CN uses it.
        NW = cfg.next_width
        size = tx_bytes[cfg.count_width:cfg.tx_width]
        is_tx = kind == EventKind.TX
        mul_a = named_wire(m, "pc_mul_a", Mux(is_tx, size, state.last), width=cfg.size_width)
        # (new - old is signed: the assignment to an NW-bit wire sign-extends it)
        diff = named_wire(m, "pc_mdiff", cn.ival - state.ival, width=NW)
        mul_b = named_wire(m, "pc_mul_b", Mux(is_tx, state.ival, diff), width=NW)
        prod = Signal(NW, name="pc_prod")
        m.d.sync += prod.eq((mul_a * mul_b)[:NW])

        def reg(value, shape, name):
            r = Signal(shape, name=name)
            m.d.sync += r.eq(value)
            return r
        pre2 = {name: reg(v, Value.cast(v).shape(), f"pc_pre_{name}") for name, v in pre.items()}
        return self._update(m, reg(state, self.state_layout, "pc_s2"),
                            reg(kind, EventKind, "pc_kind2"),
                            reg(tx_bytes, len(Value.cast(tx_bytes)), "pc_tx2"),
                            reg(cn, self.cn_layout, "pc_cn2"),
                            reg(t, len(Value.cast(t)), "pc_t2"), regs, pre2, prod)

    def _update(self, m, state, kind, tx_bytes, cn, t, regs, pre, prod) -> DatapathOut:
        """The update (one cycle); ``prod`` the byte mode's registered product (None in a
        packet-only build)."""
        W, F = self.time_width, self.frac_bits
        cfg = self.config
        NW = cfg.next_width
        s = state
        B = cfg.byte_mode
        # a packet-only build (byte_mode off) has no byte-mode fields: they read as constant 0
        # here, and the multiplier and its candidate are not built at all (below)
        s_bytes = s.bytes if B else Const(0, 1)
        s_wait = s.wait if B else Const(0, 1)
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
        due = named_wire(m, "pc_due", s.armed & ~s_wait & time_le(s.next[F:], t, W))
        has = s.backlog != 0
        g1 = named_wire(m, "pc_g1", due & has)
        bl1 = named_wire(m, "pc_bl1", s.backlog - g1, width=cfg.backlog_width)
        armed1 = named_wire(m, "pc_armed1", s.armed & ~(due & ~has))
        base1 = capped(s.next, "pc_base1")
        # packet mode: the next deadline now; byte mode: charged when the size is reported
        next1 = named_wire(m, "pc_next1",
                           Mux(g1, Mux(s_bytes, base1, (base1 + s.ival)[:NW]), s.next),
                           width=NW)
        wait1 = named_wire(m, "pc_wait1", s_wait | (g1 & s_bytes))

        # 2. the event
        is_tx = kind == EventKind.TX
        is_cn = kind == EventKind.CN
        n = tx_bytes[:cfg.count_width]
        total = bl1 + n
        bl2 = named_wire(m, "pc_bl2", Mux(is_tx, Mux(total > bl_max, bl_max, total), bl1),
                         width=cfg.backlog_width)
        future1 = ~time_le(next1[F:], t, W)
        # (a flow waiting for a size report keeps its pending charge: not re-armed; a flow
        # with a backlog but not armed, which only a register write makes, is armed like an
        # idle one: ~armed1 is early, the OR is off the bl1 carry path)
        arm = named_wire(m, "pc_arm", is_tx & ((bl1 == 0) | ~armed1) & (n != 0) & ~wait1)
        # (new - old is signed: the assignment to an NW-bit wire sign-extends it)
        diff = named_wire(m, "pc_diff", cn.ival - s.ival, width=NW)
        cand_p = named_wire(m, "pc_cand_p", (next1 + diff)[:NW], width=NW)
        future_p = ~time_le(cand_p[F:], t, W)
        if B:
            size = tx_bytes[cfg.count_width:cfg.tx_width]
            # a size report for the last grant of a byte-mode flow (step 1 did not grant: the
            # flow was waiting)
            report = named_wire(m, "pc_report", is_tx & s.bytes & s.wait & (size != 0))
            # where the product (computed in the first modify cycle) is used (byte mode: a
            # report, a CN) step 1 did not grant (the flow waited, or its grant made it wait
            # and the CN does not move it), so next1 = s.next: the product is added to the
            # stored deadline, not behind step 1's adder; both candidates and their compares
            # in parallel
            cand_b = named_wire(m, "pc_cand_b", (s.next + prod)[:NW], width=NW)
            cand = named_wire(m, "pc_cand", Mux(s.bytes, cand_b, cand_p), width=NW)
            cand_future = named_wire(m, "pc_cand_future",
                                     Mux(s.bytes, ~time_le(cand_b[F:], t, W), future_p))
        else:
            report = Const(0, 1)
            cand, cand_future = cand_p, future_p
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

        # 4 (below). work-conserving: a PULL (an empty tx event: no packets, no size report)
        # with register wc = 1 grants a flow that is armed, not waiting, backlogged and NOT due
        # (a due flow is granted by 1 or 3 anyway: at most one grant per event).  The early
        # grant restarts the flow's grid at t, as if it had been armed at t: packet mode
        # next := t + ival, byte mode next := t and wait (the report adds size x ival): the
        # flow keeps no credit (no past deadline, so no burst later) and owes nothing.
        # next2 = next1 here (a pull neither arms, nor reports, nor is a CN).
        size_nz = (tx_bytes[cfg.count_width:cfg.tx_width] != 0) if B else Const(0, 1)
        pull = named_wire(m, "pc_pull", is_tx & (n == 0) & ~size_nz & regs.wc)
        early = named_wire(m, "pc_early", pull & ~g1 & armed1 & ~wait1 & (bl1 != 0) & future1)
        # (tb + ival in parallel with the rest: tb is a register, ival the stored one)
        next_e = named_wire(m, "pc_next_e", Mux(s_bytes, tb, (tb + s.ival)[:NW]), width=NW)

        # 3. a grant caused by the event itself (a late report keeps the grid: lateness, made
        # up under the burst cap, unless the flow had nothing waiting: then no credit, as
        # after idle)
        due2 = Mux(sel_tb, 1, Mux(sel_cand, ~cand_future, ~future1))
        g2 = named_wire(m, "pc_g2", ~g1 & armed2 & ~wait2 & (bl2 != 0) & due2)
        g23 = named_wire(m, "pc_g23", g2 | early)
        grant = named_wire(m, "pc_grant", g1 | g23)
        gmax = (1 << cfg.grant_width) - 1
        low2 = Mux(sel_tb, 0, Mux(sel_cand, ~time_le(tmb, cand[F:], W),
                                  ~time_le(tmb, next1[F:], W)))
        base2 = named_wire(m, "pc_base2", Mux(low2, Cat(next2[:F], tmb), next2), width=NW)

        nxt = Signal(self.state_layout, name="pc_state")
        m.d.comb += [
            nxt.grants.eq(Mux(grant, Mux(s.grants == gmax, 1, s.grants + 1), s.grants)),
            nxt.backlog.eq(bl2 - g23),
            nxt.armed.eq(armed2),
            nxt.next.eq(Mux(early, next_e,
                            Mux(g2, Mux(s_bytes, base2, (base2 + ival2)[:NW]), next2))),
            nxt.ival.eq(ival2),
        ]
        if B:
            m.d.comb += [
                nxt.bytes.eq(s.bytes),
                nxt.wait.eq(wait2 | (g23 & s.bytes)),
                nxt.last.eq(Mux(report, size, s.last)),
            ]
        nxt_wait = wait2 | (g23 & s_bytes)
        # (an early grant is 0 late: it is not behind its schedule)
        late = Mux(g1, (t - s.next[F:])[:W], Mux(early, 0, (t - next2[F:])[:W]))
        return DatapathOut(next_state=nxt, wake_valid=nxt.armed & ~nxt_wait, wake=nxt.next[F:],
                           expired=grant, late=late)


def pacer_engine(config: PacerConfig | None = None):
    """The pacer top: :class:`~hw.nic.flow_engine.FlowEngine` around a :class:`PacerDatapath`,
    with the register map's identification header and per-flow windows
    (:meth:`PacerConfig.register_map`, :class:`hw.nic.engine_regs.EngineRegs`)."""
    from .engine_regs import EngineRegs
    from .flow_engine import FlowEngine
    cfg = PacerConfig() if config is None else config
    return EngineRegs(FlowEngine(cfg.engine, PacerDatapath(cfg)), cfg.register_map())
