"""Golden model of the egress marker: rules, exact probability, statistics, packing."""

import math
import random

import pytest

from hw.layouts import (
    DropReason,
    Ecn,
    LayoutCodec,
    QueueOp,
    marker_decision_layout,
    marker_descriptor_layout,
)
from hw.switch.marker_config import COUNTER_MAX, MarkerConfig, MarkerReg
from sim.models.marker import Descriptor, MarkerModel, pack_descriptor, unpack_decision
from sim.reference.marker import marking_probability, not_ect_dropped

LDCP = MarkerConfig.ldcp(k_min=1000, k_max=2000, p_max=0.5, k_drop=3000, buf_max=5000)


def fill(model, level, port=0, prio=0):
    while model.queue(port, prio) < level:
        n = min(1000, level - model.queue(port, prio))
        assert not model.step(Descriptor.enqueue(n, Ecn.CE, port, prio)).drop


def probe(model, ecn, n=200):
    return [model.step(Descriptor.enqueue(0, ecn)) for _ in range(n)]


@pytest.mark.parametrize("compare", ["ge", "gt"])
def test_deterministic_regions_follow_the_reference(compare):
    """Where the reference probability is 0 or 1 the model marks never or always; Not-ECT is
    dropped exactly where the LDCP rule says; CE stays CE and is not counted."""
    for level in (0, 999, 1000, 1001, 1999, 2000, 2001, 2999, 3000, 3001, 4999, 5000):
        model = MarkerModel(LDCP.replace(compare=compare))
        fill(model, level)
        p = marking_probability(level, 1000, 2000, 0.5, compare=compare)
        marks = sum(d.marked for d in probe(model, Ecn.ECT0))
        if p in (0.0, 1.0):
            assert marks == 200 * p, (compare, level)
        else:
            assert abs(marks - 200 * p) <= 5 * math.sqrt(200 * p * (1 - p)) + 1, (level, marks)
        for d in probe(model, Ecn.NOT_ECT, 5):
            assert d.drop == not_ect_dropped(level, 3000, compare=compare)
        ce = probe(model, Ecn.CE, 5)
        assert all(d.ecn == Ecn.CE and not d.marked and not d.drop for d in ce)


def test_buffer_and_pool_limits():
    cfg = MarkerConfig.dcqcn(ports=2, priorities=2, k_min=1000, k_max=2000, p_max=0.5,
                             buf_max=5000, shared_buffer=8000)
    m = MarkerModel(cfg)
    assert not m.step(Descriptor.enqueue(5000, Ecn.NOT_ECT)).drop      # exactly buf_max fits
    d = m.step(Descriptor.enqueue(1, Ecn.ECT0))
    assert d.drop and d.reason == DropReason.QUEUE_FULL and d.qlen == 5000
    assert not m.step(Descriptor.enqueue(3000, Ecn.ECT0, port=1)).drop  # pool at 8000
    d = m.step(Descriptor.enqueue(1, Ecn.ECT0, port=1, prio=1))
    assert d.reason == DropReason.POOL_FULL
    assert m.read(MarkerReg.SHARED_OCC) == 8000
    d = m.step(Descriptor.dequeue(5001))
    assert d.reason == DropReason.UNDERFLOW and m.queue() == 5000      # nothing changed
    assert m.read(MarkerReg.CNT_MALFORMED) == 1


def test_bad_queue_index_changes_nothing():
    cfg = MarkerConfig(ports=3, priorities=3)
    m = MarkerModel(cfg)
    d = m.step(Descriptor.enqueue(100, Ecn.ECT0, port=3))
    assert d.drop and d.reason == DropReason.BAD_QUEUE and m.shared == 0
    d = m.step(Descriptor.dequeue(0, Ecn.ECT0, port=0, prio=3))
    assert d.reason == DropReason.BAD_QUEUE


def test_dequeue_sampling_uses_queue_after_departure():
    cfg = MarkerConfig.dctcp(k=2000, buf_max=10_000, sample_at="dequeue")
    m = MarkerModel(cfg)
    for _ in range(4):
        assert not m.step(Descriptor.enqueue(1000, Ecn.ECT0)).marked
    out = [m.step(Descriptor.dequeue(1000, Ecn.ECT0)) for _ in range(4)]
    assert [d.qlen for d in out] == [3000, 2000, 1000, 0]
    assert [d.marked for d in out] == [True, True, False, False]


def test_counters_saturate_and_registers_read_back():
    m = MarkerModel(LDCP)
    m.write(MarkerReg.CNT_MARKED, COUNTER_MAX - 1)
    fill(m, 2500)
    probe(m, Ecn.ECT0, 3)
    assert m.read(MarkerReg.CNT_MARKED) == COUNTER_MAX
    m.write(MarkerReg.K_MIN, (1 << 40) | 7)   # bits above occ_width are ignored
    assert m.read(MarkerReg.K_MIN) == 7
    m.write(MarkerReg.SHARED_OCC, 123)         # read-only
    assert m.read(MarkerReg.SHARED_OCC) == 2500


