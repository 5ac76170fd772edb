"""cocotb testbench: the AXI-Stream wrappers of the frame generators and the ToR converter
(hw/lib/axis.py), all four in one build (``cocotb_tests/test_axis.py``: ports ``cnp__*``,
``cnm__*``, ``pcnm__*``, ``tor__*``), driven by cocotbext-axi.

Requests go in through the native request streams (random idle cycles); frames leave through
``m_axis`` into an ``AxiStreamSink`` with a random pause generator (back-pressure) and are
compared byte for byte, in order, with the frame scapy builds from the request (expected frames
never come from the project's models).  The ToR converter takes frames from an
``AxiStreamSource`` (random idle cycles): scapy-built private CNMs of learned and unknown flows,
foreign UDP packets, packets with a wrong IPv4 checksum and frames flagged bad by ``tuser``.
Every master interface is also checked for the AXI-Stream rule that ``tvalid``, ``tdata``,
``tkeep`` and ``tlast`` hold while ``tready`` is low.  At the end every queue is empty.
``CC_FRAMES`` sets the number of frames per generator.
"""

from __future__ import annotations

import logging
import random
import struct
import warnings

import cocotb
from cocotb.triggers import ClockCycles, ReadOnly, RisingEdge
from cocotbext.axi import AxiStreamBus, AxiStreamFrame, AxiStreamSink, AxiStreamSource
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Dot1Q, Ether
from scapy.packet import Raw

from cocotb_tests.infra.stream import Pattern, StreamDriver
from cocotb_tests.infra.tb import TBBase, env_count, env_seed
from gateware.tops import TOPS
from hw.layouts import LayoutCodec, tor_learn_layout
from sim.models.cnm import pack_cnm_request
from sim.models.cnp import pack_request
from sim.models.l3qcn import FlowInfo, five_tuple_key, flow_info_value
from tests.test_cnm import random_request as random_cnm_request
from tests.test_cnp import random_request as random_cnp_request
from tests.test_cnp import scapy_frame as scapy_cnp
from tests.test_l3qcn import pack_private_request, random_flow, random_private_request

warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"cocotbext\.")

CNP_CFG = TOPS["cnp_gen_axis"].config
CNM_CFG = TOPS["cnm_gen_axis"].config
PCNM_CFG = TOPS["private_cnm_axis"].config
TOR_CFG = TOPS["l3qcn_tor_axis"].config


def _mac(x: int) -> str:
    return ":".join(f"{b:02x}" for b in x.to_bytes(6, "big"))


def _ip(x: int) -> str:
    return ".".join(str(b) for b in x.to_bytes(4, "big"))


def scapy_cnm(dst_mac, src_mac, pcp, vid, rpid, qntz_fb, cpid, q_off, q_delta, enc_prio,
              enc_dst, msdu_len, msdu: bytes, msdu_bytes: int) -> bytes:
    """An IEEE 802.1Qau CNM: scapy's Ethernet and 802.1Q layers, the CN-TAG and the CNM PDU
    packed from the standard's layout (scapy has no CN layer), padded to 60 bytes."""
    n = min(msdu_len, msdu_bytes)
    pdu = struct.pack(">HHBBQhhH6sH", rpid, 0x22E7, 0, qntz_fb, cpid, q_off, q_delta,
                      enc_prio << 13, enc_dst.to_bytes(6, "big"), msdu_len) + msdu[:n]
    frame = Ether(dst=_mac(dst_mac), src=_mac(src_mac)) / Dot1Q(
        prio=pcp, vlan=vid, type=0x22E9) / Raw(pdu)
    return bytes(frame).ljust(60, b"\0")


def scapy_private_cnm(cfg, r) -> bytes:
    """The private CNM (docs/l3qcn.md layout) with scapy's IPv4/UDP and their checksums."""
    n = min(r.msdu_len, cfg.sample_bytes)
    f = r.flow
    pdu = struct.pack(">BBHQhhIIHHBBH", 1 << 4, r.qntz_fb, r.enc_prio << 13, cfg.cpid, r.q_off,
                      r.q_delta, f.src_ip, f.dst_ip, f.sport, f.dport, f.protocol, 0,
                      r.msdu_len) + r.sample[:n] + bytes(cfg.sample_bytes - n)
    pkt = IP(src=_ip(cfg.cp_ip), dst=_ip(f.src_ip), tos=cfg.dscp << 2 | cfg.ecn, id=0,
             flags="DF", ttl=cfg.ttl) / UDP(sport=cfg.udp_sport, dport=cfg.udp_port) / Raw(pdu)
    return bytes(pkt)


