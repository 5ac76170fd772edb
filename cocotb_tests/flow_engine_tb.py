"""cocotb testbench of the multi-flow engine (hw/nic/flow_engine.py), generic over the datapath.

The pytest runner names the top (``CC_TOP``, an entry of ``gateware.tops.TOPS`` whose factory
returns a ``FlowEngine``) and the model datapath class (``CC_MODEL_DP``, ``module:Class``, built
from the RTL datapath); the same testbench runs the toy, DCQCN, QCN, TIMELY and Swift engines.

One coroutine does everything, one iteration per clock cycle, at mid-period: it offers the
inputs of the cycle (tx / cn / ctl / csr_w, each item held until taken, random idle), draws the
outputs' ready (random back-pressure), waits for ``ReadOnly``, reads every output of the DUT,
steps :class:`sim.models.flow_engine.FlowEngineModel` with the same inputs and compares: every
input's ready, ``rate`` and ``rd`` valid and payload, ``csr_rdata`` and ``ready``, every cycle.
Signals are written only when they change (with ``COCOTB_TRUST_INERTIAL_WRITES=1`` cocotb
drives the clock from C++).  The run ends with every queue empty: inputs, the model's
pipeline and output FIFOs (and so the DUT's), then every counter is read back.

Knobs (environment): ``CC_EVENTS`` input events, ``CC_DEFAULT_SEED``/``CC_SEED``;
``CC_WRITE_FIELDS``: state fields a random ctl WRITE may set (comma-separated; default all,
empty string none); ``CC_REG_WRITES``: 1 to rewrite registers at random (their reset values,
or the ``CC_REGS`` values, so every datapath stays in range); ``CC_REGS``: JSON object
register name -> value, written through ``csr_w`` after the START of every flow (a DCQCN
profile loaded at run time); ``CC_ENGINE_CONFIG``: the top's configuration as JSON, when the
runner built a variant of the top (e.g. a smaller timer wheel); ``CC_CN_SOURCE``: ``timely`` or
``swift``, the notifications of :func:`algo_events` (:data:`CN_SOURCES`); ``CC_HOT_START``:
the chance per event that a hot stretch starts (default 0.002; hot stretches cost about the
datapath's latency in cycles per event, so a long run of a deep datapath may make them rarer).
The test ``ldcp_events`` drives the three LDCP tops with the event sources of
:mod:`cocotb_tests.ldcp_engine_events` (``CC_LDCP_SOURCE``, ``CC_LDCP_CHUNK``, ``CC_LDCP_HOT``),
which read the model's state of a flow to build its next events.
"""

from __future__ import annotations

import importlib
import json
import os
import time

import cocotb
from cocotb.triggers import ClockCycles, ReadOnly, Timer

from cocotb_tests.infra.tb import CLOCK_PERIOD_NS, TBBase, env_count, env_seed
from hw.nic.flow_datapath import CtlOp
from hw.nic.flow_engine import COUNTERS, LATE_BUCKETS, WHEEL_STATS, engine_layouts
from hw.nic.flow_engine_config import COUNTER_BASE
from sim.models.flow_engine import FlowEngineModel

__all__ = ["FlowEngineTB", "engine_parts"]


def engine_parts():
    """(engine component, model datapath) from ``CC_TOP`` and ``CC_MODEL_DP``."""
    from gateware.tops import TOPS
    top = TOPS[os.environ["CC_TOP"]]
    cfg = os.environ.get("CC_ENGINE_CONFIG")       # the top's configuration, varied (JSON)
    engine = top.factory(type(top.config).from_json(cfg)) if cfg else top.build()
    mod, cls = os.environ["CC_MODEL_DP"].split(":")
    dpm = getattr(importlib.import_module(mod), cls)(engine.dp)
    return engine, dpm


