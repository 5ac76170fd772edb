"""cocotb testbench of an engine top behind AXI4-Lite with per-flow windows
(:class:`hw.lib.axi_lite.AxiLiteRegs` around :class:`hw.nic.engine_regs.EngineRegs`), driven by
cocotbext-axi's ``AxiLiteMaster``.

One coroutine steps :class:`sim.models.flow_engine.FlowEngineModel` in lock step with the DUT
(at mid-period, as cocotb_tests/flow_engine_tb.py does): it offers ``tx`` / ``cn`` / the outer
``ctl`` stream (random idle), draws ``rate`` / ``rd`` ready, and gives the model what the
engine inside the wrapper is offered (its ``ctl``, register writes and read address, seen on
the wrapper's ``eng_*`` wires); every cycle it compares the engine's readies, ``rate``, ``rd``
and register read data with the model.  Independently of the model it checks what the window
issues: every control operation the wrapper offers the engine must be the next one the test's
AXI accesses asked for (flow, operation, field, value), and every READ answer goes to the
window or to the outer ``rd`` by its origin (outer answers all come out, in order, none
taken by the window; window answers never appear outside).

Tests: ``registers`` (every word of the global half read after reset: values, header, SLVERR
and 0 on unmapped words; START and a field written and read back on the first and the last
flow; every field of both read; unmapped window words, header writes and partial strobes
answered SLVERR with nothing issued), ``hot_flow`` (window reads and writes of one flow while
its TX and CN events stream in and the outer ``ctl`` reads flows at random with ``rd``
back-pressure: every read equals the model's state at the cycle its READ issued),
``back_to_back`` (window and global writes, then reads, all queued at once).

Environment (set by the runner, cocotb_tests/test_engine_axil.py): ``CC_TOP`` (the top of
``gateware.tops.TOPS`` whose factory builds the engine), ``CC_ENGINE_CONFIG`` (its
configuration, resized, as JSON), ``CC_MODEL_DP`` (``module:Class`` of the model datapath),
``CC_EVENTS`` (TX events of ``hot_flow``, default 600), ``CC_DEFAULT_SEED`` / ``CC_SEED``;
``CC_DEBUG=1`` logs every control operation the engine takes.
"""

from __future__ import annotations

import importlib
import logging
import os
import warnings
from collections import deque

import cocotb
from cocotb.triggers import ClockCycles, ReadOnly, Timer
from cocotbext.axi import AxiLiteBus, AxiLiteMaster, AxiResp

from cocotb_tests.infra.tb import CLOCK_PERIOD_NS, TBBase, env_count, env_seed
from hw.lib.csr import fourcc
from hw.nic.engine_regs import CTRL_EN_BIT
from hw.nic.flow_datapath import CtlOp
from hw.nic.flow_engine import engine_layouts
from hw.nic.flow_engine_config import CSR_ADDR_WIDTH
from sim.models.flow_engine import FlowEngineModel

# cocotbext-axi 0.1.28 still calls cocotb 2's deprecated setimmediatevalue (see axi_lite_tb.py)
warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"cocotbext\.")

_CTRL_BITS = ((0, CtlOp.START), (1, CtlOp.STOP), (2, CtlOp.RESET))


def _parts():
    from gateware.tops import TOPS
    top = TOPS[os.environ["CC_TOP"]]
    cfg = type(top.config).from_json(os.environ["CC_ENGINE_CONFIG"])
    block = top.factory(cfg)
    block._MustUse__silence = block.engine._MustUse__silence = True   # parameters only
    mod, cls = os.environ["CC_MODEL_DP"].split(":")
    return cfg, block, getattr(importlib.import_module(mod), cls)(block.dp)


