"""cocotb testbench: the exported EgressMarker against its golden model, event by event.

Run through ``cocotb_tests/test_marker.py`` (pytest), which builds each configuration and passes
it here as JSON in ``CC_CONFIG``.  Every decision is compared with
:class:`sim.models.marker.MarkerModel`, in order; counters and registers are read back and
compared whenever the pipeline is drained; every queue is empty at the end of every test.

Directed tests derive their expected values from the marking rules (``docs/switch-marker.md``) and
the float reference, not from the golden model; the golden model is checked alongside.
"""

from __future__ import annotations

import math
from collections import Counter, deque

import cocotb
from cocotb.triggers import ClockCycles, ReadOnly, RisingEdge

from cocotb_tests.infra.scoreboard import Scoreboard
from cocotb_tests.infra.stream import Pattern, StreamDriver, StreamMonitor
from cocotb_tests.infra.tb import TBBase, env_config, env_count, env_seed, test_seed
from hw.layouts import DropReason, Ecn, QueueOp, csr_write_layout
from hw.switch.marker_config import (
    COUNTER_MAX,
    CSR_ADDR_WIDTH,
    CSR_DATA_WIDTH,
    MarkerConfig,
    MarkerReg,
)
from sim.models.marker import Descriptor, MarkerModel, pack_descriptor, unpack_decision
from sim.reference.marker import marking_probability

CSR_LAYOUT = csr_write_layout(CSR_ADDR_WIDTH, CSR_DATA_WIDTH)
ECT = (Ecn.ECT0, Ecn.ECT1)


class MarkerTB(TBBase):
    """Drivers for ``desc`` and ``csr_w``, a monitor on ``decision``, the golden model between
    them and an in-order scoreboard."""

    def __init__(self, dut, cfg: MarkerConfig, seed: int,
                 idle: Pattern | None = None, backpressure: Pattern | None = None):
        super().__init__(dut, seed)
        self.cfg = cfg
        self.model = MarkerModel(cfg)
        self.recent: deque = deque(maxlen=8)   # last accepted descriptors, for failure reports
        self.scoreboard = Scoreboard("decision",
                                     context=lambda: f"  last inputs: {list(self.recent)}")
        self.decisions: list = []              # every checked decision, for statistics
        self.keep_decisions = False
        self.next_item = None                  # generator called after each acceptance
        self.accept_cycles: list[int] = []
        self.output_cycles: list[int] = []
        self.driver = StreamDriver(dut, "desc", dut.clk, idle, on_accept=self._accepted,
                                   encode=lambda d: pack_descriptor(cfg, d))
        self.monitor = StreamMonitor(dut, "decision", dut.clk, self._observed, backpressure,
                                     decode=lambda bits: unpack_decision(cfg, bits))
        dut.csr_w__valid.value = 0
        dut.csr_raddr.value = 0

    async def start(self):
        await self.reset()
        cocotb.start_soon(self.driver.run())
        cocotb.start_soon(self.monitor.run())

    # -- model in the loop ---------------------------------------------------------------------
    def _accepted(self, d: Descriptor):
        self.recent.append(d)
        self.accept_cycles.append(self.cycle())
        self.scoreboard.expect(self.model.step(d))
        if self.next_item is not None:
            item = self.next_item()
            if item is not None:
                self.driver.send(item)

    def _observed(self, decision):
        self.output_cycles.append(self.cycle())
        self.scoreboard.compare(decision)
        if self.keep_decisions:
            self.decisions.append(decision)

    # -- registers -----------------------------------------------------------------------------
    async def csr_write(self, reg: int, value: int):
        """Write a register; the model applies it at the edge where the RTL accepts it."""
        dut = self.dut
        dut.csr_w__payload.value = CSR_LAYOUT.const({"addr": reg, "data": value}).as_bits()
        dut.csr_w__valid.value = 1
        while True:
            await ReadOnly()
            taken = bool(dut.csr_w__ready.value)
            await RisingEdge(dut.clk)
            if taken:
                self.model.write(reg, value)
                dut.csr_w__valid.value = 0
                return

    async def csr_read(self, reg: int) -> int:
        self.dut.csr_raddr.value = reg
        await RisingEdge(self.dut.clk)
        await ReadOnly()
        value = self.dut.csr_rdata.value.to_unsigned()
        await RisingEdge(self.dut.clk)
        return value

    async def drain(self, timeout_cycles: int = 100_000):
        """Wait until every sent descriptor has been decided and checked."""
        await self.wait_until(lambda: not self.driver.queue and not self.scoreboard.expected,
                              timeout_cycles, "the pipeline to drain")
        await RisingEdge(self.dut.clk)

    async def check_registers(self):
        """Read every register and counter and compare with the model (pipeline drained)."""
        await self.drain()
        for reg in MarkerReg:
            actual = await self.csr_read(reg)
            expected = self.model.read(reg)
            assert actual == expected, f"{reg.name}: RTL {actual} != model {expected}"

    async def run_items(self, items):
        """Send a list of descriptors and wait until all are checked."""
        for item in items:
            self.driver.send(item)
        await self.drain()

    async def empty_all_queues(self):
        """Dequeue everything (using the model's occupancy); afterwards every queue is 0."""
        items = []
        for port in range(self.cfg.ports):
            for prio in range(self.cfg.priorities):
                left = self.model.queue(port, prio)
                while left:
                    n = min(left, self.cfg.max_length)
                    items.append(Descriptor.dequeue(n, Ecn.ECT0, port, prio))
                    left -= n
        await self.run_items(items)

    async def finish(self):
        """End of test: every queue empty, nothing left in any queue of the testbench."""
        await self.empty_all_queues()
        await self.check_registers()
        self.scoreboard.assert_empty()
        assert not self.driver.queue, "descriptors left in the driver"
        assert all(q == 0 for q in self.model.occ), "model queues not empty"
        assert await self.csr_read(MarkerReg.SHARED_OCC) == 0, "RTL shared occupancy not empty"
        self.log.info("checked %d decisions", self.scoreboard.matched)


