"""The multi-flow LDCP sender (hw/nic/ldcp_tx_engine.py) and receiver (hw/nic/ldcp_rx_engine.py)
on the multi-flow engine.

- Directed, on the datapath models, expected values derived by hand from the rules
  (docs/ldcp-transport.md, "Many flows"): a message through fast start and exit 2, go-back-N
  after a NAK (exit 1 in fast start, the window kept in the stable stage), the timeout applied
  as of its deadline (late pop: the state is that of the deadline), the sub-one release
  credit, the receiver's delayed ACK every m packets, its flush timer, one NAK per gap.
- The datapaths alone (RTL) against the models, one random vector per clock.
- Inside the engine (Amaranth simulation, every output every cycle against the engine model):
  the same flow every cycle, and a seeded random run over a 1024-flow table (``CC_LONG=1``:
  every flow, until the engine has issued 10^5 events; ``CC_LDCP_TX_EVENTS=n``: n; the seed
  is ``CC_SEED``, printed).
"""

from __future__ import annotations

import os
import random
import time

import pytest

from hw.layouts import LdcpTxStage
from hw.nic.flow_datapath import CtlOp, EventKind
from hw.nic.flow_engine_config import FlowEngineConfig
from hw.nic.ldcp_transport_config import LdcpTransportConfig
from hw.nic.ldcp_tx_engine import OFFER_FLAGS, LdcpTxDatapath, LdcpTxEngineConfig
from hw.nic.ldcp_window_config import ONE, LdcpWindowConfig
from hw.params import ConfigError
from sim.models.ldcp_engine import LdcpTxDatapathModel, pack_wr, unpack_wr
from tests import ldcp_engine_harness as harness
from tests.test_flow_engine import SEED

LONG = os.environ.get("CC_LONG", "0") == "1"
MTU = 1000
RTT = 200


def tx_config(n_flows=16, time_width=16, horizon=4096, slots=8192, m=4, iw=4, bdp=6.0,
              rto_cycles=600, lsn_width=32, mtu=MTU, **kw) -> LdcpTxEngineConfig:
    win = LdcpWindowConfig(alpha=1.0, beta=0.5, gamma=0.125, m=m, cw_max=16.0, cw_init=2.0,
                           rtt_us=harness.us(RTT), mtu=mtu, **kw)
    tr = LdcpTransportConfig(window=win, iw=iw, bdp=bdp, rto_us=harness.us(rto_cycles),
                             lsn_width=lsn_width)
    return LdcpTxEngineConfig(engine=harness.flow_engine(n_flows, time_width, horizon, slots, 34),
                              transport=tr)


def ack_payload(lw, nw, lsn, n=1, ece=0, nak=0):
    """An ACK/NAK event's ``cn`` payload ``{lsn, ece, n, nak}`` (LSN ``lw`` bits, ``n``
    ``nw`` bits)."""
    return lsn | ece << lw | n << (lw + 1) | nak << (lw + 1 + nw)


class Tx(harness.ModelDriver):
    """The sender's datapath model with its registers; events as methods."""

    DATAPATH, MODEL = LdcpTxDatapath, LdcpTxDatapathModel

    def __init__(self, cfg=None, **regs):
        super().__init__(cfg or tx_config(), **regs)
        self.lw = self.cfg.transport.lsn_width
        self.nw = self.cfg.transport.n_width

    def start(self, t, length):
        return self._do(EventKind.TX, length | 1 << self.lw, t)

    def sent(self, t, lsn):
        return self._do(EventKind.TX, lsn, t)

    def ack(self, t, lsn, n=1, ece=0, nak=0):
        return self._do(EventKind.CN, ack_payload(self.lw, self.nw, lsn, n, ece, nak), t)

    def pop(self, t):
        return self._do(EventKind.TIMER, None, t)

    @property
    def offer(self):
        return self.m.offer_fields(self.s["offer"])

    @property
    def cw(self):
        return unpack_wr(self.s["wr"])[0]

    def send_all(self, t):
        """Take every packet the gate allows at t, t + 1, ...; returns their LSNs."""
        out = []
        while self.offer["elig"]:
            lsn = self.offer["nxt"]
            self.sent(t, lsn)
            out.append(lsn)
            t += 1
        return out


