"""Measurements on simulated time series, and the DCTCP paper's analysis (§3.3) to compare."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass


@dataclass(frozen=True)
class Sawtooth:
    q_max: float          # packets
    q_min: float
    amplitude: float      # q_max - q_min
    period_samples: float  # mean spacing of upward mean-crossings
    mean: float


def sawtooth(queue: list[float], debounce: int) -> Sawtooth:
    """Queue extremes, amplitude and period (mean spacing of upward crossings of the mean,
    crossings closer than ``debounce`` samples counted once)."""
    mean = statistics.mean(queue)
    crossings: list[int] = []
    for i in range(1, len(queue)):
        if queue[i - 1] < mean <= queue[i] and (not crossings or i - crossings[-1] > debounce):
            crossings.append(i)
    period = (crossings[-1] - crossings[0]) / (len(crossings) - 1) if len(crossings) > 1 else 0.0
    return Sawtooth(max(queue), min(queue), max(queue) - min(queue), period, mean)


@dataclass(frozen=True)
class DctcpAnalysis:
    """Alizadeh et al. §3.3 for N synchronized flows; C x RTT and K in packets."""
    n: int
    bdp: float
    k: float

    @property
    def q_max(self) -> float:
        return self.k + self.n

    @property
    def amplitude(self) -> float:
        return 0.5 * math.sqrt(2 * self.n * (self.bdp + self.k))

    @property
    def period_rtts(self) -> float:
        return 0.5 * math.sqrt(2 * (self.bdp + self.k) / self.n)
