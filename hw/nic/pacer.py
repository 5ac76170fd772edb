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
from ..lib.csa import compress, fit
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
        # deadline a grant keeps (registers do not change while an event is in flight); and
        # the constant operands of the update's three-operand compares (see _update): tb + 2
        # (tb - x - y = tb + 2 + ~x + ~y) and -(t - burst) in the integer part, and whether
        # t - burst is after t (a cap to it is not due)
        F, W = self.frac_bits, self.time_width
        NW = self.config.next_width
        tmb = (t - regs.burst)[:W]
        tb = Cat(Const((1 << F) - 1, F), t)
        out = {"tb": tb, "tmb": tmb, "tb2": (tb + 2)[:NW], "tmb_future": ~time_le(tmb, t, W)}
        if self.config.byte_mode:
            out["ntmb"] = Cat(Const(0, F), (-tmb)[:W])
        return out

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
        packet-only build).

        Written for a short loop: every sum the update may need is made from the stored state
        and the event in parallel (``next + ival``, ``next + new``, ``next + diff`` and the same
        with the burst cap's deadline ``{next[:F], t - burst}``), and every compare with ``t``
        or ``t - burst`` of a sum is a three-operand sum (``tb - x - y``, ``x + y - (t -
        burst)``) reduced by 3:2 compressors (a LUT level or two) to ONE carry chain, not the
        sum's chain followed by the compare's; the rules below then only select (a mux tree
        on one-bit flags).  Exactly the results of the serial form (the rules as stated in
        the module docstring): a select stands for each serial step's value."""
        W, F = self.time_width, self.frac_bits
        cfg = self.config
        NW = cfg.next_width
        s = state
        B = cfg.byte_mode
        # a packet-only build (byte_mode off) has no byte-mode fields: they read as constant 0
        # here, and the multiplier and its candidate are not built at all (below)
        s_bytes = s.bytes if B else Const(0, 1)
        s_wait = s.wait if B else Const(0, 1)
        tb, tmb, tb2 = pre["tb"], pre["tmb"], pre["tb2"]
        bl_max = (1 << cfg.backlog_width) - 1

        def wire(name, expr):
            # (a plain value, not a named wire: Yosys merges the many sums' nets and would
            # leave such names unused in the Verilog; ``name`` documents the value only)
            return Value.cast(expr)[:NW]

        def add3(name, *rows):
            # a sum of three or four rows: 3:2 compressor levels (one LUT level each), then
            # one carry chain
            r0, r1 = compress(list(rows), NW)
            return wire(name, r0 + r1)

        def vs_t(name, x, y):
            # tb - x - y = tb + 2 + ~x + ~y (mod 2**NW): tb's fraction is all ones, so no
            # borrow leaves the fraction and its integer part is t - (x + y)[F:] (mod 2**W)
            # exactly: its top bit is "x + y is after t", the integer part the lateness
            return add3(name, tb2, ~fit(x, NW), ~fit(y, NW))

        def below_cap(name, x, y):
            # (x + y)[F:] before t - burst: the sign of (x + y)[F:] - (t - burst), the top bit
            # of x + y + {0, -(t - burst)} (the subtrahend's fraction is 0: exact)
            return named_wire(m, name, add3(name + "_s", x, y, pre["ntmb"])[NW - 1])

        N = s.next
        ival = fit(s.ival, NW)
        new = fit(cn.ival, NW)
        # the burst cap's deadline: the grid's sub-cycle phase kept, the integer part t - burst
        T = wire("pc_capn", Cat(N[:F], tmb))

        # 1. the due timer, as of its deadline (a byte-mode flow waiting for the size of its
        # last packet has no deadline yet)
        due_t = named_wire(m, "pc_due_t", time_le(N[F:], t, W))
        due = named_wire(m, "pc_due", s.armed & ~s_wait & due_t)
        has = s.backlog != 0
        g1 = named_wire(m, "pc_g1", due & has)
        # the backlog: its sums with the event's count for both outcomes of step 1 (no grant,
        # a grant: one less) in parallel with the due compare, then selected by g1 (a grant in
        # step 1 implies backlog >= 1; a grant in step 3 or 4 implies none in step 1)
        BW = cfg.backlog_width
        bl_dec = _trunc(s.backlog - 1, width=BW)
        bl1_nz = named_wire(m, "pc_bl1_nz", Mux(g1, s.backlog != 1, has))
        armed1 = named_wire(m, "pc_armed1", s.armed & ~(due & ~has))
        # the burst cap (a grant's deadline is at least t - burst, its fraction kept); only
        # used for a due flow, whose lateness t - next[F:] is in [0, 2**(W-1)), like burst: so
        # the sign of next[F:] - (t - burst) = burst - lateness is exact
        low1 = named_wire(m, "pc_low1", ~time_le(tmb, N[F:], W))
        base1 = wire("pc_base1", Mux(low1, T, N))
        # the four sums of a deadline and an interval, in parallel (NC, TC: a grant then a CN,
        # base1 + ival + (new - ival) = base1 + new)
        NI, TI = wire("pc_ni", N + ival), wire("pc_ti", T + ival)
        NC, TC = wire("pc_nc", N + new), wire("pc_tc", T + new)
        # packet mode: the next deadline now; byte mode: charged when the size is reported
        next1 = wire("pc_next1", Mux(g1, Mux(s_bytes, base1, Mux(low1, TI, NI)), N))
        wait1 = named_wire(m, "pc_wait1", s_wait | (g1 & s_bytes))
        # next1 after t: each alternative's compare, selected (T's integer part is t - burst)
        f_ni = vs_t("pc_t_ni", N, ival)[NW - 1]
        f_ti = vs_t("pc_t_ti", T, ival)[NW - 1]
        future1 = named_wire(m, "pc_future1",
                             Mux(g1, Mux(s_bytes, Mux(low1, pre["tmb_future"], ~due_t),
                                         Mux(low1, f_ti, f_ni)),
                                 ~due_t))

        # 2. the event
        is_tx = kind == EventKind.TX
        is_cn = kind == EventKind.CN
        n = tx_bytes[:cfg.count_width]
        # (tot1, backlog + n - 1, is used where backlog >= 1, or where backlog + n >= 1 below)
        TW = max(BW, cfg.count_width) + 1
        tot0 = named_wire(m, "pc_tot0", s.backlog + n, width=TW)
        # (backlog + n + all ones: one LUT level of 3:2 compressors and one chain, not two;
        # the saturation compare "> bl_max" is a test of the bits above the backlog's)
        t1r = compress([fit(s.backlog, TW), fit(n, TW), Const((1 << TW) - 1, TW)], TW)
        tot1 = _trunc(t1r[0] + t1r[1], width=TW)
        over0, over1 = tot0[BW:].any(), tot1[BW:].any()
        bl2_0 = _trunc(Mux(is_tx, Mux(over0, bl_max, tot0), s.backlog),
                           width=BW)
        bl2_1 = _trunc(Mux(is_tx, Mux(over1, bl_max, tot1), bl_dec),
                           width=BW)
        bl2_nz = named_wire(m, "pc_bl2_nz", Mux(g1, Mux(is_tx, tot1 != 0, s.backlog != 1),
                                                Mux(is_tx, tot0 != 0, has)))
        # bl2 - 1 without a grant in step 1 (bl2 >= 1 where used: a grant in step 3 or 4)
        bl2_0d = _trunc(Mux(is_tx, Mux(over0, bl_max - 1, tot1), bl_dec), width=BW)
        # (a flow waiting for a size report keeps its pending charge: not re-armed; a flow
        # with a backlog but not armed, which only a register write makes, is armed like an
        # idle one: ~armed1 is early, the OR is off the bl1 carry path)
        arm = named_wire(m, "pc_arm", is_tx & (~bl1_nz | ~armed1) & (n != 0) & ~wait1)
        # (new - old is signed: the assignment to an NW-bit wire sign-extends it)
        # the CN's candidate next1 + diff: without a grant next + diff, after a packet-mode
        # grant base1 + new
        # (diff = new - ival mod 2**NW is never made on its own, its carry chain would come
        # before the sum's: next + diff = next + new + ~ival + 1 and tb - next - diff = tb + 2 +
        # ~next + ~new + ival, four rows each)
        NOT_I = ~ival
        ND = add3("pc_nd", N, new, NOT_I, Const(1, NW))
        t_nd = add3("pc_t_nd", tb2, ~N, ~new, ival)
        cand_p = wire("pc_cand_p", Mux(g1, Mux(low1, TC, NC), ND))
        future_p = Mux(g1, Mux(low1, vs_t("pc_t_tc", T, new)[NW - 1],
                               vs_t("pc_t_nc", N, new)[NW - 1]),
                       t_nd[NW - 1])
        # (where step 3 grants the candidate (it is due: step 1 did not grant, next1 = next)
        # it is a byte-mode report's: a due CN candidate is replaced by tb; so the cap
        # compare of the candidate exists in a byte-mode build only, and the lateness here is
        # that of the event's change only where the flow is not granted)
        low_c = Const(0, 1)
        late_c = t_nd[F:]
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
            cand_b = wire("pc_cand_b", N + prod)
            t_nb = vs_t("pc_t_nb", N, prod)
            cand = wire("pc_cand", Mux(s.bytes, cand_b, cand_p))
            cand_future = named_wire(m, "pc_cand_future",
                                     Mux(s.bytes, t_nb[NW - 1], future_p))
            low_c = below_cap("pc_low_nb", N, prod)
            late_c = Mux(s.bytes, t_nb[F:], late_c)
        else:
            report = Const(0, 1)
            cand, cand_future = cand_p, future_p
        resched = named_wire(m, "pc_resched", is_cn & armed1 & ~wait1)
        # next2 is one of next1, cand, tb; its compares (due at t, below t - burst) are made
        # on each candidate in parallel and selected, not on next2 after its select (tb is due
        # and never capped: its lateness is 0)
        sel_cand = named_wire(m, "pc_sel_cand",
                              (report & (cand_future | bl1_nz)) | (resched & cand_future))
        sel_tb = named_wire(m, "pc_sel_tb",
                            (arm & ~(armed1 & future1)) | ((report | resched) & ~sel_cand))
        next2 = wire("pc_next2", Mux(sel_tb, tb, Mux(sel_cand, cand, next1)))
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
        early = named_wire(m, "pc_early", pull & ~g1 & armed1 & ~wait1 & bl1_nz & future1)
        # (tb + ival in parallel with the rest: tb is a register, ival the stored one)
        next_e = wire("pc_next_e", Mux(s_bytes, tb, tb + ival))

        # 3. a grant caused by the event itself (a late report keeps the grid: lateness, made
        # up under the burst cap, unless the flow had nothing waiting: then no credit, as
        # after idle)
        due2 = Mux(sel_tb, 1, Mux(sel_cand, ~cand_future, ~future1))
        g2 = named_wire(m, "pc_g2", ~g1 & armed2 & ~wait2 & bl2_nz & due2)
        g23 = named_wire(m, "pc_g23", g2 | early)
        grant = named_wire(m, "pc_grant", g1 | g23)
        gmax = (1 << cfg.grant_width) - 1
        # g2 implies no grant in 1, so next1 = next; and no candidate in packet mode (a
        # candidate is selected only if it is not due, or for a byte-mode report): base2 +
        # ival2 is tb + ival2 or next1's capped base plus ival2, one of the four sums above
        low2 = Mux(sel_tb, 0, Mux(sel_cand, low_c, low1))
        base2 = wire("pc_base2", Mux(low2, Cat(next2[:F], tmb), next2))
        tb_i = wire("pc_tb_i", tb + ival2)
        charged2 = wire("pc_charged2",
                        Mux(sel_tb, tb_i, Mux(is_cn, Mux(low1, TC, NC), Mux(low1, TI, NI))))

        nxt = Signal(self.state_layout, name="pc_state")
        m.d.comb += [
            nxt.grants.eq(Mux(grant, Mux(s.grants == gmax, 1, s.grants + 1), s.grants)),
            nxt.backlog.eq(Mux(g1, bl2_1, Mux(g23, bl2_0d, bl2_0))),
            nxt.armed.eq(armed2),
            nxt.next.eq(Mux(early, next_e, Mux(g2, Mux(s_bytes, base2, charged2), next2))),
            nxt.ival.eq(ival2),
        ]
        if B:
            m.d.comb += [
                nxt.bytes.eq(s.bytes),
                nxt.wait.eq(wait2 | (g23 & s.bytes)),
                nxt.last.eq(Mux(report, size, s.last)),
            ]
        nxt_wait = wait2 | (g23 & s_bytes)
        # (an early grant is 0 late: it is not behind its schedule; t - next2[F:] selected
        # like next2: 0 for tb, the candidate's from its compare, else t - next[F:])
        late_n = (t - N[F:])[:W]
        late = Mux(g1, late_n, Mux(early | sel_tb, 0, Mux(sel_cand, late_c, late_n)))
        return DatapathOut(next_state=nxt, wake_valid=nxt.armed & ~nxt_wait, wake=nxt.next[F:],
                           expired=grant, late=late)


def _trunc(expr, width: int) -> Value:
    """``expr`` truncated to ``width`` bits (a plain value: see ``_update``'s ``wire``)."""
    return Value.cast(expr)[:width]


def pacer_engine(config: PacerConfig | None = None):
    """The pacer top: :class:`~hw.nic.flow_engine.FlowEngine` around a :class:`PacerDatapath`,
    with the register map's identification header and per-flow windows
    (:meth:`PacerConfig.register_map`, :class:`hw.nic.engine_regs.EngineRegs`)."""
    from .engine_regs import EngineRegs
    from .flow_engine import FlowEngine
    cfg = PacerConfig() if config is None else config
    return EngineRegs(FlowEngine(cfg.engine, PacerDatapath(cfg)), cfg.register_map())
