"""Directed boundary tests of the L3QCN blocks (``hw/switch/l3qcn.py``) for the mutants the
random runs of ``tests/test_l3qcn.py`` leave alive: the UDP checksum's 0 -> 0xFFFF rule, a
checksum sum whose first end-around-carry fold carries, the generator's and the ToR's
documented cycle counts, the ToR's length bounds (23 / 24 bytes, a frame longer than 65535
bytes, more beats than the capture), the port taken with the first beat, the saturating
counters, the congestion point in both modes (a CNP-QP table hit) and every register window
(every word written and read back against the golden model).  Expected values are derived by
hand in the docstrings, checked with scapy (RFC 768) and/or the golden model."""

from __future__ import annotations

import random

import pytest

from hw.layouts import HtOp, LayoutCodec, tor_learn_layout
from hw.switch.l3qcn import L3qcnCp, L3qcnTor, PrivateCnmGen
from hw.switch.l3qcn_config import L3qcnCpConfig, L3qcnTorConfig, PrivateCnmConfig
from hw.switch.qcn_cp_config import QcnCpConfig
from sim.models.cnp import frame_beats
from sim.models.l3qcn import (
    FlowInfo,
    L3qcnCpModel,
    L3qcnFrame,
    PrivateCnmRequest,
    TorModel,
    build_private_cnm,
    classify,
    five_tuple_key,
    flow_info_value,
)
from sim.models.packets import FrameAssembler
from tests.streams import csr_write, run_testbenches, stream_put
from tests.test_l3qcn import (
    GOLDEN_REQ,
    check_private_cnm,
    pack_private_request,
    run_private_gen,
    run_tor_rtl,
)

# ---- independent one's-complement arithmetic (RFC 768 / RFC 1071) ------------------------------


def word_total(b: bytes) -> int:
    """The plain (unfolded) sum of the 16-bit big-endian words of ``b``."""
    return sum(int.from_bytes(b[i:i + 2], "big") for i in range(0, len(b), 2))


def fold(t: int) -> int:
    while t >> 16:
        t = (t & 0xFFFF) + (t >> 16)
    return t


def udp_total(pkt: bytes, udp_length: int, zero_checksum: bool) -> int:
    """The UDP checksum's word total: pseudo header (source and destination IP = IPv4 bytes
    12..20, protocol 17, UDP length) + the UDP header and payload (the checksum field taken
    as 0 if ``zero_checksum``: the sender's sum)."""
    udp = bytearray(pkt[20:])
    if zero_checksum:
        udp[6:8] = b"\0\0"
    return word_total(pkt[12:20]) + 17 + udp_length + word_total(bytes(udp))


def with_q_delta(r: PrivateCnmRequest, q: int) -> PrivateCnmRequest:
    return PrivateCnmRequest(r.flow, r.qntz_fb, r.q_off, q - 0x10000 if q >> 15 else q,
                             r.enc_prio, r.msdu_len, r.sample)


def first_request(cfg: PrivateCnmConfig, want) -> tuple[PrivateCnmRequest, bytes]:
    """GOLDEN_REQ with the first QDelta (a free 16-bit PDU word) whose packet satisfies
    ``want(packet)``."""
    for q in range(0x10000):
        r = with_q_delta(GOLDEN_REQ, q)
        pkt = build_private_cnm(cfg, r)
        if want(pkt):
            return r, pkt
    raise AssertionError("no QDelta satisfies the condition")


def first_fold_carries(t: int) -> bool:
    """The first end-around-carry fold of the total ``t`` carries out of 16 bits."""
    return (t & 0xFFFF) + (t >> 16) > 0xFFFF


# ---- private CNM generator -----------------------------------------------------------------------

