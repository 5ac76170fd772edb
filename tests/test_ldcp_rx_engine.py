"""The multi-flow LDCP receiver (hw/nic/ldcp_rx_engine.py): directed cases on its datapath model
(hand-derived from the one-flow rules, docs/ldcp-transport.md "Many flows"), the datapath alone
(RTL) against the model, and the engine (RTL) against the engine model every cycle."""

from __future__ import annotations

import os
import random
import time

import pytest

from hw.nic.flow_datapath import CtlOp, EventKind
from hw.nic.flow_engine_config import FlowEngineConfig, min_out_fifo_depth
from hw.nic.ldcp_rx_engine import LdcpRxDatapath, LdcpRxEngineConfig
from hw.nic.ldcp_transport_config import LdcpTransportConfig
from hw.nic.ldcp_window_config import MTU_WIDTH, LdcpWindowConfig
from hw.params import ConfigError
from sim.models.ldcp_engine import LdcpRxDatapathModel
from tests import ldcp_engine_harness as harness
from tests.test_flow_engine import SEED

LONG = os.environ.get("CC_LONG", "0") == "1"
MTU = 1000


def rx_config(n_flows=16, time_width=16, m=4, ack_delay_cycles=50, latency=1, lsn_width=32,
              horizon=1024, slots=4096) -> LdcpRxEngineConfig:
    win = LdcpWindowConfig(m=m, mtu=MTU, rtt_us=1.0)
    tr = LdcpTransportConfig(window=win, ack_delay_us=harness.us(ack_delay_cycles),
                             lsn_width=lsn_width)
    eng = harness.flow_engine(n_flows, time_width, horizon, slots,
                              max(8, min_out_fifo_depth(latency)))
    return LdcpRxEngineConfig(engine=eng, transport=tr, latency=latency)


class Rx(harness.ModelDriver):
    """The receiver's datapath model with its registers; a packet or a pop returns the record
    (:attr:`rec`)."""

    DATAPATH, MODEL = LdcpRxDatapath, LdcpRxDatapathModel

    def __init__(self, cfg=None, **regs):
        super().__init__(cfg or rx_config(), **regs)
        self.lw = self.cfg.transport.lsn_width

    def _do(self, kind, payload, t):
        super()._do(kind, payload, t)
        return self.rec

    def pkt(self, t, lsn, length=MTU, ce=0, last=0):
        lw = self.lw
        return self._do(EventKind.CN, lsn | length << lw | ce << (lw + MTU_WIDTH)
                        | last << (lw + MTU_WIDTH + 1), t)

    def pop(self, t):
        return self._do(EventKind.TIMER, None, t)

    @property
    def rec(self):
        return self.m.rec_fields(self.s["rec"])


def test_config_errors():
    with pytest.raises(ConfigError, match="latency"):
        LdcpRxEngineConfig(latency=0)
    with pytest.raises(ConfigError, match="ack_delay"):
        rx_config(ack_delay_cycles=20000)        # beyond 2**14 at W = 16
    with pytest.raises(ConfigError, match="out_fifo_depth"):
        LdcpRxEngineConfig(engine=FlowEngineConfig(out_fifo_depth=4), latency=2)


def test_delayed_ack_every_m_packets():
    """m = 4: eight in-order packets give two ACKs, at the 4th (E = 4000, n = 4) and at the
    8th (8000, 4); the record moves with every packet (delivery), seq only with the ACKs."""
    r = Rx()
    seqs = []
    for i in range(8):
        rec = r.pkt(10 + i, i * MTU)
        seqs.append(rec["seq"])
        assert rec["exp"] == (i + 1) * MTU
    assert seqs == [0, 0, 0, 1, 1, 1, 1, 2]
    assert (r.rec["n"], r.rec["ece"], r.rec["nak"], r.rec["n_pre"]) == (4, 0, 0, 0)
    assert r.s["pend"] == 0 and r.s["fl_on"] == 0 and r.last.wake is None
    # m written to 1 at run time: an ACK per packet
    r.regs["m"] = 1
    assert r.pkt(30, 8000)["seq"] == 3 and r.rec["n"] == 1


