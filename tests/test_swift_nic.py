"""The Swift NIC composition (hw/nic/swift_nic.py): the Swift engine's ``pace`` records feeding
the pacer, in Amaranth's simulator against the composed model (sim/models/swift_nic.py), every
output and the internal record stream every cycle.

The default test is one simulation (the two engines take ~2 s to elaborate and ~5 ms per
simulated cycle, the Swift datapath's 54 stages most of it): a directed congestion episode on
flow 0 whose hand-derived pace gives the grant spacing, then random traffic with back-pressure,
then the register port (both halves).  ``CC_SEED`` sets the seed (printed); ``CC_LONG=1`` adds a
long random run (16 flows, 960 events, ~12,000 cycles: minutes)."""

from __future__ import annotations

import os
import random

import pytest

from hw.lib.csr import fourcc
from hw.nic.flow_datapath import CtlOp
from hw.nic.swift_config import SwiftConfig
from hw.nic.swift_engine import SwiftOp
from hw.nic.swift_nic import SWIFT_NIC_ACK_TO_GRANT, SwiftNic, SwiftNicConfig
from hw.params import ConfigError
from sim.models.swift import SwiftAck, SwiftModel
from sim.models.swift_nic import SwiftNicModel
from tests import streams
from tests.streams import csr_write, expect_stream, run_testbenches

SEED = int(os.environ.get("CC_SEED", "20261128"))
LONG = os.environ.get("CC_LONG", "") not in ("", "0")

# docs/swift.md, "The NIC composition": 1 MHz (a cycle is a µs), target 10 + 2 per hop, no flow
# scaling, ai 1, beta 0.8, max_mdf 0.5, windows from ONE packet
KAT = SwiftConfig(clk_hz=1_000_000, base_target_us=10, hop_scale_us=2, fs_range_us=0,
                  endpoint_target_us=1000, ai=1.0, beta=0.8, max_mdf=0.5, min_cwnd=0.001,
                  max_cwnd=256, init_cwnd=1.0)
#: hand-derived (docs/swift.md): the first ACK (fabric 24 against the target 12) cuts fcwnd
#: from 65536 by max(1 - 0.8 x 1/2, 0.5) = 39322/65536 to 39322 (below one packet); pace =
#: floor(RTT 24 x 65536 / 39322) = floor(39.99) = 39 cycles; the second ACK (fabric 6, below
#: the target) adds ai x 1 = a whole packet: 104858, pace 0
PACE = 39
FCWND_CUT, FCWND_BACK = 39322, 39322 + 65536
#: a window-limited (interval 0) flow with packets is re-evaluated every REEVAL cycles: the
#: engine's pipeline 5 + the wheel's insert latency 4 (docs/flow-engine.md)
REEVAL = 9
GRANT_LAT = 6            # a grant issued at c is on ``grant`` at c + 6 (an empty FIFO)
#: hand-derived: the pace of the ACK that opens the random stretch (see there)
STALLED_PACE = 120
#: Swift events of the random stretch (one flow takes one per 54 cycles: ~4 per 54 cycles)
RANDOM_EVENTS = 12


def small(n_flows=4, **kw):
    # (the Swift engine holds its inputs unless its wheel has more than pipe_depth(54) + 5 = 62
    # entries: 64 over the flows)
    return SwiftNicConfig.for_flows(n_flows, KAT, time_width=26, wheel_horizon=128,
                                    wheel_slots=256, wheel_entries_per_flow=64 // n_flows,
                                    **kw)


