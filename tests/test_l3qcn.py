"""L3QCN golden models: configuration errors, the private CNM against scapy's IPv4/UDP and an
independent parse of the layout table of docs/l3qcn.md, the ToR's classification of malformed
and foreign packets, the two tables' model API (a miss never gives another key's value), the
switch-built CNP against scapy.contrib.roce, the ToR's CNM against the IEEE 802.1Qau CNM PDU layout,
and the private CNM generator's RTL in Amaranth's simulator.  Helpers are shared with the
cocotb testbenches (cocotb_tests/l3qcn_*_tb.py)."""

import random
import struct

import pytest
from scapy.layers.inet import IP, UDP
from scapy.packet import Raw

from hw.layouts import HtStatus, LayoutCodec, private_cnm_request_layout
from hw.params import ConfigError
from hw.switch.hash_table_config import HashTableConfig
from hw.switch.l3qcn import PrivateCnmGen
from hw.switch.l3qcn_config import L3qcnCpConfig, L3qcnTorConfig, PrivateCnmConfig
from sim.models.cnp import CnpRequest
from sim.models.l3qcn import (
    CnpQpTableModel,
    FiveTuple,
    FlowIdTableModel,
    FlowInfo,
    L3qcnCpModel,
    L3qcnFrame,
    PrivateCnmRequest,
    TorModel,
    build_private_cnm,
    classify,
    cnp_qp_key,
    parse_private_cnm,
)
from sim.models.packets import FrameAssembler
from tests.streams import run_testbenches, stream_get, stream_put

try:        # from the cocotb testbenches (the repository root on sys.path)
    from tests.test_cnm import parse_cnm, run_stream_rtl
    from tests.test_cnp import scapy_frame
except ModuleNotFoundError:     # under pytest, tests/ itself is on sys.path
    from test_cnm import parse_cnm, run_stream_rtl
    from test_cnp import scapy_frame


# ---- helpers shared with the cocotb testbenches --------------------------------------------------

def random_flow(rng: random.Random) -> FiveTuple:
    return FiveTuple(rng.getrandbits(32), rng.getrandbits(32), rng.getrandbits(16),
                     rng.getrandbits(16), rng.choice((6, 17, rng.getrandbits(8))))


def random_private_request(rng: random.Random, flow: FiveTuple | None = None):
    return PrivateCnmRequest(flow or random_flow(rng), rng.randrange(64),
                             rng.randint(-32768, 32767), rng.randint(-32768, 32767),
                             rng.randrange(8), rng.choice((0, 1, 15, 16, 17, 1500,
                                                           rng.getrandbits(16))),
                             rng.randbytes(64))


def pack_private_request(cfg: PrivateCnmConfig, r: PrivateCnmRequest) -> int:
    S = cfg.sample_bytes
    return LayoutCodec(private_cnm_request_layout(cfg)).pack(dict(
        src_ip=r.flow.src_ip, dst_ip=r.flow.dst_ip, sport=r.flow.sport, dport=r.flow.dport,
        protocol=r.flow.protocol, qntz_fb=r.qntz_fb, q_off=r.q_off & 0xFFFF,
        q_delta=r.q_delta & 0xFFFF, enc_prio=r.enc_prio, msdu_len=r.msdu_len,
        sample=int.from_bytes(r.sample[:S], "little")))


def _ip(x: int) -> str:
    return ".".join(str(b) for b in x.to_bytes(4, "big"))


def check_private_cnm(cfg: PrivateCnmConfig, pkt: bytes, r: PrivateCnmRequest) -> None:
    """scapy parses the packet as IPv4/UDP/Raw with correct checksums (it recomputes both and
    must get the same bytes); the payload, parsed with struct from the docs' layout table,
    holds the request's fields."""
    s = IP(pkt)
    assert (s.version, s.ihl, s.len, s.proto, s.flags, s.frag, s.ttl, s.id) == \
        (4, 5, cfg.packet_bytes, 17, "DF", 0, cfg.ttl, 0)
    assert (s.src, s.dst, s.tos) == (_ip(cfg.cp_ip), _ip(r.flow.src_ip),
                                     cfg.dscp << 2 | cfg.ecn)
    assert (s[UDP].sport, s[UDP].dport, s[UDP].len) == (cfg.udp_sport, cfg.udp_port,
                                                        cfg.udp_length)
    fresh = s.copy()
    del fresh.chksum
    del fresh[UDP].chksum
    assert bytes(fresh) == pkt, "scapy computes other checksums"
    payload = s[Raw].load
    (b0, b1, prio, cpid, q_off, q_delta, src, dst, sport, dport, proto, resv3,
     msdu_len) = struct.unpack(">BBHQhhIIHHBBH", payload[:32])
    assert (b0 >> 4, b0 & 15, b1 >> 6, b1 & 63, prio >> 13, prio & 0x1FFF) == \
        (1, 0, 0, r.qntz_fb, r.enc_prio, 0)
    assert (cpid, q_off, q_delta, msdu_len, resv3) == (cfg.cpid, r.q_off, r.q_delta,
                                                       r.msdu_len, 0)
    assert FiveTuple(src, dst, sport, dport, proto) == r.flow
    n = min(r.msdu_len, cfg.sample_bytes)
    assert payload[32:] == r.sample[:n] + bytes(cfg.sample_bytes - n)


