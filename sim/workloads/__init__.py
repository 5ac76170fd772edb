"""Flow-size distributions and Poisson flow arrivals.

Data files (``<name>.csv`` next to this module): comment lines starting with ``#`` (provenance
and units), a header ``size_bytes,cdf``, then points ``(size, P(flow size <= size))`` with both
columns non-decreasing, the first probability 0 and the last 1.  Bundled: ``web_search`` (DCTCP
paper) and ``data_mining`` (VL2); see the files for where the points come from.

Sampling is by inverse CDF with **linear interpolation between consecutive points**: a uniform
``u`` in [0, 1) falls between the points ``(x_i, p_i)`` and ``(x_{i+1}, p_{i+1})`` with
``p_i <= u < p_{i+1}`` and gives ``x_i + (x_{i+1} - x_i) (u - p_i) / (p_{i+1} - p_i)``, rounded
to a whole byte (at least 1).  So the sizes between two points are uniform, a repeated size is a
point mass, and the mean is ``sum (p_{i+1} - p_i) (x_i + x_{i+1}) / 2`` (:attr:`Cdf.mean`).

Arrivals are a Poisson process whose rate gives a target load on a bottleneck of ``rate_bps``:
``load = sum(size * 8) / (time * rate_bps)``, so ``lambda = load * rate_bps / (8 * mean)``.
Every random draw comes from a :class:`random.Random` owned by the caller (never the global
generator), so a seed fixes the flows.
"""

from __future__ import annotations

import bisect
import random
from dataclasses import dataclass
from pathlib import Path

from sim.net.engine import PS_PER_S

DATA_DIR = Path(__file__).parent
BUNDLED = ("web_search", "data_mining")


class DistributionError(ValueError):
    """A malformed CDF file; the message names the file, the line and the problem."""


@dataclass(frozen=True)
class Cdf:
    """A piecewise-linear flow-size CDF."""
    name: str
    sizes: tuple[float, ...]
    probs: tuple[float, ...]

    @property
    def mean(self) -> float:
        """Mean flow size in bytes of the interpolated distribution (before rounding)."""
        s, p = self.sizes, self.probs
        return sum((p[i + 1] - p[i]) * (s[i] + s[i + 1]) / 2 for i in range(len(s) - 1))

    def quantile(self, u: float) -> float:
        """The interpolated size at probability ``u`` in [0, 1)."""
        i = bisect.bisect_right(self.probs, u) - 1
        i = min(max(i, 0), len(self.probs) - 2)
        p0, p1 = self.probs[i], self.probs[i + 1]
        x0, x1 = self.sizes[i], self.sizes[i + 1]
        return x0 if p1 == p0 else x0 + (x1 - x0) * (u - p0) / (p1 - p0)

    def sample(self, rng: random.Random) -> int:
        """One flow size in whole bytes (at least 1)."""
        return max(1, round(self.quantile(rng.random())))


def resolve(name_or_path: str, base_dir: Path | None = None) -> Path:
    """A bundled name (``web_search``) or a path, relative to ``base_dir`` if not absolute."""
    if name_or_path in BUNDLED:
        return DATA_DIR / f"{name_or_path}.csv"
    path = Path(name_or_path)
    return path if path.is_absolute() or base_dir is None else base_dir / path


def load_cdf(name_or_path: str, base_dir: Path | None = None) -> Cdf:
    path = resolve(name_or_path, base_dir)
    try:
        text = path.read_text()
    except OSError as e:
        raise DistributionError(f"{path}: cannot read ({e.strerror}); bundled distributions: "
                                f"{', '.join(BUNDLED)}") from None
    sizes: list[float] = []
    probs: list[float] = []
    header_seen = False
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        where = f"{path}:{number}"
        if not header_seen:
            if line.replace(" ", "") != "size_bytes,cdf":
                raise DistributionError(f"{where}: expected the header 'size_bytes,cdf'")
            header_seen = True
            continue
        try:
            size_text, prob_text = line.split(",")
            size, prob = float(size_text), float(prob_text)
        except ValueError:
            raise DistributionError(f"{where}: expected 'size,probability', got {line!r}") \
                from None
        if size < 0 or not 0 <= prob <= 1:
            raise DistributionError(f"{where}: size must be >= 0 and 0 <= cdf <= 1")
        if sizes and (size < sizes[-1] or prob < probs[-1]):
            raise DistributionError(f"{where}: sizes and probabilities must not decrease")
        sizes.append(size)
        probs.append(prob)
    if len(sizes) < 2 or probs[0] != 0 or probs[-1] != 1:
        raise DistributionError(f"{path}: needs at least two points, the first with cdf 0 and "
                                f"the last with cdf 1")
    return Cdf(path.stem, tuple(sizes), tuple(probs))


def arrival_rate_per_ps(cdf: Cdf, load: float, rate_bps: int) -> float:
    """Poisson rate (flows per picosecond) that offers ``load`` x ``rate_bps`` on average."""
    return load * rate_bps / (8 * cdf.mean) / PS_PER_S


def poisson_flows(cdf: Cdf, load: float, rate_bps: int, start_ps: int, stop_ps: int,
                  rng: random.Random) -> list[tuple[int, int]]:
    """``(start_ps, size_bytes)`` of every flow arriving in ``[start_ps, stop_ps)``: exponential
    gaps of mean ``1 / lambda`` (rounded to a picosecond), sizes drawn from ``cdf``."""
    lam = arrival_rate_per_ps(cdf, load, rate_bps)
    flows = []
    t = start_ps + round(rng.expovariate(lam))
    while t < stop_ps:
        flows.append((t, cdf.sample(rng)))
        t += round(rng.expovariate(lam))
    return flows
