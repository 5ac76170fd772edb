"""cocotb testbench: the exported L3QCN congestion point (modes ``roce`` and ``qcn``) and the
ingress ToR's converter, against the bit-exact models of :mod:`sim.models.l3qcn`.

Run through ``cocotb_tests/test_l3qcn.py`` with the top's name in ``CC_TOP``.  Inputs go in
through StreamDrivers with random idle cycles, output packets are taken with random
back-pressure, assembled through ``keep`` and compared byte for byte, in order, with the model's;
a share of them is also checked against scapy (the CNP with ``scapy.contrib.roce``, the private
CNM's IPv4/UDP checksums, the CNM's 802.1Qau PDU through an independent parse).  Table
management / learning and the data path run in alternate phases (the order in which the RTL
interleaves the two when they overlap is a timing matter, not a functional one); the counters
are compared at the end of every phase.
"""

from __future__ import annotations

import os
import random

import cocotb
from cocotb.triggers import ClockCycles, RisingEdge

from cocotb_tests.infra.scoreboard import Scoreboard
from cocotb_tests.infra.stream import Pattern, StreamDriver, StreamMonitor
from cocotb_tests.infra.tb import TBBase, env_count, env_seed
from cocotb_tests.l3qcn_tables_tb import feed
from gateware.tops import TOPS
from hw.layouts import (
    HtOp,
    LayoutCodec,
    l3qcn_frame_layout,
    tor_learn_layout,
)
from sim.models.cnp import CnpRequest, frame_beats
from sim.models.hash_table import HtCodec
from sim.models.l3qcn import (
    FiveTuple,
    FlowInfo,
    L3qcnCpModel,
    L3qcnFrame,
    PrivateCnmRequest,
    TorModel,
    build_private_cnm,
    cnp_qp_key,
    five_tuple_key,
    flow_info_value,
    parse_private_cnm,
)
from sim.models.packets import FrameAssembler
from tests.test_cnm import parse_cnm
from tests.test_cnp import scapy_frame
from tests.test_l3qcn import check_private_cnm, mutations, random_flow, random_private_request


class PacketTB(TBBase):
    """Collects the byte stream ``out`` into packets compared with the expected ones."""

    def __init__(self, dut, seed, out: str, data_bytes: int, backpressure=None):
        super().__init__(dut, seed)
        self.assembler = FrameAssembler(data_bytes)
        self.packets = Scoreboard(out)
        self.checked = 0
        self.out_monitor = StreamMonitor(dut, out, dut.clk, self._beat, backpressure)

    def _beat(self, bits):
        frame = self.assembler.push(bits)
        if frame is not None:
            self.packets.compare(frame)

    async def settle(self, drivers, what):
        await self.wait_until(lambda: all(not d.queue for d in drivers)
                              and not self.packets.expected, 200_000, what)
        # the last packet's tail and the counters: a private CNM is 19 cycles in the ToR after
        # its last beat (checksum pipeline 8 + 1, classify, command register, lookup 6,
        # hand-over: docs/l3qcn.md), so a miss is counted up to 19 cycles after the last beat
        await ClockCycles(self.dut.clk, 24)

    def counters(self, names):
        return {n: int(getattr(self.dut, n).value) for n in names}


async def start_tb(dut, tb_class):
    """The top's configuration (``CC_TOP``) and a started testbench with 30 % idle cycles and
    30 % back-pressure, seeded by ``CC_SEED`` or ``CC_DEFAULT_SEED``."""
    cfg = TOPS[os.environ["CC_TOP"]].config
    seed = env_seed(1)
    prng = random.Random(seed + 1)
    tb = tb_class(dut, cfg, seed, Pattern.random(0.7, prng), Pattern.random(0.7, prng))
    await tb.start()
    return cfg, tb


# ================================================================================================
# Congestion point
# ================================================================================================

