"""Per-flow windows with state fields wider than 32 bits (hw/nic/engine_regs.py, hw/lib/csr.py
"Wide fields"): the TIMELY, Swift and LDCP engine tops' maps (hand-derived word layouts and C
header offsets), the golden register model's atomic rules on hand-written sequences, and in the
Amaranth simulator a small LDCP receiver engine (and under CC_LONG a small TIMELY engine, whose
one-cycle datapath is slow to simulate) whose window accesses (random, plus the sequences that
tell an atomic access from a non-atomic one) are checked against the register model: every
read's answer, and every cycle the control operation the wrapper offers the engine (a high
word's write or read must issue nothing; ``W0``'s write is one WRITE of the whole field).
``CC_SEED`` overrides the seed; ``CC_LONG=1`` runs 400 random accesses instead of 60."""

from __future__ import annotations

import os
import random
import shutil
import subprocess

import pytest
from amaranth.lib import data

from hw.nic.engine_regs import CTRL_EN_BIT, CTRL_RESET, CTRL_START, CTRL_STOP
from hw.nic.flow_datapath import CtlOp
from hw.nic.flow_engine_config import FlowEngineConfig
from tests.streams import csr_read, run_testbenches

SMALL = dict(n_flows=16, time_width=26, wheel_horizon=256, wheel_slots=512, out_fifo_depth=20)
LONG = bool(os.environ.get("CC_LONG"))


def _top_map(top):
    from gateware.export import register_map
    from gateware.tops import TOPS
    return register_map(TOPS[top])


def test_wide_word_layouts():
    """Hand-derived: TIMELY's state is rate 27, prev_rtt 24, rtt_diff 33 (two words: 32 + 1),
    neg 8, valid 1, then CTRL: 7 words, 8 per flow; 1024 x 8 = 0x2000 words of windows above
    the header's 0x2000.  The LDCP sender: 15 fields, wr (40 = 32 + 8) and offer (37 = 32 + 5)
    two words each, + CTRL = 18 words, 32 per flow.  The receiver: rec 44 = 32 + 12.  Swift:
    no field wider than 32 bits, 8 fields + CTRL, 16 per flow."""
    m = _top_map("timely_engine_1k")
    assert [r.name for r in m.flow_registers] == ["RATE", "PREV_RTT", "RTT_DIFF_W0",
                                                   "RTT_DIFF_W1", "NEG", "VALID", "CTRL"]
    assert (m.flow_shift, m.flow_base, m.size_bytes) == (3, 0x2000, 0x10000)
    assert m.addr("RTT_DIFF_W1", 1023) == 0x2000 + 1023 * 8 + 3
    assert [(f.name, f.width) for r in m.flow_registers[2:4] for f in r.fields] == \
        [("rtt_diff_w0", 32), ("rtt_diff_w1", 1)]
    assert m.header_values()[0x103] == 1024 | 3 << 16
    rdl = m.systemrdl()
    assert "rtt_diff[32:32], word 1 of 2 (low word first)" in rdl
    assert "\\RTT_DIFF_W1 @ 0xC;" in rdl                       # byte 12 of the window
    tx = _top_map("ldcp_tx_engine_1k")
    assert [r.name for r in tx.flow_registers][:7] == ["WR_W0", "WR_W1", "ON", "DL", "OVR",
                                                        "OFFER_W0", "OFFER_W1"]
    assert tx.addr("CTRL", 0) - tx.flow_base == 17 and tx.flow_shift == 5
    assert tx["WR_W1"].fields[0].width == 8 and tx["OFFER_W1"].fields[0].width == 5
    assert _top_map("ldcp_rx_engine_1k")["REC_W1"].fields[0].width == 12
    assert _top_map("ldcp_engine_1k").flow_shift == 3
    sw = _top_map("swift_engine_1k")
    assert not any(r.wide for r in sw.flow_registers) and sw.flow_shift == 4


