"""The private CNM generator's header fields as run-time registers (``PCNM_*`` in the L3QCN CP's
map, mode ``qcn``): values written at run time appear in the next packets, checked byte for byte
by scapy (it recomputes both checksums from the written addresses and ports) and against the
golden model; a write waiting while a request is held leaves that request's packet on the old
values (applied between packets); every register reads back what was written.

The legal values (``PCNM_LEGAL``, hand-derived here from RFC 791 / 768 / 1122 / 3168): every
check's boundary (the legal extreme and the first illegal value) written to the generator's
RTL, the register and the next packet (scapy) unchanged after a refused write, ``WERR`` sticky
until written 0; the same through the CP top behind AXI4-Lite (``SLVERR``) and the ToR's
``PCNM_UDP_PORT`` (same name, width, reset, legal values); scapy-built private CNMs to a port
changed at run time recognised by the ToR RTL, to the old port passed on as ``other``.
``CC_SEED`` overrides the seed."""

from __future__ import annotations

import os
import random
import struct
from dataclasses import replace

import pytest

from hw.layouts import LayoutCodec, l3qcn_frame_layout
from hw.params import ConfigError
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
from tests.streams import axil_read, axil_write, csr_write, run_testbenches, stream_get, stream_put

try:        # under pytest, tests/ itself is on sys.path
    from tests.test_l3qcn import check_private_cnm, pack_private_request, random_private_request
except ModuleNotFoundError:
    from test_l3qcn import check_private_cnm, pack_private_request, random_private_request

SEED = int(os.environ.get("CC_SEED", 29))
#: register order of PrivateCnmConfig.register_map (word addresses 0..7), then WERR (word 8)
NAMES = ("CP_IP", "CPID_LO", "CPID_HI", "UDP_PORT", "UDP_SPORT", "DSCP", "ECN", "TTL")
WERR = 8
#: (word, value) writes the generator refuses (by hand, docs/l3qcn.md): ECN CE and Not-ECT,
#: TTL 0, destination port 0, a multicast, a loopback and the "this network" source address
CP_REFUSED = [(6, 3), (6, 0), (7, 0), (3, 0), (0, 0xE000_0001), (0, 0x7F00_0001), (0, 0)]


def _rng(tag: str) -> random.Random:
    s = SEED + sum(map(ord, tag))
    print(f"seed {s} (CC_SEED={SEED} reproduces)")
    return random.Random(s)


def _random_header(rng: random.Random) -> dict:
    """New, valid header field values (a PrivateCnmConfig accepts them: scapy's expectation;
    the source address unicast: 1.0.0.0 ... 126.255.255.255 or 128.0.0.0 ... 223.255.255.255)."""
    lo, hi = rng.choice(((0x0100_0000, 0x7EFF_FFFF), (0x8000_0000, 0xDFFF_FFFF)))
    return dict(cp_ip=rng.randint(lo, hi), cpid=rng.getrandbits(64),
                udp_port=rng.randrange(1, 1 << 16), udp_sport=rng.getrandbits(16),
                dscp=rng.randrange(64), ecn=rng.choice((1, 2)), ttl=rng.randrange(1, 256))


def _words(h: dict) -> list[int]:
    """The header as register words in address order, derived by hand (not from the map)."""
    return [h["cp_ip"], h["cpid"] & 0xFFFF_FFFF, h["cpid"] >> 32, h["udp_port"],
            h["udp_sport"], h["dscp"], h["ecn"], h["ttl"]]


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
                    await csr_write(ctx, dut, a, w)
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
    frames, reads, werr, done = FrameAssembler(cfg.private.data_bytes), [], [], [False]

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
            await csr_write(ctx, dut, base + a, w)
        werr.append(await _read(ctx, dut, base + WERR))
        for a, w in CP_REFUSED:                # each refused: nothing changes
            await csr_write(ctx, dut, base + a, w)
        werr.append(await _read(ctx, dut, base + WERR))
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
    assert werr == [0, 1]
    expected, header_of = [], []
    for k, batch in enumerate(batches):
        if k == 1:
            for a, w in list(enumerate(_words(head))) + CP_REFUSED:
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


# ---- legal values: refused writes --------------------------------------------------------------

