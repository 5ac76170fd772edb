"""cocotb testbench: the exported QCN congestion point against its bit-exact model.

Run through ``cocotb_tests/test_qcn_cp.py`` with the configuration as JSON in ``CC_CONFIG``.
Frames go in through a StreamDriver (idle pattern) whose ``on_accept`` steps
:class:`sim.models.qcn.CpModel`; every decision is compared in order by a Scoreboard (monitor
with back-pressure).  The queue depth follows a random walk through calm and congested phases
so that every qntzFb band (hence every sampling interval) is visited; coverage is counted and
asserted.  ``known_answers`` runs known-answer vectors (IEEE 802.1Qau equations) with hand-derived
expectations.

Every test runs on ONE build (the default top, its configuration as JSON in ``CC_BUILD_CONFIG``):
a test whose configuration differs in run-time knobs (set point, weight, the sampling table and
its jitter) writes them through ``csr_w`` after reset, before the first frame, and the model
starts from the build's configuration and takes the same writes.  The byte counter starts from
the build's ``sample_table[0]`` (a reset value, not a register) in both.
"""

from __future__ import annotations

import os
import random
from dataclasses import replace

import cocotb
from cocotb.triggers import ClockCycles, RisingEdge

from cocotb_tests.infra.scoreboard import Scoreboard
from cocotb_tests.infra.stream import Pattern, StreamDriver, StreamMonitor
from cocotb_tests.infra.tb import TBBase, env_config, env_count, env_seed, test_seed
from hw.layouts.common import csr_write_layout
from hw.switch.qcn_cp_config import QcnCpConfig
from sim.models.qcn import CpCodec, CpDecision, CpFrame, CpModel


class CpTB(TBBase):
    def __init__(self, dut, cfg: QcnCpConfig, seed: int, idle=None, backpressure=None):
        super().__init__(dut, seed)
        self.cfg = cfg
        # the build's configuration: structural fields and reset values (the byte counter's
        # first interval); the run-time registers are written to ``cfg``'s in start()
        self.build_cfg = (env_config(QcnCpConfig, "CC_BUILD_CONFIG")
                          if "CC_BUILD_CONFIG" in os.environ else cfg)
        self.model = CpModel(self.build_cfg)
        self.codec = CpCodec(self.build_cfg)
        regmap = self.build_cfg.register_map()
        csr = csr_write_layout(regmap.addr_width, regmap.data_width)
        self.csr = StreamDriver(dut, "csr_w", dut.clk, None,
                                on_accept=lambda w: self.model.write(*w),
                                encode=lambda w: csr.const({"addr": w[0], "data": w[1]})
                                .as_bits())
        self.scoreboard = Scoreboard("decision")
        self.got: list[CpDecision] = []
        self.bands: set[int] = set()
        self.driver = StreamDriver(dut, "frame", dut.clk, idle, on_accept=self._accept,
                                   encode=self.codec.pack_frame)
        self.monitor = StreamMonitor(dut, "decision", dut.clk, self._decision, backpressure,
                                     decode=self.codec.unpack_decision)

    async def start(self):
        await self.reset()
        await self.write_config()
        cocotb.start_soon(self.driver.run())
        cocotb.start_soon(self.monitor.run())

    async def write_config(self):
        """Write every register whose value in ``cfg`` differs from the build's reset value
        (before any frame: the model applies each at the edge that takes it)."""
        build_map, run_map = self.build_cfg.register_map(), self.cfg.register_map()
        assert [(r.name, r.width) for r in run_map.registers] == \
            [(r.name, r.width) for r in build_map.registers], "structural fields differ"
        writes = [(r.name, build_map.addr(r.name), r.reset) for r in run_map.registers
                  if r.writable and r.reset != build_map[r.name].reset]
        if not writes:
            return
        task = cocotb.start_soon(self.csr.run())
        for _, addr, value in writes:
            self.csr.send((addr, value))
        await self.wait_until(lambda: self.csr.idle(), 100 * len(writes), "register writes")
        await RisingEdge(self.dut.clk)
        task.cancel()
        # the model now has the test's registers (the first interval stays the build's)
        assert self.model.reg == replace(self.cfg.registers(),
                                         first_interval=self.build_cfg.sample_table[0])
        self.log.info("%d registers written: %s", len(writes), [w[0] for w in writes])

    def _accept(self, frame):
        d = self.model.step(frame)
        if d.cnm:
            self.bands.add(d.qntz_fb >> 3)
        self.scoreboard.expect(d)

    def _decision(self, d):
        self.got.append(d)
        self.scoreboard.compare(d)

    async def drain(self, limit=100_000):
        await self.wait_until(lambda: not self.driver.queue and not self.scoreboard.expected,
                              limit, "all decisions")
        await ClockCycles(self.dut.clk, 10)
        assert self.monitor.count == self.driver.accepted
        self.scoreboard.assert_empty()


#: frames per qntzFb band in the steering phase of ``random_frames``
STEER_FRAMES = 200


