"""CNP frame generator: the golden CNP (public RoCEv2 CNP example) byte for byte,
scapy.contrib.roce on random
inputs (IPv4 and IPv6, with and without L2), the parallel CRC against zlib, configuration
errors, and the RTL (Amaranth simulator) against the model with back-pressure and register
writes."""

from __future__ import annotations

import dataclasses
import random
import zlib

import pytest
from amaranth.sim import Simulator
from scapy.contrib.roce import BTH, CNPPadding
from scapy.layers.inet import IP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Dot1Q, Ether

from hw.lib.crc import icrc_processor
from hw.nic.cnp_config import CSR_ADDR_WIDTH, CnpGenConfig, CnpReg
from hw.nic.cnp_gen import CnpGenerator
from hw.params import ConfigError
from sim.models.cnp import CnpModel, CnpRequest, frame_beats, ipv4_checksum, pack_request

#: Golden CNP (IPv4 header through ICRC), from the public "RoCEv2 CNP packet
#: format example": src 22.22.22.8, dst 22.22.22.7, TOS 0x89, id 0x98c6, TTL 0x20, UDP source
#: port 56238, DestQP 0xD2.
GOLDEN = bytes.fromhex(
    "45 89 00 3C 98 C6 40 00 20 11 69 27 16 16 16 08 16 16 16 07"
    "DB AE 12 B7 00 28 00 00"
    "81 00 FF FF 40 00 00 D2 00 00 00 00"
    "00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00"
    "DA FC 1B EF")
GOLDEN_CFG = CnpGenConfig(l2="none", cnp_dscp=0x89 >> 2, cnp_ecn=0x89 & 3, ttl=0x20)
GOLDEN_REQ = CnpRequest(dqpn=0xD2, src_ip=0x16161608, dst_ip=0x16161607, udp_sport=56238,
                        ip_id=0x98C6)


def random_request(cfg: CnpGenConfig, rng: random.Random) -> CnpRequest:
    ip_bits = 32 if cfg.ip_version == 4 else 128
    l2 = cfg.l2 != "none"
    return CnpRequest(dqpn=rng.getrandbits(24), src_ip=rng.getrandbits(ip_bits),
                      dst_ip=rng.getrandbits(ip_bits), udp_sport=rng.getrandbits(16),
                      ip_id=rng.getrandbits(16) if cfg.ip_version == 4 else 0,
                      flow_label=rng.getrandbits(20) if cfg.ip_version == 6 else 0,
                      dst_mac=rng.getrandbits(48) if l2 else 0,
                      src_mac=rng.getrandbits(48) if l2 else 0)


def scapy_frame(cfg: CnpGenConfig, regs: dict, req: CnpRequest) -> bytes:
    """The same CNP built by scapy (its own header code and its own ICRC)."""
    tos = (regs[CnpReg.CNP_DSCP] << 2) | regs[CnpReg.CNP_ECN]
    if cfg.ip_version == 4:
        ip = IP(src=_ipv4(req.src_ip), dst=_ipv4(req.dst_ip), tos=tos, id=req.ip_id, flags="DF",
                ttl=regs[CnpReg.TTL])
    else:
        ip = IPv6(src=_ipv6(req.src_ip), dst=_ipv6(req.dst_ip), tc=tos, fl=req.flow_label,
                  hlim=regs[CnpReg.TTL])
    pkt = ip / UDP(sport=req.udp_sport, dport=4791, chksum=0) / \
        BTH(opcode=0x81, becn=1, pkey=regs[CnpReg.PKEY], dqpn=req.dqpn) / CNPPadding()
    ethertype = 0x0800 if cfg.ip_version == 4 else 0x86DD
    mac = {"dst": _mac(req.dst_mac), "src": _mac(req.src_mac)}
    if cfg.l2 == "eth":
        pkt = Ether(**mac, type=ethertype) / pkt
    elif cfg.l2 == "eth_vlan":
        pkt = Ether(**mac) / Dot1Q(prio=regs[CnpReg.CNP_802P_PRIO], vlan=regs[CnpReg.VLAN_ID],
                                   type=ethertype) / pkt
    return bytes(pkt)


