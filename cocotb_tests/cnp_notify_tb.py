"""cocotb testbench: the NIC notification path (:class:`hw.nic.cnp_notify.CnpNotify`, top
``cnp_notify``), RoCEv2 packets in through cocotbext-axi's ``AxiStreamSource``, CNPs out into an
``AxiStreamSink``.

Received packets and expected CNPs are built by scapy (``scapy.contrib.roce``): the CNP a NIC
sends for a CE-marked packet goes back to the packet's source (IP and MAC swapped), to the
DestQP of the flow's table entry, with the generator's register values
(:func:`tests.test_cnp.scapy_frame`).  The per-QP table is written through the register port.

* ``registers``: the table written and read back, the generator's and the NP's forwarded
  registers, the counters, the identification header.
* ``directed``: a non-ECN packet gives nothing; a CE packet gives its CNP (latency measured
  against the block's docstring); more CE packets inside the pacing window give nothing until
  the window ends, then exactly one CNP; malformed frames (bad IPv4 checksum, truncated, bad
  UDP length, a fragment, the MAC's bad-frame ``tuser``, a runt) are counted and dropped;
  non-RoCEv2 frames (ARP, other UDP, a received CNP) ignored; an unknown QP counted; a VLAN
  tagged packet served; frames back to back at one beat per clock.
* ``random_traffic``: ``CC_EVENTS`` random frames of every kind with random idle cycles on the
  source and random back-pressure on the sink; each flow's CE packets are spaced beyond the
  pacing window, so each gives one CNP; the CNPs received equal the expected ones (as a
  multiset: CNPs of different flows may leave in another order) and every counter matches.
Every queue is empty at the end.
"""

from __future__ import annotations

import logging
import random
import warnings
from collections import Counter
from dataclasses import dataclass

import cocotb
from cocotb.triggers import ClockCycles, ReadOnly, RisingEdge, with_timeout
from cocotbext.axi import AxiStreamBus, AxiStreamFrame, AxiStreamSink, AxiStreamSource
from scapy.contrib.roce import BTH, CNPPadding
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import ARP, Dot1Q, Ether
from scapy.packet import Raw

from cocotb_tests.infra.stream import StreamDriver
from cocotb_tests.infra.tb import CLOCK_PERIOD_NS, TBBase, env_config, env_count, env_seed
from hw.layouts import csr_write_layout
from hw.nic.cnp_config import CnpReg
from hw.nic.cnp_notify_config import CnpNotifyConfig
from sim.models.cnp import CnpRequest
from tests.test_cnp import scapy_frame

warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"cocotbext\.")


def _mac(x: int) -> str:
    return ":".join(f"{b:02x}" for b in x.to_bytes(6, "big"))


def _ip(x: int) -> str:
    return ".".join(str(b) for b in x.to_bytes(4, "big"))


def _int_ip(s: str) -> int:
    return int.from_bytes(bytes(int(p) for p in s.split(".")), "big")


def _int_mac(s: str) -> int:
    return int(s.replace(":", ""), 16)


@dataclass
class Entry:
    qpn: int            # the local QP (the data packets' DestQP)
    dest_qp: int        # the QP at the data sender
    peer_ip: int
    local_ip: int
    peer_mac: int
    local_mac: int
    sport: int


