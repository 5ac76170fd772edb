"""``python -m sim.plots_dcqcn``: docs/figures/dcqcn_profiles.png, the bit-exact model of each
profile (default knobs) reacting to the same CNP pattern: a congestion episode of 200 µs with
a CNP every 10 µs, then recovery."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from hw.nic.dcqcn_config import PROFILES, RATE_FRAC, DcqcnRpConfig  # noqa: E402
from sim.models.dcqcn import DcqcnCnp, DcqcnRpModel, DcqcnTx  # noqa: E402

OUT = Path(__file__).resolve().parent.parent / "docs" / "figures" / "dcqcn_profiles.png"


def trace(profile: str, total_us: int = 3000, step_us: int = 2):
    cfg = DcqcnRpConfig.profile(profile)
    model = DcqcnRpModel(cfg)
    per_us = cfg.clk_hz // 1_000_000
    t, rates = [], []
    for us in range(0, total_us, step_us):
        if 100 <= us < 300 and us % 10 == 0:
            model.step(DcqcnCnp())
        else:
            # the flow sends at Rc: bytes in step_us microseconds (feeds the byte counter)
            model.step(DcqcnTx(min(int(model.state.rc / (1 << RATE_FRAC) * step_us / 8),
                              (1 << cfg.byte_width) - 1)))
        model.idle(step_us * per_us - 1)
        t.append(us)
        rates.append(model.state.rc / (1 << RATE_FRAC) / cfg.max_rate_mbps)
    return t, rates


def main():
    fig, ax = plt.subplots(figsize=(8, 4))
    for p in PROFILES:
        t, r = trace(p)
        ax.plot(t, r, label=p)
    ax.axvspan(100, 300, color="0.9", label="CNP every 10 µs")
    ax.set_xlabel("time (µs)")
    ax.set_ylabel("Rc / line rate")
    ax.set_title("DCQCN reaction point, bit-exact model, default knobs of each profile")
    ax.legend()
    fig.tight_layout()
    OUT.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(OUT, dpi=110)
    print(OUT)


if __name__ == "__main__":
    main()
