"""The multi-flow pacer's register map and per-flow window (``PacerConfig.register_map``, the
``pacer_1k`` top wrapped in hw/nic/engine_regs.py's ``EngineRegs``; docs/pacer.md "Registers
and ports"):

- hand-derived layout of the 1024-flow map (knobs and reset values, header, the window's
  words: ``next`` 42 bits and ``ival`` 40 bits are two words each, low word first) and the
  PeakRDL C header's offsets and field widths against hand-derived numbers;
- the golden side on hand-written sequences: the register model's wide-field rules through
  :class:`sim.models.pacer.PacerRegsModel` (a high word staged, ``W0`` committing the whole
  field in one WRITE, ``GRANTS`` read-only, ``W0``'s read snapshotting), and the pacer model's
  write rules (a written ``next`` of an armed flow re-schedules it; an unarmed flow with a
  backlog is armed by its next enqueue) with grant times derived by hand;
- the top in the Amaranth simulator (16 flows, the 42/40-bit fields of the default widths):
  random traffic (enqueues on hot flows, pulls, interval changes, ``burst``/``wc`` rewrites,
  back-pressure on grants) with window accesses mixed in (reads of every word, atomic and
  split writes of ``next``/``ival`` of armed flows, backlog/armed writes, ``CTRL`` commands),
  checked every cycle against :class:`sim.models.flow_engine.FlowEngineModel` (every ready,
  every grant record, the engine's ``rd`` and ``csr_rdata``), every operation the window
  offers the engine against the register model's, and every read's answer.

``CC_SEED`` overrides the seed; ``CC_LONG=1`` runs 6 x the accesses and traffic."""

from __future__ import annotations

import os
import random
import shutil
import subprocess

import pytest
from amaranth.lib import data

from hw.lib.csr import fourcc
from hw.nic.engine_regs import CTRL_EN_BIT, CTRL_RESET, CTRL_START, CTRL_STOP
from hw.nic.flow_datapath import CtlOp, EventKind
from hw.nic.flow_engine_config import COUNTER_BASE, FlowEngineConfig
from hw.nic.pacer import PacerDatapath, pacer_engine
from hw.nic.pacer_config import PacerConfig
from sim.models.flow_engine import FlowEngineModel
from sim.models.pacer import PacerDatapathModel, PacerRegsModel
from tests.streams import expect_stream, run_testbenches

LONG = os.environ.get("CC_LONG", "0") not in ("", "0")
SMALL = dict(n_flows=16, time_width=26, wheel_horizon=256, wheel_slots=512, out_fifo_depth=20)
F = 16
#: state field numbers (ctl WRITE), in state_layout order
GRANTS, BACKLOG, ARMED, NEXT, IVAL = range(5)
CC = shutil.which("cc") or shutil.which("gcc")


def _top_map():
    from gateware.export import register_map
    from gateware.tops import TOPS
    return register_map(TOPS["pacer_1k"])


def biased(t: int) -> int:
    """A deadline: ideal time ``t`` (cycles) in the biased form (fraction all ones)."""
    return (t << F) | ((1 << F) - 1)