class NotifyTB(TBBase):
    def __init__(self, dut, seed: int):
        super().__init__(dut, seed)
        self.cfg: CnpNotifyConfig = env_config(CnpNotifyConfig)
        self.map = self.cfg.register_map()
        self.n = self.cfg.np.n_cycles
        self.regs = self.cfg.cnp.registers()
        dut.csr_raddr.value = 0
        dut.s_axis_tvalid.value = 0
        csr = csr_write_layout(self.map.addr_width, 32)
        self.csr = StreamDriver(dut, "csr_w", dut.clk, None,
                                encode=lambda w: csr.const({"addr": w[0], "data": w[1]})
                                .as_bits())
        self.source = AxiStreamSource(AxiStreamBus.from_prefix(dut, "s_axis"), dut.clk,
                                      dut.rst)
        self.sink = AxiStreamSink(AxiStreamBus.from_prefix(dut, "m_axis"), dut.clk, dut.rst)
        for x in (self.source, self.sink):
            x.log.setLevel(logging.WARNING)
        self.entries: dict[int, Entry] = {}
        self.last_in: list[int] = []          # cycle of each input frame's last beat
        self.first_out: list[int] = []        # cycle of each CNP's first beat (valid)
        self.last_out: list[int] = []         # cycle of each CNP's last beat (taken)

    def pauses(self, p: float):
        rng = random.Random(self.rng.getrandbits(32))
        while True:
            yield int(rng.random() < p)

    async def start(self):
        await self.reset()
        cocotb.start_soon(self.csr.run())
        cocotb.start_soon(self._edges())

    async def _edges(self):
        out_busy = False
        d = self.dut
        while True:
            await ReadOnly()
            if d.s_axis_tvalid.value and d.s_axis_tready.value and d.s_axis_tlast.value:
                self.last_in.append(self.cycle())
            if d.m_axis_tvalid.value and not out_busy:
                self.first_out.append(self.cycle())
                out_busy = True
            if d.m_axis_tvalid.value and d.m_axis_tready.value and d.m_axis_tlast.value:
                out_busy = False
                self.last_out.append(self.cycle())
            await RisingEdge(d.clk)

    # -- registers --------------------------------------------------------------------------
    async def write(self, name: str, value: int, flow: int | None = None):
        self.csr.send((self.map.addr(name, flow), value))
        await self.wait_until(lambda: not self.csr.queue, 1000, "register write")
        await RisingEdge(self.dut.clk)

    async def read(self, addr: int) -> int:
        await RisingEdge(self.dut.clk)
        self.dut.csr_raddr.value = addr
        await RisingEdge(self.dut.clk)
        await ReadOnly()
        value = self.dut.csr_rdata.value.to_unsigned()
        await RisingEdge(self.dut.clk)
        return value

    async def set_entry(self, flow: int, e: Entry, valid: bool = True):
        self.entries[flow] = e
        for name, value in (("DEST_QP", e.dest_qp), ("DEST_IP", e.peer_ip),
                            ("SRC_IP", e.local_ip), ("DEST_MAC_LO", e.peer_mac & 0xFFFFFFFF),
                            ("DEST_MAC_HI", e.peer_mac >> 32),
                            ("SRC_MAC_LO", e.local_mac & 0xFFFFFFFF),
                            ("SRC_MAC_HI", e.local_mac >> 32), ("UDP_SPORT", e.sport),
                            ("QP", e.qpn | int(valid) << 31)):
            await self.write(name, value, flow)

    def random_entry(self, flow: int) -> Entry:
        r = self.rng
        return Entry(r.getrandbits(24 - self.cfg.index_width) << self.cfg.index_width | flow,
                     r.getrandbits(24), r.getrandbits(32), r.getrandbits(32),
                     r.getrandbits(48) & ~(1 << 40), r.getrandbits(48) & ~(1 << 40),
                     r.getrandbits(16))

    async def setup_table(self):
        for f in range(self.cfg.flows):
            await self.set_entry(f, self.random_entry(f))

    # -- frames -------------------------------------------------------------------------------
    def data_packet(self, flow: int, ce: bool, *, vlan: bool = False, qpn: int | None = None,
                    ecn: int | None = None, payload: int | None = None,
                    opcode: int = 0x04) -> bytes:
        """A RoCEv2 packet from the flow's peer to this NIC (scapy)."""
        e = self.entries[flow]
        ecn = 3 if ce else (ecn if ecn is not None else self.rng.choice((0, 1, 2)))
        l2 = Ether(dst=_mac(e.local_mac), src=_mac(e.peer_mac))
        if vlan:
            l2 = l2 / Dot1Q(prio=3, vlan=self.rng.getrandbits(12))
        n = payload if payload is not None else self.rng.choice((0, 4, 16, 64, 256, 1024))
        pkt = l2 / IP(src=_ip(e.peer_ip), dst=_ip(e.local_ip),
                      tos=self.rng.getrandbits(6) << 2 | ecn, id=self.rng.getrandbits(16),
                      flags="DF", ttl=self.rng.randint(1, 255)) / \
            UDP(sport=self.rng.getrandbits(16), dport=4791) / \
            BTH(opcode=opcode, dqpn=e.qpn if qpn is None else qpn,
                psn=self.rng.getrandbits(24)) / Raw(self.rng.randbytes(n))
        return bytes(pkt).ljust(60, b"\0")        # the sender's MAC pads to 60 bytes

    def expected_cnp(self, flow: int, packet: bytes) -> bytes:
        """The CNP a NIC sends for ``packet``: back to its source, DestQP of the flow's QP."""
        p = Ether(packet)
        e = self.entries[flow]
        req = CnpRequest(dqpn=e.dest_qp, src_ip=_int_ip(p[IP].dst), dst_ip=_int_ip(p[IP].src),
                         udp_sport=e.sport, ip_id=0, flow_label=0,
                         dst_mac=_int_mac(p[Ether].src), src_mac=_int_mac(p[Ether].dst))
        return scapy_frame(self.cfg.cnp, self.regs, req)

    def malformed(self, flow: int) -> tuple[bytes, int]:
        """A CE-marked packet of a known QP broken in one way: (frame, tuser)."""
        pkt = bytearray(self.data_packet(flow, True, payload=16))
        kind = self.rng.randrange(6)
        if kind == 0:                               # IPv4 header checksum
            pkt[24] ^= 1 << self.rng.randrange(8)
        elif kind == 1:                             # truncated: total length beyond the frame
            pkt = pkt[:self.rng.randint(60, len(pkt) - 1)]
        elif kind == 2:                             # UDP length
            p = Ether(bytes(pkt))
            p[UDP].len += self.rng.choice((-1, 1, 8))
            p[UDP].chksum = 0
            pkt = bytearray(bytes(p))
        elif kind == 3:                             # a fragment (MF set)
            p = Ether(bytes(pkt))
            p[IP].flags = "MF"
            del p[IP].chksum
            pkt = bytearray(bytes(p))
        elif kind == 4:                             # the MAC's bad-frame flag
            return bytes(pkt), 1
        else:                                       # a runt
            pkt = pkt[:self.rng.randint(1, 59)]
        return bytes(pkt), 0

    def other(self) -> bytes:
        kind = self.rng.randrange(3)
        if kind == 0:
            return bytes(Ether(dst="ff:ff:ff:ff:ff:ff") / ARP(pdst="10.0.0.9")).ljust(60, b"\0")
        if kind == 1:
            return bytes(Ether() / IP(tos=3) / UDP(sport=4791, dport=4792)
                         / Raw(self.rng.randbytes(40)))
        e = self.entries[self.rng.randrange(self.cfg.flows)]
        return bytes(Ether() / IP(src=_ip(e.peer_ip), dst=_ip(e.local_ip), tos=3)
                     / UDP(dport=4791) / BTH(opcode=0x81, becn=1, dqpn=e.qpn) / CNPPadding())

    async def send(self, frame: bytes, tuser: int = 0, wait: bool = True):
        await self.source.send(AxiStreamFrame(frame, tuser=tuser))
        if wait:
            await self.source.wait()

    def counters(self) -> dict[str, int]:
        return {n: getattr(self.dut, n).value.to_unsigned()
                for n in ("cnps", "ce", "malformed", "other", "unknown_qp")}

    async def expect_nothing(self, cycles: int):
        for _ in range(cycles):
            await RisingEdge(self.dut.clk)
            assert self.sink.empty() and not self.dut.m_axis_tvalid.value, "unexpected CNP"

    async def recv(self, timeout: int = 5000) -> bytes:
        frame = await with_timeout(self.sink.recv(), timeout * CLOCK_PERIOD_NS, "ns")
        return bytes(frame.tdata)

    async def finish(self):
        await ClockCycles(self.dut.clk, 20)
        assert self.sink.empty(), "CNPs left in the sink"
        assert self.source.empty() and self.source.idle(), "frames left in the source"
        assert not self.csr.queue, "register writes left"
        assert not self.dut.m_axis_tvalid.value, "a CNP still on its way"


