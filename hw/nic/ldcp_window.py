"""LDCP window engine: the PAWA update datapath, its single-flow wrapper, the sub-1 pacing timer
and the send gate (draft-dai-tsvwg-pfc-free-congestion-control-00 §2.2).

See ``docs/ldcp-window.md`` for the equations, the crossing rules, the fixed-point formats and
the measured figures, and :mod:`sim.models.ldcp_window` for the bit-exact golden model.
"""

from __future__ import annotations

from types import SimpleNamespace

from amaranth.hdl import Module, Mux, Signal, signed
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ..layouts import (
    LdcpDecRule,
    LdcpIncRule,
    csr_write_layout,
    ldcp_ack_layout,
    ldcp_event_layout,
    ldcp_params_layout,
    ldcp_update_layout,
)
from ..lib.csr import CsrBank
from .ldcp_window_config import (
    CSR_ADDR_WIDTH,
    CSR_DATA_WIDTH,
    CW_WIDTH,
    FRAC_BITS,
    INFLIGHT_WIDTH,
    MTU_WIDTH,
    ONE,
    PARAM_WIDTH,
    RECIP_BITS,
    RECIP_INDEX_BITS,
    RECIP_INTERP_BITS,
    UPDATE_LATENCY,
    LdcpWindowConfig,
    recip_table,
)

__all__ = ["LdcpWindowUpdate", "LdcpWindow"]

#: One word of the reciprocal ROM: the table value and the chord slope to the next entry.
RECIP_WORD = data.StructLayout({"t": RECIP_BITS + 1, "d": RECIP_INTERP_BITS})


