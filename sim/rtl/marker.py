"""The switches' egress marker as Verilated RTL, behind the golden model's calls.

The network simulator (:mod:`sim.net.network`) keeps one :class:`sim.models.marker.MarkerModel`
per switch, shared by its egress ports (one LFSR per switch, drawn for every descriptor of every
port, as in the RTL), and calls it synchronously per packet: ``step(Descriptor)`` at each
enqueue and dequeue, ``queue(port, prio)`` for the queue series and QCN's congestion points,
``cfg`` for the limits.  :class:`RtlMarker` answers the same calls from one Verilated
:class:`hw.switch.marker.EgressMarker` per switch (its configuration: the switch's
``MarkerConfig``, ports and priorities included):

* ``step``: the descriptor is driven on ``desc`` for one clock edge (``decision.ready`` held
  high), then the model runs in C++ until ``decision.valid`` rises (the pipeline latency, read
  from the RTL itself, not assumed; checked against ``EgressMarker.LATENCY``), and the
  decision is unpacked from ``decision.payload``.  One descriptor is in flight at a time (the
  simulator needs each decision before its next call), so a descriptor costs one latency of
  clock cycles.  The marker has no timer: its state changes only when it takes a descriptor or
  a register write, so the idle cycles between two packets are skipped, not run.
* ``queue``: the occupancy the RTL's own decisions imply (a decision carries the queue it
  sampled: before an enqueue, after a dequeue; the RTL's occupancies are block RAM, with no
  read port), so a wrong occupancy in the RTL shows up in the series too.
* One build per shape (ports, priorities, widths, LFSR polynomial: :func:`build_config`)
  serves every switch of that shape: the knobs (profile, thresholds, limits) are written
  through the ``csr_w`` register port after the reset and read back, and the LFSR's reset
  value is an input port (:func:`sim.rtl.engines.qcn_lfsr_port`), poked with the switch's
  seed (the one the golden model gets: :meth:`sim.net.network.Network.seeded`) before the
  reset.

After the reset the RTL clears its occupancies (``ports * priorities`` clocks, ``desc.ready``
low); that is run before the first descriptor.  ``AFTER_RESET["marker"]`` (of
:mod:`sim.rtl.engines`), if set, is called then with the instance and the configuration: a test
writes a wrong register through the ``csr_w`` port there; ``PATCHES["marker"]`` plants a bug in
the Verilog.
"""

from __future__ import annotations

from dataclasses import replace

from hw.layouts import DropReason, QueueOp
from hw.switch.marker_config import CSR_ADDR_WIDTH, MarkerReg
from sim.models.marker import Decision, Descriptor, pack_descriptor, unpack_decision

from .bridge import Port, RunSpec
from .engines import AFTER_RESET, qcn_lfsr_port, rtl_model

__all__ = ["RtlMarker", "TOP"]

#: the Verilog module name of the marker's builds (the key of PATCHES / AFTER_RESET)
TOP = "marker"
#: the seed the shared build is exported with (the switches' seeds come in at the port)
_BUILD_SEED = 1
_PREPARE: dict = {}


def _prepare(width: int):
    return _PREPARE.setdefault(width, qcn_lfsr_port(width, _BUILD_SEED, top=TOP))


