"""``python -m sim.rtl``: the speed of the Verilated reaction points through the bridge.

Prints (CPU time), per top (the default scenario's configurations: DCQCN ``hpcc-mlx`` and QCN at
100 Gb/s, 250 MHz), idle clock cycles per second (``step(n)``, all in C++) and events per
second through the engine (``on_tx`` at consecutive cycles plus the ``rate`` read: the
per-event ctypes cost).  Builds on first use (cached under ``build/rtl/``).
"""

from __future__ import annotations

import time


def _bench(name: str, engine, cycles: int = 5_000_000, events: int = 200_000) -> None:
    engine.on_notification(0, 8)          # a first notification: the timers run from here
    inst, lib = engine.rtl, engine.lib
    t = time.process_time()
    lib.cc_step(inst.h, cycles)
    step_s = time.process_time() - t
    c0 = engine.cycle + cycles
    t = time.process_time()
    for i in range(events):
        engine.on_tx(c0 + i, 1000)
        engine.rate()
    ev_s = time.process_time() - t
    print(f"{name:<6} {cycles / step_s / 1e6:6.2f} M idle cycles/s   "
          f"{events / ev_s / 1e3:6.0f} k events/s ({ev_s / events * 1e6:.2f} us per event "
          f"with its rate read)")


def main() -> int:
    from sim.net.algos.dcqcn import DcqcnParams
    from sim.net.algos.qcn import QcnParams
    from sim.rtl.engines import dcqcn_rp_rtl, qcn_rp_rtl

    clk = 250_000_000
    _bench("dcqcn", dcqcn_rp_rtl(DcqcnParams(profile="hpcc-mlx").rp_config(100_000, clk)))
    _bench("qcn", qcn_rp_rtl(QcnParams().rp(100_000, clk)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
