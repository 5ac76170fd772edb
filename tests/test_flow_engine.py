"""The multi-flow engine (hw/nic/flow_engine.py) with the toy datapath, in Amaranth's simulator,
against its cycle-accurate model (sim/models/flow_engine.py): every output, every cycle."""

from __future__ import annotations

import os
import random

import pytest
from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.sim import Simulator

from hw.nic.flow_datapath import CtlOp, ToyDatapath
from hw.nic.flow_engine import (
    COUNTERS,
    LATE_BUCKETS,
    PIPE_DEPTH,
    WHEEL_STATS,
    FlowEngine,
    Src,
    engine_layouts,
    reeval,
)
from hw.nic.flow_engine_config import COUNTER_BASE, FlowEngineConfig, min_out_fifo_depth
from hw.nic.timer_wheel import TimerWheel
from hw.params import ConfigError
from sim.models.flow_datapath import ToyDatapathModel
from sim.models.flow_engine import FlowEngineModel
from sim.models.timer_wheel import TimerWheelModel
from tests.streams import expect_stream

#: the engine runs with the wheel's RTL; CC_WHEEL_RTL=0 puts the model-driven stub in its place
#: (the engine alone against the wheel's contract)
USE_WHEEL_RTL = os.environ.get("CC_WHEEL_RTL", "1") == "1"
#: longer random runs
LONG = os.environ.get("CC_LONG", "0") not in ("", "0")

SEED = int(os.environ.get("CC_SEED", "1"))


def small_config(**kw) -> FlowEngineConfig:
    base = dict(n_flows=16, time_width=12, wheel_horizon=256, wheel_slots=512,
                out_fifo_depth=min_out_fifo_depth(1))
    base.update(kw)
    return FlowEngineConfig(**base)


class WheelStub(wiring.Component):
    """The timer wheel's ports, driven by the testbench from a :class:`TimerWheelModel` (the
    wheel's own tests check its RTL against that model): the engine's RTL is tested against the
    wheel's contract, cycle by cycle."""

    def __init__(self, wcfg):
        self.wcfg = wcfg
        real = TimerWheel(wcfg)
        real._MustUse__silence = True     # only its signature is used
        super().__init__(real.signature)

    def elaborate(self, platform):
        m = Module()
        m.d.comb += self.ins.ready.eq(1)
        return m


# -- the harness -----------------------------------------------------------------------------