class AxisChecker:
    """Fails on an AXI-Stream master that changes or drops a beat while ``tready`` is low."""

    def __init__(self, dut, prefix: str):
        self.sig = {n: getattr(dut, f"{prefix}_{n}") for n in
                    ("tvalid", "tready", "tdata", "tkeep", "tlast")}
        self.clk = dut.clk
        self.stalls = 0

    async def run(self):
        held = None
        while True:
            await ReadOnly()
            s = self.sig
            if held is not None:
                now = tuple(int(s[n].value) for n in ("tvalid", "tdata", "tkeep",
                                                                "tlast"))
                assert now == held, f"AXI-Stream beat changed under back-pressure: {held} -> {now}"
            held = None
            if s["tvalid"].value and not s["tready"].value:
                self.stalls += 1
                held = tuple(int(s[n].value) for n in ("tvalid", "tdata", "tkeep",
                                                                 "tlast"))
            await RisingEdge(self.clk)


class FramesTB(TBBase):
    def __init__(self, dut, seed: int):
        super().__init__(dut, seed)
        for p in ("cnp", "cnm", "pcnm", "tor"):      # the register ports, if any: idle
            for name in ("csr_w__valid", "csr_raddr"):
                if hasattr(dut, f"{p}__{name}"):
                    getattr(dut, f"{p}__{name}").value = 0
        for name in ("cnp__request__valid", "cnm__request__valid", "pcnm__request__valid",
                     "tor__learn__valid", "tor__s_axis_tvalid"):
            getattr(dut, name).value = 0
        self.sinks, self.checkers = {}, {}
        for p in ("cnp", "cnm", "pcnm", "tor"):
            sink = AxiStreamSink(AxiStreamBus.from_prefix(dut, f"{p}__m_axis"), dut.clk,
                                 dut.rst)
            sink.log.setLevel(logging.WARNING)
            sink.set_pause_generator(self._pauses(0.4))
            self.sinks[p] = sink
            self.checkers[p] = AxisChecker(dut, f"{p}__m_axis")
        self.source = AxiStreamSource(AxiStreamBus.from_prefix(dut, "tor__s_axis"), dut.clk,
                                      dut.rst)
        self.source.log.setLevel(logging.WARNING)
        self.source.set_pause_generator(self._pauses(0.3))
        idle = Pattern.random(0.6, self.rng)
        self.drivers = {
            "cnp": StreamDriver(dut, "cnp__request", dut.clk, idle,
                                encode=lambda r: pack_request(CNP_CFG, r)),
            "cnm": StreamDriver(dut, "cnm__request", dut.clk, idle,
                                encode=lambda r: pack_cnm_request(CNM_CFG, r)),
            "pcnm": StreamDriver(dut, "pcnm__request", dut.clk, idle,
                                 encode=lambda r: pack_private_request(PCNM_CFG, r)),
            "learn": StreamDriver(dut, "tor__learn", dut.clk, None,
                                  encode=LayoutCodec(tor_learn_layout()).pack),
        }
        self.expected = {p: [] for p in self.sinks}

    def _pauses(self, p_pause: float):
        rng = random.Random(self.rng.getrandbits(32))
        while True:
            yield int(rng.random() < p_pause)

    async def start(self):
        await self.reset()
        for d in self.drivers.values():
            cocotb.start_soon(d.run())
        for c in self.checkers.values():
            cocotb.start_soon(c.run())

    async def check(self, name: str, timeout: int = 200_000):
        """Receive every expected frame of ``name``, in order, byte for byte."""
        sink = self.sinks[name]
        for i, want in enumerate(self.expected[name]):
            got = await sink.recv()
            assert bytes(got.tdata) == want, (f"{name} frame {i}:\n got {bytes(got.tdata).hex()}"
                                             f"\nwant {want.hex()}")
        self.expected[name].clear()

    async def finish(self, used: tuple[str, ...]):
        await ClockCycles(self.dut.clk, 50)
        for name, sink in self.sinks.items():
            assert sink.empty(), f"{name}: unexpected frame {sink.recv_nowait()}"
        assert all(not d.queue for d in self.drivers.values()), "requests left"
        assert self.source.empty() and self.source.idle(), "frames left in the source"
        assert all(self.checkers[n].stalls for n in used), "back-pressure never applied"