@cocotb.test()
async def registers(dut):
    tb = NotifyTB(dut, env_seed(81))
    await tb.start()
    m = tb.map
    assert await tb.read(m.addr("ID")) == int.from_bytes(b"CNPN", "big")
    assert await tb.read(m.addr("SIZE")) == m.size_bytes
    assert await tb.read(m.addr("FLOWS")) == tb.cfg.flows | m.flow_shift << 16
    for reg in CnpReg:                       # the generator's registers, forwarded
        assert await tb.read(reg) == tb.regs[reg], reg.name
    await tb.write("TTL", 17)
    assert await tb.read(m.addr("TTL")) == 17
    await tb.write("TTL", tb.regs[CnpReg.TTL])
    for reg in tb.cfg.np_registers():        # the NP's, forwarded
        assert await tb.read(m.addr(reg.name)) == reg.reset, reg.name
    await tb.setup_table()
    for f, e in tb.entries.items():
        got = [await tb.read(m.addr(n, f)) for n in
               ("QP", "DEST_QP", "DEST_IP", "SRC_IP", "DEST_MAC_LO", "DEST_MAC_HI",
                "SRC_MAC_LO", "SRC_MAC_HI", "UDP_SPORT")]
        assert got == [e.qpn | 1 << 31, e.dest_qp, e.peer_ip, e.local_ip,
                       e.peer_mac & 0xFFFFFFFF, e.peer_mac >> 32, e.local_mac & 0xFFFFFFFF,
                       e.local_mac >> 32, e.sport], f"flow {f}"
    await tb.write("QP", 0xFFFF_FFFF, 0)     # fields masked: bits 30:24 are not stored
    assert await tb.read(m.addr("QP", 0)) == 0x80FF_FFFF
    for name in ("CNT_CNP", "CNT_CE", "CNT_MALFORMED", "CNT_OTHER", "CNT_UNKNOWN_QP"):
        assert await tb.read(m.addr(name)) == 0, name
    assert await tb.read(0x0F) == 0                                     # unmapped
    await tb.finish()