class Harness:
    """Drives the RTL and the model with the same offers each cycle and compares every output.

    ``script(h)`` is a generator of per-cycle offers; simpler: tests fill the queues ``tx``,
    ``cn``, ``ctl``, ``csr_w`` (each item is offered until taken; ``p_valid`` idles) and set
    ``p_rate_ready`` / ``p_rd_ready``; ``run(cycles)`` or ``drain()`` steps both."""

    def __init__(self, cfg, dp=None, *, seed=SEED, period=40, model_dp=ToyDatapathModel):
        self.cfg = cfg
        self.dp = dp or ToyDatapath(cfg.time_width, period=period)
        self.stub = None
        if USE_WHEEL_RTL or cfg.timer != "wheel":     # the stub is the wheel's contract
            self.dut = FlowEngine(cfg, self.dp)
        else:
            self.stub_model = TimerWheelModel(cfg.wheel_config())

            def factory(wcfg):
                self.stub = WheelStub(wcfg)
                return self.stub
            self.dut = FlowEngine(cfg, self.dp, wheel=factory)
        self.model = FlowEngineModel(cfg, model_dp(self.dp))
        self.lay = engine_layouts(cfg, self.dp)
        self.rng = random.Random(seed)
        self.queues = {"tx": [], "cn": [], "ctl": [], "csr_w": []}
        self.p_valid = {"tx": 1.0, "cn": 1.0, "ctl": 1.0, "csr_w": 1.0}
        self.p_rate_ready = 1.0
        self.p_rd_ready = 1.0
        self.rates: list[tuple[int, int, int]] = []   # (cycle, flow, rate)
        self.rds: list[tuple[int, int]] = []          # (cycle, payload bits)
        self.taken = {"tx": [], "cn": [], "ctl": [], "csr_w": []}   # cycles of acceptance
        self.rdata: list[int] = []
        self.raddr = 0
        self.cycle = 0
        self._sim = None

    def _payload_bits(self, name, item):
        lay = self.lay[name] if name != "csr_w" else None
        if name == "tx":
            return lay.const({"flow": item[0], "bytes": item[1]}).as_bits()
        if name == "cn":
            return item[0] | item[1] << lay["cn"].offset
        if name == "ctl":
            return lay.const({"flow": item[0], "op": item[1], "field": item[2],
                              "value": item[3]}).as_bits()
        return item[0] | item[1] << 8

    def idle(self, timers_run: bool = False) -> bool:
        """Nothing queued and nothing in flight; with ``timers_run`` (periodic timers that
        never stop: their pops may keep the pipeline busy for good), no input event in
        flight."""
        if any(self.queues.values()):
            return False
        if timers_run:
            return not any(a is not None and a[0] != Src.TIMER for a in self.model.pipe)
        return not self.model.busy()

    async def _bench(self, ctx, cycles, until_idle, timers_run=False):
        dut, model, rng = self.dut, self.model, self.rng
        streams = {"tx": dut.tx, "cn": dut.cn, "ctl": dut.ctl, "csr_w": dut.csr_w}
        offering = {k: False for k in streams}
        n = 0
        while True:
            if cycles is not None and n >= cycles:
                break
            if until_idle and n > 0 and self.idle(timers_run):
                break
            n += 1
            offers = {}
            for k, s in streams.items():
                q = self.queues[k]
                if q and (offering[k] or rng.random() < self.p_valid[k]):
                    offering[k] = True
                    offers[k] = q[0]
                    ctx.set(s.payload.as_value(), self._payload_bits(k, q[0]))
                    ctx.set(s.valid, 1)
                else:
                    offers[k] = None
                    ctx.set(s.valid, 0)
            stub = self.stub
            if stub is not None:
                wo = self.stub_model.out
                ctx.set(stub.pop.valid, wo.pop_valid)
                ctx.set(stub.pop.payload, {"flow": wo.pop_flow, "gen": wo.pop_gen,
                                           "slot": wo.pop_slot})
                for name in WHEEL_STATS:
                    ctx.set(getattr(stub, name), getattr(wo, name))
            rr = rng.random() < self.p_rate_ready
            dr = rng.random() < self.p_rd_ready
            ctx.set(dut.rate.ready, rr)
            ctx.set(dut.rd.ready, dr)
            ctx.set(dut.csr_raddr, self.raddr)
            o = model.step(tx=offers["tx"], cn=offers["cn"], ctl=offers["ctl"],
                           csr_w=offers["csr_w"], rate_ready=rr, rd_ready=dr,
                           csr_raddr=self.raddr)
            got = {k: ctx.get(s.ready) for k, s in streams.items()}
            exp = {"tx": o.tx_ready, "cn": o.cn_ready, "ctl": o.ctl_ready,
                   "csr_w": o.csr_w_ready}
            where = f"cycle {self.cycle} (seed {SEED})"
            for k in streams:
                if offers[k] is not None or k == "csr_w":
                    assert bool(got[k]) == bool(exp[k]), f"{k}.ready {got[k]} != {exp[k]} {where}"
            assert ctx.get(dut.ready) == o.ready, where
            bits = expect_stream(ctx, dut.rate, o.rate, "rate", where)
            if bits is not None and rr:
                self.rates.append((self.cycle, bits & ((1 << self.cfg.flow_width) - 1),
                                   bits >> self.lay["rate"]["rate"].offset))
            bits = expect_stream(ctx, dut.rd, o.rd, "rd", where)
            if bits is not None and dr:
                self.rds.append((self.cycle, bits))
            rdata = ctx.get(dut.csr_rdata)
            assert rdata == o.csr_rdata, f"csr_rdata {rdata} != {o.csr_rdata} {where}"
            self.rdata.append(rdata)
            if stub is not None:
                ins = None
                if ctx.get(stub.ins.valid):
                    p = ctx.get(stub.ins.payload)
                    ins = (p.flow, p.gen, p.deadline)
                self.stub_model.step(ctx.get(dut.now), ins, ctx.get(stub.pop.ready))
            for k in streams:
                if offers[k] is not None and exp[k]:
                    self.queues[k].pop(0)
                    offering[k] = False
                    self.taken[k].append(self.cycle)
            await ctx.tick()
            self.cycle += 1

    def simulate(self, body):
        """Run ``await body(ctx)`` in one simulation (the harness's coroutines take ``ctx``)."""
        sim = Simulator(self.dut)
        sim.add_clock(1e-8)
        done = []

        async def bench(ctx):
            await body(ctx)
            done.append(True)

        sim.add_testbench(bench)
        sim.run()
        assert done

    async def run(self, ctx, cycles):
        await self._bench(ctx, cycles, False)

    async def drain(self, ctx, limit=100_000, timers_run=False):
        await self._bench(ctx, limit, True, timers_run)
        assert self.idle(timers_run), "did not drain"

    async def wait_ready(self, ctx):
        await self.run(ctx, self.cfg.n_flows + 2)

    async def read_counter(self, ctx, name):
        """Read a counter through csr_raddr (checked against the model on the way)."""
        if name.startswith("late_h"):
            addr = COUNTER_BASE + len(COUNTERS) + int(name[6:])
        else:
            addr = COUNTER_BASE + COUNTERS.index(name)
        self.raddr = addr
        await self.run(ctx, 2)
        return self.rdata[-1]

    def start_all(self, flows=None):
        for f in (range(self.cfg.n_flows) if flows is None else flows):
            self.queues["ctl"].append((f, CtlOp.START, 0, 0))