def test_flush_timer_as_of_its_deadline():
    """Two packets at t = 100, 101 (pending 2): the flush deadline is 100 + 50 = 150.  A pop at
    150 sends ACK(2000, n = 2).  Then one packet at 200 (deadline 250), and a CE-marked packet
    at 260, after the deadline: the flush first (n_pre = 1), then the ECE ACK (3000 -> 4000,
    n = 1) - one record, lateness 10."""
    r = Rx()
    r.pkt(100, 0)
    r.pkt(101, 1000)
    assert r.s["fl_on"] and r.s["fl_dl"] == 150 and r.last.wake == 150
    rec = r.pop(149)
    assert rec["seq"] == 0 and not r.last.expired
    rec = r.pop(150)
    assert r.last.expired and r.last.late == 0
    assert (rec["seq"], rec["exp"], rec["pre"], rec["n_pre"], rec["main"]) == (1, 2000, 1, 2, 0)
    assert r.s["fl_on"] == 0
    r.pkt(200, 2000)
    assert r.s["fl_dl"] == 250
    rec = r.pkt(260, 3000, ce=1)
    assert r.last.expired and r.last.late == 10
    assert (rec["seq"], rec["exp"], rec["ece"], rec["n"], rec["n_pre"]) == (2, 4000, 1, 1, 1)
    assert rec["pre"] == rec["main"] == 1
    # a due flush and an in-order packet that is not acknowledged yet: the flush alone
    r.pkt(300, 4000)
    rec = r.pkt(400, 5000)
    assert (rec["seq"], rec["exp"], rec["pre"], rec["n_pre"], rec["main"]) == (3, 6000, 1, 1, 0)
    assert r.s["pend"] == 1 and r.s["fl_dl"] == 450


def test_ce_with_pending_and_one_nak_per_gap():
    r = Rx()
    r.pkt(0, 0)
    r.pkt(1, 1000)
    rec = r.pkt(2, 2000, ce=1)                      # ACK(2000, 2) then ACK(3000, ECE, 1)
    assert (rec["seq"], rec["exp"], rec["ece"], rec["n"], rec["n_pre"]) == (1, 3000, 1, 1, 2)
    assert rec["pre"] == rec["main"] == 1
    r.pkt(3, 3000)                                  # pending 1
    rec = r.pkt(4, 5000)                            # a gap: NAK(4000, n = 1)
    assert (rec["seq"], rec["exp"], rec["nak"], rec["n"]) == (2, 4000, 1, 1)
    assert r.s["nak_sent"] and r.s["pend"] == 0
    assert r.pkt(5, 6000)["seq"] == 2               # the same gap: nothing
    rec = r.pkt(6, 1000)                            # a duplicate: ACK(4000, n = 0)
    assert (rec["seq"], rec["nak"], rec["n"]) == (3, 0, 0)
    r.pkt(7, 4000, last=1)                          # in order, the last: ACK(5000, 1)
    assert (r.rec["seq"], r.rec["exp"], r.rec["n"]) == (0, 5000, 1) and not r.s["nak_sent"]
    assert r.pkt(8, 6000)["nak"] == 1               # a new gap: a NAK again


def test_malformed_dropped():
    r = Rx()
    r.pkt(0, 0)
    s = dict(r.s)
    for lsn, length in ((1000, 0), (1000, MTU + 1), ((1 << 32) - 500, 600)):
        r.pkt(1, lsn, length)
        assert r.s == s
    r.regs["mtu"] = 2000                            # run-time MTU
    assert r.pkt(2, 1000, 1500)["exp"] == 2500