def test_config_errors():
    with pytest.raises(ConfigError, match="div_steps"):
        LdcpTxEngineConfig(div_steps=9)
    with pytest.raises(ConfigError, match="out_fifo_depth"):
        LdcpTxEngineConfig(engine=FlowEngineConfig(out_fifo_depth=20))
    with pytest.raises(ConfigError, match="rto"):
        tx_config(rto_cycles=20000)           # 2**14 cycles at W = 16
    with pytest.raises(ConfigError, match="transport"):
        LdcpTxEngineConfig(transport=None)
    # L = the window part's 14 + ceil((W - 3) / steps) plus the sender's two cycles
    assert LdcpTxEngineConfig().latency == 28
    assert tx_config().latency == 23
    # the timeout register's bound, both sides: 2**(W - 2) - 1 cycles at W = 16 is taken
    # whole (the register is W - 2 = 14 bits), 2**14 is refused
    assert tx_config(rto_cycles=2**14 - 1).transport.registers().rto == 2**14 - 1
    assert dict((n, w) for n, w, _ in LdcpTxDatapath(tx_config()).regs)["rto"] == 14
    with pytest.raises(ConfigError, match="16383 cycles"):
        tx_config(rto_cycles=2**14)
    # the tx event's payload is {value (lsn_width bits), start} (docs/ldcp-transport.md)
    assert LdcpTxDatapath(tx_config(lsn_width=20)).tx_bytes_width == 21


# -- directed, on the sender's model (hand-derived) --------------------------------------------

