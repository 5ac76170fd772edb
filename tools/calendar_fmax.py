"""Out-of-context Fmax of the calendar timer service alone (docs/flow-engine.md, "The calendar
(per-slot lists)").

Elaborates :class:`hw.nic.timer_calendar.TimerCalendar` inside a wrapper that registers every
input and output (so the figure is the calendar's own paths, not the pins'), exports it with
the DP16KD block RAMs of :mod:`hw.lib.bram` and runs the project's ECP5 flow on it (Yosys
``synth_ecp5`` + nextpnr-ecp5, LFE5U-85F speed 6, seed 1: the same function as ``python -m
gateware synth``), then prints Fmax and resources as one JSON line.  Output in
``build/ooc/<name>/`` (the nextpnr log has the critical path).

    python -m tools.calendar_fmax                                   # 65536 slots, H 32768
    python -m tools.calendar_fmax --slots 4096 --horizon 1024       # a quicker run
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from amaranth.hdl import Module, Signal
from amaranth.lib import wiring

from gateware.export import export_component
from gateware.synth import FAMILIES, _run_family, _sha, export_for
from hw.nic.timer_calendar import TimerCalendar
from hw.nic.timer_calendar_config import TimerCalendarConfig

ROOT = Path(__file__).resolve().parent.parent


class RegisteredCalendar(wiring.Component):
    """The calendar with a register on every input and output port (``pop.ready`` too)."""

    def __init__(self, cfg):
        self.cfg = cfg
        inner = TimerCalendar(cfg)
        inner._MustUse__silence = True
        super().__init__(inner.signature)

    def elaborate(self, platform):
        m = Module()
        m.submodules.cal = cal = TimerCalendar(self.cfg)
        m.d.comb += self.ins.ready.eq(1)
        now = Signal.like(self.now)
        m.d.sync += [now.eq(self.now), cal.ins.valid.eq(self.ins.valid),
                     cal.ins.payload.eq(self.ins.payload), cal.pop.ready.eq(self.pop.ready)]
        m.d.comb += cal.now.eq(now)
        m.d.sync += [self.pop.valid.eq(cal.pop.valid), self.pop.payload.eq(cal.pop.payload),
                     self.occupancy.eq(cal.occupancy), self.max_occupancy.eq(cal.max_occupancy),
                     self.max_lateness.eq(cal.max_lateness)]
        return m


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m tools.calendar_fmax", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--slots", type=int, default=65536)
    ap.add_argument("--horizon", type=int, default=32768)
    ap.add_argument("--flow-bits", type=int, default=12)
    ap.add_argument("--gen-bits", type=int, default=2)
    ap.add_argument("--time-width", type=int, default=26)
    ap.add_argument("--word-bits", type=int, default=32)
    ap.add_argument("--jobs", type=int, default=1, help="accepted for symmetry; one run")
    ap.add_argument("--generic-bram", action="store_true",
                    help="block RAMs as inferred by Yosys, not the DP16KD of hw.lib.bram")
    a = ap.parse_args(argv)
    cfg = TimerCalendarConfig(slots=a.slots, horizon=a.horizon, flow_bits=a.flow_bits,
                              gen_bits=a.gen_bits, time_width=a.time_width,
                              word_bits=a.word_bits)
    name = (f"calendar_fmax_s{a.slots}_h{a.horizon}_f{a.flow_bits}g{a.gen_bits}_b{a.word_bits}"
            + ("_generic" if a.generic_bram else ""))
    out = ROOT / "build" / "ooc" / name
    out.mkdir(parents=True, exist_ok=True)
    top = RegisteredCalendar(cfg)
    path = (export_component(top, name, out) if a.generic_bram
            else export_for(top, name, FAMILIES["ecp5"], out))
    r = _run_family(name, FAMILIES["ecp5"], out, _sha(path), path.name)
    keys = ("fmax_mhz", "luts", "flip_flops", "bram_dp16kd", "dsp_mult18")
    print(json.dumps({"top": name, **{k: r.get(k) for k in keys}}))


if __name__ == "__main__":
    main()