#: (register, value written, taken?) by hand: every check's legal extremes and first illegal
#: values, in an order where each refused write follows a taken one of another value (so "kept
#: its value" is visible); a value wider than the field is masked first (ECN 6 -> 2, TTL
#: 0x100 -> 0, port 0x10000 -> 0), then checked
CASES = [
    ("CP_IP", 0x0100_0000, True), ("CP_IP", 0x00FF_FFFF, False),    # 1.0.0.0 / 0.255.255.255
    ("CP_IP", 0x7EFF_FFFF, True), ("CP_IP", 0x7F00_0000, False),    # 126.255.255.255 / 127/8
    ("CP_IP", 0x8000_0000, True), ("CP_IP", 0x7FFF_FFFF, False),    # 128.0.0.0 / 127.255.255.255
    ("CP_IP", 0xDFFF_FFFF, True), ("CP_IP", 0xE000_0000, False),    # 223.255.255.255 / 224.0.0.0
    ("CP_IP", 0xFFFF_FFFF, False), ("CP_IP", 0, False),             # broadcast / 0.0.0.0
    ("UDP_PORT", 1, True), ("UDP_PORT", 0, False),
    ("UDP_PORT", 0xFFFF, True), ("UDP_PORT", 0x10000, False),
    ("UDP_SPORT", 0, True), ("DSCP", 63, True), ("CPID_HI", 0, True), ("CPID_LO", 0, True),
    ("ECN", 2, True), ("ECN", 3, False), ("ECN", 1, True), ("ECN", 0, False),
    ("ECN", 4, False), ("ECN", 6, True),
    ("TTL", 1, True), ("TTL", 0, False), ("TTL", 255, True), ("TTL", 0x100, False),
]
#: the field widths (masking), by hand
WIDTH = {"CP_IP": 32, "CPID_LO": 32, "CPID_HI": 32, "UDP_PORT": 16, "UDP_SPORT": 16, "DSCP": 6,
         "ECN": 2, "TTL": 8}


def _expected_walk(cfg: PrivateCnmConfig):
    """For each case: (register value, WERR) read after it, and the header of the packet
    sent after it, derived by hand from CASES (WERR cleared after every third case)."""
    state = dict(zip(NAMES, _words(dict(cp_ip=cfg.cp_ip, cpid=cfg.cpid, udp_port=cfg.udp_port,
                                        udp_sport=cfg.udp_sport, dscp=cfg.dscp, ecn=cfg.ecn,
                                        ttl=cfg.ttl)), strict=True))
    werr, out = 0, []
    for i, (name, value, taken) in enumerate(CASES):
        if taken:
            state[name] = value & ((1 << WIDTH[name]) - 1)
        else:
            werr = 1
        out.append((state[name], werr, dict(state)))
        if i % 3 == 2:
            werr = 0
    return out


def _as_config(cfg: PrivateCnmConfig, state: dict) -> PrivateCnmConfig:
    return replace(cfg, cp_ip=state["CP_IP"], cpid=state["CPID_HI"] << 32 | state["CPID_LO"],
                   udp_port=state["UDP_PORT"], udp_sport=state["UDP_SPORT"], dscp=state["DSCP"],
                   ecn=state["ECN"], ttl=state["TTL"])


def test_model_refuses_illegal_values():
    """The golden model: CASES' outcome, WERR sticky (a taken write leaves it set) and cleared
    by writing 0; the config refuses the same reset values (ConfigError)."""
    cfg = PrivateCnmConfig()
    model = PrivateCnmGenModel(cfg)
    for i, ((name, value, _), (reg, werr, _)) in enumerate(zip(CASES, _expected_walk(cfg),
                                                               strict=True)):
        model.write(NAMES.index(name), value)
        assert (model.read(NAMES.index(name)), model.read(WERR)) == (reg, werr), (name, value)
        if i % 3 == 2:
            model.write(WERR, 0)
    for kw in (dict(cp_ip=0), dict(cp_ip=0x7F00_0001), dict(cp_ip=0xE000_0000), dict(ecn=3),
               dict(ecn=0), dict(ttl=0), dict(udp_port=0)):
        with pytest.raises(ConfigError, match=f"PrivateCnmConfig.{next(iter(kw))} = "):
            PrivateCnmConfig(**kw)
    PrivateCnmConfig(cp_ip=0xDFFF_FFFF, ecn=2, ttl=1, udp_port=0xFFFF)


