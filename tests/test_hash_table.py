"""Generic L3QCN hash table: configuration errors, the model against an independent dict
reference, and the RTL in Amaranth's simulator against the model, op by op (the long runs are
in cocotb_tests/test_l3qcn_tables.py)."""

import os
import random

import pytest
from amaranth.hdl import Module, ResetInserter, Signal
from amaranth.sim import Simulator

from hw.layouts import HtOp, HtStatus
from hw.params import ConfigError
from hw.switch.hash_table import HashTable
from hw.switch.hash_table_config import HashTableConfig, primitive_polynomials
from sim.models.hash_table import HashTableModel, HtCodec
from tests.streams import run_testbenches, stream_get, stream_put


@pytest.mark.parametrize("field, value, text", [
    ("buckets", 100, "a power of two"), ("buckets", 2, "a power of two 4"),
    ("ways", 0, "1 <= ways <= 16"),
    ("key_width", 0, "1 <= key_width"), ("counter_width", 4, "8 <= counter_width")])
def test_config_errors(field, value, text):
    with pytest.raises(ConfigError, match=f"HashTableConfig.{field} = {value!r} .*{text}"):
        HashTableConfig(**{field: value})


def random_ops(rng, cfg, n, key_pool):
    """A mix of the four ops over a small pool of keys (hits, misses, duplicates, full
    buckets) and some fresh random keys."""
    ops = []
    for _ in range(n):
        key = rng.choice(key_pool) if rng.random() < 0.85 else rng.getrandbits(cfg.key_width)
        op = rng.choices(list(HtOp), weights=(4, 3, 2, 3))[0]
        ops.append((op, key, rng.getrandbits(cfg.value_width), rng.getrandbits(cfg.tag_width)))
    return ops


def colliding_keys(cfg, n, rng):
    """``n`` keys with the same two candidate buckets."""
    first = rng.getrandbits(cfg.key_width)
    keys = [first]
    while len(keys) < n:
        k = rng.getrandbits(cfg.key_width)
        if cfg.buckets_of(k) == cfg.buckets_of(first):
            keys.append(k)
    return keys


def test_model_against_dict_reference():
    """Independent reference: a dict of key -> (side, value) and a count per (side, bucket);
    a new key goes to the candidate with the smaller count (side 0 on a tie), FULL when both
    hold ``ways`` keys."""
    cfg = HashTableConfig(buckets=8, ways=2, key_width=12, value_width=8)
    rng = random.Random(1)
    model, ref, count = HashTableModel(cfg), {}, {}
    pool = [rng.getrandbits(12) for _ in range(40)]
    seen = set()
    for op, key, value, tag in random_ops(rng, cfg, 5000, pool):
        r = model.command(op, key, value, tag)
        cands = list(enumerate(cfg.buckets_of(key)))
        present = key in ref
        assert r.value == (ref[key][1] if present else 0) and r.key == key and r.tag == tag
        if op == HtOp.LOOKUP or op == HtOp.REMOVE:
            assert r.status == (HtStatus.OK if present else HtStatus.NOT_FOUND)
            if op == HtOp.REMOVE and present:
                side = ref.pop(key)[0]
                count[(side, cfg.buckets_of(key)[side])] -= 1
        elif present:
            assert r.status == (HtStatus.DUPLICATE if op == HtOp.ADD else HtStatus.REFRESHED)
            if op == HtOp.LEARN:
                ref[key] = (ref[key][0], value)
        else:
            loads = [count.get(c, 0) for c in cands]
            if min(loads) == cfg.ways:
                assert r.status == HtStatus.FULL
            else:
                assert r.status == HtStatus.OK
                side = 0 if loads[0] <= loads[1] else 1
                ref[key] = (side, value)
                count[cands[side]] = loads[side] + 1
        seen.add(r.status)
        assert model.occupancy == len(ref)
    assert seen == set(HtStatus)


def test_hash_spreads_consecutive_keys_evenly():
    """The CRC hashes map consecutive QPs, consecutive addresses, consecutive ports exactly
    evenly: 4 keys per bucket of each side for 4 x (buckets per side) keys."""
    for cfg, make in [(HashTableConfig.cnp_qp(), lambda k: (0x0A000000 + k) << 24 | 7),
                      (HashTableConfig.cnp_qp(), lambda k: 0x0A000001 << 24 | k),
                      (HashTableConfig.flow_id(), lambda k: (0x0A0000010A0000020000 + k) << 24
                       | 5001 << 8 | 17)]:
        for side in (0, 1):
            counts = [0] * cfg.side_buckets
            for k in range(4 * cfg.side_buckets):
                counts[cfg.buckets_of(make(k))[side]] += 1
            assert set(counts) == {4}


