"""Swift's sub-one-packet release through the pacer: the Swift engine and the multi-flow pacer
of the same N flows, joined by the engine's ``pace`` stream (``docs/swift.md``, "The NIC
composition: Swift through the pacer").

:class:`SwiftNic` instantiates the Swift window engine (:func:`hw.nic.swift_engine.swift_engine`,
its register map with per-flow windows) and the pacer (:class:`hw.nic.pacer.PacerDatapath` on
the multi-flow engine, packet mode, with a register map of its own) and feeds every record
``{flow, pace}`` of the Swift engine's ``rate`` stream to the pacer's ``cn`` stream as a new
interval:

- ``pace > 0`` (the window is below one packet): interval ``min(pace, 2**IB - 1) << F``
  (``IB`` = ``PacerConfig.ival_int_bits``, ``F`` = ``frac_bits``): one packet every ``pace``
  cycles; a pace beyond the interval's integer bits saturates at the largest interval
  (``2**24 - 2**-16`` cycles, 107 ms at 156.25 MHz, by default);
- ``pace = 0`` (back at one packet or more): interval 0, the rule of the window-limited flow:
  its deadline no longer advances, so it is due at every event and every re-evaluation while it
  has packets: a grant per ``tx`` event that finds it due and, while backlogged, at least one
  per ``REEVAL`` = 8 cycles (``hw.nic.pacer_config.MIN_INTERVAL``); the transport's window
  (``floor(cwnd)`` packets in flight) is what limits it, the pacer passes its packets.

Two reset values of the pacer differ from the stand-alone pacer's (:class:`NicPacerDatapath`):
``ival_init`` is 0 (a STARTed flow is window-limited until Swift says otherwise) and ``burst``
is 0 (a grant's deadline is never behind the cycle it is granted in, so an interval-0 flow's
deadline is its last grant: the first paced grant comes ``pace`` cycles after the last window
grant, the new interval counting from the previous release, and a late paced grant shifts the
flow's grid instead of sending a catch-up burst).  Both are run-time registers.

Back-pressure: the record stream is a direct stream connection (the pacer's ``cn.ready`` is the
engine's ``rate.ready``): a record the pacer does not take (its arbiter issues a timer pop or a
control operation that cycle) stays at the head of the Swift engine's output FIFO, which stops
the Swift engine issuing events when full (its credits); nothing is dropped.  The grants leave
on ``grant`` (the pacer's ``rate`` stream); ``grant.ready`` low stops the pacer (its own
credits) and through it the record stream.

Parameters: ``config``, a :class:`SwiftNicConfig`.

Ports:
  cn (in stream {flow, cn}: the Swift events, :func:`hw.nic.swift_engine.swift_cn_layout`);
  tx (in stream {flow, bytes}: ``bytes`` = the packets the transport enqueues, ``count_width``
  bits); grant (out stream {flow, rate}: one record per grant, ``rate`` the flow's grant
  number, 0 = a START/RESET of the pacer's flow, not a grant); swift_ctl / swift_rd, pacer_ctl /
  pacer_rd (each engine's control operations and READ answers); ready (both engines' init
  sweeps done); now (the pacer's cycle count: the grants' time base);
  csr_w / csr_raddr / csr_rdata / csr_rstb / csr_rack: ONE register port, the two engines' maps
  side by side (:meth:`SwiftNicConfig.register_map`, one map group): the Swift engine's below
  ``pacer_base`` = ``2**(AW - 1)``, the pacer's from it, each at its own offsets (header,
  counters, per-flow windows); words of a half beyond its map's size read 0 and take writes at
  once, ignoring them.  The read handshake is :mod:`hw.lib.csr_port`'s.

Latency: an event accepted on ``cn`` at cycle c puts its record on the Swift engine's ``rate``
at c + 59 (``SWIFT_PIPE_LATENCY`` + 5); the pacer takes it that cycle unless its arbiter issues
a timer pop or a control operation (they go first); the pacer's update moves the flow's pending
send time to ``max(next + new - old, now)``; a grant that move makes due now is on ``grant`` at
c + 65, otherwise the flow's grants follow at the new spacing from its previous grant.
Throughput: one Swift event per clock and one pacer event (one grant) per clock.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import lru_cache

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ..layouts.common import csr_write_layout
from ..lib.csr import RegisterMapGroup, rtl_window
from ..params import BlockConfig, ConfigError
from .engine_regs import EngineRegs
from .flow_engine import FlowEngine, check_wheel_margin
from .flow_engine_config import CSR_DATA_WIDTH, FlowEngineConfig, pipe_depth
from .pacer import PacerDatapath
from .pacer_config import PacerConfig
from .swift_config import PACE_BITS, SwiftConfig
from .swift_engine import SWIFT_PIPE_LATENCY, SwiftEngineConfig, swift_engine

__all__ = ["SwiftNic", "SwiftNicConfig", "NicPacerDatapath", "swift_nic",
           "SWIFT_NIC_ACK_TO_GRANT"]

#: cycles from an ACK taken on ``cn`` to the grant it makes due now, on ``grant`` (the Swift
#: engine's pipeline 54 + 4 + its output FIFO, then the pacer's 1 + 4 + its FIFO; nothing
#: ahead)
SWIFT_NIC_ACK_TO_GRANT = pipe_depth(SWIFT_PIPE_LATENCY) + 1 + pipe_depth(1) + 1


class NicPacerDatapath(PacerDatapath):
    """The pacer datapath with the NIC composition's reset values: ``ival_init`` 0 (a flow
    starts window-limited) and ``burst`` 0 (no catch-up; the deadline of an interval-0 flow is
    its last grant).  Everything else is :class:`PacerDatapath`'s."""

    NIC_RESETS = {"ival_init": 0, "burst": 0}

    def __init__(self, config: PacerConfig):
        super().__init__(config)
        self.regs = [(n, w, self.NIC_RESETS.get(n, r)) for n, w, r in self.regs]