def test_private_gen_refused_writes_rtl():
    """The generator's RTL walks CASES: after each write the register and WERR read as derived
    by hand, and the next packet (one request per case) carries exactly the registers kept:
    scapy (fields, both checksums) and the model with the same writes."""
    cfg = PrivateCnmConfig()
    rng = _rng("refused")
    reqs = [random_private_request(rng) for _ in CASES]
    dut = PrivateCnmGen(cfg)
    frames, reads, done = FrameAssembler(cfg.data_bytes), [], [False]

    async def sender(ctx):
        for i, ((name, value, _), r) in enumerate(zip(CASES, reqs, strict=True)):
            await csr_write(ctx, dut, NAMES.index(name), value)
            reads.append((await _read(ctx, dut, NAMES.index(name)), await _read(ctx, dut, WERR)))
            if i % 3 == 2:
                await csr_write(ctx, dut, WERR, 0)
            await stream_put(ctx, dut.request, [pack_private_request(cfg, r)])
        await ctx.tick().repeat(40)
        done[0] = True

    async def receiver(ctx):
        await stream_get(ctx, dut.packet, rng=random.Random(4), p_ready=0.8,
                         on_item=frames.push, until=lambda: done[0])

    run_testbenches(dut, sender, receiver)
    walk = _expected_walk(cfg)
    assert reads == [(reg, werr) for reg, werr, _ in walk]
    assert len(frames.frames) == len(CASES)
    model = PrivateCnmGenModel(cfg)
    for i, (pkt, r, (name, value, _), (_, _, state)) in enumerate(
            zip(frames.frames, reqs, CASES, walk, strict=True)):
        check_private_cnm(_as_config(cfg, state), pkt, r)
        model.write(NAMES.index(name), value)
        assert pkt == model.packet(r), (i, name, value)


# ---- the tops behind AXI4-Lite: SLVERR, WERR, one PCNM_UDP_PORT for CP and ToR ------------------

#: the same software sequence for the CP's and the ToR's PCNM_UDP_PORT: (value, response),
#: then the value read back and WERR; by hand (0 OKAY, 2 SLVERR; "clear": WERR written 0)
PORT_SEQUENCE = [(0, 2, 1021, 1), (1, 0, 1, 1), (0x10000, 2, 1, 1), (0xFFFF, 0, 0xFFFF, 1),
                 ("clear", 0, 0xFFFF, 0), (4791, 0, 4791, 0), (0, 2, 4791, 1)]
EXPECTED_PORT_SEQUENCE = [(r, v, w) for _, r, v, w in PORT_SEQUENCE]


async def _port_sequence(ctx, dut, port_word: int, werr_word: int) -> list:
    """PORT_SEQUENCE through AXI4-Lite: (response, read-back, WERR) after each write."""
    got = []
    for value, *_ in PORT_SEQUENCE:
        if value == "clear":
            resp = await axil_write(ctx, dut, werr_word, 0)
        else:
            resp = await axil_write(ctx, dut, port_word, value)
        got.append((resp, await axil_read(ctx, dut, port_word),
                    await axil_read(ctx, dut, werr_word)))
    return got


def test_cp_axi_lite_refused():
    """``l3qcn_cp_qcn`` behind AXI4-Lite (words by hand from docs/l3qcn.md: PCNM_* at 0x30 +
    the generator's word): PORT_SEQUENCE on ``PCNM_UDP_PORT`` (the ToR's test runs the same
    one: one software value configures both), then SLVERR for CE / Not-ECT, TTL 0 and a
    multicast source (the value kept), OKAY for their legal extremes and source port 0."""
    from hw.lib.axi_lite import AxiLiteRegs

    dut = AxiLiteRegs(L3qcnCp(L3qcnCpConfig(mode="qcn")))
    ecn, ttl, cp_ip, sport = 0x36, 0x37, 0x30, 0x34
    extra = [(ecn, 3, 2, 1), (ecn, 0, 2, 1), (ecn, 2, 0, 2), (ttl, 0, 2, 64), (ttl, 255, 0, 255),
             (ttl, 1, 0, 1), (cp_ip, 0xE000_0000, 2, 0x0A00_FF01),
             (cp_ip, 0xDFFF_FFFF, 0, 0xDFFF_FFFF), (sport, 0, 0, 0)]
    got = []

    async def bench(ctx):
        got.extend(await _port_sequence(ctx, dut, 0x33, 0x38))
        for word, value, _, _ in extra:
            got.append((await axil_write(ctx, dut, word, value),
                        await axil_read(ctx, dut, word)))

    run_testbenches(dut, bench)
    assert got == EXPECTED_PORT_SEQUENCE + [(r, v) for *_, r, v in extra]