def _rx_vectors(cfg, rng, count):
    W, LW = cfg.engine.time_width, cfg.transport.lsn_width
    nw = cfg.transport.n_width
    out = []
    dp = LdcpRxDatapath(cfg)
    mdl = LdcpRxDatapathModel(dp)
    for _ in range(count):
        t = rng.randrange(1 << W)
        exp = rng.choice([0, rng.randrange(1 << LW), (1 << LW) - 1, 5000])
        rec = mdl.pack_rec({"exp": exp, "seq": rng.randrange(4), "ece": rng.randrange(2),
                            "pre": rng.randrange(2), "main": rng.randrange(2),
                            "n": rng.randrange(1 << nw), "nak": rng.randrange(2),
                            "n_pre": rng.randrange(1 << nw)})
        pend = rng.randrange(1 << nw)
        state = {"rec": rec, "pend": pend, "nak_sent": rng.randrange(2),
                 "fl_on": int(pend != 0 and rng.random() < 0.9),
                 "fl_dl": (t + rng.randrange(-60, 200)) & ((1 << W) - 1)}
        k = rng.random()
        if k < 0.75:
            lsn = rng.choice([exp, exp, exp + 1000, max(0, exp - 1000), rng.randrange(1 << LW),
                              (1 << LW) - rng.randrange(1, 2000)]) & ((1 << LW) - 1)
            length = rng.choice([MTU, MTU, 1, 0, MTU + 1, rng.randrange(1 << MTU_WIDTH)])
            payload = (lsn | length << LW | rng.randrange(2) << (LW + MTU_WIDTH)
                       | rng.randrange(2) << (LW + MTU_WIDTH + 1))
            out.append((state, EventKind.CN, payload, t))
        elif k < 0.85:
            out.append((state, EventKind.TX, 0, t))
        else:
            out.append((state, EventKind.TIMER, None, t))
    return out


@pytest.mark.parametrize("latency", [1, 3])
def test_rtl_rx_datapath_vectors(latency):
    cfg = rx_config(latency=latency)
    dp = LdcpRxDatapath(cfg)
    model = LdcpRxDatapathModel(dp)
    rng = random.Random(f"{SEED}-rx-vectors-{latency}")
    regs = model.regs_reset()
    regs.update(m=rng.randrange(1, 8), ack_delay=rng.randrange(0, 100))
    vectors = _rx_vectors(cfg, rng, 800)
    harness.check_vectors(dp, model, regs, vectors)


# -- inside the engine: RTL against the engine model, every output every cycle -------------------

def _pkt(lw, lsn, length=MTU, ce=0, last=0):
    return lsn | length << lw | ce << (lw + MTU_WIDTH) | last << (lw + MTU_WIDTH + 1)


def test_rtl_rx_same_flow_every_cycle():
    """One flow, a packet every cycle (in order, a CE mark every 5th, a gap and duplicates):
    with L = 1 the engine takes one per clock, back to back (forwarded), and every record
    equals the model's; the expected LSN ends at the bytes delivered in order."""
    cfg = rx_config(m=4)
    lw = cfg.transport.lsn_width
    h = harness.engine_harness(cfg, LdcpRxDatapath, LdcpRxDatapathModel)

    async def body(ctx):
        await h.wait_ready(ctx)
        h.start_all([3])
        await h.drain(ctx)
        lsns = list(range(0, 40 * MTU, MTU))
        lsns[20:20] = [30 * MTU, 31 * MTU, 5 * MTU]        # a gap (NAK, then silence), a dup
        for i, lsn in enumerate(lsns):
            h.queues["cn"].append((3, _pkt(lw, lsn, ce=int(i % 5 == 4))))
        await h.drain(ctx)
        await h.run(ctx, 80)                                # the flush timer
    h.simulate(body)
    taken = h.taken["cn"]
    assert taken == list(range(taken[0], taken[0] + len(taken)))     # one per clock
    rec = h.model.dpm.rec_fields(h.model.flows[3].algo["rec"])
    assert rec["exp"] == 40 * MTU and h.model.flows[3].algo["pend"] == 0