def test_map_layout():
    """Hand-derived: knobs IVAL_INIT (100 cycles = 100 << 16), BURST (2**25 - 1: W - 1 = 25
    bits, no cap), WC (0) at words 0, 1, 2; counters from 0x80; header at 0x100 (ID 'PACE',
    version 1.1); window: GRANTS, BACKLOG, ARMED, NEXT_W0, NEXT_W1 (42 - 32 = 10 bits),
    IVAL_W0, IVAL_W1 (40 - 32 = 8 bits), CTRL = 8 words, so 8 per flow (shift 3); 1024 x 8 =
    0x2000 words of windows above the header's half of 0x2000 words: 64 KB."""
    m = _top_map()
    assert [(r.name, r.addr, r.reset) for r in m.registers[:3]] == [
        ("IVAL_INIT", 0, 100 << 16), ("BURST", 1, (1 << 25) - 1), ("WC", 2, 0)]
    assert m.addr("EV_TX") == COUNTER_BASE == 0x80
    assert [r.name for r in m.flow_registers] == ["GRANTS", "BACKLOG", "ARMED", "NEXT_W0",
                                                   "NEXT_W1", "IVAL_W0", "IVAL_W1", "CTRL"]
    assert [r.fields[0].width for r in m.flow_registers[:7]] == [16, 16, 1, 32, 10, 32, 8]
    assert (m.flow_shift, m.flow_base, m.size_bytes, m.header_offset) == (3, 0x2000, 0x10000,
                                                                          0x100)
    assert m.addr("NEXT_W1", 1023) == 0x2000 + 1023 * 8 + 4
    assert m.addr("IVAL_W0", 5) == 0x2000 + 5 * 8 + 5
    hv = m.header_values()
    assert hv[0x100] == fourcc("PACE") == 0x50414345          # 'P' 'A' 'C' 'E', first byte high
    assert hv[0x101] == 1 << 16 | 1 and hv[0x103] == 1024 | 3 << 16
    assert m["GRANTS"].fields[0].access == "ro" and not m["GRANTS"].writable
    rdl = m.systemrdl()
    assert "next[41:32], word 1 of 2 (low word first)" in rdl
    assert "\\NEXT_W1 @ 0x10;" in rdl                         # byte 16 of the window
    # the byte-mode build adds BYTES_INIT and the bytes / wait (read-only) / last words
    mb = PacerConfig(engine=FlowEngineConfig(n_flows=1024), byte_mode=True).register_map()
    assert [r.name for r in mb.registers[:4]] == ["IVAL_INIT", "BURST", "WC", "BYTES_INIT"]
    assert [r.name for r in mb.flow_registers][7:] == ["BYTES", "WAIT", "LAST", "CTRL"]
    assert not mb["WAIT"].writable and mb.flow_shift == 4


@pytest.mark.skipif(CC is None, reason="no C compiler")
def test_c_header_offsets(tmp_path):
    """PeakRDL's C header of ``pacer_1k`` against hand-derived byte offsets: windows at word
    0x2000 = byte 0x8000, 32 bytes per flow; NEXT_W0 at byte 12, NEXT_W1 16 (10 bits at bit
    0), IVAL_W0 20, IVAL_W1 24 (8 bits), CTRL 28; the knobs at 0, 4, 8, the ID at 0x400."""
    pytest.importorskip("peakrdl_cheader")
    from gateware.export import export_registers
    regmap = _top_map()
    paths = export_registers(regmap, tmp_path)
    name, up = regmap.name, regmap.name.upper()
    checks = {
        f"offsetof({name}_t, IVAL_INIT)": 0, f"offsetof({name}_t, BURST)": 4,
        f"offsetof({name}_t, WC)": 8, f"offsetof({name}_t, ID)": 0x400,
        f"offsetof({name}_t, FLOW[0].GRANTS)": 0x8000,
        f"offsetof({name}_t, FLOW[0].NEXT_W0)": 0x8000 + 12,
        f"offsetof({name}_t, FLOW[0].NEXT_W1)": 0x8000 + 16,
        f"offsetof({name}_t, FLOW[0].IVAL_W0)": 0x8000 + 20,
        f"offsetof({name}_t, FLOW[7].IVAL_W1)": 0x8000 + 7 * 32 + 24,
        f"offsetof({name}_t, FLOW[1023].CTRL)": 0x8000 + 1023 * 32 + 28,
        f"{up}__FLOW__NEXT_W1__NEXT_W1_bw": 10, f"{up}__FLOW__NEXT_W1__NEXT_W1_bp": 0,
        f"{up}__FLOW__IVAL_W1__IVAL_W1_bw": 8, f"{up}__FLOW__NEXT_W0__NEXT_W0_bw": 32,
        f"{up}__BURST__BURST_reset": (1 << 25) - 1,
        f"{up}__FLOWS__FLOWS_reset": 1024 | 3 << 16,
        f"sizeof({name}_t)": 0x10000,
    }
    body = "".join(f'    printf("%lu\\n", (unsigned long)({e}));\n' for e in checks)
    (tmp_path / "p.c").write_text(f'#include "{paths["h"].name}"\n#include <stddef.h>\n'
                                  f"#include <stdio.h>\nint main(void) {{\n{body}"
                                  "    return 0;\n}\n")
    subprocess.run([CC, "-std=c11", "-Wall", "-Werror", "-I", str(tmp_path), "-o",
                    str(tmp_path / "p"), str(tmp_path / "p.c")], check=True)
    out = subprocess.run([str(tmp_path / "p")], check=True, capture_output=True,
                         text=True).stdout.split()
    assert dict(zip(checks, map(int, out), strict=True)) == checks