def test_private_gen_udp_checksum_zero_is_sent_as_ffff():
    """RFC 768: a UDP checksum that computes to 0 is transmitted as all ones (0xFFFF; 0 means
    "no checksum").  The request's QDelta is chosen so that the sender's one's-complement sum
    (pseudo header + UDP, checksum field 0; computed here with plain integer arithmetic) is
    0xFFFF, i.e. its complement is 0: the RTL must send 0xFFFF (scapy recomputes it, its own
    RFC 768 rule, and gets the same bytes).  A second request's sum has a first fold that
    carries out of 16 bits (low half + high half > 0xFFFF): a pipeline dropping that carry
    sends a wrong checksum."""
    cfg = PrivateCnmConfig()
    r0, p0 = first_request(cfg, lambda p: fold(udp_total(p, cfg.udp_length, True)) == 0xFFFF)
    assert p0[26:28] == b"\xff\xff"
    check_private_cnm(cfg, p0, r0)
    r1, p1 = first_request(cfg, lambda p: first_fold_carries(udp_total(p, cfg.udp_length, True)))
    check_private_cnm(cfg, p1, r1)
    assert run_private_gen(cfg, [r0, r1, GOLDEN_REQ], p_ready=1.0) == [p0, p1,
                                                                       build_private_cnm(
                                                                           cfg, GOLDEN_REQ)]


def test_private_gen_latency_at_the_defaults():
    """The documented latency: at the defaults (sample_bytes 16) the UDP sum has 6 + 28 = 34
    words (pseudo header 6, UDP header 4, PDU 16, sample 8): ceil(log2 34) = 6 adder levels;
    the tree's bound 34 * 0xFFFF needs two folds (after the first: 0xFFFF + 32 > 0xFFFF), and
    the complement is registered: ``levels`` = 9.  The request is registered on the edge that
    takes it (edge 0), the adder levels on edges 1..6, the folds on 7 and 8, the checksums on
    9; ``wait`` (loaded with 9 at edge 0) reaches 0 and ``done`` is set at edge 9; edge 10
    loads the packet: its first beat is valid from edge 10 and taken at edge 11 (as
    :class:`PrivateCnmGen`'s "Latency and throughput" says)."""
    cfg = PrivateCnmConfig()
    dut = PrivateCnmGen(cfg)
    seen = []

    async def bench(ctx):
        ctx.set(dut.packet.ready, 1)
        ctx.set(dut.request.payload.as_value(), pack_private_request(cfg, GOLDEN_REQ))
        ctx.set(dut.request.valid, 1)
        await ctx.tick().until(dut.request.ready)
        ctx.set(dut.request.valid, 0)
        for edge in range(1, 30):
            await ctx.tick()
            if ctx.get(dut.packet.valid):
                seen.append(edge)
                return

    run_testbenches(dut, bench)
    assert seen == [10]


# ---- ToR converter -------------------------------------------------------------------------------

def small_tor(**kw) -> L3qcnTorConfig:
    private = kw.pop("private", PrivateCnmConfig(sample_bytes=0, data_bytes=4))
    return L3qcnTorConfig(private=private, buckets=4, ways=1, **kw)


def counters_of(model: TorModel) -> dict[str, int]:
    return {"cnms": model.cnms, "other": model.other, "malformed": model.malformed,
            "misses": model.misses, "full": model.full,
            "occupancy": model.flows.table.occupancy}


def test_tor_length_bound_23_and_24_bytes():
    """A packet shorter than 24 bytes has no UDP destination port: "other" (docs, the model's
    ``classify``); 24 bytes and to the port: "malformed" (not 60 bytes long).  The port's low
    byte is 0 (0x1100), the value the stream's zero-filled unused byte gives byte 23 of the
    23-byte packet: a bound of 23 would find the port there.  Packets: a valid private CNM
    (an unknown flow: a table miss), its first 23 bytes, its first 24 bytes -> misses 1,
    other 1, malformed 1."""
    cfg = small_tor(private=PrivateCnmConfig(sample_bytes=0, data_bytes=4, udp_port=0x1100))
    pkt = build_private_cnm(cfg.private, GOLDEN_REQ)
    packets = [pkt, pkt[:23], pkt[:24]]
    assert [classify(cfg.private, p)[0] for p in packets] == ["cnm", "other", "malformed"]
    frames, counters = run_tor_rtl(cfg, [], packets)
    assert frames == []
    assert counters == {"cnms": 0, "other": 1, "malformed": 1, "misses": 1, "full": 0,
                        "occupancy": 0}