# ------------------------------------------------------------------------------------------------
# Random traffic
# ------------------------------------------------------------------------------------------------
class TrafficGenerator:
    """Random queue events that walk every queue through the ramp, the thresholds and the
    limits: each queue follows a target level that jumps now and then; dequeues remove the
    packets actually admitted (FIFO, with the ECN they left with); a few descriptors are
    malformed on purpose (underflow, queue index out of range)."""

    def __init__(self, tb: MarkerTB, count: int):
        self.tb, self.cfg, self.rng = tb, tb.cfg, tb.rng
        self.remaining = count
        self.count = 0
        self.regime = "hot"
        self.fifos = {}  # (port, prio) -> deque of admitted lengths
        top = max(self.cfg.buf_max, 1)
        self.targets = {}
        self.top = top
        self.port_range = (1 << self.cfg.port_width)
        self.prio_range = (1 << self.cfg.prio_width)

    def note(self, d: Descriptor, decision):
        key = (d.port, d.prio)
        if d.op == QueueOp.ENQUEUE and not decision.drop:
            self.fifos.setdefault(key, deque()).append(d.length)
        elif d.op == QueueOp.DEQUEUE and not decision.drop:
            # every admitted dequeue of this generator is the head of the queue's FIFO
            fifo = self.fifos[key]
            assert fifo[0] == d.length
            fifo.popleft()

    def length(self) -> int:
        r = self.rng.random()
        if r < 0.02:
            return 0
        if r < 0.04:
            return self.cfg.max_length
        if r < 0.15:
            return self.rng.randint(1, self.cfg.max_length)
        if r < 0.25:
            return 64
        return min(self.cfg.max_length, self.rng.choice((1500, 1024, 4096, 9000)))

    def ecn(self) -> Ecn:
        return self.rng.choices(list(Ecn), weights=(25, 20, 40, 15))[0]

    def __call__(self):
        if self.remaining == 0:
            return None
        self.remaining -= 1
        rng, cfg = self.rng, self.cfg
        can_be_bad = cfg.ports < self.port_range or cfg.priorities < self.prio_range
        if can_be_bad and rng.random() < 0.003:
            # a queue index outside the configuration: port or priority out of range
            bad_port = cfg.ports < self.port_range and (cfg.priorities == self.prio_range
                                                        or rng.random() < 0.5)
            if bad_port:
                port = rng.randrange(cfg.ports, self.port_range)
                prio = rng.randrange(self.prio_range)
            else:
                port = rng.randrange(cfg.ports)
                prio = rng.randrange(cfg.priorities, self.prio_range)
            return Descriptor(QueueOp(rng.randint(0, 1)), port, prio, rng.randint(0, 100),
                              self.ecn())
        # Regimes, switched every 3000 events: one hot queue (reaches its buf_max), traffic
        # spread over all queues (fills the shared pool), or draining.
        self.count += 1
        if self.count % 3000 == 1:
            self.regime = rng.choice(("hot", "hot", "spread", "drain"))
        if self.regime == "hot" and rng.random() < 0.95:
            port, prio = 0, 0
        else:
            port, prio = rng.randrange(cfg.ports), rng.randrange(cfg.priorities)
        key = (port, prio)
        target = self.targets.get(key)
        if target is None or rng.random() < 0.002:
            target = self.targets[key] = rng.choice(
                (0, cfg.k_min, (cfg.k_min + cfg.k_max) // 2, cfg.k_max, cfg.k_drop, cfg.buf_max,
                 int(self.top * 1.2), rng.randint(0, int(self.top * 1.2))))
        q = self.tb.model.queue(port, prio)
        fifo = self.fifos.get(key)
        too_much = q + rng.randint(1, 1000)
        if rng.random() < 0.002 and too_much <= cfg.max_length:
            return Descriptor.dequeue(too_much, self.ecn(), port, prio)  # underflow
        if self.regime == "drain":
            enqueue = rng.random() < 0.2
        else:
            enqueue = (q < target) if rng.random() < 0.85 else (rng.random() < 0.5)
        if not fifo:
            enqueue = True
        if enqueue:
            return Descriptor.enqueue(self.length(), self.ecn(), port, prio)
        return Descriptor.dequeue(fifo[0], self.ecn(), port, prio)


