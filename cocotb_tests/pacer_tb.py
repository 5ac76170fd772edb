"""cocotb testbench of the multi-flow pacer top (``pacer_1k``: hw/nic/pacer.py in the engine).

It drives the DUT and the cycle-accurate model (:class:`sim.models.flow_engine.FlowEngineModel`
with :class:`sim.models.pacer.PacerDatapathModel`) in lock step through the generic engine
testbench (:class:`cocotb_tests.flow_engine_tb.FlowEngineTB`: every input's ready, every
``rate`` (grant) and ``rd`` record, ``csr_rdata`` compared every cycle) and adds a NIC: half of
the flows are in byte mode, and every grant of such a flow taken from ``rate`` is answered with
a size report on ``tx`` (ahead of the other tx events), as the NIC would report the size of the
packet it sent (in a byte-mode build, ``PacerConfig.byte_mode``; the default ``pacer_1k`` is a
packet-only build: every flow paces packets).  Random traffic: packet enqueues on hot flows (the
same flow for long stretches) and over every flow, pulls (empty ``tx``: work-conserving mode),
interval changes (``cn``), READs, rewrites of the ``burst`` and ``wc`` registers and random
back-pressure on the grant stream (``rate.ready``) and on ``rd``.  At the end every
packet enqueued must have been granted exactly once (speed-ups and reports drain the flows),
every flow is READ and every counter read back.

The runner (cocotb_tests/test_pacer_engine.py) sets ``CC_TOP``, ``CC_MODEL_DP``,
``CC_ENGINE_CONFIG`` (the top's configuration, possibly with a smaller wheel), ``CC_EVENTS``
(input events) and the seed (``CC_DEFAULT_SEED`` / ``CC_SEED``).
"""

from __future__ import annotations

import time

import cocotb

from cocotb_tests.flow_engine_tb import FlowEngineTB
from cocotb_tests.infra.tb import env_count, env_seed
from hw.nic.flow_datapath import CtlOp

#: state field numbers of the pacer (ctl WRITE)
IVAL, BYTES = 4, 5
#: register addresses
REG_BURST, REG_WC = 1, 2


class PacerTB(FlowEngineTB):
    """:class:`FlowEngineTB` with a NIC that reports the size of every byte-mode grant."""

    def __init__(self, dut, seed: int):
        super().__init__(dut, seed)
        pc = self.dp.config
        self.pc = pc
        self.F = pc.frac_bits
        self.byte_flows: set[int] = set()
        self.granted = [0] * self.cfg.n_flows
        self.reported = 0
        self._fmask = (1 << self.lay["rate"]["flow"].width) - 1
        self._vshift = self.lay["rate"]["rate"].offset
        step = self.model.step

        def step_and_report(**kw):
            # the model's outputs equal the DUT's (checked by run): a grant taken from rate is
            # answered by a size report at the head of the tx queue
            o = step(**kw)
            if o.rate is not None and kw.get("rate_ready"):
                flow, value = o.rate & self._fmask, o.rate >> self._vshift
                if value:
                    self.granted[flow] += 1
                    if flow in self.byte_flows:
                        size = self.rng.randrange(64, 1501)
                        self.queues["tx"].insert(0, (flow, pc.tx_payload(0, size)))
                        self.reported += 1
            return o
        self.model.step = step_and_report

    def interval(self, flow: int) -> int:
        """A random interval of the flow's mode: 0.02 ... 0.3 cycles per byte, or 7 ... 400
        cycles per packet (UQ.F)."""
        one = 1 << self.F
        if flow in self.byte_flows:
            return self.rng.randrange(one // 50, one * 3 // 10)
        return self.rng.randrange(7 * one, 400 * one)


def queue_traffic(tb: PacerTB, n_events: int) -> list[int]:
    """``n_events`` input events; returns the packets enqueued per flow."""
    rng, N = tb.rng, tb.cfg.n_flows
    enq = [0] * N
    hot, hot_left = 0, 0
    for _ in range(n_events):
        if hot_left == 0 and rng.random() < 0.003:
            hot, hot_left = rng.randrange(N), rng.randint(50, 1000)
        if hot_left:
            hot_left -= 1
            f = hot if rng.random() < 0.8 else rng.randrange(N)
        else:
            f = rng.randrange(N)
        x = rng.random()
        if x < 0.12:
            tb.queues["cn"].append((f, tb.interval(f)))
        elif x < 0.14:
            tb.queues["ctl"].append((f, CtlOp.READ, 0, 0))
        elif x < 0.1405:
            tb.queues["csr_w"].append((REG_BURST, rng.choice([0, 5, 100, 2000,
                                                              tb.pc.burst_max])))
        elif x < 0.141:
            tb.queues["csr_w"].append((REG_WC, rng.randrange(2)))
        elif x < 0.19:
            tb.queues["tx"].append((f, 0))               # a pull (work-conserving mode)
        else:
            k = rng.randint(1, 4)
            enq[f] += k
            tb.queues["tx"].append((f, tb.pc.tx_payload(k, 0)))
    return enq


@cocotb.test()
async def random_grants(dut):
    """START every flow (odd flows in byte mode in a byte-mode build), random traffic with hot
    flows, pulls and back-pressure, every output compared every cycle; then every packet
    granted exactly once, every flow READ, every counter read back, the wheel never
    overflowed."""
    tb = PacerTB(dut, env_seed(1))
    n_events = env_count("CC_EVENTS", 3000)
    N = tb.cfg.n_flows
    await tb.start()
    tb.byte_flows = set(range(1, N, 2)) if tb.pc.byte_mode else set()
    for f in range(N):
        tb.queues["ctl"].append((f, CtlOp.START, 0, 0))
        tb.queues["ctl"].append((f, CtlOp.WRITE, IVAL, tb.interval(f)))
        if f in tb.byte_flows:
            tb.queues["ctl"].append((f, CtlOp.WRITE, BYTES, 1))
    await tb.drain()
    enq = queue_traffic(tb, n_events)
    tb.p_valid = {"tx": 0.9, "cn": 0.5, "ctl": 0.5, "csr_w": 0.5}
    tb.p_rate_ready, tb.p_rd_ready = 0.8, 0.7
    t0, c0, e0 = time.perf_counter(), tb.cycles, tb.model.issued
    await tb.drain()
    # drain the backlogs: no cap, every flow sped up (1 cycle per byte / 8 per packet)
    tb.p_rate_ready = 1.0
    tb.queues["csr_w"].append((REG_BURST, tb.pc.burst_max))
    one = 1 << tb.F
    for f in range(N):
        if tb.model.flows[f].algo["backlog"]:
            tb.queues["cn"].append((f, one // 64 if f in tb.byte_flows else 8 * one))
    for _ in range(200):
        await tb.run(500)
        if tb.granted == enq and not tb.model.busy() and not any(tb.queues.values()):
            break
    dt = time.perf_counter() - t0
    events = tb.model.issued - e0
    cycles = tb.cycles - c0
    assert tb.granted == enq, "a packet was not granted exactly once"
    await tb.read_every_flow()
    counters = await tb.read_all_counters()
    tb.log.info("%d flows, %d input events + %d size reports, %d events issued (incl. timer "
                "pops) in %d cycles, %d grants, late_max %d; %.1f s, %.0f cycles/s wall",
                N, n_events, tb.reported, events, cycles, sum(enq), counters["late_max"], dt,
                cycles / dt)
    assert counters["overflow"] == 0 and counters["overflow_count"] == 0
    assert counters["expiries"] == sum(enq)