def test_rtl_rx_random_many_flows():
    """A 256-flow table (1024 with CC_LONG=1; W = 14, L = 1): each flow receives its own
    message in order with random gaps (a packet skipped: NAK, then the rest dropped until
    the sender's go-back, modelled by restarting at the expected LSN), duplicates, CE
    marks, malformed packets, last packets, hot flows; READs and RESETs (a new message),
    register writes (m, MTU, ack_delay); flushes from the wheel; every output every cycle.
    Default: 128 flows and 400 packets; CC_LONG=1: every flow, until the engine has issued
    10^5 events (CC_LDCP_RX_EVENTS overrides)."""
    n = 1024 if LONG else 256             # (the table's init sweep is the default's cost)
    cfg = rx_config(n_flows=n, time_width=14, m=4, ack_delay_cycles=40)
    lw = cfg.transport.lsn_width
    h = harness.engine_harness(cfg, LdcpRxDatapath, LdcpRxDatapathModel)
    rng = random.Random(f"{SEED}-rx-engine")
    h.p_valid = {"tx": 0.5, "cn": 0.9, "ctl": 0.5, "csr_w": 0.05}
    h.p_rate_ready, h.p_rd_ready = 0.8, 0.6
    flows = list(range(n)) if LONG else sorted({0, n - 1, *rng.sample(range(1, n - 1), 126)})
    events = int(os.environ.get("CC_LDCP_RX_EVENTS", 100_000 if LONG else 400))
    nxt = {f: 0 for f in flows}
    t0 = time.process_time()
    gen = [0]

    async def body(ctx):
        await h.wait_ready(ctx)
        h.start_all(flows)
        done, hot = 0, flows[0]
        # CC_LONG: until the engine has issued 10^5 events
        while done < events if not LONG else h.model.issued < events:
            for _ in range(200):
                if rng.random() < 0.02:
                    hot = rng.choice(flows)
                f = hot if rng.random() < 0.3 else rng.choice(flows)
                r = rng.random()
                if r < 0.8:
                    lsn = nxt[f]
                    q = rng.random()
                    if q < 0.05:
                        lsn += MTU                                  # a gap
                    elif q < 0.1:
                        lsn = max(0, lsn - MTU)                     # a duplicate
                    elif q < 0.15:
                        # the sender's go-back: from the receiver's expected LSN
                        lsn = h.model.dpm.rec_fields(h.model.flows[f].algo["rec"])["exp"]
                    length = MTU if rng.random() < 0.9 else rng.choice([1, 0, MTU + 1, 300])
                    h.queues["cn"].append((f, _pkt(lw, lsn, length, int(rng.random() < 0.2),
                                                   int(rng.random() < 0.05))))
                    if 0 < length <= MTU:
                        nxt[f] = lsn + length
                elif r < 0.9:
                    h.queues["tx"].append((f, 0))
                elif r < 0.97:
                    h.queues["ctl"].append((f, CtlOp.READ, 0, 0))
                else:
                    h.queues["ctl"].append((f, CtlOp.RESET, 0, 0))
                    nxt[f] = 0
                if rng.random() < 0.003:
                    h.queues["csr_w"].append(rng.choice([(0, rng.randrange(1, 8)),
                                                         (1, rng.choice([MTU, 2000])),
                                                         (2, rng.randrange(0, 120))]))
            done += 200
            gen[0] = done
            await harness.run_queues(h, ctx, 50)
        await harness.finish(h, ctx, 200)
    c = harness.simulate(h, body)
    cpu = time.process_time() - t0
    assert c["ev_cn"] > gen[0] // 2 and c["expiries"] > 10, c
    assert not LONG or h.model.issued >= events
    print(f"seed {SEED}: {len(flows)} flows, {h.cycle} cycles, {h.model.issued} events, "
          f"{c['expiries']} flushes, late_max {c['late_max']}, {cpu:.1f} s CPU")
