"""hw.lib.pipemul: the pipelined shift-and-add product against Python's, with stalls."""

import random

import pytest
from amaranth.hdl import Fragment, Module, Signal

from hw.lib.pipemul import pipelined_product, product_levels
from tests.streams import run_testbenches


# wb = 3 and 7 build an adder group of odd size 3 (the pairwise tree's unpaired last term);
# stages == levels is the fewest stages allowed (1 for wb = 3, 2 for wb = 7)
@pytest.mark.parametrize("wa,wb,stages", [(24, 17, None), (7, 5, 4), (3, 1, None),
                                          (5, 3, None), (6, 3, 1), (4, 7, 2)])
def test_product_after_latency_edges_with_stalls(wa, wb, stages):
    m = Module()
    a, b, en = Signal(wa), Signal(wb), Signal()
    product, latency = pipelined_product(m, a, b, en=en, stages=stages)
    assert latency == (stages or product_levels(wb))
    rng = random.Random(11)
    ops = [(rng.choice((0, (1 << wa) - 1, rng.getrandbits(wa))),
            rng.choice((0, (1 << wb) - 1, rng.getrandbits(wb)))) for _ in range(300)]
    got = []

    async def bench(ctx):
        pending = list(ops) + [(0, 0)] * latency
        while pending:
            stall = rng.random() < 0.3
            ctx.set(en, not stall)
            ctx.set(a, pending[0][0])
            ctx.set(b, pending[0][1])
            await ctx.tick()
            if not stall:
                pending.pop(0)
                got.append(ctx.get(product))

    run_testbenches(m, bench)
    # the product of the operands presented at enabled edge i appears after edge i + latency
    assert got[latency - 1:latency - 1 + len(ops)] == [x * y for x, y in ops]


def test_levels_and_too_few_stages():
    assert [product_levels(n) for n in (1, 4, 5, 16, 17, 25, 64, 65)] == [1, 1, 2, 2, 3, 3, 3, 4]
    m = Module()
    with pytest.raises(ValueError, match="needs 3 stages"):
        pipelined_product(m, Signal(4), Signal(17), stages=2)
    Fragment.get(m, None)
    # exactly the levels the tree needs is enough
    for wb in (1, 3, 5, 17):
        m = Module()
        _, latency = pipelined_product(m, Signal(4), Signal(wb), stages=product_levels(wb))
        assert latency == product_levels(wb)
        Fragment.get(m, None)