class LdcpWindowDatapath:
    """The logic of :class:`LdcpWindowUpdate`, to be added to a storage wrapper's own module
    with :meth:`build` (one flat Verilog module), on the signals given to the constructor:
    ``i_valid``, ``i`` (:func:`ldcp_event_layout`), ``params`` (:func:`ldcp_params_layout`);
    it drives ``o_valid`` and ``o`` (:func:`ldcp_update_layout`).  Intermediate values are
    pipeline registers or unnamed expressions.
    """

    LATENCY = UPDATE_LATENCY

    def __init__(self, config: LdcpWindowConfig, i_valid, i, params, o_valid=None, o=None):
        # i may be any object with cw, n_marked, n_unmarked values (a view or expressions)
        self.config = config
        self.i_valid, self.i, self.params = i_valid, i, params
        self.o_valid = Signal() if o_valid is None else o_valid
        self.o = Signal(ldcp_update_layout(config)) if o is None else o

    def build(self, m: Module) -> None:
        cfg = self.config
        NW = cfg.event_n_width
        P = self.params
        W = CW_WIDTH
        prod_w = NW + PARAM_WIDTH            # n * alpha, n * beta, n * gamma

        # ---- pipeline registers (sN_*: captured at the end of stage N - 1) -------------------
        # the last valid register is the o_valid output itself
        valid = [Signal(name=f"s{k}_valid") for k in range(1, self.LATENCY)] + [self.o_valid]

        def stage(k, **shapes):
            return {name: Signal(shape, name=f"s{k}_{name}") for name, shape in shapes.items()}

        ev = dict(nm=NW, nu=NW)
        s1 = stage(1, cw=W, **ev)
        s2 = stage(2, cw=W, cwg=signed(W + 2), cw1=signed(W + 2), h=FRAC_BITS, m_none=1,
                   above=1, nmb=prod_w, nua=prod_w, nug=prod_w, **ev)
        s3 = stage(3, cw=W, t=W, h=FRAC_BITS, m_none=1, above=1, ge_one=1, ge_gamma=1, h_gt=1,
                   nua=prod_w, nug=prod_w, **ev)
        s4 = stage(4, c=W, e=4, dec=LdcpDecRule, nua=prod_w, nug=prod_w, **ev)
        s5 = stage(5, c=W, e=4, idx=RECIP_INDEX_BITS, f=RECIP_INTERP_BITS, sub=W + 1,
                   dec=LdcpDecRule, nua=prod_w, **ev)
        s6 = stage(6, c=W, e=4, rom=RECIP_WORD, f=RECIP_INTERP_BITS, sub=W + 1,
                   dec=LdcpDecRule, nua=prod_w, **ev)
        s7 = stage(7, c=W, e=4, t=RECIP_BITS + 1, tf=RECIP_INTERP_BITS, sub=W + 1,
                   dec=LdcpDecRule, nua=prod_w, **ev)
        s8 = stage(8, c=W, e=4, r=RECIP_BITS + 1, sub=W + 1, dec=LdcpDecRule, nua=prod_w, **ev)
        s9 = stage(9, c=W, e=4, pp_lo=2 * RECIP_BITS, pp_hi=prod_w - RECIP_BITS + RECIP_BITS,
                   r_top=1, sub=W + 1, dec=LdcpDecRule, nua=prod_w, **ev)
        s10 = stage(10, c=W, e=4, prod=prod_w + RECIP_BITS + 1, sub=W + 1, dec=LdcpDecRule, **ev)
        s11 = stage(11, c=W, room=signed(W + 2), inc=prod_w + 1, sub=W + 1, dec=LdcpDecRule,
                    **ev)
        s12 = stage(12, c=W, above=1, rec=W, rec_cap=1, sub=W, sub_cap=1, sub_one=1,
                    dec=LdcpDecRule, **ev)
        assert len(valid) == 12, "stage list and UPDATE_LATENCY disagree"

        m.d.sync += valid[0].eq(self.i_valid)
        m.d.sync += [valid[k].eq(valid[k - 1]) for k in range(1, self.LATENCY)]

        def carry(dst, src, *names):
            return [dst[n].eq(src[n]) for n in names]

        # ---- stage 1: input --------------------------------------------------------------
        m.d.sync += [s1["cw"].eq(self.i.cw), s1["nm"].eq(self.i.n_marked),
                     s1["nu"].eq(self.i.n_unmarked)]

        # ---- 1 -> 2: the event's products with the parameters (one 18x18 DSP each) ----------
        m.d.sync += carry(s2, s1, "cw", "nm", "nu")
        # and, for the marked part, cw - gamma, cw - 1 and the halving cw * eta**n
        nm1 = s1["nm"]
        m.d.sync += [s2["nmb"].eq(nm1 * P.beta), s2["nua"].eq(s1["nu"] * P.alpha),
                     s2["nug"].eq(s1["nu"] * P.gamma), s2["cwg"].eq(s1["cw"] - P.gamma),
                     s2["cw1"].eq(s1["cw"] - ONE),
                     s2["h"].eq(s1["cw"][:FRAC_BITS] >> Mux(nm1 > FRAC_BITS, FRAC_BITS, nm1)[:5]),
                     s2["m_none"].eq(nm1 == 0), s2["above"].eq(s1["cw"][FRAC_BITS:] != 0)]

        # ---- 2 -> 3: marked part, its candidates and comparisons (parallel carry chains) ---
        # registered unselected: a carry chain followed by the select did not fit the clock
        cw, h = s2["cw"], s2["h"]
        gamma = P.gamma
        m.d.sync += [s3["t"].eq(cw - s2["nmb"]),
                     s3["ge_one"].eq(s2["cw1"] >= s2["nmb"]),            # t >= ONE
                     s3["ge_gamma"].eq(s2["cwg"] >= s2["nmb"]),          # t >= gamma
                     s3["h_gt"].eq(h > gamma)]
        m.d.sync += carry(s3, s2, "cw", "h", "m_none", "above", "nm", "nu", "nua", "nug")

        # ---- 3 -> 4: select the marked part's rule; the exponent (leading one of the integer
        # part) of the selected value, computed on the window-sized candidate before the select
        # (gamma <= 1 and h < 1 have exponent 0) --------------------------------------------
        c4, dec4 = s4["c"], s4["dec"]
        use_t = Signal()
        with m.If(s3["m_none"]):
            m.d.sync += [c4.eq(s3["cw"]), dec4.eq(LdcpDecRule.NONE)]
        with m.Elif(s3["above"]):
            with m.If(s3["ge_one"]):
                m.d.comb += use_t.eq(1)
                m.d.sync += [c4.eq(s3["t"]), dec4.eq(LdcpDecRule.LINEAR)]
            with m.Elif(s3["ge_gamma"]):
                m.d.comb += use_t.eq(1)
                m.d.sync += [c4.eq(s3["t"]), dec4.eq(LdcpDecRule.CROSS)]
            with m.Else():
                m.d.sync += [c4.eq(gamma), dec4.eq(LdcpDecRule.CROSS_FLOOR)]
        with m.Else():
            with m.If(s3["h_gt"]):
                m.d.sync += [c4.eq(s3["h"]), dec4.eq(LdcpDecRule.HALVE)]
            with m.Else():
                m.d.sync += [c4.eq(gamma), dec4.eq(LdcpDecRule.HALVE_FLOOR)]
        wide = s3["m_none"] | use_t                  # the selected value may exceed 1
        ipart = Mux(s3["m_none"], s3["cw"], s3["t"])[FRAC_BITS:]
        with m.If(wide):
            for i in range(W - FRAC_BITS):
                with m.If(ipart[i]):
                    m.d.sync += s4["e"].eq(i)    # the last (highest) set bit wins
        with m.If(~wide | (ipart == 0)):
            m.d.sync += s4["e"].eq(0)
        m.d.sync += carry(s4, s3, "nm", "nu", "nua", "nug")

        # ---- 4 -> 5: normalise (leading one to bit 31); the sub-1 increase -------------------
        norm = (s4["c"] << (15 - s4["e"])[:4])[:W]
        idx_lo = W - 1 - RECIP_INDEX_BITS
        m.d.sync += [s5["idx"].eq(norm[idx_lo:W - 1]),
                     s5["f"].eq(norm[idx_lo - RECIP_INTERP_BITS:idx_lo]),
                     s5["sub"].eq(s4["c"] + s4["nug"])]
        m.d.sync += carry(s5, s4, "c", "e", "nm", "nu", "dec", "nua")

        # ---- 5 -> 6: the reciprocal ROM, in logic (a balanced mux tree of constants) ---------
        words = [RECIP_WORD.const({"t": tv, "d": dv}).as_value() for tv, dv in recip_table()]

        def tree(bit, lo, hi):
            if hi - lo == 1:
                return words[lo]
            mid = (lo + hi) // 2
            return Mux(s5["idx"][bit], tree(bit - 1, mid, hi), tree(bit - 1, lo, mid))

        m.d.sync += s6["rom"].eq(tree(RECIP_INDEX_BITS - 1, 0, len(words)))
        m.d.sync += carry(s6, s5, "c", "e", "f", "sub", "nm", "nu", "dec", "nua")

        # ---- 6 -> 7: chord product ----------------------------------------------------------
        rom = s6["rom"]
        m.d.sync += [s7["t"].eq(rom.t), s7["tf"].eq((rom.d * s6["f"]) >> RECIP_INTERP_BITS)]
        m.d.sync += carry(s7, s6, "c", "e", "sub", "nm", "nu", "dec", "nua")

        # ---- 7 -> 8: interpolated reciprocal --------------------------------------------------
        m.d.sync += s8["r"].eq(s7["t"] - s7["tf"])
        m.d.sync += carry(s8, s7, "c", "e", "sub", "nm", "nu", "dec", "nua")

        # ---- 8 -> 9: n * alpha * r as 18 x 18 partial products (r = 2**18 only at x = 1) ---
        r_lo = s8["r"][:RECIP_BITS]
        m.d.sync += [s9["pp_lo"].eq(s8["nua"][:RECIP_BITS] * r_lo),
                     s9["pp_hi"].eq(s8["nua"][RECIP_BITS:] * r_lo),
                     s9["r_top"].eq(s8["r"][RECIP_BITS])]
        m.d.sync += carry(s9, s8, "c", "e", "sub", "nm", "nu", "dec", "nua")

        # ---- 9 -> 10: sum of the partial products ---------------------------------------------
        top = Mux(s9["r_top"], s9["nua"], 0)
        m.d.sync += s10["prod"].eq(s9["pp_lo"] + ((s9["pp_hi"] + top) << RECIP_BITS))
        m.d.sync += carry(s10, s9, "c", "e", "sub", "nm", "nu", "dec")

        # ---- 10 -> 11: scale by 2**-(18 + e); the room below the cap --------------------------
        m.d.sync += [s11["inc"].eq(s10["prod"] >> (s10["e"] + RECIP_BITS)),
                     s11["room"].eq(P.cw_max - s10["c"])]
        m.d.sync += carry(s11, s10, "c", "sub", "nm", "nu", "dec")

        # ---- 11 -> 12: the window-regime sum and the comparisons, in parallel -----------------
        cap = P.cw_max
        m.d.sync += [
            s12["rec"].eq(s11["c"] + s11["inc"]),
            s12["rec_cap"].eq(s11["inc"] >= s11["room"]),          # c + inc >= cap
            s12["sub_cap"].eq(s11["sub"] >= cap),
            s12["sub_one"].eq(s11["sub"][FRAC_BITS:] != 0),
            s12["above"].eq(s11["c"][FRAC_BITS:] != 0),
        ]
        m.d.sync += carry(s12, s11, "c", "sub", "nm", "nu", "dec")

        # ---- output: select (all conditions registered), the cap and the rule codes ----------
        c = s12["c"]
        new, inc = self.o.cw, self.o.inc
        with m.If(s12["nu"] == 0):
            m.d.comb += [new.eq(c), inc.eq(LdcpIncRule.NONE)]
        with m.Elif(s12["above"]):
            with m.If(s12["rec_cap"]):
                m.d.comb += [new.eq(cap), inc.eq(LdcpIncRule.RECIP_CAP)]
            with m.Else():
                m.d.comb += [new.eq(s12["rec"]), inc.eq(LdcpIncRule.RECIP)]
        with m.Elif(s12["sub_cap"]):
            m.d.comb += [new.eq(cap), inc.eq(LdcpIncRule.CROSS_CAP)]
        with m.Elif(s12["sub_one"]):
            m.d.comb += [new.eq(s12["sub"]), inc.eq(LdcpIncRule.CROSS)]
        with m.Else():
            m.d.comb += [new.eq(s12["sub"]), inc.eq(LdcpIncRule.GAMMA)]

        m.d.comb += [
            self.o.n_marked.eq(s12["nm"]),
            self.o.n_unmarked.eq(s12["nu"]),
            self.o.dec.eq(s12["dec"]),
        ]