@cocotb.test()
async def directed(dut):
    tb = NotifyTB(dut, env_seed(82))
    await tb.start()
    await tb.setup_table()
    n = tb.n
    F = tb.cfg.flows

    # a packet without CE: nothing
    await tb.send(tb.data_packet(0, ce=False, ecn=2))
    await tb.expect_nothing(2 * n)

    # a CE packet: its CNP; latency from the packet's last beat
    pkt = tb.data_packet(0, ce=True, payload=32)
    await tb.send(pkt)
    assert await tb.recv() == tb.expected_cnp(0, pkt)
    lat = tb.first_out[-1] - tb.last_in[-1]
    tb.log.info("CE packet last beat -> CNP first beat: %d cycles, last beat %d", lat,
                tb.last_out[-1] - tb.last_in[-1])
    assert lat == 5 and tb.last_out[-1] - tb.last_in[-1] == 22, lat
    t_cnp = tb.first_out[-1]

    # more CE packets inside the window: nothing until it ends, then exactly one CNP
    await ClockCycles(dut.clk, 20)
    for _ in range(3):
        await tb.send(tb.data_packet(0, ce=True))
    await tb.wait_until(lambda: len(tb.first_out) == 2, 2 * n, "the deferred CNP")
    gap = tb.first_out[-1] - t_cnp
    tb.log.info("deferred CNP %d cycles after the first (N = %d)", gap, n)
    assert n - 1 <= gap <= n + 8, gap
    assert await tb.recv() == tb.expected_cnp(0, pkt)
    await tb.expect_nothing(2 * n)
    assert tb.counters()["cnps"] == 2 and tb.counters()["ce"] == 4

    # malformed frames: counted, dropped
    base = tb.counters()
    for _ in range(12):
        frame, tuser = tb.malformed(1)
        await tb.send(frame, tuser)
    await tb.expect_nothing(50)
    assert tb.counters()["malformed"] - base["malformed"] == 12

    # not RoCEv2 data: ignored
    for _ in range(6):
        await tb.send(tb.other())
    await tb.expect_nothing(50)
    assert tb.counters()["other"] - base["other"] == 6

    # unknown QPs: the entry holds another QP, or is invalid
    e = tb.entries[2]
    await tb.send(tb.data_packet(2, ce=True, qpn=e.qpn ^ (1 << 23)))
    await tb.write("QP", e.qpn, 2)                           # valid bit cleared
    await tb.send(tb.data_packet(2, ce=True))
    await tb.expect_nothing(50)
    c = tb.counters()
    assert c["unknown_qp"] - base["unknown_qp"] == 2
    assert (c["ce"], c["cnps"]) == (base["ce"], base["cnps"]), "an unknown QP reached the NP"
    await tb.write("QP", e.qpn | 1 << 31, 2)

    # back to back at one beat per clock: CE (VLAN tagged), runt, CE, ARP, CE
    frames = [(tb.data_packet(3, True, vlan=True), 0, 3), (b"\x01" * 8, 0, None),
              (tb.data_packet(4, True, payload=0), 0, 4), (tb.other(), 0, None),
              (tb.data_packet(5 % F, True), 0, 5 % F)]
    for frame, tuser, _ in frames:
        await tb.send(frame, tuser, wait=False)
    await tb.source.wait()
    got = [await tb.recv() for _ in range(3)]
    assert got == [tb.expected_cnp(f, fr) for fr, _, f in frames if f is not None]
    # the second CNP was due while the generator sent the first: back to back
    assert tb.first_out[-2] - tb.first_out[-3] == tb.cfg.cnp.cycles_per_cnp
    await tb.expect_nothing(2 * n)
    assert tb.counters()["cnps"] == 5

    # an over-long frame (a CE packet padded to 65,600 bytes, beyond the 16-bit length
    # counter): the counter saturates at 0xFFFF, so the IP total length still fits in the
    # frame and the packet gets its CNP (a counter that wrapped at 65,536 would end at 64
    # bytes: a truncated packet, counted malformed)
    f6 = 6 % F
    before = tb.counters()
    big = tb.data_packet(f6, True, payload=256).ljust(65_600, b"\0")
    await tb.send(big)
    assert await tb.recv(timeout=20_000) == tb.expected_cnp(f6, big)
    c = tb.counters()
    assert c["cnps"] == 6 and c["malformed"] == before["malformed"], (c, before)

    # the two bounds of the IPv4 checks, each one below: a complete CE packet in a 59-byte
    # frame (a runt, below 60 bytes, whatever its headers say), and a CE packet whose IP
    # total length (43) is one byte short of IP + UDP + BTH + ICRC (44), its UDP length
    # consistent (23) and its header checksum right: both malformed, no CNP
    runt = tb.data_packet(1, True, payload=0)[:59]
    assert Ether(runt)[IP].len + 14 <= 59        # the packet itself is complete
    short = Ether(tb.data_packet(1, True, payload=16))
    short[IP].len, short[UDP].len = 43, 23
    del short[IP].chksum
    for frame in (runt, bytes(short)):
        await tb.send(frame)
    await tb.expect_nothing(2 * n)
    c = tb.counters()
    assert c["malformed"] == before["malformed"] + 2 and c["cnps"] == 6, (c, before)

    # a generator register written while the generator sends a CNP waits for it (the write
    # is taken when the generator is idle, then applies to the next CNP)
    pkt7 = tb.data_packet(7 % F, True)
    await tb.send(pkt7)
    await ClockCycles(dut.clk, 8)                 # the CNP is being sent now
    await tb.write("TTL", 99)
    assert await tb.recv() == tb.expected_cnp(7 % F, pkt7)
    old_ttl, tb.regs[CnpReg.TTL] = tb.regs[CnpReg.TTL], 99
    pkt1 = tb.data_packet(1, True)
    await tb.send(pkt1)
    assert await tb.recv() == tb.expected_cnp(1, pkt1)
    await tb.write("TTL", old_ttl)
    tb.regs[CnpReg.TTL] = old_ttl

    # the counters read through the register port equal the counter ports
    m = tb.map
    c = tb.counters()
    for name, port in (("CNT_CNP", "cnps"), ("CNT_CE", "ce"), ("CNT_MALFORMED", "malformed"),
                       ("CNT_OTHER", "other"), ("CNT_UNKNOWN_QP", "unknown_qp")):
        assert await tb.read(m.addr(name)) == c[port], name
    assert c["cnps"] == 8
    await tb.finish()