# -- tests -------------------------------------------------------------------------------------

def test_config_errors():
    with pytest.raises(ConfigError, match="n_flows"):
        FlowEngineConfig(n_flows=1000)
    with pytest.raises(ConfigError, match="wheel_horizon"):
        FlowEngineConfig(time_width=12)
    with pytest.raises(ConfigError, match="max_entries|wheel_slots"):
        FlowEngineConfig(n_flows=65536)
    FlowEngineConfig(n_flows=65536, wheel_slots=1 << 18)


def test_same_flow_every_cycle():
    """One flow, one event per clock for 300 cycles (TX and CN mixed): no stall, every output
    equal to the model's, and the events taken on consecutive cycles."""
    h = Harness(small_config())

    async def body(ctx):
        await h.wait_ready(ctx)
        h.start_all([5])
        await h.drain(ctx)
        for i in range(300):
            if i % 7 == 3:
                h.queues["cn"].append((5, i % 64))
            else:
                h.queues["tx"].append((5, 100 + i))
        await h.drain(ctx)
    h.simulate(body)
    taken = sorted(h.taken["tx"] + h.taken["cn"])
    pops = [c for c in h.model.issue_log if c[1] == 2 and taken[0] <= c[0] <= taken[-1]]
    assert len(taken) == 300 and taken[-1] - taken[0] == 299 + len(pops)
    assert h.model.flows[5].algo["cnt"] == 300


def test_alternating_two_flows():
    """Flows 0 and 15 (first and last) alternating every cycle: forwarding from two stages."""
    h = Harness(small_config())

    async def body(ctx):
        await h.wait_ready(ctx)
        h.start_all([0, 15])
        for i in range(200):
            f = 0 if i % 2 else 15
            (h.queues["cn"] if i % 5 == 0 else h.queues["tx"]).append((f, i % 64))
        await h.drain(ctx)
    h.simulate(body)
    assert h.model.flows[0].algo["cnt"] == 100 and h.model.flows[15].algo["cnt"] == 100


def test_ctl_write_and_read_in_flight():
    """WRITE and READ of a flow whose TX/CN updates are still in the pipeline (every distance
    0 ... 4 cycles), START/STOP/RESET in between; the READ words come out as the model's."""
    h = Harness(small_config())

    async def body(ctx):
        await h.wait_ready(ctx)
        h.start_all()
        await h.drain(ctx)
        for gap in range(5):
            h.queues["tx"] += [(3, 1000 + gap)] * 3
            h.queues["ctl"].append((3, CtlOp.WRITE, 0, 77 + gap))      # cnt := 77 + gap
            await h.run(ctx, 1)                                     # the ctl goes first
            h.queues["ctl"].append((3, CtlOp.READ, 0, 0))
            await h.run(ctx, gap)
            h.queues["tx"].append((3, 5))
            h.queues["ctl"].append((3, CtlOp.READ, 0, 0))
            await h.drain(ctx)
        h.queues["ctl"] += [(4, CtlOp.STOP, 0, 0), (4, CtlOp.READ, 0, 0)]
        await h.drain(ctx)
        h.queues["tx"] += [(4, 9)] * 4                 # dropped (counted as disabled)
        await h.drain(ctx)
        h.queues["ctl"] += [(4, CtlOp.RESET, 0, 0), (4, CtlOp.READ, 0, 0),
                            (4, CtlOp.START, 0, 0), (4, CtlOp.READ, 0, 0)]
        await h.drain(ctx)
        assert await h.read_counter(ctx, "disabled") == 4
    h.simulate(body)
    assert len(h.rds) == 13
    word = h.lay["word"]
    # independent check of the last READ of flow 3: WRITE cnt := 81, then the three TX (the
    # READ queued with the last TX goes first: ctl > tx)
    last3 = [word.from_bits(bits >> h.lay["rd"]["word"].offset) for _, bits in h.rds
             if bits & 15 == 3][-1]
    assert last3.algo.cnt == 84 and last3.en == 1


