"""``python -m sim.demo``: the egress marker on its bit-exact model, then the network simulator.

Holds an egress queue at a series of depths that sweep through the LDCP ramp, sends ECN-capable
and ECN-incapable packets at each depth, and prints the marked fraction the hardware rule
produces next to the draft's formula ``p = P_max (q - K_min) / (K_max - K_min)``; then writes a
plot to ``out/marker_sweep.png``.  The golden model makes exactly the decisions of the RTL (the
cocotb tests check that event by event), so these are the hardware's numbers.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from hw.layouts import Ecn
from hw.switch.marker_config import MarkerConfig
from sim.models.marker import Descriptor, MarkerModel
from sim.reference.marker import marking_probability


def sweep(cfg: MarkerConfig, levels: list[int], samples: int):
    rows = []
    model = MarkerModel(cfg)  # one model: the LFSR stream continues from depth to depth
    for q in levels:
        while model.queue() < q:                       # fill with CE packets: never dropped at K
            model.step(Descriptor.enqueue(min(1500, q - model.queue()), Ecn.CE))
        while model.queue() > q:
            model.step(Descriptor.dequeue(min(1500, model.queue() - q), Ecn.CE))
        probe = Descriptor.enqueue(0, Ecn.ECT0)         # zero length: the queue stays at q
        marked = sum(model.step(probe).marked for _ in range(samples))
        not_ect_dropped = model.step(Descriptor.enqueue(0, Ecn.NOT_ECT)).drop
        p = marking_probability(q, cfg.k_min, cfg.k_max, cfg.p_max)
        rows.append((q, p, marked / samples, not_ect_dropped))
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sim.demo", description=__doc__.split("\n")[0])
    parser.add_argument("--samples", type=int, default=20_000, help="decisions per queue depth")
    parser.add_argument("--out", type=Path, default=Path("out"), help="output folder")
    args = parser.parse_args(argv)

    cfg = MarkerConfig.ldcp(k_min=20_000, k_max=200_000, p_max=0.2, k_drop=40_000,
                            buf_max=1_000_000)
    levels = [0, 10_000, 19_999, 20_000] + list(range(30_000, 200_000, 15_000)) + \
        [199_999, 200_000, 230_000]
    print("Egress marker (LDCP profile), bit-exact golden model of the RTL")
    print(f"  K_min {cfg.k_min} B, K_max {cfg.k_max} B, P_max {cfg.p_max}, K (Not-ECT drop) "
          f"{cfg.k_drop} B, buf_max {cfg.buf_max} B; {args.samples} ECT packets per depth")
    print()
    print(f"  {'queue (B)':>10}  {'formula p':>10}  {'measured':>10}  {'3 sigma':>8}  "
          f"{'Not-ECT':>8}")
    rows = sweep(cfg, levels, args.samples)
    worst = 0.0
    for q, p, measured, dropped in rows:
        sigma3 = 3 * math.sqrt(max(p * (1 - p), 1e-12) / args.samples)
        worst = max(worst, abs(measured - p) / max(sigma3, 1e-9) if 0 < p < 1 else
                    (0.0 if measured == p else math.inf))
        print(f"  {q:>10}  {p:>10.4f}  {measured:>10.4f}  {sigma3:>8.4f}  "
              f"{'dropped' if dropped else 'kept':>8}")
    print()
    verdict = "within 3 sigma of the formula everywhere" if worst <= 1.0 else \
        "OUTSIDE 3 sigma somewhere (see table)"
    print(f"  measured marking fraction: {verdict}")

    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "marker_sweep.png"
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    fine = list(range(0, 240_001, 500))
    ax.plot([q / 1000 for q in fine],
            [marking_probability(q, cfg.k_min, cfg.k_max, cfg.p_max) for q in fine],
            label="LDCP draft formula", color="tab:blue")
    ax.plot([r[0] / 1000 for r in rows], [r[2] for r in rows], "o", color="tab:red",
            label=f"bit-exact model ({args.samples} packets per point)")
    ax.axvline(cfg.k_drop / 1000, color="gray", ls="--", lw=1)
    ax.text(cfg.k_drop / 1000, 0.45, " K: Not-ECT dropped from here", color="gray", fontsize=8)
    ax.set_xlabel("egress queue (KB)")
    ax.set_ylabel("CE marking probability")
    ax.set_title("WRED/ECN marker, LDCP profile")
    ax.set_ylim(-0.02, 1.05)
    ax.legend(loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"  plot: {path}")
    ok = worst <= 1.0
    return 0 if dctcp_sawtooth(args.out) and ok else 1


def dctcp_sawtooth(out: Path) -> bool:
    """The network simulator: 10 DCTCP flows into one 10 Gb/s port of a switch whose egress is
    the marker's bit-exact model, next to the DCTCP paper's analysis."""
    from sim.net.analysis import DctcpAnalysis, sawtooth
    from sim.net.engine import PS_PER_S
    from sim.scenario import load
    from sim.scenario.runner import run

    n, rate, rtt_us, k, mtu = 10, 10_000_000_000, 100, 65, 1500     # sim/scenarios/dctcp_sawtooth
    print()
    print(f"Network simulator: {n} DCTCP flows -> one {rate // 10**9} Gb/s switch port, base RTT "
          f"{rtt_us} us, step marking at K = {k} packets (switch = marker golden model)")
    r = run(load("dctcp_sawtooth"), "dctcp").result
    queue = [b / mtu for b in next(iter(r.queue_series.values()))]
    s = sawtooth(queue[len(queue) // 3:], debounce=20)
    a = DctcpAnalysis(n, rate * rtt_us * 1e-6 / 8 / mtu, k)
    rtt_eff = rtt_us + s.mean * mtu * 8 / rate * 1e6
    utilization = sum(f.delivered_bytes for f in r.flows) * 8 * PS_PER_S / (rate * r.duration_ps)
    drops = {key: v for key, v in r.counters.items() if key.startswith("drops_") and v}
    print(f"  {'':<34}{'analysis':>10}{'simulated':>11}")
    print(f"  {'queue maximum K + N (packets)':<34}{a.q_max:>10.1f}{s.q_max:>11.1f}")
    print(f"  {'sawtooth amplitude (packets)':<34}{a.amplitude:>10.1f}{s.amplitude:>11.1f}")
    print(f"  {'period (RTTs)':<34}{a.period_rtts:>10.2f}{s.period_samples / rtt_eff:>11.2f}")
    print(f"  {'utilization':<34}{1.0:>10.3f}{utilization:>11.3f}")
    print(f"  drops: {drops or 'none'}; {r.events} events simulated")

    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 3.5))
    t_ms = [i * r.sample_ps / 1e9 for i in range(len(queue))]
    ax.plot(t_ms, queue, lw=0.8, label="bottleneck queue")
    ax.axhline(k, color="gray", ls="--", lw=1, label="K")
    ax.axhline(a.q_max, color="tab:red", ls=":", lw=1, label="K + N (analysis)")
    ax.set_xlabel("time (ms)")
    ax.set_ylabel("queue (packets)")
    ax.set_title(f"DCTCP, {n} flows, bit-exact switch marker")
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    path = out / "dctcp_sawtooth.png"
    fig.savefig(path, dpi=120)
    print(f"  plot: {path}")
    return not drops


if __name__ == "__main__":
    raise SystemExit(main())
