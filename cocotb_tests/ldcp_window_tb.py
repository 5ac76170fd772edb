"""cocotb testbench: the exported LdcpWindow (one flow) against its golden model, cycle by cycle.

Run through ``cocotb_tests/test_ldcp_window.py`` (pytest), which builds each configuration and
passes it here as JSON in ``CC_CONFIG``.

The wrapper's ACK input is always ready and its timer runs every cycle, so the testbench runs
the model in lock-step with the clock: in every cycle it drives the inputs (ACK, ``sent``,
``inflight``, a register write), samples every output after ``ReadOnly`` and compares it with
:class:`sim.models.ldcp_window.LdcpWindowModel`; at the edge the model takes the same inputs.
The updates leave through an in-order scoreboard (expected when the model issues them, compared
when ``upd_valid`` shows them).  Directed tests take their expected values from the draft's
equations and the known answers worked from the draft's equations, not from the model.
"""

from __future__ import annotations

import math
import os
from collections import Counter, deque
from fractions import Fraction

import cocotb
from cocotb.triggers import ReadOnly, RisingEdge

from cocotb_tests.infra.scoreboard import Scoreboard
from cocotb_tests.infra.tb import TBBase, env_config, env_count, env_seed, test_seed
from hw.layouts import (
    LayoutCodec,
    LdcpDecRule,
    LdcpIncRule,
    csr_write_layout,
    ldcp_ack_layout,
    ldcp_update_layout,
)
from hw.nic.ldcp_window_config import (
    CSR_ADDR_WIDTH,
    CSR_DATA_WIDTH,
    ONE,
    UPDATE_LATENCY,
    LdcpWindowConfig,
    LdcpWindowReg,
)
from sim.models.ldcp_window import Ack, LdcpWindowModel, Update
from sim.reference import ldcp_window as ref