class LdcpWindowUpdate(wiring.Component):
    """The PAWA update datapath: (window, event, parameters) -> new window.  Holds no flow
    state; a wrapper keeps the window (registers here, block RAM for many flows later).

    Parameters
    ----------
    config : LdcpWindowConfig
        Widths (``event_n_width``); the run-time parameters come in on ``params``.

    Ports
    -----
    i_valid : In(1), i : In(ldcp_event_layout)
        An update: the flow's window ``cw`` (UQ16.16) and the event, ``n_marked`` packets
        confirmed with ECE followed by ``n_unmarked`` without (a single ACK has one of them 0).
    params : In(ldcp_params_layout)
        ``alpha``, ``beta``, ``gamma`` (UQ1.16), ``cw_max`` (UQ16.16); held stable while
        updates are in flight.
    o_valid : Out(1), o : Out(ldcp_update_layout)
        The new window, the event and the rules applied (``LdcpDecRule``, ``LdcpIncRule``);
        combinational from the last pipeline register.

    Latency and throughput
    ----------------------
    Fully pipelined, no stalls: one update per clock.  ``o`` shows the result of an update
    ``LATENCY - 1`` edges after the edge that took it, so a wrapper that registers it has the
    new window ``LATENCY`` edges after issuing.  Stages (each ends in a register): 1 input;
    2 ``n * beta``, ``n * alpha``, ``n * gamma``, ``cw - gamma``; 3 the marked part's candidates
    and comparisons; 4 its rule select and the leading one of the integer part; 5 normalise;
    6 reciprocal ROM (logic); 7 chord product; 8 interpolated reciprocal ``r``;
    9 ``n * alpha * r`` as two 18x18 products; 10 their sum; 11 shift by the exponent,
    ``cw_max - cw``; 12 ``cw + increase`` and every comparison; then a multiplexer
    (combinational, selects registered) gives the new window and the rule codes.  Every
    multiplication is at most 18x18 (one ECP5 DSP) with registers on both sides.
    """

    LATENCY = UPDATE_LATENCY

    def __init__(self, config: LdcpWindowConfig):
        if not isinstance(config, LdcpWindowConfig):
            raise TypeError(f"LdcpWindowUpdate needs a LdcpWindowConfig, not {config!r}")
        self.config = config
        super().__init__({
            "i_valid": In(1),
            "i": In(ldcp_event_layout(config)),
            "params": In(ldcp_params_layout()),
            "o_valid": Out(1),
            "o": Out(ldcp_update_layout(config)),
        })

    def elaborate(self, platform):
        m = Module()
        LdcpWindowDatapath(self.config, self.i_valid, self.i, self.params,
                           self.o_valid, self.o).build(m)
        return m