def _ipv4(x):
    return ".".join(str(b) for b in x.to_bytes(4, "big"))


def _ipv6(x):
    h = x.to_bytes(16, "big").hex()
    return ":".join(h[i:i + 4] for i in range(0, 32, 4))


def _mac(x):
    return ":".join(f"{b:02x}" for b in x.to_bytes(6, "big"))


# -- model -------------------------------------------------------------------------------------

def test_golden_frame_model():
    frame = CnpModel(GOLDEN_CFG).frame(GOLDEN_REQ)
    assert frame == GOLDEN
    assert ipv4_checksum(frame[:10] + b"\0\0" + frame[12:20]) == 0x6927
    assert frame[-4:] == bytes.fromhex("DAFC1BEF")


def test_golden_frame_scapy():
    """scapy, on its own, reproduces the golden frame too (the reference is trustworthy)."""
    assert scapy_frame(GOLDEN_CFG, GOLDEN_CFG.registers(), GOLDEN_REQ) == GOLDEN


@pytest.mark.parametrize("ip_version", [4, 6])
@pytest.mark.parametrize("l2", ["none", "eth", "eth_vlan"])
def test_random_frames_match_scapy(ip_version, l2):
    rng = random.Random(ip_version * 10 + len(l2))
    for _ in range(50):
        cfg = CnpGenConfig(ip_version=ip_version, l2=l2, cnp_dscp=rng.randrange(64),
                           cnp_ecn=rng.choice([1, 2]), cnp_802p_prio=rng.randrange(8),
                           vlan_id=rng.randrange(4096), ttl=rng.randint(1, 255),
                           pkey=rng.getrandbits(16))
        req = random_request(cfg, rng)
        frame = CnpModel(cfg).frame(req)
        assert len(frame) == cfg.frame_bytes
        assert frame == scapy_frame(cfg, cfg.registers(), req)


def test_icrc_processor_matches_zlib():
    """The ICRC engine (amaranth.lib.crc, 32-bit words, wire byte i in bits [8i, 8i+8)) against
    zlib, over two messages back to back (``start`` with the first word of the second)."""
    rng = random.Random(3)
    messages = [bytes(rng.getrandbits(8) for _ in range(64)) for _ in range(2)]
    dut = icrc_processor(32)
    got = []

    async def bench(ctx):
        for data in messages:
            for k in range(0, len(data), 4):
                ctx.set(dut.start, k == 0)
                ctx.set(dut.valid, 1)
                ctx.set(dut.data, int.from_bytes(data[k:k + 4], "little"))
                await ctx.tick()
            ctx.set(dut.valid, 0)
            ctx.set(dut.start, 0)
            got.append(ctx.get(dut.crc))

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    assert got == [zlib.crc32(data) for data in messages]


@pytest.mark.parametrize("changes, field", [
    (dict(cnp_dscp=64), "cnp_dscp"), (dict(cnp_ecn=0), "cnp_ecn"),
    (dict(cnp_802p_prio=8), "cnp_802p_prio"), (dict(ttl=0), "ttl"),
    (dict(data_bytes=12), "data_bytes"), (dict(ip_version=5), "ip_version"),
    (dict(l2="vlan"), "l2"), (dict(vlan_id=4096), "vlan_id"),
])
def test_invalid_config(changes, field):
    with pytest.raises(ConfigError) as info:
        CnpGenConfig(**changes)
    assert info.value.field == field


# -- RTL in the Amaranth simulator ---------------------------------------------------------------