def _small():
    return PacerConfig(engine=FlowEngineConfig(**SMALL))


def test_window_model_rules():
    """Hand-written sequences on the register model (PacerRegsModel over the engine model):
    a high word's write issues nothing, W0's write is one WRITE of the whole 42-bit field
    (W0's data | staged W1 << 32, W1 masked to 10 bits); the staged word is shared by the
    flows; GRANTS takes no write; CTRL's lowest command bit; a W0 read snapshots the high word
    (the live state may change before W1 is read)."""
    cfg = _small()
    regmap = cfg.register_map()
    em = FlowEngineModel(cfg.engine, PacerDatapathModel(PacerDatapath(cfg)))
    wm = PacerRegsModel(regmap, em)

    def a(name, flow):
        return regmap.addr(name, flow)

    assert wm.write(a("NEXT_W1", 3), 0xFFFF_F2AB) is None                # staged, 10 bits
    assert wm.write(a("NEXT_W0", 3), 0x1234_5678) == (3, CtlOp.WRITE, NEXT,
                                                       0x2AB << 32 | 0x1234_5678)
    assert wm.write(a("NEXT_W0", 9), 5) == (9, CtlOp.WRITE, NEXT, 0x2AB << 32 | 5)   # shared
    assert wm.write(a("IVAL_W1", 2), 0x1FF) is None
    assert wm.write(a("IVAL_W0", 2), 7) == (2, CtlOp.WRITE, IVAL, 0xFF << 32 | 7)   # 8 bits
    assert wm.write(a("GRANTS", 2), 9) is None                             # read-only
    assert wm.write(a("BACKLOG", 2), 0x12345) == (2, CtlOp.WRITE, BACKLOG, 0x2345)
    assert wm.write(a("CTRL", 4), CTRL_STOP | CTRL_RESET) == (4, CtlOp.STOP, 0, 0)
    assert wm.write(a("CTRL", 4), 0) is None
    assert wm.write(0x1, 77) is None                                      # a global word
    # reads: the flow's state as the engine's READ sees it; W1 from the snapshot of W0's read
    em.flows[6].algo["next"] = 0x3C1 << 32 | 0xABCD_0123
    em.flows[6].en = 1
    assert wm.is_read_op(a("NEXT_W0", 6)) and not wm.is_read_op(a("NEXT_W1", 6))
    wm.latch(6)
    assert wm.read(a("NEXT_W0", 6)) == 0xABCD_0123
    em.flows[6].algo["next"] = 0                                          # changes meanwhile
    assert wm.read(a("NEXT_W1", 6)) == 0x3C1                              # the snapshot's
    assert wm.read(a("CTRL", 6)) == 1 << CTRL_EN_BIT