def _fix_ip_checksum(pkt: bytearray) -> None:
    pkt[10:12] = b"\0\0"
    total = sum(int.from_bytes(pkt[i:i + 2], "big") for i in range(0, 20, 2))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    pkt[10:12] = (~total & 0xFFFF).to_bytes(2, "big")


def mutations(cfg: PrivateCnmConfig, pkt: bytes, rng: random.Random):
    """(expected kind, packet) variants of a valid private CNM: each breaks one rule (the IPv4
    checksum refreshed unless it is the rule broken)."""
    out = []

    def variant(kind, edit, fix=True):
        p = bytearray(pkt)
        edit(p)
        if fix:
            _fix_ip_checksum(p)
        out.append((kind, bytes(p)))

    variant("malformed", lambda p: p.__setitem__(10, p[10] ^ 0x10), fix=False)  # IP checksum
    variant("malformed", lambda p: p.__setitem__(26, p[26] ^ 0x01))     # UDP checksum
    variant("malformed", lambda p: p.__setitem__(6, p[6] | 0x20))       # more fragments
    variant("malformed", lambda p: p.__setitem__(7, 1))                 # fragment offset
    variant("malformed", lambda p: p.__setitem__(25, p[25] + 1))        # UDP length
    variant("malformed", lambda p: p.__setitem__(28, 0x00))             # PDU version 0
    variant("malformed", lambda p: p.__setitem__(3, p[3] + 2))          # IPv4 total length
    out.append(("malformed", pkt[:rng.randrange(24, len(pkt))]))       # truncated
    out.append(("malformed", pkt + rng.randbytes(rng.randrange(1, 80))))  # too long
    variant("other", lambda p: p.__setitem__(23, p[23] ^ 0x04))         # another UDP port
    variant("other", lambda p: p.__setitem__(9, 6))                     # TCP
    variant("other", lambda p: p.__setitem__(0, 0x46))                  # IPv4 options
    variant("other", lambda p: p.__setitem__(0, 0x60))                  # not IPv4
    out.append(("other", pkt[:rng.randrange(1, 24)]))                  # runt
    # UDP checksum 0 (none) is valid IPv4 UDP: still a private CNM
    variant("cnm", lambda p: p.__setitem__(slice(26, 28), b"\0\0"))
    return out


# ---- configuration -------------------------------------------------------------------------------

@pytest.mark.parametrize("make, text", [
    (lambda: PrivateCnmConfig(sample_bytes=15), "PrivateCnmConfig.sample_bytes = 15 .*even"),
    (lambda: PrivateCnmConfig(udp_port=0), "PrivateCnmConfig.udp_port = 0"),
    (lambda: PrivateCnmConfig(ecn=0), "PrivateCnmConfig.ecn = 0"),
    (lambda: L3qcnCpConfig(mode="l2"), "L3qcnCpConfig.mode = 'l2'"),
    (lambda: L3qcnCpConfig(buckets=3), "HashTableConfig.buckets = 3"),
    (lambda: L3qcnTorConfig(cnm_pcp=9), "CnmGenConfig.cnm_pcp = 9"),
])
def test_config_errors(make, text):
    with pytest.raises(ConfigError, match=text):
        make()


def test_cp_config_rejects_cnp_with_l2_or_ipv6():
    from hw.nic.cnp_config import CnpGenConfig
    for cnp in (CnpGenConfig(), CnpGenConfig(ip_version=6, l2="none")):
        with pytest.raises(ConfigError, match="L3qcnCpConfig.cnp = .*ip_version 4, l2 'none'"):
            L3qcnCpConfig(cnp=cnp)


