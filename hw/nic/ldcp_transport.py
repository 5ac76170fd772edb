"""LDCP transport: the sender (zero-RTT fast start, LSN sliding window on the window engine,
go-back-N, retransmission timeout) and the receiver (expected LSN, per-packet or delayed ACK
with the CE echo, NAK on a gap), draft-dai-tsvwg-pfc-free-congestion-control-00 §2.3 and §3.

``docs/ldcp-transport.md`` has the state machines, the rules and the measured figures;
:mod:`sim.models.ldcp_transport` is the bit-exact golden model (its class docstrings give the
edge-by-edge rules these components implement).
"""

from __future__ import annotations

from amaranth.hdl import C, Cat, Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ..layouts import (
    LdcpTxLoad,
    LdcpTxStage,
    csr_write_layout,
    ldcp_rx_deliver_layout,
    ldcp_rx_packet_layout,
    ldcp_rx_state_layout,
    ldcp_tack_layout,
    ldcp_tx_packet_layout,
    ldcp_tx_start_layout,
    ldcp_tx_state_layout,
)
from ..lib.csr import CsrBank
from .ldcp_transport_config import (
    ACK_DELAY_WIDTH,
    IW_WIDTH,
    RTO_WIDTH,
    SETTLE_CYCLES,
    TX_CSR_ADDR_WIDTH,
    LdcpTransportConfig,
)
from .ldcp_window import LdcpWindow
from .ldcp_window_config import CW_WIDTH, FRAC_BITS, INFLIGHT_WIDTH, MTU_WIDTH, ONE, LdcpWindowReg

__all__ = ["LdcpSender", "LdcpReceiver"]


def _below(x, y):
    """``x < y`` as the borrow of ``x - y``: a carry chain (Yosys maps a wide ``<`` between a
    port and a register to LUT trees, three or four levels, slower: docs/ldcp-transport.md)."""
    return (x - y)[max(len(x), len(y))]


def _sum_lt(width, x_add, x_sub, y_add):
    """``sum(x_add) - sum(x_sub) < sum(y_add)`` (unsigned values or integer constants, the
    exact value below ``2**(width - 1)`` in magnitude) as the sign of ``sum(y_add) + sum(x_sub)
    + sum(~x) >= 0`` in ``width``-bit two's complement (``~x = -x - 1``): the terms are reduced
    to two by carry-save (3:2) levels, one LUT level each, then one adder gives the sign, so a
    comparison of sums is a single carry chain (two chained adders would be two)."""
    mask = (1 << width) - 1

    def ext(t):
        if isinstance(t, int):
            return C(t & mask, width)
        return Cat(t, C(0, width))[:width]
    vs = [ext(t) for t in (*y_add, *x_sub)] + [~ext(t) for t in x_add]
    if len(x_add) != 1:
        vs.append(C((len(x_add) - 1) & mask, width))
    while len(vs) > 2:
        a, b, c = vs[:3]
        vs = vs[3:] + [a ^ b ^ c, Cat(C(0, 1), (a & b) | (a & c) | (b & c))[:width]]
    return ~(vs[0] + vs[1])[width - 1]


def _check(config, who):
    if not isinstance(config, LdcpTransportConfig):
        raise TypeError(f"{who} needs a LdcpTransportConfig, not {config!r}")