def test_model_atomic_rules():
    """The golden register model (RegisterModel) on the TIMELY map, hand-written sequences:
    a high word's write is staged (the field unchanged until W0), W0's write commits, a high
    word reads W0's snapshot (not the live value), high words masked to their width."""
    m = _top_map("timely_engine_1k")
    model = m.model()
    lo, hi = m.addr("RTT_DIFF_W0", 5), m.addr("RTT_DIFF_W1", 5)
    assert model.write(hi, 0xFFFF_FFFF) == (m["RTT_DIFF_W1"], 5)
    assert model.read(lo) == 0 and model.read(hi) == 0          # staged only
    model.write(lo, 0x1234_5678)                                 # commit: 0x1_1234_5678
    assert model.read(lo) == 0x1234_5678 and model.read(hi) == 1
    assert model.flow_values[5]["RTT_DIFF_W1"] == 1
    # snapshot: W0 read, then a whole new value committed, then W1 reads the old high word
    assert model.read(lo) == 0x1234_5678
    model.write(hi, 0)
    model.write(lo, 7)
    assert model.read(hi) == 1                                   # the snapshot's
    assert model.read(lo) == 7 and model.read(hi) == 0           # a new snapshot
    # one set of staged words, shared by the flows: flow 2's W0 commits what flow 5 staged
    model.write(hi, 1)
    model.write(m.addr("RTT_DIFF_W0", 2), 3)
    assert model.read(m.addr("RTT_DIFF_W0", 2)) == 3 and model.read(m.addr("RTT_DIFF_W1", 2)) == 1


def _timely():
    from hw.nic.timely_engine import TimelyEngineConfig, timely_engine
    cfg = TimelyEngineConfig(engine=FlowEngineConfig(**SMALL), pipelined=False)
    init = {"rate": cfg.timely.registers().init_rate}
    return cfg, timely_engine(cfg), init, "rtt_diff"


def _ldcp_rx():
    from hw.nic.ldcp_rx_engine import LdcpRxEngineConfig, ldcp_rx_engine
    cfg = LdcpRxEngineConfig(engine=FlowEngineConfig(**SMALL))
    return cfg, ldcp_rx_engine(cfg), {}, "rec"


@pytest.mark.parametrize("make", [
    pytest.param(_timely, id="timely", marks=pytest.mark.skipif(
        not LONG, reason="CC_LONG: TIMELY's one-cycle datapath is ~35 s of simulator CPU")),
    pytest.param(_ldcp_rx, id="ldcp_rx")])