def queue_random_traffic(h: Harness, rng: random.Random, n: int, *, cn_hot: bool = False):
    """Queue ``n`` TX events over 16 flows (a hot flow half the time, changed every 200), CNs
    (of the TX's flow, or with ``cn_hot`` of the hot flow half the time), control operations of
    every kind and a few register writes."""
    hot = 0
    for i in range(n):
        if i % 200 == 0:
            hot = rng.randrange(16)
        f = hot if rng.random() < 0.5 else rng.randrange(16)
        h.queues["tx"].append((f, rng.randrange(1 << 14)))
        if rng.random() < 0.3:
            g = (hot if rng.random() < 0.5 else rng.randrange(16)) if cn_hot else f
            h.queues["cn"].append((g, rng.randrange(64)))
        if rng.random() < 0.08:
            op = rng.choice([CtlOp.READ, CtlOp.READ, CtlOp.WRITE, CtlOp.STOP, CtlOp.START,
                             CtlOp.RESET])
            field = rng.randrange(8)
            h.queues["ctl"].append((f, op, field, rng.randrange(1 << 12)))
        if rng.random() < 0.005:
            h.queues["csr_w"].append((rng.randrange(4), rng.randrange(20, 200)))


def test_random_traffic_backpressure():
    """Random TX/CN/ctl/register writes over 16 flows with hot stretches, random idle and
    random back-pressure on rate and rd: every output every cycle equals the model's."""
    rng = random.Random(SEED)
    h = Harness(small_config(), seed=SEED)
    h.p_valid = {"tx": 0.8, "cn": 0.3, "ctl": 0.1, "csr_w": 0.02}
    h.p_rate_ready, h.p_rd_ready = 0.6, 0.5
    n = 1500

    async def body(ctx):
        await h.wait_ready(ctx)
        h.start_all()
        queue_random_traffic(h, rng, n)
        h.raddr = COUNTER_BASE + COUNTERS.index("ev_tx")
        await h.drain(ctx)
        for name in COUNTERS + WHEEL_STATS:
            await h.read_counter(ctx, name) if name in COUNTERS else None
    h.simulate(body)
    print(f"seed {SEED}: {h.cycle} cycles, {h.model.issued} events")
    assert h.model.counters["ev_tx"] == n
    assert h.model.counters["expiries"] > 50
    assert h.model.wheel.out.overflow_count == 0


@pytest.mark.parametrize("il", [4, 5, 6], ids=["wheel-L4", "wheel-L5", "wheel-L6"])
def test_timer_burst(il):
    """Every flow's timer due in the same cycle: the i-th expiry in wheel order is i cycles
    late, so with 16 flows the worst case is 15 cycles, the sum 0 + 1 + ... + 15 = 120
    (whatever the wheel's insert latency)."""
    h = Harness(small_config(wheel_insert_latency=il))
    d = 600

    async def body(ctx):
        await h.wait_ready(ctx)
        h.start_all()
        for f in range(16):
            h.queues["ctl"] += [(f, CtlOp.WRITE, 3, d), (f, CtlOp.WRITE, 4, 1)]  # dl, armed
        await h.drain(ctx)
        assert h.cycle < d - 10
        # the last expiry issues at d + 15 and is counted in its write-back, PIPE_DEPTH
        # cycles later; read then, before the reloads (d + 40) fall due
        await h.run(ctx, d + 16 + PIPE_DEPTH - h.cycle)
        got = {name: await h.read_counter(ctx, name)
               for name in ("expiries", "late_max", "late_sum", "late_h0", "late_h4")}
        assert got == {"expiries": 16, "late_max": 15, "late_sum": 120, "late_h0": 1,
                       "late_h4": 8}, got
    h.simulate(body)


