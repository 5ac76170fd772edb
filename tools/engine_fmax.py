"""Out-of-context Fmax of the multi-flow engine (docs/flow-engine.md, "Measured figures").

Elaborates :class:`hw.nic.flow_engine.FlowEngine` with the toy datapath (one cycle or
pipelined over ``--latency`` cycles), 1024 flows, exports it and runs the project's ECP5 flow
on it (Yosys ``synth_ecp5`` + nextpnr-ecp5, LFE5U-85F speed 6, seed 1: the same function as
``python -m gateware synth``), then prints Fmax and resources as one JSON line.  Output in
``build/ooc/<name>/`` (the nextpnr log has the critical path).

    python -m tools.engine_fmax --latency 2 --wheel-insert-latency 5      # engine + wheel
    python -m tools.engine_fmax --latency 2 --stub-wheel                  # engine's own paths
    python -m tools.engine_fmax --latency 2 --timer calendar              # engine + calendar

The wheel defaults to 4096 slots (1024-cycle horizon) so that a run takes minutes; the
default 65536-slot wheel maps to about 42k LUT4 (``--wheel-slots 65536 --horizon 32768``).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from amaranth.hdl import Module, Signal
from amaranth.lib import wiring

from gateware.export import export_component
from gateware.synth import FAMILIES, _run_family, _sha, export_for
from hw.nic.flow_datapath import ToyDatapath
from hw.nic.flow_engine import FlowEngine
from hw.nic.flow_engine_config import FlowEngineConfig, min_out_fifo_depth
from hw.nic.timer_wheel import TimerWheel

ROOT = Path(__file__).resolve().parent.parent


class StubWheel(wiring.Component):
    """The wheel's ports with registers only (pop = last cycle's insert): keeps the engine's
    paths and removes the wheel's."""

    def __init__(self, wcfg):
        real = TimerWheel(wcfg)
        real._MustUse__silence = True
        super().__init__(real.signature)

    def elaborate(self, platform):
        m = Module()
        m.d.comb += self.ins.ready.eq(1)
        iv = Signal()
        ifl = Signal.like(self.ins.payload.flow)
        ig = Signal.like(self.ins.payload.gen)
        m.d.sync += [iv.eq(self.ins.valid), ifl.eq(self.ins.payload.flow),
                     ig.eq(self.ins.payload.gen)]
        with m.If(self.pop.ready | ~self.pop.valid):
            m.d.sync += [self.pop.valid.eq(iv), self.pop.payload.flow.eq(ifl),
                         self.pop.payload.gen.eq(ig)]
        m.d.sync += self.occupancy.eq(self.occupancy + iv - (self.pop.valid & self.pop.ready))
        return m


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m tools.engine_fmax", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--latency", type=int, default=2, help="the toy datapath's latency L")
    ap.add_argument("--wheel-insert-latency", type=int, default=4, choices=(4, 5, 6))
    ap.add_argument("--wheel-slots", type=int, default=4096)
    ap.add_argument("--horizon", type=int, default=1024)
    ap.add_argument("--flows", type=int, default=1024)
    ap.add_argument("--timer", default="wheel", choices=("wheel", "calendar"),
                    help="the timer service (--wheel-slots / --horizon size either)")
    ap.add_argument("--stub-wheel", action="store_true",
                    help="replace the wheel by registers (the engine's own paths)")
    ap.add_argument("--generic-bram", action="store_true",
                    help="block RAMs as inferred by Yosys (output register off), not the "
                         "DP16KD of hw.lib.bram with OUTREG")
    a = ap.parse_args(argv)
    if a.stub_wheel and a.timer != "wheel":
        ap.error("--stub-wheel replaces the wheel only (the stub has the wheel's ports)")
    cfg = FlowEngineConfig(n_flows=a.flows, wheel_horizon=a.horizon, wheel_slots=a.wheel_slots,
                           out_fifo_depth=max(8, min_out_fifo_depth(a.latency)),
                           wheel_insert_latency=a.wheel_insert_latency, timer=a.timer)
    dp = ToyDatapath(cfg.time_width, period=4000, latency=a.latency)
    stub = StubWheel if a.stub_wheel else None
    name = (f"engine_fmax_l{a.latency}_" + ("stub" if a.stub_wheel else
            f"c{a.wheel_slots}" if a.timer == "calendar" else
            f"w{a.wheel_slots}_il{a.wheel_insert_latency}") + f"_n{a.flows}"
            + ("_generic" if a.generic_bram else ""))
    out = ROOT / "build" / "ooc" / name
    out.mkdir(parents=True, exist_ok=True)
    engine = FlowEngine(cfg, dp, wheel=stub)
    path = (export_component(engine, name, out) if a.generic_bram
            else export_for(engine, name, FAMILIES["ecp5"], out))
    r = _run_family(name, FAMILIES["ecp5"], out, _sha(path), path.name)
    keys = ("fmax_mhz", "luts", "flip_flops", "bram_dp16kd", "dsp_mult18")
    print(json.dumps({"top": name, **{k: r.get(k) for k in keys}}))


if __name__ == "__main__":
    main()
