"""cocotb testbench: the exported CNP generator, frame by frame, against the byte-exact model
and scapy.contrib.roce.

Run through ``cocotb_tests/test_cnp_gen.py`` with the configuration as JSON in ``CC_CONFIG``.
Requests and register writes go in through stream drivers (with idle patterns); the frame stream
is read with back-pressure, beats are assembled into bytes through ``keep``, and each frame is
compared with :class:`sim.models.cnp.CnpModel` in order; one frame in ten is also compared with
the frame scapy builds on its own.  The golden CNP (the public "RoCEv2 CNP packet format example")
is checked byte for byte.
"""

from __future__ import annotations

import cocotb
from cocotb.triggers import ClockCycles, RisingEdge

from cocotb_tests.infra.scoreboard import Scoreboard
from cocotb_tests.infra.stream import Pattern, StreamDriver, StreamMonitor
from cocotb_tests.infra.tb import TBBase, env_config, env_count, env_seed, test_seed
from hw.layouts import csr_write_layout
from hw.nic.cnp_config import CSR_ADDR_WIDTH, CSR_DATA_WIDTH, CnpGenConfig, CnpReg
from sim.models.cnp import CnpModel, pack_request
from sim.models.packets import FrameAssembler
from tests.test_cnp import GOLDEN, GOLDEN_REQ, random_request, scapy_frame

CSR = csr_write_layout(CSR_ADDR_WIDTH, CSR_DATA_WIDTH)


class CnpTB(TBBase):
    def __init__(self, dut, cfg: CnpGenConfig, seed: int, idle: Pattern | None = None,
                 backpressure: Pattern | None = None):
        super().__init__(dut, seed)
        self.cfg = cfg
        self.model = CnpModel(cfg)
        self.scoreboard = Scoreboard("frame")
        self.scapy_checks = 0
        self.requests = 0
        self.accept_cycles: list[int] = []
        self.last_cycles: list[int] = []
        self.assembler = FrameAssembler(cfg.data_bytes)
        self.frames = self.assembler.frames
        self.req_driver = StreamDriver(dut, "request", dut.clk, idle, on_accept=self._request,
                                       encode=lambda r: pack_request(cfg, r))
        self.csr_driver = StreamDriver(dut, "csr_w", dut.clk, None, on_accept=self._write,
                                       encode=lambda w: CSR.const({"addr": w[0],
                                                                   "data": w[1]}).as_bits())
        self.monitor = StreamMonitor(dut, "frame", dut.clk, self._beat, backpressure)

    async def start(self):
        await self.reset()
        cocotb.start_soon(self.req_driver.run())
        cocotb.start_soon(self.csr_driver.run())
        cocotb.start_soon(self.monitor.run())

    def _write(self, w):
        self.model.write(*w)

    def _request(self, req):
        self.accept_cycles.append(self.cycle())
        frame = self.model.frame(req)
        self.requests += 1
        if self.requests % 10 == 1:
            assert frame == scapy_frame(self.cfg, self.model.regs, req), "model != scapy"
            self.scapy_checks += 1
        self.scoreboard.expect(frame)

    def _beat(self, bits):
        frame = self.assembler.push(bits)
        if frame is not None:
            self.last_cycles.append(self.cycle())
            self.scoreboard.compare(frame)

    async def drain(self, timeout: int = 200_000):
        await self.wait_until(lambda: not self.req_driver.queue and not self.csr_driver.queue
                              and not self.scoreboard.expected, timeout, "frames to drain")
        await RisingEdge(self.dut.clk)

    def finish(self):
        self.scoreboard.assert_empty()
        assert not self.assembler.partial, "a frame without its last beat"
        self.log.info("%d frames checked (%d also against scapy)", self.scoreboard.matched,
                      self.scapy_checks)


@cocotb.test()
async def golden_frame(dut):
    """The golden CNP (public RoCEv2 CNP example): set TOS 0x89 and TTL 0x20 through the
    registers."""
    cfg = env_config(CnpGenConfig)
    tb = CnpTB(dut, cfg, test_seed(1))
    await tb.start()
    if cfg.ip_version != 4:
        return
    for reg, value in ((CnpReg.CNP_DSCP, 0x89 >> 2), (CnpReg.CNP_ECN, 0x89 & 3),
                       (CnpReg.TTL, 0x20)):
        tb.csr_driver.send((int(reg), value))
    await ClockCycles(dut.clk, 5)
    tb.req_driver.send(GOLDEN_REQ)
    await tb.drain()
    tb.finish()
    assert tb.frames[0][cfg.l2_bytes:] == GOLDEN, tb.frames[0].hex(" ")


@cocotb.test()
async def random_frames(dut):
    """Random requests and register writes, idle cycles and back-pressure."""
    cfg = env_config(CnpGenConfig)
    seed = env_seed(5)
    n = env_count("CC_FRAMES", 300)
    tb = CnpTB(dut, cfg, seed, idle=Pattern.random(0.7, __import__("random").Random(seed)),
               backpressure=Pattern.random(0.6, __import__("random").Random(seed + 1)))
    rng = tb.rng
    await tb.start()
    for i in range(n):
        if rng.random() < 0.05:
            reg = rng.choice(list(CnpReg))
            value = rng.choice([1, 2]) if reg == CnpReg.CNP_ECN else rng.getrandbits(16)
            tb.csr_driver.send((int(reg), value))
        tb.req_driver.send(random_request(cfg, rng))
        if i % 50 == 49:
            await tb.drain()
    await tb.drain()
    tb.finish()


@cocotb.test()
async def throughput_and_latency(dut):
    """Back-to-back requests, no back-pressure: the documented cycles per CNP and latency."""
    cfg = env_config(CnpGenConfig)
    tb = CnpTB(dut, cfg, test_seed(3))
    await tb.start()
    for _ in range(20):
        tb.req_driver.send(random_request(cfg, tb.rng))
    await tb.drain()
    tb.finish()
    gaps = {b - a for a, b in zip(tb.accept_cycles, tb.accept_cycles[1:], strict=False)}
    expected_gap = cfg.cycles_per_cnp
    assert gaps == {expected_gap}, (gaps, expected_gap)
    # hand count for the exported tops: 16 (IPv4) / 21 (IPv6) CRC words, then the ICRC beat(s)
    hand = {(4, 8): 18, (6, 16): 24}.get((cfg.ip_version, cfg.data_bytes))
    assert hand is None or expected_gap == hand
    tb.log.info("one CNP every %d cycles; last beat %d cycles after the request", expected_gap,
                tb.last_cycles[0] - tb.accept_cycles[0])
