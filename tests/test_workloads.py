"""Workloads: the bundled flow-size CDFs, inverse-CDF sampling, Poisson arrivals at a target
load, and the flows each workload kind generates.

Statistical bounds are 4 standard deviations of the quantity under test (a false failure about
once in 16,000 runs for a normal statistic; the seeds are fixed, so a run is reproducible), with
the standard deviation derived from the distribution's own moments as noted at each test.
"""

from __future__ import annotations

import csv
import math
import random
from types import SimpleNamespace

import pytest

from sim.net.engine import PS_PER_S, PS_PER_US
from sim.scenario.workload import (
    CdfWorkload,
    IncastWorkload,
    LongWorkload,
    generate_flows,
    parse_ref,
)
from sim.workloads import DATA_DIR, DistributionError, load_cdf, poisson_flows


def file_points(name: str) -> list[tuple[float, float]]:
    """The file's points, read independently of the loader."""
    with open(DATA_DIR / f"{name}.csv") as f:
        rows = [r for r in csv.reader(line for line in f if not line.startswith("#"))]
    assert rows[0] == ["size_bytes", "cdf"]
    return [(float(a), float(b)) for a, b in rows[1:]]


def moments(points) -> tuple[float, float]:
    """Mean and second moment of the piecewise-uniform distribution between the points."""
    m1 = m2 = 0.0
    for (a, p), (b, q) in zip(points, points[1:], strict=False):
        m1 += (q - p) * (a + b) / 2
        m2 += (q - p) * (a * a + a * b + b * b) / 3
    return m1, m2


@pytest.mark.parametrize("name", ["web_search", "data_mining"])
def test_bundled_files_have_provenance_and_valid_points(name):
    text = (DATA_DIR / f"{name}.csv").read_text()
    header = [line for line in text.splitlines() if line.startswith("#")]
    assert any(line.startswith("# Source:") for line in header)
    assert any("Units:" in line for line in header)
    assert any("How the points were obtained" in line for line in header)
    points = file_points(name)
    cdf = load_cdf(name)
    assert list(zip(cdf.sizes, cdf.probs, strict=True)) == points
    assert points[0][1] == 0 and points[-1][1] == 1
    assert cdf.mean == pytest.approx(moments(points)[0])


def test_published_shape():
    """Landmarks of the published distributions (sizes in 1460-byte packets): web search has
    15 % of flows at 6 packets, 60 % at most 133 packets, the largest 20,000; data mining has
    half of all flows a single packet and 99 % below 66,667 packets."""
    web = dict((p, s) for s, p in file_points("web_search") if p > 0)
    assert web[0.15] == 6 * 1460 and web[0.6] == 133 * 1460 and web[1.0] == 20000 * 1460
    mining = dict((p, s) for s, p in file_points("data_mining") if p > 0)
    assert mining[0.5] == 1460 and mining[0.99] == 66667 * 1460


def test_quantile_interpolates_linearly_between_the_points():
    points = file_points("web_search")
    cdf = load_cdf("web_search")
    for (a, p), (b, q) in zip(points, points[1:], strict=False):
        if q > p:
            assert cdf.quantile(p) == a
            assert cdf.quantile((p + q) / 2) == pytest.approx((a + b) / 2)
            assert cdf.quantile(p + (q - p) / 4) == pytest.approx(a + (b - a) / 4)
    assert cdf.quantile(0.0) == 6 * 1460 and cdf.quantile(0.999999) < 29_200_000


@pytest.mark.parametrize("name", ["web_search", "data_mining"])
def test_sampled_sizes_follow_the_file(name):
    """Empirical P(size <= x_i) at every point against p_i; the binomial standard deviation is
    sqrt(p (1 - p) / n).  Sizes are rounded to whole bytes, which moves a sample across x_i
    only within half a byte of it (probability well below 1e-4 here)."""
    n = 20_000
    rng = random.Random(7)
    cdf = load_cdf(name)
    sizes = sorted(cdf.sample(rng) for _ in range(n))
    assert min(sizes) >= 1
    at = {}
    for x, p in file_points(name):       # a repeated size is a step: the CDF takes the top
        at[x] = max(p, at.get(x, 0.0))
    for x, p in at.items():
        below = sum(1 for s in sizes if s <= x) / n
        assert abs(below - p) <= 4 * math.sqrt(p * (1 - p) / n) + 1e-4, (x, p, below)


