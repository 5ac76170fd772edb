"""cocotb testbench: the exported CNM generator, frame by frame, against the byte-exact model,
an independent parse of the IEEE 802.1Qau CNM PDU layout and scapy's Ethernet/802.1Q layers.

Run through ``cocotb_tests/test_cnm_gen.py`` with the configuration as JSON in ``CC_CONFIG``.
Requests go in through a StreamDriver (idle pattern); beats are read with back-pressure and
assembled through ``keep``; every frame is compared in order.  ``back_to_back`` checks the
documented throughput: one beat per clock and no gap between frames.
"""

from __future__ import annotations

import random

import cocotb
from cocotb.triggers import ClockCycles, RisingEdge
from scapy.layers.l2 import Dot1Q, Ether

from cocotb_tests.infra.scoreboard import Scoreboard
from cocotb_tests.infra.stream import Pattern, StreamDriver, StreamMonitor
from cocotb_tests.infra.tb import TBBase, env_config, env_count, env_seed, test_seed
from hw.switch.cnm_config import CnmGenConfig
from sim.models.cnm import CnmModel, pack_cnm_request
from sim.models.packets import FrameAssembler
from tests.test_cnm import GOLDEN, REQ, parse_cnm, random_request


class CnmTB(TBBase):
    def __init__(self, dut, cfg, seed, idle=None, backpressure=None):
        super().__init__(dut, seed)
        self.cfg, self.model = cfg, CnmModel(cfg)
        self.scoreboard = Scoreboard("frame")
        self.assembler = FrameAssembler(cfg.data_bytes)
        self.frames = self.assembler.frames
        self.parsed, self.accepted = 0, 0
        self.beat_cycles: list[int] = []
        self.driver = StreamDriver(dut, "request", dut.clk, idle, on_accept=self._accept,
                                   encode=lambda r: pack_cnm_request(cfg, r))
        self.monitor = StreamMonitor(dut, "frame", dut.clk, self._beat, backpressure)

    async def start(self):
        await self.reset()
        cocotb.start_soon(self.driver.run())
        cocotb.start_soon(self.monitor.run())

    def _accept(self, r):
        f = self.model.frame(r)
        self.accepted += 1
        if self.accepted % 5 == 1:       # the model's frame against the layout and scapy
            p = parse_cnm(f)
            assert (p["qntz_fb"], p["q_off"], p["q_delta"], p["rpid"], p["msdu_len"],
                    p["cpid"] & 0xFFFF, p["enc_dst"]) == \
                (r.qntz_fb, r.q_off, r.q_delta, r.rpid, r.msdu_len, r.cpid_low, r.enc_dst)
            s = Ether(f)
            assert (s[Dot1Q].vlan, s[Dot1Q].prio, s[Dot1Q].type) == (r.vid, self.cfg.cnm_pcp,
                                                                     0x22E9)
            self.parsed += 1
        self.scoreboard.expect(f)

    def _beat(self, bits):
        self.beat_cycles.append(self.cycle())
        frame = self.assembler.push(bits)
        if frame is not None:
            self.scoreboard.compare(frame)

    async def drain(self):
        await self.wait_until(lambda: not self.driver.queue and not self.scoreboard.expected,
                              200_000, "all frames")
        await ClockCycles(self.dut.clk, 5)
        self.scoreboard.assert_empty()


@cocotb.test()
async def random_frames(dut):
    cfg = env_config(CnmGenConfig)
    seed = env_seed(1)
    prng = random.Random(seed + 1)
    tb = CnmTB(dut, cfg, seed, Pattern.random(0.6, prng), Pattern.random(0.7, prng))
    await tb.start()
    n = env_count("CC_FRAMES", 3000)
    if cfg == CnmGenConfig():
        tb.driver.send(REQ)
    for _ in range(n):
        tb.driver.send(random_request(tb.rng, cfg))
        if len(tb.driver.queue) > 32:
            await tb.wait_until(lambda: len(tb.driver.queue) < 8, 10_000, "driver queue")
            await RisingEdge(dut.clk)
    await tb.drain()
    if cfg == CnmGenConfig():
        assert tb.frames[0] == GOLDEN
    lengths = {len(f) for f in tb.frames}
    tb.log.info("%d frames, %d parsed, lengths %d..%d", len(tb.frames), tb.parsed,
                min(lengths), max(lengths))
    assert len(tb.frames) >= n and 60 in lengths and cfg.max_frame in lengths
    assert tb.parsed >= n // 5


@cocotb.test()
async def back_to_back(dut):
    """Always-ready sink: every beat of 20 queued frames in consecutive cycles."""
    cfg = env_config(CnmGenConfig)
    tb = CnmTB(dut, cfg, test_seed(5))
    await tb.start()
    for _ in range(20):
        tb.driver.send(random_request(tb.rng, cfg))
    await tb.drain()
    c = tb.beat_cycles
    assert c == list(range(c[0], c[0] + len(c))), "a gap in the beat stream"