class LdcpWindow(wiring.Component):
    """One LDCP flow: the window in a register around :class:`LdcpWindowUpdate`, coalescing
    of back-to-back ACKs, the sub-1 pacing timer and the send gate.

    Parameters
    ----------
    config : LdcpWindowConfig
        Widths and the reset values of the parameter registers and of the window.

    Ports
    -----
    ack : In(stream(ldcp_ack_layout))
        ACKs of the flow: ECN-Echo and the packets confirmed ``n`` (saturated at ``m``;
        ``n = 0`` is ignored).  ``ready`` is always 1: one ACK per clock, sustained.
    inflight : In(32)
        Bytes in flight (from the transport).
    sent : In(1)
        A packet was sent this cycle (uses up the timer's release in the sub-1 regime).
    cw : Out(32)
        The committed window, UQ16.16 packets.
    may_send : Out(1)
        Send gate: ``inflight < cw * mtu`` when ``cw >= 1``, else a pending timer release;
        from the window of two cycles earlier (pipelined) and ``inflight`` now.
    tick : Out(1)
        The sub-1 timer fired at the last edge (one pulse per period ``RTT / cw``); the timer
        runs on the window of the previous cycle.
    credit : Out(1)
        A timer release not yet used by ``sent``.
    gate_lo : Out(32), gate_hi : Out(28), gate_sub1 : Out(1)
        The gate's pipeline registers, for a user that registers its own gate decision: the
        window of the NEXT cycle's gate is ``ceil((gate_lo + gate_hi * 2**18) / 2**16)`` bytes
        (the two partial products of ``cw * mtu``, from the window of the previous cycle), and
        ``gate_sub1`` says that this cycle's gate is the timer's ``credit``.
    upd_valid : Out(1), upd : Out(ldcp_update_layout)
        The update the window takes at the coming edge (event applied, rules taken).
    busy : Out(1)
        An update is in flight or pending.
    csr_w : In(stream(csr_write_layout))
        Register writes (:class:`LdcpWindowReg`): the parameters, the RTT, the MTU, and a
        window load.  Accepted (``ready``) only while idle: not ``busy`` and no ACK offered;
        applied at the next edge, during which ACKs are coalesced but not issued.
    csr_raddr : In(5), csr_rdata : Out(32)
        Register reads (``CW`` reads the window), data one cycle after the address; the
        identification header (block type ``LDWN``) at words 0x10..0x13, unmapped words read 0.

    Back-to-back ACKs
    -----------------
    The datapath's loop (window -> reciprocal -> new window) takes ``UPDATE_LATENCY`` cycles,
    so the flow has at most one update in flight.  ACKs that arrive meanwhile are coalesced
    into the next update the way the draft's delayed-ACK receiver coalesces packets: unmarked
    ACKs add up in ``n_unmarked``; a marked ACK absorbs the pending unmarked packets (an ECE
    ACK confirming them all, eq. 2) and adds to ``n_marked``.  The next update is issued at the
    edge where the previous one commits, with the new window forwarded.  An ACK arriving with
    nothing in flight is issued at once.

    Latency
    -------
    ``cw`` shows the effect of an ACK ``UPDATE_LATENCY`` edges after the edge that accepts it
    (when nothing is in flight; else up to ``2 * UPDATE_LATENCY - 1``).
    """

    LATENCY = UPDATE_LATENCY

    def __init__(self, config: LdcpWindowConfig):
        if not isinstance(config, LdcpWindowConfig):
            raise TypeError(f"LdcpWindow needs a LdcpWindowConfig, not {config!r}")
        self.config = config
        gate_init = config.timer_gate_init()
        super().__init__({
            "ack": In(stream.Signature(ldcp_ack_layout(config))),
            "inflight": In(INFLIGHT_WIDTH),
            "sent": In(1),
            "cw": Out(CW_WIDTH, init=config.registers().cw_init),
            "may_send": Out(1),
            "tick": Out(1),
            "credit": Out(1),
            "gate_lo": Out(18 + MTU_WIDTH, init=gate_init["gate_lo"]),
            "gate_hi": Out(CW_WIDTH - 18 + MTU_WIDTH, init=gate_init["gate_hi"]),
            "gate_sub1": Out(1, init=gate_init["gate_sub1"]),
            "upd_valid": Out(1),
            "upd": Out(ldcp_update_layout(config)),
            "busy": Out(1),
            "csr_w": In(stream.Signature(csr_write_layout(CSR_ADDR_WIDTH, CSR_DATA_WIDTH))),
            "csr_raddr": In(CSR_ADDR_WIDTH),
            "csr_rdata": Out(CSR_DATA_WIDTH),
        })

    def elaborate(self, platform):
        m = Module()
        cfg = self.config
        NW = cfg.event_n_width

        # ---- run-time registers (declared once in LdcpWindowConfig.register_map; the window
        # register is the cw output, loaded through its write strobe with a clamp) ------------
        bank = CsrBank(cfg.register_map(), external={"CW": self.cw})
        params = Signal(ldcp_params_layout())
        m.d.comb += [params.alpha.eq(bank["ALPHA"]), params.beta.eq(bank["BETA"]),
                     params.gamma.eq(bank["GAMMA"]), params.cw_max.eq(bank["CW_MAX"])]
        rtt, mtu = bank["RTT"], bank["MTU"]

        # ---- state (the window, the timer's release and pulse are the output registers) --------
        cw = self.cw
        credit = self.credit
        tick = self.tick
        pend_m = Signal(NW)
        pend_u = Signal(NW)
        busy_left = Signal(range(self.LATENCY + 1))
        init = cfg.timer_gate_init()
        phase = Signal(cfg.phase_width)
        cw_d = Signal(FRAC_BITS, init=init["cw_d"])          # timer: the window one cycle ago
        sub1_d = Signal(init=init["sub1_d"])
        thr = Signal(cfg.phase_width, init=init["thr"])     # rtt * 2**16 - cw_d (modular)
        gate_lo = self.gate_lo          # cw[:18] * mtu (output registers: see the ports)
        gate_hi = self.gate_hi          # cw[18:] * mtu
        gate_sub1 = self.gate_sub1
        win_bytes = Signal(CW_WIDTH + MTU_WIDTH - FRAC_BITS + 1, init=init["win_bytes"])

        dp = LdcpWindowDatapath(cfg, None, None, params, self.upd_valid, self.upd)

        # ---- handshake conditions -----------------------------------------------------------
        m.d.comb += self.ack.ready.eq(1)
        take = self.ack.valid
        n_ack = Mux(self.ack.payload.n > cfg.m, cfg.m, self.ack.payload.n)[:cfg.n_width]
        counted = take & (self.ack.payload.n != 0)          # n_ack != 0 (m >= 1)
        marked = counted & self.ack.payload.ece
        ev_m = Mux(marked, pend_m + pend_u + n_ack, pend_m)[:NW]
        ev_u = Mux(marked, 0, Mux(counted, pend_u + n_ack, pend_u))[:NW]
        # a register write is taken while idle and applied at the next edge (bank.applying);
        # meanwhile no update is issued (so the write is never raced by the window it changes)
        csr_q_lo = Signal()       # data < gamma (window load clamp, compared on the way in)
        csr_q_hi = Signal()       # data > cw_max
        busy = (busy_left != 0) | (pend_m != 0) | (pend_u != 0) | bank.applying
        free = (busy_left <= 1) & ~bank.applying   # nothing in flight, or it commits now
        # "the event is not empty", without the adders: a counted ACK has n != 0 and the sums
        # never wrap (NW bits hold n_max_event), so it is an OR of flags
        issue = free & (counted | (pend_m != 0) | (pend_u != 0))

        # ---- issue, coalesce, commit --------------------------------------------------------
        dp.i_valid = issue
        dp.i = SimpleNamespace(cw=Mux(dp.o_valid, dp.o.cw, cw), n_marked=ev_m, n_unmarked=ev_u)
        dp.build(m)
        with m.If(dp.o_valid):
            m.d.sync += cw.eq(dp.o.cw)

        # ---- register writes (only while idle, so never together with a commit) -------------
        wdata = self.csr_w.payload.data
        m.d.sync += [csr_q_lo.eq(wdata < params.gamma), csr_q_hi.eq(wdata > params.cw_max)]
        bank.build(m, self.csr_w, self.csr_raddr, self.csr_rdata,
                   idle=~busy & ~self.ack.valid, delay=1)
        with m.If(bank.wstb["CW"]):
            m.d.sync += cw.eq(Mux(csr_q_lo, params.gamma, Mux(csr_q_hi, params.cw_max,
                                                                bank.wdata)))
        # (the same as "issue: clear the pending counts and start the countdown, else keep
        # ev and count down", written so that the ACK's valid, the latest input (a user
        # qualifies it with LSN comparisons), selects last between values prepared for an ACK
        # and for none)
        idle_issue = free & ((pend_m != 0) | (pend_u != 0))
        down = Mux(busy_left != 0, busy_left - 1, 0)
        with_ack = Mux(self.ack.payload.ece, pend_m + pend_u + n_ack, pend_m)[:NW]
        m.d.sync += [
            pend_m.eq(Mux(counted, Mux(free, 0, with_ack), Mux(idle_issue, 0, pend_m))),
            pend_u.eq(Mux(counted, Mux(free | self.ack.payload.ece, 0, (pend_u + n_ack)[:NW]),
                          Mux(idle_issue, 0, pend_u))),
            busy_left.eq(Mux(counted, Mux(free, self.LATENCY, down),
                             Mux(idle_issue, self.LATENCY, down))),
        ]

        # ---- sub-1 pacing timer: phase accumulator, period RTT / cw ------------------------
        # One cycle behind the window, so that no carry chain follows another: the registers
        # hold cw_d (the window's fraction), sub1_d and thr = rtt * 2**16 - cw_d; then
        # "phase + cw_d >= rtt * 2**16" is "phase >= thr", and both next phases come from
        # parallel adders.
        m.d.sync += [
            cw_d.eq(cw[:FRAC_BITS]),
            sub1_d.eq(cw[FRAC_BITS:] == 0),
            thr.eq(((rtt << FRAC_BITS) - cw[:FRAC_BITS])[:cfg.phase_width]),
        ]
        fire = sub1_d & (phase >= thr)
        with m.If(~sub1_d):
            m.d.sync += phase.eq(0)
        with m.Elif(fire):
            m.d.sync += phase.eq((phase - thr)[:cfg.phase_width])
        with m.Else():
            m.d.sync += phase.eq((phase + cw_d)[:cfg.phase_width])
        m.d.sync += [
            credit.eq(sub1_d & (fire | (credit & ~self.sent))),
            tick.eq(fire),
        ]

        # ---- send gate: ceil(cw * mtu / 2**16) bytes, two 18x18 products then their sum ------
        m.d.sync += [
            gate_lo.eq(cw[:18] * mtu),
            gate_hi.eq(cw[18:] * mtu),
            win_bytes.eq((gate_lo + (gate_hi << 18) + (ONE - 1)) >> FRAC_BITS),
            gate_sub1.eq(sub1_d),
        ]
        m.d.comb += self.may_send.eq(Mux(gate_sub1, credit, self.inflight < win_bytes))

        # ---- outputs ----------------------------------------------------------------------
        m.d.comb += self.busy.eq(busy)
        return m