@dataclass(frozen=True)
class SwiftNicConfig(BlockConfig):
    """The NIC composition: ``swift`` (the Swift engine top's configuration) and ``pacer`` (the
    pacer's), for the same flows (``n_flows`` equal), at the same clock, the pacer in packet
    mode (Swift paces packets)."""

    swift: SwiftEngineConfig = SwiftEngineConfig()
    pacer: PacerConfig = PacerConfig()

    def __post_init__(self):
        if not isinstance(self.swift, SwiftEngineConfig):
            raise ConfigError(self, "swift", self.swift, "a SwiftEngineConfig")
        if not isinstance(self.pacer, PacerConfig):
            raise ConfigError(self, "pacer", self.pacer, "a PacerConfig")
        se, pe = self.swift.engine, self.pacer.engine
        if pe.n_flows != se.n_flows:
            raise ConfigError(self, "pacer.engine.n_flows", pe.n_flows,
                              f"the Swift engine's n_flows ({se.n_flows})")
        if pe.clk_hz != se.clk_hz:
            raise ConfigError(self, "pacer.engine.clk_hz", pe.clk_hz,
                              f"the Swift engine's clk_hz ({se.clk_hz}): pace is in its cycles")
        # each engine must have more wheel entries than its margin (else it never takes an
        # event): checked here, at configuration time, by the engine's own rule
        check_wheel_margin(se, SWIFT_PIPE_LATENCY)
        check_wheel_margin(pe, 1)
        if self.pacer.byte_mode:
            raise ConfigError(self, "pacer.byte_mode", True,
                              "False (Swift's pace is an interval per packet)")

    @classmethod
    def for_flows(cls, n_flows: int, swift: SwiftConfig | None = None,
                  **engine) -> SwiftNicConfig:
        """``n_flows`` flows, the engines' default sizing; ``swift``: Swift's configuration
        (its ``clk_hz`` is both engines'); ``engine``: more FlowEngineConfig fields, the same
        for both engines (e.g. a smaller wheel for a test)."""
        swift = SwiftConfig() if swift is None else swift
        engine = {"clk_hz": swift.clk_hz, **engine}
        s = SwiftEngineConfig.for_flows(n_flows)
        se = s.engine.replace(**engine)
        pe = FlowEngineConfig(n_flows=n_flows).replace(**engine)
        return cls(swift=SwiftEngineConfig(engine=se, swift=swift), pacer=PacerConfig(engine=pe))

    def interval(self, pace: int) -> int:
        """The pacer interval (UQ.F cycles) of a ``pace`` record: ``min(pace, 2**IB - 1) <<
        F`` (0 stays 0: window-limited)."""
        p = self.pacer
        return min(pace, (1 << p.ival_int_bits) - 1) << p.frac_bits

    def register_map(self, name: str = "swift_nic") -> RegisterMapGroup:
        """The composition's register port as one :class:`hw.lib.csr.RegisterMapGroup`
        (one SystemRDL, C header and register table for the top): part ``swift`` (the Swift
        engine's map, ``<name>_swift``) at word 0, part ``pacer`` (the pacer's,
        ``<name>_pacer``) at ``2**(addr_width - 1)``, ``addr_width`` = the larger map's + 1.
        Built once per configuration and name (:func:`_nic_register_map`)."""
        return _nic_register_map(self, name)

    def register_maps(self) -> dict:
        """``{"swift": (base, map), "pacer": (base, map)}``: the parts of
        :meth:`register_map`."""
        return {inst: (base, regmap) for inst, base, regmap in self.register_map().parts}

    @property
    def addr_width(self) -> int:
        """Word-address bits of the composition's register port."""
        return self.register_map().addr_width