# ---- private CNM ---------------------------------------------------------------------------------

#: written by hand from the layout table of docs/l3qcn.md, default configuration
GOLDEN_REQ = PrivateCnmRequest(FiveTuple(0x0A000001, 0x0A000102, 1234, 80, 6), 20, -3, 5, 5,
                               1500, bytes(range(40)))
GOLDEN = bytes.fromhex(
    "45c1004c" "00004000" "401126de" "0a00ff01" "0a000001"   # IPv4: DSCP 48 ECT(1), 76 B, DF
    "03fd03fd" "00381422"                                     # UDP 1021 -> 1021, 56 B, checksum
    "10" "14" "a000"                                          # version 1; qntzFb 20; prio 5
    "02000000c0010005" "fffd" "0005"                          # CPID; QOffset -3; QDelta 5
    "0a000001" "0a000102" "04d2" "0050" "06" "00" "05dc"      # 5-tuple; resv; MSDU length
    "000102030405060708090a0b0c0d0e0f")                       # 16 sampled bytes


def test_golden_private_cnm():
    cfg = PrivateCnmConfig()
    assert build_private_cnm(cfg, GOLDEN_REQ) == GOLDEN
    check_private_cnm(cfg, GOLDEN, GOLDEN_REQ)


@pytest.mark.parametrize("cfg", [PrivateCnmConfig(), PrivateCnmConfig(sample_bytes=0),
                                 PrivateCnmConfig(sample_bytes=64, udp_port=49152)])
def test_private_cnm_against_scapy_and_parse(cfg):
    rng = random.Random(11)
    for _ in range(60):
        r = random_private_request(rng)
        pkt = build_private_cnm(cfg, r)
        check_private_cnm(cfg, pkt, r)
        p = parse_private_cnm(cfg, pkt)
        assert (p.flow, p.qntz_fb, p.q_off, p.q_delta, p.enc_prio, p.msdu_len, p.cpid,
                p.cp_ip) == (r.flow, r.qntz_fb, r.q_off, r.q_delta, r.enc_prio, r.msdu_len,
                             cfg.cpid, cfg.cp_ip)


def test_classify_mutations():
    cfg, rng = PrivateCnmConfig(), random.Random(12)
    seen = set()
    for _ in range(20):
        pkt = build_private_cnm(cfg, random_private_request(rng))
        assert classify(cfg, pkt)[0] == "cnm"
        for kind, bad in mutations(cfg, pkt, rng):
            assert classify(cfg, bad)[0] == kind, (kind, bad.hex())
            seen.add(kind)
    assert seen == {"cnm", "malformed", "other"}


# ---- tables --------------------------------------------------------------------------------------

def test_cnp_qp_table_api_and_no_wrong_qp():
    cfg = HashTableConfig.cnp_qp(buckets=4, ways=1)
    t, rng = CnpQpTableModel(cfg), random.Random(13)
    pairs = [(rng.getrandbits(32), rng.getrandbits(24)) for _ in range(400)]
    same = [p for p in pairs if cfg.buckets_of(cnp_qp_key(*p)) ==
            cfg.buckets_of(cnp_qp_key(*pairs[0]))][:3]      # the same two candidate buckets
    assert t.add(*same[0], 0x111) == HtStatus.OK and t.add(*same[1], 0x222) == HtStatus.OK
    assert t.add(*same[0], 0x333) == HtStatus.DUPLICATE
    assert t.add(*same[2], 0x444) == HtStatus.FULL                 # both candidates full
    assert t.lookup(*same[2]) is None and t.misses == 1            # never 0x111 / 0x222
    assert t.lookup(same[0][0], same[0][1] ^ 1) is None            # one bit away: a miss
    assert (t.lookup(*same[0]), t.lookup(*same[1])) == (0x111, 0x222)
    assert t.remove(*same[0]) == HtStatus.OK and t.remove(*same[0]) == HtStatus.NOT_FOUND
    assert t.lookup(*same[0]) is None and t.misses == 3
    assert t.add(*same[2], 0x444) == HtStatus.OK and t.lookup(*same[2]) == 0x444