def test_window_against_model(make):
    s = int(os.environ.get("CC_SEED", 11))
    print(f"seed {s} (CC_SEED={s} reproduces)")
    rng = random.Random(s)
    cfg, dut, init, wide = make()
    regmap = cfg.register_map()
    model = regmap.model()
    # the state's fields in layout order (the ctl field number) and widths, from the layout
    layout = [(n, f.width) for n, f in data.Layout.cast(dut.dp.state_layout)]
    index = {n: i for i, (n, _) in enumerate(layout)}
    words = [r for r in regmap.flow_registers if r.name != "CTRL"]
    en = [0] * cfg.engine.n_flows
    expected_ops = []           # the control operations the window must offer, in order
    done = []

    def field_value(flow, name):
        """The model's whole field (its words put together, low word first)."""
        regs = [r for r in words if (r.wide or (r.name.lower(),))[0] == name]
        return sum(model.flow_values[flow][r.name] << (32 * i) for i, r in enumerate(regs))

    def init_flow(flow):
        for r in words:
            name, j = (r.wide[0], r.wide[1]) if r.wide else (r.name.lower(), 0)
            model.flow_values[flow][r.name] = (init.get(name, 0) >> (32 * j)) & \
                r.fields[0].mask

    async def write(ctx, addr, value):
        hit = regmap.decode(addr)
        reg, flow = hit if hit else (None, None)
        if reg is not None and reg.name == "CTRL":
            cmd = value & 7
            if cmd:
                op = CtlOp.START if cmd & 1 else CtlOp.STOP if cmd & 2 else CtlOp.RESET
                expected_ops.append((flow, op, None, None))
                if op != CtlOp.STOP:
                    init_flow(flow)
                en[flow] = {CtlOp.START: 1, CtlOp.STOP: 0}.get(op, en[flow])
        elif reg is not None:
            model.write(addr, value)
            if not reg.wide or reg.wide[1] == 0:       # W0 (or a narrow field): one WRITE
                name = reg.wide[0] if reg.wide else reg.name.lower()
                expected_ops.append((flow, CtlOp.WRITE, index[name], field_value(flow, name)))
        ctx.set(dut.csr_w.payload, {"addr": addr, "data": value})
        ctx.set(dut.csr_w.valid, 1)
        high = reg is not None and reg.wide is not None and reg.wide[1] > 0
        if high:
            assert ctx.get(dut.csr_w.ready), "a high word's write must be taken at once"
        for _ in range(500):
            *_, ready = await ctx.tick().sample(dut.csr_w.ready)
            if ready:
                break
        else:
            raise AssertionError(f"write of word 0x{addr:x} not taken in 500 cycles")
        ctx.set(dut.csr_w.valid, 0)

    async def read(ctx, addr):
        hit = regmap.decode(addr)
        reg, flow = hit if hit else (None, None)
        if reg is not None and reg.name == "CTRL":
            want = en[flow] << CTRL_EN_BIT
        else:
            want = model.read(addr)
        if reg is not None and (reg.wide is None or reg.wide[1] == 0):
            expected_ops.append((flow, CtlOp.READ, None, None))
        got, waited = await csr_read(ctx, dut, addr, limit=100)
        assert got == want, f"word 0x{addr:x} ({reg and reg.name}, flow {flow}): RTL " \
            f"0x{got:x}, model 0x{want:x}"
        if reg is not None and reg.wide and reg.wide[1]:
            assert waited == 1, f"a high word answers the next cycle, not after {waited}"

    def a(name, flow):
        return regmap.addr(name, flow)

    W0, W1 = f"{wide.upper()}_W0", f"{wide.upper()}_W1"
    hi_mask = regmap[W1].fields[0].mask

    async def bus(ctx):
        ctx.set(dut.rate.ready, 1)      # (a full rate FIFO would hold every input back)
        while not ctx.get(dut.ready):
            await ctx.tick()
        # the sequences an atomic access must pass and a non-atomic one fails:
        # a staged high word changes nothing until W0 ...
        await write(ctx, a(W1, 1), 0xFFFF_FFFF)
        await read(ctx, a(W0, 1))
        await read(ctx, a(W1, 1))
        # ... W0 commits both words at once (one WRITE: checked by the monitor)
        await write(ctx, a(W0, 1), 0x89AB_CDEF)
        await read(ctx, a(W0, 1))
        await read(ctx, a(W1, 1))
        # the snapshot: read W0, commit a new value, W1 still answers the snapshot's word
        await read(ctx, a(W0, 1))
        await write(ctx, a(W1, 1), 0)
        await write(ctx, a(W0, 1), 0x0000_0001)
        await read(ctx, a(W1, 1))
        assert model.snapshot[wide][1] == hi_mask != model.flow_values[1][W1]   # (telling)
        await read(ctx, a(W0, 1))
        await read(ctx, a(W1, 1))
        # the high word of another flow answers the same (shared) snapshot
        await read(ctx, a(W1, 3))
        # START (init state, enabled), read back, STOP (a stopped flow's state changes only
        # by the window's writes)
        await write(ctx, a("CTRL", 2), CTRL_START)
        await read(ctx, a("CTRL", 2))
        await read(ctx, a(W0, 2))
        await read(ctx, a(W1, 2))
        await write(ctx, a("CTRL", 2), CTRL_STOP)
        await read(ctx, a("CTRL", 2))
        # random accesses: window words of every flow, CTRL commands, unmapped words
        n = 400 if LONG else 60
        addrs = [a(r.name, f) for r in regmap.flow_registers for f in range(len(en))]
        addrs += [regmap.flow_base + (len(en) - 1 << regmap.flow_shift) + len(words) + 1]
        for _ in range(n):
            addr = rng.choice(addrs)
            reg = regmap.decode(addr)
            if rng.random() < 0.5:
                if reg and reg[0].name == "CTRL":
                    # (no START: an enabled flow's timers would change its state, LDCP's
                    # flush, and the model here is the register model alone)
                    value = rng.choice([CTRL_STOP, CTRL_RESET, 0, CTRL_STOP | CTRL_RESET])
                else:
                    value = rng.getrandbits(32)
                await write(ctx, addr, value)
            else:
                await read(ctx, addr)
        for _ in range(10):
            await ctx.tick()
        assert not expected_ops, f"operations never offered: {expected_ops}"
        done.append(1)

    async def monitor(ctx):
        """Every cycle: what the window offers the engine's ctl is the next expected
        operation (nothing else is offered: the outer ctl is idle)."""
        eng = dut.engine.ctl
        while not done:
            _, _, valid, ready, p = await ctx.tick().sample(eng.valid, eng.ready, eng.payload)
            if valid and ready:
                assert expected_ops, f"unexpected operation {p}"
                flow, op, field, value = expected_ops.pop(0)
                # (the engine keeps a field's width of the value: bits above are not compared)
                width = layout[field][1] if field is not None else 0
                got = (p.flow, p.op, p.field if field is not None else None,
                       p.value & ((1 << width) - 1) if value is not None else None)
                assert got == (flow, op, field, value), f"operation {got}, expected " \
                    f"{(flow, op, field, value)}"

    run_testbenches(dut, bus, monitor)