@cocotb.test()
async def generators(dut):
    """CNP, CNM and private CNM generators, concurrently, random requests, random pauses."""
    tb = FramesTB(dut, env_seed(71))
    await tb.start()
    n = env_count("CC_FRAMES", 40)
    regs = CNP_CFG.registers()
    for _ in range(n):
        r = random_cnp_request(CNP_CFG, tb.rng)
        tb.drivers["cnp"].send(r)
        tb.expected["cnp"].append(scapy_cnp(CNP_CFG, regs, r))
        c = random_cnm_request(tb.rng, CNM_CFG)
        tb.drivers["cnm"].send(c)
        tb.expected["cnm"].append(scapy_cnm(
            c.dst_mac, CNM_CFG.cp_mac, CNM_CFG.cnm_pcp, c.vid, c.rpid, c.qntz_fb,
            (CNM_CFG.cp_mac << 16) | c.cpid_low, c.q_off, c.q_delta, c.enc_prio, c.enc_dst,
            c.msdu_len, c.msdu, CNM_CFG.msdu_bytes))
        p = random_private_request(tb.rng)
        tb.drivers["pcnm"].send(p)
        tb.expected["pcnm"].append(scapy_private_cnm(PCNM_CFG, p))
    for name in ("cnp", "cnm", "pcnm"):
        await tb.check(name)
    await tb.finish(("cnp", "cnm", "pcnm"))


@cocotb.test()
async def tor_converter(dut):
    """The ToR converter between an AxiStreamSource and an AxiStreamSink."""
    tb = FramesTB(dut, env_seed(72))
    await tb.start()
    pcfg = TOR_CFG.private
    n = env_count("CC_FRAMES", 40)
    flows = [random_flow(tb.rng) for _ in range(12)]
    learned = {}
    for f in flows[:8]:
        info = FlowInfo(tb.rng.getrandbits(48), tb.rng.getrandbits(16), tb.rng.getrandbits(12))
        learned[f] = info
        tb.drivers["learn"].send({"flow": five_tuple_key(f), "info": flow_info_value(info)})
    await tb.wait_until(lambda: not tb.drivers["learn"].queue, 10_000, "learns")
    await ClockCycles(dut.clk, 10)
    kinds = {"cnm": 0, "miss": 0, "other": 0, "bad_ck": 0, "tuser": 0}
    for _ in range(n):
        r = random_private_request(tb.rng, tb.rng.choice(flows))
        pkt = scapy_private_cnm(pcfg, r)
        kind = tb.rng.choice(("cnm", "cnm", "other", "bad_ck", "tuser"))
        tuser = 0
        if kind == "other":
            pkt = bytes(IP(src="10.0.0.1", dst="10.0.0.2") / UDP(sport=1, dport=4791)
                        / Raw(tb.rng.randbytes(tb.rng.randint(0, 80))))
        elif kind == "bad_ck":
            pkt = bytearray(pkt)
            pkt[10] ^= 1 << tb.rng.randrange(8)
            pkt = bytes(pkt)
        elif kind == "tuser":
            tuser = 1              # the MAC's bad-frame flag on the last beat
        elif r.flow not in learned:
            kind = "miss"
        else:
            info = learned[r.flow]
            tb.expected["tor"].append(scapy_cnm(
                info.src_mac, TOR_CFG.tor_mac, TOR_CFG.cnm_pcp, info.vid, info.rpid, r.qntz_fb,
                pcfg.cpid, r.q_off, r.q_delta, r.enc_prio, TOR_CFG.tor_mac, r.msdu_len,
                r.sample, pcfg.sample_bytes))
        kinds[kind] += 1
        await tb.source.send(AxiStreamFrame(pkt, tuser=tuser))
    await tb.check("tor")
    await tb.source.wait()
    await ClockCycles(dut.clk, 20)
    counts = {n: getattr(dut, f"tor__{n}").value.to_unsigned() for n in
              ("cnms", "other", "malformed", "misses")}
    tb.log.info("ToR frames: %s, counters %s", kinds, counts)
    assert counts == {"cnms": kinds["cnm"], "other": kinds["other"],
                      "malformed": kinds["bad_ck"] + kinds["tuser"], "misses": kinds["miss"]}
    assert min(kinds.values()) > 0
    await tb.finish(("tor",))
