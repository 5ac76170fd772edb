"""EgressMarker's boundaries in Amaranth's simulator: every limit, threshold and width at its
exact edge, in configurations small enough that random traffic lands on each edge many times.

The long runs (tests/test_marker_rtl.py here, cocotb_tests/test_marker.py on Verilator) use
lengths and thresholds in round numbers, so a limit off by one byte (``q + length >
buf_max + 1`` for ``> buf_max``) or a threshold compare off by one (``>`` for ``>=``) never
shows.  Here every length is 0 ... 2**len_width - 1, the limits are a few tens of bytes, and
one configuration puts every register at the top of its width (``buf_max = shared_buffer =
2**occ_width - 1``, lengths wider than the queue), where a width one bit short wraps.  The
directed sequences' expected decisions are worked by hand from the rules in docs/marker.md;
the random runs are compared with the golden model, decision by decision.
"""

import random

import pytest
from amaranth.hdl import Module, ResetInserter, Signal
from amaranth.sim import Simulator

from hw.layouts import DropReason, Ecn, QueueOp, marker_descriptor_layout
from hw.switch.marker import EgressMarker
from hw.switch.marker_config import MarkerConfig, MarkerReg
from sim.models.marker import Descriptor, MarkerModel, unpack_decision
from tests.streams import stream_get, stream_put
from tests.test_marker_rtl import run

NONE, FULL, POOL, NOT_ECT, UNDER, BAD = (DropReason.NONE, DropReason.QUEUE_FULL,
                                         DropReason.POOL_FULL, DropReason.NOT_ECT_AT_K,
                                         DropReason.UNDERFLOW, DropReason.BAD_QUEUE)

#: small limits: lengths 0 ... 15 against a queue of 40 bytes, a pool of 70, thresholds 10-30
SMALL = dict(ports=3, priorities=3, occ_width=8, len_width=4, draw_bits=4, buf_max=40,
             shared_buffer=70)

CONFIGS = {
    "ldcp_ge": MarkerConfig.ldcp(k_min=10, k_max=30, p_max=0.5, k_drop=20, **SMALL),
    "dcqcn_gt_dequeue": MarkerConfig.dcqcn(k_min=10, k_max=30, p_max=0.75, compare="gt",
                                           sample_at="dequeue", **SMALL),
    "dctcp_gt": MarkerConfig.dctcp(k=20, compare="gt", **SMALL),
    # every register at the top of its width, lengths up to 1023 (two bits wider than the
    # queue): a threshold or limit register one bit short, or a signed limit one bit short or
    # sized by the queue's width alone, wraps here (256 - 1023 < -2**9)
    "ldcp_gt_top": MarkerConfig.ldcp(ports=1, priorities=2, occ_width=8, len_width=10,
                                     draw_bits=4, buf_max=255, shared_buffer=255, k_min=200,
                                     k_max=255, p_max=1.0, k_drop=150, compare="gt"),
    # the same limits with lengths no wider than the queue: a zero-length enqueue's room,
    # 256 - 0, needs the limits' second sign bit
    "dcqcn_ge_top": MarkerConfig.dcqcn(ports=2, priorities=1, occ_width=8, len_width=8,
                                       draw_bits=4, buf_max=255, shared_buffer=255, k_min=100,
                                       k_max=255, p_max=0.25),
}