def test_shared_port_register_declaration():
    """The CP's and the ToR's ``PCNM_UDP_PORT``: one name, field, width, reset and legal
    values (one software value configures both)."""
    from hw.switch.l3qcn_config import L3qcnTorConfig
    for private in (PrivateCnmConfig(), PrivateCnmConfig(udp_port=4791)):
        cp = L3qcnCpConfig(mode="qcn", private=private).register_map()["PCNM_UDP_PORT"]
        tor = L3qcnTorConfig(private=private).register_map()["PCNM_UDP_PORT"]
        fields = [(f.name, f.offset, f.width, f.access, f.reset, f.legal)
                  for f in (cp.fields[0], tor.fields[0])]
        assert fields[0] == fields[1] == ("udp_port", 0, 16, "rw", private.udp_port,
                                          ((1, 0xFFFF),))


# ---- the ToR's run-time PCNM_UDP_PORT: scapy-built private CNMs ----------------------------------

def scapy_private_cnm(cfg: PrivateCnmConfig, r: PrivateCnmRequest, dport: int) -> bytes:
    """A private CNM to UDP ``dport`` built by scapy (both checksums) around a PDU packed with
    struct from the layout table of docs/l3qcn.md (not by the model)."""
    from scapy.layers.inet import IP, UDP
    from scapy.packet import Raw

    f = r.flow
    pdu = struct.pack(">BBHQhhIIHHBBH", 0x10, r.qntz_fb, r.enc_prio << 13, cfg.cpid, r.q_off,
                      r.q_delta, f.src_ip, f.dst_ip, f.sport, f.dport, f.protocol, 0,
                      r.msdu_len)
    n = min(r.msdu_len, cfg.sample_bytes)
    sample = r.sample[:n] + bytes(cfg.sample_bytes - n)

    def ip(x):
        return ".".join(str(b) for b in x.to_bytes(4, "big"))
    return bytes(IP(src=ip(cfg.cp_ip), dst=ip(f.src_ip), tos=cfg.dscp << 2 | cfg.ecn, id=0,
                    flags="DF", ttl=cfg.ttl) / UDP(sport=cfg.udp_sport, dport=dport)
                 / Raw(pdu + sample))


#: the ToR's steps, by hand: ("w", value, kept value read back, WERR, AXI4-Lite response),
#: ("p", UDP port of the packet, recognised as a private CNM?) or ("s", port, recognised?,
#: value written (taken) between the packet's first beats and the rest)
TOR_STEPS = [
    ("p", 1021, True), ("p", 4791, False),            # the reset port (the build value)
    ("w", 4791, 4791, 0, 0),
    ("p", 1021, False), ("p", 4791, True),            # the old port is passed on: other
    ("w", 0, 4791, 1, 2),                             # refused: port and parser unchanged
    ("p", 4791, True), ("p", 0, False),
    ("w", 0xFFFF, 0xFFFF, 1, 0), ("p", 0xFFFF, True), ("p", 4791, False),
    ("w", 1, 1, 1, 0), ("p", 1, True), ("p", 0xFFFF, False),
    ("w", 0x10000, 1, 1, 2), ("p", 1, True),          # 0x10000: the field's 0, refused
    # a write while a packet is in the converter (between its beats) applies from the next
    # packet: this one is still matched with port 1
    ("s", 1, True, 4791), ("p", 4791, True), ("p", 1, False),
]