class NicHarness:
    """Drives the RTL and the model with the same offers every cycle and compares every
    output, the record between the engines included."""

    def __init__(self, cfg, seed):
        self.cfg = cfg
        self.dut = SwiftNic(cfg)
        self.model = SwiftNicModel(cfg)
        self.ls, self.lp = self.dut.swift.layouts, self.dut.pacer.layouts
        self.rng = random.Random(seed)
        self.queues = {k: [] for k in ("cn", "tx", "swift_ctl", "pacer_ctl")}
        self.p_valid = 1.0
        self.p_ready = {"grant": 1.0, "swift_rd": 1.0, "pacer_rd": 1.0}
        self.grants: list[tuple[int, int, int]] = []       # (issue cycle, flow, value)
        self.records: list[tuple[int, int, int]] = []      # (cycle taken, flow, pace)
        self.taken: dict[str, list[int]] = {k: [] for k in self.queues}
        self.sent: list[tuple] = []     # (flow, op, now, fabric, endpoint, hops, n) queued
        self.cycle = 0
        self.pace_shift = self.ls["rate"]["rate"].offset
        self.fmask = (1 << self.cfg.swift.engine.flow_width) - 1

    def bits(self, name, item):
        if name == "cn":
            return item[0] | item[1] << self.ls["cn"]["cn"].offset
        if name == "tx":
            return self.lp["tx"].const({"flow": item[0], "bytes": item[1]}).as_bits()
        lay = (self.ls if name == "swift_ctl" else self.lp)["ctl"]
        return lay.const({"flow": item[0], "op": item[1], "field": item[2],
                          "value": item[3]}).as_bits()

    def event(self, op=SwiftOp.ACK, now=0, fabric=0, endpoint=0, hops=1, n=1):
        return self.dut.swift.dp.cn_layout.const(
            {"op": op, "now": now, "fabric": fabric, "endpoint": endpoint, "hops": hops,
             "num_acked": n}).as_value().value

    def send(self, flow, op=SwiftOp.ACK, now=0, fabric=0, endpoint=0, hops=1, n=1):
        """Queue a Swift event on ``cn`` (and remember it for :func:`expected_records`)."""
        self.sent.append((flow, op, now, fabric, endpoint, hops, n))
        self.queues["cn"].append((flow, self.event(op, now, fabric, endpoint, hops, n)))

    def records_by_flow(self):
        out: dict[int, list[int]] = {}
        for _, f, pace in self.records:
            out.setdefault(f, []).append(pace)
        return out

    async def run(self, ctx, cycles=None, until_idle=False):
        dut, rng = self.dut, self.rng
        ports = {k: getattr(dut, k) for k in self.queues}
        offering = dict.fromkeys(ports, False)
        n = 0
        while cycles is None or n < cycles:
            if until_idle and n and not any(self.queues.values()) and not self.model.busy():
                break
            n += 1
            offers = {}
            for k, port in ports.items():
                q = self.queues[k]
                if q and (offering[k] or rng.random() < self.p_valid):
                    offering[k] = True
                    offers[k] = q[0]
                    ctx.set(port.payload.as_value(), self.bits(k, q[0]))
                    ctx.set(port.valid, 1)
                else:
                    offers[k] = None
                    ctx.set(port.valid, 0)
            rdy = {k: rng.random() < p for k, p in self.p_ready.items()}
            for k, r in rdy.items():
                ctx.set(getattr(dut, k).ready, r)
            o = self.model.step(cn=offers["cn"], tx=offers["tx"], swift_ctl=offers["swift_ctl"],
                                pacer_ctl=offers["pacer_ctl"], grant_ready=rdy["grant"],
                                swift_rd_ready=rdy["swift_rd"], pacer_rd_ready=rdy["pacer_rd"])
            where = f"cycle {self.cycle} (seed {SEED})"
            exp = {"cn": o.cn_ready, "tx": o.tx_ready, "swift_ctl": o.swift_ctl_ready,
                   "pacer_ctl": o.pacer_ctl_ready}
            for k, port in ports.items():
                if offers[k] is not None:
                    assert ctx.get(port.ready) == exp[k], f"{k}.ready {where}"
            assert ctx.get(dut.ready) == o.ready, where
            for k, want in (("grant", o.grant), ("swift_rd", o.swift_rd),
                            ("pacer_rd", o.pacer_rd)):
                expect_stream(ctx, getattr(dut, k), want, k, where)
            # the record between the engines and whether the pacer took it
            got = expect_stream(ctx, dut.swift.rate, o.pace, "pace record", where)
            if got is not None:
                assert bool(ctx.get(dut.pacer.cn.ready)) == o.pace_taken, f"taken {where}"
                if o.pace_taken:
                    self.records.append((self.cycle, got & self.fmask, got >> self.pace_shift))
            if o.grant is not None and rdy["grant"]:
                self.grants.append((self.cycle - GRANT_LAT, o.grant & self.fmask,
                                    o.grant >> self.lp["rate"]["rate"].offset))
            for k in ports:
                if offers[k] is not None and exp[k]:
                    self.queues[k].pop(0)
                    offering[k] = False
                    self.taken[k].append(self.cycle)
            await ctx.tick()
            self.cycle += 1
        if until_idle:
            assert not any(self.queues.values()) and not self.model.busy(), "did not drain"

    async def wait_ready(self, ctx):
        await self.run(ctx, self.cfg.swift.engine.n_flows + 4)

    def start(self, flows):
        for f in flows:
            self.queues["swift_ctl"].append((f, CtlOp.START, 0, 0))
            self.queues["pacer_ctl"].append((f, CtlOp.START, 0, 0))

    def random_traffic(self, n_events, now):
        """Swift events on every flow (congestion episodes: fabric delays up to 5 x the
        target, timeouts, fast recoveries; the receive stamp advancing by up to an RTT),
        packets for the pacer, READs of both engines."""
        rng, nf = self.rng, self.cfg.swift.engine.n_flows
        for _ in range(n_events):
            f = rng.randrange(nf)
            now += rng.randrange(40)
            op = rng.choice([SwiftOp.ACK] * 6 + [SwiftOp.TIMEOUT, SwiftOp.FAST_RECOVERY,
                                                  SwiftOp.NONE])
            fab = rng.choice([rng.randrange(12), 12, rng.randrange(13, 60)])
            self.send(f, op, now, fab, rng.randrange(20), rng.randrange(4), rng.randrange(1, 4))
            if rng.random() < 0.6:
                self.queues["tx"].append((rng.randrange(nf), rng.randrange(6)))
            if rng.random() < 0.05:
                self.queues[rng.choice(["swift_ctl", "pacer_ctl"])].append(
                    (rng.randrange(nf), CtlOp.READ, 0, 0))
        return now


