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
   (and n > 0) and the flow is not waiting (after this event's report, below: a flow that
   waits without being armed, which only a WRITE makes, is armed by a report that brings
   packets), it is armed at ``max(next, t)`` (an unarmed flow:
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

#: byte mode: the levels of 3:2 compressors in the product's first cycle (29 rows of a 14-bit
#: size -> 10 registered rows; the second cycle's five levels to two rows the rest, added in
#: the update's own sums).  Measured (docs/pacer.md): 4 levels left the first cycle critical,
#: 2 the second
_MUL_LEVELS = 3


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
    Latency: ``PacerConfig.latency``: a packet-only build's ``update_cycles``, 1 by default
    (the engine's one-cycle modify stage: one event per clock, same-flow events back to back),
    2 (the sums and compares in the first cycle, registered, the flags and selects in the
    second) or 3 (the sums and compares, the flags, the selects: a cycle each); in a byte-mode
    build ``update_cycles`` + 2 (the ``size_width x (W + F)`` product, carry-save rows, has
    the first two modify cycles to itself, the update the rest).  At latency L > 1:
    one event per clock across flows, the engine keeps two events of ONE flow at least L
    cycles apart (its write-back forwarding then delivers the first's result to the second;
    no half-done update is ever forwarded) and a grant's next deadline can pop ``reeval(L)``
    = L + 8 cycles after it at the earliest (``PacerConfig.min_interval``: 10 at L = 2, 11 at
    L = 3 ... 13 at L = 5).
    """

    name = "pacer"
    latency = 1

    def __init__(self, config: PacerConfig | None = None):
        self.config = cfg = PacerConfig() if config is None else config
        # byte mode: two modify cycles of their own for the product (see build); update_cycles
        # 2 / 3: the sums and compares, (then the flags,) then the selects (see _update)
        self.latency = cfg.latency
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
        # (tb - x - y = tb + 2 + ~x + ~y), tb + 2 + ~new (a CN's new interval is the event's:
        # tb - x - new = tb2n + ~x, one row fewer in the update) and -(t - burst) in the
        # integer part, and whether t - burst is after t (a cap to it is not due)
        F, W = self.frac_bits, self.time_width
        NW = self.config.next_width
        tmb = (t - regs.burst)[:W]
        tb = Cat(Const((1 << F) - 1, F), t)
        tb2 = (tb + 2)[:NW]
        out = {"tb": tb, "tmb": tmb, "tb2": tb2, "tb2n": (tb2 + ~fit(cn.ival, NW))[:NW]}
        if self.config.byte_mode:
            # (a packet-only build's cap compares are of sums, never of t - burst itself)
            out["tmb_future"] = ~time_le(tmb, t, W)
            out["ntmb"] = Cat(Const(0, F), (-tmb)[:W])
            # the product's operand select, a register of its own (not a decode of the
            # event's kind in front of its fanout to every row: that route led the product's
            # first cycle); read by build only.  (``kind`` here is the engine's source code,
            # whose TX is EventKind.TX)
            out["is_tx"] = Value.cast(kind) == EventKind.TX.value
        return out

    def build(self, m, *, state, kind, tx_bytes, cn, t, regs, pre, valid=None) -> DatapathOut:
        cfg = self.config
        if not cfg.byte_mode:
            return self._update(m, state, kind, tx_bytes, cn, t, regs, pre, None)
        # Byte mode, latency update_cycles + 2: the first two cycles only multiply, then the
        # packet-mode update plus an adder (one cycle, or two split as the packet one's).  The
        # product is the report's charge size x ival or
        # a byte-mode CN's move of the pending deadline last x (new - old) (mod 2**NW: the
        # difference may be negative); it depends on the event and on the flow's stored ival /
        # last, which the engine's RAM delivers in the first modify cycle at the earliest, so
        # it cannot be computed before the modify stage: it gets two modify cycles of its own
        # instead, and the engine keeps two events of one flow at least L cycles apart
        # (exact, no forwarding of a half-done update is needed).  Its operands are selected
        # by the event's kind (``pre``'s ``is_tx``, a register made a stage earlier), not by a
        # decode of the state: only a report (a TX) or a CN uses it.
        # No carry chain before the product: it is made as carry-save rows (hw.lib.csa), the
        # difference too: last x (new - old) = last x new + last x ~old + last (mod 2**NW,
        # -old = ~old + 1), so a CN's rows are last's bits selecting new and ~old, plus last;
        # a report's are size's bits selecting ival (the ~old rows and last then 0).  The
        # first cycle makes the rows and reduces them by ``_MUL_LEVELS`` levels of 3:2
        # compressors (registered, ``pc_mrow*``), the second reduces the rest to two rows
        # (registered, ``pc_prod0``/``pc_prod1``), still carry-save: no carry chain of the
        # product's own, the update adds the two rows where it used the product (each of its
        # sums with the product had a carry chain anyway; a row more costs a compressor level
        # in front of it, not a 42-bit chain in the product's cycle).
        NW = cfg.next_width
        size = tx_bytes[cfg.count_width:cfg.tx_width]
        is_tx = pre["is_tx"]
        mul_a = named_wire(m, "pc_mul_a", Mux(is_tx, size, state.last), width=cfg.size_width)
        mul_b = named_wire(m, "pc_mul_b", Mux(is_tx, fit(state.ival, NW), fit(cn.ival, NW)),
                           width=NW)
        neg_old = Mux(is_tx, 0, ~fit(state.ival, NW))
        rows = [Mux(mul_a[i], mul_b << i, 0) for i in range(cfg.size_width)]
        rows += [Mux(mul_a[i], neg_old << i, 0) for i in range(cfg.size_width)]
        rows.append(Mux(is_tx, 0, state.last))
        rows = compress(rows, NW, _MUL_LEVELS)
        regd = []
        for j, row in enumerate(rows):
            r = Signal(NW, name=f"pc_mrow{j}")
            m.d.sync += r.eq(row)
            regd.append(r)
        two = compress(regd, NW)
        # (two rows always: 2 x size_width + 1 rows, at least 3, reduced by _MUL_LEVELS)
        prod = (Signal(NW, name="pc_prod0"), Signal(NW, name="pc_prod1"))
        m.d.sync += [r.eq(v) for r, v in zip(prod, two, strict=True)]

        def reg(value, shape, name):
            r = Signal(shape, name=name)
            m.d.sync += r.eq(value)
            return r

        def reg2(value, shape, name):
            # two cycles: the product's
            return reg(reg(value, shape, name + "a"), shape, name)
        pre2 = {name: reg2(v, Value.cast(v).shape(), f"pc_pre_{name}") for name, v in pre.items()
                if name != "is_tx"}
        return self._update(m, reg2(state, self.state_layout, "pc_s2"),
                            reg2(kind, EventKind, "pc_kind2"),
                            reg2(tx_bytes, len(Value.cast(tx_bytes)), "pc_tx2"),
                            reg2(cn, self.cn_layout, "pc_cn2"),
                            reg2(t, len(Value.cast(t)), "pc_t2"), regs, pre2, prod)

    def _wire(self, name: str, expr) -> Value:
        """``expr`` mod ``2**next_width``: a plain value, not a named wire (Yosys merges the
        update's many sums' nets and would leave such names unused in the Verilog); ``name``
        documents the value only."""
        return Value.cast(expr)[:self.config.next_width]

    def _update(self, m, state, kind, tx_bytes, cn, t, regs, pre, prod) -> DatapathOut:
        """The update; ``prod`` the byte mode's registered product as two carry-save rows
        (their sum mod ``2**next_width``; None in a packet-only build).

        Written for a short loop, in two phases: phase 1 makes every sum the update may need
        from the stored state and the event in parallel (``next + ival``, ``next + new``,
        ``next + diff`` and the same with the burst cap's deadline ``{next[:F], t - burst}``),
        and every compare with ``t`` or ``t - burst`` of a sum as a three-operand sum (``tb - x
        - y``, ``x + y - (t - burst)``) reduced by 3:2 compressors (a LUT level or two) to ONE
        carry chain, not the sum's chain followed by the compare's; phase 2 then only selects
        (a mux tree on one-bit flags).  Exactly the results of the serial form (the rules as
        stated in the module docstring): a select stands for each serial step's value.

        With ``PacerConfig.update_cycles`` 2 phase 1's values are registered between the
        phases (``pc_r_*``): the update takes two cycles (latency 2, 4 in byte mode).
        Nothing of phase 2 reads an input or a register directly, so the stage boundary is
        exactly the dictionary ``a`` below.  With 3, phase 1 ends at the carry chains (its
        values registered, ``pc_q_*``), the flags and the selects that wait for few of them
        are phase 2 and the last selects phase 3 (:meth:`_packet_phases23`): no phase has
        more than one carry chain or more than about three LUT levels; a byte-mode build's
        phase 2 is the flags and :meth:`_byte_selects` (registered, ``pc_p_*``), its phase 3
        :meth:`_byte_finish` (latency 5)."""
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
        BW = cfg.backlog_width

        wire = self._wire

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

        # ---- phase 1: the sums and compares, from the stored state, the event and t --------
        a = {}
        N = s.next
        ival = fit(s.ival, NW)
        new = fit(cn.ival, NW)
        a.update(armed=s.armed, grants=s.grants, next=N, tb=tb)
        # the burst cap's deadline: the grid's sub-cycle phase kept, the integer part t - burst
        T = wire("pc_capn", Cat(N[:F], tmb))
        # the due compare (t - next[F:]: its sign, its value the lateness)
        late_n = _trunc(t - N[F:], width=W)
        a.update(due_t=~late_n[W - 1], late_n=late_n, has=s.backlog != 0,
                 bl_ne1=s.backlog != 1)
        # the burst cap (a grant's deadline is at least t - burst, its fraction kept); only
        # used for a due flow, whose lateness t - next[F:] is in [0, 2**(W-1)), like burst: so
        # the sign of next[F:] - (t - burst) = burst - lateness is exact
        a["low1"] = ~time_le(tmb, N[F:], W)
        # the four sums of a deadline and an interval, in parallel (NC, TC: a grant then a CN,
        # base1 + ival + (new - ival) = base1 + new), and the compares of NI, TI with t
        a.update(NI=wire("pc_ni", N + ival), TI=wire("pc_ti", T + ival),
                 NC=wire("pc_nc", N + new), TC=wire("pc_tc", T + new),
                 f_ni=vs_t("pc_t_ni", N, ival)[NW - 1], f_ti=vs_t("pc_t_ti", T, ival)[NW - 1])
        # the event
        is_tx = kind == EventKind.TX
        is_cn = kind == EventKind.CN
        n = tx_bytes[:cfg.count_width]
        a.update(is_tx=is_tx, is_cn=is_cn, n_nz=n != 0)
        # the backlog: its sums with the event's count for both outcomes of step 1 (no grant,
        # a grant: one less), selected in phase 2 by g1 (a grant in step 1 implies backlog
        # >= 1; a grant in step 3 or 4 implies none in step 1)
        bl_dec = _trunc(s.backlog - 1, width=BW)
        # (tot1, backlog + n - 1, is used where backlog >= 1, or where backlog + n >= 1 below)
        TW = max(BW, cfg.count_width) + 1
        tot0 = named_wire(m, "pc_tot0", s.backlog + n, width=TW)
        # (backlog + n + all ones: one LUT level of 3:2 compressors and one chain, not two;
        # the saturation compare "> bl_max" is a test of the bits above the backlog's)
        t1r = compress([fit(s.backlog, TW), fit(n, TW), Const((1 << TW) - 1, TW)], TW)
        tot1 = _trunc(t1r[0] + t1r[1], width=TW)
        over0, over1 = tot0[BW:].any(), tot1[BW:].any()
        a.update(
            bl2_0=_trunc(Mux(is_tx, Mux(over0, bl_max, tot0), s.backlog), width=BW),
            bl2_1=_trunc(Mux(is_tx, Mux(over1, bl_max, tot1), bl_dec), width=BW),
            # bl2 - 1 without a grant in step 1 (bl2 >= 1 where used: a grant in step 3 or 4)
            bl2_0d=_trunc(Mux(is_tx, Mux(over0, bl_max - 1, tot1), bl_dec), width=BW),
            # bl2 != 0 after a grant in step 1 (nz1) and without one (nz0)
            nz1=Mux(is_tx, tot1 != 0, s.backlog != 1),
            nz0=Mux(is_tx, tot0 != 0, s.backlog != 0))
        # the CN's candidate next1 + diff: without a grant next + diff, after a packet-mode
        # grant base1 + new
        # (diff = new - ival mod 2**NW is never made on its own, its carry chain would come
        # before the sum's: next + diff = next + new + ~ival + 1 and tb - next - diff = tb + 2 +
        # ~next + ~new + ival, four rows each)
        # (the + 1 is the carry row's free bit 0: one compressor level; tb + 2 + ~new is a
        # pre value: three rows, one level; tb - T - new and tb - N - new two rows)
        tb2n = pre["tb2n"]
        if cfg.update_cycles == 3:
            # (the same 3:2 rows, on kept wires: this chain is the three-cycle update's
            # critical path, and the mapper makes the sum row from the next ^ new it shares
            # with the NC / TC chains, two LUT levels; kept, it still takes two, but the
            # update measured better over three nextpnr seeds and 54 LUT4 smaller,
            # docs/pacer.md "The three-cycle update".  The carry row is made NW - 1 bits
            # wide, so that the kept wire is the whole of a cell's output: a slice of one
            # would be read around the wire and leave it unread in the Verilog)
            r0, r1, r2 = fit(N, NW), fit(new, NW), fit(~ival, NW)
            nd0 = _kept(m, "pc_nd0", r0 ^ r1 ^ r2)
            h0, h1, h2 = r0[:NW - 1], r1[:NW - 1], r2[:NW - 1]
            nd1 = Cat(Const(0, 1), _kept(m, "pc_nd1", (h0 & h1) | (h0 & h2) | (h1 & h2)))
        else:
            nd0, nd1 = compress([N, new, ~ival], NW)
        t_nd = add3("pc_t_nd", tb2n, ~N, ival)
        a.update(ND=wire("pc_nd", nd0 + (nd1 | 1)), f_nd=t_nd[NW - 1],
                 late_nd=t_nd[F:], f_tc=wire("pc_t_tc", tb2n + ~T)[NW - 1],
                 f_nc=wire("pc_t_nc", tb2n + ~N)[NW - 1])
        # 4's pull (work-conserving: an empty tx event, no packets, no size report, with
        # register wc = 1) and the early grant's deadline (packet mode tb + ival); the
        # interval after the event and tb + it (one of two sums: the event's kind is known)
        size = tx_bytes[cfg.count_width:cfg.tx_width] if B else Const(0, 1)
        tbi, tbn = wire("pc_tbi", tb + ival), wire("pc_tbn", tb + new)
        a.update(pull=is_tx & (n == 0) & (size == 0) & regs.wc, tbi=tbi,
                 tb_i=Mux(is_cn, tbn, tbi),
                 ival2=Mux(is_cn, cn.ival, s.ival),
                 ginc=Mux(s.grants == (1 << cfg.grant_width) - 1, 1, s.grants + 1))
        if B:
            # where the product (computed in the first modify cycle) is used (byte mode: a
            # report, a CN) step 1 did not grant (the flow waited, or its grant made it wait
            # and the CN does not move it), so next1 = s.next: the product is added to the
            # stored deadline, not behind step 1's adder; both candidates and their compares
            # in parallel
            # (the product is two carry-save rows p0 + p1: tb - N - p0 - p1 = tb2 + ~N + ~p0 +
            # ~p1 + 1, -x = ~x + 1 for each of the three: tb2 = tb + 2 holds two of the ones,
            # the third is the final carry row's free bit 0, as in the CN candidate's ND)
            p0, p1 = prod
            tn0, tn1 = compress([tb2, ~N, ~p0, ~p1], NW)
            t_nb = wire("pc_t_nb", tn0 + (tn1 | 1))
            a.update(bytes=s.bytes, wait=s.wait, last=s.last, size=size, T=T, tmb=tmb,
                     tmb_future=pre["tmb_future"], cand_b=add3("pc_cand_b", N, p0, p1),
                     f_nb=t_nb[NW - 1], late_nb=t_nb[F:],
                     low_nb=add3("pc_low_nb_s", N, p0, p1, pre["ntmb"])[NW - 1])
        # the one-bit flags of steps 1 and 2 that phase 1's compares decide on their own (a
        # LUT level or two after the carry chains).  In the two-cycle update they are still
        # phase 1's (the stage boundary comes after them, so the second cycle only combines a
        # few flags and selects); in the three-cycle update phase 1 ends at the chains (``R``
        # registers each value read here) and the flags begin phase 2
        three = cfg.update_cycles == 3
        R = _stage(m, a, "pc_q_") if three else a.__getitem__
        fl = {}
        s_bytes = R("bytes") if B else Const(0, 1)
        s_wait = R("wait") if B else Const(0, 1)
        # 1. the due timer, as of its deadline (a byte-mode flow waiting for the size of its
        # last packet has no deadline yet)
        due_t = R("due_t")
        armed = R("armed")
        due = armed & ~s_wait & due_t
        has = R("has")
        g1 = named_wire(m, "pc_g1", due & has)
        low1 = R("low1")
        # next1 after t: each alternative's compare, selected (T's integer part is t - burst)
        fut_g = Mux(low1, R("f_ti"), R("f_ni"))
        if B:
            fut_g = Mux(s_bytes, Mux(low1, R("tmb_future"), ~due_t), fut_g)
        # 2. the event: the CN candidate's compare (a byte-mode candidate's below)
        future_p = Mux(g1, Mux(low1, R("f_tc"), R("f_nc")), R("f_nd"))
        fl.update(g1=g1, bl1_nz=Mux(g1, R("bl_ne1"), has),
                  armed1=armed & ~(due & ~has),
                  wait1=s_wait | (g1 & s_bytes),
                  future1=Mux(g1, fut_g, ~due_t),
                  bl2_nz=Mux(g1, R("nz1"), R("nz0")))
        if B:
            # a size report for the last grant of a byte-mode flow (step 1 did not grant: the
            # flow was waiting)
            fl.update(report=R("is_tx") & s_bytes & s_wait & (R("size") != 0),
                      cand_future=Mux(s_bytes, R("f_nb"), future_p))
        else:
            fl.update(report=Const(0, 1), cand_future=future_p)
        # (a flow waiting for a size report keeps its pending charge: not re-armed; a flow
        # with a backlog but not armed, which only a register write makes, is armed like an
        # idle one)
        arm = R("is_tx") & (~fl["bl1_nz"] | ~fl["armed1"]) & R("n_nz") & ~fl["wait1"]
        if B:
            # a flow that waits without being armed (only a ctl WRITE makes that state): the
            # report clears wait first, then the enqueue arms the flow as an idle one, at t
            # (sel_tb: the report's own charge is not kept, as for any unarmed flow)
            arm = arm | (R("is_tx") & R("n_nz") & ~fl["armed1"] & fl["report"])
        fl.update(arm=arm, resched=R("is_cn") & fl["armed1"] & ~fl["wait1"])
        if not B:
            # packet-only: step 4's early grant (a pull makes no grant in step 1, so its
            # future1 is ~due_t: no long compare) and step 3's grant condition but sel_tb
            # (see _packet_selects)
            fl.update(early=R("pull") & ~g1 & fl["armed1"] & fl["bl1_nz"] & ~due_t,
                      g2_if_tb=~g1 & fl["bl2_nz"])
        if three and not B:
            return self._packet_phases23(m, R, fl)
        a.update(fl)

        # the stage boundary of the two-cycle update: each value phase 2 reads is registered on
        # its first read (``A``), so no register is left unread
        if three:
            # the byte mode's three-cycle update (phase 1 ended at the carry chains, as the
            # packet one's; ``fl`` are the flags made from its registers): phase 2 is the flags
            # and the selects that wait for few of them (:meth:`_byte_selects`), registered
            # (``pc_p_*``; phase 1's other values through a second register), phase 3 the rest
            # (:meth:`_byte_finish`)
            def src(name):
                return fl[name] if name in fl else R(name)
            p2 = self._byte_selects(m, src)
            return self._byte_finish(m, _stage(m, lambda n: p2[n] if n in p2 else src(n),
                                               "pc_p_"))
        A = _stage(m, a, "pc_r_") if cfg.update_cycles == 2 else a.__getitem__

        # ---- phase 2: the selects, on phase 1's values only (through A) ----------------------
        if not B:
            return self._packet_selects(m, A)
        p2 = self._byte_selects(m, A)
        return self._byte_finish(m, lambda n: p2[n] if n in p2 else A(n))

    def _byte_selects(self, m, A) -> dict:
        """The byte-mode build's selects, first part: the select flags of step 3 and 4 and the
        deadlines that wait for ``g1``, ``low1`` and ``bytes`` only (``A`` reads phase 1's
        values and flags).  :meth:`_byte_finish` completes them, in the same cycle (the two-
        and one-cycle updates) or in the next (the three-cycle update)."""
        wire = self._wire
        N = A("next")
        g1, low1, future1, armed1 = A("g1"), A("low1"), A("future1"), A("armed1")
        wait1, bl1_nz, cand_future = A("wait1"), A("bl1_nz"), A("cand_future")
        report, resched, arm, is_cn = A("report"), A("resched"), A("arm"), A("is_cn")
        s_bytes = A("bytes")
        NI, TI, NC, TC = A("NI"), A("TI"), A("NC"), A("TC")
        # packet mode: the next deadline now; byte mode: charged when the size is reported
        base1 = wire("pc_base1", Mux(low1, A("T"), N))
        next1 = wire("pc_next1", Mux(g1, Mux(s_bytes, base1, Mux(low1, TI, NI)), N))
        cand_p = wire("pc_cand_p", Mux(g1, Mux(low1, TC, NC), A("ND")))
        # (where step 3 grants the candidate (it is due: step 1 did not grant, next1 = next)
        # it is a byte-mode report's: a due CN candidate is replaced by tb; so the cap
        # compare of the candidate exists in a byte-mode build only, and the lateness here is
        # that of the event's change only where the flow is not granted)
        cand = wire("pc_cand", Mux(s_bytes, A("cand_b"), cand_p))
        # next2 is one of next1, cand, tb; its compares (due at t, below t - burst) are made
        # on each candidate in parallel and selected, not on next2 after its select (tb is due
        # and never capped: its lateness is 0)
        sel_cand = named_wire(m, "pc_sel_cand",
                              (report & (cand_future | bl1_nz)) | (resched & cand_future))
        sel_tb = named_wire(m, "pc_sel_tb",
                            (arm & ~(armed1 & future1)) | ((report | resched) & ~sel_cand))

        # 4 (below). work-conserving: a PULL (an empty tx event: no packets, no size report)
        # with register wc = 1 grants a flow that is armed, not waiting, backlogged and NOT due
        # (a due flow is granted by 1 or 3 anyway: at most one grant per event).  The early
        # grant restarts the flow's grid at t, as if it had been armed at t: packet mode
        # next := t + ival, byte mode next := t and wait (the report adds size x ival): the
        # flow keeps no credit (no past deadline, so no burst later) and owes nothing.
        # next2 = next1 here (a pull neither arms, nor reports, nor is a CN).
        early = named_wire(m, "pc_early", A("pull") & ~g1 & armed1 & ~wait1 & bl1_nz & future1)
        return {
            "next1": next1, "cand": cand, "sel_cand": sel_cand, "sel_tb": sel_tb,
            "early": early,
            "armed2": named_wire(m, "pc_armed2", armed1 | arm),
            "wait2": named_wire(m, "pc_wait2", wait1 & ~report),
            # (tb + ival in parallel with the rest: tb is a register, ival the stored one)
            "next_e": wire("pc_next_e", Mux(s_bytes, A("tb"), A("tbi"))),
            # the candidate's cap and lateness, selected like cand
            "low_c": A("low_nb"), "late_c": Mux(s_bytes, A("late_nb"), A("late_nd")),
            # a grant in step 3 without sel_tb: base2 + ival2 is next1's capped base plus
            # ival2 (g2 implies no grant in 1, so next1 = next), one of the four sums
            "charged_k": wire("pc_charged_k", Mux(is_cn, Mux(low1, TC, NC),
                                                  Mux(low1, TI, NI))),
            # g1 or the early grant (they exclude each other and step 3's grant)
            "g1e": g1 | early,
        }

    def _byte_finish(self, m, A) -> DatapathOut:
        """The byte-mode build's selects, second part: step 3's grant and the next state, from
        :meth:`_byte_selects`'s values and phase 1's (``A``)."""
        F = self.frac_bits
        wire = self._wire
        g1, low1, future1 = A("g1"), A("low1"), A("future1")
        cand_future, s_bytes = A("cand_future"), A("bytes")
        sel_cand, sel_tb, early = A("sel_cand"), A("sel_tb"), A("early")
        armed2, wait2 = A("armed2"), A("wait2")
        next2 = wire("pc_next2", Mux(sel_tb, A("tb"), Mux(sel_cand, A("cand"), A("next1"))))

        # 3. a grant caused by the event itself (a late report keeps the grid: lateness, made
        # up under the burst cap, unless the flow had nothing waiting: then no credit, as
        # after idle)
        due2 = Mux(sel_tb, 1, Mux(sel_cand, ~cand_future, ~future1))
        g2 = named_wire(m, "pc_g2", ~g1 & armed2 & ~wait2 & A("bl2_nz") & due2)
        g23 = named_wire(m, "pc_g23", g2 | early)
        grant = named_wire(m, "pc_grant", A("g1e") | g2)
        # g2 implies no grant in 1, so next1 = next; and no candidate in packet mode (a
        # candidate is selected only if it is not due, or for a byte-mode report): base2 +
        # ival2 is tb + ival2 or next1's capped base plus ival2, one of the four sums above
        charged2 = wire("pc_charged2", Mux(sel_tb, A("tb_i"), A("charged_k")))
        low2 = Mux(sel_tb, 0, Mux(sel_cand, A("low_c"), low1))
        base2 = wire("pc_base2", Mux(low2, Cat(next2[:F], A("tmb")), next2))
        charged2 = Mux(s_bytes, base2, charged2)

        nxt = Signal(self.state_layout, name="pc_state")
        nxt_wait = wait2 | (g23 & s_bytes)
        m.d.comb += [
            nxt.grants.eq(Mux(grant, A("ginc"), A("grants"))),
            nxt.backlog.eq(Mux(g1, A("bl2_1"), Mux(g23, A("bl2_0d"), A("bl2_0")))),
            nxt.armed.eq(armed2),
            nxt.next.eq(Mux(early, A("next_e"), Mux(g2, charged2, next2))),
            nxt.ival.eq(A("ival2")),
            nxt.bytes.eq(s_bytes),
            nxt.wait.eq(nxt_wait),
            nxt.last.eq(Mux(A("report"), A("size"), A("last"))),
        ]
        # (an early grant is 0 late: it is not behind its schedule; t - next2[F:] selected
        # like next2: 0 for tb, the candidate's from its compare, else t - next[F:])
        late_n = A("late_n")
        late = Mux(g1, late_n, Mux(early | sel_tb, 0, Mux(sel_cand, A("late_c"), late_n)))
        return DatapathOut(next_state=nxt, wake_valid=nxt.armed & ~nxt_wait, wake=nxt.next[F:],
                           expired=grant, late=late)

    def _packet_selects(self, m, A) -> DatapathOut:
        """Phase 2 of a packet-only build: the rules of the byte-mode build's phase 2 with the
        byte-mode terms 0 (no report, no wait), simplified so that the 42-bit selects wait
        for few flags:

        - the long compares (``future1``, the CN candidate's) matter only after a grant in
          step 1 (without it they are ``~due_t`` and the ``ND`` compare, phase 1's);
        - a grant in step 3 (``g2``) implies ``sel_tb`` (the flow re-armed or re-scheduled at
          ``t``: a flow that is due without one is granted in step 1, or it is idle and only
          an arming makes it due; a candidate is taken only when not due), so ``g2 = sel_tb
          & ~g1 & bl2_nz`` and its deadline is ``tb + ival2``;
        - an early grant (a pull: no arming, no CN) implies neither select;
        - ``late`` is read only with ``expired``: ``t - next[F:]`` after a grant in step 1,
          else 0 (a grant in step 3 is at ``tb``, an early one is 0 late)."""
        F = self.frac_bits
        g1, low1 = A("g1"), A("low1")
        # (the compares of next1 and of the CN candidate, each selected among its parallel
        # versions in phase 1)
        future1, cand_future = A("future1"), A("cand_future")
        armed1, arm, resched = A("armed1"), A("arm"), A("resched")
        sel_cand = named_wire(m, "pc_sel_cand", resched & cand_future)
        sel_tb = named_wire(m, "pc_sel_tb",
                            (arm & ~(armed1 & future1)) | (resched & ~cand_future))
        g2_if_tb = A("g2_if_tb")
        g2 = named_wire(m, "pc_g2", sel_tb & g2_if_tb)
        early = A("early")
        g23 = named_wire(m, "pc_g23", g2 | early)
        grant = named_wire(m, "pc_grant", g1 | g23)
        NI, TI, NC, TC, N, tb = A("NI"), A("TI"), A("NC"), A("TC"), A("next"), A("tb")
        # no selects, no grant in step 3: next1, or tb + ival for an early grant (which
        # implies no grant in step 1)
        keep = Mux(early, A("tbi"), Mux(g1, Mux(low1, TI, NI), N))
        cand = Mux(g1, Mux(low1, TC, NC), A("ND"))
        nxt = Signal(self.state_layout, name="pc_state")
        m.d.comb += [
            nxt.grants.eq(Mux(grant, A("ginc"), A("grants"))),
            nxt.backlog.eq(Mux(g1, A("bl2_1"), Mux(g23, A("bl2_0d"), A("bl2_0")))),
            nxt.armed.eq(A("armed1") | arm),
            # (under sel_tb, g2 is g2_if_tb: the 42-bit select waits for sel_tb only)
            nxt.next.eq(Mux(sel_tb, Mux(g2_if_tb, A("tb_i"), tb), Mux(sel_cand, cand, keep))),
            nxt.ival.eq(A("ival2")),
        ]
        return DatapathOut(next_state=nxt, wake_valid=nxt.armed, wake=nxt.next[F:],
                           expired=grant, late=Mux(g1, A("late_n"), 0))


    def _packet_phases23(self, m, R, fl) -> DatapathOut:
        """Phases 2 and 3 of the three-cycle packet-only update (``update_cycles`` 3).  Phase
        1 ended at the carry chains: ``R`` reads its values through their registers
        (``pc_q_*``); ``fl`` are the flags of steps 1 and 2 made from them (a LUT level or
        two, the same as in the other builds).  Phase 2 makes, beside the flags, every
        select that waits for ``g1`` and ``early`` only (two LUT levels), and registers its
        values (``pc_p_*``); phase 3 makes ``sel_tb`` / ``sel_cand`` from registered flags
        and selects among three registered deadlines (a LUT level each), the grant count and
        the backlog among two.  The results are those of :meth:`_packet_selects` (its
        docstring has the rules), regrouped:

        - ``keep`` (no select): ``next1``, or ``tb + ival`` for an early grant, which implies
          no grant in step 1 and a ``tx`` event, whose ``tb_i`` is ``tb + ival``;
        - ``g1``, ``early`` and step 3's ``g2`` exclude each other (``g2`` needs ``~g1``; an
          early grant is a pull: a ``tx`` without packets, which neither arms nor is a CN, so
          ``sel_tb`` is 0), so the grant count and the backlog are selected by ``g1 |
          early`` (phase 2) and then by ``g2`` (phase 3)."""
        F = self.frac_bits
        g1, g2_if_tb = fl["g1"], fl["g2_if_tb"]
        # the early grant in one LUT of phase 1's registers, not behind g1, armed1 and bl1_nz:
        # without a grant in step 1 (~due_t implies it) armed1 is armed and bl1_nz is has, so
        # pull & ~g1 & armed1 & bl1_nz & ~due_t = pull & armed & has & ~due_t
        early = named_wire(m, "pc_early", R("pull") & R("armed") & R("has") & ~R("due_t"))
        low1, tb_i = R("low1"), R("tb_i")
        # ---- phase 2: the flags (``fl``) and the selects that wait for g1 / early only ------
        b = {
            "keep": Mux(g1, Mux(low1, R("TI"), R("NI")), Mux(early, tb_i, R("next"))),
            "cand": Mux(g1, Mux(low1, R("TC"), R("NC")), R("ND")),
            # the deadline under sel_tb: charged (a grant in step 3) or tb
            "tbx": Mux(g2_if_tb, tb_i, R("tb")),
            "g1e": g1 | early,
            "grants": Mux(g1 | early, R("ginc"), R("grants")),
            "ginc": R("ginc"),
            "bl": Mux(g1, R("bl2_1"), Mux(early, R("bl2_0d"), R("bl2_0"))),
            "bl2_0d": R("bl2_0d"),
            "armed2": fl["armed1"] | fl["arm"],
            "ival2": R("ival2"),
            # (read only with expired: a grant in step 1 is t - next[F:] late, others 0)
            "late": Mux(g1, R("late_n"), 0),
        }
        for name in ("arm", "armed1", "future1", "resched", "cand_future", "g2_if_tb"):
            b[name] = fl[name]
        # ---- phase 3: the selects on registered flags ---------------------------------------
        Q = _stage(m, b, "pc_p_")
        resched, cand_future = Q("resched"), Q("cand_future")
        sel_cand = named_wire(m, "pc_sel_cand", resched & cand_future)
        sel_tb = named_wire(m, "pc_sel_tb",
                            (Q("arm") & ~(Q("armed1") & Q("future1"))) | (resched & ~cand_future))
        g2 = named_wire(m, "pc_g2", sel_tb & Q("g2_if_tb"))
        grant = named_wire(m, "pc_grant", Q("g1e") | g2)
        nxt = Signal(self.state_layout, name="pc_state")
        m.d.comb += [
            nxt.grants.eq(Mux(g2, Q("ginc"), Q("grants"))),
            nxt.backlog.eq(Mux(g2, Q("bl2_0d"), Q("bl"))),
            nxt.armed.eq(Q("armed2")),
            nxt.next.eq(Mux(sel_tb, Q("tbx"), Mux(sel_cand, Q("cand"), Q("keep")))),
            nxt.ival.eq(Q("ival2")),
        ]
        return DatapathOut(next_state=nxt, wake_valid=nxt.armed, wake=nxt.next[F:],
                           expired=grant, late=Q("late"))


def _stage(m, values: dict, prefix: str):
    """A stage boundary of a multi-cycle update: the accessor of ``values`` (a dict, or a
    function of the name) that registers each value on its first read (``{prefix}{name}``),
    so that no register is left unread and nothing after the boundary reads a value before it
    except through its register."""
    regd = {}

    def get(name):
        if name not in regd:
            v = values(name) if callable(values) else values[name]
            regd[name] = r = Signal(Value.cast(v).shape(), name=f"{prefix}{name}")
            m.d.sync += r.eq(v)
        return regd[name]
    return get


def _kept(m, name: str, expr) -> Signal:
    """``expr`` on a named wire that synthesis keeps (Yosys ``keep``): the logic before it and
    after it are mapped apart."""
    sig = Signal(Value.cast(expr).shape(), name=name, attrs={"keep": 1})
    m.d.comb += sig.eq(expr)
    return sig


def _trunc(expr, width: int) -> Value:
    """``expr`` truncated to ``width`` bits (a plain value: see :meth:`PacerDatapath._wire`)."""
    return Value.cast(expr)[:width]


def pacer_engine(config: PacerConfig | None = None):
    """The pacer top: :class:`~hw.nic.flow_engine.FlowEngine` around a :class:`PacerDatapath`,
    with the register map's identification header and per-flow windows
    (:meth:`PacerConfig.register_map`, :class:`hw.nic.engine_regs.EngineRegs`)."""
    from .engine_regs import EngineRegs
    from .flow_engine import FlowEngine
    cfg = PacerConfig() if config is None else config
    return EngineRegs(FlowEngine(cfg.engine, PacerDatapath(cfg)), cfg.register_map())