@cocotb.test()
async def random_traffic(dut):
    """>= 100k random descriptors with idle cycles and back-pressure; every decision checked,
    registers and counters read back periodically, and every decision category visited."""
    cfg = env_config(MarkerConfig)
    events = env_count("CC_EVENTS", 100000)
    seed = env_seed(1)
    tb = MarkerTB(dut, cfg, seed)
    rng = tb.rng
    await tb.start()
    gen = TrafficGenerator(tb, events)
    coverage = Counter()

    def accepted(d):
        tb.recent.append(d)
        tb.accept_cycles.append(tb.cycle())
        decision = tb.model.step(d)
        gen.note(d, decision)
        tb.scoreboard.expect(decision)
        coverage[decision.reason.name] += 1
        if decision.marked:
            q, m = decision.qlen, tb.model
            ramp = (q < m.k_max) if m.compare == 0 else (q <= m.k_max)
            coverage["mark_ramp" if ramp and m.profile != 2 else "mark_full"] += 1
        elif (decision.reason == DropReason.NONE and d.ecn in ECT
              and decision.qlen >= tb.model.k_min):
            coverage["ramp_or_above_no_mark"] += 1
        if d.ecn == Ecn.CE and decision.reason == DropReason.NONE:
            coverage["ce_kept"] += 1
        item = gen()
        if item is not None:
            tb.driver.send(item)

    tb.driver.on_accept = accepted
    phases = [(Pattern.always(), Pattern.always()),
              (Pattern.random(0.7, rng), Pattern.always()),
              (Pattern.always(), Pattern.random(0.6, rng)),
              (Pattern.random(0.5, rng), Pattern.bursts(5, 3))]
    per_phase = events // len(phases)
    for i, (idle, backpressure) in enumerate(phases):
        tb.driver.pattern, tb.monitor.pattern = idle, backpressure
        gen.remaining = per_phase if i < len(phases) - 1 else events - per_phase * (len(phases) - 1)
        tb.driver.send(gen())
        await tb.drain(timeout_cycles=20 * events)
        await tb.check_registers()
        tb.log.info("phase %d (%s / %s) done: %d decisions checked", i, idle, backpressure,
                    tb.scoreboard.matched)
    tb.driver.on_accept = tb._accepted
    tb.log.info("coverage: %s", dict(coverage))
    required = ["NONE", "QUEUE_FULL", "UNDERFLOW", "mark_full", "ce_kept"]
    if cfg.profile != "dctcp":
        required += ["mark_ramp", "ramp_or_above_no_mark"]
    if cfg.profile == "ldcp":
        required.append("NOT_ECT_AT_K")
    if cfg.shared_limit < cfg.buf_max * cfg.queues:
        required.append("POOL_FULL")
    if cfg.ports < (1 << cfg.port_width) or cfg.priorities < (1 << cfg.prio_width):
        required.append("BAD_QUEUE")
    missing = [k for k in required if coverage[k] == 0]
    assert not missing, f"random run never visited {missing}; coverage {dict(coverage)}"
    assert tb.scoreboard.matched >= events
    await tb.finish()