class LdcpSender(wiring.Component):
    """One LDCP flow's sender: one message at a time, from fast start to the last ACK.

    Parameters
    ----------
    config : LdcpTransportConfig
        LSN width, MTU (a build-time constant), the window engine's configuration and the reset
        values of the IW, CW_BDP and RTO registers.

    Ports
    -----
    start : In(stream(ldcp_tx_start_layout))
        A message of ``length`` bytes (0: done at once).  Ready while no message is active and
        no window load is pending.
    pkt : Out(stream(ldcp_tx_packet_layout))
        The next packet: LSN, length (MTU except the last), ECN-capable, retransmission, last.
        ``valid`` when the gate is open; the NIC's scheduler takes it with ``ready`` (pacing at
        line rate is the scheduler's: the sender offers back to back).  ``valid`` may drop
        without a handshake (an ACK or a timeout changed the gate or the LSN).  ``valid`` and
        ``retx`` come from flag registers (no comparison between a register and the release).
    ack : In(stream(ldcp_tack_layout))
        ACKs and NAKs of the flow.  Ready except while a window load waits for the window
        engine (one cycle, or until its update in flight commits).
    csr_w : In(stream(csr_write_layout))
        :class:`LdcpTransportReg` writes; ready while no message is active.
    csr_raddr : In(5), csr_rdata : Out(32)
        Register reads, data one cycle after the address; the identification header (block
        type ``LDTX``) at words 0x10..0x13, unmapped words read 0.
    state : Out(ldcp_tx_state_layout)
        Every state register and the last edge's event pulses (RTO, bad ACK, fast-start exit).
    cw : Out(32)
        The window engine's window, UQ16.16 packets.
    tick, busy : Out(1)
        The window engine's sub-1 timer pulse and its update-in-flight flag (observation).
    inflight : Out(lsn_width)
        Bytes in flight, ``nxt - una`` (what the gate compares).

    Latency and throughput
    ----------------------
    One ACK and one packet per clock, sustained (the window engine coalesces back-to-back ACKs).
    An ACK changes the offered packet at the next cycle (LSN, ECN capability, go-back-N) and
    the stable-stage gate ``UPDATE_LATENCY + 2`` cycles later (the engine's update and gate
    pipeline).  A fast-start exit or an RTO loads the engine's window: ACKs wait while the load
    is pending and the stable-stage gate stays closed for ``SETTLE_CYCLES`` after it.
    """

    def __init__(self, config: LdcpTransportConfig):
        _check(config, "LdcpSender")
        self.config = config
        super().__init__({
            "start": In(stream.Signature(ldcp_tx_start_layout(config))),
            "pkt": Out(stream.Signature(ldcp_tx_packet_layout(config))),
            "ack": In(stream.Signature(ldcp_tack_layout(config))),
            "csr_w": In(stream.Signature(csr_write_layout(TX_CSR_ADDR_WIDTH, 32))),
            "csr_raddr": In(TX_CSR_ADDR_WIDTH),
            "csr_rdata": Out(32),
            "state": Out(ldcp_tx_state_layout(config)),
            "cw": Out(CW_WIDTH),
            "tick": Out(1),
            "busy": Out(1),
            "inflight": Out(config.lsn_width),
        })

    def elaborate(self, platform):
        m = Module()
        cfg = self.config
        W = cfg.lsn_width
        reset = cfg.registers()
        mtu = reset.mtu

        m.submodules.window = eng = LdcpWindow(cfg.window)

        # ---- registers ---------------------------------------------------------------------
        # (declared once in LdcpTransportConfig.register_map; IW * MTU and RTO - 1 are derived
        # registers, updated with the write strobes)
        bank = CsrBank(cfg.register_map())
        iw, cw_bdp = bank["IW"], bank["CW_BDP"]
        iw_bytes = Signal(IW_WIDTH + MTU_WIDTH, init=reset.iw_bytes)
        # (IW - 1) * MTU and IW != 0, for the fast-start flag after a sent packet
        iw_m = Signal(IW_WIDTH + MTU_WIDTH, init=max(reset.iw_bytes - mtu, 0))
        iw_pos = Signal(init=int(reset.iw_bytes > 0))
        st = self.state                      # the state registers are the output port
        m.d.comb += [self.cw.eq(eng.cw), self.tick.eq(eng.tick), self.busy.eq(eng.busy)]

        # derived registers, kept equal to functions of the state so that no carry chain
        # follows another on the packet path: nxt + mtu, "the packet at nxt is the last", and
        # RTO - 1
        nxt_mtu = Signal(W, init=mtu)   # (wraps only where is_last holds and it is unused)
        is_last = Signal(init=1)
        msg_m = Signal(W)               # msg_len - mtu, and msg_len <= mtu (set at a start)
        msg_short = Signal(init=1)
        rto_mask = (1 << RTO_WIDTH) - 1
        rto_m1 = Signal(RTO_WIDTH, init=(reset.rto - 1) & rto_mask)
        # "rto_cnt == RTO - 1" as a flag register kept with the counter (a 32-bit equality
        # is a LUT tree of four levels), from RTO - 2 and "RTO - 1 != 0"
        rto_due = Signal(init=int((reset.rto - 1) & rto_mask == 0))
        rto_m2 = Signal(RTO_WIDTH, init=(reset.rto - 2) & rto_mask)
        rto_m1_nz = Signal(init=int((reset.rto - 1) & rto_mask != 0))

        # ---- the offered packet ------------------------------------------------------------
        fast = st.stage == LdcpTxStage.FAST
        # bytes in flight, nxt - una: a register kept with nxt and una (its next value is
        # computed from the same candidates), so that the gate's comparison is not preceded by
        # a W-bit subtraction
        inflight = Signal(W)
        m.d.comb += self.inflight.eq(inflight)
        LW = cfg.len_width
        length = Mux(is_last, (st.msg_len[:LW] - st.nxt[:LW])[:LW], mtu)
        sent_len = Mux(is_last, st.msg_len, nxt_mtu)           # nxt + length
        # The release pkt_t = pkt.valid & pkt.ready selects the next value of ~100 register
        # bits, so pkt.valid comes from registers alone: the three comparisons of the offer
        # are flag registers kept equal to functions of the state, their next values computed
        # for every candidate next state in parallel (below) and selected like the state:
        #   more   = nxt < msg_len                    (bytes left)
        #   retx   = nxt < snd_max                    (a retransmission)
        #   fs_ok  = inflight < iw_bytes              (the fast-start window)
        #   win_ok = inflight < ceil(cw_2 * mtu)      (the window engine's gate, cw_2 the
        #            window of two cycles earlier: the engine's win_bytes, whose next value
        #            ceil((gate_lo + gate_hi * 2**18) / 2**16) the engine exposes)
        # Exception: after the last packet is sent, fs_ok and win_ok are don't-care for a
        # cycle (more is 0 then, so no packet is offered) and are computed as for a full one.
        # (inflight is not saturated to the engine's 32 bits for them: the windows are below
        # 2**32 bytes, so it compares the same.)
        more = Signal()
        retx = Signal()
        fs_ok = Signal(init=int(reset.iw_bytes > 0))
        win_ok = Signal(init=int(cfg.window.timer_gate_init()["win_bytes"] > 0))
        if W > INFLIGHT_WIDTH:         # saturate: the gate's window is below 2**32 bytes
            m.d.comb += eng.inflight.eq(Mux(inflight[INFLIGHT_WIDTH:] != 0,
                                            (1 << INFLIGHT_WIDTH) - 1, inflight))
        else:
            m.d.comb += eng.inflight.eq(inflight)
        gate = Mux(fast, fs_ok,
                   ~st.load_pending & (st.settle == 0) & Mux(eng.gate_sub1, eng.credit, win_ok))
        ect = ~fast | st.first_ack | ((st.new_cnt + 1) == iw) | is_last
        m.d.comb += [
            self.pkt.valid.eq(st.active & more & gate),
            self.pkt.payload.lsn.eq(st.nxt),
            self.pkt.payload.length.eq(length),
            self.pkt.payload.ect.eq(ect),
            self.pkt.payload.retx.eq(retx),
            self.pkt.payload.last.eq(is_last),
        ]

        # ---- handshake conditions ---------------------------------------------------------
        m.d.comb += [
            self.ack.ready.eq(~st.load_pending),
            self.start.ready.eq(~st.active & ~st.load_pending),
        ]
        a = self.ack.payload
        ack_t = self.ack.valid & self.ack.ready
        pkt_t = self.pkt.valid & self.pkt.ready
        start_t = self.start.valid & self.start.ready
        in_range = ~_below(st.snd_max, a.lsn)
        valid = ack_t & st.active & in_range
        bad = ack_t & st.active & ~in_range
        progress = valid & _below(st.una, a.lsn)
        una_new = Mux(progress, a.lsn, st.una)
        # comparisons with una_new, as parallel comparisons with both candidates
        una_new_ge_iw = Mux(progress, ~_below(a.lsn, iw_bytes), ~_below(st.una, iw_bytes))
        una_new_done = Mux(progress, ~_below(a.lsn, st.msg_len) & ~_below(st.msg_len, a.lsn),
                           st.una == st.msg_len)
        fs_sum = st.fs_acked + a.n
        fs_new = Mux(fs_sum[IW_WIDTH:] != 0, (1 << IW_WIDTH) - 1, fs_sum)[:IW_WIDTH]
        counting = st.active & ~st.load_pending & _below(st.una, st.nxt)
        rto_hit = counting & ~progress & rto_due
        exit1_nak = valid & fast & a.nak
        exit2 = valid & fast & ~a.nak & una_new_ge_iw
        exit1 = exit1_nak | (rto_hit & fast & ~exit2)
        goback = (valid & a.nak) | rto_hit

        # ---- the window engine: ACKs of the stable stage, sent packets, window loads ---------
        load_value = Signal(CW_WIDTH)
        with m.Switch(st.load_kind):
            with m.Case(LdcpTxLoad.ACKED):
                m.d.comb += load_value.eq(st.fs_acked << FRAC_BITS)
            with m.Case(LdcpTxLoad.BDP):
                m.d.comb += load_value.eq(cw_bdp)
            with m.Default():
                m.d.comb += load_value.eq(Mux(eng.cw < ONE, eng.cw, ONE))
        m.d.comb += [
            eng.ack.valid.eq(valid & ~fast & (a.n != 0)),
            eng.ack.payload.ece.eq(a.ece),
            eng.ack.payload.n.eq(a.n),
            eng.sent.eq(pkt_t),
            eng.csr_w.valid.eq(st.load_pending),
            eng.csr_w.payload.addr.eq(LdcpWindowReg.CW),
            eng.csr_w.payload.data.eq(load_value),
        ]
        # the engine takes the load when idle: not busy and no ACK offered; while a load is
        # pending the sender's ACK port is not ready, so that is "not busy" (which keeps the
        # ACK's LSN comparisons off this path)
        load_taken = st.load_pending & ~eng.busy

        # ---- synchronous updates ---------------------------------------------------------------
        m.d.sync += [st.ev_rto.eq(rto_hit), st.ev_bad_ack.eq(bad), st.ev_exit.eq(0)]
        with m.If(load_taken):
            m.d.sync += [st.load_pending.eq(0), st.settle.eq(SETTLE_CYCLES)]
        with m.Elif(st.settle != 0):
            m.d.sync += st.settle.eq(st.settle - 1)
        with m.If(valid & fast):
            m.d.sync += [st.first_ack.eq(1), st.fs_acked.eq(fs_new)]
        with m.If(exit1 | exit2):
            m.d.sync += [st.stage.eq(LdcpTxStage.STABLE), st.load_pending.eq(1),
                         st.load_kind.eq(Mux(exit1, LdcpTxLoad.ACKED, LdcpTxLoad.BDP)),
                         st.ev_exit.eq(Mux(exit1, 1, 2))]
        with m.If(rto_hit & ~fast):
            m.d.sync += [st.load_pending.eq(1), st.load_kind.eq(LdcpTxLoad.MIN1)]
        m.d.sync += st.una.eq(una_new)
        # nxt: go back, or advance past a sent packet; a late ACK (for packets sent before a
        # go-back-N) may pass it: skip those bytes.  (nxt >= una always, so "nxt' < una_new"
        # needs progress and is compared with the ACK's LSN directly.)
        # The next nxt is one of four candidates; each one's "+ mtu" and "is the last" are
        # computed in parallel from registers and inputs, then selected with it.  The release
        # pkt_t (flag registers, then the scheduler's ready) selects ~100 register bits:
        # every next value is computed for "sent" and for "not sent", and pkt_t selects
        # between them last.
        passed_s = progress & _below(sent_len, a.lsn)
        passed_n = progress & _below(st.nxt, a.lsn)
        msg = st.msg_len
        # "x + mtu >= msg_len" (the packet at x is the last) is "x >= msg_len - mtu", one
        # carry chain on a register set at the start (an adder then a comparison were two)
        def last_at(x):
            return msg_short | ~_below(x, msg_m)
        cand_una = [una_new, Mux(progress, a.lsn + mtu, st.una + mtu),
                    Mux(progress, last_at(a.lsn), last_at(st.una))]
        cand_sent = [sent_len, Mux(is_last, msg + mtu, nxt_mtu + mtu),
                     is_last | last_at(nxt_mtu)]
        cand_same = [st.nxt, nxt_mtu, is_last]
        cand_start = [0, mtu, mtu >= self.start.payload.length]
        # inflight' = nxt' - una', per candidate (0 after a start or a go-back)
        infl_sent = Mux(progress, sent_len - a.lsn, sent_len - st.una)[:W]
        infl_same = Mux(progress, st.nxt - a.lsn, inflight)[:W]
        back_s = goback | passed_s                       # (start_t excludes pkt_t)
        back_n = start_t | goback | passed_n

        def choose(i):
            back = Mux(start_t, cand_start[i], cand_una[i])
            return Mux(pkt_t, Mux(back_s, back, cand_sent[i]), Mux(back_n, back, cand_same[i]))
        m.d.sync += [
            st.nxt.eq(choose(0)), nxt_mtu.eq(choose(1)), is_last.eq(choose(2)),
            inflight.eq(Mux(pkt_t, Mux(back_s, 0, infl_sent), Mux(back_n, 0, infl_same))),
        ]

        with m.If(pkt_t & ~retx):
            m.d.sync += [st.snd_max.eq(sent_len),
                         st.new_cnt.eq(Mux(st.new_cnt == (1 << IW_WIDTH) - 1, st.new_cnt,
                                           st.new_cnt + 1))]
        rto_zero = ~counting | progress | rto_hit | (st.active & una_new_done) | start_t
        m.d.sync += [st.rto_cnt.eq(Mux(rto_zero, 0, st.rto_cnt + 1)),
                     rto_due.eq(Mux(rto_zero, ~rto_m1_nz,              # (a write: below)
                                    rto_m1_nz & (st.rto_cnt == rto_m2)))]
        with m.If(st.active & una_new_done):
            m.d.sync += [st.active.eq(0), st.done.eq(1), st.rto_cnt.eq(0)]
        with m.If(start_t):
            n = self.start.payload.length
            m.d.sync += [st.active.eq(n != 0), st.done.eq(n == 0),
                         st.stage.eq(LdcpTxStage.FAST), st.first_ack.eq(0), st.msg_len.eq(n),
                         st.una.eq(0), st.snd_max.eq(0), st.new_cnt.eq(0),
                         st.fs_acked.eq(0), st.rto_cnt.eq(0),
                         msg_m.eq(n - mtu), msg_short.eq(n <= mtu)]

        # ---- register writes (between messages) ------------------------------------------------
        bank.build(m, self.csr_w, self.csr_raddr, self.csr_rdata, idle=~st.active)
        wd = bank.wdata
        with m.If(bank.wstb["IW"]):
            m.d.sync += [iw_bytes.eq(wd[:IW_WIDTH] * mtu), iw_m.eq(wd[:IW_WIDTH] * mtu - mtu),
                         iw_pos.eq(wd[:IW_WIDTH] != 0)]
        with m.If(bank.wstb["RTO"]):
            # (only between messages: rto_cnt is 0, and stays 0 at this edge)
            m.d.sync += [rto_m1.eq(wd - 1), rto_m2.eq(wd - 2),
                         rto_m1_nz.eq((wd - 1)[:RTO_WIDTH] != 0),
                         rto_due.eq((wd - 1)[:RTO_WIDTH] == 0)]

        # ---- the offer's flags, for the next state (see above) ------------------------------
        # Per candidate: after a start or a go-back, nxt' = una' (inflight' = 0); sent (not the
        # last packet), nxt' = nxt + mtu; not sent, nxt' = nxt; una' = a.lsn on progress, else
        # una.  Every comparison is a carry chain on registers and the ACK, in parallel; the
        # window's is one chain with its sum: x < ceil(S / 2**16) <=> x * 2**16 < S.
        lsn = a.lsn
        snd = st.snd_max

        def flag(v_start, v_back, v_sent_p, v_sent_n, v_same_p, v_same_n):
            back = Mux(start_t, v_start, v_back)
            return Mux(pkt_t, Mux(back_s, back, Mux(progress, v_sent_p, v_sent_n)),
                       Mux(back_n, back, Mux(progress, v_same_p, v_same_n)))

        nw = W + 2                                      # nxt - lsn < iw_bytes
        fs_nz = Mux(bank.wstb["IW"], wd[:IW_WIDTH] != 0, iw_pos)     # 0 < iw_bytes'
        fs_next = flag(fs_nz, fs_nz,
                       _sum_lt(nw, [nxt_mtu], [lsn], [iw_bytes]),
                       iw_pos & _below(inflight, iw_m),              # inflight + mtu < iw_bytes
                       _sum_lt(nw, [st.nxt], [lsn], [iw_bytes]),
                       _below(inflight, iw_bytes))
        gl, gh = eng.gate_lo, eng.gate_hi
        # x * 2**16 < gl + gh * 2**18 (that sum is cw * mtu < 2**46)
        sw = max(W + FRAC_BITS, CW_WIDTH + MTU_WIDTH) + 3
        win_s = [gl, Cat(C(0, 18), gh)]
        win_nz = (gl != 0) | (gh != 0)                  # 0 < S
        win_next = flag(win_nz, win_nz,
                        _sum_lt(sw, [Cat(C(0, FRAC_BITS), nxt_mtu)],
                                [Cat(C(0, FRAC_BITS), lsn)], win_s),
                        _sum_lt(sw, [Cat(C(0, FRAC_BITS), inflight), mtu << FRAC_BITS], [],
                                win_s),
                        _sum_lt(sw, [Cat(C(0, FRAC_BITS), st.nxt)],
                                [Cat(C(0, FRAC_BITS), lsn)], win_s),
                        _sum_lt(sw, [Cat(C(0, FRAC_BITS), inflight)], [], win_s))
        # more: una' < msg_len after a go-back; nxt + mtu < msg_len is "not the last"
        una_lt_msg = Mux(progress, _below(lsn, msg), _below(st.una, msg))
        more_next = flag(self.start.payload.length != 0, una_lt_msg, ~is_last, ~is_last,
                         more, more)
        # retx: snd_max' = sent_len when a new packet is sent (not retx), else snd_max
        una_lt_snd = Mux(progress, _below(lsn, snd), _below(st.una, snd))
        una_lt_sent = Mux(progress, _below(lsn, sent_len), _below(st.una, sent_len))
        sent_lt_snd = retx & Mux(is_last, _below(msg, snd), _below(nxt_mtu, snd))
        back_retx = Mux(pkt_t, Mux(retx, una_lt_snd, una_lt_sent), una_lt_snd)
        retx_next = flag(0, back_retx, sent_lt_snd, sent_lt_snd, retx, retx)
        m.d.sync += [fs_ok.eq(fs_next), win_ok.eq(win_next), more.eq(more_next),
                     retx.eq(retx_next)]
        return m


