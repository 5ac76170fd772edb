"""LDCP transport: the sender (zero-RTT fast start, LSN sliding window on the window engine,
go-back-N, retransmission timeout) and the receiver (expected LSN, per-packet or delayed ACK
with the CE echo, NAK on a gap), draft-dai-tsvwg-pfc-free-congestion-control-00 §2.3 and §3.

``docs/ldcp-transport.md`` has the state machines, the rules and the measured figures;
:mod:`sim.models.ldcp_transport` is the bit-exact golden model (its class docstrings give the
edge-by-edge rules these components implement).
"""

from __future__ import annotations

from amaranth.hdl import Module, Mux, Signal
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
        without a handshake (an ACK or a timeout changed the gate or the LSN).
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
        st = self.state                      # the state registers are the output port
        m.d.comb += [self.cw.eq(eng.cw), self.tick.eq(eng.tick), self.busy.eq(eng.busy)]

        # derived registers, kept equal to functions of the state so that no carry chain
        # follows another on the packet path: nxt + mtu, "the packet at nxt is the last", and
        # RTO - 1
        nxt_mtu = Signal(W, init=mtu)   # (wraps only where is_last holds and it is unused)
        is_last = Signal(init=1)
        rto_m1 = Signal(RTO_WIDTH, init=(reset.rto - 1) & ((1 << RTO_WIDTH) - 1))

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
        retx = st.nxt < st.snd_max
        if W > INFLIGHT_WIDTH:         # saturate: the gate's window is below 2**32 bytes
            m.d.comb += eng.inflight.eq(Mux(inflight[INFLIGHT_WIDTH:] != 0,
                                            (1 << INFLIGHT_WIDTH) - 1, inflight))
        else:
            m.d.comb += eng.inflight.eq(inflight)
        # (the fast-start window iw * mtu < 2**30 bytes: the saturated value compares the same)
        gate = Mux(fast, eng.inflight < iw_bytes,
                   ~st.load_pending & (st.settle == 0) & eng.may_send)
        ect = ~fast | st.first_ack | ((st.new_cnt + 1) == iw) | is_last
        m.d.comb += [
            self.pkt.valid.eq(st.active & (st.nxt < st.msg_len) & gate),
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
        in_range = a.lsn <= st.snd_max
        valid = ack_t & st.active & in_range
        bad = ack_t & st.active & ~in_range
        progress = valid & (a.lsn > st.una)
        una_new = Mux(progress, a.lsn, st.una)
        # comparisons with una_new, as parallel comparisons with both candidates
        una_new_ge_iw = Mux(progress, a.lsn >= iw_bytes, st.una >= iw_bytes)
        una_new_done = Mux(progress, a.lsn == st.msg_len, st.una == st.msg_len)
        fs_sum = st.fs_acked + a.n
        fs_new = Mux(fs_sum[IW_WIDTH:] != 0, (1 << IW_WIDTH) - 1, fs_sum)[:IW_WIDTH]
        counting = st.active & ~st.load_pending & (st.una < st.nxt)
        rto_hit = counting & ~progress & (st.rto_cnt == rto_m1)
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
        load_taken = eng.csr_w.valid & eng.csr_w.ready

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
        passed = progress & Mux(pkt_t, sent_len < a.lsn, st.nxt < a.lsn)
        # the next nxt is one of four candidates; each one's "+ mtu" and "is the last" are
        # computed in parallel from registers and inputs, then selected with it
        back_to = goback | passed
        msg = st.msg_len
        cand_una = [una_new, Mux(progress, a.lsn + mtu, st.una + mtu),
                    Mux(progress, a.lsn + mtu >= msg, st.una + mtu >= msg)]
        cand_sent = [sent_len, Mux(is_last, msg + mtu, nxt_mtu + mtu),
                     is_last | (nxt_mtu + mtu >= msg)]
        cand_same = [st.nxt, nxt_mtu, is_last]
        cand_start = [0, mtu, mtu >= self.start.payload.length]

        def take(cand):
            m.d.sync += [st.nxt.eq(cand[0]), nxt_mtu.eq(cand[1]), is_last.eq(cand[2])]
        with m.If(start_t):
            take(cand_start)
        with m.Elif(back_to):
            take(cand_una)
        with m.Elif(pkt_t):
            take(cand_sent)
        with m.Else():
            take(cand_same)
        # inflight' = nxt' - una', per candidate (0 after a start or a go-back)
        infl_sent = Mux(progress, sent_len - a.lsn, sent_len - st.una)[:W]
        infl_same = Mux(progress, st.nxt - a.lsn, inflight)[:W]
        with m.If(start_t | back_to):
            m.d.sync += inflight.eq(0)
        with m.Elif(pkt_t):
            m.d.sync += inflight.eq(infl_sent)
        with m.Else():
            m.d.sync += inflight.eq(infl_same)
        with m.If(pkt_t & ~retx):
            m.d.sync += [st.snd_max.eq(sent_len),
                         st.new_cnt.eq(Mux(st.new_cnt == (1 << IW_WIDTH) - 1, st.new_cnt,
                                           st.new_cnt + 1))]
        m.d.sync += st.rto_cnt.eq(Mux(~counting | progress | rto_hit, 0, st.rto_cnt + 1))
        with m.If(st.active & una_new_done):
            m.d.sync += [st.active.eq(0), st.done.eq(1), st.rto_cnt.eq(0)]
        with m.If(start_t):
            n = self.start.payload.length
            m.d.sync += [st.active.eq(n != 0), st.done.eq(n == 0),
                         st.stage.eq(LdcpTxStage.FAST), st.first_ack.eq(0), st.msg_len.eq(n),
                         st.una.eq(0), st.snd_max.eq(0), st.new_cnt.eq(0),
                         st.fs_acked.eq(0), st.rto_cnt.eq(0)]

        # ---- register writes (between messages) ------------------------------------------------
        bank.build(m, self.csr_w, self.csr_raddr, self.csr_rdata, idle=~st.active)
        wd = bank.wdata
        with m.If(bank.wstb["IW"]):
            m.d.sync += iw_bytes.eq(wd[:IW_WIDTH] * mtu)
        with m.If(bank.wstb["RTO"]):
            m.d.sync += rto_m1.eq(wd - 1)
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
        ACKs/NAKs (a register).  A CE-marked packet with delayed packets pending produces two
        (the pending ones, then its ECE ACK); the second waits in a hold register and ``data``
        is not ready meanwhile.
    deliver_valid : Out(1), deliver : Out(ldcp_rx_deliver_layout)
        The bytes accepted in order at the last edge (to the application).
    clear : In(1)
        A new message: expected LSN 0, nothing pending (a packet taken in the same cycle is
        dropped).
    state : Out(ldcp_rx_state_layout)
        Expected LSN, pending packets, NAK sent, flush-timer age, malformed-packet pulse.

    Latency and throughput
    ----------------------
    One packet per clock (two cycles for a CE flush with pending packets); its ACK is offered
    from the next cycle.
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

    def elaborate(self, platform):
        m = Module()
        cfg = self.config
        W = cfg.lsn_width
        reset = cfg.registers()
        tack = ldcp_tack_layout(cfg)

        st = self.state                      # the state registers are the output port
        hold_valid = Signal()
        hold = Signal(tack)

        # ---- handshake conditions ---------------------------------------------------------
        slot_free = ~self.ack.valid | self.ack.ready
        ready = ~hold_valid & slot_free
        m.d.comb += self.data.ready.eq(ready)
        p = self.data.payload
        take = self.data.valid & ready
        process = take & ~self.clear
        malformed = ((p.length == 0) | (p.length > reset.mtu)
                     | ((p.lsn + p.length) > cfg.max_message))
        in_order = p.lsn == st.expected
        gap = p.lsn > st.expected
        e2 = (st.expected + p.length)[:W]
        k1 = (st.pending + 1)[:cfg.n_width]
        flush_due = (st.pending != 0) & (st.age >= reset.ack_delay)

        def emit(lsn, ece, n, nak=0):
            return [self.ack.valid.eq(1), self.ack.payload.lsn.eq(lsn),
                    self.ack.payload.ece.eq(ece), self.ack.payload.n.eq(n),
                    self.ack.payload.nak.eq(nak)]

        # ---- synchronous updates ---------------------------------------------------------------
        with m.If(self.ack.valid & self.ack.ready):
            m.d.sync += [self.ack.valid.eq(hold_valid), self.ack.payload.eq(hold),
                         hold_valid.eq(0)]
        pend_n = Signal.like(st.pending)
        m.d.comb += pend_n.eq(st.pending)
        m.d.sync += [self.deliver_valid.eq(0), st.ev_bad.eq(0)]
        with m.If(process):
            with m.If(malformed):
                m.d.sync += st.ev_bad.eq(1)
            with m.Elif(in_order):
                m.d.sync += [st.expected.eq(e2), st.nak_sent.eq(0), self.deliver_valid.eq(1),
                             self.deliver.lsn.eq(p.lsn), self.deliver.length.eq(p.length),
                             self.deliver.last.eq(p.last)]
                with m.If(p.ce):
                    m.d.comb += pend_n.eq(0)
                    with m.If(st.pending != 0):
                        m.d.sync += emit(st.expected, 0, st.pending)
                        m.d.sync += [hold_valid.eq(1), hold.lsn.eq(e2), hold.ece.eq(1),
                                     hold.n.eq(1), hold.nak.eq(0)]
                    with m.Else():
                        m.d.sync += emit(e2, 1, 1)
                with m.Elif((k1 == reset.m) | p.last):
                    m.d.comb += pend_n.eq(0)
                    m.d.sync += emit(e2, 0, k1)
                with m.Else():
                    m.d.comb += pend_n.eq(k1)
            with m.Elif(gap):
                with m.If(~st.nak_sent):
                    m.d.comb += pend_n.eq(0)
                    m.d.sync += emit(st.expected, 0, st.pending, 1)
                    m.d.sync += st.nak_sent.eq(1)
            with m.Else():
                m.d.comb += pend_n.eq(0)
                m.d.sync += emit(st.expected, 0, st.pending)
        with m.Elif(ready & flush_due):
            m.d.comb += pend_n.eq(0)
            m.d.sync += emit(st.expected, 0, st.pending)
        age_max = (1 << ACK_DELAY_WIDTH) - 1
        m.d.sync += [
            st.pending.eq(pend_n),
            st.age.eq(Mux((st.pending == 0) | (pend_n == 0), 0,
                          Mux(st.age == age_max, age_max, st.age + 1))),
        ]
        with m.If(self.clear):
            m.d.sync += [st.expected.eq(0), st.pending.eq(0), st.nak_sent.eq(0), st.age.eq(0),
                         st.ev_bad.eq(0)]
        return m