CC = shutil.which("cc") or shutil.which("gcc")


@pytest.mark.skipif(CC is None, reason="no C compiler")
def test_wide_words_in_c_header(tmp_path):
    """PeakRDL's C header of the TIMELY engine against hand-derived offsets: the windows at
    word 0x2000 (byte 0x8000), 8 words (32 bytes) per flow; RTT_DIFF_W0 at byte 8, W1 at 12
    (one bit, at bit 0); CTRL at 24."""
    pytest.importorskip("peakrdl_cheader")
    from peakrdl_cheader.exporter import CHeaderExporter
    from systemrdl import RDLCompiler
    regmap = _top_map("timely_engine_1k")
    name, up = regmap.name, regmap.name.upper()
    (tmp_path / f"{name}.rdl").write_text(regmap.systemrdl())
    rdlc = RDLCompiler()
    rdlc.compile_file(str(tmp_path / f"{name}.rdl"))
    CHeaderExporter().export(rdlc.elaborate(top_def_name=name).top, str(tmp_path / "t.h"))
    checks = {
        f"offsetof({name}_t, FLOW[0].RTT_DIFF_W0)": 0x8000 + 8,
        f"offsetof({name}_t, FLOW[0].RTT_DIFF_W1)": 0x8000 + 12,
        f"offsetof({name}_t, FLOW[3].RTT_DIFF_W1)": 0x8000 + 3 * 32 + 12,
        f"offsetof({name}_t, FLOW[1023].CTRL)": 0x8000 + 1023 * 32 + 24,
        f"{up}__FLOW__RTT_DIFF_W0__RTT_DIFF_W0_bw": 32,
        f"{up}__FLOW__RTT_DIFF_W1__RTT_DIFF_W1_bw": 1,
        f"{up}__FLOW__RTT_DIFF_W1__RTT_DIFF_W1_bp": 0,
        f"sizeof({name}_t)": 0x10000,
    }
    body = "".join(f'    printf("%lu\\n", (unsigned long)({e}));\n' for e in checks)
    (tmp_path / "w.c").write_text('#include "t.h"\n#include <stddef.h>\n#include <stdio.h>\n'
                                  f"int main(void) {{\n{body}    return 0;\n}}\n")
    subprocess.run([CC, "-std=c11", "-Wall", "-Werror", "-I", str(tmp_path), "-o",
                    str(tmp_path / "w"), str(tmp_path / "w.c")], check=True)
    out = subprocess.run([str(tmp_path / "w")], check=True, capture_output=True,
                         text=True).stdout.split()
    assert dict(zip(checks, map(int, out), strict=True)) == checks