class LdcpReceiver(wiring.Component):
    """The LDCP receiver of one flow: in-order acceptance by expected LSN, ACKs with the CE
    echo (per packet with ``m = 1``, else delayed up to ``m`` unmarked packets, flushed by a
    CE mark, the last packet of the message or the flush timer), one NAK per gap, duplicate
    ACKs for duplicates; out-of-order packets are dropped (go-back-N).

    Parameters
    ----------
    config : LdcpTransportConfig
        LSN width, MTU, ``m`` (``config.window.m``) and the flush time ``ack_delay`` (constants).

    Ports
    -----
    data : In(stream(ldcp_rx_packet_layout))
        Data packets.  Ready when the ACK output register is free or being taken, and no second
        ACK is held.
    ack : Out(stream(ldcp_tack_layout))
        ACKs/NAKs (registers; the LSN through one 2:1 multiplexer: the expected LSN register or
        a copy taken when they differ).  A CE-marked packet with delayed packets pending
        produces two (the pending ones, then its ECE ACK); the second waits in a hold register
        and ``data`` is not ready meanwhile.
    deliver_valid : Out(1), deliver : Out(ldcp_rx_deliver_layout)
        The bytes accepted in order at the last edge (to the application).
    clear : In(1)
        A new message: expected LSN 0, nothing pending (a packet taken in the same cycle is
        dropped).
    state : Out(ldcp_rx_state_layout)
        Expected LSN, pending packets, NAK sent, flush-timer age, malformed-packet pulse
        (registers; ``age`` through an AND with "pending != 0", see :attr:`state_reg`).

    Latency and throughput
    ----------------------
    One packet per clock (two cycles for a CE flush with pending packets); its ACK is offered
    from the next cycle.  The packet -> state loop is one cycle: the LSN comparisons (two
    subtractions' borrows, carry chains) select among next values prepared in parallel
    (171.6 MHz on the ECP5-85 speed 6, ``docs/ldcp-transport.md``).
    """

    def __init__(self, config: LdcpTransportConfig):
        _check(config, "LdcpReceiver")
        self.config = config
        super().__init__({
            "data": In(stream.Signature(ldcp_rx_packet_layout(config))),
            "ack": Out(stream.Signature(ldcp_tack_layout(config))),
            "deliver_valid": Out(1),
            "deliver": Out(ldcp_rx_deliver_layout(config)),
            "clear": In(1),
            "state": Out(ldcp_rx_state_layout(config)),
        })
        #: the state registers behind ``state``; ``state.age`` shows ``state_reg.age`` while
        #: packets are pending and 0 otherwise (the register counts on from the edge after
        #: ``pending`` leaves 0, whatever the packet does).  Tests preset it here.
        self.state_reg = Signal(ldcp_rx_state_layout(config), name="state_reg")

    def elaborate(self, platform):
        m = Module()
        cfg = self.config
        W = cfg.lsn_width
        reset = cfg.registers()

        # the state registers; the state port shows them, except that the flush-timer age is
        # shown as 0 while nothing is pending: the register counts from the edge after
        # pending leaves 0 whatever the packet does, so that its update depends on no
        # decision of this cycle (no LSN comparison precedes it)
        st = self.state_reg
        m.d.comb += [self.state.eq(st), self.state.age.eq(Mux(st.pending != 0, st.age, 0))]
        hold_valid = Signal()
        hold_lsn = Signal(W)      # the held ACK is always (lsn, ECE, n = 1, not a NAK)
        out_lsn = Signal(W)
        use_exp = Signal()
        m.d.comb += self.ack.payload.lsn.eq(Mux(use_exp, st.expected, out_lsn))

        # ---- handshake conditions ---------------------------------------------------------
        slot_free = ~self.ack.valid | self.ack.ready
        ready = ~hold_valid & slot_free
        m.d.comb += self.data.ready.eq(ready)
        p = self.data.payload
        take = self.data.valid & ready
        process = take & ~self.clear
        malformed = ((p.length == 0) | (p.length > reset.mtu)
                     | ((p.lsn + p.length) > cfg.max_message))
        # the order of the packet's LSN and the expected one from the borrows of two
        # subtractions, i.e. two carry chains in parallel; in order is neither.  (Yosys maps a
        # 32-bit == or < to LUT trees, three or four levels: 145 against 172 MHz measured.)
        gap = (st.expected - p.lsn)[W]
        in_order = ~gap & ~(p.lsn - st.expected)[W]
        e2 = (st.expected + p.length)[:W]
        k1 = (st.pending + 1)[:cfg.n_width]
        pend_nz = st.pending != 0
        # "age >= ack_delay" as a flag register kept with the age register (which counts up by
        # one from 0), so that no 24-bit comparison precedes the next-state logic: it is set
        # at the edge where age passes ack_delay - 1 (ack_delay >= 1) and cleared with age
        age_due = Signal()
        flush_due = pend_nz & age_due

        # ---- the cases of rx_core ------------------------------------------------------------
        # Each register's next value is a choice among values prepared without the LSN
        # comparisons (the longest paths of the packet -> state loop): in order, gap,
        # duplicate (a valid packet: ok), or no packet.  The comparisons come last, as the
        # selects of one small multiplexer per bit.  k1 == m is compared as pending == m - 1,
        # without the adder.  Payloads are don't-care while their valid is 0.
        ok = process & ~malformed
        k1_m = st.pending == reset.m - 1
        ack_out = self.ack.valid & self.ack.ready
        flush = ~process & ready & flush_due            # flush timer

        def pick(v_io, v_gap, v_dup, v_none):
            return Mux(ok, Mux(in_order, v_io, Mux(gap, v_gap, v_dup)), v_none)

        io_ack = p.ce | k1_m | p.last                   # in order: an ACK now
        io_two = p.ce & pend_nz                         # CE flush: two ACKs
        keep_ack = Mux(ack_out, hold_valid, self.ack.valid)
        a = self.ack.payload
        m.d.sync += [
            self.ack.valid.eq(pick(io_ack, ~st.nak_sent, 1, flush | keep_ack)),
            use_exp.eq(pick(~io_two, 1, 1,
                            Mux(flush, ~self.clear,          # (a clear zeroes expected)
                                Mux(ack_out, ~hold_valid & use_exp, use_exp & ~self.clear)))),
            a.ece.eq(pick(p.ce & ~pend_nz, 0, 0, ~flush & (ack_out | a.ece))),
            a.n.eq(pick(Mux(p.ce, Mux(pend_nz, st.pending, 1), k1), st.pending, st.pending,
                        Mux(flush, st.pending, Mux(ack_out, 1, a.n)))),
            a.nak.eq(pick(0, 1, 0, ~flush & ~ack_out & a.nak)),
            # the second ACK of a CE flush (ECE, n = 1): the hold register
            hold_valid.eq(pick(io_two, 0, 0, hold_valid & ~ack_out)),
            self.deliver_valid.eq(pick(1, 0, 0, 0)),
            self.deliver.lsn.eq(p.lsn), self.deliver.length.eq(p.length),
            self.deliver.last.eq(p.last),
            st.ev_bad.eq(process & malformed),
            st.expected.eq(Mux(self.clear, 0, pick(e2, st.expected, st.expected, st.expected))),
            st.nak_sent.eq(pick(0, 1, st.nak_sent, st.nak_sent & ~self.clear)),
        ]
        with m.If(~hold_valid):
            m.d.sync += hold_lsn.eq(e2)
        # the ACK's LSN: out_lsn, or the expected LSN (after the edge) when use_exp.  The
        # ACKs of every case but the first of a CE flush carry the expected LSN as it is
        # after the edge, so out_lsn needs no decision of this cycle: it takes the expected
        # LSN whenever the output is free (the first ACK of a CE flush carries it), the held
        # LSN when the hold register moves in, and the expected LSN before a clear changes it
        with m.If(ready | (self.clear & use_exp & ~ack_out)):
            m.d.sync += out_lsn.eq(st.expected)
        with m.Elif(ack_out):
            m.d.sync += out_lsn.eq(hold_lsn)
        pend_next = pick(Mux(io_ack, 0, k1), Mux(st.nak_sent, st.pending, 0), 0,
                         Mux(flush | self.clear, 0, st.pending))
        # age: 0 at the edge that makes the first packet pending, then +1 per edge while
        # packets are pending (the state port shows 0 once none is: see above)
        age_max = (1 << ACK_DELAY_WIDTH) - 1
        m.d.sync += [
            st.pending.eq(pend_next),
            st.age.eq(Mux(~pend_nz, 0, Mux(st.age == age_max, age_max, st.age + 1))),
            age_due.eq(pend_nz & (age_due | (st.age == reset.ack_delay - 1))),
        ]
        return m