@cocotb.test()
async def random_traffic(dut):
    tb = NotifyTB(dut, env_seed(83))
    await tb.start()
    await tb.setup_table()
    events = env_count("CC_EVENTS", 300)
    F, n = tb.cfg.flows, tb.n
    tb.source.set_pause_generator(tb.pauses(0.3))
    tb.sink.set_pause_generator(tb.pauses(0.4))
    spacing = 2 * n + 600          # beyond the window + the worst CNP queueing delay
    last_ce = [-spacing] * F
    expected: Counter = Counter()
    want = Counter()
    for _ in range(events):
        kind = tb.rng.choices(("data", "ce", "malformed", "other", "unknown"),
                              (6, 3, 1, 1, 1))[0]
        f = tb.rng.randrange(F)
        tuser = 0
        if kind == "ce" and tb.cycle() - last_ce[f] < spacing:
            kind = "data"
        if kind in ("data", "ce"):
            frame = tb.data_packet(f, kind == "ce", vlan=tb.rng.random() < 0.2)
            if kind == "ce":
                last_ce[f] = tb.cycle()
                expected[tb.expected_cnp(f, frame)] += 1
        elif kind == "malformed":
            frame, tuser = tb.malformed(f)
        elif kind == "other":
            frame = tb.other()
        else:
            frame = tb.data_packet(f, tb.rng.random() < 0.5,
                                   qpn=tb.entries[f].qpn ^ (1 << tb.rng.randrange(
                                       tb.cfg.index_width, 24)))
        want[kind] += 1
        await tb.send(frame, tuser)
        if kind == "ce":                   # (timed from the last beat)
            last_ce[f] = tb.cycle()
    await ClockCycles(dut.clk, 4 * n)
    got = Counter()
    while not tb.sink.empty():
        got[bytes((await tb.sink.recv()).tdata)] += 1
    tb.log.info("%d frames %s; %d CNPs", events, dict(want), sum(got.values()))
    if got != expected:
        for name, c in (("unexpected", got - expected), ("missing", expected - got)):
            for frame, k in c.items():
                p = Ether(frame)
                tb.log.error("%s x%d: %s -> %s DestQP %#x", name, k, p[IP].src, p[IP].dst,
                             p[BTH].dqpn)
    assert got == expected, f"{sum(got.values())} CNPs, {sum(expected.values())} expected"
    assert tb.counters() == {"cnps": want["ce"], "ce": want["ce"],
                             "malformed": want["malformed"], "other": want["other"],
                             "unknown_qp": want["unknown"]}
    assert want["ce"] > 0 and min(want.values()) > 0
    await tb.finish()