def test_tor_long_frames_are_malformed():
    """Frames to the port longer than the capture (data_bytes 16, sample_bytes 0: 60 bytes,
    4 beats captured, ``beat_idx`` in range(5), 3 bits): a valid private CNM followed by 100
    zero bytes (10 beats: a ``beat_idx`` not held at 4 would wrap to 0 at the 9th beat and
    overwrite byte 0 with 0, making it "other") and one followed by 65536 zero bytes (65596
    bytes: the 16-bit length saturates at 0xFFFF; wrapped it would end at 65596 - 65536 = 60,
    the right length).  Both are "malformed" (wrong length; the model agrees)."""
    cfg = small_tor(private=PrivateCnmConfig(sample_bytes=0, data_bytes=16))
    pkt = build_private_cnm(cfg.private, GOLDEN_REQ)
    packets = [pkt + bytes(100), pkt + bytes(65536)]
    assert [classify(cfg.private, p)[0] for p in packets] == ["malformed"] * 2
    frames, counters = run_tor_rtl(cfg, [], packets)
    assert frames == []
    assert counters == {"cnms": 0, "other": 0, "malformed": 2, "misses": 0, "full": 0,
                        "occupancy": 0}


def test_tor_port_taken_with_the_first_beat():
    """``PCNM_UDP_PORT`` is the value in force when the packet's first beat was taken: a
    write of another port between the first and the second beat of a private CNM to the old
    port leaves it a private CNM (an unknown flow: a miss); the same packet sent after the
    write is "other"."""
    cfg = small_tor()
    dut, regmap = L3qcnTor(cfg), cfg.register_map()
    pkt = build_private_cnm(cfg.private, GOLDEN_REQ)
    beats = frame_beats(cfg.private, pkt)
    got = {}

    async def bench(ctx):
        ctx.set(dut.cnm.ready, 1)
        await stream_put(ctx, dut.packet, beats[:1])
        await csr_write(ctx, dut, regmap.addr("PCNM_UDP_PORT"), cfg.private.udp_port + 1)
        await stream_put(ctx, dut.packet, beats[1:] + beats)
        await ctx.tick().repeat(40)
        got.update({n: ctx.get(getattr(dut, n)) for n in ("cnms", "other", "malformed",
                                                           "misses")})

    run_testbenches(dut, bench)
    assert got == {"cnms": 0, "other": 1, "malformed": 0, "misses": 1}


def test_tor_counter_saturates():
    """The counters saturate (docs: "Saturating counters"): counter_width 8, 300 runt packets
    (4 bytes: "other") -> OTHER = 255, not 300 mod 256 = 44."""
    cfg = small_tor(counter_width=8)
    frames, counters = run_tor_rtl(cfg, [], [bytes([0x45, 0, 0, 4])] * 300)
    assert counters["other"] == 255 and frames == []