# ------------------------------------------------------------------------------------------------
# Directed tests (1-port configurations)
# ------------------------------------------------------------------------------------------------
K_MIN, K_MAX, K_DROP, BUF = 1000, 2000, 3000, 5000


async def setup_registers(tb: MarkerTB, *, profile: int, compare: int, sample_at: int = 0,
                          p_max: int | None = None):
    await tb.drain()
    from hw.layouts import MarkerCtrl
    ctrl = MarkerCtrl.const({"profile": profile, "compare": compare, "sample_at": sample_at})
    for reg, value in ((MarkerReg.CTRL, ctrl.as_bits()), (MarkerReg.K_MIN, K_MIN),
                       (MarkerReg.K_MAX, K_MAX), (MarkerReg.K_DROP, K_DROP),
                       (MarkerReg.BUF_MAX, BUF), (MarkerReg.SHARED_BUFFER, BUF),
                       (MarkerReg.P_MAX, (1 << tb.cfg.draw_bits) // 2 if p_max is None else p_max)):
        await tb.csr_write(reg, value)


async def fill_to(tb: MarkerTB, level: int):
    """Bring queue (0, 0) to exactly ``level`` bytes (Not-ECT-free ECT0 packets, or dequeues)."""
    q = tb.model.queue()
    items = []
    while q < level:
        n = min(level - q, 1000)
        items.append(Descriptor.enqueue(n, Ecn.CE))  # CE: never dropped at K, never re-marked
        q += n
    while q > level:
        n = min(q - level, 1000)
        items.append(Descriptor.dequeue(n, Ecn.CE))
        q -= n
    await tb.run_items(items)
    assert tb.model.queue() == level


async def probe(tb: MarkerTB, level: int, ecn: Ecn, n: int):
    """``n`` zero-length enqueues at queue ``level`` (they do not move the queue)."""
    await fill_to(tb, level)
    tb.decisions.clear()
    tb.keep_decisions = True
    await tb.run_items([Descriptor.enqueue(0, ecn) for _ in range(n)])
    tb.keep_decisions = False
    assert all(dd.qlen == level for dd in tb.decisions)
    return list(tb.decisions)


@cocotb.test()
async def ramp_boundaries(dut):
    """K_min - 1, K_min, K_min + 1, K_max - 1, K_max, K_max + 1 under both comparison
    conventions: no marks where p = 0, all marks where p = 1, and otherwise a marked fraction
    consistent with p (the exact agreement with the golden model is checked on every probe)."""
    cfg = env_config(MarkerConfig)
    tb = MarkerTB(dut, cfg, test_seed(11))
    await tb.start()
    n = 400
    for compare, name in ((0, "ge"), (1, "gt")):
        await setup_registers(tb, profile=0, compare=compare)
        p_max = 0.5
        for level in (K_MIN - 1, K_MIN, K_MIN + 1, K_MAX - 1, K_MAX, K_MAX + 1):
            decisions = await probe(tb, level, Ecn.ECT0, n)
            marks = sum(dd.marked for dd in decisions)
            p = marking_probability(level, K_MIN, K_MAX, p_max, compare=name)
            tb.log.info("%s q=%d: %d/%d marked, reference p=%.4f", name, level, marks, n, p)
            if p == 0.0:
                assert marks == 0, f"{name} q={level}: marked {marks} with p = 0"
            elif p == 1.0:
                assert marks == n, f"{name} q={level}: {marks}/{n} marked with p = 1"
            else:
                sigma = math.sqrt(n * p * (1 - p)) + 1
                assert abs(marks - n * p) <= 5 * sigma, f"{name} q={level}: {marks}/{n} vs p={p}"
            assert all(dd.ecn == (Ecn.CE if dd.marked else Ecn.ECT0) for dd in decisions)
    # gt at K_max marks with P_max, ge marks everything: the two conventions differ right there.
    await tb.finish()


@cocotb.test()
async def not_ect_threshold(dut):
    """Not-ECT packets: dropped at q >= K (ge) or q > K (gt) in the LDCP profile only; ECT and
    CE packets never dropped at K; CE stays CE and is not counted as a mark."""
    cfg = env_config(MarkerConfig)
    tb = MarkerTB(dut, cfg, test_seed(12))
    await tb.start()
    for profile in (0, 1, 2):
        for compare in (0, 1):
            await setup_registers(tb, profile=profile, compare=compare)
            for level in (K_DROP - 1, K_DROP, K_DROP + 1):
                at_k = level >= K_DROP if compare == 0 else level > K_DROP
                dropped_expected = profile == 0 and at_k
                for dd in await probe(tb, level, Ecn.NOT_ECT, 4):
                    assert dd.drop == dropped_expected, (profile, compare, level, dd)
                    assert dd.reason == (DropReason.NOT_ECT_AT_K if dropped_expected
                                         else DropReason.NONE)
                    assert dd.ecn == Ecn.NOT_ECT and not dd.marked
                for dd in await probe(tb, level, Ecn.CE, 4):
                    assert not dd.drop and dd.ecn == Ecn.CE and not dd.marked
                for dd in await probe(tb, level, Ecn.ECT1, 4):
                    assert not dd.drop and dd.marked and dd.ecn == Ecn.CE  # above K_max
    await tb.finish()


@cocotb.test()
async def buffer_limits(dut):
    """buf_max: q + len == buf_max admitted, one byte more dropped; full queue drops every
    non-empty packet; empty queue rejects a dequeue (underflow) and changes nothing; zero- and
    maximum-length packets."""
    cfg = env_config(MarkerConfig)
    tb = MarkerTB(dut, cfg, test_seed(13))
    await tb.start()
    await setup_registers(tb, profile=1, compare=0)
    await tb.csr_write(MarkerReg.BUF_MAX, cfg.max_length + 100)
    await tb.csr_write(MarkerReg.SHARED_BUFFER, cfg.max_length + 100)
    buf = cfg.max_length + 100
    tb.keep_decisions = True
    # Empty queue: dequeue rejected, zero-length dequeue fine.
    await tb.run_items([Descriptor.dequeue(1), Descriptor.dequeue(0)])
    d_under, d_zero = tb.decisions[-2:]
    assert d_under.drop and d_under.reason == DropReason.UNDERFLOW and d_under.qlen == 0
    assert not d_zero.drop and d_zero.qlen == 0
    # A dequeue of more than the queue holds is rejected and changes nothing.
    await tb.run_items([Descriptor.enqueue(50, Ecn.ECT0), Descriptor.dequeue(51)])
    assert tb.decisions[-1].reason == DropReason.UNDERFLOW and tb.decisions[-1].qlen == 50
    assert tb.model.queue() == 50
    await tb.run_items([Descriptor.dequeue(50), Descriptor.enqueue(cfg.max_length, Ecn.ECT0)])
    assert not tb.decisions[-1].drop and tb.model.queue() == cfg.max_length  # maximum length
    # Up to exactly buf_max, then one byte more.
    await tb.run_items([Descriptor.enqueue(99, Ecn.ECT0), Descriptor.enqueue(2, Ecn.ECT0),
                        Descriptor.enqueue(1, Ecn.ECT0), Descriptor.enqueue(1, Ecn.ECT0),
                        Descriptor.enqueue(0, Ecn.NOT_ECT), Descriptor.enqueue(cfg.max_length)])
    a99, a2, a1, b1, z, big = tb.decisions[-6:]
    assert not a99.drop and a2.drop and a2.reason == DropReason.QUEUE_FULL
    assert not a1.drop and a1.qlen == buf - 1 and tb.model.queue() == buf
    assert b1.drop and b1.reason == DropReason.QUEUE_FULL and b1.qlen == buf
    assert not z.drop                                 # a zero-length packet still fits
    assert big.drop and big.reason == DropReason.QUEUE_FULL
    # The shared pool: a second queue's packet that does not fit the pool is POOL_FULL.
    if cfg.priorities > 1:
        await tb.run_items([Descriptor.enqueue(1, Ecn.ECT0, prio=1)])
        assert tb.decisions[-1].reason == DropReason.POOL_FULL
    tb.keep_decisions = False
    await tb.finish()


@cocotb.test()
async def dequeue_sampling_and_counters(dut):
    """Marking at dequeue uses the queue after the departing packet; enqueue decisions then
    never mark.  Counters saturate at 2**32 - 1 and can be preset by writing them."""
    cfg = env_config(MarkerConfig)
    tb = MarkerTB(dut, cfg, test_seed(14))
    await tb.start()
    await setup_registers(tb, profile=2, compare=0, sample_at=1)   # DCTCP step at K_MAX
    await tb.csr_write(MarkerReg.CNT_MARKED, COUNTER_MAX - 1)
    tb.keep_decisions = True
    await tb.run_items([Descriptor.enqueue(1000, Ecn.ECT0) for _ in range(4)])
    assert not any(dd.marked for dd in tb.decisions[-4:])       # enqueue: never at dequeue mode
    await tb.run_items([Descriptor.dequeue(1000, Ecn.ECT0) for _ in range(4)])
    # after removal: 3000, 2000, 1000, 0 -> marked, marked (>= K_MAX), not, not
    assert [dd.qlen for dd in tb.decisions[-4:]] == [3000, 2000, 1000, 0]
    assert [dd.marked for dd in tb.decisions[-4:]] == [True, True, False, False]
    assert await tb.csr_read(MarkerReg.CNT_MARKED) == COUNTER_MAX  # saturated, not wrapped
    tb.keep_decisions = False
    await tb.finish()


@cocotb.test()
async def throughput_and_latency(dut):
    """One descriptor per clock with no idle cycles and an always-ready sink, and the decision
    EgressMarker.LATENCY cycles after its descriptor is accepted."""
    from hw.switch.marker import EgressMarker

    cfg = env_config(MarkerConfig)
    tb = MarkerTB(dut, cfg, test_seed(15))
    await tb.start()
    n = 2000
    items = [Descriptor.enqueue(64, Ecn.ECT0) if i % 2 == 0 else Descriptor.dequeue(64, Ecn.ECT0)
             for i in range(n)]
    tb.accept_cycles.clear()
    tb.output_cycles.clear()
    await tb.run_items(items)
    acc = tb.accept_cycles[-n:]
    out = tb.output_cycles[-n:]
    assert acc[-1] - acc[0] == n - 1, f"{n} descriptors took {acc[-1] - acc[0] + 1} cycles"
    latencies = {o - a for a, o in zip(acc, out, strict=True)}
    assert latencies == {EgressMarker.LATENCY}, f"latencies {latencies}"
    tb.log.info("throughput: %d descriptors in %d cycles; latency %s cycles", n,
                acc[-1] - acc[0] + 1, latencies)
    await tb.finish()


@cocotb.test()
async def marking_statistics(dut):
    """On the RTL, >= 10^5 marking decisions at constant queue levels across the ramp: the
    marked fraction equals P_max (q - K_min)/(K_max - K_min) within 3 standard deviations plus
    the documented quantization bound 1.5 * 2**-draw_bits."""
    cfg = env_config(MarkerConfig)
    tb = MarkerTB(dut, cfg, test_seed(16))
    await tb.start()
    await setup_registers(tb, profile=0, compare=0,
                          p_max=round(0.8 * (1 << cfg.draw_bits)))
    per_level = env_count("CC_STAT_SAMPLES", 25000)
    total = 0
    for frac in (0.1, 0.35, 0.6, 0.9):
        level = K_MIN + round(frac * (K_MAX - K_MIN))
        decisions = await probe(tb, level, Ecn.ECT0, per_level)
        marks = sum(dd.marked for dd in decisions)
        p = marking_probability(level, K_MIN, K_MAX, 0.8)
        sigma = math.sqrt(per_level * p * (1 - p))
        bound = 3 * sigma + per_level * 1.5 * 2.0 ** -cfg.draw_bits
        tb.log.info("q=%d: marked %d/%d = %.5f, formula %.5f (3 sigma %.5f)", level, marks,
                    per_level, marks / per_level, p, 3 * sigma / per_level)
        assert abs(marks - per_level * p) <= bound, f"q={level}: {marks} vs {per_level * p:.1f}"
        total += per_level
    assert total >= 100_000 or per_level < 25000
    await tb.finish()


@cocotb.test()
async def reset_clears_state(dut):
    """A reset in the middle of traffic empties every queue (the block RAM is swept to 0,
    ``desc.ready`` low meanwhile) and restores the registers."""
    cfg = env_config(MarkerConfig)
    tb = MarkerTB(dut, cfg, test_seed(17))
    await tb.start()
    await tb.run_items([Descriptor.enqueue(500, Ecn.ECT0) for _ in range(10)])
    await tb.csr_write(MarkerReg.K_MIN, 7)
    await tb.reset()
    tb.model = MarkerModel(cfg)
    await ClockCycles(dut.clk, 2)
    await tb.check_registers()
    # the queue held 5000 bytes before the reset: a dequeue now underflows
    await tb.run_items([Descriptor.dequeue(500, Ecn.ECT0)])
    assert tb.model.read(MarkerReg.CNT_MALFORMED) == 1
    await tb.check_registers()
    await tb.finish()