def test_model_write_rules():
    """The pacer's write rules in the engine model, grant times by hand (interval 100 cycles,
    a flow started, 5 packets enqueued at cycle c0: granted at c0 (armed at t, due), then its
    deadline is c0 + 100):
    - a WRITE of next (the whole field, as W0's write commits it) of the armed flow to c0 + 160
      re-schedules it: the second grant is at c0 + 160, not c0 + 100 (its old wheel entry pops
      stale and grants nothing), the third at c0 + 260 (the grid counts from the written
      deadline);
    - ARMED := 0 with a backlog parks the flow (no grant at c0 + 360); an enqueue of one packet
      at c1 arms it like an idle flow: granted at c1 (before this rule it stayed unarmed
      forever, its backlog never served);
    - a deadline written in the past is granted at the WRITE's re-evaluation, late."""
    cfg = _small()
    m = FlowEngineModel(cfg.engine, PacerDatapathModel(PacerDatapath(cfg)))
    m.log_issue = False
    ival = 100 << F
    grants = []

    def run(n, **offer):
        for _ in range(n):
            o = m.step(**offer)
            if o.rate is not None and o.rate >> 4:
                grants.append(m.cycle - 1 - 6)        # the grant's issue cycle (latency 6)
            if offer and any(getattr(o, f"{k}_ready") for k in offer):
                offer = {}
        return offer

    run(cfg.engine.n_flows + 2)
    assert not run(10, ctl=(1, CtlOp.START, 0, 0))
    assert not run(10, ctl=(1, CtlOp.WRITE, IVAL, ival))
    c0 = m.cycle
    assert not run(1, tx=(1, 5))
    run(50)
    assert not run(1, ctl=(1, CtlOp.WRITE, NEXT, biased(c0 + 160)))
    run(c0 + 300 - m.cycle)
    assert grants == [c0, c0 + 160, c0 + 260], (c0, grants)
    assert not run(1, ctl=(1, CtlOp.WRITE, ARMED, 0))
    run(c0 + 500 - m.cycle)
    assert grants == [c0, c0 + 160, c0 + 260] and m.state(1)["algo"]["backlog"] == 2
    c1 = m.cycle
    assert not run(1, tx=(1, 1))
    run(20)
    assert grants[3:] == [c1] and m.state(1)["algo"]["armed"] == 1
    # a deadline written in the past (c2 - 50, the WRITE issued at c2): granted at the
    # WRITE's re-evaluation, pipe_depth 5 + insert latency 4 = 9 cycles later, 59 late (no
    # cap at the reset burst), and the grid continues from it: the last packet at c2 + 50
    c2 = m.cycle
    assert not run(1, ctl=(1, CtlOp.WRITE, NEXT, biased(c2 - 50)))
    run(100)
    assert grants[4:] == [c2 + 9, c2 + 50], (c2, grants)
    assert m.counter("late_max") == 59 and m.state(1)["algo"]["backlog"] == 0
    # the datapath alone: unarmed, backlog 2, a tx of one packet at t = 1000: armed, granted
    dpm = PacerDatapathModel(PacerDatapath(cfg))
    regs = dpm.regs_reset()
    state = {"grants": 3, "backlog": 2, "armed": 0, "next": biased(40), "ival": ival}
    out = dpm.update(regs, state, EventKind.TX, 1, 1000)
    assert out.expired and out.late == 0
    assert out.next_state == {"grants": 4, "backlog": 2, "armed": 1,
                              "next": biased(1000) + ival, "ival": ival}


# -- the top in the simulator ------------------------------------------------------------------

