"""Formal properties of the LDCP transport (:mod:`hw.nic.ldcp_transport`): the sender's LSN
window and go-back-N, the receiver's in-order acceptance.

The harnesses speak of the blocks' ports only (the sender's ``state``, ``pkt``, ``inflight``
and ``cw`` outputs, the receiver's ``state`` and ``deliver``), with any inputs: messages of
any length, ACKs and NAKs with any packet-boundary LSN (in range or not), any count and flags,
any back-pressure, resets in any cycle.  No register writes on the sender (``csr_w`` idle):
IW, CW_BDP and RTO keep their reset values, which the window claim uses.
"""

from __future__ import annotations

from amaranth.hdl import Assert, Assume, Cover, Module, Mux, Signal
from amaranth.hdl._ast import AnySeq

from hw.layouts import LdcpTxStage
from hw.nic.ldcp_transport import LdcpReceiver, LdcpSender
from hw.nic.ldcp_transport_config import LdcpTransportConfig
from hw.nic.ldcp_window_config import CW_WIDTH, ONE, LdcpWindowConfig

from .runner import Property

__all__ = ["PROPERTIES", "TX_CONFIG"]

_WINDOW = LdcpWindowConfig(m=2, mtu=64)
#: 8-bit LSNs (messages up to 255 bytes: four packets), the smallest MTU (64 bytes), IW 2
#: packets, the window after the second fast-start exit 4 packets, an RTO of 8 cycles and a
#: delayed-ACK flush of 4 cycles (so that timeouts and flushes happen inside the bounds).
TX_CONFIG = LdcpTransportConfig(window=_WINDOW, iw=2, bdp=4,
                                rto_us=8 / _WINDOW.clk_hz * 1e6,
                                ack_delay_us=4 / _WINDOW.clk_hz * 1e6, lsn_width=8)

#: Sender bound: a message started, packets sent, a NAK or an RTO (8 cycles) exits fast start,
#: the window load and its settling (3 cycles), then the stable stage's gate and packets, and a
#: second go-back-N in the stable stage.  The last cover (an RTO in the stable stage) is at step
#: 10; 12 adds the gate's two-cycle pipeline after it (was 16: the steps beyond 12 took 20 to
#: 30 s each on a loaded machine, the cover steps all lie below 11).
TX_DEPTH = 12


def _any(m, port):
    m.d.comb += [port.valid.eq(AnySeq(1)),
                 port.payload.eq(AnySeq(len(port.payload.as_value())))]


def _sender():
    """Sender: (1) the LSNs stay ordered, ``una <= nxt <= snd_max <= msg_len`` while a
    message is active (bytes in flight ``nxt - una`` never negative, never past the message);
    (2) a packet is offered only inside the window: in fast start while the bytes in flight
    are below ``IW * MTU``, in the stable stage (window >= 1 packet, the window of two
    cycles earlier: the gate's pipeline) below ``ceil(cw * MTU)``: the next LSN is never at
    or beyond the cumulative ACK plus the window; (3) the offered packet is the one at
    ``nxt``: LSN ``nxt``, length ``min(MTU, msg_len - nxt)``, a retransmission exactly when
    ``nxt < snd_max``, last exactly when it ends the message; (4) go-back-N: after a NAK
    in range, or a retransmission timeout, the next LSN is the cumulative ACK."""
    def build():
        m = Module()
        cfg = TX_CONFIG
        reg = cfg.registers()
        mtu = reg.mtu
        m.submodules.dut = dut = LdcpSender(cfg)
        _any(m, dut.start)
        _any(m, dut.ack)
        m.d.comb += [dut.pkt.ready.eq(AnySeq(1)),
                     dut.csr_raddr.eq(AnySeq(len(dut.csr_raddr)))]
        st, pkt, a = dut.state, dut.pkt, dut.ack.payload
        stable = st.stage == LdcpTxStage.STABLE
        # the contract: a cumulative ACK (or NAK) acknowledges whole packets, its LSN is a
        # packet boundary (a multiple of the MTU, or the message's end), as the receiver's
        # are; out-of-range LSNs (above snd_max) are allowed (bad ACKs).  (Without it an ACK
        # in the middle of a packet lets a retransmission from there carry nxt past snd_max.)
        with m.If(dut.ack.valid):
            m.d.comb += Assume((a.lsn[:(mtu - 1).bit_length()] == 0) | (a.lsn == st.msg_len))

        # (1) ordered LSNs
        with m.If(st.active):
            m.d.comb += Assert((st.una <= st.nxt) & (st.nxt <= st.snd_max)
                               & (st.snd_max <= st.msg_len))
        m.d.comb += Assert(dut.inflight == (st.nxt - st.una)[:len(dut.inflight)])

        # (2) the window
        cw1 = Signal(CW_WIDTH, init=_WINDOW.registers().cw_init)
        cw2 = Signal(CW_WIDTH, init=_WINDOW.registers().cw_init)
        m.d.sync += [cw1.eq(dut.cw), cw2.eq(cw1)]
        with m.If(pkt.valid & ~stable):
            m.d.comb += Assert(dut.inflight < reg.iw_bytes)
        with m.If(pkt.valid & stable & (cw2 >= ONE)):
            m.d.comb += Assert((dut.inflight << 16) < cw2 * mtu)

        # (3) the packet at nxt
        rest = (st.msg_len - st.nxt)[:cfg.lsn_width]
        with m.If(pkt.valid):
            m.d.comb += [
                Assert(st.active & (pkt.payload.lsn == st.nxt) & (st.nxt < st.msg_len)),
                Assert(pkt.payload.length == Mux(rest < mtu, rest, mtu)),
                Assert(pkt.payload.retx == (st.nxt < st.snd_max)),
                Assert(pkt.payload.last == (rest <= mtu)),
            ]

        # (4) go-back-N
        nak_in = (dut.ack.valid & dut.ack.ready & st.active & a.nak
                  & (a.lsn <= st.snd_max))
        went_back = Signal()
        m.d.sync += went_back.eq(nak_in)
        with m.If((went_back | st.ev_rto) & st.active):
            m.d.comb += Assert(st.nxt == st.una)
        # a go-back-N that rewinds: nxt was ahead of the NAK's LSN
        rewinds = Signal()
        m.d.sync += rewinds.eq(nak_in & (st.nxt > a.lsn))

        m.d.comb += [
            Cover(pkt.valid & ~stable & (dut.inflight + mtu == reg.iw_bytes)),
            Cover(pkt.valid & stable & (cw2 >= ONE) & (dut.inflight >= mtu)),
            Cover(pkt.valid & pkt.payload.retx),
            Cover(pkt.valid & pkt.payload.last & (pkt.payload.length < mtu)),
            Cover(rewinds & stable),
            Cover(st.ev_rto & stable),
            Cover(st.done),
        ]
        return m
    return build