@cocotb.test()
async def random_frames(dut):
    cfg = env_config(QcnCpConfig)
    seed = env_seed(1)
    prng = random.Random(seed + 1)
    tb = CpTB(dut, cfg, seed, idle=Pattern.random(0.8, prng),
              backpressure=Pattern.random(0.75, prng))
    rng = tb.rng
    n = env_count("CC_FRAMES", 40000)
    occ_max = (1 << cfg.occ_width) - 1
    await tb.start()
    all_bands = os.environ.get("CC_ALL_BANDS", "1") == "1"

    async def send(frame):
        tb.driver.send(frame)
        if len(tb.driver.queue) > 64:
            await tb.wait_until(lambda: len(tb.driver.queue) < 16, 10_000, "driver queue")
            await RisingEdge(dut.clk)

    q, drift = cfg.q_eq, 0
    for i in range(n):
        if i % 2000 == 0:     # phases: draining, steady, filling slowly, filling fast
            drift = rng.choice((-400, 0, 150, 600, 2500))
        q = max(0, min(occ_max, q + drift + rng.randint(-800, 800)))
        x = rng.random()
        qlen = q if x < 0.97 else rng.choice((0, occ_max, cfg.q_eq, cfg.q_eq + 1))
        y = rng.random()
        length = (rng.choice((64, 128, 256, 1500)) if y < 0.9 else rng.randint(0, 9000)
                  if y < 0.99 else rng.choice((0, (1 << cfg.len_width) - 1)))
        await send(CpFrame(qlen, length))
    # Steering, so that every qntzFb band is visited whatever the seed (the random walk above
    # reaches the middle bands only for some seeds): the queue held at one level per band,
    # q = Q_eq + (8 k + 4) Fb_max / 63, so that once Q_delta is 0 (the level's second sample
    # on) |Fb| = q - Q_eq gives qntzFb = 8 k + 4, band k; 200 frames of 1500 bytes per level
    # are tens of samples at the scaled table.
    steer = 0
    if all_bands:
        for k in range(8):
            level = cfg.q_eq + (8 * k + 4) * cfg.fb_max // 63
            for _ in range(STEER_FRAMES):
                await send(CpFrame(level, 1500))
                steer += 1
    await tb.drain()
    m = tb.model
    tb.log.info("%d random + %d steered frames, %d samples, %d CNMs, qntzFb bands %s", n,
                steer, m.samples, m.cnms, sorted(tb.bands))
    assert tb.scoreboard.matched == n + steer
    assert m.samples >= env_count("CC_MIN_SAMPLES", 1000)
    assert m.cnms > m.samples // 10 and m.samples > m.cnms
    if all_bands:
        assert tb.bands == set(range(8)), f"qntzFb bands visited: {sorted(tb.bands)}"


# Known answers of the IEEE 802.1Qau congestion point, Q_eq 26000, w 2; expectations derived by
# hand:
# qntzFb = ceil(min(|Fb|, 130000) * 63 / 130000); QOffset, QDelta = floor(bytes / 64).
KNOWN = [
    ((36_000, 40_000), CpDecision(True, True, 11, 218, 62)),      # Fb -22000
    ((60_000, 100_000), CpDecision(True, True, 63, 1156, 625)),   # Fb -154000 -> -130000
    ((29_000, 30_000), CpDecision(True, True, 3, 62, 15)),        # Fb -6000
    ((30_000, 20_000), CpDecision(True, False, 0, 0, 0)),         # Fb +26000: no message
]


@cocotb.test()
async def known_answers(dut):
    cfg = env_config(QcnCpConfig)
    assert cfg.sample_table == (1,) * 8 and cfg.jitter == 0 and cfg.q_eq == 26_000
    # the decisions taken 1 cycle in 201: a sample's decision (18 cycles after its frame) is
    # made while the decision register still holds the previous one, so it goes through the
    # skid register (hand-worked values, whatever the handshake)
    tb = CpTB(dut, cfg, test_seed(1), backpressure=Pattern.bursts(1, 200))
    await tb.start()
    # The byte counter starts at the build's first interval (a reset value): frames of the
    # largest length with an empty queue use it up; the k-th is the first sample (k L >= S0,
    # no CNM: Fb = Q_eq > 0), and from it on every interval is 1 byte (no jitter).
    top_len = (1 << tb.build_cfg.len_width) - 1
    k = -(-tb.build_cfg.sample_table[0] // top_len)
    for _ in range(k):
        tb.driver.send(CpFrame(0, top_len))
    await tb.drain()
    assert tb.got == [CpDecision()] * (k - 1) + [CpDecision(sampled=True)], tb.got
    for (q_old, q), expected in KNOWN:
        tb.driver.send(CpFrame(q_old, 1))
        tb.driver.send(CpFrame(q, 1))
        await tb.drain()
        assert tb.got[-1] == expected, (q_old, q, tb.got[-1])