@lru_cache(maxsize=32)
def _nic_register_map(cfg: SwiftNicConfig, name: str) -> RegisterMapGroup:
    """:meth:`SwiftNicConfig.register_map`, cached: the configuration is frozen (and hashable),
    the group immutable, and the top, its tests and ``addr_width`` / ``register_maps`` ask for
    it again and again (two maps of a few hundred registers each, ~6 ms a build)."""
    s = cfg.swift.register_map(f"{name}_swift")
    p = _nic_pacer_map(cfg.pacer.register_map(f"{name}_pacer"))
    half = 1 << max(s.addr_width, p.addr_width)
    return RegisterMapGroup(name, (("swift", 0, s), ("pacer", half, p)),
                            desc="Swift NIC: the Swift engine's registers, then the pacer's")


def _nic_pacer_map(regmap):
    """The pacer's map (:meth:`PacerConfig.register_map`) with the composition's reset values
    (:attr:`NicPacerDatapath.NIC_RESETS`)."""
    resets = NicPacerDatapath.NIC_RESETS
    regs = tuple(dataclasses.replace(r, fields=(dataclasses.replace(r.fields[0],
                                                                    reset=resets[r.name.lower()]),
                                                ) + r.fields[1:])
                 if r.name.lower() in resets else r for r in regmap.registers)
    return dataclasses.replace(regmap, registers=regs, desc=regmap.desc + " (Swift NIC)")