class CpTB(PacketTB):
    def __init__(self, dut, cfg, seed, idle, backpressure):
        super().__init__(dut, seed, "packet", cfg.private.data_bytes, backpressure)
        self.cfg, self.model = cfg, L3qcnCpModel(cfg)
        codec = LayoutCodec(l3qcn_frame_layout(cfg))
        self.frames = StreamDriver(dut, "frame", dut.clk, idle, on_accept=self._frame,
                                   encode=lambda f: codec.pack(self._fields(f)))
        self.drivers = [self.frames]
        if cfg.mode == "roce":
            ht = HtCodec(cfg.table_config())
            self.results = Scoreboard("table_result")
            self.mgmt = StreamDriver(dut, "table_cmd", dut.clk, idle, on_accept=self._mgmt,
                                     encode=lambda c: ht.pack_command(*c))
            self.mgmt_monitor = StreamMonitor(dut, "table_result", dut.clk,
                                              self.results.compare, backpressure,
                                              decode=ht.unpack_result)
            self.drivers.append(self.mgmt)

    def _fields(self, f: L3qcnFrame) -> dict:
        d = dict(qlen=f.qlen, length=f.length, src_ip=f.src_ip, dst_ip=f.dst_ip, sport=f.sport)
        if self.cfg.mode == "roce":
            d.update(dqpn=f.dqpn, roce=int(f.roce))
        else:
            d.update(dport=f.dport, protocol=f.protocol, prio=f.prio, ip_len=f.ip_len,
                     sample=int.from_bytes(f.sample, "little"))
        return d

    async def start(self):
        await self.reset()
        for coro in [self.frames.run(), self.out_monitor.run()] + (
                [self.mgmt.run(), self.mgmt_monitor.run()] if self.cfg.mode == "roce" else []):
            cocotb.start_soon(coro)

    def _mgmt(self, c):
        self.results.expect(self.model.table.table.command(*c))

    def _frame(self, f: L3qcnFrame):
        pkt = self.model.frame(f)
        if pkt is None:
            return
        self.packets.expect(pkt)
        if self.model.notifications % 4 == 1:       # independent checks of the model's bytes
            if self.cfg.mode == "roce":
                qp = int.from_bytes(pkt[20 + 8 + 5:20 + 8 + 8], "big")
                assert pkt == scapy_frame(self.cfg.cnp, self.model.cnp.regs, CnpRequest(
                    dqpn=qp, src_ip=f.dst_ip, dst_ip=f.src_ip, udp_sport=f.sport))
            else:
                p = parse_private_cnm(self.cfg.private, pkt)
                check_private_cnm(self.cfg.private, pkt, PrivateCnmRequest(
                    FiveTuple(f.src_ip, f.dst_ip, f.sport, f.dport, f.protocol), p.qntz_fb,
                    p.q_off, p.q_delta, f.prio, f.ip_len, f.sample))
            self.checked += 1

    def check_counters(self):
        m = self.model
        names = ["notifications"] + (["no_qp", "not_roce"] if self.cfg.mode == "roce" else [])
        want = {n: getattr(m, n) for n in names}
        assert self.counters(names) == want, f"{self.counters(names)} != model {want}"


def cp_frames(tb: CpTB, flows, n):
    rng = tb.rng
    for _ in range(n):
        flow = rng.choice(flows)
        # mostly well above Q_eq (CNMs of every qntzFb band), sometimes below (no CNM)
        qlen = rng.choice((rng.randrange(0, 40_000), rng.randrange(26_000, 200_000),
                           rng.randrange(100_000, 1 << 24)))
        common = dict(qlen=qlen, length=rng.randrange(64, 9001), src_ip=flow[0],
                      dst_ip=flow[1], sport=rng.getrandbits(16))
        if tb.cfg.mode == "roce":
            yield L3qcnFrame(**common, dqpn=flow[2], roce=rng.random() < 0.95)
        else:
            yield L3qcnFrame(**common, dport=flow[3], protocol=flow[4], prio=rng.randrange(8),
                             ip_len=rng.choice((20, 40, rng.randrange(20, 9001))),
                             sample=rng.randbytes(tb.cfg.private.sample_bytes))


