"""``python -m sim.rtl``: the speed of the Verilated engines through the bridge.

Prints (CPU time), per top (the default scenario's configurations: DCQCN ``hpcc-mlx`` and QCN at
100 Gb/s, 250 MHz), idle clock cycles per second (``step(n)``, all in C++) and events per
second through the engine (``on_tx`` at consecutive cycles plus the ``rate`` read: the
per-event ctypes cost); for the LDCP sender, cycles per second with a message in flight and
the cost of the look-ahead's state save + restore; for the switch marker (7 ports x 2
priorities, the test scenario's dumbbell switch), idle cycles per second and descriptors per
second through :class:`sim.rtl.marker.RtlMarker` against the golden ``MarkerModel``.  Builds on
first use (cached under ``build/rtl/``).
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


def _bench_ldcp(cycles: int = 2_000_000, looks: int = 20_000) -> None:
    """The LDCP sender (default parameters, 100 Gb/s, a 4.4 us path): clock cycles per second
    with a message in flight (``step(n)``), and the cost of a state save + restore (the
    look-ahead of ``next_wakeup``)."""
    from sim.net.algos.ldcp import LdcpParams
    from sim.rtl.ldcp import RtlLdcpSender

    e = RtlLdcpSender(LdcpParams().transport(100.0, 1024, 250_000_000, 4_400_000))
    e.start_message(0, 1 << 30)
    for c in range(1, 40):
        e.release(c)                       # a window's worth in flight: the RTO counts
    inst = e.rtl
    t = time.process_time()
    inst.step(cycles)
    step_s = time.process_time() - t
    t = time.process_time()
    for _ in range(looks):
        inst.save()
        inst.restore()
    look_s = time.process_time() - t
    print(f"ldcp   {cycles / step_s / 1e6:6.2f} M cycles/s (sender, a message in flight)   "
          f"{look_s / looks * 1e6:.2f} us per state save + restore")


def _bench_marker(cycles: int = 2_000_000, pairs: int = 20_000) -> None:
    from hw.layouts import Ecn
    from hw.switch.marker_config import MarkerConfig
    from sim.models.marker import Descriptor, MarkerModel
    from sim.rtl.marker import RtlMarker

    cfg = MarkerConfig.dcqcn(ports=7, priorities=2, k_min=5000, k_max=60000, p_max=0.2,
                             buf_max=80000, shared_buffer=4_000_000, compare="gt")
    ds = [Descriptor.enqueue(1000, Ecn.ECT0, 1, 0), Descriptor.dequeue(1000, Ecn.ECT0, 1, 0)]
    ds = ds * pairs
    cost = {}
    for name, m in (("golden", MarkerModel(cfg)), ("rtl", RtlMarker(cfg))):
        t = time.process_time()
        for d in ds:
            m.step(d)
        cost[name] = (time.process_time() - t) / len(ds)
    inst = m.rtl
    t = time.process_time()
    inst.step(cycles)
    step_s = time.process_time() - t
    print(f"marker {cycles / step_s / 1e6:6.2f} M idle cycles/s   "
          f"{1 / cost['rtl'] / 1e3:6.0f} k descriptors/s ({cost['rtl'] * 1e6:.1f} us each, "
          f"{m.measured_latency} cycles; golden {cost['golden'] * 1e6:.1f} us)")


def main() -> int:
    from sim.net.algos.dcqcn import DcqcnParams
    from sim.net.algos.qcn import QcnParams
    from sim.rtl.engines import dcqcn_rp_rtl, qcn_rp_rtl

    clk = 250_000_000
    _bench("dcqcn", dcqcn_rp_rtl(DcqcnParams(profile="hpcc-mlx").rp_config(100_000, clk)))
    _bench("qcn", qcn_rp_rtl(QcnParams().rp(100_000, clk)))
    _bench_ldcp()
    _bench_marker()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
