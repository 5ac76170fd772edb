"""Nothing lost with many concurrent messages: the multi-flow LDCP sender and receiver engines
in one loop through the lossy channel model (docs/ldcp-transport.md, "Many flows").

Model level: the cycle-accurate engine model (:class:`sim.models.flow_engine.FlowEngineModel`)
around the sender's and the receiver's datapath models (``LdcpTxDatapathModel``,
``LdcpRxDatapathModel``), which the RTL equals every cycle elsewhere (Amaranth simulation in
``test_ldcp_tx_engine.py`` / ``test_ldcp_rx_engine.py``, Verilator in
``cocotb_tests/test_flow_engine.py::test_ldcp_engine_random_events``).  Around them, the NIC
as this test plays it, through the engines' ports only:

- sender NIC: a START and a message (1 ... 20,000 bytes) per flow; it keeps the last offer
  record of each flow from ``rate``; a flow whose record is eligible sends the packet at
  ``nxt`` (one packet per clock over all flows) into the data channel and reports it on
  ``tx``; the flow then waits for its next record (or, if the report was stale and changed
  nothing, for ``L + 3 + out_fifo_depth`` cycles);
- data channel (:class:`sim.models.ldcp_loop.Channel`): delay with jitter, drops, CE marks of
  ECN-capable packets, drops of the ECN-incapable ones (fast start's at a full queue);
- receiver: the packets on ``cn``; each record that changes ``seq`` is one or two ACKs
  (``pre``: ``ACK(previous exp, n_pre)``, ``main``: ``ACK(exp, ece, n, nak)``) into the ACK
  channel (drops too), and from there on the sender's ``cn``.

Checked: every message completes (the sender's offer inactive with ``una`` = its length),
and every byte is delivered once, in order: the receiver's expected LSN follows this test's
own account of the packets it took (a packet at the expected LSN of a valid length is
delivered, nothing else), never moves back, and ends at the message's length.
Default 48 flows (about 2 s); ``CC_LONG=1``: 1000 concurrent messages over a 1024-flow table
(``CC_LDCP_LOOP_FLOWS`` overrides the count; the seed is ``CC_SEED``, printed).
"""

from __future__ import annotations

import os
import random
import time

from hw.nic.flow_datapath import CtlOp
from hw.nic.ldcp_rx_engine import LdcpRxDatapath
from hw.nic.ldcp_tx_engine import LdcpTxDatapath
from hw.nic.ldcp_window_config import MTU_WIDTH
from sim.models.flow_engine import FlowEngineModel
from sim.models.ldcp_engine import LdcpRxDatapathModel, LdcpTxDatapathModel
from sim.models.ldcp_loop import Channel, ChannelConfig
from sim.models.ldcp_transport import TxPacket
from tests.test_flow_engine import SEED
from tests.test_ldcp_rx_engine import rx_config
from tests.test_ldcp_tx_engine import MTU, tx_config

LONG = os.environ.get("CC_LONG", "0") == "1"


def _engine(cfg, datapath, model):
    m = FlowEngineModel(cfg.engine, model(datapath(cfg)))
    m.log_issue = False
    return m