class RtlMarker:
    """A switch's :class:`hw.switch.marker.EgressMarker`, Verilated, with the golden model's
    interface (``step``, ``queue``, ``cfg``, ``counters``); ``cfg``: its ``MarkerConfig``."""

    def __init__(self, cfg):
        from hw.switch.marker import EgressMarker

        self.cfg = cfg
        model = rtl_model(TOP, build_config(cfg), EgressMarker, _prepare(cfg.lfsr.width),
                          (Port("lfsr_seed", "in", cfg.lfsr.width),))
        self.rtl = inst = model.instance()
        self.latency = EgressMarker.LATENCY
        p = model.port
        self._valid, self._payload = p("desc__valid"), p("desc__payload")
        self._out = p("decision__payload")
        self._wide = model.ports[self._out].width > 64     # (a switch radix's decision)
        inst.poke("lfsr_seed", cfg.lfsr.seed)
        inst.poke("decision__ready", 1)
        inst.reset(1)
        # the occupancies are cleared (desc.ready low) before the first descriptor
        inst.run(4 * cfg.queues + 16, RunSpec(model, now=[("desc__ready", 0, 1)]))
        if not inst.peek("desc__ready"):
            raise RuntimeError(f"{TOP}: desc.ready still low {inst.cycles} cycles after reset")
        configure(inst, cfg)
        hook = AFTER_RESET.get(TOP)
        if hook is not None:
            hook(inst, cfg)
            inst.run(64, RunSpec(model, now=[("desc__ready", 0, 1)]))
        self._to_decision = RunSpec(model, now=[("decision__valid", 0, 1)])
        self._bound = 4 * self.latency + 64
        self.occ = [0] * cfg.queues
        self.descriptors = 0
        self.measured_latency: int | None = None

    def queue(self, port: int = 0, prio: int = 0) -> int:
        return self.occ[port * self.cfg.priorities + prio]

    def step(self, d: Descriptor) -> Decision:
        inst, lib, h = self.rtl, self.rtl.lib, self.rtl.h
        # one edge with the descriptor offered (desc.ready is high: nothing back-pressures
        # the decision and no register write is pending), then run to its decision
        lib.cc_event(h, 0, self._valid, self._payload, pack_descriptor(self.cfg, d))
        inst.cycles += 1
        k = inst.run(self._bound, self._to_decision)
        if k >= self._bound:
            raise RuntimeError(f"{TOP}: no decision {k + 1} cycles after descriptor {d}")
        if self.measured_latency is None:
            # (edges from the one that takes the descriptor to the one that transfers its
            # decision: the k run before decision.valid rises, then the next call's edge)
            self.measured_latency = k + 1
        out = unpack_decision(self.cfg, inst.peek(self._out) if self._wide
                              else lib.cc_peek64(h, self._out))
        self.descriptors += 1
        cfg = self.cfg
        if out.reason != DropReason.BAD_QUEUE and d.port < cfg.ports and d.prio < cfg.priorities:
            idx = d.port * cfg.priorities + d.prio
            if out.drop or d.op == QueueOp.DEQUEUE:
                self.occ[idx] = out.qlen
            else:
                self.occ[idx] = out.qlen + d.length
        return out

    def read(self, addr: int) -> int:
        return read_register(self.rtl, addr)

    @property
    def counters(self) -> dict:
        # (the last decision is transferred, and counted a cycle later: two edges first)
        self.rtl.step(2)
        return {reg: self.read(reg) for reg in MarkerReg.counters()}


def read_register(inst, addr: int) -> int:
    """A register's value through the RTL's read port (address, then data a cycle later);
    the clock cycle it takes changes nothing (the marker has no timer)."""
    inst.poke("csr_raddr", addr)
    inst.step(1)
    return inst.peek("csr_rdata")


def configure(inst, cfg) -> None:
    """Write ``cfg``'s knobs (every writable register but the counters) through the
    instance's register port, and read them back (the build holds placeholders:
    :func:`build_config`)."""
    regmap = cfg.register_map()
    knobs = [(reg, regmap[reg.name].reset) for reg in MarkerReg
             if reg < MarkerReg.CNT_ENQUEUED and regmap[reg.name].writable]
    for reg, value in knobs:
        inst.csr_write(regmap.addr(reg.name), value, addr_width=CSR_ADDR_WIDTH)
    for reg, value in knobs:
        got = read_register(inst, reg)
        if got != value:
            raise RuntimeError(f"{TOP}: register {reg.name} reads {got} after writing {value}")


def build_config(cfg):
    """The configuration a marker is built with: ``cfg``'s shape (ports, priorities, widths,
    the LFSR's polynomial), placeholder register values (written at run time) and a fixed
    seed (poked at run time), so that one build serves every switch of that shape, whatever
    its algorithm's thresholds."""
    from hw.switch.marker_config import MarkerConfig

    return MarkerConfig(ports=cfg.ports, priorities=cfg.priorities, len_width=cfg.len_width,
                        occ_width=cfg.occ_width, draw_bits=cfg.draw_bits,
                        lfsr=replace(cfg.lfsr, seed=_BUILD_SEED), profile="ldcp", k_min=0,
                        k_max=0, p_max=1.0, k_drop=0, buf_max=0)


def rtl_marker(cfg) -> RtlMarker:
    """The factory :mod:`sim.net.network` calls for each switch's marker (``engine = "rtl"``)."""
    return RtlMarker(cfg)
