"""Metrics against hand-computed values on small hand-built run results."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from sim.scenario import metrics

US = 10**6


def flow(flow_id, size, start_us, finish_us, ideal_us, tag="t", src=0, dst=9):
    return SimpleNamespace(flow_id=flow_id, src=src, dst=dst, tag=tag, size_bytes=size,
                           start_ps=start_us * US,
                           finish_ps=None if finish_us is None else finish_us * US,
                           delivered_bytes=0, ideal_fct_ps=None if ideal_us is None
                           else ideal_us * US, retransmitted_bytes=0)


def result(**kw):
    base = dict(algorithm="x", duration_ps=100 * US, events=1000, sample_ps=10 * US, seed=1,
                flows=[], queue_series={}, flow_series={}, port_tx_bytes={}, port_rate_bps={},
                counters={})
    base.update(kw)
    return SimpleNamespace(**base)


def test_nearest_rank_percentile():
    values = [50, 15, 35, 20, 40]                 # sorted: 15 20 35 40 50
    assert metrics.percentile(values, 5) == 15    # rank ceil(0.25) = 1
    assert metrics.percentile(values, 30) == 20   # rank ceil(1.5) = 2
    assert metrics.percentile(values, 40) == 20   # rank 2
    assert metrics.percentile(values, 50) == 35   # rank ceil(2.5) = 3
    assert metrics.percentile(values, 100) == 50
    assert metrics.percentile(list(range(1, 101)), 99) == 99
    assert metrics.percentile([], 50) is None


def test_jain_index():
    assert metrics.jain([3, 3, 3, 3]) == 1.0
    assert metrics.jain([1, 0, 0, 0]) == 0.25
    assert metrics.jain([1, 2, 3]) == pytest.approx(36 / 42)
    assert metrics.jain([]) is None and metrics.jain([0, 0]) is None


def test_throughput_series_and_utilization():
    # 1,000 then 2,000 bytes in 10 us intervals: 0.8 and 1.6 Gb/s
    assert metrics.throughput_series([0, 1000, 3000], 10 * US) == [0.8e9, 1.6e9]
    # 100 us at 10 Gb/s carries 125,000 bytes
    res = result(port_tx_bytes={"a": 125_000, "b": 31_250},
                 port_rate_bps={"a": 10 * 10**9, "b": 10 * 10**9})
    assert metrics.utilization(res) == {"a": 1.0, "b": 0.25}


def test_fct_slowdown_percentiles_and_buckets():
    flows = [flow(0, 5_000, 0, 10, 5),          # slowdown 2,  bucket <10KB
             flow(1, 9_999, 10, 40, 10),        # slowdown 3,  <10KB
             flow(2, 10_000, 0, 40, 20),        # slowdown 2,  10KB-100KB (boundary)
             flow(3, 500_000, 0, 90, 30, tag="u"),   # slowdown 3, 100KB-1MB
             flow(4, 1_000_000, 0, None, 80),   # unfinished, >=1MB
             flow(5, None, 0, None, None)]      # long-lived: no FCT
    stats = metrics.fct_stats(result(flows=flows))
    assert (stats["flows"], stats["finished"], stats["unfinished"]) == (5, 4, 1)
    # slowdowns sorted 2 2 3 3: p50 rank 2 -> 2, p95 rank 4 -> 3; mean 2.5
    assert stats["slowdown"] == {"p50": 2.0, "p95": 3.0, "p99": 3.0, "mean": 2.5}
    # FCTs 10 30 40 90 us: p50 rank 2 -> 30
    assert stats["fct_us"]["p50"] == 30 and stats["fct_us"]["p99"] == 90
    by = stats["by_size"]
    assert by["<10KB"]["slowdown"] == {"p50": 2.0, "p95": 3.0, "p99": 3.0, "mean": 2.5}
    assert by["10KB-100KB"]["flows"] == 1 and by["10KB-100KB"]["slowdown"]["p50"] == 2.0
    assert by["100KB-1MB"]["slowdown"]["p99"] == 3.0
    assert by[">=1MB"] == {"flows": 1, "finished": 0, "unfinished": 1,
                           "slowdown": {"p50": None, "p95": None, "p99": None, "mean": None},
                           "fct_us": {"p50": None, "p95": None, "p99": None, "mean": None}}
    assert stats["by_tag"]["u"]["flows"] == 1 and stats["by_tag"]["t"]["flows"] == 4
    assert [metrics.bucket_of(s) for s in (0, 9_999, 10_000, 99_999, 100_000, 10**6)] == \
        ["<10KB", "<10KB", "10KB-100KB", "10KB-100KB", "100KB-1MB", ">=1MB"]


def test_fairness_over_the_second_half():
    # samples every 10 us at 0..100 us; window [50, 100] us = samples 5..10
    series = {0: [0] * 5 + [0, 1000, 2000, 3000, 4000, 5000],       # 5000 B in 50 us: 0.8 Gb/s
              1: [0] * 5 + [0, 3000, 6000, 9000, 12000, 15000],     # 2.4 Gb/s
              2: [0] * 11,                                          # started late: excluded
              3: [0] * 11,                                          # sized: excluded
              4: [0] * 11}                                          # stopped early: excluded
    flows = [flow(0, None, 0, None, None), flow(1, None, 0, None, None),
             flow(2, None, 60, None, None), flow(3, 5000, 0, 1, 1),
             flow(4, None, 0, 70, None)]
    fair = metrics.fairness(result(flows=flows, flow_series=series))
    assert fair["flows"] == 2 and fair["window_us"] == [50, 100]
    assert fair["jain"] == pytest.approx((0.8 + 2.4) ** 2 / (2 * (0.8**2 + 2.4**2)))
    assert fair["goodput_gbps"]["min"] == pytest.approx(0.8)
    assert fair["goodput_gbps"]["max"] == pytest.approx(2.4)
    # a planned stop inside the window (the core's records carry no stop time) excludes flow 1
    fair = metrics.fairness(result(flows=flows, flow_series=series), stops={1: 80 * US})
    assert fair["flows"] == 1 and fair["jain"] == 1.0


def test_queues_counters_and_summary():
    res = result(queue_series={"p": [0, 100, 300, 200]},
                 port_tx_bytes={"p": 62_500}, port_rate_bps={"p": 10 * 10**9},
                 counters={"marks": 7, "drops_not_ect_at_k": 2, "drops_buffer": 3, "cnps": 4,
                           "cnms": 1, "paused_ps": 2_500_000, "extra": 9})
    assert metrics.queue_stats(res) == {"p": {"max": 300, "mean": 150.0, "p99": 300}}
    c = metrics.counters(res)
    assert (c["drops"], c["paused_us"], c["extra"], c["timeouts"]) == (5, 2.5, 9, 0)
    head = metrics.summarize(res)["headline"]
    assert head["utilization"] == 0.5 and head["queue_max_kb"] == 0.3
    assert (head["drops"], head["marks"], head["cnps_cnms"], head["paused_us"]) == (5, 7, 5, 2.5)
    assert head["jain"] is None and head["slowdown_p99"] is None
    res.pause_series = {"p": [0, 1, 1, 0], "q": [0, 0, 0, 0]}
    assert metrics.pause_stats(res) == {"p": 0.5}