def random_items(cfg: MarkerConfig, n: int, rng: random.Random) -> list[Descriptor]:
    """Enqueues and dequeues, half of them on one hot queue (back-to-back same-queue pairs),
    1 in 10 on an index the fields encode but the configuration does not have (when there is
    one), every ECN codepoint, lengths mostly up to a third of the queue's limit, with 0 and
    max_length at 5 % each.  The traffic is steered by a model run alongside (only to choose
    the next descriptor): dequeues mostly take at most what their queue holds, and the pool
    drains when it is nearly full, so that the queues wander across every threshold instead
    of the pool sitting full."""
    top = cfg.max_length
    bad = [(p, q) for p in range(1 << cfg.port_width) for q in range(1 << cfg.prio_width)
           if p >= cfg.ports or q >= cfg.priorities]
    small = min(top, max(15, cfg.buf_max // 3))
    shadow = MarkerModel(cfg)
    items = []
    for _ in range(n):
        r = rng.random()
        if bad and r < 0.1:
            port, prio = rng.choice(bad)
        elif r < 0.6:
            port, prio = 0, 0
        else:
            port, prio = rng.randrange(cfg.ports), rng.randrange(cfg.priorities)
        full = shadow.shared > 0.8 * cfg.shared_buffer
        op = QueueOp.ENQUEUE if rng.random() < (0.35 if full else 0.6) else QueueOp.DEQUEUE
        held = shadow.queue(port, prio) if port < cfg.ports and prio < cfg.priorities else 0
        r = rng.random()
        if op == QueueOp.DEQUEUE and held and r < 0.8:
            length = rng.randrange(min(held, top) + 1)
        else:
            length = 0 if r < 0.05 else top if r < 0.1 else rng.randrange(small + 1) \
                if r < 0.9 else rng.randrange(top + 1)
        d = Descriptor(op, port, prio, length, Ecn(rng.randrange(4)))
        shadow.step(d)
        items.append(d)
    return items


@pytest.mark.parametrize("name", CONFIGS)
def test_dense_traffic_at_small_limits_matches_model(name):
    cfg = CONFIGS[name]
    seed = 9100 + list(CONFIGS).index(name)
    print(f"seed {seed}")
    items = random_items(cfg, 3000, random.Random(seed))
    model = MarkerModel(cfg)
    expected = [model.step(d) for d in items]
    decisions, reads = run(cfg, items)
    assert decisions == expected
    assert reads[MarkerReg.SHARED_OCC] == model.shared
    # the run reaches every outcome it can (the step profile has no Not-ECT drop)
    reasons = {d.reason for d in expected}
    want = {NONE, FULL, POOL, UNDER, BAD} | ({NOT_ECT} if cfg.profile == "ldcp" else set())
    if name.endswith("_top"):
        want -= {BAD}               # every (port, prio) the fields encode is in range
    assert want <= reasons, want - reasons
    assert any(d.marked for d in expected) and not all(
        d.marked for d in expected if d.reason == NONE)


def enq(length, port=0, prio=0, ecn=Ecn.ECT0):
    return Descriptor(QueueOp.ENQUEUE, port, prio, length, ecn)


def deq(length, port=0, prio=0, ecn=Ecn.ECT0):
    return Descriptor(QueueOp.DEQUEUE, port, prio, length, ecn)


def check_by_hand(cfg, seq):
    """``seq``: (descriptor, reason, qlen) with the decision worked by hand.  The model and the
    RTL (back to back, with back-pressure on the decisions) must both give it."""
    items = [d for d, _, _ in seq]
    want = [(reason, qlen) for _, reason, qlen in seq]
    model = MarkerModel(cfg)
    assert [(x.reason, x.qlen) for x in map(model.step, items)] == want
    decisions, _ = run(cfg, items)
    assert [(x.reason, x.qlen) for x in decisions] == want
    return decisions


def test_queue_pool_and_not_ect_limits_at_their_exact_byte():
    """``ldcp_ge`` (buf_max 40, shared_buffer 70, k_drop 20, draft ``>=``), back to back:
    a queue admits up to exactly 40 bytes and refuses the 41st; the pool admits up to exactly
    70 and refuses the 71st; a Not-ECT enqueue is admitted at 19 bytes and dropped at 20, just
    after the same queue's admitted enqueue (the check made for the one-ahead-admitted case).
    ``qlen`` of an enqueue is the queue before it; of a drop, the queue as it stands."""
    cfg = CONFIGS["ldcp_ge"]
    seq = [
        (enq(15), NONE, 0), (enq(15), NONE, 15),            # q0 = 30
        (enq(11), FULL, 30),                                # 30 + 11 = 41 > 40
        (enq(10), NONE, 30),                                # 30 + 10 = 40: at the limit
        (enq(0), NONE, 40), (enq(1), FULL, 40),             # a zero length fits a full queue
        (enq(15, port=1), NONE, 0), (enq(15, port=1), NONE, 15),    # pool 40 + 30 = 70
        (enq(1, port=1, prio=1), POOL, 0),                  # 70 + 1 > 70 (the queue is empty)
        (deq(1, port=1), NONE, 29),                         # pool 69
        (enq(1, port=1, prio=1), NONE, 0),                  # 69 + 1 = 70: at the limit
        (deq(15), NONE, 25), (deq(15), NONE, 10), (deq(10), NONE, 0),   # pool 30, q0 empty
        (enq(10, port=2), NONE, 0), (enq(9, port=2), NONE, 10),         # q = 19
        (enq(1, port=2, ecn=Ecn.NOT_ECT), NONE, 19),        # 19 < 20: admitted
        (enq(1, port=2, ecn=Ecn.NOT_ECT), NOT_ECT, 20),     # 20 >= 20: dropped
        (enq(1, port=2, ecn=Ecn.ECT1), NONE, 20),           # ECT: only the limits apply
        (deq(15, port=2), NONE, 6), (deq(6, port=2), NONE, 0),
        (deq(1, port=2), UNDER, 0),                         # 1 > 0
        (deq(0, port=2), NONE, 0),
    ]
    check_by_hand(cfg, seq)


def test_limits_at_the_top_of_the_registers():
    """``ldcp_gt_top``: buf_max = shared_buffer = k_max = 255 = 2**occ_width - 1 (the
    limits' ``+ 1`` and the ``gt`` thresholds' ``+ 1`` are 256: a register of occ_width bits
    would wrap them to 0), lengths up to 511.  A packet longer than the queue's limit is
    refused by an empty queue (its room, 256 - 300, is negative: clamped to "always full"),
    after a same-queue enqueue too (256 - 300 - 200), and so is one of 1023 bytes (256 - 1023,
    below -2**9: the limits are two bits wider than the wider of the queue and the length)."""
    cfg = CONFIGS["ldcp_gt_top"]
    seq = [
        (enq(300), FULL, 0), (enq(511), FULL, 0), (enq(1023), FULL, 0),
        (enq(200), NONE, 0), (enq(300), FULL, 200), (enq(1023), FULL, 200),
        (enq(55), NONE, 200),                               # 255: at the limit
        (enq(1), FULL, 255),
        (enq(0, ecn=Ecn.NOT_ECT), NOT_ECT, 255),            # 255 > k_drop = 150
        (deq(105), NONE, 150), (enq(0, ecn=Ecn.NOT_ECT), NONE, 150),    # 150 > 150: false
        (deq(150), NONE, 0), (deq(1), UNDER, 0),
        (enq(255, prio=1), NONE, 0),                        # pool 255: at the limit
        (enq(1), POOL, 0), (enq(0), NONE, 0),
    ]
    check_by_hand(cfg, seq)
    # lengths of the queue's width (8 bits): a zero-length enqueue's room is 256 - 0
    seq = [(enq(0), NONE, 0), (enq(255), NONE, 0), (enq(0), NONE, 255), (enq(1), FULL, 255),
           (enq(0, port=1), NONE, 0), (enq(1, port=1), POOL, 0), (deq(255), NONE, 0),
           (enq(255, port=1), NONE, 0), (enq(0, port=1), NONE, 255)]
    check_by_hand(CONFIGS["dcqcn_ge_top"], seq)


def test_two_long_enqueues_back_to_back():
    """Two same-queue enqueues of 15 and 15 bytes (len_width 4: their sum, 30, needs the sum's
    two extra bits) and a dequeue of 15 right behind them: the forwarded queue is 30, not a
    wrapped value (a dequeue reports the queue after it)."""
    cfg = CONFIGS["ldcp_ge"]
    seq = [(enq(15), NONE, 0), (enq(15), NONE, 15), (deq(15), NONE, 15), (enq(15), NONE, 15),
           (deq(15), NONE, 15), (deq(15), NONE, 0), (deq(1), UNDER, 0)]
    check_by_hand(cfg, seq)


def test_ramp_starts_one_byte_past_k_min_under_gt():
    """DCQCN, ``gt``, K_min 10, K_max 11, P_max 1.0, marking at enqueue on the queue before
    the packet: at 10 (not above K_min) never marked; at 11 (above K_min, not above K_max) the
    ramp gives ``r (11 - 10) < 16 (11 - 10)``, true for every 4-bit draw: always marked; at 12
    (above K_max) always marked."""
    cfg = MarkerConfig.dcqcn(k_min=10, k_max=11, p_max=1.0, compare="gt", **SMALL)
    seq = [(enq(10), NONE, 0), (enq(1), NONE, 10), (enq(1), NONE, 11), (enq(1), NONE, 12),
           (deq(2), NONE, 11), (enq(0), NONE, 11), (deq(1), NONE, 10), (enq(0), NONE, 10)]
    decisions = check_by_hand(cfg, seq)
    assert [d.marked for d in decisions] == [False, False, True, True,
                                             False, True, False, False]
    assert [d.ecn for d in decisions if d.marked] == [Ecn.CE] * 3


def test_reset_sweep_clears_every_queue():
    """A reset after every queue was filled: block RAM contents survive ``rst``, so the
    marker's sweep must write every queue's word to 0 before it takes a descriptor.  By hand:
    ``clearing`` is set by the reset and writes one queue a cycle, indices 0 ... queues - 1,
    so ``desc.ready`` rises exactly ``queues`` cycles after the reset's edge (6 here); then a
    1-byte dequeue of every queue underflows on 0 bytes and the pool reads 0."""
    cfg = MarkerConfig.ldcp(ports=3, priorities=2, k_min=10, k_max=30, p_max=0.5, k_drop=40,
                            occ_width=8, len_width=4, draw_bits=4, buf_max=40,
                            shared_buffer=255)
    queues = [(p, q) for p in range(3) for q in range(2)]
    fill = [enq(7, p, q) for p, q in queues]
    after = [deq(1, p, q) for p, q in queues]
    layout = marker_descriptor_layout(cfg)
    rst = Signal()
    dut = EgressMarker(cfg)
    top = Module()
    top.submodules.dut = ResetInserter(rst)(dut)
    got, log = [], {}

    def pack(d):
        return layout.const({"op": d.op, "port": d.port, "prio": d.prio, "length": d.length,
                             "ecn": d.ecn})

    async def sender(ctx):
        await stream_put(ctx, dut.desc, [pack(d) for d in fill])
        while len(got) < len(fill):
            await ctx.tick()
        ctx.set(rst, 1)
        await ctx.tick()
        ctx.set(rst, 0)
        ctx.set(dut.desc.valid, 1)          # offered at once: taken when the sweep ends
        waited = 0
        while not ctx.get(dut.desc.ready):
            await ctx.tick()
            waited += 1
            assert waited < 50, "desc.ready never rose after the reset"
        log["ready_after"] = waited
        await stream_put(ctx, dut.desc, [pack(d) for d in after])
        while len(got) < len(fill) + len(after):
            await ctx.tick()
        await ctx.tick().repeat(2)
        ctx.set(dut.csr_raddr, MarkerReg.SHARED_OCC)
        await ctx.tick()
        log["shared"] = ctx.get(dut.csr_rdata)

    async def monitor(ctx):
        ctx.set(dut.decision.ready, 1)
        await stream_get(ctx, dut.decision, len(fill) + len(after), into=got)

    sim = Simulator(top)
    sim.add_clock(4e-9)
    sim.add_testbench(sender)
    sim.add_testbench(monitor)
    sim.run()
    res = [unpack_decision(cfg, b) for b in got]
    assert [(d.reason, d.qlen) for d in res[:6]] == [(NONE, 0)] * 6
    assert log["ready_after"] == 6
    assert [(d.reason, d.qlen) for d in res[6:]] == [(UNDER, 0)] * 6
    assert log["shared"] == 0


def test_one_queue_marker_runs_and_exports_lint_clean(tmp_path):
    """One port, one priority: the occupancy RAM still has an address bit (a one-word RAM's
    zero-width address exports as ``wire [-1:0]``, which Verilator's -Wall refuses), the
    Verilog lints clean, and dense traffic on the one queue matches the model."""
    from amaranth.back import verilog

    from gateware.export import lint

    cfg = MarkerConfig.ldcp(ports=1, priorities=1, k_min=10, k_max=30, p_max=0.5, k_drop=20,
                            occ_width=8, len_width=4, draw_bits=4, buf_max=40, shared_buffer=70)
    path = tmp_path / "marker_one_queue.v"
    path.write_text(verilog.convert(EgressMarker(cfg), name="marker_one_queue",
                                    emit_src=False))
    lint(path, "marker_one_queue")
    items = random_items(cfg, 1000, random.Random(9110))
    model = MarkerModel(cfg)
    expected = [model.step(d) for d in items]
    decisions, _ = run(cfg, items)
    assert decisions == expected