def test_tor_cycles_per_private_cnm_at_the_defaults():
    """The documented cost: 20 cycles of ``packet.ready`` low per private CNM at the defaults
    (sample_bytes 16, data_bytes 8), the CNM taken at once ("Latency and throughput" of
    :class:`L3qcnTor`).  By hand, edges counted from the one that takes the last beat (0):
    the UDP sum's 34 words take 6 adder levels and 2 folds, the compare with 0xFFFF one more
    (``sum_levels`` = 9): state SUM on edges 1..9, CLASSIFY on 10, LOOKUP (the command
    register) on 11, the table takes the command on 12 and answers 7 cycles later (WAIT ->
    HAND on 19), HAND hands the request on and releases on 20: ``ready`` is high after edge
    20.  A learnt flow (a hit: one CNM)."""
    cfg = L3qcnTorConfig(buckets=4, ways=1)
    dut = L3qcnTor(cfg)
    pkt = build_private_cnm(cfg.private, GOLDEN_REQ)
    learn = LayoutCodec(tor_learn_layout()).pack({
        "flow": five_tuple_key(GOLDEN_REQ.flow),
        "info": flow_info_value(FlowInfo(0x0200_0000_0001, 7, 5))})
    low = []

    async def bench(ctx):
        ctx.set(dut.cnm.ready, 1)
        await stream_put(ctx, dut.learn, [learn])
        await ctx.tick().repeat(10)
        await stream_put(ctx, dut.packet, frame_beats(cfg.private, pkt))
        n = 0
        while not ctx.get(dut.packet.ready):
            n += 1
            await ctx.tick()
            assert n < 100
        low.append(n)
        await ctx.tick().repeat(40)
        low.append(ctx.get(dut.cnms))

    run_testbenches(dut, bench)
    assert low == [20, 1]


# ---- congestion point ----------------------------------------------------------------------------

def test_cp_roce_table_hit_makes_a_cnp():
    """Mode roce: an entry (destination IP, QP) -> source QP added through TBL_*; frames that
    find the queue above Q_EQ (1000, w 0, every frame a sample: sample_table all 1 byte,
    no jitter): the entry's flow gets a CNP to the registered QP (the model's frame), another
    QP is a miss (NO_QP), a frame not parsed as RoCEv2 counts in NOT_ROCE."""
    cfg = L3qcnCpConfig(mode="roce", cp=QcnCpConfig(sample_table=(1,) * 8, jitter=0.0),
                        buckets=4, ways=1)
    regmap = cfg.register_map()
    dut, model = L3qcnCp(cfg), L3qcnCpModel(cfg)
    ip, qp, src_qp = 0x0A000002, 0x123456, 0x00ABCD
    frames = [L3qcnFrame(qlen=5000, length=100, src_ip=0x0A000001, dst_ip=ip, sport=0xC000,
                         dqpn=q, roce=roce) for q, roce in ((qp, True), (qp + 1, True),
                                                           (qp, False), (qp, True))]
    out = FrameAssembler(cfg.cnp.data_bytes)
    got = {}

    async def bench(ctx):
        ctx.set(dut.packet.ready, 1)
        for name, value in (("Q_EQ", 1000), ("W", 0), ("TBL_KEY_IP", ip), ("TBL_KEY_QP", qp),
                            ("TBL_VALUE", src_qp), ("TBL_CMD", HtOp.ADD.value)):
            await csr_write(ctx, dut, regmap.addr(name), value)
            model.write(regmap.addr(name), value)
        await ctx.tick().repeat(20)
        for f in frames:
            ctx.set(dut.frame.payload, {"qlen": f.qlen, "length": f.length,
                                        "src_ip": f.src_ip, "dst_ip": f.dst_ip,
                                        "sport": f.sport, "dqpn": f.dqpn, "roce": f.roce})
            ctx.set(dut.frame.valid, 1)
            await ctx.tick().until(dut.frame.ready)
            ctx.set(dut.frame.valid, 0)
            for _ in range(60):
                *_, valid, payload = await ctx.tick().sample(dut.packet.valid,
                                                             dut.packet.payload)
                if valid:
                    out.push(payload.as_value().value)
        got.update({n: ctx.get(getattr(dut, n)) for n in ("notifications", "no_qp",
                                                           "not_roce")})

    run_testbenches(dut, bench)
    expected = [p for p in (model.frame(f) for f in frames) if p is not None]
    assert len(expected) == 2 and out.frames == expected
    assert int.from_bytes(expected[0][20 + 8 + 5:20 + 8 + 8], "big") == src_qp  # BTH DestQP
    assert got == {"notifications": 2, "no_qp": 1, "not_roce": 1}
    assert (model.notifications, model.no_qp, model.not_roce) == (2, 1, 1)