def expected_records(cfg, sent):
    """The records the composition must hand the pacer, per flow and in order, derived from the
    events alone: the single-flow Swift model (sim/models/swift.py, no engine, FIFO or pacer)
    run on each flow's events in the order they were queued; a record is a change of the
    flow's pace (the engine sends one when the pace changes, and nothing else moves a pace
    here: no WRITE of a Swift window before the check).  Any seed; a lost, duplicated or
    reordered record (the composition's handshake) breaks it."""
    models, out = {}, {}
    for f, op, now, fabric, endpoint, hops, n in sent:
        m = models.setdefault(f, SwiftModel(cfg.swift.swift))
        before = m.state.pace
        if op == SwiftOp.ACK:
            m.on_ack(SwiftAck(now, fabric, endpoint, hops, n))
        elif op == SwiftOp.TIMEOUT:
            m.on_timeout(now)
        elif op == SwiftOp.FAST_RECOVERY:
            m.on_fast_recovery(now)
        if m.state.pace != before:
            out.setdefault(f, []).append(m.state.pace)
    return out


def gaps(times):
    return [b - a for a, b in zip(times, times[1:], strict=False)]


async def csr_read(ctx, dut, addr):
    return (await streams.csr_read(ctx, dut, addr))[0]


def test_episode_random_traffic_and_registers():
    """Flow 0 (32 packets) sends by its window (interval 0: a grant every REEVAL = 9 cycles
    while it has packets), one ACK 24 cycles of fabric delay (target 12) drives it below one
    packet with pace 39 (hand-derived): its grants are then exactly 39 cycles apart, the first
    39 after its last window grant; the ACK after (fabric 6) brings it back to one packet or
    more: pace 0, a grant at once when the pacer takes the record, then at least every 9
    cycles.  Every output and every record equal to the model's every cycle; then random
    traffic on 4 flows with back-pressure; then both halves of the register port."""
    print(f"seed {SEED} (CC_SEED={SEED} reproduces)")
    cfg = small()
    h = NicHarness(cfg, SEED)
    dut = h.dut

    async def body(ctx):
        await h.wait_ready(ctx)
        h.start(range(4))
        h.queues["tx"].append((0, 32))         # enough for the episode, little left after
        await h.run(ctx, 30)
        h.send(0, now=100, fabric=24)
        await h.run(ctx, 59 + 3 * PACE + 8)
        a1 = h.taken["cn"][-1]
        h.send(0, now=200, fabric=6)
        await h.run(ctx, 59 + 6 * REEVAL + 4)
        a2 = h.taken["cn"][-1]
        end = h.cycle - GRANT_LAT           # grants issued before this cycle are all logged
        assert h.model.swift.state(0)["algo"]["fcwnd"] == FCWND_BACK
        (t1, f1, p1), (t2, f2, p2) = h.records
        assert (f1, p1, f2, p2) == (0, PACE, 0, 0)
        # the record is offered 59 cycles after its ACK and taken then or one cycle later
        # (a timer pop of the pacer goes first)
        assert t1 - a1 in (59, 60) and t2 - a2 in (59, 60)
        g = [c for c, f, v in h.grants if f == 0]
        before = [c for c in g if c <= t1]
        paced = [c for c in g if t1 < c < t2]
        after = [c for c in g if t2 <= c < end]
        # window-limited (interval 0): due whenever it has packets, so re-evaluated every 9
        # cycles, and the record's own event finds it due: a grant at t1 too (the last window
        # grant, at most 9 after the one before)
        assert len(before) >= 4 and set(gaps(before[:-1])) == {REEVAL}
        assert before[-1] == t1 and 0 < before[-1] - before[-2] <= REEVAL
        # paced: exactly PACE apart, the first PACE after the last window grant
        assert len(paced) >= 3 and paced[0] - t1 == PACE
        assert set(gaps(paced)) == {PACE}
        # back to the window: the pacer grants in the cycle it takes the record, then at least
        # every 9 cycles (the pop of the last paced deadline is one more re-evaluation
        # chain: a window-limited flow is granted at every event that finds it backlogged)
        assert after[0] == t2 and max(gaps(after)) <= REEVAL and len(after) >= 6
        assert after[0] + GRANT_LAT - a2 in (SWIFT_NIC_ACK_TO_GRANT, SWIFT_NIC_ACK_TO_GRANT + 1)
        print(f"window grants {before[:2]} ... {before[-2:]}; "
              f"ACK at {a1}: record taken at {t1}, paced grants {paced}; ACK at {a2}: record "
              f"taken at {t2}, grants {after[:3]}...")

        # random traffic with back-pressure, every cycle compared
        # (grant.ready low at first, 32 packets queued: the pacer's 16-entry output FIFO
        # fills, the pacer stops taking events and the records wait in the Swift engine's FIFO;
        # the stretch opens with an ACK sure to make a record while the pacer is stopped, 59
        # cycles later, whatever the seed: flow 1 (no event yet, one packet), fabric 60 against
        # the target 12: fcwnd cut by max(1 - 0.8 x 48/60, 0.5) = 0.5 to 32768, ecwnd grows
        # (endpoint 0), pace = floor(60 x 65536 / 32768) = 120)
        h.p_valid = 0.7
        h.p_ready = {"grant": 0.0, "swift_rd": 0.7, "pacer_rd": 0.7}
        h.queues["tx"] += [(f, 8) for f in range(4)]
        h.send(1, now=300, fabric=60)
        h.random_traffic(RANDOM_EVENTS, 300)
        await h.run(ctx, 150)
        h.p_ready["grant"] = 0.6
        await h.run(ctx, until_idle=True)
        assert h.model.stalled_records > 0, "no record waited for the pacer"
        print(f"{h.cycle} cycles, {len(h.records)} records ({h.model.stalled_records} cycles "
              f"of a record waiting), {len(h.grants)} grants")
        # every pace change of every flow reached the pacer once, in order (the two of the
        # episode and those of the random stretch, however many the seed makes)
        assert h.records_by_flow()[1][0] == STALLED_PACE
        assert h.records_by_flow() == expected_records(cfg, h.sent)

        # the register port: the Swift engine's map, then the pacer's from pacer_base
        for k in ("grant", "swift_rd", "pacer_rd"):
            ctx.set(getattr(dut, k).ready, 1)
        maps = cfg.register_maps()
        (sb, sm), (pb, pm) = maps["swift"], maps["pacer"]
        assert pb == dut.pacer_base == 1 << 10
        f = h.records[-1][1]            # the flow of the last record: its interval is its pace
        want_ival = h.model.pacer.state(f)["algo"]["ival"]
        want_pace = h.model.swift.state(f)["algo"]["pace"]
        assert want_ival == cfg.interval(want_pace)
        # a pace written into a Swift window reaches the pacer: 77 -> 77 << 16; a pace beyond
        # the interval's 24 integer bits saturates at (2**24 - 1) << 16 (two flows other than
        # f; their records come 59 cycles after the WRITEs)
        g1, g2 = [x for x in range(4) if x != f][:2]
        await csr_write(ctx, dut, sb + sm.addr("PACE", g1), 77)
        await csr_write(ctx, dut, sb + sm.addr("PACE", g2), 1 << 30)
        assert await csr_read(ctx, dut, sb + sm.header_offset) == fourcc("SWFE")
        assert await csr_read(ctx, dut, pb + pm.header_offset) == fourcc("PACE")
        # the pacer's global registers: ival_init and burst reset to 0 here, wc writable
        assert await csr_read(ctx, dut, pb + pm.addr("IVAL_INIT")) == 0
        assert await csr_read(ctx, dut, pb + pm.addr("BURST")) == 0
        await csr_write(ctx, dut, pb + pm.addr("WC"), 1)
        assert await csr_read(ctx, dut, pb + pm.addr("WC")) == 1
        # the windows of both halves (a Swift window read takes its 54-stage pipeline)
        assert await csr_read(ctx, dut, sb + sm.addr("PACE", f)) == want_pace
        assert await csr_read(ctx, dut, pb + pm.addr("IVAL_W0", f)) == want_ival & 0xFFFF_FFFF
        # (the Swift window read came after the WRITEs' write-back, where their records were
        # queued: a few cycles more for the pacer to take them)
        for _ in range(8):
            await ctx.tick()
        assert await csr_read(ctx, dut, pb + pm.addr("IVAL_W0", g1)) == 77 * 65536
        assert await csr_read(ctx, dut, pb + pm.addr("IVAL_W1", g1)) == 0
        assert await csr_read(ctx, dut, pb + pm.addr("IVAL_W0", g2)) == 0xFFFF_0000
        assert await csr_read(ctx, dut, pb + pm.addr("IVAL_W1", g2)) == 0xFF

    run_testbenches(dut, body, period=1e-6)