def _receiver():
    """Receiver: the expected LSN only moves forward, and only by an in-order packet: when it
    changes (no ``clear``), the packet taken at that edge started at the old expected LSN, was
    well formed, and the new value is its end; every in-order delivery is exactly such a
    change.  Proven for every state (k-induction)."""
    def build():
        m = Module()
        cfg = TX_CONFIG
        mtu = cfg.registers().mtu
        m.submodules.dut = dut = LdcpReceiver(cfg)
        _any(m, dut.data)
        m.d.comb += [dut.ack.ready.eq(AnySeq(1)), dut.clear.eq(AnySeq(1))]
        st, p = dut.state, dut.data.payload
        W = cfg.lsn_width
        prev_exp = Signal(W)
        prev_clear = Signal(init=1)           # reset counts as a clear
        prev_take = Signal()
        prev_lsn, prev_len = Signal(W), Signal(cfg.len_width)
        prev_ok = Signal()
        take = dut.data.valid & dut.data.ready
        m.d.sync += [
            prev_exp.eq(st.expected), prev_clear.eq(dut.clear), prev_take.eq(take),
            prev_lsn.eq(p.lsn), prev_len.eq(p.length),
            prev_ok.eq((p.length != 0) & (p.length <= mtu)
                       & (p.lsn + p.length <= cfg.max_message)),
        ]
        advanced = st.expected != prev_exp
        with m.If(~prev_clear):
            m.d.comb += Assert(st.expected >= prev_exp)
            with m.If(advanced):
                m.d.comb += Assert(prev_take & prev_ok & (prev_lsn == prev_exp)
                                   & (st.expected == prev_lsn + prev_len))
            m.d.comb += Assert(dut.deliver_valid == advanced)
            with m.If(dut.deliver_valid):
                m.d.comb += Assert((dut.deliver.lsn == prev_exp)
                                   & (dut.deliver.length == prev_len))
        m.d.comb += [
            Cover(~prev_clear & advanced & (prev_len == mtu)),
            Cover(~prev_clear & prev_take & ~advanced & (prev_lsn > prev_exp)),  # a gap
            Cover(~prev_clear & advanced & (st.expected == cfg.max_message)),
        ]
        return m
    return build


PROPERTIES = [
    Property("ldcp_transport.sender", "LDCP sender: una <= nxt <= snd_max <= msg_len; a "
             "packet only inside the window (fast start: inflight < IW*MTU; stable, cw >= 1: "
             "inflight < ceil(cw*MTU)); the packet at nxt; go-back-N rewinds to the "
             "cumulative ACK", _sender(), mode="bmc", depth=TX_DEPTH, cover_depth=TX_DEPTH,
             timeout=500),
    Property("ldcp_transport.receiver", "LDCP receiver: the expected LSN only grows, and only "
             "by a well-formed in-order packet (to its end); deliveries are exactly those",
             _receiver(), mode="prove", depth=2, cover_depth=8, quick=True),
]