class LdcpWindowTB(TBBase):
    """Lock-step driver, golden model and checkers for one LdcpWindow."""

    def __init__(self, dut, cfg: LdcpWindowConfig, seed: int):
        super().__init__(dut, seed)
        self.cfg = cfg
        self.model = LdcpWindowModel(cfg)
        self.ack_codec = LayoutCodec(ldcp_ack_layout(cfg))
        self.upd_codec = LayoutCodec(ldcp_update_layout(cfg))
        self.csr_codec = LayoutCodec(csr_write_layout(CSR_ADDR_WIDTH, CSR_DATA_WIDTH))
        self.recent: deque = deque(maxlen=12)
        self.updates = Scoreboard("update", context=lambda: f"  last cycles: {list(self.recent)}")
        self.cycles = 0
        self.cw_seen = 0
        self.acks = 0
        self.ticks = 0
        self.tick_cycles: list[int] = []
        self.coverage: Counter = Counter()
        self.sub1_sum = 0          # sum of cw (UQ16.16) over the cycles with cw < 1
        self.h_cw, self.h_tick, self.h_credit = dut.cw, dut.tick, dut.credit
        self.h_may_send, self.h_upd_valid = dut.may_send, dut.upd_valid
        self.driven: dict[str, int] = {}
        for name in ("ack__valid", "sent", "inflight", "csr_w__valid"):
            self._drive(name, 0)

    def _drive(self, name: str, value: int) -> None:
        """Write an input only when it changes (signal writes dominate the run time)."""
        if self.driven.get(name) != value:
            self.driven[name] = value
            getattr(self.dut, name).value = value

    async def start(self):
        await self.reset()
        self.model.edge()          # the edge that ended the reset sequence (inputs idle)

    async def cycle_(self, ack: Ack | None = None, sent: bool = False, inflight: int = 0,
                     write: tuple[int, int] | None = None) -> None:
        """One clock cycle: drive, sample and compare everything, step the model at the edge."""
        dut, model = self.dut, self.model
        drive = self._drive
        drive("ack__valid", int(ack is not None))
        if ack is not None:
            drive("ack__payload", self.ack_codec.pack({"ece": int(ack.ece), "n": ack.n}))
        drive("sent", int(sent))
        drive("inflight", inflight)
        drive("csr_w__valid", int(write is not None))
        if write is not None:
            drive("csr_w__payload", self.csr_codec.pack({"addr": write[0], "data": write[1]}))
        await ReadOnly()
        # the model's view of this cycle, read from its registers (CycleOutputs is slower)
        m_cw, m_tick, m_credit = model.cw, model.tick, model.credit
        m_send = m_credit if model.sub1 else inflight < model.win_bytes
        self.recent.append((self.cycles, ack, sent, inflight, write, m_cw))
        got_cw = self.h_cw.value.to_unsigned()
        self.cw_seen = got_cw
        if got_cw != m_cw:
            raise AssertionError(f"cycle {self.cycles}: cw RTL {got_cw} != model {m_cw}\n"
                                 f"  last cycles: {list(self.recent)}")
        tick, may_send, credit = (bool(self.h_tick.value), bool(self.h_may_send.value),
                                  bool(self.h_credit.value))
        if tick != m_tick or may_send != m_send or credit != m_credit:
            raise AssertionError(f"cycle {self.cycles}: tick/may_send/credit RTL "
                                 f"{tick}/{may_send}/{credit} != model "
                                 f"{m_tick}/{m_send}/{m_credit}\n"
                                 f"  last cycles: {list(self.recent)}")
        if ack is not None:
            assert dut.ack__ready.value == 1, "ack.ready must always be 1"
        if write is not None:
            assert dut.csr_w__ready.value == 1, f"cycle {self.cycles}: write not accepted"
        if self.h_upd_valid.value:
            v = self.upd_codec.unpack(dut.upd.value.to_unsigned())
            self.updates.compare(Update(v["cw"], v["n_marked"], v["n_unmarked"], v["dec"],
                                        v["inc"]))
        elif model.busy_left == 1:
            raise AssertionError(f"cycle {self.cycles}: upd_valid missing")
        if m_tick:
            self.ticks += 1
            self.tick_cycles.append(self.cycles)
        if got_cw < ONE:
            self.sub1_sum += got_cw
        await RisingEdge(dut.clk)
        before = len(model.issued)
        model.edge(ack, sent, write)
        if len(model.issued) != before:
            cycle, u = model.issued[-1]
            self.updates.expect(u)
            self.note_coverage(u)
        self.acks += ack is not None
        self.cycles += 1

    def note_coverage(self, u: Update) -> None:
        c = self.coverage
        c[u.dec.name] += 1
        c[u.inc.name] += 1
        if u.n_marked and u.n_unmarked:
            c["coalesced_mixed"] += 1
        if u.n_marked + u.n_unmarked > self.cfg.m // 2 + 1:
            c["coalesced_over_m"] += 1     # (more than half the top's m: several ACKs)

    async def idle(self, cycles: int, inflight: int = 0, sent: bool = False):
        for _ in range(cycles):
            await self.cycle_(None, sent, inflight)

    async def drain(self):
        """Idle until nothing is in flight or pending, and every update has been checked."""
        for _ in range(4 * UPDATE_LATENCY):
            if self.model.idle and not self.updates.expected:
                return
            await self.cycle_()
        raise AssertionError("the update pipeline did not drain")

    async def write(self, reg: LdcpWindowReg, value: int):
        await self.drain()
        await self.cycle_(write=(int(reg), value))

    def finish(self):
        self.updates.assert_empty()
        self.log.info("checked %d cycles, %d ACKs, %d updates, %d timer firings",
                      self.cycles, self.acks, self.updates.matched, self.ticks)