@pytest.mark.skipif(not LONG, reason="CC_LONG=1: 16 flows, 960 events (minutes)")
def test_random_long():
    print(f"seed {SEED} (CC_SEED={SEED} reproduces)")
    cfg = small(16)
    h = NicHarness(cfg, SEED + 1)

    async def body(ctx):
        await h.wait_ready(ctx)
        h.start(range(16))
        await h.run(ctx, until_idle=True)
        h.p_valid = 0.7
        h.p_ready = {"grant": 0.5, "swift_rd": 0.7, "pacer_rd": 0.7}
        now = 0
        for _ in range(8):
            now = h.random_traffic(120, now)
            await h.run(ctx, 500)
        await h.run(ctx, until_idle=True)
        print(f"{h.cycle} cycles, {len(h.records)} records, {len(h.grants)} grants")
        assert h.records_by_flow() == expected_records(cfg, h.sent)

    run_testbenches(h.dut, body, period=1e-6)


def test_configuration_errors_are_one_line():
    from hw.nic.flow_engine_config import FlowEngineConfig
    from hw.nic.pacer_config import PacerConfig
    cfg = small()
    with pytest.raises(ConfigError, match="n_flows"):
        cfg.replace(pacer=PacerConfig(engine=FlowEngineConfig(n_flows=8)))
    with pytest.raises(ConfigError, match="byte_mode"):
        cfg.replace(pacer=cfg.pacer.replace(byte_mode=True))
    with pytest.raises(ConfigError, match="clk_hz"):
        cfg.replace(pacer=PacerConfig(engine=FlowEngineConfig(n_flows=4)))
    with pytest.raises(TypeError):
        SwiftNic(object())
    assert type(cfg).from_json(cfg.to_json()) == cfg
    # the interval of a record: pace << 16, saturated at 2**24 - 1 cycles
    assert [cfg.interval(p) for p in (0, 1, 39, (1 << 24) - 1, 1 << 24, (1 << 32) - 1)] == \
        [0, 65536, 39 << 16, ((1 << 24) - 1) << 16, ((1 << 24) - 1) << 16,
         ((1 << 24) - 1) << 16]