def test_poisson_arrivals_hit_the_target_load():
    """Web search at 50 % of 100 Gb/s for ~20,000 expected flows.  The offered bytes in a fixed
    window are compound Poisson: variance lambda T E[S^2], so the relative standard deviation of
    the realized load is sqrt(E[S^2] / (n E[S]^2)) (about 1.6 % here); the flow count is Poisson
    (sd sqrt(n)); the mean gap is 1/lambda with sd (1/lambda)/sqrt(n)."""
    load, rate = 0.5, 100 * 10**9
    cdf = load_cdf("web_search")
    m1, m2 = moments(file_points("web_search"))
    lam = load * rate / (8 * m1) / PS_PER_S          # flows per ps, computed independently
    n = 20_000
    window = round(n / lam)
    flows = poisson_flows(cdf, load, rate, 0, window, random.Random(3))
    realized = sum(s for _, s in flows) * 8 * PS_PER_S / (window * rate)
    rel_sd = math.sqrt(m2 / (n * m1 * m1))
    assert abs(realized / load - 1) <= 4 * rel_sd, (realized, rel_sd)
    assert abs(len(flows) - n) <= 4 * math.sqrt(n)
    starts = [t for t, _ in flows]
    assert starts == sorted(starts) and 0 <= starts[0] and starts[-1] < window
    gaps = [b - a for a, b in zip(starts, starts[1:], strict=False)]
    assert abs(sum(gaps) / len(gaps) * lam - 1) <= 4 / math.sqrt(len(gaps))


def test_poisson_is_deterministic_per_seed_and_leaves_the_global_rng():
    cdf = load_cdf("data_mining")
    state = random.getstate()
    a = poisson_flows(cdf, 0.3, 10**11, 0, 10**10, random.Random(1))
    b = poisson_flows(cdf, 0.3, 10**11, 0, 10**10, random.Random(1))
    c = poisson_flows(cdf, 0.3, 10**11, 0, 10**10, random.Random(2))
    assert a == b and a != c
    assert random.getstate() == state


@pytest.mark.parametrize("text, problem", [
    ("size,cdf\n1,0\n2,1\n", "header"),
    ("size_bytes,cdf\n1,0\n", "at least two points"),
    ("size_bytes,cdf\n1,0.1\n2,1\n", "cdf 0"),
    ("size_bytes,cdf\n1,0\n2,0.9\n", "cdf 1"),
    ("size_bytes,cdf\n5,0\n2,1\n", "must not decrease"),
    ("size_bytes,cdf\n1,0\n2,0.6\n3,0.5\n4,1\n", "must not decrease"),
    ("size_bytes,cdf\n1,0\n2,x\n", "expected 'size,probability'"),
    ("size_bytes,cdf\n1,0\n2,1.5\n", "0 <= cdf <= 1"),
])
def test_malformed_cdf_files(tmp_path, text, problem):
    (tmp_path / "d.csv").write_text(text)
    with pytest.raises(DistributionError, match=problem) as e:
        load_cdf("d.csv", tmp_path)
    assert "d.csv" in str(e.value)


def test_point_mass_and_hand_computed_mean(tmp_path):
    (tmp_path / "d.csv").write_text("# comment\nsize_bytes,cdf\n100,0\n100,0.5\n300,1\n")
    cdf = load_cdf("d.csv", tmp_path)
    assert cdf.mean == 0.5 * 100 + 0.5 * 200
    assert cdf.quantile(0.25) == 100 and cdf.quantile(0.75) == 200