def test_primitive_polynomials():
    """Known counts (OEIS A011260: 1, 1, 2, 2, 6, 6, 18, 16) and the classic x^3 + x + 1."""
    assert [len(primitive_polynomials(k)) for k in range(1, 9)] == [1, 1, 2, 2, 6, 6, 18, 16]
    assert primitive_polynomials(3)[0] == 0b1011


def test_two_left_load_at_first_full():
    """Random keys into the default 256 x 4 table: the first FULL comes after ~69 % of the
    capacity on average (a single hash would refuse at ~25 %), never before 50 %."""
    cfg = HashTableConfig.cnp_qp()
    loads = []
    for seed in range(5):
        rng, model = random.Random(seed), HashTableModel(cfg)
        while model.command(HtOp.ADD, rng.getrandbits(56)).status != HtStatus.FULL:
            pass
        loads.append(model.occupancy / cfg.capacity)
    assert min(loads) > 0.5 and 0.6 < sum(loads) / len(loads) < 0.8


def run_rtl(cfg, ops, p_ready=0.7, p_valid=0.8, seed=5):
    dut = HashTable(cfg)
    codec = HtCodec(cfg)
    results = []

    async def sender(ctx):
        await stream_put(ctx, dut.cmd, [codec.pack_command(*op) for op in ops],
                         rng=random.Random(seed), p_valid=p_valid)

    async def receiver(ctx):
        bits = await stream_get(ctx, dut.result, len(ops), rng=random.Random(seed + 1),
                                p_ready=p_ready)
        results.extend(codec.unpack_result(b) for b in bits)
        state["occ"] = ctx.get(dut.occupancy)
        state["counters"] = (ctx.get(dut.lookups), ctx.get(dut.misses), ctx.get(dut.full))

    state = {}
    run_testbenches(dut, sender, receiver)
    return results, state


@pytest.mark.parametrize("p_ready", [1.0, 0.6])
def test_rtl_matches_model(p_ready):
    cfg = HashTableConfig(buckets=4, ways=2, key_width=16, value_width=8, tag_width=3)
    rng = random.Random(7)
    pool = [rng.getrandbits(16) for _ in range(14)]
    # back-to-back writes to the same two buckets exercise the read-during-write forwarding:
    # left, right, left, right, then FULL
    full = colliding_keys(cfg, 5, rng)
    ops = [(HtOp.ADD, k, 1 + i, 0) for i, k in enumerate(full)]
    ops += [(HtOp.LOOKUP, k, 0, 1) for k in full] + [(HtOp.REMOVE, full[0], 0, 2),
                                                      (HtOp.LEARN, full[2], 9, 3),
                                                      (HtOp.ADD, full[4], 7, 4)]
    ops += random_ops(rng, cfg, 600, pool)
    model = HashTableModel(cfg)
    expected = [model.command(*op) for op in ops]
    assert [r.status for r in expected[:5]] == [HtStatus.OK] * 4 + [HtStatus.FULL]
    got, state = run_rtl(cfg, ops, p_ready=p_ready, p_valid=1.0 if p_ready == 1.0 else 0.8)
    assert got == expected
    assert state["occ"] == model.occupancy
    assert state["counters"] == (model.lookups, model.misses, model.full)


# ---- the pipeline's hazards: a command right behind others of the same bucket / key ------------

#: the forwarding covers the commands up to 5 slots ahead (those whose writes a command's read
#: misses: its read is 5 edges before its decision's write); the tests go two further
DISTANCES = range(1, 5 + 3)


