"""The private CNM generator's header fields as run-time registers (``PCNM_*`` in the L3QCN CP's
map, mode ``qcn``): values written at run time appear in the next packets, checked byte for byte
by scapy (it recomputes both checksums from the written addresses and ports) and against the
golden model; a write waiting while a request is held leaves that request's packet on the old
values (applied between packets); every register reads back what was written.  ``CC_SEED``
overrides the seed."""

from __future__ import annotations

import os
import random
from dataclasses import replace

from hw.layouts import LayoutCodec, l3qcn_frame_layout
from hw.switch.l3qcn import L3qcnCp, PrivateCnmGen
from hw.switch.l3qcn_config import L3QCN_CP_PCNM_BASE, L3qcnCpConfig, PrivateCnmConfig
from sim.models.l3qcn import (
    FiveTuple,
    L3qcnCpModel,
    L3qcnFrame,
    PrivateCnmGenModel,
    PrivateCnmRequest,
    parse_private_cnm,
)
from sim.models.packets import FrameAssembler
from tests.streams import run_testbenches, stream_get, stream_put

try:        # under pytest, tests/ itself is on sys.path
    from tests.test_l3qcn import check_private_cnm, pack_private_request, random_private_request
except ModuleNotFoundError:
    from test_l3qcn import check_private_cnm, pack_private_request, random_private_request

SEED = int(os.environ.get("CC_SEED", 29))
#: register order of PrivateCnmConfig.register_map (word addresses 0..7)
NAMES = ("CP_IP", "CPID_LO", "CPID_HI", "UDP_PORT", "UDP_SPORT", "DSCP", "ECN", "TTL")


def _rng(tag: str) -> random.Random:
    s = SEED + sum(map(ord, tag))
    print(f"seed {s} (CC_SEED={SEED} reproduces)")
    return random.Random(s)


def _random_header(rng: random.Random) -> dict:
    """New, valid header field values (a PrivateCnmConfig accepts them: scapy's expectation)."""
    return dict(cp_ip=rng.getrandbits(32), cpid=rng.getrandbits(64),
                udp_port=rng.randrange(1, 1 << 16), udp_sport=rng.getrandbits(16),
                dscp=rng.randrange(64), ecn=rng.choice((1, 2)), ttl=rng.randrange(1, 256))


def _words(h: dict) -> list[int]:
    """The header as register words in address order, derived by hand (not from the map)."""
    return [h["cp_ip"], h["cpid"] & 0xFFFF_FFFF, h["cpid"] >> 32, h["udp_port"],
            h["udp_sport"], h["dscp"], h["ecn"], h["ttl"]]


async def _write(ctx, dut, addr: int, data: int) -> None:
    ctx.set(dut.csr_w.payload, {"addr": addr, "data": data})
    ctx.set(dut.csr_w.valid, 1)
    await ctx.tick().until(dut.csr_w.ready)
    ctx.set(dut.csr_w.valid, 0)


async def _read(ctx, dut, addr: int) -> int:
    ctx.set(dut.csr_raddr, addr)
    await ctx.tick()
    return ctx.get(dut.csr_rdata)