# ------------------------------------------------------------------------------------------------
# Random run
# ------------------------------------------------------------------------------------------------
class AckSource:
    """Random ACKs that steer the window through every level: a target level is picked now and
    then (the floor, the sub-1 range, exactly around 1, the window regime, the cap) and the mark
    probability follows it, with noise; gaps between ACKs mix back-to-back bursts (coalescing),
    gaps shorter and longer than the update latency, and long idle periods (timer firings)."""

    def __init__(self, tb: LdcpWindowTB, m: int):
        self.tb, self.cfg, self.rng, self.m = tb, tb.cfg, tb.rng, m
        r = tb.model.regs
        self.levels = [r.gamma, r.gamma * 2, ONE // 2, ONE - r.gamma, ONE, ONE + ONE // 4,
                       2 * ONE, 8 * ONE, r.cw_max // 2, r.cw_max]
        self.target = ONE
        self.gap_mode = "mixed"

    def next(self) -> tuple[int, Ack]:
        rng, cfg = self.rng, self.cfg
        if rng.random() < 0.004:
            self.target = rng.choice(self.levels)
        if rng.random() < 0.002:
            self.gap_mode = rng.choice(("burst", "burst", "burst", "burst", "burst", "short",
                                        "spaced", "mixed", "mixed", "mixed", "mixed"))
        cw = self.tb.model.cw
        p_mark = 0.85 if cw > self.target else 0.1
        if rng.random() < 0.1:
            p_mark = rng.random()
        r = rng.random()
        if r < 0.08:
            n = self.m
        elif r < 0.1:
            n = rng.randint(0, (1 << cfg.n_width) - 1)    # 0 (ignored) and > m (saturated)
        else:
            n = rng.randint(1, self.m)
        gap = {
            "burst": 0,
            "short": rng.randint(1, UPDATE_LATENCY // 2),
            "spaced": rng.randint(UPDATE_LATENCY, UPDATE_LATENCY + 2),
            "mixed": rng.choice((0, 0, 0, 1, 2, UPDATE_LATENCY)),
        }[self.gap_mode]
        if rng.random() < 0.0002:
            gap = rng.randint(200, 2000)                    # a quiet period: the timer runs
        return gap, Ack(rng.random() < p_mark, n)


@cocotb.test()
async def random_acks(dut):
    """>= 100k random ACKs; every output compared every cycle, every update in order; every
    rule of the datapath, every crossing of cw = 1, coalescing and the timer visited."""
    cfg = env_config(LdcpWindowConfig)
    events = env_count("CC_EVENTS", 100000)
    seed = env_seed(1)
    tb = LdcpWindowTB(dut, cfg, seed)
    await tb.start()
    # a short RTT so that the sub-1 timer fires often (the register is run-time)
    await tb.write(LdcpWindowReg.RTT, 40)
    # optionally another parameter set through the registers (CC_PARAMS: a config as JSON;
    # its m limits the ACKs generated, the top's own m still saturates larger ones)
    m = cfg.m
    if os.environ.get("CC_PARAMS"):
        other = env_config(LdcpWindowConfig, "CC_PARAMS")
        assert other.m <= cfg.m
        r = other.registers()
        for reg, value in ((LdcpWindowReg.ALPHA, r.alpha), (LdcpWindowReg.BETA, r.beta),
                           (LdcpWindowReg.GAMMA, r.gamma), (LdcpWindowReg.CW_MAX, r.cw_max),
                           (LdcpWindowReg.CW, r.cw_init)):
            await tb.write(reg, value)
        m = other.m
        tb.log.info("parameters of %s, ACKs with n <= %d", other, m)
    src = AckSource(tb, m)
    rng = tb.rng
    cap0 = tb.model.regs.cw_max
    exact_one = 0
    while tb.acks < events:
        gap, ack = src.next()
        inflight = rng.randint(0, 2 * tb.model.outputs().win_bytes + 2)
        for _ in range(gap):
            o = tb.model.outputs()
            await tb.cycle_(None, sent=o.credit and rng.random() < 0.7, inflight=inflight)
        o = tb.model.outputs()
        if tb.model.idle and tb.model.cw == ONE:
            exact_one += 1
        await tb.cycle_(ack, sent=rng.random() < 0.3,
                        inflight=rng.randint(0, 2 * o.win_bytes + 2))
        if rng.random() < 0.0005:                       # a window load (e.g. after fast start)
            await tb.write(LdcpWindowReg.CW, rng.choice(src.levels) + rng.randint(-3, 3))
        if rng.random() < 0.0003:                       # a low cap now and then (CROSS_CAP)
            await tb.write(LdcpWindowReg.CW_MAX,
                           rng.choice((ONE + ONE // 2, 2 * ONE, cap0, cap0)))
    await tb.drain()
    tb.finish()
    cov = tb.coverage
    cov["exactly_one"] = exact_one
    cov["timer_firings"] = tb.ticks
    tb.log.info("coverage: %s", dict(sorted(cov.items())))
    required = [r.name for r in LdcpDecRule] + [r.name for r in LdcpIncRule] + [
        "coalesced_mixed", "coalesced_over_m", "exactly_one", "timer_firings"]
    if m == 1:
        required.remove("coalesced_over_m")
    missing = [k for k in required if cov[k] == 0]
    assert not missing, f"not visited: {missing}"


# ------------------------------------------------------------------------------------------------
# Directed tests (expected values from the draft's equations and the known answers worked from them)
# ------------------------------------------------------------------------------------------------
def q(x: float) -> int:
    return round(x * ONE)


async def single(tb: LdcpWindowTB, ack: Ack) -> int:
    """One ACK on an idle engine; returns the committed window after it."""
    await tb.drain()
    await tb.cycle_(ack)
    await tb.drain()
    await tb.cycle_()
    return tb.dut.cw.value.to_unsigned()


@cocotb.test()
async def corners(dut):
    """Floor with marks, cap with unmarked ACKs, exactly 1, n = m, the crossings, the
    smallest alpha and beta, alpha = beta = 1, and the known answers worked from the draft's
    equations."""
    cfg = env_config(LdcpWindowConfig)
    tb = LdcpWindowTB(dut, cfg, test_seed(7))
    await tb.start()
    r = tb.model.regs
    alpha, beta, gamma, cap = r.alpha / ONE, r.beta / ONE, r.gamma / ONE, r.cw_max / ONE

    def draft(cw, ece, n):
        return ref.pawa_ack(cw, ece, n, alpha, beta, gamma, cap)

    async def check(cw0: float, ece: bool, n: int, exact: bool = True):
        await tb.write(LdcpWindowReg.CW, q(cw0))
        got = await single(tb, Ack(ece, n)) / ONE
        want = draft(cw0, ece, n)
        tol = 0.0 if exact else n * alpha * 2.0 ** -15 / max(cw0, 1.0) + 2.0 ** -15
        assert abs(got - want) <= tol, f"cw {cw0} ece {ece} n {n}: got {got}, want {want}"

    for n in (1, cfg.m):
        await check(gamma, True, n)                 # at the floor, marked: stays at gamma
        await check(cap, False, n)                  # at the cap, unmarked: stays at cap
        await check(1.0, True, n)                   # exactly 1, marked (crossing down)
        await check(1.0, False, n, exact=False)     # exactly 1, unmarked: 1 + n alpha
        await check(0.5, True, n)                   # sub-1 halving(s)
        await check(1 - gamma, False, n)            # sub-1 step crossing 1
        await check(3.0, True, n)                   # linear decrease (maybe crossing)
        await check(3.0, False, n, exact=False)
    # known answer, gamma = 1/8 (set through the register)
    await tb.write(LdcpWindowReg.GAMMA, ONE // 8)
    for cw0, ece, want in ((0.5, True, 0.25), (0.2, True, 0.125), (0.5, False, 0.625)):
        await tb.write(LdcpWindowReg.CW, q(cw0))
        assert await single(tb, Ack(ece, 1)) == q(want), (cw0, ece, want)
    # alpha = beta = 1 and the smallest alpha, beta (2**-16)
    for a, b in ((ONE, ONE), (1, 1)):
        await tb.write(LdcpWindowReg.ALPHA, a)
        await tb.write(LdcpWindowReg.BETA, b)
        await tb.write(LdcpWindowReg.CW, 4 * ONE)
        assert await single(tb, Ack(True, 1)) == 4 * ONE - b
        await tb.write(LdcpWindowReg.CW, ONE)
        assert await single(tb, Ack(False, 1)) == ONE + a       # 1 + alpha / 1, exact
    tb.finish()


@cocotb.test()
async def throughput_and_latency(dut):
    """ACKs on every clock with no idle cycle for 3000 cycles: all taken (ready stays 1), the
    window follows the model; latency of a lone ACK: the window changes UPDATE_LATENCY edges
    after the edge that takes it."""
    cfg = env_config(LdcpWindowConfig)
    tb = LdcpWindowTB(dut, cfg, test_seed(8))
    await tb.start()
    rng = tb.rng
    await tb.write(LdcpWindowReg.CW, 20 * ONE)
    start_acks, start_cycles = tb.acks, tb.cycles
    for _ in range(3000):
        await tb.cycle_(Ack(rng.random() < 0.05, rng.randint(1, cfg.m)))
    taken = tb.acks - start_acks
    assert taken == tb.cycles - start_cycles == 3000
    await tb.drain()
    # latency: the ACK is taken at the edge ending cycle c0; the window read in cycle c1 is
    # the one committed at the edge ending cycle c1 - 1, so the latency in edges is c1 - c0 - 1
    await tb.write(LdcpWindowReg.CW, 5 * ONE)
    await tb.drain()                           # the write is applied one edge later
    await tb.cycle_()
    before = tb.cw_seen
    assert before == 5 * ONE
    c0 = tb.cycles
    await tb.cycle_(Ack(False, 1))
    while tb.cw_seen == before:
        assert tb.cycles - c0 < 4 * UPDATE_LATENCY, "the window never changed"
        await tb.cycle_()
    waited = tb.cycles - 1 - c0 - 1
    assert waited == UPDATE_LATENCY, waited
    tb.log.info("throughput: %d ACKs in %d cycles; latency %d cycles", taken, 3000, waited)
    tb.finish()


@cocotb.test()
async def timer_long_run(dut):
    """Sub-1 timer with the window moving through the sub-1 range (each window loaded and held
    for a while): releases are spaced floor or ceil of RTT / cw cycles (exact rationals), and
    over the whole run their number equals sum(cw) / RTT within one packet."""
    cfg = env_config(LdcpWindowConfig)
    tb = LdcpWindowTB(dut, cfg, test_seed(9))
    await tb.start()
    rtt = 30
    await tb.write(LdcpWindowReg.RTT, rtt)
    g = tb.model.regs.gamma
    tb.ticks, tb.sub1_sum = 0, 0
    for cw_q in (g, g + 1, ONE // 3, ONE // 2 + 77, ONE - 1, 3 * ONE // 4, g):
        await tb.write(LdcpWindowReg.CW, cw_q)
        tb.tick_cycles.clear()
        await tb.idle(5000)
        period = ref.timer_period(Fraction(cw_q, ONE), Fraction(rtt))
        ticks = tb.tick_cycles
        assert len(ticks) >= 2, f"no releases with cw {cw_q / ONE}"
        for a, b in zip(ticks, ticks[1:], strict=False):
            assert b - a in (math.floor(period), math.ceil(period)), (cw_q, a, b, period)
    fluid = ref.timer_releases([Fraction(tb.sub1_sum, ONE)], rtt)
    assert abs(tb.ticks - fluid) <= 1, (tb.ticks, float(fluid))
    tb.log.info("timer: %d releases, sum(cw)/RTT = %.3f", tb.ticks, float(fluid))
    tb.finish()