def run_timed(cfg, ops, p_ready=1.0, seed=5):
    """Drive ``ops`` (None: an idle cycle) back to back; returns the results, the accept cycle
    of every command, the cycle of every result, and the final counters."""
    dut = HashTable(cfg)
    codec = HtCodec(cfg)
    n = sum(op is not None for op in ops)
    log = {"accepts": [], "results": [], "bits": []}

    async def sender(ctx):
        for op in ops:
            if op is None:
                ctx.set(dut.cmd.valid, 0)
                await ctx.tick()
                continue
            ctx.set(dut.cmd.payload.as_value(), codec.pack_command(*op))
            ctx.set(dut.cmd.valid, 1)
            await ctx.tick().until(dut.cmd.ready)
        ctx.set(dut.cmd.valid, 0)

    async def monitor(ctx):
        rng, cycle = random.Random(seed), 0
        while len(log["bits"]) < n:
            ctx.set(dut.result.ready, rng.random() < p_ready)
            *_, cv, cr, rv, rr, payload = await ctx.tick().sample(
                dut.cmd.valid, dut.cmd.ready, dut.result.valid, dut.result.ready,
                dut.result.payload)
            if cv and cr:
                log["accepts"].append(cycle)
            if rv and rr:
                log["results"].append(cycle)
                log["bits"].append(payload.as_value().value)
            cycle += 1
        log["counters"] = (ctx.get(dut.occupancy), ctx.get(dut.lookups), ctx.get(dut.misses),
                           ctx.get(dut.full))

    run_testbenches(dut, sender, monitor)
    log["got"] = [codec.unpack_result(b) for b in log["bits"]]
    return log


def check_against_model(cfg, ops, **kw):
    model = HashTableModel(cfg)
    expected = [model.command(*op) for op in ops if op is not None]
    log = run_timed(cfg, ops, **kw)
    for i, (want, got) in enumerate(zip(expected, log["got"], strict=True)):
        assert got == want, f"result {i}: {got} != model {want}"
    assert log["counters"] == (model.occupancy, model.lookups, model.misses, model.full)
    return log, expected


HAZARD_CFG = HashTableConfig(buckets=16, ways=2, key_width=16, value_width=8, tag_width=3)


