"""L3QCN end to end in the golden world: a QCN source behind an L3 hop slows down on
private CNMs that the ingress ToR's model turns into standard CNMs.

Topology (one flow)::

    host RP --(d)--> ingress ToR --L3--> congested queue (CP, L3QCN mode qcn) -->
       ^                 |  learns 5-tuple -> (MAC, flow ID, VID) from the host's frames
       +---- CNM <-------+<-- private CNM (IPv4/UDP, routed back to the flow's source IP)

The source is :class:`sim.models.qcn.QcnRpModel` (one clock cycle per event, 250 MHz) sending
1500-byte frames at its current rate (MIB defaults except a faster increase, AI 50 / HAI 250
Mb/s and a 1.5 ms timer, so that 50 ms of simulated time show the steady state); the queue
drains at 5 Gb/s; every delay is 2 µs one way.
Everything is a golden model: the CP (:class:`L3qcnCpModel`), the private CNM bytes, the ToR
(:class:`TorModel`: classify, flow-ID table, CNM frame), the RP reading qntzFb off the CNM.
"""

import heapq
import struct

import pytest

from hw.nic.qcn_rp_config import RATE_FRAC, QcnRpConfig
from hw.switch.l3qcn_config import L3qcnCpConfig, L3qcnTorConfig
from sim.models.l3qcn import FiveTuple, FlowInfo, L3qcnCpModel, L3qcnFrame, TorModel
from sim.models.qcn import QcnCnm, QcnRpModel, QcnTx

FRAME = 1500
DRAIN_BYTES_PER_CYCLE = 5e9 / 8 / 250e6          # 5 Gb/s at 250 MHz
DELAY = 500                                       # 2 µs in cycles
HOST_MAC, RPID, VID = 0x02_AA_00_00_00_01, 0x0123, 10
FLOW = FiveTuple(0x0A_01_00_02, 0x0A_02_00_07, 40000, 5001, 17)


def run(learn: bool, cycles: int = 12_500_000):
    # the RP at the test's own clock (its cycles are 4 ns: DELAY, the drain rate)
    rp_cfg = QcnRpConfig(ai_rate_mbps=50, hai_rate_mbps=250, time_reset_us=1500,
                         clk_hz=250_000_000)
    rp = QcnRpModel(rp_cfg)
    cp = L3qcnCpModel(L3qcnCpConfig(mode="qcn"))
    tor = TorModel(L3qcnTorConfig())
    pending: list = []                 # (cycle the CNM reaches the host, qntzFb)
    q, q_last = 0.0, 0
    trace = []                         # (cycle, CR Mb/s, queue bytes found by the frame)
    t = 0
    while t < cycles:
        # the host's frame leaves at t; the ToR learns from it; it reaches the CP at t + DELAY
        while pending and pending[0][0] <= t:
            when, fb = heapq.heappop(pending)
            rp.idle(max(0, when - rp.cycle))
            rp.step(QcnCnm(fb))
        rp.idle(max(0, t - rp.cycle))
        rp.step(QcnTx(FRAME))
        if learn:
            tor.learn(FLOW, FlowInfo(HOST_MAC, RPID, VID))
        arrival = t + DELAY
        q = max(0.0, q - DRAIN_BYTES_PER_CYCLE * (arrival - q_last))
        q_last = arrival
        pkt = cp.frame(L3qcnFrame(qlen=int(q), length=FRAME, src_ip=FLOW.src_ip,
                                  dst_ip=FLOW.dst_ip, sport=FLOW.sport, dport=FLOW.dport,
                                  protocol=FLOW.protocol, prio=5, ip_len=FRAME - 18,
                                  sample=bytes(16)))
        q += FRAME
        if pkt is not None:
            cnm = tor.receive(pkt)                     # routed back to the ingress ToR
            if cnm is not None:
                dst = int.from_bytes(cnm[:6], "big")
                (rpid,) = struct.unpack(">H", cnm[18:20])
                assert (dst, rpid, struct.unpack(">H", cnm[20:22])[0]) == \
                    (HOST_MAC, RPID, 0x22E7)
                heapq.heappush(pending, (arrival + 2 * DELAY, cnm[23] & 63))
        cr = rp.state.cr / (1 << RATE_FRAC)
        trace.append((t, cr, q))
        t += max(1, round(FRAME * 8 * 250 / cr))       # cycles per frame at CR Mb/s
    return trace, rp, cp, tor


@pytest.fixture(scope="module")
def with_table():
    return run(learn=True)


def test_source_slows_down_and_queue_held_near_q_eq(with_table):
    trace, rp, cp, tor = with_table
    late = trace[len(trace) // 2:]
    mean_rate = sum(c for _, c, _ in late) / len(late)
    mean_q = sum(q for *_, q in late) / len(late)
    print(f"cuts {rp.cuts}, CNMs {tor.cnms}, private CNMs {cp.notifications}, "
          f"mean rate {mean_rate:.0f} Mb/s, mean queue {mean_q:.0f} B")
    assert rp.cuts > 20 and tor.cnms == cp.notifications == rp.cuts
    assert tor.misses == 0 and tor.malformed == 0
    assert 4500 < mean_rate < 5500                     # the 5 Gb/s bottleneck
    assert 0.8 * 26000 < mean_q < 1.3 * 26000          # Q_eq (26000 B)
    assert max(q for *_, q in late) < 2 * 26000


def test_no_mapping_no_slowdown():
    """Empty flow-ID table: every private CNM misses (counted), no CNM reaches the host, the
    source keeps the line rate and the queue grows without bound."""
    trace, rp, cp, tor = run(learn=False, cycles=1_000_000)
    assert cp.notifications > 5 and tor.misses == cp.notifications and tor.cnms == 0
    assert rp.cuts == 0 and all(c == 10_000 for _, c, _ in trace)
    assert trace[-1][2] > 200_000
