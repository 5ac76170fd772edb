"""EgressMarker in Amaranth's simulator: a few hundred events against the golden model, a
register write and a counter read.  (The long runs are in cocotb_tests/, on Verilator.)"""

import random

from hw.layouts import Ecn, MarkerCtrl, QueueOp, marker_descriptor_layout
from hw.switch.marker import EgressMarker
from hw.switch.marker_config import MarkerConfig, MarkerReg
from sim.models.marker import Descriptor, MarkerModel, unpack_decision
from tests.streams import run_testbenches, stream_get, stream_put


def run(cfg: MarkerConfig, items, writes_before=()):
    dut = EgressMarker(cfg)
    layout = marker_descriptor_layout(cfg)
    decisions, reads = [], {}

    async def sender(ctx):
        await stream_put(ctx, dut.csr_w, [{"addr": addr, "data": value}
                                          for addr, value in writes_before])
        await stream_put(ctx, dut.desc, [layout.const({"op": d.op, "port": d.port,
                                                       "prio": d.prio, "length": d.length,
                                                       "ecn": d.ecn}) for d in items])
        while len(decisions) < len(items):       # the sink is back-pressured: wait for all
            await ctx.tick()
        await ctx.tick().repeat(2)               # counters follow their decision by a cycle
        for reg in (MarkerReg.CNT_ENQUEUED, MarkerReg.CNT_MARKED, MarkerReg.SHARED_OCC,
                    MarkerReg.CTRL):
            ctx.set(dut.csr_raddr, reg)
            await ctx.tick()
            reads[reg] = ctx.get(dut.csr_rdata)

    async def receiver(ctx):                               # with back-pressure
        await stream_get(ctx, dut.decision, len(items), rng=random.Random(3), p_ready=0.7,
                         on_item=lambda bits: decisions.append(unpack_decision(cfg, bits)),
                         into=[])

    run_testbenches(dut, sender, receiver)
    return decisions, reads


def test_random_events_match_golden_model():
    # 4-bit draws and lengths in multiples of 100 bytes: the queue lands exactly on thresholds,
    # on ties of the ramp comparison (r * 1600 == 16 * (q - 2000) for one r at every level)
    # and on the limits, so off-by-one errors show up.
    cfg = MarkerConfig.ldcp(ports=2, priorities=2, k_min=1000, k_max=3600, p_max=1.0,
                            k_drop=2500, buf_max=4000, shared_buffer=7000, draw_bits=4)
    rng = random.Random(7)
    items = []
    for _ in range(600):
        op = QueueOp.ENQUEUE if rng.random() < 0.6 else QueueOp.DEQUEUE
        items.append(Descriptor(op, rng.randrange(2), rng.randrange(2),
                                rng.choice((0, 100, 200, 500, 1000)), Ecn(rng.randrange(4))))
    model = MarkerModel(cfg)
    model.write(MarkerReg.K_MIN, 2000)   # the register write moves K_min to 2000
    expected = [model.step(d) for d in items]
    decisions, reads = run(cfg, items, writes_before=[(MarkerReg.K_MIN, 2000)])
    assert decisions == expected
    assert reads[MarkerReg.CNT_ENQUEUED] == model.read(MarkerReg.CNT_ENQUEUED)
    assert reads[MarkerReg.CNT_MARKED] == model.read(MarkerReg.CNT_MARKED) > 0
    assert reads[MarkerReg.SHARED_OCC] == model.shared
    assert reads[MarkerReg.CTRL] == MarkerCtrl.const({"profile": 0, "compare": 0,
                                                      "sample_at": 0}).as_bits()
    reasons = {d.reason.name for d in expected}
    assert {"NONE", "UNDERFLOW", "NOT_ECT_AT_K"} <= reasons


def test_back_to_back_same_queue_at_every_limit():
    # Two queues, mostly enqueues: the per-queue limit binds right after an admitted
    # descriptor of the same queue (the limit comparisons are made for both outcomes of the
    # descriptor just ahead), the pool binds across queues, dequeues underflow.
    cfg = MarkerConfig.dcqcn(ports=1, priorities=2, k_min=500, k_max=2500, p_max=0.5,
                             buf_max=3000, shared_buffer=5000, draw_bits=4)
    rng = random.Random(21)
    items = [Descriptor(QueueOp.ENQUEUE if rng.random() < 0.65 else QueueOp.DEQUEUE, 0,
                        rng.randrange(2), rng.choice((0, 100, 500, 1000, 1500)),
                        Ecn(rng.randrange(4))) for _ in range(800)]
    model = MarkerModel(cfg)
    expected = [model.step(d) for d in items]
    decisions, _ = run(cfg, items)
    assert decisions == expected
    assert {"QUEUE_FULL", "POOL_FULL", "UNDERFLOW"} <= {d.reason.name for d in expected}


def test_switch_radix_marker_elaborates_small():
    # 1024 ports x 8 priorities: the occupancies are one block RAM, not 8192 registers and
    # their multiplexers (the flip-flop design exported as 215k lines of Verilog).
    from amaranth.back import rtlil

    cfg = MarkerConfig.dcqcn(ports=1024, priorities=8, k_min=5_000, k_max=200_000,
                             p_max=0.01, buf_max=1_000_000, shared_buffer=12_000_000)
    text = rtlil.convert(EgressMarker(cfg), name="marker_1024x8", emit_src=False)
    assert len(text.splitlines()) < 30_000
    assert "memory" in text or "$mem" in text