class FlowEngineTB(TBBase):
    """The engine's DUT and model in lock step (see the module docstring); :class:`TBBase`
    starts the clock and seeds ``rng``."""

    STREAMS = ("tx", "cn", "ctl", "csr_w")

    def __init__(self, dut, seed: int):
        super().__init__(dut, seed)
        engine, dpm = engine_parts()
        self.engine = engine
        engine._MustUse__silence = True      # built for its parameters only
        self.cfg = engine.config
        self.dp = engine.dp
        self.model = FlowEngineModel(self.cfg, dpm)
        self.model.log_issue = False
        self.lay = engine_layouts(self.cfg, self.dp)
        self.queues = {k: [] for k in self.STREAMS}
        self.p_valid = {k: 1.0 for k in self.STREAMS}
        self.p_rate_ready = 1.0
        self.p_rd_ready = 1.0
        self.raddr = 0
        self.last_rdata = 0
        self.cycles = 0                  # cycles stepped (DUT and model)
        self.checks = 0
        self.rates = 0
        self.rds = 0
        self._valid = {k: getattr(dut, f"{k}__valid") for k in self.STREAMS}
        self._payload = {k: getattr(dut, f"{k}__payload") for k in self.STREAMS}
        self._ready = {k: getattr(dut, f"{k}__ready") for k in self.STREAMS}
        self._written = {}
        self._offering = {k: None for k in self.STREAMS}
        self._ctl_field_off = self.lay["ctl"]["field"].offset
        self._ctl_value_off = self.lay["ctl"]["value"].offset
        self._ctl_op_off = self.lay["ctl"]["op"].offset
        self._tx_off = self.lay["tx"]["bytes"].offset
        self._cn_off = self.lay["cn"]["cn"].offset
        # csr_w is {addr, data[32]}: the engine tops' register map (the engine's 8 address bits
        # and the identification header above them) has 9, the bare engine 8
        self._csr_data_off = len(self._payload["csr_w"]) - 32

    # -- encoding ----------------------------------------------------------------------------
    def _bits(self, k, item) -> int:
        if k == "tx":
            return item[0] | item[1] << self._tx_off
        if k == "cn":
            return item[0] | item[1] << self._cn_off
        if k == "ctl":
            return (item[0] | CtlOp(item[1]).value << self._ctl_op_off
                    | item[2] << self._ctl_field_off
                    | item[3] << self._ctl_value_off)
        return item[0] | item[1] << self._csr_data_off

    def _write(self, sig, value):
        key = id(sig)
        if self._written.get(key) != value:
            sig.value = value
            self._written[key] = value

    # -- run ---------------------------------------------------------------------------------
    async def start(self):
        """Reset; the cycle after the reset edge is the model's cycle 0.  Then the init sweep."""
        dut = self.dut
        for k in self.STREAMS:
            self._write(self._valid[k], 0)
        self._write(dut.rate__ready, 0)
        self._write(dut.rd__ready, 0)
        self._write(dut.csr_raddr, 0)
        dut.rst.value = 1
        await ClockCycles(dut.clk, 2)
        dut.rst.value = 0
        await Timer(CLOCK_PERIOD_NS // 2, unit="ns")      # mid-period of cycle 0
        await self.run(self.cfg.n_flows + 2)
        assert int(dut.ready.value) == 1

    async def run(self, cycles: int | None = None, *, until_idle: bool = False):
        """Step DUT and model ``cycles`` cycles, or until queues and model are empty."""
        dut, model, rng = self.dut, self.model, self.rng
        queues, offering = self.queues, self._offering
        rate_valid, rate_payload = dut.rate__valid, dut.rate__payload
        rd_valid, rd_payload = dut.rd__valid, dut.rd__payload
        csr_rdata, ready_sig = dut.csr_rdata, dut.ready
        n = 0
        while True:
            if cycles is not None and n >= cycles:
                break
            if until_idle and not any(queues.values()) and not model.busy() and \
                    not any(offering.values()):
                break
            n += 1
            offers = {}
            for k in self.STREAMS:
                item = offering[k]
                if item is None and queues[k] and rng.random() < self.p_valid[k]:
                    item = offering[k] = queues[k].pop(0)
                    self._write(self._payload[k], self._bits(k, item))
                self._write(self._valid[k], 0 if item is None else 1)
                offers[k] = item
            rr = self.p_rate_ready >= 1.0 or rng.random() < self.p_rate_ready
            dr = self.p_rd_ready >= 1.0 or rng.random() < self.p_rd_ready
            self._write(dut.rate__ready, int(rr))
            self._write(dut.rd__ready, int(dr))
            self._write(dut.csr_raddr, self.raddr)
            await ReadOnly()
            o = model.step(tx=offers["tx"], cn=offers["cn"], ctl=offers["ctl"],
                           csr_w=offers["csr_w"], rate_ready=rr, rd_ready=dr,
                           csr_raddr=self.raddr)
            got = [int(self._ready[k].value) for k in self.STREAMS]
            exp = [int(o.tx_ready), int(o.cn_ready), int(o.ctl_ready), int(o.csr_w_ready)]
            if got != exp:
                self._fail(f"ready (tx, cn, ctl, csr_w) {got} != model {exp}", offers)
            rv = int(rate_valid.value)
            if rv != (o.rate is not None) or (rv and int(rate_payload.value) != o.rate):
                self._fail(f"rate valid {rv} payload "
                           f"{int(rate_payload.value) if rv else None} != model {o.rate}", offers)
            dv = int(rd_valid.value)
            if dv != (o.rd is not None) or (dv and int(rd_payload.value) != o.rd):
                self._fail(f"rd valid {dv} payload {int(rd_payload.value) if dv else None} "
                           f"!= model {o.rd}", offers)
            self.last_rdata = o.csr_rdata
            if int(csr_rdata.value) != o.csr_rdata:
                self._fail(f"csr_rdata {int(csr_rdata.value)} != model {o.csr_rdata}", offers)
            if int(ready_sig.value) != o.ready:
                self._fail("ready differs", offers)
            self.rates += rv and rr
            self.rds += dv and dr
            for i, k in enumerate(self.STREAMS):
                if offers[k] is not None and exp[i]:
                    offering[k] = None
            self.checks += 1
            self.cycles += 1
            await Timer(CLOCK_PERIOD_NS, unit="ns")

    def _fail(self, what, offers):
        raise AssertionError(f"cycle {self.cycles} (model cycle {self.model.cycle}, seed "
                             f"{self.seed}): {what}; offers {offers}")

    async def drain(self, limit: int = 2_000_000):
        await self.run(limit, until_idle=True)
        assert not any(self.queues.values()) and not self.model.busy(), "did not drain"

    async def read_all_counters(self) -> dict:
        """Read every counter and wheel statistic through csr_raddr (each compared with the
        model on the way); return name -> value."""
        names = COUNTERS + [f"late_h{i}" for i in range(len(LATE_BUCKETS))] + WHEEL_STATS
        values = {}
        for i, name in enumerate(names):
            self.raddr = COUNTER_BASE + i
            await self.run(2)
            values[name] = self.last_rdata
        self.raddr = 0
        return values

    async def read_every_flow(self):
        """A READ of every flow (each response compared with the model's)."""
        for f in range(self.cfg.n_flows):
            self.queues["ctl"].append((f, CtlOp.READ, 0, 0))
        await self.drain()


def _random_traffic(tb: FlowEngineTB, n_events: int, cn_payload=None,
                    p_cn_choices=(0.02, 0.1, 0.3)):
    """Queue ``n_events`` input events: hot flows (the same flow for long stretches) and
    uniform traffic over every flow, TX mostly, CN, ctl ops, register writes.  ``cn_payload``
    (flow -> payload bits; default random bits) and ``p_cn_choices`` (the CN share, redrawn
    every 5000 events) let an algorithm's run send meaningful notifications, mostly."""
    rng, cfg, dp = tb.rng, tb.cfg, tb.dp
    N = cfg.n_flows
    txw = dp.tx_bytes_width
    cnw = dp.cn_layout.size
    fields = tb.lay["fields"]
    wf = os.environ.get("CC_WRITE_FIELDS")
    write_fields = (list(range(len(fields))) if wf is None else
                    [fields.index(x) for x in wf.split(",") if x])
    value_width = tb.lay["ctl"]["value"].width
    reg_writes = os.environ.get("CC_REG_WRITES", "1") == "1"
    reg_values = {**{name: reset for name, _, reset in dp.regs}, **env_regs()}
    hot, hot_left = 0, 0
    # CC_HOT_START: the chance per event that a hot stretch starts (one flow's events, each
    # waiting for its predecessor's update: about ``latency`` cycles apart)
    p_hot = float(os.environ.get("CC_HOT_START") or 0.002)
    p_cn = 0.15
    for i in range(n_events):
        if i % 5000 == 0:
            p_cn = rng.choice(list(p_cn_choices))
        if hot_left == 0 and rng.random() < p_hot:
            hot, hot_left = rng.randrange(N), rng.randint(50, 2000)
        if hot_left:
            hot_left -= 1
            f = hot if rng.random() < 0.9 else rng.randrange(N)
        else:
            f = rng.randrange(N)
        x = rng.random()
        if x < p_cn:
            tb.queues["cn"].append((f, rng.getrandbits(cnw) if cn_payload is None
                                    else cn_payload(f)))
        elif x < p_cn + 0.01:
            op = rng.choice([CtlOp.READ, CtlOp.READ, CtlOp.READ, CtlOp.WRITE, CtlOp.STOP,
                             CtlOp.START, CtlOp.RESET])
            if op == CtlOp.WRITE and not write_fields:
                op = CtlOp.READ
            field = rng.choice(write_fields) if op == CtlOp.WRITE else 0
            tb.queues["ctl"].append((f, op, field, rng.getrandbits(value_width)))
            if op == CtlOp.STOP:      # start it again soon: most flows stay active
                tb.queues["ctl"].append((f, CtlOp.START, 0, 0))
        else:
            if txw < 7:         # a datapath that ignores tx bytes (TIMELY, Swift: 1 dummy bit)
                b = rng.getrandbits(txw)
            else:
                b = rng.randint(64, min(9000, (1 << txw) - 1)) if rng.random() < 0.97 else \
                    rng.choice([0, 1, (1 << txw) - 1])
            tb.queues["tx"].append((f, b))
        if reg_writes and rng.random() < 0.0005:
            addr = rng.randrange(len(dp.regs))
            tb.queues["csr_w"].append((addr, reg_values[dp.regs[addr][0]]))


def env_regs() -> dict:
    """``CC_REGS``: register name -> value (JSON), {} if unset."""
    return json.loads(os.environ.get("CC_REGS") or "{}")


def load_env_regs(tb: FlowEngineTB):
    """Queue the ``CC_REGS`` writes on ``csr_w``."""
    names = [name for name, _, _ in tb.dp.regs]
    for name, value in env_regs().items():
        tb.queues["csr_w"].append((names.index(name), value))


@cocotb.test()
async def random_events(dut):
    """START every flow, then random events (hot flows, >= 1000 active flows with N = 1024),
    random idle on every input and random back-pressure on rate and rd; every output compared
    every cycle; every flow READ at the end; every counter read back; wheel never overflowed."""
    tb = FlowEngineTB(dut, env_seed(1))
    n_events = env_count("CC_EVENTS", 20000)
    await tb.start()
    for f in range(tb.cfg.n_flows):
        tb.queues["ctl"].append((f, CtlOp.START, 0, 0))
    load_env_regs(tb)
    await tb.drain()
    _random_traffic(tb, n_events)
    tb.p_valid = {"tx": 0.9, "cn": 0.5, "ctl": 0.5, "csr_w": 0.5}
    tb.p_rate_ready, tb.p_rd_ready = 0.9, 0.7
    t0, c0, e0 = time.perf_counter(), tb.cycles, tb.model.issued
    await tb.drain()
    dt = time.perf_counter() - t0
    events = tb.model.issued - e0
    await tb.read_every_flow()
    counters = await tb.read_all_counters()
    tb.log.info("%d input events, %d events issued (incl. timer pops) in %d cycles "
                "(%.3f events/cycle), %.0f events/s wall, %d rate outputs, %d reads",
                n_events, events, tb.cycles - c0, events / (tb.cycles - c0), events / dt,
                tb.rates, tb.rds)
    tb.log.info("counters: %s", counters)
    assert counters["overflow"] == 0 and counters["overflow_count"] == 0
    assert counters["expiries"] > 0


@cocotb.test()
async def saturation(dut):
    """Inputs always offered and outputs always ready, hot flow half the time: events issued
    per cycle after the init sweep = 1.0 (every cycle issues an event).  With a datapath of
    latency L > 1 the hot flow comes back every L-th event (the events of one flow are L
    cycles apart; docs/flow-engine.md), and the flows in between are not among the last L - 1:
    still one event per clock."""
    tb = FlowEngineTB(dut, env_seed(2))
    await tb.start()
    N = tb.cfg.n_flows
    for f in range(N):
        tb.queues["ctl"].append((f, CtlOp.START, 0, 0))
    await tb.drain()
    rng = tb.rng
    n = env_count("CC_SAT_EVENTS", 4000)
    L = tb.dp.latency
    recent: list = []
    for i in range(n):
        if L == 1:
            f = 7 if rng.random() < 0.5 else rng.randrange(N)
        else:
            f = 7 if i % L == 0 else rng.choice([g for g in range(N)
                                                  if g != 7 and g not in recent])
            recent = (recent + [f])[-(L - 1):]
        tb.queues["tx"].append((f, 64 + i % 1000))
    c0, e0 = tb.cycles, tb.model.issued
    await tb.run(n)
    per_cycle = (tb.model.issued - e0) / (tb.cycles - c0)
    tb.log.info("saturation: %d events in %d cycles = %.4f events/cycle",
                tb.model.issued - e0, tb.cycles - c0, per_cycle)
    assert per_cycle == 1.0
    await tb.drain()


# -- TIMELY and Swift: completions and ACKs as a NIC would send them ----------------------------

def _packer(layout):
    """fields dict -> the payload bits of ``layout`` (each value masked to its field)."""
    spans = [(name, f.offset, (1 << f.width) - 1) for name, f in layout]

    def pack(**values):
        return sum((values[name] & mask) << off for name, off, mask in spans)
    return pack


class TimelyEvents:
    """TIMELY completions: each flow's RTT a random walk (steps of a few hundred cycles, jumps
    now and then, values at ``T_low`` and ``T_high`` exactly, rarely a saturating or negative
    RTT), 16-64 KB segments serialized at the line rate, the application's bytes around the
    application-limited threshold; so every region (below ``T_low``, the gradient's increase
    with HAI and its cut, above ``T_high``) is visited by every active flow."""

    def __init__(self, tb: FlowEngineTB):
        self.rng, self.pack = tb.rng, _packer(tb.dp.cn_layout)
        self.r = {**{name: reset for name, _, reset in tb.dp.regs}, **env_regs()}
        self.rtt: dict[int, int] = {}
        self.t: dict[int, int] = {}

    def __call__(self, f: int) -> int:
        rng, r = self.rng, self.r
        lo, hi = r["t_low"], r["t_high"]
        x = rng.random()
        rtt = self.rtt.get(f, rng.randint(lo // 2, 2 * hi))
        if x < 0.05:
            rtt = rng.choice([lo, hi, lo - 1, hi + 1, rng.randint(0, 3 * hi)])
        elif x < 0.06:
            rtt = rng.choice([rng.getrandbits(24), -rng.randint(1, 100)])
        else:
            rtt = max(0, rtt + rng.choice([0, 0, rng.randint(-300, 300),
                                           rng.randint(-hi // 8, hi // 8)]))
        self.rtt[f] = min(rtt, 1 << 24)
        seg = rng.choice([16384, 65536, rng.randint(16384, 65536)])
        ser = (seg * r["ser_per_byte"]) >> 24
        t_send = (self.t.get(f, rng.getrandbits(32)) + rng.randint(1, 1 << 16)) & 0xFFFFFFFF
        self.t[f] = t_send
        cycles = rng.choice([rng.randint(1, 2 * hi), 0, rng.getrandbits(32)])
        # the bytes that meet the rule at the current rate are unknown here (the flow's rate
        # is the engine's): around the threshold of a mid-range rate, or plenty, or none
        need = (cycles * r["app_k"] * (r["max_rate"] >> 4)) >> 40
        app = rng.choice([need, need + rng.randint(-50, 50), 1 << 31, 0, rng.getrandbits(32)])
        return self.pack(t_send=t_send, t_comp=t_send + rtt + ser, seg_bytes=seg,
                         app_bytes=max(app, 0), app_cycles=cycles)


class SwiftEvents:
    """Swift events: ACKs mostly (each flow's fabric delay a random walk around its target,
    sometimes exactly at it; endpoint delays around the endpoint target; 0-20 hops, rarely
    beyond max_hops; 1-8 packets acknowledged, rarely 0 or 255), retransmission timeouts and
    fast recoveries now and then, an idle op rarely; the receive stamp advancing per flow by
    about an RTT or less, so the once-per-RTT guard both holds and lets a cut through; windows
    from max_cwnd down through one packet into pacing.  Congestion episodes (3-12 events of a
    flow, started at random): fabric delays 2-5 times the target, the stamp a full RTT later
    each time (every ACK may cut, by ``max_mdf`` at most), timeouts a third of the time: the
    ACK increases alone keep a window above one packet (``ai n / w`` per ACK against one cut
    per RTT), so without them a short run never reaches the paced regime (``pace`` > 0) nor
    leaves it."""

    def __init__(self, tb: FlowEngineTB):
        self.rng, self.pack = tb.rng, _packer(tb.dp.cn_layout)
        self.r = {**{name: reset for name, _, reset in tb.dp.regs}, **env_regs()}
        self.fab: dict[int, int] = {}
        self.now: dict[int, int] = {}
        self.storm: dict[int, int] = {}      # events left in a flow's congestion episode

    def __call__(self, f: int) -> int:
        rng, r = self.rng, self.r
        tgt = r["base_target"] + r["hop_scale"]
        if self.storm.get(f, 0) == 0 and rng.random() < 0.03:
            self.storm[f] = rng.randint(3, 12)
        if self.storm.get(f, 0):
            return self._storm(f, tgt)
        op = rng.choices([0, 1, 2, 3], [90, 4, 4, 2])[0]
        fab = self.fab.get(f, rng.randint(0, 3 * tgt))
        x = rng.random()
        if x < 0.05:
            fab = rng.choice([tgt - 1, tgt, tgt + 1, 0])
        elif x < 0.06:
            fab = rng.getrandbits(rng.choice([24, 32]))
        else:
            fab = max(0, min(fab + rng.randint(-tgt // 4, tgt // 4), 1 << 24))
        self.fab[f] = fab
        ep = rng.choice([r["endpoint_target"] + rng.randint(-2, 2), rng.randint(0, 4000),
                         rng.getrandbits(32)] if rng.random() < 0.1 else
                        [rng.randint(0, r["endpoint_target"] * 2)])
        now = (self.now.get(f, rng.getrandbits(32))
               + rng.choice([rng.randint(0, 2 * tgt), fab, fab + 1, rng.randint(0, 1 << 20)])
               ) & 0xFFFFFFFF
        self.now[f] = now
        hops = rng.choice([rng.randint(0, 20)] * 9 + [255])
        n = rng.choice([rng.randint(1, 8)] * 19 + [rng.choice([0, 255])])
        return self.pack(op=op, now=now, fabric=fab, endpoint=ep, hops=hops, num_acked=n)

    def _storm(self, f: int, tgt: int) -> int:
        """One event of a congestion episode (see the class docstring)."""
        rng, r = self.rng, self.r
        self.storm[f] -= 1
        op = 1 if rng.random() < 0.3 else 0
        fab = self.fab[f] = rng.randint(2 * tgt, 5 * tgt)
        ep = rng.randint(0, r["endpoint_target"] * 2)
        # the RTT the datapath measures is fabric + endpoint (sat.): a stamp that far ahead or
        # more passes the once-per-RTT guard since the last cut
        now = self.now[f] = (self.now.get(f, rng.getrandbits(32)) + fab + ep
                             + rng.randint(0, tgt)) & 0xFFFFFFFF
        return self.pack(op=op, now=now, fabric=fab, endpoint=ep, hops=rng.randint(0, 20),
                         num_acked=rng.randint(1, 8))


CN_SOURCES = {"timely": TimelyEvents, "swift": SwiftEvents}


@cocotb.test()
async def algo_events(dut):
    """An algorithm without timers (TIMELY, Swift: ``CC_CN_SOURCE``) on the engine: START
    every flow, then ``CC_EVENTS`` random events, notifications mostly (the algorithm's
    completions / ACKs from :data:`CN_SOURCES`, hot flows included: one flow's events queue
    behind its update in flight), TX, ctl operations (READ, WRITE of any field, STOP, START,
    RESET) and register rewrites, random idle and back-pressure; every output compared with
    the model every cycle; every flow READ at the end; every counter read back."""
    tb = FlowEngineTB(dut, env_seed(3))
    n_events = env_count("CC_EVENTS", 2000)
    source = CN_SOURCES[os.environ.get("CC_CN_SOURCE", "timely")](tb)
    await tb.start()
    for f in range(tb.cfg.n_flows):
        tb.queues["ctl"].append((f, CtlOp.START, 0, 0))
    load_env_regs(tb)
    await tb.drain()
    _random_traffic(tb, n_events, cn_payload=source, p_cn_choices=(0.7, 0.85, 0.95))
    cn_flows = {f for f, _ in tb.queues["cn"]}
    tb.p_valid = {"tx": 0.9, "cn": 0.9, "ctl": 0.5, "csr_w": 0.5}
    tb.p_rate_ready, tb.p_rd_ready = 0.9, 0.7
    t0, c0, e0 = time.perf_counter(), tb.cycles, tb.model.issued
    await tb.drain()
    dt = time.perf_counter() - t0
    events = tb.model.issued - e0
    await tb.read_every_flow()
    counters = await tb.read_all_counters()
    tb.log.info("%d input events (%d notifications over %d flows), %d events issued in %d "
                "cycles (%.3f events/cycle), %.0f events/s wall, %d rate outputs, %d reads",
                n_events, counters["ev_cn"], len(cn_flows), events, tb.cycles - c0,
                events / (tb.cycles - c0), events / dt, tb.rates, tb.rds)
    tb.log.info("counters: %s", counters)
    assert counters["overflow"] == 0 and counters["expiries"] == 0
    assert counters["ev_cn"] >= n_events // 2 and tb.rates > 0


# -- LDCP: the window engine, the sender, the receiver (event sources that read the model) -----

@cocotb.test()
async def ldcp_events(dut):
    """A multi-flow LDCP top (``CC_LDCP_SOURCE``: ``window``, ``tx`` or ``rx``, the sources of
    :mod:`cocotb_tests.ldcp_engine_events`): the source's registers written, START of every
    flow (1024), the source's priming events (the sender: a message per flow), then
    ``CC_EVENTS`` input events generated in chunks of ``CC_LDCP_CHUNK`` (default 200) from the
    engine model's state of each flow at that time (hot flows and hot stretches included),
    random idle on every input and back-pressure on ``rate`` and ``rd``; timer events (release
    deadlines, timeouts, flushes) from the wheel.  Every output compared with the model every
    cycle; every flow READ at the end; every counter (events, expiries, lateness and its
    histogram, wheel statistics) read back and compared."""
    from cocotb_tests.ldcp_engine_events import LDCP_SOURCES
    tb = FlowEngineTB(dut, env_seed(4))
    n_events = env_count("CC_EVENTS", 2000)
    chunk = env_count("CC_LDCP_CHUNK", 200)
    name = os.environ.get("CC_LDCP_SOURCE", "window")
    source = LDCP_SOURCES[name](tb)
    t_cpu = time.process_time()
    await tb.start()
    regs = [r for r, _, _ in tb.dp.regs]
    for reg, value in source.regs.items():        # before the STARTs (cw_init is read there)
        tb.queues["csr_w"].append((regs.index(reg), value))
    await tb.drain()
    for f in range(tb.cfg.n_flows):
        tb.queues["ctl"].append((f, CtlOp.START, 0, 0))
    await tb.drain()
    source.prime()
    await tb.drain()
    tb.p_valid = {"tx": 0.9, "cn": 0.9, "ctl": 0.5, "csr_w": 0.5}
    tb.p_rate_ready, tb.p_rd_ready = 0.9, 0.7
    t0, c0, e0 = time.perf_counter(), tb.cycles, tb.model.issued
    while source.generated < n_events:
        source(min(chunk, n_events - source.generated))
        while any(tb.queues.values()):
            await tb.run(50)
    await tb.drain()
    await tb.run(300)                       # (due timers pop)
    dt = time.perf_counter() - t0
    events = tb.model.issued - e0
    await tb.read_every_flow()
    counters = await tb.read_all_counters()
    late_h = [counters[f"late_h{i}"] for i in range(len(LATE_BUCKETS))]
    tb.log.info("LDCP %s: %d input events over %d flows, %d events issued (incl. %d timer "
                "pops) in %d cycles (%.3f events/cycle), %.0f events/s wall, %d rate "
                "outputs, %d reads; %d expiries, lateness max %d sum %d histogram %s; "
                "%d cycles compared in all, %.1f s CPU", name, source.generated,
                tb.cfg.n_flows, events, counters["ev_timer"], tb.cycles - c0,
                events / (tb.cycles - c0), events / dt, tb.rates, tb.rds,
                counters["expiries"], counters["late_max"], counters["late_sum"], late_h,
                tb.cycles, time.process_time() - t_cpu)
    tb.log.info("counters: %s", counters)
    assert counters["overflow"] == 0 and counters["overflow_count"] == 0
    assert counters["expiries"] > 0 and counters["ev_cn"] >= source.generated // 8
    assert tb.rates > 0 and tb.rds > 0