def test_top_against_model():
    s = int(os.environ.get("CC_SEED", 5))
    print(f"seed {s} (CC_SEED={s} reproduces)")
    rng = random.Random(s)
    cfg = _small()
    dut = pacer_engine(cfg)
    regmap = cfg.register_map()
    eng = dut.engine
    em = FlowEngineModel(cfg.engine, PacerDatapathModel(PacerDatapath(cfg)))
    em.log_issue = False
    wm = PacerRegsModel(regmap, em)
    N = cfg.engine.n_flows
    n_access = 240 if LONG else 40
    n_traffic = 1200 if LONG else 200

    def a(name, flow):
        return regmap.addr(name, flow)

    # bus accesses: ("w", addr, data) / ("r", addr, None); a callable data is made when the
    # access starts
    # (deadlines relative to the model's time then: within the wrap-safe range)
    def rand_next(_flow):
        return biased((em.now + rng.randrange(-300, 600)) % (1 << 26))

    def rand_ival(_flow):
        return rng.randrange(7 << F, 150 << F)

    bus = [("w", a("CTRL", f), CTRL_START) for f in range(N)]
    # the sequences an atomic window passes and a non-atomic one fails: a staged high word
    # changes nothing until W0, W0 commits both words, the snapshot
    bus += [("w", a("IVAL_W0", 2), 20 << F), ("w", a("BACKLOG", 2), 3), ("w", a("ARMED", 2), 1),
            ("w", a("NEXT_W1", 2), 0x3FF), ("r", a("NEXT_W0", 2), None),
            ("r", a("NEXT_W1", 2), None),
            ("w", a("NEXT_W1", 2), 0), ("w", a("NEXT_W0", 2), lambda f=2: rand_next(f)),
            ("r", a("NEXT_W0", 2), None), ("w", a("NEXT_W1", 2), 0x155),
            ("r", a("NEXT_W1", 2), None),
            ("w", a("NEXT_W1", 2), 0), ("w", a("GRANTS", 2), 0x7777), ("r", a("GRANTS", 2), None),
            ("w", a("IVAL_W1", 5), 1), ("w", a("IVAL_W0", 5), 0), ("r", a("IVAL_W0", 5), None),
            ("r", a("IVAL_W1", 5), None), ("w", a("IVAL_W1", 5), 0), ("w", a("IVAL_W0", 5), 9 << F),
            # a flow with a backlog un-armed by a write is armed by its next enqueue
            ("w", a("BACKLOG", 2), 4), ("w", a("ARMED", 2), 0), ("r", a("ARMED", 2), None),
            ("t", (2, 1), None), ("r", a("ARMED", 2), None), ("r", a("BACKLOG", 2), None)]
    for _ in range(n_access):
        f = rng.randrange(N)
        r = rng.random()
        if r < 0.35:
            bus.append(("r", a(rng.choice([rr.name for rr in regmap.flow_registers]), f), None))
        elif r < 0.55:     # an atomic write of next (high word first), sometimes W0 alone
            box = {}       # (one deadline for both words, drawn when the high word goes)

            def high(f=f, box=box):
                box["v"] = rand_next(f)
                return box["v"] >> 32

            if rng.random() < 0.8:
                bus.append(("w", a("NEXT_W1", f), high))
            bus.append(("w", a("NEXT_W0", f),
                        lambda f=f, box=box: box.get("v", rand_next(f)) & 0xFFFF_FFFF))
        elif r < 0.65:
            bus += [("w", a("IVAL_W1", f), 0), ("w", a("IVAL_W0", f), lambda f=f: rand_ival(f))]
        elif r < 0.75:
            bus.append(("w", a(rng.choice(["BACKLOG", "ARMED", "GRANTS"]), f),
                        rng.choice([0, 1, 2, 5, rng.getrandbits(32)])))
        elif r < 0.85:
            bus.append(("w", a("CTRL", f), rng.choice([CTRL_START, CTRL_START, CTRL_STOP,
                                                       CTRL_RESET, 0])))
        else:              # the knobs (the engine's words: wait for its pipeline)
            reg = rng.choice(["BURST", "WC", "IVAL_INIT", "ID"])
            value = {"BURST": rng.choice([0, 5, 100, (1 << 25) - 1]), "WC": rng.randrange(2),
                     "IVAL_INIT": rand_ival(0), "ID": 0}[reg]
            bus.append(("w", regmap.addr(reg), value))
            bus.append(("r", rng.choice([regmap.addr(reg), 0x100, COUNTER_BASE + 4]), None))
    # random traffic: enqueues (hot flows), pulls (empty tx), interval changes (cn)
    traffic = []
    hot = rng.randrange(N)
    for _ in range(n_traffic):
        if rng.random() < 0.1:
            hot = rng.randrange(N)
        f = hot if rng.random() < 0.5 else rng.randrange(N)
        if rng.random() < 0.8:
            traffic.append(("tx", (f, rng.choice([0, 1, 1, 2, 3]))))
        else:
            traffic.append(("cn", (f, rand_ival(f))))

    widths = [f.width for _, f in data.Layout.cast(dut.dp.state_layout)]
    assert widths[NEXT] == 42 and widths[IVAL] == 40
    expected_ops = []
    waits = {}                  # csr_rstb -> csr_rack cycles, by "a READ was issued"
    stats = {"reads": 0, "ops": 0, "cycles": 0, "grants": 0}

    async def bench(ctx):
        cycle = 0
        cur = None                   # the bus access in progress: [kind, addr, data, phase]
        offering = {"tx": None, "cn": None}
        ctx.set(dut.rd.ready, 1)
        ctx.set(dut.ctl.valid, 0)
        while True:
            where = f"cycle {cycle} (seed {s})"
            # ---- offers of this cycle
            if cur is None and bus and em.sweep == N:
                kind, addr, data = bus.pop(0)
                if kind == "t":               # an enqueue in the bus's order, before the rest
                    traffic.insert(0, ("tx", addr))
                    kind, addr, data = ("r", a("BACKLOG", addr[0]), None)
                if callable(data):
                    data = data()
                cur = [kind, addr, data, 0]
                if kind == "w":
                    op = wm.write(addr, data)
                    if op is not None:
                        expected_ops.append(op)
                elif wm.is_read_op(addr):
                    expected_ops.append((regmap.decode(addr)[1], CtlOp.READ, None, None))
            rstb = 0
            if cur is not None and cur[0] == "w":
                ctx.set(dut.csr_w.payload, {"addr": cur[1], "data": cur[2]})
                ctx.set(dut.csr_w.valid, 1)
            else:
                ctx.set(dut.csr_w.valid, 0)
            if cur is not None and cur[0] == "r" and cur[3] == 0:
                ctx.set(dut.csr_raddr, cur[1])
                rstb = 1
                cur[3] = cycle
            ctx.set(dut.csr_rstb, rstb)
            # (one traffic event offered at a time, each until taken)
            if offering["tx"] is None and offering["cn"] is None and traffic and \
                    em.sweep == N and rng.random() < 0.5:
                k, item = traffic.pop(0)
                offering[k] = item
            for k, stream in (("tx", dut.tx), ("cn", dut.cn)):
                item = offering[k]
                ctx.set(stream.valid, item is not None)
                if item is not None:
                    ctx.set(stream.payload, {"flow": item[0], "bytes": item[1]} if k == "tx"
                            else {"flow": item[0], "cn": {"ival": item[1]}})
            rr = rng.random() < 0.8
            ctx.set(dut.rate.ready, rr)
            # ---- what the wrapper offers the engine this cycle: the model's inputs
            ctl = None
            if ctx.get(eng.ctl.valid):
                p = ctx.get(eng.ctl.payload)
                ctl = (p.flow, CtlOp(p.op), p.field, p.value)
            csr_w = None
            if ctx.get(eng.csr_w.valid):
                p = ctx.get(eng.csr_w.payload)
                csr_w = (p.addr, p.data)
            eng_rd_ready = ctx.get(eng.rd.ready)
            o = em.step(tx=offering["tx"], cn=offering["cn"], ctl=ctl, csr_w=csr_w,
                        rate_ready=rr, rd_ready=eng_rd_ready,
                        csr_raddr=ctx.get(eng.csr_raddr))
            # ---- every output against the model
            for k, want in (("tx", o.tx_ready), ("cn", o.cn_ready)):
                if offering[k] is not None:
                    assert bool(ctx.get(getattr(dut, k).ready)) == bool(want), \
                        f"{k}.ready {where}"
            assert bool(ctx.get(eng.csr_w.ready)) == bool(o.csr_w_ready), f"csr_w.ready {where}"
            if ctl is not None:
                assert bool(ctx.get(eng.ctl.ready)) == bool(o.ctl_ready), f"ctl.ready {where}"
            assert ctx.get(dut.ready) == o.ready, where
            bits = expect_stream(ctx, dut.rate, o.rate, "rate", where)
            if bits is not None:
                stats["grants"] += rr and bits >> 4 != 0
            expect_stream(ctx, eng.rd, o.rd, "engine rd", where)
            assert not ctx.get(dut.rd.valid), f"a window answer on the outer rd {where}"
            assert ctx.get(eng.csr_rdata) == o.csr_rdata, f"engine csr_rdata {where}"
            # ---- the window's operations: exactly the register model's, in order
            if ctl is not None and o.ctl_ready:
                assert expected_ops, f"unexpected operation {ctl} {where}"
                flow, op, field, value = expected_ops.pop(0)
                width = widths[field] if field is not None else 0
                got = (ctl[0], ctl[1], ctl[2] if field is not None else None,
                       ctl[3] & ((1 << width) - 1) if value is not None else None)
                assert got == (flow, op, field, value), \
                    f"operation {got}, register model {(flow, op, field, value)} {where}"
                stats["ops"] += 1
                if op == CtlOp.READ:
                    wm.latch(flow)            # the READ's answer: the state as it issues
            # ---- the bus access's completion
            if cur is not None and cur[0] == "w" and ctx.get(dut.csr_w.ready):
                hit = regmap.decode(cur[1])
                if cur[1] < 0x100:            # a knob: the register model keeps its value
                    wm.regs.write(cur[1], cur[2])
                if hit is not None and hit[1] is not None and hit[0].wide and hit[0].wide[1]:
                    assert cur[3] == 0, f"a high word's write must be taken at once {where}"
                cur = None
            elif cur is not None and cur[0] == "w":
                cur[3] += 1
            elif cur is not None and cur[0] == "r" and not rstb and ctx.get(dut.csr_rack):
                got = ctx.get(dut.csr_rdata)
                addr = cur[1]
                waits.setdefault(wm.is_read_op(addr), []).append(cycle - cur[3])
                if COUNTER_BASE <= addr < 0x100:
                    want = o.csr_rdata        # a counter: the engine's answer, as the model's
                else:
                    want = wm.read(addr)
                assert got == want, f"word 0x{addr:x} ({regmap.decode(addr)}): RTL " \
                    f"0x{got:x}, model 0x{want:x} {where}"
                stats["reads"] += 1
                cur = None
            for k in ("tx", "cn"):
                if offering[k] is not None and getattr(o, f"{k}_ready"):
                    offering[k] = None
            await ctx.tick()
            cycle += 1
            if cur is None and not bus and not traffic and offering == {"tx": None, "cn": None} \
                    and not em.busy():
                break
            assert cycle < 200_000, "did not finish"
        assert not expected_ops, f"operations never offered: {expected_ops}"
        stats["cycles"] = cycle

    run_testbenches(dut, bench)
    print(stats, {k: (min(v), max(v)) for k, v in waits.items()})
    assert stats["grants"] > 20 and stats["reads"] > 10
    # a READ answers pipe_depth(1) + 4 = 9 cycles after the strobe with nothing ahead of it
    # (docs/pacer.md); a high word's and a global word's read the next cycle
    assert min(waits[True]) == 9 and set(waits[False]) == {1}