@pytest.mark.parametrize("draw_bits", [4, 6, 8])
def test_exact_probability_formula_matches_counting(draw_bits):
    """mark_probability() (a closed form) equals counting the draws r the rule accepts."""
    cfg = MarkerConfig.ldcp(k_min=100, k_max=337, p_max=0.7, k_drop=500, buf_max=1000,
                            draw_bits=draw_bits)
    m = MarkerModel(cfg)
    for q in range(90, 350):
        count = sum(m.mark_rule(q, r) for r in range(1 << draw_bits))
        assert m.mark_probability(q) == count / (1 << draw_bits), q


@pytest.mark.parametrize("draw_bits, p_max", [(16, 0.2), (16, 0.01), (12, 1.0), (8, 0.37)])
def test_quantization_gap_to_float_reference_is_bounded(draw_bits, p_max):
    """|p_model - p_reference| <= 1.5 * 2**-draw_bits for every queue length: one step of the
    ceiling in the multiply-compare plus half a step of rounding P_max to draw_bits bits."""
    cfg = MarkerConfig.ldcp(k_min=20_000, k_max=60_000, p_max=p_max, k_drop=30_000,
                            buf_max=100_000, draw_bits=draw_bits)
    m = MarkerModel(cfg)
    bound = 1.5 * 2.0 ** -draw_bits
    worst = 0.0
    for q in range(19_000, 61_000, 7):
        gap = abs(m.mark_probability(q) - marking_probability(q, 20_000, 60_000, p_max))
        worst = max(worst, gap)
    assert worst <= bound, (worst, bound)


def test_marking_statistics_over_a_million_decisions():
    """RED statistics: with a constant queue inside the ramp, the fraction of ECN-capable packets
    marked over 10^6 decisions equals P_max (q - K_min)/(K_max - K_min) within 3 standard
    deviations (plus the quantization bound), for several q across the ramp."""
    cfg = MarkerConfig.ldcp(k_min=20_000, k_max=60_000, p_max=0.3, k_drop=30_000,
                            buf_max=100_000)
    n = 250_000
    for q in (22_000, 35_000, 47_500, 59_000):    # 4 x 250k = 10^6 decisions
        m = MarkerModel(cfg)
        fill(m, q)
        probe_desc = Descriptor.enqueue(0, Ecn.ECT0)
        marks = sum(m.step(probe_desc).marked for _ in range(n))
        p = marking_probability(q, 20_000, 60_000, 0.3)
        tolerance = 3 * math.sqrt(n * p * (1 - p)) + n * 1.5 * 2.0 ** -16
        assert abs(marks - n * p) <= tolerance, (q, marks / n, p)


def test_codec_matches_amaranth_layout_packing():
    """The fast codec and Amaranth's own layout.const() pack identically."""
    cfg = MarkerConfig(ports=6, priorities=3, len_width=12)
    rng = random.Random(5)
    dl = marker_descriptor_layout(cfg)
    for _ in range(300):
        d = Descriptor(QueueOp(rng.randint(0, 1)), rng.randrange(8), rng.randrange(4),
                       rng.randrange(4096), Ecn(rng.randrange(4)))
        ref = dl.const({"op": d.op, "port": d.port, "prio": d.prio, "length": d.length,
                        "ecn": d.ecn}).as_bits()
        assert pack_descriptor(cfg, d) == ref
    decl = marker_decision_layout(cfg)
    for _ in range(300):
        fields = {"op": QueueOp(rng.randint(0, 1)), "port": rng.randrange(8),
                  "prio": rng.randrange(4), "length": rng.randrange(4096),
                  "drop": rng.randint(0, 1), "reason": DropReason(rng.randrange(6)),
                  "ecn": Ecn(rng.randrange(4)), "marked": rng.randint(0, 1),
                  "qlen": rng.randrange(1 << 24)}
        bits = decl.const(fields).as_bits()
        d = unpack_decision(cfg, bits)
        assert (d.op, d.port, d.prio, d.length, d.reason, d.ecn, d.qlen) == (
            fields["op"], fields["port"], fields["prio"], fields["length"], fields["reason"],
            fields["ecn"], fields["qlen"])
        assert LayoutCodec(decl).pack(LayoutCodec(decl).unpack(bits)) == bits


def test_codec_rejects_values_that_do_not_fit():
    cfg = MarkerConfig(len_width=12)
    with pytest.raises(ValueError, match="'length' = 4096 does not fit 12 bits"):
        pack_descriptor(cfg, Descriptor.enqueue(4096))