@pytest.mark.parametrize("kw, events, seed", [
    ({"wheel_insert_latency": 4}, 650, SEED + 1), ({"wheel_insert_latency": 5}, 650, SEED + 1),
    ({"wheel_insert_latency": 6}, 650, SEED + 1), ({"timer": "calendar"}, 400, SEED + 4)],
    ids=["wheel-L4", "wheel-L5", "wheel-L6", "calendar"])
def test_lateness_zero_with_distinct_deadlines(kw, events, seed):
    """Random TX/CN on 16 flows, outputs always ready, no register writes: every deadline comes
    from one event per cycle, so no two fall in one cycle and every expiry is on time (the
    toy's 40-cycle period is above reeval = 9, 10 or 11 on the wheel, 15 on the calendar, where
    every slot then holds one entry and pops at its deadline)."""
    rng = random.Random(seed)
    h = Harness(small_config(**kw), seed=seed)
    h.p_valid = {"tx": 0.7, "cn": 0.2, "ctl": 1.0, "csr_w": 1.0}

    async def body(ctx):
        await h.wait_ready(ctx)
        h.start_all()
        for _ in range(events):
            f = rng.randrange(16)
            h.queues["tx"].append((f, rng.randrange(1 << 14)))
            if rng.random() < 0.2:
                h.queues["cn"].append((f, rng.randrange(64)))
        # (16 flows' 40-cycle timers: their pops may occupy the pipeline every cycle)
        await h.drain(ctx, timers_run=True)
        await h.run(ctx, 200)
        assert await h.read_counter(ctx, "late_max") == 0
        assert await h.read_counter(ctx, "expiries") > events // 6
    h.simulate(body)


def test_credits_stop_at_fifo_depth():
    """The output credits at their bound (out_fifo_depth D = 5, by hand): with ``rd`` held,
    exactly D READs are taken (the FIFO's D records), the rest wait; with ``rate`` held,
    exactly D rate-changing CNs (each writes a record: the toy halves the rate, 1000 -> 500
    -> ... changes 10 times).  Then released, everything comes out; every cycle equals the
    model, and a credit one too generous would take a sixth event (and lose its record)."""
    h = Harness(small_config())
    D = h.cfg.out_fifo_depth

    async def body(ctx):
        await h.wait_ready(ctx)
        h.start_all()
        await h.drain(ctx)
        h.p_rd_ready = 0.0
        h.queues["ctl"] += [(f, CtlOp.READ, 0, 0) for f in range(8)]
        await h.run(ctx, 30)
        assert len(h.taken["ctl"]) == 16 + D and len(h.queues["ctl"]) == 8 - D
        h.p_rd_ready = 1.0
        await h.drain(ctx)
        assert len(h.rds) == 8
        n_rates = len(h.rates)
        h.p_rate_ready = 0.0
        h.queues["cn"] += [(0, 0)] * 10
        await h.run(ctx, 30)
        assert len(h.taken["cn"]) == D and len(h.queues["cn"]) == 10 - D
        h.p_rate_ready = 1.0
        await h.run(ctx, 30)
        assert not h.queues["cn"]
        assert [r for _, f, r in h.rates[n_rates:] if f == 0][:10] == [
            500, 250, 125, 63, 32, 16, 8, 4, 2, 1]
    h.simulate(body)


def test_throughput_one_event_per_clock():
    """Saturated inputs (TX always offered, hot flow half the time) and outputs always ready:
    after the init sweep an event issues every cycle (events / cycles = 1.0)."""
    rng = random.Random(SEED + 2)
    h = Harness(small_config(), seed=SEED + 2)

    async def body(ctx):
        await h.wait_ready(ctx)
        h.start_all()
        await h.drain(ctx)
        for i in range(500):
            h.queues["tx"].append((7 if rng.random() < 0.5 else rng.randrange(16), i))
            if i % 3 == 0:
                h.queues["cn"].append((rng.randrange(16), i % 64))
        c0, e0 = h.cycle, h.model.issued
        await h.run(ctx, 500)
        assert h.model.issued - e0 == 500, (h.model.issued - e0, h.cycle - c0)
        await h.drain(ctx)
    h.simulate(body)


# -- the calendar timer service (FlowEngineConfig.timer = "calendar") ------------------------