def test_private_gen_registers_between_packets():
    """Request 0 is taken, then the header is written (the write waits: request 0 is held),
    then requests 1-2, another header, request 3: packet 0 carries the reset header, 1-2 the
    first written one, 3 the second."""
    cfg = PrivateCnmConfig()
    rng = _rng("gen")
    heads = [_random_header(rng), _random_header(rng)]
    reqs = [random_private_request(rng) for _ in range(4)]
    dut = PrivateCnmGen(cfg)
    frames, reads, done = FrameAssembler(cfg.data_bytes), [], [False]

    async def sender(ctx):
        reads.append([await _read(ctx, dut, a) for a in range(len(NAMES))])
        plan = [("req", 0), ("hdr", 0), ("req", 1), ("req", 2), ("hdr", 1), ("req", 3)]
        for kind, i in plan:
            if kind == "req":
                await stream_put(ctx, dut.request, [pack_private_request(cfg, reqs[i])])
            else:
                for a, w in enumerate(_words(heads[i])):
                    await _write(ctx, dut, a, w)
                reads.append([await _read(ctx, dut, a) for a in range(len(NAMES))])
        await ctx.tick().repeat(40)
        done[0] = True

    async def receiver(ctx):
        await stream_get(ctx, dut.packet, rng=random.Random(3), p_ready=0.6,
                         on_item=frames.push, until=lambda: done[0])

    run_testbenches(dut, sender, receiver)
    assert reads == [_words(dict(cp_ip=cfg.cp_ip, cpid=cfg.cpid, udp_port=cfg.udp_port,
                                 udp_sport=cfg.udp_sport, dscp=cfg.dscp, ecn=cfg.ecn,
                                 ttl=cfg.ttl))] + [_words(h) for h in heads]
    expect_cfg = [cfg, replace(cfg, **heads[0]), replace(cfg, **heads[0]),
                  replace(cfg, **heads[1])]
    assert len(frames.frames) == 4
    model = PrivateCnmGenModel(cfg)
    for i, (pkt, r, ecfg) in enumerate(zip(frames.frames, reqs, expect_cfg, strict=True)):
        check_private_cnm(ecfg, pkt, r)          # scapy: fields and both checksums
        if i in (1, 3):
            for a, w in enumerate(_words(heads[i // 2])):
                model.write(a, w)
        assert pkt == model.packet(r), i


def test_cp_qcn_pcnm_registers():
    """The L3QCN CP (mode qcn): PCNM_* read back the configuration, frames give private CNMs
    with it; after writes (the CP quiet) they read back the new words and the next private
    CNMs carry them (scapy and the model with the same writes)."""
    cfg = L3qcnCpConfig(mode="qcn")
    rng = _rng("cp")
    head = _random_header(rng)
    model, dut = L3qcnCpModel(cfg), L3qcnCp(cfg)
    codec = LayoutCodec(l3qcn_frame_layout(cfg))
    S = cfg.private.sample_bytes
    # (the first sample comes after 153600 bytes, then one about every 2-3 jumbo frames)
    batches = [[L3qcnFrame(qlen=rng.randrange(100_000, 1 << 20), length=9000,
                           src_ip=rng.getrandbits(32), dst_ip=rng.getrandbits(32),
                           sport=rng.getrandbits(16), dport=rng.getrandbits(16), protocol=17,
                           prio=rng.randrange(8), ip_len=rng.randrange(20, 9001),
                           sample=rng.randbytes(S)) for _ in range(n)] for n in (26, 14)]
    frames, reads, done = FrameAssembler(cfg.private.data_bytes), [], [False]

    def pack(f):
        return codec.pack(dict(qlen=f.qlen, length=f.length, src_ip=f.src_ip, dst_ip=f.dst_ip,
                               sport=f.sport, dport=f.dport, protocol=f.protocol, prio=f.prio,
                               ip_len=f.ip_len, sample=int.from_bytes(f.sample, "little")))

    async def sender(ctx):
        base = L3QCN_CP_PCNM_BASE
        reads.append([await _read(ctx, dut, base + a) for a in range(len(NAMES))])
        await stream_put(ctx, dut.frame, [pack(f) for f in batches[0]])
        await ctx.tick().repeat(60)            # the CP quiet: the write is between packets
        for a, w in enumerate(_words(head)):
            await _write(ctx, dut, base + a, w)
        reads.append([await _read(ctx, dut, base + a) for a in range(len(NAMES))])
        await stream_put(ctx, dut.frame, [pack(f) for f in batches[1]])
        await ctx.tick().repeat(60)
        done[0] = True

    async def receiver(ctx):
        await stream_get(ctx, dut.packet, on_item=frames.push, until=lambda: done[0])

    run_testbenches(dut, sender, receiver)
    p = cfg.private
    assert reads == [_words(dict(cp_ip=p.cp_ip, cpid=p.cpid, udp_port=p.udp_port,
                                 udp_sport=p.udp_sport, dscp=p.dscp, ecn=p.ecn, ttl=p.ttl)),
                     _words(head)]
    expected, header_of = [], []
    for k, batch in enumerate(batches):
        if k == 1:
            for a, w in enumerate(_words(head)):
                model.write(L3QCN_CP_PCNM_BASE + a, w)
        for f in batch:
            pkt = model.frame(f)
            if pkt is not None:
                expected.append((pkt, f))
                header_of.append(p if k == 0 else replace(p, **head))
    print(f"{len(expected)} private CNMs, {sum(h is p for h in header_of)} on the reset header")
    assert [e for e, _ in expected] == frames.frames
    assert sum(h is p for h in header_of) >= 2 and sum(h is not p for h in header_of) >= 2
    for (pkt, f), ecfg in zip(expected, header_of, strict=True):
        q = parse_private_cnm(replace(p, udp_port=ecfg.udp_port), pkt)
        check_private_cnm(ecfg, pkt, PrivateCnmRequest(
            FiveTuple(f.src_ip, f.dst_ip, f.sport, f.dport, f.protocol), q.qntz_fb, q.q_off,
            q.q_delta, f.prio, f.ip_len, f.sample))
