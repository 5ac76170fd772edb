"""EgressMarker in Amaranth's simulator: a few hundred events against the golden model, a
register write and a counter read.  (The long runs are in cocotb_tests/, on Verilator.)"""

import random

from hw.layouts import DropReason, Ecn, MarkerCtrl, QueueOp
from hw.switch.marker import EgressMarker
from hw.switch.marker_config import CSR_ADDR_WIDTH, MarkerConfig, MarkerReg
from sim.models.marker import Descriptor, MarkerModel, pack_descriptor, unpack_decision
from tests.streams import run_testbenches, stream_get, stream_put

_READS = (MarkerReg.CNT_ENQUEUED, MarkerReg.CNT_MARKED, MarkerReg.SHARED_OCC, MarkerReg.CTRL)


def run(cfg: MarkerConfig, items, writes_before=(), read_addrs=_READS):
    dut = EgressMarker(cfg)
    decisions, reads = [], {}

    async def sender(ctx):
        await stream_put(ctx, dut.csr_w, [{"addr": addr, "data": value}
                                          for addr, value in writes_before])
        # (packed by the model's codec, which refuses a field that does not fit)
        await stream_put(ctx, dut.desc, [pack_descriptor(cfg, d) for d in items])
        while len(decisions) < len(items):       # the sink is back-pressured: wait for all
            await ctx.tick()
        await ctx.tick().repeat(2)               # counters follow their decision by a cycle
        for reg in read_addrs:
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


def test_every_register_and_counter_reads_back_after_drops():
    # Every word of the register port (the map's registers, the identification header and the
    # unmapped words) read back after traffic with every drop reason and malformed descriptors,
    # against the golden model's register file.  Three ports and three priorities: port 3 and
    # priority 3 fit their 2-bit fields but are out of range (BAD_QUEUE); dequeues larger than
    # the queue underflow; both count as CNT_MALFORMED.  The per-queue limit, the pool and the
    # LDCP Not-ECT drop at K_DROP each drop some enqueues.
    cfg = MarkerConfig.ldcp(ports=3, priorities=3, k_min=600, k_max=2000, p_max=0.5,
                            k_drop=1200, buf_max=2000, shared_buffer=8000, draw_bits=4)
    rng = random.Random(5)
    items = [Descriptor(QueueOp.ENQUEUE if rng.random() < 0.65 else QueueOp.DEQUEUE,
                        rng.choice((0, 0, 1, 1, 2, 3)), rng.choice((0, 0, 1, 1, 2, 3)),
                        rng.choice((0, 100, 500, 1000, 1500)), Ecn(rng.randrange(4)))
             for _ in range(300)]
    model = MarkerModel(cfg)
    expected = [model.step(d) for d in items]
    words = range(1 << CSR_ADDR_WIDTH)
    decisions, reads = run(cfg, items, read_addrs=words)
    assert decisions == expected
    assert reads == {addr: model.read(addr) for addr in words}
    # the counters, tallied from the decisions by reason (independently of both register files)
    tally = {reason: sum(d.reason == reason for d in expected) for reason in DropReason}
    ok = [d for d in expected if d.reason == DropReason.NONE]
    want = {
        MarkerReg.CNT_ENQUEUED: sum(d.op == QueueOp.ENQUEUE for d in ok),
        MarkerReg.CNT_DEQUEUED: sum(d.op == QueueOp.DEQUEUE for d in ok),
        MarkerReg.CNT_MARKED: sum(d.marked for d in expected),
        MarkerReg.CNT_DROP_NOT_ECT: tally[DropReason.NOT_ECT_AT_K],
        MarkerReg.CNT_DROP_QUEUE_FULL: tally[DropReason.QUEUE_FULL],
        MarkerReg.CNT_DROP_POOL_FULL: tally[DropReason.POOL_FULL],
        MarkerReg.CNT_MALFORMED: tally[DropReason.BAD_QUEUE] + tally[DropReason.UNDERFLOW],
    }
    assert {reg: reads[reg] for reg in MarkerReg.counters()} == want
    # every counter counted something, and no counter counts half of the descriptors or more
    # (a condition inverted would count the others)
    assert all(0 < n < len(items) // 2 for n in want.values()), want
    assert tally[DropReason.UNDERFLOW] > 0
    assert {(d.port == 3, d.prio == 3) for d in expected if d.reason == DropReason.BAD_QUEUE} \
        == {(True, False), (False, True), (True, True)}
    assert reads[MarkerReg.SHARED_OCC] == model.shared == sum(model.occ)


def test_switch_radix_marker_elaborates_small():
    # 1024 ports x 8 priorities: the occupancies are one block RAM, not 8192 registers and
    # their multiplexers (the flip-flop design exported as 215k lines of Verilog).
    from amaranth.back import rtlil

    cfg = MarkerConfig.dcqcn(ports=1024, priorities=8, k_min=5_000, k_max=200_000,
                             p_max=0.01, buf_max=1_000_000, shared_buffer=12_000_000)
    text = rtlil.convert(EgressMarker(cfg), name="marker_1024x8", emit_src=False)
    assert len(text.splitlines()) < 30_000
    assert "memory" in text or "$mem" in text


def test_switch_radix_occupancies_are_registered_block_ram_on_ecp5():
    # For the ECP5 run of synthesis the occupancy RAM is DP16KD with the primitive's own output
    # register (REGMODE_B OUTREG): the unregistered read (5.8 ns from clock to data) was the
    # critical path at 122.7 MHz.  No inferred memory is left for Yosys to map without it.
    # 64 x 8 = 512 words of 24 bits (the width of the 12 MB pool): two DP16KD of 18 bits x
    # 1024 words side by side.
    from amaranth.back import rtlil

    from hw.lib.bram import BramTarget

    cfg = MarkerConfig.dcqcn(ports=64, priorities=8, k_min=5_000, k_max=200_000, p_max=0.01,
                             buf_max=1_000_000, shared_buffer=12_000_000)
    assert cfg.occ_width == 24
    text = rtlil.convert(EgressMarker(cfg), name="marker_64x8", emit_src=False,
                         platform=BramTarget("ecp5"))
    cells = [line for line in text.splitlines() if line.strip().startswith("cell \\DP16KD")]
    assert len(cells) == 2
    assert text.count('parameter \\REGMODE_B "OUTREG"') == 2
    assert "$mem" not in text