def test_calendar_config():
    """The choice is validated; the calendar's own sizing rules reach the engine config as one
    ConfigError line; the wheel's capacity rule does not apply to it; IL 10 -> reeval 14."""
    with pytest.raises(ConfigError, match="timer"):
        small_config(timer="heap")
    with pytest.raises(ConfigError, match="horizon"):
        small_config(timer="calendar", wheel_horizon=100)      # below 5 words of 32
    # 128 flows x 2 entries + horizon 256 + 32 > 512 slots: the wheel refuses, the calendar not
    with pytest.raises(ConfigError):
        small_config(n_flows=128)
    cfg = small_config(n_flows=128, timer="calendar")
    assert cfg.timer_config().insert_latency == 10
    assert reeval(1, cfg.timer_config().insert_latency) == 15
    assert small_config().timer_config() == small_config().wheel_config()


def test_calendar_random_traffic():
    """The main random run (TX/CN/ctl/register writes, back-pressure) on the calendar: every
    output every cycle equals the model's (which uses TimerCalendarModel, IL 10).  The
    calendar's model stops at an id inserted twice: this run reached that with the engine's
    old generation rule (q_gen + 1 whatever was queued), so it also checks that the engine
    gives new entries only generations not queued (q_mask)."""
    rng = random.Random(SEED + 3)
    h = Harness(small_config(timer="calendar"), seed=SEED + 3)
    h.p_valid = {"tx": 0.8, "cn": 0.3, "ctl": 0.1, "csr_w": 0.02}
    h.p_rate_ready, h.p_rd_ready = 0.6, 0.5
    n = 600 if not LONG else 6000

    async def body(ctx):
        await h.wait_ready(ctx)
        h.start_all()
        queue_random_traffic(h, rng, n)
        h.raddr = COUNTER_BASE + COUNTERS.index("ev_tx")
        await h.drain(ctx)
        base = COUNTER_BASE + len(COUNTERS) + len(LATE_BUCKETS)
        # the statistics keep the wheel's addresses: index 2 is max_lateness, 3 and 4 read 0
        # (read while the toy's timers still run: each register against the calendar model's
        # port of the cycle the address is presented, the cycle the register samples)
        got, want = [], []
        for i in range(5):
            h.raddr = base + i
            o = h.model.wheel.out
            want.append([o.occupancy, o.max_occupancy, o.max_lateness, 0, 0][i])
            await h.run(ctx, 2)
            got.append(h.rdata[-1])
        assert got == want, (got, want)
        assert want[1] > 0
    h.simulate(body)
    print(f"seed {SEED + 3}: {h.cycle} cycles, {h.model.issued} events")
    assert h.model.counters["ev_tx"] == n
    assert h.model.counters["expiries"] > 20


def test_calendar_timer_burst():
    """Every flow's timer due in one cycle on the calendar: the 16 entries share one slot and
    pop LIFO one per 3 cycles, the first at its deadline: lateness 0, 3, ..., 45 (by hand:
    max 45, sum 3 x 120 = 360; buckets 0 | 3 | 6 | 9, 12, 15 | 18 ... 45 = 1, 1, 1, 3, 10).
    The deadline is within the horizon (256), so every entry goes straight to its slot; the
    toy's period is 200 here so that no reload falls due before the read."""
    h = Harness(small_config(timer="calendar"), period=200)
    d = 200

    async def body(ctx):
        await h.wait_ready(ctx)
        h.start_all()
        for f in range(16):
            h.queues["ctl"] += [(f, CtlOp.WRITE, 3, d), (f, CtlOp.WRITE, 4, 1)]  # dl, armed
        await h.drain(ctx)
        assert h.cycle < d - 10
        await h.run(ctx, d + 70 - h.cycle)
        names = ("expiries", "late_max", "late_sum") + tuple(f"late_h{i}" for i in range(8))
        got = {name: await h.read_counter(ctx, name) for name in names}
        assert got == {"expiries": 16, "late_max": 45, "late_sum": 360, "late_h0": 1,
                       "late_h1": 0, "late_h2": 1, "late_h3": 1, "late_h4": 3, "late_h5": 10,
                       "late_h6": 0, "late_h7": 0}, got
        # the statistics keep the wheel's addresses: index 2 is the calendar's max_lateness
        # (the last pop, 45 cycles after its slot), overflow and overflow_count read 0
        base = COUNTER_BASE + len(COUNTERS) + len(LATE_BUCKETS)
        stats = []
        for i in (2, 3, 4):
            h.raddr = base + i
            await h.run(ctx, 2)
            stats.append(h.rdata[-1])
        assert stats == [45, 0, 0], stats
    h.simulate(body)