def test_flow_id_table_learn_refresh_full():
    cfg = HashTableConfig.flow_id(buckets=4, ways=1)
    t = FlowIdTableModel(cfg)
    rng = random.Random(14)
    flows = [random_flow(rng) for _ in range(100)]
    a, b, c = [f for f in flows if cfg.buckets_of(_key(f)) == cfg.buckets_of(_key(flows[0]))][:3]
    assert t.learn(a, FlowInfo(1, 2, 3)) == HtStatus.OK
    assert t.learn(a, FlowInfo(4, 5, 6)) == HtStatus.REFRESHED
    assert t.learn(b, FlowInfo(7, 8, 9)) == HtStatus.OK
    assert t.learn(c, FlowInfo(7, 8, 9)) == HtStatus.FULL and t.full == 1
    assert t.lookup(a) == FlowInfo(4, 5, 6) and t.lookup(c) is None and t.misses == 1


def _key(f):
    from sim.models.l3qcn import five_tuple_key
    return five_tuple_key(f)


# ---- congestion point and ToR models -------------------------------------------------------------

def congested_frames(rng, n, flows, extra):
    """Frames that find a queue well above Q_eq (every sample is a CNM)."""
    return [L3qcnFrame(qlen=rng.randrange(60_000, 200_000), length=rng.randrange(64, 9000),
                       **extra(rng, rng.choice(flows))) for _ in range(n)]


def roce_fields(rng, flow):
    ip_src, ip_dst, qp, sport, roce = flow
    return dict(src_ip=ip_src, dst_ip=ip_dst, sport=sport, dqpn=qp, roce=roce)


def qcn_fields(rng, flow: FiveTuple):
    return dict(src_ip=flow.src_ip, dst_ip=flow.dst_ip, sport=flow.sport, dport=flow.dport,
                protocol=flow.protocol, prio=rng.randrange(8), ip_len=rng.randrange(20, 9000),
                sample=rng.randbytes(16))


def test_cp_roce_cnp_against_scapy_and_misses():
    cfg = L3qcnCpConfig(mode="roce")
    cp, rng = L3qcnCpModel(cfg), random.Random(15)
    flows = [(rng.getrandbits(32), rng.getrandbits(32), rng.getrandbits(24),
              rng.getrandbits(16), rng.random() < 0.9) for _ in range(30)]
    known = {}
    for _src, dst, qp, _, _ in flows[:20]:
        known[(dst, qp)] = rng.getrandbits(24)
        assert cp.table.add(dst, qp, known[(dst, qp)]) == HtStatus.OK
    cnps = 0
    for f in congested_frames(rng, 3000, flows, extra=roce_fields):
        pkt = cp.frame(f)
        if pkt is None:
            continue
        cnps += 1
        qp = known[(f.dst_ip, f.dqpn)]          # only known flows get a CNP
        assert f.roce
        assert pkt == scapy_frame(cfg.cnp, cp.cnp.regs, CnpRequest(
            dqpn=qp, src_ip=f.dst_ip, dst_ip=f.src_ip, udp_sport=f.sport))
    assert cnps > 20 and cp.no_qp > 5 and cp.not_roce > 0
    assert cnps + cp.no_qp + cp.not_roce == cp.cp.cnms == cp.notifications + cp.no_qp \
        + cp.not_roce


def test_cp_qcn_to_tor_to_cnm():
    """Private CNMs of the CP model through the ToR model: CNM fields (independent parse of
    the IEEE 802.1Qau CNM PDU) carry the remote CPID, the feedback and what the ToR learnt."""
    cp_cfg, tor_cfg = L3qcnCpConfig(mode="qcn"), L3qcnTorConfig()
    cp, tor, rng = L3qcnCpModel(cp_cfg), TorModel(tor_cfg), random.Random(16)
    flows = [random_flow(rng) for _ in range(10)]
    info = {f: FlowInfo(rng.getrandbits(48), rng.getrandbits(16), rng.getrandbits(12))
            for f in flows[:7]}
    for f, i in info.items():
        assert tor.learn(f, i) == HtStatus.OK
    cnms = 0
    for fr in congested_frames(rng, 2000, flows, extra=qcn_fields):
        pkt = cp.frame(fr)
        if pkt is None:
            continue
        p = parse_private_cnm(cp_cfg.private, pkt)
        cnm = tor.receive(pkt)
        flow = FiveTuple(fr.src_ip, fr.dst_ip, fr.sport, fr.dport, fr.protocol)
        if flow not in info:
            assert cnm is None
            continue
        cnms += 1
        c = parse_cnm(cnm)
        n = min(fr.ip_len, 16)
        assert (c["dst"], c["src"], c["vid"], c["rpid"], c["pcp"], c["ethertype"]) == \
            (info[flow].src_mac, tor_cfg.tor_mac, info[flow].vid, info[flow].rpid,
             tor_cfg.cnm_pcp, 0x22E7)
        assert (c["qntz_fb"], c["cpid"], c["q_off"], c["q_delta"], c["prio"], c["enc_dst"],
                c["msdu_len"]) == (p.qntz_fb, cp_cfg.private.cpid, p.q_off, p.q_delta,
                                   fr.prio, tor_cfg.tor_mac, fr.ip_len)
        assert c["rest"][:n] == fr.sample[:n]
    assert cnms > 20 and tor.misses > 5 and tor.cnms == cnms and tor.malformed == 0