@cocotb.test()
async def cp_random_frames(dut):
    cfg, tb = await start_tb(dut, CpTB)
    rng = tb.rng
    flows = [(rng.getrandbits(32), rng.getrandbits(32), rng.getrandbits(24), rng.getrandbits(16),
              rng.choice((6, 17))) for _ in range(300)]
    n = env_count("CC_FRAMES", 20000)
    for phase in range(4):
        if cfg.mode == "roce":          # add 2/3 of the flows; later remove some, re-add some
            cmds = [(HtOp.ADD if rng.random() < 0.7 - 0.2 * phase else HtOp.REMOVE,
                     cnp_qp_key(f[1], f[2]), rng.getrandbits(24), 0) for f in flows]
            cmds += [(HtOp.LOOKUP, cnp_qp_key(f[1], f[2]), 0, 0) for f in flows[:20]]
            await feed(tb, tb.mgmt, cmds)
            await tb.wait_until(lambda: not tb.mgmt.queue and not tb.results.expected,
                                100_000, "table results")
            await RisingEdge(dut.clk)
        await feed(tb, tb.frames, cp_frames(tb, flows, n // 4))
        await tb.settle(tb.drivers, "notifications")
        tb.check_counters()
    tb.packets.assert_empty()
    m = tb.model
    tb.log.info("%d frames, %d samples, %d CNMs, %d packets compared (%d checked against "
                "scapy), counters %s", n, m.cp.samples, m.cp.cnms, tb.packets.matched,
                tb.checked, tb.counters(["notifications"] + (
                    ["no_qp", "not_roce"] if cfg.mode == "roce" else [])))
    assert tb.packets.matched == m.notifications > n // 150 and tb.checked > n // 800
    if cfg.mode == "roce":      # every CNM decision: a CNP, a table miss or not RoCEv2
        assert m.notifications + m.no_qp + m.not_roce == m.cp.cnms
        assert m.no_qp > 20 and m.not_roce > 5 and tb.results.matched > 1000


# ================================================================================================
# ToR
# ================================================================================================

class TorTB(PacketTB):
    def __init__(self, dut, cfg, seed, idle, backpressure):
        super().__init__(dut, seed, "cnm", cfg.private.data_bytes, backpressure)
        self.cfg, self.model = cfg, TorModel(cfg)
        learn = LayoutCodec(tor_learn_layout())
        self.learns = StreamDriver(dut, "learn", dut.clk, idle, on_accept=self._learn,
                                   encode=lambda fl: learn.pack({
                                       "flow": five_tuple_key(fl[0]),
                                       "info": flow_info_value(fl[1])}))
        self.beats = StreamDriver(dut, "packet", dut.clk, idle, on_accept=self._beat_in,
                                  encode=lambda b: b[0])
        self.drivers = [self.learns, self.beats]
        self.kinds: dict = {}

    async def start(self):
        await self.reset()
        for coro in (self.learns.run(), self.beats.run(), self.out_monitor.run()):
            cocotb.start_soon(coro)

    def _learn(self, fl):
        self.model.learn(*fl)

    def _beat_in(self, b):
        if b[1] is None:
            return
        cnm = self.model.receive(b[1])
        if cnm is not None:
            self.packets.expect(cnm)
            if self.model.cnms % 3 == 1:          # the CNM's PDU against the private CNM
                p = parse_private_cnm(self.cfg.private, b[1])
                c = parse_cnm(cnm)
                assert (c["qntz_fb"], c["cpid"], c["q_off"], c["q_delta"], c["msdu_len"]) == \
                    (p.qntz_fb, p.cpid, p.q_off, p.q_delta, p.msdu_len)
                self.checked += 1

    def beats_of(self, pkt: bytes) -> list:
        """The packet's beats; the last one also carries the whole packet for the model."""
        beats = frame_beats(self.cfg.private, pkt)
        return [(b, None) for b in beats[:-1]] + [(beats[-1], pkt)]

    def check_counters(self):
        m = self.model
        names = ["cnms", "other", "malformed", "misses", "full", "occupancy"]
        want = {n: getattr(m, n) for n in names[:-1]} | {"occupancy": m.flows.table.occupancy}
        assert self.counters(names) == want, f"{self.counters(names)} != model {want}"


@cocotb.test()
async def tor_random_packets(dut):
    cfg, tb = await start_tb(dut, TorTB)
    rng = tb.rng
    capacity = cfg.table_config().capacity
    flows = [random_flow(rng) for _ in range(capacity * 3 // 2)]     # more than fit
    n = env_count("CC_PACKETS", 3000)
    for phase in range(3):
        learns = [(f, FlowInfo(rng.getrandbits(48), rng.getrandbits(16), rng.getrandbits(12)))
                  for f in rng.sample(flows, len(flows) // (1 + phase))]
        await feed(tb, tb.learns, learns, limit=64)
        await tb.settle(tb.drivers, "learns")
        beats = []
        for _ in range(n // 3):
            pkt = build_private_cnm(cfg.private, random_private_request(rng, rng.choice(flows)))
            r = rng.random()
            if r < 0.15:
                _, pkt = rng.choice(mutations(cfg.private, pkt, rng))
            elif r < 0.2:
                pkt = rng.randbytes(rng.randrange(1, 200))
            beats += tb.beats_of(pkt)
        await feed(tb, tb.beats, beats, limit=128)
        await tb.settle(tb.drivers, "CNMs")
        tb.check_counters()
    tb.packets.assert_empty()
    m = tb.model
    tb.log.info("%d packets: %d CNMs compared (%d PDUs checked), other %d, malformed %d, "
                "misses %d, full %d", n, tb.packets.matched, tb.checked, m.other,
                m.malformed, m.misses, m.full)
    assert tb.packets.matched > n // 3 and m.misses > 50 and m.full > 50
    assert m.malformed > 50 and m.other > 50