def test_many_messages_nothing_lost():
    n_flows = int(os.environ.get("CC_LDCP_LOOP_FLOWS", 1000 if LONG else 48))
    table = 1024 if n_flows > 64 else 64
    rng = random.Random(f"{SEED}-loop")
    txc = tx_config(n_flows=table, time_width=16, horizon=4096, slots=8192, m=4,
                    rto_cycles=2000)
    rxc = rx_config(n_flows=table, time_width=16, m=4, ack_delay_cycles=40,
                    horizon=4096, slots=8192)
    tx = _engine(txc, LdcpTxDatapath, LdcpTxDatapathModel)
    rx = _engine(rxc, LdcpRxDatapath, LdcpRxDatapathModel)
    lw, nw = txc.transport.lsn_width, txc.transport.n_width
    fmask = (1 << txc.engine.flow_width) - 1
    tx_shift, rx_shift = tx.lay["rate"]["rate"].offset, rx.lay["rate"]["rate"].offset
    data = Channel(ChannelConfig(delay=60, jitter=20, p_drop=0.01, p_drop_not_ect=0.05,
                                 p_mark=0.1), rng)
    acks = Channel(ChannelConfig(delay=60, jitter=20, p_drop=0.01), rng)
    flows = sorted(rng.sample(range(table), n_flows))
    length = {f: rng.choice([rng.randrange(1, 20_000), 1, MTU, 4 * MTU, 4 * MTU + 1])
              for f in flows}
    ctl_tx = [(f, CtlOp.START, 0, 0) for f in range(table)]
    ctl_rx = [(f, CtlOp.START, 0, 0) for f in range(table)]
    starts = [(f, length[f] | 1 << lw) for f in flows]
    offer = {}                    # flow -> the last offer record (fields)
    wait = {}                     # flow -> cycle until which it waits for its next record
    ready_q = []                  # flows whose record is eligible (checked when sending)
    exp_rec = dict.fromkeys(flows, 0)    # the receiver's expected LSN, from its records
    exp_own = dict.fromkeys(flows, 0)    # this test's account of the packets taken
    done, active = set(), set()
    sent = retx = 0
    hold = txc.latency + 3 + txc.engine.out_fifo_depth
    limit = 400_000 if LONG else 60_000
    t0 = time.process_time()
    cycle = 0
    report = None
    while len(done) < n_flows:
        assert cycle < limit, (f"seed {SEED}: {n_flows - len(done)} messages not done after "
                               f"{limit} cycles")
        # the sender NIC: one packet per clock from an eligible flow, reported on tx
        if report is None and not starts:
            while ready_q:
                f = ready_q.pop(0)
                o = offer[f]
                if o["elig"] and o["act"] and wait.get(f, -1) < cycle:
                    nxt = o["nxt"]
                    pkt = TxPacket(nxt, min(MTU, length[f] - nxt), bool(o["ect"]),
                                   bool(o["retx"]), bool(o["last"]))
                    n0 = len(data.q)
                    data.push(cycle, pkt)
                    if len(data.q) > n0:             # (not dropped: the flow goes with it)
                        data.q[-1] = (data.q[-1][0], (f, data.q[-1][1]))
                    sent += 1
                    retx += pkt.retx
                    report = (f, nxt)
                    wait[f] = 1 << 62
                    break
        # (a message starts after its flow's START: a TX of a disabled flow is ignored)
        tx_in = (starts[0] if not ctl_tx else None) if starts else report
        ack = acks.head(cycle)
        to = tx.step(tx=tx_in, cn=ack, ctl=ctl_tx[0] if ctl_tx else None)
        if ctl_tx and to.ctl_ready:
            ctl_tx.pop(0)
        if tx_in is not None and to.tx_ready:
            if starts:
                starts.pop(0)
            else:
                wait[report[0]] = cycle + hold       # a stale report changes nothing
                report = None
        if ack is not None and to.cn_ready:
            acks.pop()
        if to.rate is not None:
            f = to.rate & fmask
            o = offer[f] = tx.dpm.offer_fields(to.rate >> tx_shift)
            wait[f] = -1
            if o["elig"]:
                ready_q.append(f)
            if o["act"]:
                active.add(f)
            elif f in active and f not in done:
                assert o["nxt"] == length[f], (f, o)
                assert exp_rec[f] == exp_own[f] == length[f], (f, exp_rec[f], exp_own[f])
                done.add(f)
        # stale-report holds that ran out: eligible again
        if not ready_q and report is None and cycle % 64 == 0:
            ready_q.extend(f for f in flows if f in offer and offer[f]["elig"]
                           and offer[f]["act"] and -1 < wait.get(f, -1) < cycle)
        # the receiver: the data channel on cn, its records to ACKs
        head = data.head(cycle)
        pkt = None
        if head is not None:
            f, p = head
            pkt = (f, p.lsn | p.length << lw | int(p.ce) << (lw + MTU_WIDTH)
                   | int(p.last) << (lw + MTU_WIDTH + 1))
        ro = rx.step(cn=pkt, ctl=ctl_rx[0] if ctl_rx else None)
        if ctl_rx and ro.ctl_ready:
            ctl_rx.pop(0)
        if pkt is not None and ro.cn_ready:
            data.pop()
            f, p = head
            if p.lsn == exp_own[f] and 0 < p.length <= MTU:
                exp_own[f] += p.length
        if ro.rate is not None:
            f = ro.rate & fmask
            r = rx.dpm.rec_fields(ro.rate >> rx_shift)
            assert r["exp"] >= exp_rec[f], (f, r, exp_rec[f])
            prev, exp_rec[f] = exp_rec[f], r["exp"]
            if r["pre"]:
                acks.push(cycle, (f, prev | r["n_pre"] << (lw + 1)))
            if r["main"]:
                acks.push(cycle, (f, r["exp"] | r["ece"] << lw | r["n"] << (lw + 1)
                                  | r["nak"] << (lw + 1 + nw)))
        cycle += 1
    cpu = time.process_time() - t0
    total = sum(length.values())
    print(f"seed {SEED}: {n_flows} messages, {total} bytes delivered once and in order in "
          f"{cycle} cycles; {sent} packets sent ({retx} retransmitted), {data.dropped} "
          f"dropped, {data.marked} CE-marked, {acks.dropped} ACKs dropped; {cpu:.1f} s CPU")
    assert data.dropped > 0 and acks.dropped >= 0