class SwiftNic(wiring.Component):
    """The Swift engine and the pacer of the same flows, joined by the ``pace`` stream (the
    module docstring has the rules, ports, latency and throughput).

    Attributes ``swift`` and ``pacer``: the two :class:`hw.nic.engine_regs.EngineRegs`
    (``swift.rate`` is the record stream a testbench observes)."""

    def __init__(self, config: SwiftNicConfig | None = None):
        cfg = SwiftNicConfig() if config is None else config
        if not isinstance(cfg, SwiftNicConfig):
            self._MustUse__silence = True       # (never elaborated)
            raise TypeError(f"SwiftNic needs a SwiftNicConfig, not {cfg!r}")
        self.config = cfg
        maps = cfg.register_maps()
        self.swift = swift_engine(cfg.swift)
        self.pacer = EngineRegs(FlowEngine(cfg.pacer.engine, NicPacerDatapath(cfg.pacer)),
                                maps["pacer"][1])
        self.pacer_base = maps["pacer"][0]
        ls, lp = self.swift.layouts, self.pacer.layouts
        AW = cfg.addr_width
        super().__init__({
            "cn": In(stream.Signature(ls["cn"])),
            "tx": In(stream.Signature(lp["tx"])),
            "grant": Out(stream.Signature(lp["rate"])),
            "swift_ctl": In(stream.Signature(ls["ctl"])),
            "swift_rd": Out(stream.Signature(ls["rd"])),
            "pacer_ctl": In(stream.Signature(lp["ctl"])),
            "pacer_rd": Out(stream.Signature(lp["rd"])),
            "ready": Out(1),
            "now": Out(cfg.pacer.engine.time_width),
            "csr_w": In(stream.Signature(csr_write_layout(AW, CSR_DATA_WIDTH))),
            "csr_raddr": In(AW), "csr_rdata": Out(CSR_DATA_WIDTH),
            "csr_rstb": In(1), "csr_rack": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        cfg = self.config
        m.submodules.swift = sw = self.swift
        m.submodules.pacer = pc = self.pacer
        wiring.connect(m, wiring.flipped(self.cn), sw.cn)
        wiring.connect(m, wiring.flipped(self.swift_ctl), sw.ctl)
        wiring.connect(m, sw.rd, wiring.flipped(self.swift_rd))
        wiring.connect(m, wiring.flipped(self.tx), pc.tx)
        wiring.connect(m, wiring.flipped(self.pacer_ctl), pc.ctl)
        wiring.connect(m, pc.rd, wiring.flipped(self.pacer_rd))
        wiring.connect(m, pc.rate, wiring.flipped(self.grant))
        m.d.comb += [sw.tx.valid.eq(0),          # Swift ignores tx events: none offered
                     self.ready.eq(sw.ready & pc.ready), self.now.eq(pc.now)]

        # -- the pace records -> the pacer's intervals (a direct stream: ready is the pacer's)
        IB, F = cfg.pacer.ival_int_bits, cfg.pacer.frac_bits
        pace = sw.rate.payload.rate
        if PACE_BITS > IB:
            pace = Mux(pace[IB:] != 0, (1 << IB) - 1, pace[:IB])
        m.d.comb += [
            pc.cn.valid.eq(sw.rate.valid),
            pc.cn.payload.flow.eq(sw.rate.payload.flow),
            pc.cn.payload.cn.ival.eq(Cat(Const(0, F), pace)),
            sw.rate.ready.eq(pc.cn.ready),
        ]

        # -- one register port: each part of the register map group (the Swift engine's map at
        # word 0, the pacer's at pacer_base) decodes the low bits of its aligned window
        w, raddr = self.csr_w, self.csr_raddr
        waddr = w.payload.addr
        blocks = {"swift": sw, "pacer": pc}
        w_ready, rdata = Const(1, 1), Const(0, CSR_DATA_WIDTH)   # (a word in no part)
        any_r, rack = Const(0, 1), Const(0, 1)
        for inst, base, regmap in cfg.register_map().parts:
            blk = blocks[inst]
            assert len(blk.csr_raddr) == regmap.addr_width, inst
            w_local, w_hit = rtl_window(waddr, base, regmap)
            r_local, r_hit = rtl_window(raddr, base, regmap)
            m.d.comb += [blk.csr_w.valid.eq(w.valid & w_hit),
                         blk.csr_w.payload.addr.eq(w_local),
                         blk.csr_w.payload.data.eq(w.payload.data),
                         blk.csr_raddr.eq(r_local),
                         blk.csr_rstb.eq(self.csr_rstb & r_hit)]
            w_ready = Mux(w_hit, blk.csr_w.ready, w_ready)
            # the answer's part, registered like the blocks' own read data (one cycle after
            # the address; a window read holds its address until csr_rack, so this holds too)
            sel = Signal(name=f"sel_{inst}")
            m.d.sync += sel.eq(r_hit)
            rdata = Mux(sel, blk.csr_rdata, rdata)
            any_r = any_r | r_hit
            rack = rack | blk.csr_rack
        none_ack = Signal()
        m.d.sync += none_ack.eq(self.csr_rstb & ~any_r)
        m.d.comb += [
            w.ready.eq(w_ready),
            self.csr_rdata.eq(rdata),
            self.csr_rack.eq(rack | none_ack),
        ]
        return m


def swift_nic(config: SwiftNicConfig | None = None) -> SwiftNic:
    """The top: :class:`SwiftNic` of ``config``."""
    return SwiftNic(config)
