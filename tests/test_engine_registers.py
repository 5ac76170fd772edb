"""The multi-flow engine tops on the register layer (hw/nic/engine_regs.py): the register map
keeps the engine's own addresses (datapath registers from word 0, counters from 0x80) and adds
the identification header at 0x100 and the per-flow windows above (tests/test_engine_window.py
tests those); through :class:`EngineRegs` every word reads back as the
map's model says, after reset and after writes to every datapath register (applied once the
engine's pipeline is empty), header writes are ignored, and the map exports to SystemRDL and a
C header like every other block (tests/test_register_export.py).  ``CC_SEED`` overrides the
seed."""

from __future__ import annotations

import os
import random

import pytest

from hw.lib.csr import fourcc
from hw.nic.flow_engine_config import COUNTER_BASE, FlowEngineConfig
from tests.streams import run_testbenches

SMALL = dict(n_flows=16, time_width=26, wheel_horizon=256, wheel_slots=512, out_fifo_depth=20)


def _qcn():
    from hw.nic.qcn_engine import QcnEngineConfig, qcn_engine
    cfg = QcnEngineConfig(engine=FlowEngineConfig(**SMALL))
    return cfg, qcn_engine(cfg), "QCNE"


def _dcqcn():
    from hw.nic.dcqcn_engine import DcqcnEngineConfig, dcqcn_engine
    cfg = DcqcnEngineConfig(engine=FlowEngineConfig(**SMALL), pipelined=False)
    return cfg, dcqcn_engine(cfg), "DCQE"


def test_map_layout_is_the_engines():
    """Datapath registers at 0.., counters at COUNTER_BASE, header at 0x100, 2 KB map."""
    from gateware.tops import TOPS
    from hw.nic.flow_engine import COUNTERS
    # the map's size: the windows' half doubled (DCQCN 16 fields + CTRL = 32 words per flow,
    # QCN 9 + CTRL = 16; bytes = 2 x flows x words x 4)
    sizes = {"dcqcn_engine_1k": 2 * 1024 * 32 * 4, "qcn_engine_4k": 2 * 4096 * 16 * 4}
    for top, kind in (("dcqcn_engine_1k", "DCQE"), ("qcn_engine_4k", "QCNE")):
        regmap = TOPS[top].config.register_map(top)
        built = TOPS[top].build()
        built._MustUse__silence = built.engine._MustUse__silence = True   # (not elaborated)
        dp_regs = built.dp.regs
        assert [r.name for r in regmap.registers[:len(dp_regs)]] == \
            [n.upper() for n, _, _ in dp_regs]
        assert [r.addr for r in regmap.registers[:len(dp_regs)]] == list(range(len(dp_regs)))
        assert [regmap.addr(c.upper()) for c in COUNTERS] == \
            list(range(COUNTER_BASE, COUNTER_BASE + len(COUNTERS)))
        assert regmap.header_offset == 0x100 and regmap.size_bytes == sizes[top]
        assert regmap.model().read(0x100) == fourcc(kind)


@pytest.mark.parametrize("make", [_qcn, _dcqcn], ids=["qcn", "dcqcn"])
def test_read_back_through_the_wrapper(make):
    s = int(os.environ.get("CC_SEED", 7))
    print(f"seed {s} (CC_SEED={s} reproduces)")
    rng = random.Random(s)
    cfg, dut, kind = make()
    regmap = cfg.register_map()
    model = regmap.model()
    writable = [r for r in regmap.registers if r.writable]
    words = sorted(set(regmap.mapped_addresses()) | {0x7F, 0xFF, 0x104, 0x1FF})

    async def read_all(ctx, when):
        for addr in words:
            ctx.set(dut.csr_raddr, addr)
            await ctx.tick()
            # the next address (in the other half) is already on the port: the data is the
            # registered answer for ``addr``
            ctx.set(dut.csr_raddr, addr ^ 0x100)
            got, want = ctx.get(dut.csr_rdata), model.read(addr)
            assert got == want, f"{when}: word 0x{addr:03x} RTL 0x{got:x}, model 0x{want:x}"

    async def bench(ctx):
        while not ctx.get(dut.ready):
            await ctx.tick()
        await read_all(ctx, "after reset")
        assert model.read(0x100) == fourcc(kind)
        for reg in rng.sample(writable, len(writable)) + [regmap["ID"]]:
            value = rng.getrandbits(32)
            ctx.set(dut.csr_w.payload, {"addr": reg.addr, "data": value})
            ctx.set(dut.csr_w.valid, 1)
            await ctx.tick().until(dut.csr_w.ready)
            ctx.set(dut.csr_w.valid, 0)
            model.write(reg.addr, value)
        await ctx.tick()
        await read_all(ctx, "after writes")

    run_testbenches(dut, bench)


def test_every_engine_map_names_its_timer_services_statistics():
    """Each engine configuration passes its timer service to its register map: with the
    calendar the statistic after the histogram's second is MAX_LATENESS (the wheel's
    MAX_DISPLACEMENT), at the same address; checked on every engine configuration class."""
    from hw.nic.dcqcn_engine import DcqcnEngineConfig
    from hw.nic.flow_engine import COUNTERS, LATE_BUCKETS
    from hw.nic.ldcp_engine import LdcpEngineConfig
    from hw.nic.ldcp_rx_engine import LdcpRxEngineConfig
    from hw.nic.ldcp_tx_engine import LdcpTxEngineConfig
    from hw.nic.pacer_config import PacerConfig
    from hw.nic.qcn_engine import QcnEngineConfig
    from hw.nic.swift_engine import SwiftEngineConfig
    from hw.nic.timely_engine import TimelyEngineConfig
    addr = COUNTER_BASE + len(COUNTERS) + len(LATE_BUCKETS) + 2
    for cls in (DcqcnEngineConfig, QcnEngineConfig, TimelyEngineConfig, SwiftEngineConfig,
                LdcpEngineConfig, LdcpTxEngineConfig, LdcpRxEngineConfig, PacerConfig):
        base = cls()
        for timer, name in (("wheel", "MAX_DISPLACEMENT"), ("calendar", "MAX_LATENESS")):
            cfg = base.replace(engine=base.engine.replace(timer=timer, n_flows=16))
            regmap = cfg.register_map("e")
            assert regmap.addr(name) == addr, (cls.__name__, timer)