class EngineAxilTB(TBBase):
    STREAMS = ("tx", "cn", "ctl")

    def __init__(self, dut, seed: int):
        super().__init__(dut, seed)
        cfg, block, dpm = _parts()
        self.regmap = cfg.register_map()
        self.ecfg, self.dp = block.config, block.dp
        self.model = FlowEngineModel(self.ecfg, dpm)
        self.model.log_issue = False
        self.lay = lay = engine_layouts(self.ecfg, self.dp)
        self.fields = lay["fields"]
        self.width = {n: f.width for n, f in lay["word"]["algo"].shape}
        self.n_flows = self.ecfg.n_flows
        self.blk = dut.block
        self.axil = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axil"), dut.clk, dut.rst)
        for log in (self.axil.write_if.log, self.axil.read_if.log):
            log.setLevel(logging.WARNING)
        self.queues = {k: deque() for k in self.STREAMS}
        self.offering = dict.fromkeys(self.STREAMS)
        self.p_valid = dict.fromkeys(self.STREAMS, 1.0)
        self.p_rate_ready = self.p_rd_ready = 1.0
        c = lay["ctl"]
        self._ctl = [(c[n].offset, (1 << c[n].width) - 1) for n in ("flow", "op", "field",
                                                                      "value")]
        self._tx_off = lay["tx"]["bytes"].offset
        self._cn_off = lay["cn"]["cn"].offset
        self.vmask = (1 << c["value"].width) - 1
        # the window's expected operations (in AXI order per channel) and its READ answers
        self.expect_w: deque = deque()
        self.expect_r: deque = deque()
        self.win_states: deque = deque()
        self.origins: deque = deque()
        self.ext_reads = 0
        self.ext_answers = 0
        self.win_ops = 0
        self.hot_in_flight = 0          # window READs issued with an update of their flow in
        self.cycles = 0                 # flight

    # -- encoding ------------------------------------------------------------------------------
    def _pack_ctl(self, item) -> int:
        return sum((int(getattr(v, "value", v)) & mask) << off
                   for v, (off, mask) in zip(item, self._ctl, strict=True))

    def _unpack_ctl(self, bits: int):
        flow, op, field, value = ((bits >> off) & mask for off, mask in self._ctl)
        return flow, CtlOp(op), field, value

    def _bits(self, k, item) -> int:
        if k == "tx":
            return item[0] | item[1] << self._tx_off
        if k == "cn":
            return item[0] | item[1] << self._cn_off
        return self._pack_ctl(item)

    # -- the lock-step coroutine ------------------------------------------------------------------
    async def start(self):
        dut = self.dut
        for k in self.STREAMS:
            getattr(dut, f"{k}__valid").value = 0
        dut.rate__ready.value = 0
        dut.rd__ready.value = 0
        dut.rst.value = 1
        await ClockCycles(dut.clk, 2)
        dut.rst.value = 0
        await Timer(CLOCK_PERIOD_NS // 2, unit="ns")     # mid-period of the model's cycle 0
        cocotb.start_soon(self._lockstep())
        await ClockCycles(dut.clk, self.n_flows + 4)
        assert int(dut.ready.value) == 1

    def _fail(self, what):
        raise AssertionError(f"cycle {self.cycles} (seed {self.seed}): {what}")

    async def _lockstep(self):
        dut, blk, model, rng = self.dut, self.blk, self.model, self.rng
        while True:
            offers = {}
            for k in self.STREAMS:
                item = self.offering[k]
                if item is None and self.queues[k] and rng.random() < self.p_valid[k]:
                    item = self.offering[k] = self.queues[k].popleft()
                    getattr(dut, f"{k}__payload").value = self._bits(k, item)
                getattr(dut, f"{k}__valid").value = int(item is not None)
                offers[k] = item
            rr = rng.random() < self.p_rate_ready
            dr = rng.random() < self.p_rd_ready
            dut.rate__ready.value = int(rr)
            dut.rd__ready.value = int(dr)
            await ReadOnly()
            ctl = None
            if int(blk.eng_ctl_valid.value):
                ctl = self._unpack_ctl(int(blk.eng_ctl.value))
            csr_w = None
            if int(blk.eng_csr_w_valid.value):
                bits = int(blk.eng_csr_w.value)
                csr_w = (bits & ((1 << CSR_ADDR_WIDTH) - 1), bits >> CSR_ADDR_WIDTH)
            eng_rd_ready = int(blk.eng_rd_ready.value)
            in_flight = ctl is not None and any(
                a is not None and a[9] == ctl[0] for a in model.pipe)
            o = model.step(tx=offers["tx"], cn=offers["cn"], ctl=ctl, csr_w=csr_w,
                           rate_ready=rr, rd_ready=eng_rd_ready,
                           csr_raddr=int(blk.eng_csr_raddr.value))
            got = [int(dut.tx__ready.value), int(dut.cn__ready.value),
                   int(blk.eng_ctl_ready.value), int(blk.eng_csr_w_ready.value),
                   int(dut.ready.value)]
            want = [int(o.tx_ready), int(o.cn_ready), int(o.ctl_ready), int(o.csr_w_ready),
                    int(o.ready)]
            if got != want:
                self._fail(f"ready (tx, cn, engine ctl, engine csr_w, ready) {got} != model "
                           f"{want}")
            rv = int(dut.rate__valid.value)
            if rv != (o.rate is not None) or (rv and int(dut.rate__payload.value) != o.rate):
                self._fail(f"rate {rv} != model {o.rate}")
            ev = int(blk.eng_rd_valid.value)
            if ev != (o.rd is not None) or (ev and int(dut.rd__payload.value) != o.rd):
                self._fail(f"engine rd {ev} != model {o.rd}")
            if int(blk.eng_csr_rdata.value) != o.csr_rdata:
                self._fail(f"engine csr_rdata {int(blk.eng_csr_rdata.value)} != model "
                           f"{o.csr_rdata}")
            ext_took = offers["ctl"] is not None and int(dut.ctl__ready.value)
            if ctl is not None and o.ctl_ready:
                self._taken(ctl, offers["ctl"], ext_took, in_flight)
            elif ext_took:
                self._fail("the outer ctl was taken but the engine took nothing")
            if o.rd is not None and eng_rd_ready:
                origin = self.origins.popleft()
                outer = int(dut.rd__valid.value) and dr
                if origin == "ext" and not outer:
                    self._fail(f"an outer READ answer {o.rd:#x} did not come out on rd")
                if origin == "win" and int(dut.rd__valid.value):
                    self._fail("a window READ answer appeared on the outer rd")
                self.ext_answers += origin == "ext"
            elif int(dut.rd__valid.value) and dr:
                self._fail("rd transfer without an engine answer")
            for k, r in (("tx", o.tx_ready), ("cn", o.cn_ready), ("ctl", ext_took)):
                if offers[k] is not None and r:
                    self.offering[k] = None
            self.cycles += 1
            await Timer(CLOCK_PERIOD_NS, unit="ns")

    def _taken(self, ctl, ext_offer, ext_took, in_flight):
        flow, op, field, value = ctl
        if os.environ.get("CC_DEBUG"):
            self.log.info("cycle %d: engine took %s (outer %s)", self.cycles, ctl, ext_took)
        if ext_took:
            if (flow, op, field, value) != tuple(ext_offer):
                self._fail(f"outer ctl {ext_offer} reached the engine as {ctl}")
        elif op == CtlOp.READ:
            if not self.expect_r:
                self._fail(f"unexpected window READ {ctl}")
            want = self.expect_r.popleft()
            if flow != want:
                self._fail(f"window READ of flow {flow}, expected flow {want}")
            self.win_states.append(self.model.state(flow))
            self.hot_in_flight += in_flight
        else:
            if not self.expect_w:
                self._fail(f"unexpected window operation {ctl}")
            want = self.expect_w.popleft()
            got = (flow, op, field, value) if op == CtlOp.WRITE else (flow, op)
            if got != want:
                self._fail(f"window operation {got}, expected {want}")
        if not ext_took:
            self.win_ops += 1
        if op == CtlOp.READ:
            self.origins.append("ext" if ext_took else "win")
            self.ext_reads += bool(ext_took)

    # -- AXI accesses ---------------------------------------------------------------------------
    def window(self, word: int):
        hit = self.regmap.decode(word)
        return hit if hit is not None and hit[1] is not None else None

    def expected_ok(self, word: int, write: bool) -> bool:
        hit = self.regmap.decode(word)
        return hit is not None and (hit[0].writable or not write)

    async def read(self, word: int) -> int:
        """Read ``word``; a window word is compared with the model's state at the cycle its
        READ issued, a global word with the model (or the header's constants)."""
        win = self.window(word)
        if win is not None:
            self.expect_r.append(win[1])
        resp = await self.axil.read(4 * word, 4)
        value = int.from_bytes(resp.data, "little")
        ok = self.expected_ok(word, False)
        if resp.resp != (AxiResp.OKAY if ok else AxiResp.SLVERR):
            self._fail(f"read of word {word:#x} answered {resp.resp}")
        if not ok and value != 0:
            self._fail(f"unmapped word {word:#x} read {value:#x}")
        if win is not None:
            reg, flow = win
            if not self.win_states:
                self._fail(f"window word {word:#x} answered before its READ was issued")
            st = self.win_states.popleft()
            want = st["en"] << CTRL_EN_BIT if reg.name == "CTRL" else st["algo"][reg.name.lower()]
            if value != want:
                self._fail(f"flow {flow} {reg.name} read {value:#x}, model at the READ "
                           f"{want:#x}")
        return value

    async def write(self, word: int, value: int, strobes: int = 4):
        """Write ``word``; the window operation it must cause is queued for the lock step."""
        win = self.window(word)
        ok = self.expected_ok(word, True) and strobes == 4
        if win is not None and ok:
            reg, flow = win
            if reg.name == "CTRL":
                op = next((op for bit, op in _CTRL_BITS if value >> bit & 1), None)
                if op is not None:
                    self.expect_w.append((flow, op))
            else:
                index = self.fields.index(reg.name.lower())
                self.expect_w.append((flow, CtlOp.WRITE, index, value & self.vmask))
        resp = await self.axil.write(4 * word, value.to_bytes(4, "little")[:strobes])
        if resp.resp != (AxiResp.OKAY if ok else AxiResp.SLVERR):
            self._fail(f"write of word {word:#x} answered {resp.resp}")

    def addr(self, name: str, flow: int | None = None) -> int:
        return self.regmap.addr(name, flow)

    async def settle(self, cycles: int = 40):
        """Until the outer queues are empty, then ``cycles`` more."""
        while any(self.queues.values()) or any(v is not None for v in self.offering.values()):
            await ClockCycles(self.dut.clk, 1)
        await ClockCycles(self.dut.clk, cycles)

    def finish(self):
        assert not self.expect_w and not self.expect_r and not self.win_states, \
            "window operations left over"
        assert self.ext_answers == self.ext_reads, \
            f"{self.ext_reads} outer READs, {self.ext_answers} answers out"


@cocotb.test()
async def registers(dut):
    tb = EngineAxilTB(dut, env_seed(41))
    await tb.start()
    regmap, N = tb.regmap, tb.n_flows
    # the header, hand-derived: block type, FLOWS = count | log2(words per flow) << 16, and a
    # map of 2 x N windows of 2**k words
    k = regmap.flow_shift
    assert 1 << k >= len(tb.fields) + 1 > 1 << (k - 1)
    assert await tb.read(0x100) == fourcc(regmap.block_type)
    assert await tb.read(0x102) == 2 * N * (1 << k) * 4
    assert await tb.read(0x103) == N | k << 16
    # every word of the engine's and the header's half, and a sample of the unmapped words
    # below the windows: the engine's words as the model has them, the rest 0
    words = list(range(0x200)) + tb.rng.sample(range(0x200, regmap.flow_base), 16)
    for word in words:
        value = await tb.read(word)
        want = tb.model._read(word) if word < 0x100 else regmap.model().read(word)
        assert value == want, f"word {word:#x} = {value:#x}, expected {want:#x}"
    # the datapath's registers written back with their values (OKAY, nothing changes)
    for reg in regmap.registers:
        if reg.writable:
            await tb.write(reg.addr, reg.reset)
    # START the first and the last flow; a field written and read back on both
    plain = [n for n in tb.fields if not n.endswith(("_on", "_dl"))]
    for f in (0, N - 1):
        await tb.write(tb.addr("CTRL", f), 1)
        assert await tb.read(tb.addr("CTRL", f)) == 1 << CTRL_EN_BIT
        for name in (plain[0], tb.rng.choice(plain[1:])):
            v = tb.rng.getrandbits(tb.width[name])
            above = tb.rng.getrandbits(32) & ~((1 << tb.width[name]) - 1)   # ignored bits
            await tb.write(tb.addr(name.upper(), f), v | above)
            got = await tb.read(tb.addr(name.upper(), f))
            assert got == v, f"flow {f} {name}: wrote {v:#x}, read {got:#x}"
        for name in tb.fields:
            await tb.read(tb.addr(name.upper(), f))
    # unmapped window words, the header, partial strobes: SLVERR, nothing issued
    for word in (tb.addr("CTRL", 3) + 1, tb.addr("CTRL", N - 1) + 1,
                 regmap.flow_base + (N - 1 << k) + (1 << k) - 1):
        await tb.read(word)
        await tb.write(word, 0xFFFF_FFFF)
    for word in (0x100, 0x103, 0x1FF, regmap.flow_base - 1):
        await tb.write(word, 0x1234_5678)
    await tb.write(tb.addr(plain[0].upper(), 1), 0xFFFF, strobes=2)
    await tb.settle()
    tb.finish()
    tb.log.info("%d window operations", tb.win_ops)


@cocotb.test()
async def hot_flow(dut):
    tb = EngineAxilTB(dut, env_seed(42))
    await tb.start()
    rng, N = tb.rng, tb.n_flows
    hot = rng.randrange(N)
    for f in range(N):
        tb.queues["ctl"].append((f, CtlOp.START, 0, 0))
    await tb.settle()
    cn_width = tb.lay["cn"]["cn"].width
    for _ in range(env_count("CC_EVENTS", 600)):
        f = hot if rng.random() < 0.7 else rng.randrange(N)
        tb.queues["tx"].append((f, rng.randrange(64, 1500)))
        if rng.random() < 0.3:
            tb.queues["cn"].append((f, rng.getrandbits(cn_width) | 1))
        if rng.random() < 0.05:
            tb.queues["ctl"].append((rng.randrange(N), CtlOp.READ, 0, 0))
    tb.p_valid = {"tx": 0.95, "cn": 0.9, "ctl": 0.5}
    tb.p_rd_ready, tb.p_rate_ready = 0.6, 0.9
    rate_name = tb.dp.rate_field.upper()
    reads = 0
    while tb.queues["tx"]:
        name = rng.choice(tb.fields + ["ctrl"]).upper()
        await tb.read(tb.addr(name, hot))
        reads += 1
        if rng.random() < 0.1:
            await tb.write(tb.addr(rate_name, hot), rng.getrandbits(tb.width[rate_name.lower()]))
    await tb.settle(100)
    tb.finish()
    tb.log.info("%d window reads of flow %d, %d with an update of the flow in flight; %d "
                "outer READs", reads, hot, tb.hot_in_flight, tb.ext_reads)
    assert tb.hot_in_flight >= reads // 4, "the reads did not meet updates in flight"
    assert tb.ext_reads >= 5


@cocotb.test()
async def back_to_back(dut):
    tb = EngineAxilTB(dut, env_seed(43))
    await tb.start()
    rng, N, regmap = tb.rng, tb.n_flows, tb.regmap
    for f in (0, N - 1):
        tb.queues["ctl"].append((f, CtlOp.START, 0, 0))
        tb.queues["ctl"].append((f, CtlOp.STOP, 0, 0))      # state kept, no timer changes it
    await tb.settle()
    written = {}
    writes = []
    for f in (0, N - 1):
        for name in tb.fields:
            v = rng.getrandbits(tb.width[name])
            written[tb.addr(name.upper(), f)] = v
            writes.append(cocotb.start_soon(tb.write(tb.addr(name.upper(), f), v)))
    for reg in regmap.registers[:4]:
        writes.append(cocotb.start_soon(tb.write(reg.addr, reg.reset)))
    for w in writes:
        await w
    words = list(written) + [0x100, 0x101, 0x102, 0x103, 0, 1, 0x80, 0x300]
    rng.shuffle(words)
    start = tb.cycles
    reads = [cocotb.start_soon(tb.read(w)) for w in words]
    for word, r in zip(words, reads, strict=True):
        value = await r
        if word in written:
            assert value == written[word], f"word {word:#x}: wrote {written[word]:#x}, " \
                f"read {value:#x}"
    cycles = tb.cycles - start
    tb.log.info("%d back-to-back reads (%d window) in %d cycles", len(words), len(written),
                cycles)
    await tb.settle()
    tb.finish()