GROUPS = {"senders": [0, 1, 2, 3, 4, 5], "receivers": [6, 7], "all": list(range(8))}
TOPO = SimpleNamespace(group_rate_bps=lambda group: 100 * 10**9)


def test_group_references():
    sizes = {k: len(v) for k, v in GROUPS.items()}
    assert parse_ref("senders", sizes) == ("senders", range(6))
    assert parse_ref("senders[2]", sizes) == ("senders", range(2, 3))
    assert parse_ref("senders[2:]", sizes) == ("senders", range(2, 6))
    assert parse_ref("senders[:3]", sizes) == ("senders", range(0, 3))
    for bad in ("senders[6]", "senders[3:3]", "senders[0:7]", "nobody", "senders[a]"):
        with pytest.raises(ValueError):
            parse_ref(bad, sizes)


def test_long_flows_stagger_and_round_robin():
    w = LongWorkload("bg", src="senders[0:3]", dst="receivers", start_ps=5, stop_ps=900,
                     stagger_ps=100)
    flows = generate_flows([w], GROUPS, TOPO, 1000, 1, {})
    assert [(f.flow_id, f.src, f.dst, f.size_bytes, f.start_ps, f.stop_ps, f.tag, f.track)
            for f in flows] == [(0, 0, 6, None, 5, 900, "bg", True),
                                (1, 1, 7, None, 105, 900, "bg", True),
                                (2, 2, 6, None, 205, 900, "bg", True)]


def test_incast_shape_with_repeats():
    w = IncastWorkload("burst", size_bytes=64_000, src="senders", dst="receivers[1]",
                       at_ps=10 * PS_PER_US, repeat=3, period_ps=50 * PS_PER_US)
    flows = generate_flows([LongWorkload("bg", src="senders[0]", dst="receivers[0]"), w],
                           GROUPS, TOPO, 10**9, 1, {})
    burst = flows[1:]
    assert len(burst) == 3 * 6 and [f.flow_id for f in flows] == list(range(19))
    assert {f.dst for f in burst} == {7} and {f.size_bytes for f in burst} == {64_000}
    for r in range(3):
        wave = burst[6 * r: 6 * r + 6]
        assert [f.src for f in wave] == GROUPS["senders"]
        assert {f.start_ps for f in wave} == {(10 + 50 * r) * PS_PER_US}
    with pytest.raises(ValueError, match="to itself"):
        generate_flows([IncastWorkload("x", 10, src="all", dst="all")], GROUPS, TOPO, 10, 1, {})


def test_cdf_workload_flows():
    w = CdfWorkload("web", load=0.8, src="all", dst="all", bottleneck="src")
    cdfs = {"web": load_cdf("web_search")}
    flows = generate_flows([w], GROUPS, TOPO, 2000 * PS_PER_US, 9, cdfs)
    expected = 0.8 * 8 * 100e9 * 2000e-6 / (8 * cdfs["web"].mean)    # 8 uplinks of 100G
    assert abs(len(flows) - expected) <= 4 * math.sqrt(expected)
    assert all(f.src != f.dst and f.src in GROUPS["all"] and f.dst in GROUPS["all"]
               for f in flows)
    assert all(f.tag == "web" and f.size_bytes >= 1 and not f.track for f in flows)
    assert flows == generate_flows([w], GROUPS, TOPO, 2000 * PS_PER_US, 9, cdfs)
    own_seed = CdfWorkload("web", load=0.8, src="all", dst="all", bottleneck="src", seed=9)
    assert flows == generate_flows([own_seed], GROUPS, TOPO, 2000 * PS_PER_US, 1, cdfs)
    # the receivers' two downlinks as the bottleneck: a quarter of the eight uplinks' rate
    dst_only = CdfWorkload("web", load=0.8, src="senders", dst="receivers")
    fewer = generate_flows([dst_only], GROUPS, TOPO, 2000 * PS_PER_US, 9, cdfs)
    assert abs(len(fewer) - expected / 4) <= 4 * math.sqrt(expected / 4)