# ---- RTL of the private CNM generator (Amaranth simulation) --------------------------------------

def run_private_gen(cfg, requests, p_ready=0.7):
    return run_stream_rtl(PrivateCnmGen(cfg), [pack_private_request(cfg, r) for r in requests],
                          cfg.data_bytes, p_ready, out="packet")


@pytest.mark.parametrize("cfg", [PrivateCnmConfig(), PrivateCnmConfig(sample_bytes=0,
                                                                       data_bytes=4),
                                 PrivateCnmConfig(sample_bytes=64, data_bytes=16)])
def test_private_gen_rtl_matches_model(cfg):
    rng = random.Random(17)
    reqs = [GOLDEN_REQ] + [random_private_request(rng) for _ in range(30)]
    assert run_private_gen(cfg, reqs) == [build_private_cnm(cfg, r) for r in reqs]


# ---- RTL of the ToR converter, small configurations (Amaranth simulation) ----------------------

def run_tor_rtl(cfg, learns, packets):
    """Learns first, then packets, one at a time; returns the CNM frames and the counters."""
    from hw.layouts import tor_learn_layout
    from hw.switch.l3qcn import L3qcnTor
    from sim.models.cnp import frame_beats
    from sim.models.l3qcn import five_tuple_key, flow_info_value

    dut = L3qcnTor(cfg)
    learn = LayoutCodec(tor_learn_layout())
    frames, done = FrameAssembler(cfg.private.data_bytes), [False]

    async def sender(ctx):
        await stream_put(ctx, dut.learn, [learn.pack({"flow": five_tuple_key(flow),
                                                      "info": flow_info_value(info)})
                                          for flow, info in learns])
        await stream_put(ctx, dut.packet, [b for pkt in packets
                                           for b in frame_beats(cfg.private, pkt)])
        await ctx.tick().repeat(40)
        done[0] = True

    async def receiver(ctx):
        await stream_get(ctx, dut.cnm, rng=random.Random(5), p_ready=0.7,
                         on_item=frames.push, until=lambda: done[0])
        counters.update({n: ctx.get(getattr(dut, n)) for n in
                         ("cnms", "other", "malformed", "misses", "full", "occupancy")})

    counters = {}
    run_testbenches(dut, sender, receiver)
    return frames.frames, counters


@pytest.mark.parametrize("private", [PrivateCnmConfig(sample_bytes=0, data_bytes=4),
                                     PrivateCnmConfig(sample_bytes=64, data_bytes=16,
                                                      udp_port=65535)])
def test_tor_rtl_small_configs(private):
    cfg = L3qcnTorConfig(private=private, buckets=4, ways=1)
    rng, model = random.Random(18), TorModel(cfg)
    flows = [random_flow(rng) for _ in range(8)]
    learns = [(f, FlowInfo(rng.getrandbits(48), rng.getrandbits(16), rng.getrandbits(12)))
              for f in flows[:6]]
    for f, i in learns:
        model.learn(f, i)
    packets = []
    for _ in range(12):
        pkt = build_private_cnm(private, random_private_request(rng, rng.choice(flows)))
        packets.append(pkt)
        packets.append(rng.choice(mutations(private, pkt, rng))[1])
    expected = [c for c in (model.receive(p) for p in packets) if c is not None]
    frames, counters = run_tor_rtl(cfg, learns, packets)
    assert frames == expected and len(expected) >= 3 and model.full > 0 and model.misses > 0
    assert counters == {"cnms": model.cnms, "other": model.other,
                        "malformed": model.malformed, "misses": model.misses,
                        "full": model.full, "occupancy": model.flows.table.occupancy}