def hazard_ops(cfg, rng, filler):
    """For every distance d in DISTANCES, each hazard with its second command d slots behind the
    first (d - 1 fillers between): LOOKUP after ADD; REMOVE then ADD back; two ADDs of different
    keys to the same buckets (and a third, FULL, key); LEARN (refresh) then LOOKUP; REMOVE
    then LOOKUP; ADD then ADD (DUPLICATE); LEARN then LEARN (REFRESHED); REMOVE from a full
    pair of buckets then ADD.  ``filler``: "idle" (no command), "lookup" (absent keys of
    other buckets) or "write" (LEARN / REMOVE of keys of other buckets).  Each case ends with
    lookups of its keys and their removal, so the table is empty between cases."""
    ops, serial = [], iter(range(1, 1 << 20))

    def val():
        return next(serial) % (1 << cfg.value_width) or 1

    def group(n):
        """``n`` keys with the same two candidate buckets, and keys of other buckets."""
        keys = colliding_keys(cfg, n, rng)
        b0, b1 = cfg.buckets_of(keys[0])
        others = []
        while len(others) < 8:
            k = rng.getrandbits(cfg.key_width)
            c0, c1 = cfg.buckets_of(k)
            if c0 != b0 and c1 != b1:
                others.append(k)
        return keys, others

    def fill(count, others):
        out = []
        for i in range(count):
            if filler == "idle":
                out.append(None)
            elif filler == "lookup":
                out.append((HtOp.LOOKUP, others[i % 4], 0, 7))
            else:
                k = others[4 + (i // 2) % 4]
                out.append((HtOp.LEARN, k, val(), 6) if i % 2 == 0 else (HtOp.REMOVE, k, 0, 6))
        return out

    def settle(keys, others):
        """Spacing, then look every key up and remove it (and the fillers' keys)."""
        tail = [None] * (HashTable.LATENCY + 1)
        tail += [(HtOp.LOOKUP, k, 0, 5) for k in keys]
        tail += [(HtOp.REMOVE, k, 0, 5) for k in keys + others[4:]]
        return tail + [None] * (HashTable.LATENCY + 1)

    for d in DISTANCES:
        # LOOKUP after ADD
        (k,), oth = group(1)
        ops += [(HtOp.ADD, k, val(), 1)] + fill(d - 1, oth) + [(HtOp.LOOKUP, k, 0, 2)]
        ops += settle([k], oth)
        # REMOVE then ADD back (then LOOKUP at the same distance)
        (k,), oth = group(1)
        ops += [(HtOp.ADD, k, val(), 1)] + [None] * HashTable.LATENCY
        ops += [(HtOp.REMOVE, k, 0, 2)] + fill(d - 1, oth) + [(HtOp.ADD, k, val(), 3)]
        ops += fill(d - 1, oth) + [(HtOp.LOOKUP, k, 0, 4)]
        ops += settle([k], oth)
        # ADDs of different keys to the same buckets: each its own way, then FULL
        keys, oth = group(2 * cfg.ways + 1)
        for i, k in enumerate(keys):
            ops += ([] if i == 0 else fill(d - 1, oth)) + [(HtOp.ADD, k, val(), 1)]
        ops += settle(keys, oth)
        # LEARN (refresh) then LOOKUP; LEARN then LEARN
        (k,), oth = group(1)
        ops += [(HtOp.LEARN, k, val(), 1)] + fill(d - 1, oth) + [(HtOp.LEARN, k, val(), 2)]
        ops += fill(d - 1, oth) + [(HtOp.LOOKUP, k, 0, 3)]
        ops += settle([k], oth)
        # REMOVE then LOOKUP; ADD then ADD (DUPLICATE)
        (k,), oth = group(1)
        ops += [(HtOp.ADD, k, val(), 1)] + fill(d - 1, oth) + [(HtOp.ADD, k, val(), 2)]
        ops += fill(d - 1, oth) + [(HtOp.REMOVE, k, 0, 3)] + fill(d - 1, oth)
        ops += [(HtOp.LOOKUP, k, 0, 4)]
        ops += settle([k], oth)
        # a full pair of buckets: REMOVE one key, then ADD a new one in the freed way
        keys, oth = group(2 * cfg.ways + 1)
        ops += [(HtOp.ADD, k, val(), 1) for k in keys[:-1]]
        ops += [(HtOp.REMOVE, keys[d % (2 * cfg.ways)], 0, 2)] + fill(d - 1, oth)
        ops += [(HtOp.ADD, keys[-1], val(), 3)] + fill(d - 1, oth)
        ops += [(HtOp.LOOKUP, keys[-1], 0, 4)]
        ops += settle(keys, oth)
    return ops


@pytest.mark.parametrize("filler", ["idle", "lookup", "write"])
def test_hazards_back_to_back(filler):
    """Every hazard at every distance, one command per clock: exact results and counters, no
    bubble, a fixed latency."""
    cfg = HAZARD_CFG
    ops = hazard_ops(cfg, random.Random(3), filler)
    log, expected = check_against_model(cfg, ops)
    statuses = {(r.op, r.status) for r in expected}
    assert {(HtOp.ADD, HtStatus.FULL), (HtOp.ADD, HtStatus.DUPLICATE),
            (HtOp.LEARN, HtStatus.REFRESHED), (HtOp.LOOKUP, HtStatus.OK),
            (HtOp.LOOKUP, HtStatus.NOT_FOUND), (HtOp.REMOVE, HtStatus.OK)} <= statuses
    # one command per clock: the commands go in exactly on their slots, the results follow
    # at the pipeline's latency
    first, slots = log["accepts"][0], [i for i, op in enumerate(ops) if op is not None]
    assert log["accepts"] == [first + s for s in slots]
    assert log["results"] == [a + HashTable.LATENCY for a in log["accepts"]]


def test_hazards_with_back_pressure():
    """The same hazards with random result back-pressure (the pipeline stalls as a whole)."""
    cfg = HAZARD_CFG
    ops = hazard_ops(cfg, random.Random(4), "write")
    check_against_model(cfg, ops, p_ready=0.5, seed=11)


def hot_ops(cfg, rng, n):
    """Random commands over a few hot keys of two pairs of buckets (so full buckets, and keys
    coming and going in the same ways, back to back), some pool keys and fresh keys; runs of
    commands of one key; idle cycles now and then."""
    hot = colliding_keys(cfg, 2 * cfg.ways + 2, rng) + colliding_keys(cfg, 2 * cfg.ways, rng)
    pool = [rng.getrandbits(cfg.key_width) for _ in range(3 * cfg.capacity)]
    ops, key = [], hot[0]
    for _ in range(n):
        r = rng.random()
        if r < 0.05:
            ops.append(None)
            continue
        if r < 0.3:
            pass                                      # the same key again
        elif r < 0.75:
            key = rng.choice(hot)
        elif r < 0.95:
            key = rng.choice(pool)
        else:
            key = rng.getrandbits(cfg.key_width)
        op = rng.choices(list(HtOp), weights=(3, 3, 3, 2))[0]
        ops.append((op, key, rng.getrandbits(cfg.value_width), rng.getrandbits(cfg.tag_width)))
    return ops


@pytest.mark.parametrize("cfg", [
    HashTableConfig(buckets=4, ways=2, key_width=16, value_width=8, tag_width=3),
    HashTableConfig(buckets=16, ways=4, key_width=24, value_width=12, tag_width=2)],
    ids=["4x2", "16x4"])
def test_random_hot_keys(cfg):
    """A long seeded random run with hot keys and buckets against the model.  HT_COMMANDS sets
    the number of commands per configuration (default 2000; >= 100000 for a soak), HT_SEED
    the seed (printed)."""
    n = int(os.environ.get("HT_COMMANDS", "2000"))
    seed = int(os.environ.get("HT_SEED", "2024"))
    print(f"test_random_hot_keys: seed {seed} (HT_SEED), {n} commands (HT_COMMANDS)")
    ops = hot_ops(cfg, random.Random(seed), n)
    for p_ready in (1.0, 0.7):               # one command per clock; then back-pressure
        _, expected = check_against_model(cfg, ops, p_ready=p_ready, seed=seed)
        assert {r.status for r in expected} == set(HtStatus)


def test_counters_saturate():
    """8-bit counters: 300 lookups of absent keys and 300 refused ADDs, back to back, leave
    ``lookups``, ``misses`` and ``full`` at 255 (the counters saturate, never wrap), the
    occupancy at the 2 keys stored."""
    cfg = HashTableConfig(buckets=4, ways=1, key_width=8, value_width=4, counter_width=8)
    k0, k1, k2 = colliding_keys(cfg, 3, random.Random(7))
    absent = next(k for k in range(256) if k not in (k0, k1))
    ops = [(HtOp.ADD, k0, 1, 0), (HtOp.ADD, k1, 2, 0)]
    ops += [(HtOp.LOOKUP, absent, 0, 0)] * 300 + [(HtOp.ADD, k2, 3, 0)] * 300
    log = run_timed(cfg, ops)
    assert [r.status for r in log["got"][-300:]] == [HtStatus.FULL] * 300
    assert log["counters"] == (2, 255, 255, 255)


@pytest.mark.parametrize("buckets", [4, 16])
def test_reset_sweep_clears_the_table(buckets):
    """A reset after the table was filled: block RAM contents survive ``rst``, so the reset
    sweep (``buckets / 2`` cycles, ``cmd.ready`` low) must invalidate every way: afterwards
    every key is absent (NOT_FOUND, value 0), the occupancy 0, and a new key goes in.  The
    sweep's length by hand: ``clearing`` is set by the reset and ends when its index has
    passed every bucket of a side, so ``cmd.ready`` rises exactly ``buckets / 2`` cycles after
    the reset's edge (2 and 8 here: at 4 buckets a sweep one cycle long or short still covers
    both of a side's buckets, at 16 it does not)."""
    cfg = HashTableConfig(buckets=buckets, ways=2, key_width=8, value_width=4, counter_width=8)
    keys = list(range(1, 17))       # 16 keys: every way filled at 4 buckets
    after = [(HtOp.LOOKUP, k, 0, 0) for k in keys] + [(HtOp.ADD, 99, 5, 1),
                                                      (HtOp.LOOKUP, 99, 0, 1)]
    rst = Signal()
    dut = HashTable(cfg)
    top = Module()
    top.submodules.dut = ResetInserter(rst)(dut)
    codec = HtCodec(cfg)
    got, log = [], {}

    async def sender(ctx):
        await stream_put(ctx, dut.cmd, [codec.pack_command(HtOp.ADD, k, k % 16) for k in keys])
        while len(got) < len(keys):
            await ctx.tick()
        log["occupancy_before"] = ctx.get(dut.occupancy)
        ctx.set(rst, 1)
        await ctx.tick()
        ctx.set(rst, 0)
        waited = 0
        while not ctx.get(dut.cmd.ready):
            await ctx.tick()
            waited += 1
        log["ready_after"] = waited
        await stream_put(ctx, dut.cmd, [codec.pack_command(*op) for op in after])

    async def monitor(ctx):
        ctx.set(dut.result.ready, 1)
        await stream_get(ctx, dut.result, len(keys) + len(after), into=got)
        log["occupancy_after"] = ctx.get(dut.occupancy)

    sim = Simulator(top)
    sim.add_clock(4e-9)
    sim.add_testbench(sender)
    sim.add_testbench(monitor)
    sim.run()
    res = [codec.unpack_result(b) for b in got]
    added = sum(r.status == HtStatus.OK for r in res[:16])
    assert added == log["occupancy_before"] and added == (8 if buckets == 4 else 16)
    assert log["ready_after"] == buckets // 2
    assert [(r.status, r.value) for r in res[16:32]] == [(HtStatus.NOT_FOUND, 0)] * 16
    assert [(r.status, r.value) for r in res[32:]] == [(HtStatus.OK, 0), (HtStatus.OK, 5)]
    assert log["occupancy_after"] == 1
