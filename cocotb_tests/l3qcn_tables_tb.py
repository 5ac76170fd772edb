"""cocotb testbench: an exported L3QCN hash table (CNP-QP or flow-ID mapping), command by
command, against the bit-exact model :class:`sim.models.hash_table.HashTableModel`.

Run through ``cocotb_tests/test_l3qcn_tables.py`` with the top's name in ``CC_TOP``.  Commands
go in through a StreamDriver with random idle cycles, results are taken with random
back-pressure and compared in order (op, status, key, value before the command, tag); the
counters and the occupancy are compared at the end.  The workload fills the table past its
capacity (FULL), looks up present keys, absent keys and keys one bit away from present ones
(a miss never returns another key's value), mixes the four commands over a key pool with
duplicates, and removes everything again; every status must have been seen.
"""

from __future__ import annotations

import os
import random

import cocotb
from cocotb.triggers import ClockCycles, RisingEdge

from cocotb_tests.infra.scoreboard import Scoreboard
from cocotb_tests.infra.stream import Pattern, StreamDriver, StreamMonitor
from cocotb_tests.infra.tb import TBBase, env_count, env_seed, test_seed
from gateware.tops import TOPS
from hw.layouts import HtOp, HtStatus
from hw.switch.hash_table import HashTable
from sim.models.hash_table import HashTableModel, HtCodec


async def feed(tb: TBBase, driver: StreamDriver, items, limit: int = 64):
    """Queue ``items`` on ``driver``, waiting whenever more than ``limit`` are queued."""
    for item in items:
        driver.send(item)
        if len(driver.queue) > limit:
            await tb.wait_until(lambda: len(driver.queue) < limit // 4, 200_000, "driver")
            await RisingEdge(tb.dut.clk)


class TableTB(TBBase):
    def __init__(self, dut, cfg, seed, idle=None, backpressure=None):
        super().__init__(dut, seed)
        self.cfg, self.model, codec = cfg, HashTableModel(cfg), HtCodec(cfg)
        self.scoreboard = Scoreboard("result")
        self.statuses: dict = {}
        self.driver = StreamDriver(dut, "cmd", dut.clk, idle, on_accept=self._accept,
                                   encode=lambda c: codec.pack_command(*c))
        self.monitor = StreamMonitor(dut, "result", dut.clk, self.scoreboard.compare,
                                     backpressure, decode=codec.unpack_result)

    async def start(self):
        await self.reset()
        cocotb.start_soon(self.driver.run())
        cocotb.start_soon(self.monitor.run())

    def _accept(self, c):
        r = self.model.command(*c)
        key = (r.op, r.status)
        self.statuses[key] = self.statuses.get(key, 0) + 1
        self.scoreboard.expect(r)

    async def send_all(self, commands):
        await feed(self, self.driver, commands)
        await self.wait_until(lambda: not self.driver.queue and not self.scoreboard.expected,
                              100_000, "all results")

    async def check_counters(self):
        """Called in the read-only phase where ``send_all`` returned: the last result's edge
        also updated the counters."""
        m, d = self.model, self.dut
        got = (int(d.occupancy.value), int(d.lookups.value), int(d.misses.value),
               int(d.full.value))
        want = (m.occupancy, m.lookups, m.misses, m.full)
        assert got == want, f"occupancy/lookups/misses/full {got} != model {want}"
        await RisingEdge(self.dut.clk)


def workload(rng: random.Random, cfg, n: int):
    """Yields phases of commands (op, key, value, tag); about ``n`` commands in all."""
    kw, vw, tw = cfg.key_width, cfg.value_width, cfg.tag_width

    def cmd(op, key):
        return (op, key, rng.getrandbits(vw), rng.getrandbits(tw))

    pool = [rng.getrandbits(kw) for _ in range(cfg.capacity * 3 // 2)]
    # 1. fill past the capacity, interleaved with lookups of present, absent and near keys
    fill = []
    for i, k in enumerate(pool):
        fill.append(cmd(HtOp.ADD if i % 2 else HtOp.LEARN, k))
        probe = rng.choice(pool[:i + 1])
        fill.append(cmd(HtOp.LOOKUP, rng.choice((probe, probe ^ 1 << rng.randrange(kw),
                                                 rng.getrandbits(kw)))))
    yield fill
    # 2. a random mix of the four commands over the pool (duplicates, refreshes, full buckets)
    mix, fresh = [], []
    for _ in range(max(0, n - 3 * len(pool))):
        key = rng.choice(pool)
        if rng.random() < 0.1:
            key = rng.getrandbits(kw)
            fresh.append(key)
        mix.append(cmd(rng.choices(list(HtOp), weights=(5, 2, 2, 2))[0], key))
    yield mix
    pool += fresh
    # 3. remove every key of the pool (absent ones: NOT_FOUND), then look a few up
    yield [cmd(HtOp.REMOVE, k) for k in pool] + [cmd(HtOp.LOOKUP, k) for k in pool[:64]]


@cocotb.test()
async def random_commands(dut):
    cfg = TOPS[os.environ["CC_TOP"]].config
    seed = env_seed(1)
    prng = random.Random(seed + 1)
    tb = TableTB(dut, cfg, seed, Pattern.random(0.8, prng), Pattern.random(0.8, prng))
    await tb.start()
    n = env_count("CC_COMMANDS", 30000)
    for phase in workload(tb.rng, cfg, n):
        await tb.send_all(phase)
        await tb.check_counters()
    tb.scoreboard.assert_empty()
    assert tb.model.occupancy == 0
    seen = {s for _, s in tb.statuses}
    tb.log.info("%d commands compared; statuses %s", tb.scoreboard.matched,
                {f"{o.name}/{s.name}": c for (o, s), c in sorted(
                    tb.statuses.items(), key=lambda kv: (kv[0][0].value, kv[0][1].value))})
    assert seen == set(HtStatus) and tb.scoreboard.matched >= n
    assert tb.statuses[(HtOp.LOOKUP, HtStatus.NOT_FOUND)] > 100
    assert tb.statuses[(HtOp.ADD, HtStatus.FULL)] > 50


@cocotb.test()
async def one_per_clock(dut):
    """Always-valid source and always-ready sink: one result per clock, the first
    ``HashTable.LATENCY`` (7) edges after the first command (after the reset-time clearing of
    every bucket)."""
    cfg = TOPS[os.environ["CC_TOP"]].config
    tb = TableTB(dut, cfg, test_seed(9))
    cycles: list[int] = []
    compare = tb.monitor.callback
    tb.monitor.callback = lambda r: (cycles.append(tb.cycle()), compare(r))
    accepts: list[int] = []
    on_accept = tb.driver.on_accept
    tb.driver.on_accept = lambda c: (accepts.append(tb.cycle()), on_accept(c))
    await tb.start()
    keys = [tb.rng.getrandbits(cfg.key_width) for _ in range(200)]
    await tb.send_all([(HtOp.ADD, k, 1, 0) for k in keys] + [(HtOp.LOOKUP, k, 0, 0)
                                                              for k in keys])
    await ClockCycles(dut.clk, 2)
    assert cycles == list(range(cycles[0], cycles[0] + 400)), "a bubble in the results"
    assert accepts == list(range(accepts[0], accepts[0] + 400)), "a bubble in the commands"
    assert cycles[0] - accepts[0] == HashTable.LATENCY
    assert accepts[0] >= cfg.buckets        # cleared first