def test_tor_port_runtime():
    """``PCNM_UDP_PORT`` of the ToR's RTL (behind AXI4-Lite, words 0x0C / 0x0D by hand)
    changed at run time: first PORT_SEQUENCE (the CP's test runs the same one), then
    TOR_STEPS: scapy-built private CNMs of a learnt flow to the new port give CNMs, to the old
    one (or to a refused value) are counted ``other``; responses, read-backs and WERR by hand,
    the CNM frames equal the model's (same writes), the counters are the hand-counted ones."""
    from hw.layouts import tor_learn_layout
    from hw.lib.axi_lite import AxiLiteRegs
    from hw.switch.l3qcn import L3qcnTor
    from hw.switch.l3qcn_config import L3qcnTorConfig
    from sim.models.cnp import frame_beats
    from sim.models.l3qcn import FlowInfo, TorModel, five_tuple_key, flow_info_value

    cfg = L3qcnTorConfig(buckets=4, ways=1)
    pcfg, rng = cfg.private, _rng("tor")
    flow = FiveTuple(0x0A00_0001, 0x0A00_0202, 1234, 4791, 17)
    info = FlowInfo(0x02_00_00_00_AB_CD, 77, 12)
    pkts = {i: scapy_private_cnm(pcfg, random_private_request(rng, flow), step[1])
            for i, step in enumerate(TOR_STEPS) if step[0] in "ps"}
    dut = AxiLiteRegs(L3qcnTor(cfg))
    frames, reads, counters, done = FrameAssembler(pcfg.data_bytes), [], {}, [False]
    sequence, split = [], []

    async def sender(ctx):
        await stream_put(ctx, dut.learn, [LayoutCodec(tor_learn_layout()).pack(
            {"flow": five_tuple_key(flow), "info": flow_info_value(info)})])
        sequence.extend(await _port_sequence(ctx, dut, 0x0C, 0x0D))
        sequence.append((await axil_write(ctx, dut, 0x0C, 1021),
                         await axil_write(ctx, dut, 0x0D, 0)))       # back to the reset port
        for i, step in enumerate(TOR_STEPS):
            if step[0] == "w":
                resp = await axil_write(ctx, dut, 0x0C, step[1])
                reads.append((await axil_read(ctx, dut, 0x0C),
                              await axil_read(ctx, dut, 0x0D), resp))
            elif step[0] == "s":
                beats = frame_beats(pcfg, pkts[i])
                await stream_put(ctx, dut.packet, beats[:2])
                split.append(await axil_write(ctx, dut, 0x0C, step[3]))
                await stream_put(ctx, dut.packet, beats[2:])
                await ctx.tick().repeat(30)
            else:
                await stream_put(ctx, dut.packet, frame_beats(pcfg, pkts[i]))
                await ctx.tick().repeat(30)         # dealt with before the next write
        await ctx.tick().repeat(40)
        counters.update(cnms=ctx.get(dut.cnms), other=ctx.get(dut.other),
                        malformed=ctx.get(dut.malformed))
        done[0] = True

    async def receiver(ctx):
        await stream_get(ctx, dut.cnm, on_item=frames.push, until=lambda: done[0])

    run_testbenches(dut, sender, receiver)
    assert sequence == EXPECTED_PORT_SEQUENCE + [(0, 0)]
    assert reads == [s[2:] for s in TOR_STEPS if s[0] == "w"]
    assert split == [0]
    hits = sum(1 for s in TOR_STEPS if s[0] in "ps" and s[2])
    assert counters == {"cnms": hits, "other": len(pkts) - hits, "malformed": 0}
    model = TorModel(cfg)
    model.learn(flow, info)
    expected = []
    for i, step in enumerate(TOR_STEPS):
        if step[0] == "w":
            model.write(0x0C, step[1])
        else:
            cnm = model.receive(pkts[i])       # (a split packet: before the write)
            assert (cnm is not None) == step[2], i
            if cnm is not None:
                expected.append(cnm)
            if step[0] == "s":
                model.write(0x0C, step[3])
    assert frames.frames == expected
    for c in frames.frames:        # to the learnt host's MAC
        assert c[:6] == info.src_mac.to_bytes(6, "big")