def test_timer_pops_on_the_timerless_engine_are_the_writes():
    """docs/swift.md, "Timer pops and wheel inserts on an engine without timers": Swift arms no
    timer, so its engine's ev_timer and wheel_ins count exactly the ctl WRITEs (each inserts a
    re-evaluation at its own time); a pop that finds its flow stopped counts in disabled.
    Hand-counted on the engine model: START, WRITE, READ, WRITE of a flow never STARTed, STOP
    (before the first WRITE's pop, 60 cycles later), RESET, ACKs."""
    from sim.models.flow_engine import FlowEngineModel
    from sim.models.swift import SwiftDatapathModel
    cfg = small()
    m = FlowEngineModel(cfg.swift.engine, SwiftDatapathModel(_swift_dp(cfg)))
    for _ in range(8):
        m.step()
    ops = [(0, CtlOp.START, 0, 0), (0, CtlOp.WRITE, 0, 5), (1, CtlOp.READ, 0, 0),
           (2, CtlOp.WRITE, 1, 70000), (0, CtlOp.STOP, 0, 0), (0, CtlOp.RESET, 0, 0),
           (3, CtlOp.START, 0, 0)]
    while ops:
        if m.step(ctl=ops[0]).ctl_ready:
            ops.pop(0)
    acks = [(3, _swift_dp(cfg).cn_layout.const({"op": SwiftOp.ACK, "now": 10 * i, "fabric": 30,
                                                "endpoint": 0, "hops": 1, "num_acked": 1}
                                               ).as_value().value) for i in range(3)]
    while acks:
        if m.step(cn=acks[0]).cn_ready:
            acks.pop(0)
    for _ in range(200):
        m.step()
    c = m.counters
    assert (c["ev_ctl"], c["ev_cn"], c["wheel_ins"], c["ev_timer"], c["disabled"],
            c["stale_pops"], c["expiries"]) == (7, 3, 2, 2, 2, 0, 0)


def _swift_dp(cfg):
    from hw.nic.swift_engine import SwiftDatapath
    return SwiftDatapath(cfg.swift.swift, cfg.swift.engine.time_width)