# ---- register windows ----------------------------------------------------------------------------

WINDOW_CONFIGS = {
    "cp_roce": lambda: L3qcnCpConfig(mode="roce", buckets=4, ways=1),
    "cp_qcn": lambda: L3qcnCpConfig(mode="qcn"),
    "tor": lambda: small_tor(),
}


@pytest.mark.parametrize("which", list(WINDOW_CONFIGS))
def test_register_windows_every_word(which):
    """Every word of the register space (the QCN CP's forwarded window below 0x20 and its
    first word past it, the generator windows GEN_* / PCNM_* from their first to their last
    word and the first word past them, the block's own registers, unmapped words) is written
    with a random value (except TBL_CMD: no table command), then every word is read back and
    compared with the golden model (its write/read: the same forwarding, plain storage, the
    refusal of illegal PCNM values); then the reads once more after a second round of writes
    in the reverse order."""
    cfg = WINDOW_CONFIGS[which]()
    regmap = cfg.register_map()
    if which == "tor":
        dut, model = L3qcnTor(cfg), TorModel(cfg)
    else:
        dut, model = L3qcnCp(cfg), L3qcnCpModel(cfg)
    words = 1 << regmap.addr_width
    skip = {r.addr for r in regmap.registers if r.name == "TBL_CMD"}
    rng = random.Random(31)

    async def bench(ctx):
        for order in (range(words), range(words - 1, -1, -1)):
            for addr in order:
                if addr in skip:
                    continue
                value = rng.getrandbits(32)
                await csr_write(ctx, dut, addr, value)
                model.write(addr, value)
            await ctx.tick().repeat(4)
            for addr in range(words):
                ctx.set(dut.csr_raddr, addr)
                await ctx.tick()
                got, want = ctx.get(dut.csr_rdata), model.read(addr)
                assert got == want, f"{which} word 0x{addr:02x}: RTL 0x{got:x}, model 0x{want:x}"

    run_testbenches(dut, bench)


@pytest.mark.parametrize("which", ["cp_roce", "tor"])
def test_word_past_the_generator_window_is_the_blocks_own(which):
    """The first word past the generator window (GEN_*: CP 0x30 + 6 = 0x36, ToR 0x18 + 3 =
    0x1B; unmapped) belongs to the block's own bank, whose writes wait while a table command
    is in flight (the idle rule: ``TBL_STATUS.busy``); the generator's own last word (0x35,
    0x1A) is taken at once (neither generator is busy: no frame).  Right after a TBL_CMD
    write (a LOOKUP: busy from the next edge), a write to the word past the window is not
    taken on the first edge, one to the window's last word is."""
    cfg = WINDOW_CONFIGS[which]()
    regmap = cfg.register_map()
    dut = L3qcnTor(cfg) if which == "tor" else L3qcnCp(cfg)
    last = max(r.addr for r in regmap.registers if r.name.startswith("GEN_"))
    waits = {}

    async def offer(ctx, addr):
        ctx.set(dut.csr_w.payload, {"addr": addr, "data": 0})
        ctx.set(dut.csr_w.valid, 1)
        n = 0
        while True:
            *_, ready = await ctx.tick().sample(dut.csr_w.ready)
            if ready:
                break
            n += 1
            assert n < 100
        ctx.set(dut.csr_w.valid, 0)
        return n

    async def bench(ctx):
        for addr in (last, last + 1):
            await csr_write(ctx, dut, regmap.addr("TBL_CMD"), HtOp.LOOKUP.value)
            waits[addr - last] = await offer(ctx, addr)
            await ctx.tick().repeat(30)

    run_testbenches(dut, bench)
    assert regmap.decode(last + 1) is None
    assert waits[0] == 0 and waits[1] > 0