def test_fast_start_exit2_then_window():
    """IW = 4 packets of 1000 bytes, a 6000-byte message: 4 packets back to back (Not-ECT but
    the 4th, the IW-th), then nothing (4000 in flight = IW x MTU); each ACK opens one; the
    ACK of 4000 bytes (= IW x MTU) is exit 2: stable stage, cw = BDP = 6 packets, all ECT."""
    d = Tx()
    d.start(10, 6000)
    assert d.offer == {"nxt": 0, "elig": 1, "ect": 0, "retx": 0, "last": 0, "act": 1}
    assert d.send_all(11) == [0, 1000, 2000, 3000]
    assert d.offer["nxt"] == 4000 and not d.offer["elig"]
    # the 4th packet was the IW-th: ECT (checked on the way: ECT of the offer at nxt = 3000)
    d2 = Tx()
    d2.start(0, 6000)
    for lsn in (0, 1000, 2000):
        d2.sent(1, lsn)
    assert d2.offer["ect"] == 1
    # the timeout is armed at the first send (t = 11): deadline 11 + 600
    assert d.s["rto_on"] == 1 and d.s["rto_dl"] == 611
    d.ack(100, 1000, n=1)
    assert d.s["stage"] == LdcpTxStage.FAST.value and d.s["first_ack"] == 1
    assert d.s["rto_dl"] == 700                                 # restarted on progress
    assert d.offer["elig"] and d.offer["ect"]                  # after the first ACK: ECT
    d.sent(101, 4000)
    d.ack(200, 4000, n=3)                                       # una = 4000 = IW x MTU
    assert d.s["stage"] == LdcpTxStage.STABLE.value and d.cw == 6 * ONE
    # stable: the window gate, in flight 1000 < 6 x 1000
    assert d.offer == {"nxt": 5000, "elig": 1, "ect": 1, "retx": 0, "last": 1, "act": 1}
    d.sent(201, 5000)
    assert not d.offer["elig"] and d.offer["nxt"] == 6000
    d.ack(300, 5000, n=1)                                       # + alpha / cw = 1/6
    assert d.cw == 6 * ONE + (ONE // 6)
    d.ack(301, 6000, n=1)
    assert d.offer["act"] == 0 and d.s["rto_on"] == 0 and d.last.wake is None


def test_nak_in_fast_start_goes_back_n_exit1():
    """4 packets sent; the receiver got the first and NAKs at 1000 (n = 1): exit 1 with
    fs_acked = 1 packet (cw = 1), go back to 1000: the offer is 1000, a retransmission, ECT;
    the window gate (in flight 0 < 1 x 1000) opens; after one more packet it closes."""
    d = Tx()
    d.start(0, 8000)
    assert d.send_all(1) == [0, 1000, 2000, 3000]
    d.ack(50, 1000, n=1, nak=1)
    assert d.s["stage"] == LdcpTxStage.STABLE.value and d.cw == ONE
    assert d.s["una"] == 1000 and d.s["snd_max"] == 4000
    assert d.offer == {"nxt": 1000, "elig": 1, "ect": 1, "retx": 1, "last": 0, "act": 1}
    assert d.s["rto_on"] == 0                   # nothing in flight after the go-back
    d.sent(51, 1000)
    assert d.s["rto_on"] == 1 and d.s["rto_dl"] == 51 + 600
    assert not d.offer["elig"]                  # 1000 in flight = 1 x 1000
    # a second NAK in the stable stage: go back again, the window untouched by the NAK (n = 0)
    d.ack(60, 1000, n=0, nak=1)
    assert d.cw == ONE and d.offer["nxt"] == 1000 and d.offer["elig"]


def test_rto_applied_as_of_its_deadline():
    """Stable stage at cw = 3, 3 packets in flight sent at t = 5: the timeout's deadline is
    605.  The pop comes late, at 640: the go-back and the window min(cw, 1) = 1 are applied,
    the lateness is 35, and nothing in flight leaves the timeout off.  A second flow whose
    sub-one release falls due with the timeout gets both (they commute)."""
    d = Tx()
    d.start(0, 20000)
    d.s = dict(d.s, stage=LdcpTxStage.STABLE.value, wr=pack_wr(3 * ONE, 0))
    d.ack(1, 0, n=0)                        # (re-evaluates the offer in the stable stage)
    assert d.send_all(5) == [0, 1000, 2000]
    assert d.s["rto_dl"] == 605 and d.last.wake == 605
    o = d.pop(604)
    assert not o.expired and d.offer["nxt"] == 3000
    o = d.pop(640)
    assert o.expired and o.late == 35
    assert d.cw == ONE and d.offer["nxt"] == 0 and d.offer["retx"] and d.offer["elig"]
    assert d.s["rto_on"] == 0 and o.wake is None
    # sub-one window with a release and the timeout both due: one credit, the window kept
    e = Tx()
    e.start(0, 20000)
    e.s = dict(e.s, stage=LdcpTxStage.STABLE.value, wr=pack_wr(ONE // 2, 0), credit=1)
    e.ack(1, 0, n=0)                        # arms the release: 200 / 0.5 = 400 cycles
    assert e.s["on"] == 1 and e.s["dl"] == 401 and e.offer["elig"]
    e.sent(2, 0)
    assert e.s["credit"] == 0 and not e.offer["elig"] and e.s["rto_dl"] == 602
    e.ack(3, 0, n=0)
    assert e.last.wake == 401                # the earlier of the two deadlines
    o = e.pop(401)
    assert o.expired and o.late == 0 and e.offer["elig"] and unpack_wr(e.s["wr"])[1] == 1
    assert e.s["dl"] == 801 and e.last.wake == 602
    o = e.pop(900)                            # the timeout (602) and the release (801)
    assert o.expired and o.late == 298        # as of the earlier deadline
    assert e.cw == ONE // 2 and e.offer["nxt"] == 0 and unpack_wr(e.s["wr"])[1] == 2
    assert e.s["dl"] == 1201 and e.s["credit"] == 1
    # the release earlier than the timeout, both due: lateness from the release's deadline
    e.sent(1000, 0)
    assert e.s["rto_dl"] == 1600 and e.s["credit"] == 0
    o = e.pop(1700)
    assert o.expired and o.late == 1700 - 1201
    # a window of one packet or more takes the credit away: 0.5 + 4 gamma = 1.0
    assert e.s["credit"] == 1
    e.ack(1701, 1000, n=4)
    assert e.cw == ONE and e.s["credit"] == 0 and e.s["on"] == 0


def test_rto_in_fast_start_is_exit1():
    """Fast start, 2 packets sent at t = 0 and 1 (IW 4, message 2000 bytes), no ACK: the
    timeout at 0 + 600 is exit 1 with nothing acknowledged: the window is clamped to gamma
    (1/8), go back to 0; the release timer starts a full period, 200 / (1/8) = 1600 cycles,
    from the update (the pop at 600): deadline 2200."""
    d = Tx()
    d.start(0, 2000)
    assert d.send_all(0) == [0, 1000]
    assert d.s["rto_dl"] == 600
    o = d.pop(600)
    assert o.expired and o.late == 0
    assert d.s["stage"] == LdcpTxStage.STABLE.value and d.cw == ONE // 8
    assert d.offer["nxt"] == 0 and not d.offer["elig"]        # sub-one: no credit yet
    assert d.s["on"] == 1 and d.s["dl"] == 2200 and o.wake == 2200
    d.pop(2200)
    assert d.offer["elig"] and d.offer["retx"]


def test_stale_sent_is_ignored_and_late_ack_skips():
    d = Tx()
    d.start(0, 4000)
    d.send_all(0)
    d.ack(10, 1000, n=1, nak=1)                       # back to 1000
    before = dict(d.s)
    d.sent(11, 3000)                                  # the scheduler's stale offer
    assert d.s == before
    # a late cumulative ACK beyond nxt (of packets sent before the go-back): skipped
    d.ack(12, 3000, n=2)
    assert d.offer["nxt"] == 3000 and d.s["una"] == 3000
    # an ACK beyond snd_max is ignored
    d.ack(13, 4001, n=1)
    assert d.s["una"] == 3000


def test_same_start_while_active_ignored_and_zero_length():
    d = Tx()
    d.start(0, 3000)
    s = dict(d.s)
    d.start(1, 9000)
    assert d.s == s
    e = Tx()
    e.start(0, 0)
    assert e.offer["act"] == 0 and not e.offer["elig"]


# -- the sender's datapath alone (RTL) against its model -----------------------------------------

def _tx_vectors(cfg, rng, count, iw=4):
    """Random consistent sender states (una <= nxt <= snd_max <= msg_len) in either stage,
    windows above and below one packet, timers due or not, and events around them: ACKs at,
    below, between and beyond the LSNs (NAKs, ECN-Echo, n = 0), sent packets at nxt or stale,
    starts, pops."""
    W, LW = cfg.engine.time_width, cfg.transport.lsn_width
    wmask = (1 << W) - 1
    nw = cfg.transport.n_width
    out = []
    for _ in range(count):
        t = rng.randrange(1 << W)
        msg = rng.choice([rng.randrange(1, 20000), rng.randrange(1, 1 << LW), 1000, 4000])
        snd_max = rng.choice([0, msg, rng.randrange(msg + 1)])
        una = rng.choice([0, snd_max, rng.randrange(snd_max + 1)])
        nxt = rng.choice([una, snd_max, rng.randrange(una, snd_max + 1)])
        stage = rng.randrange(2)
        cw = rng.choice([rng.randrange(1, ONE), rng.randrange(ONE, 20 * ONE), ONE, ONE - 1,
                         rng.randrange(ONE // 8, ONE)])
        on = int(stage == 1 and cw < ONE and rng.random() < 0.9)
        act = int(rng.random() < 0.9)
        flags = {"elig": rng.randrange(2), "ect": rng.randrange(2), "retx": rng.randrange(2),
                 "last": rng.randrange(2), "act": act}
        offer = nxt
        for i, name in enumerate(OFFER_FLAGS):
            offer |= flags[name] << (LW + i)
        if rng.random() < 0.25:
            # the gates' boundaries: in flight IW x MTU - 1, = , + 1 (fast start), and the
            # window's floor(cw x MTU / 2**16) (the gate rounds up)
            msg = snd_max = 1 << 20
            una = rng.randrange(0, 1 << 19)
            edge = iw * MTU if stage == 0 else (cw * MTU) >> 16
            nxt = min(una + edge + rng.choice([-1, 0, 0, 1]), snd_max)
            offer = nxt | act << (LW + OFFER_FLAGS.index("act"))
        rto_on = int(act and una < nxt and rng.random() < 0.9)
        state = {"wr": pack_wr(cw, rng.randrange(256)), "on": on,
                 "dl": (t + rng.randrange(-50, 3000)) & wmask,
                 "ovr": rng.randrange(max(1, cw & (ONE - 1))) if cw < ONE else 0,
                 "offer": offer, "una": una, "snd_max": snd_max, "msg_len": msg,
                 "stage": stage, "first_ack": rng.randrange(2), "credit": rng.randrange(2),
                 "new_cnt": rng.choice([0, 2, 3, 0xFFFF, rng.randrange(1 << 16)]),
                 "fs_acked": rng.choice([0, 1, 5, 0xFFFE, rng.randrange(1 << 16)]),
                 "rto_on": rto_on, "rto_dl": (t + rng.randrange(-50, 900)) & wmask}
        k = rng.random()
        if k < 0.45:
            lsn = rng.choice([una, nxt, snd_max, snd_max + 1, rng.randrange(snd_max + 2),
                              min(una + 1000, snd_max)]) & ((1 << LW) - 1)
            n = rng.randrange(1 << nw)
            payload = ack_payload(LW, nw, lsn, n, ece=rng.randrange(2),
                                  nak=int(rng.random() < 0.25))
            out.append((state, EventKind.CN, payload, t))
        elif k < 0.75:
            lsn = nxt if rng.random() < 0.7 else rng.randrange(msg + 1)
            out.append((state, EventKind.TX, lsn, t))
        elif k < 0.82:
            length = rng.choice([0, 1, 999, 1000, 1001, rng.randrange(1 << LW)])
            out.append((state, EventKind.TX, length | 1 << LW, t))
        else:
            out.append((state, EventKind.TIMER, None, t))
    return out


@pytest.mark.parametrize("which", ["small", "top"])
def test_rtl_tx_datapath_vectors(which):
    """The sender's datapath alone, one random vector per clock for 300 clocks (W = 16,
    L = 23; the top's build, W = 26, L = 28), random registers: its outputs L - 1 cycles
    later equal the model's."""
    cfg = tx_config() if which == "small" else LdcpTxEngineConfig()
    dp = LdcpTxDatapath(cfg)
    model = LdcpTxDatapathModel(dp)
    rng = random.Random(f"{SEED}-tx-vectors-{which}")
    regs = model.regs_reset()
    regs.update(iw=rng.randrange(1, 8), rto=rng.randrange(1, 2000), rtt=rng.randrange(50, 400))
    vectors = _tx_vectors(cfg, rng, 300, regs["iw"])
    harness.check_vectors(dp, model, regs, vectors)
    kinds = {}
    for _, kind, _, _ in vectors:
        kinds[kind] = kinds.get(kind, 0) + 1
    print(f"seed {SEED}: {len(vectors)} vectors, L = {dp.latency}, {kinds}")


def test_rtl_tx_boundaries():
    """The boundaries random vectors rarely reach, on the RTL against the model, with the
    expected values worked by hand: an ACK of exactly IW x MTU in fast start (exit 2, also
    as a duplicate at una = IW x MTU) and one byte short (no exit); a message of 1 byte and
    of 0 bytes started on an idle flow (active / not); the timeout register at 0 (a restart
    arms now + 1, the register's 0 meaning 1); the window gate's rounding up with an odd MTU
    (cw x 1001 = 1018 x 2**16 + 1: the gate is 1019 bytes, so 1018 in flight may send and
    1019 may not)."""
    cfg = tx_config()
    LW, nw = cfg.transport.lsn_width, cfg.transport.n_width
    act_bit = 1 << (LW + OFFER_FLAGS.index("act"))

    def st(**kw):
        s = {"wr": pack_wr(2 * ONE, 0), "on": 0, "dl": 0, "ovr": 0, "offer": act_bit, "una": 0,
             "snd_max": 0, "msg_len": 6000, "stage": LdcpTxStage.FAST.value, "first_ack": 1,
             "credit": 0, "new_cnt": 0, "fs_acked": 0, "rto_on": 0, "rto_dl": 0}
        s.update(kw)
        return s

    def run(cfg, regs_upd, vectors):
        dp = LdcpTxDatapath(cfg)
        model = LdcpTxDatapathModel(dp)
        regs = dict(model.regs_reset(), **regs_upd)
        return model, harness.check_vectors(dp, model, regs, vectors)

    def ack(lsn):
        return ack_payload(LW, nw, lsn)             # n = 1, no ECE, no NAK
    t = 100
    fast, stable = LdcpTxStage.FAST.value, LdcpTxStage.STABLE.value
    assert cfg.transport.iw * MTU == 4000
    vectors = [
        (st(offer=4000 | act_bit, una=3000, snd_max=4000), EventKind.CN, ack(4000), t),
        (st(offer=4000 | act_bit, una=3000, snd_max=4000), EventKind.CN, ack(3999), t),
        (st(offer=4000 | act_bit, una=4000, snd_max=4000), EventKind.CN, ack(4000), t),
        (st(offer=0, msg_len=0), EventKind.TX, 1 | 1 << LW, t),
        (st(offer=0, msg_len=0), EventKind.TX, 0 | 1 << LW, t),
    ]
    model, outs = run(cfg, {}, vectors)
    assert [o.next_state["stage"] for o in outs[:3]] == [stable, fast, stable]
    assert [model.offer_fields(o.next_state["offer"])["act"] for o in outs[3:]] == [1, 0]
    # rto = 0: the first send (una 0 < nxt 1000) arms the timeout at t + 1
    _, outs = run(cfg, {"rto": 0}, [(st(), EventKind.TX, 0, t)])
    assert outs[0].next_state["rto_on"] == 1 and outs[0].next_state["rto_dl"] == t + 1
    # the gate's rounding: an odd MTU, cw = 66649 (1.017 packets), a pop with nothing due
    cw = 66649
    assert cw * 1001 == 1018 * 2**16 + 1
    vectors = [(st(wr=pack_wr(cw, 0), stage=stable, offer=infl | act_bit, snd_max=infl,
                   msg_len=100000, rto_on=1, rto_dl=5000), EventKind.TIMER, None, t)
               for infl in (1018, 1019)]
    model, outs = run(tx_config(mtu=1001), {}, vectors)
    assert [model.offer_fields(o.next_state["offer"])["elig"] for o in outs] == [1, 0]


# -- inside the engine: RTL against the engine model, every output every cycle -------------------

def _tx_engine_events(h, rng, flows, n, hot, nw, lw, p_hot=0.3, scale=1):
    """``n`` random events for ``flows`` from the engine model's current state of each flow
    (so most are coherent: starts of idle flows, the packet at ``nxt``, ACKs between ``una``
    and ``snd_max``; some are stale by the time they issue, which the rules cover).
    ``scale``: the rewritten RTT and RTO are ``scale`` times longer (many flows: their timer
    events must stay well below one per clock, or the pops, first in the engine's priority,
    starve the inputs)."""
    m = h.model
    for _ in range(n):
        if rng.random() < 0.02:
            hot = rng.choice(flows)
        f = hot if rng.random() < p_hot else rng.choice(flows)
        st = m.flows[f].algo
        o = m.dpm.offer_fields(st["offer"])
        r = rng.random()
        if not o["act"]:
            if r < 0.8:
                length = rng.choice([rng.randrange(1, 12000), 1, 1000, 4000, 4001])
                h.queues["tx"].append((f, length | 1 << lw))
            else:
                h.queues["ctl"].append((f, CtlOp.READ, 0, 0))
        elif r < 0.45:
            lsn = o["nxt"] if rng.random() < 0.9 else rng.randrange(st["msg_len"] + 1)
            h.queues["tx"].append((f, lsn))
        elif r < 0.85:
            una, smax = st["una"], st["snd_max"]
            lsn = rng.choice([smax, una, rng.randrange(una, smax + 1),
                              min(smax, una + MTU), smax + 1])
            n = rng.randrange(1 << nw)
            payload = ack_payload(lw, nw, lsn, n, ece=int(rng.random() < 0.3),
                                  nak=int(rng.random() < 0.1))
            h.queues["cn"].append((f, payload))
        elif r < 0.95:
            h.queues["ctl"].append((f, CtlOp.READ, 0, 0))
        else:
            cw = rng.choice([rng.randrange(ONE // 8, ONE), rng.randrange(ONE, 8 * ONE)])
            h.queues["ctl"].append((f, CtlOp.WRITE, 0, cw))
        if rng.random() < 0.002:
            reg = rng.choice([(0, rng.randrange(1 << 12, 1 << 16)),     # alpha
                              (1, rng.randrange(1 << 12, 1 << 16)),     # beta
                              (4, rng.randrange(100, 400) * scale),     # rtt
                              (6, rng.randrange(1, 8)),                 # iw
                              (8, rng.randrange(100, 600) * scale)])    # rto
            h.queues["csr_w"].append(reg)
    return hot


def _tx_harness(n_flows=1024):
    cfg = tx_config(n_flows=n_flows, time_width=14, horizon=1024, slots=4096, rto_cycles=250)
    return cfg, harness.engine_harness(cfg, LdcpTxDatapath, LdcpTxDatapathModel)


def test_rtl_tx_same_flow_every_cycle():
    """One flow offered an event every cycle (sent packets and ACKs of its own, built from
    the model's state): the engine holds each next event for the update in flight (L cycles)
    and the RTL equals the model every cycle; the message completes."""
    cfg, h = _tx_harness(n_flows=16)
    lw = cfg.transport.lsn_width
    h.p_valid = {"tx": 1.0, "cn": 1.0, "ctl": 1.0, "csr_w": 1.0}

    async def body(ctx):
        await h.wait_ready(ctx)
        h.start_all([5])
        h.queues["tx"].append((5, 9000 | 1 << lw))
        await h.drain(ctx)
        for _ in range(3000):
            st = h.model.flows[5].algo
            o = h.model.dpm.offer_fields(st["offer"])
            if not o["act"]:
                break
            if not h.queues["tx"]:
                h.queues["tx"].append((5, o["nxt"]))
            if not h.queues["cn"] and st["snd_max"] > st["una"]:
                lsn = min(st["snd_max"], st["una"] + MTU)
                h.queues["cn"].append((5, lsn | 1 << (lw + 1)))
            await h.run(ctx, 1)
        await h.drain(ctx)
    h.simulate(body)
    st = h.model.flows[5].algo
    assert not h.model.dpm.offer_fields(st["offer"])["act"] and st["una"] == 9000
    # (the engine's rule: two events of one flow at least L cycles apart)
    mine = [c for c, _, f in h.model.issue_log if f == 5]
    gaps = [b - a for a, b in zip(mine, mine[1:], strict=False)]
    assert len(mine) > 18 and min(gaps) == cfg.latency, gaps


def test_rtl_tx_random_many_flows():
    """A 1024-flow table (W = 14, L = 22): starts, sent packets (at nxt or stale), ACKs and
    NAKs (within, at and beyond the window), READs, WRITEs of the window, register writes
    (alpha, beta, RTT, IW, RTO), hot flows, back-pressure on rate and rd; timeouts and
    releases from the wheel; every output every cycle equal to the model's.  Default: 128
    flows (the first and the last among them), a message each, and 200 events; CC_LONG=1:
    every flow, until the engine has issued 10^5 events (CC_LDCP_TX_EVENTS overrides)."""
    cfg, h = _tx_harness()
    rng = random.Random(f"{SEED}-tx-engine")
    h.p_valid = {"tx": 0.9, "cn": 0.9, "ctl": 0.5, "csr_w": 0.05}
    h.p_rate_ready, h.p_rd_ready = 0.8, 0.6
    lw, nw = cfg.transport.lsn_width, cfg.transport.n_width
    flows = list(range(1024)) if LONG else sorted({0, 1023, *rng.sample(range(1, 1023), 126)})
    events = int(os.environ.get("CC_LDCP_TX_EVENTS", 100_000 if LONG else 200))
    chunk = 200
    t0 = time.process_time()
    gen = [0]

    async def body(ctx):
        await h.wait_ready(ctx)
        h.start_all(flows)
        await h.drain(ctx)
        for f in flows:                          # a message for every flow
            h.queues["tx"].append((f, rng.randrange(1, 12000) | 1 << lw))
        await h.drain(ctx)                       # (the events below read the flows' state)
        done, hot = 0, flows[0]
        # CC_LONG: until the engine has issued 10^5 events (about 2.7 per generated one)
        while done < events if not LONG else h.model.issued < events:
            k = chunk if LONG else min(chunk, events - done)
            hot = _tx_engine_events(h, rng, flows, k, hot, nw, lw, 0.3 if LONG else 0.1)
            done += k
            gen[0] = done
            await harness.run_queues(h, ctx, 50)
        await harness.finish(h, ctx, 300)                # timeouts and releases fall due
    c = harness.simulate(h, body)
    print(f"seed {SEED}: {h.cycle} cycles, {h.model.issued} events, {c}")
    assert c["ev_cn"] > gen[0] // 8 and c["ev_tx"] > gen[0] // 4 and c["expiries"] > 5, c
    assert not LONG or h.model.issued >= events
    acts = sum(h.model.dpm.offer_fields(h.model.flows[f].algo["offer"])["act"] for f in flows)
    cpu = time.process_time() - t0
    print(f"seed {SEED}: {len(flows)} flows, {h.cycle} cycles, {h.model.issued} events, "
          f"{c['expiries']} expiries, late_max {c['late_max']}, {acts} flows active at the "
          f"end, {cpu:.1f} s CPU")