def run_rtl(cfg: CnpGenConfig, items, seed: int, ready_p: float = 1.0):
    """Send ``items`` (requests, or ``(addr, value)`` register writes); return the frames."""
    dut, rng = CnpGenerator(cfg), random.Random(seed)
    frames, cycles = [], []
    sim = Simulator(dut)
    sim.add_clock(4e-9)

    async def driver(ctx):
        for item in items:
            if isinstance(item, CnpRequest):
                port, bits = dut.request, pack_request(cfg, item)
            else:
                port = dut.csr_w
                bits = item[0] | (item[1] << CSR_ADDR_WIDTH)
            ctx.set(port.payload.as_value(), bits)
            ctx.set(port.valid, 1)
            await ctx.tick().until(port.ready)
            ctx.set(port.valid, 0)
            for _ in range(rng.choice([0, 0, 1, 5])):
                await ctx.tick()

    async def monitor(ctx):
        beats, cycle = [], 0
        while len(frames) < sum(isinstance(i, CnpRequest) for i in items):
            ready = rng.random() < ready_p
            ctx.set(dut.frame.ready, ready)
            valid = ctx.get(dut.frame.valid)
            payload = ctx.get(dut.frame.payload.as_value())
            last = ctx.get(dut.frame.payload.last)
            await ctx.tick()
            cycle += 1
            if valid and ready:
                beats.append(payload)
                if last:
                    frames.append(beats)
                    cycles.append(cycle)
                    beats = []
            assert cycle < 100_000

    sim.add_testbench(driver)
    sim.add_testbench(monitor)
    sim.run()
    return frames, cycles


def test_golden_frame_rtl():
    frames, _ = run_rtl(GOLDEN_CFG, [GOLDEN_REQ], seed=1)
    data = b"".join(
        (b & ((1 << 64) - 1)).to_bytes(8, "little") for b in frames[0])[:GOLDEN_CFG.frame_bytes]
    assert data == GOLDEN
    assert frames[0] == frame_beats(GOLDEN_CFG, GOLDEN)


@pytest.mark.parametrize("cfg", [
    CnpGenConfig(),
    CnpGenConfig(ip_version=6, data_bytes=16),
    CnpGenConfig(ip_version=6, l2="eth", data_bytes=4),
    CnpGenConfig(l2="none", data_bytes=16),
], ids=["v4_vlan_8", "v6_vlan_16", "v6_eth_4", "v4_none_16"])
def test_rtl_matches_model_with_backpressure_and_writes(cfg):
    rng = random.Random(cfg.data_bytes * cfg.ip_version)
    model = CnpModel(cfg)
    items, expected = [], []
    for _ in range(12):
        if rng.random() < 0.3:
            reg = rng.choice(list(CnpReg))
            value = rng.getrandbits(16) if reg != CnpReg.CNP_ECN else rng.choice([1, 2])
            items.append((int(reg), value))
            model.write(reg, value)
        req = random_request(cfg, rng)
        items.append(req)
        expected.append(frame_beats(cfg, model.frame(req)))
        if rng.random() < 0.3:   # the frame also agrees with scapy after the writes
            assert model.frame(req) == scapy_frame(cfg, model.regs, req)
    frames, _ = run_rtl(cfg, items, seed=7, ready_p=0.6)
    assert frames == expected


def test_rtl_ipv4_checksum_fold_corners():
    """The pipelined IPv4 checksum at its end-around-carry corners: identification values
    chosen so that the header's plain 16-bit word sum, folded once, carries again (a case
    random addresses hit about once in 10^4 frames) or lands on 0xFFFF (checksum 0); the
    frames are compared with scapy's, which computes the checksum itself."""
    cfg = CnpGenConfig(l2="none", data_bytes=16)
    regs = cfg.registers()
    rng = random.Random(11)
    picked = {"carry": [], "ffff": []}
    while min(len(v) for v in picked.values()) < 2:
        req = random_request(cfg, rng)
        base = bytes(scapy_frame(cfg, regs, dataclasses.replace(req, ip_id=0))[:20])
        s0 = sum(int.from_bytes(base[i:i + 2], "big") for i in range(0, 20, 2)
                 if i != 10)                                   # without the checksum field
        for ip_id in range(1 << 16):
            s = s0 + ip_id
            folded = (s & 0xFFFF) + (s >> 16)
            kind = "carry" if folded > 0xFFFF else "ffff" if folded == 0xFFFF else None
            if kind and len(picked[kind]) < 2 and rng.random() < 0.05:
                picked[kind].append(dataclasses.replace(req, ip_id=ip_id))
    reqs = picked["carry"] + picked["ffff"]
    frames, _ = run_rtl(cfg, reqs, seed=5)
    assert frames == [frame_beats(cfg, scapy_frame(cfg, regs, r)) for r in reqs]
    assert any(scapy_frame(cfg, regs, r)[10:12] == b"\0\0" for r in reqs)
