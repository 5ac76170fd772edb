"""Generic L3QCN hash table: configuration errors, the model against an independent dict
reference, and the RTL in Amaranth's simulator against the model, op by op (the long runs are
in cocotb_tests/test_l3qcn_tables.py)."""

import random

import pytest

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
