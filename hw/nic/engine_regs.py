"""The multi-flow engine tops on the register layer (:mod:`hw.lib.csr`).

:func:`engine_register_map` declares the register file of a :class:`hw.nic.flow_engine.FlowEngine`
around a datapath as a :class:`hw.lib.csr.RegisterMap` (so that it gets SystemRDL, the PeakRDL C
header, HTML, IP-XACT and the docs table like every other block): the datapath's run-time
registers at words ``0 ... len(dp.regs) - 1`` (read-write; a write waits until the pipeline is
empty, the engine's rule), the engine's read-only counters, lateness histogram and wheel
statistics from ``COUNTER_BASE`` (0x80), and the identification header above them (word 0x100).
The addresses below 0x100 are the engine's own, unchanged.

:class:`EngineRegs` wraps the engine: every port is the engine's, the register port is one bit
wider and answers the header (writes to the header's half are taken and ignored).

Per-flow windows (``flow << k | reg``) are not offered: the engine reads a flow's state through
its ``ctl`` stream (``CtlOp.READ``, the answer on ``rd`` a pipeline later, behind the events in
flight), which cannot answer a register read in the next cycle as the register port promises;
software reads and writes flows through ``ctl`` / ``rd`` (docs/flow-engine.md).
"""

from __future__ import annotations

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import wiring

from ..lib.csr import Field, Register, RegisterMap
from ..lib.csr_port import csr_ports
from .flow_engine_config import COUNTER_BASE, CSR_ADDR_WIDTH

__all__ = ["engine_register_map", "EngineRegs", "COUNTER_DESC"]

#: descriptions of the engine's read-only registers (docs/flow-engine.md, "Counters")
COUNTER_DESC = {
    "ev_tx": "TX events taken", "ev_cn": "CN events taken", "ev_timer": "timer pops taken",
    "ev_ctl": "control operations taken", "expiries": "updates in which a timer was due",
    "late_sum": "sum of the lateness of every expiry, cycles",
    "late_max": "largest lateness of an expiry, cycles",
    "disabled": "events dropped for a stopped flow", "stale_pops": "stale wheel entries popped",
    "wheel_ins": "wheel inserts", "occupancy": "wheel entries now",
    "max_occupancy": "largest wheel occupancy", "max_displacement": "largest wheel displacement",
    "overflow": "the wheel overflowed (sticky)", "overflow_count": "wheel overflows",
}


def engine_register_map(name: str, dp, block_type: str, desc: str = "",
                        reg_desc: dict[str, str] | None = None) -> RegisterMap:
    """The register map of an engine around datapath ``dp`` (its ``regs``: ``(name, width,
    reset)``); ``reg_desc``: descriptions by register name (lower case)."""
    from .flow_engine import COUNTERS, LATE_BUCKETS, WHEEL_STATS
    reg_desc = reg_desc or {}
    regs = [Register.single(n.upper(), w, reset, desc=reg_desc.get(n, ""))
            for n, w, reset in dp.regs]
    names = list(COUNTERS) + [f"late_h{i}" for i in range(len(LATE_BUCKETS))] + \
        list(WHEEL_STATS)
    for i, n in enumerate(names):
        if n.startswith("late_h"):
            lo, hi = LATE_BUCKETS[int(n[6:])]
            span = f"{lo} or more" if hi is None else f"{lo}" if hi == lo else f"{lo}..{hi}"
            text = f"expiries {span} cycles late"
        else:
            text = COUNTER_DESC[n]
        if n not in WHEEL_STATS and n != "late_max":
            text += " (saturating)"
        regs.append(Register(n.upper(), (Field(n, 32, "ro", desc=text),), text,
                             COUNTER_BASE + i))
    regmap = RegisterMap(name, tuple(regs), block_type, version=(1, 0), desc=desc)
    assert regmap.header_offset == 1 << CSR_ADDR_WIDTH, "the header sits above the engine's map"
    return regmap


class EngineRegs(wiring.Component):
    """A :class:`FlowEngine` with the identification header of :func:`engine_register_map`.

    Ports: the engine's (``tx``, ``cn``, ``ctl``, ``rate``, ``rd``, ``ready``, ``now``) and the
    register port ``csr_w`` / ``csr_raddr`` / ``csr_rdata`` of the map (9 address bits: the
    engine's 8 and the header above them).  Words below 0x100 go to the engine (a write waits
    for its ``csr_w.ready``: the pipeline empty); the header reads its constants, one cycle
    after the address as the engine's words; other words of the upper half read 0 and take
    writes at once, ignoring them.  Latency and throughput: the engine's.

    Attributes ``engine``, ``config``, ``dp``, ``layouts``: the wrapped engine's.
    """

    def __init__(self, engine, regmap: RegisterMap):
        self.engine, self.regmap = engine, regmap
        engine._MustUse__silence = True     # (used by this wrapper's elaborate; it warns itself)
        self.config, self.dp, self.layouts = engine.config, engine.dp, engine.layouts
        members = {n: m for n, m in engine.signature.members.items()
                   if n not in ("csr_w", "csr_raddr", "csr_rdata")}
        super().__init__({**members, **csr_ports(regmap)})

    def elaborate(self, platform):
        m = Module()
        m.submodules.engine = engine = self.engine
        for path, member, outer in self.signature.flatten(self):
            if path[0].startswith("csr_"):
                continue
            inner = engine
            for part in path:
                inner = getattr(inner, part) if isinstance(part, str) else inner[part]
            m.d.comb += inner.eq(outer) if member.flow == wiring.In else outer.eq(inner)

        top = CSR_ADDR_WIDTH                    # address bit: 0 engine, 1 header half
        w = self.csr_w
        upper = w.payload.addr[top]
        m.d.comb += [
            engine.csr_w.valid.eq(w.valid & ~upper),
            engine.csr_w.payload.addr.eq(w.payload.addr[:top]),
            engine.csr_w.payload.data.eq(w.payload.data),
            w.ready.eq(upper | engine.csr_w.ready),
            engine.csr_raddr.eq(self.csr_raddr[:top]),
        ]
        upper_q = Signal(name="csr_upper_q")
        header_q = Signal(self.regmap.data_width, name="csr_header_q")
        m.d.sync += upper_q.eq(self.csr_raddr[top])
        with m.Switch(self.csr_raddr):
            for r in self.regmap.header:
                with m.Case(r.addr):
                    m.d.sync += header_q.eq(r.fields[0].reset)
            with m.Default():
                m.d.sync += header_q.eq(0)
        m.d.comb += self.csr_rdata.eq(Mux(upper_q, header_q, engine.csr_rdata))
        return m
