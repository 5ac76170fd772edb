"""QCN CNM frame generator: configuration, a hand-written golden frame, the model's frames
against an independent parse of the IEEE 802.1Qau CNM PDU layout and against scapy's Ethernet and
802.1Q layers, and the RTL in Amaranth's simulator against the model."""

import random
import struct

import pytest
from scapy.layers.l2 import Dot1Q, Ether

from hw.params import ConfigError
from hw.switch.cnm_config import CnmGenConfig
from hw.switch.cnm_gen import CnmGenerator
from sim.models.cnm import CnmModel, CnmRequest, pack_cnm_request
from sim.models.packets import FrameAssembler
from tests.streams import run_testbenches, stream_get, stream_put

REQ = CnmRequest(dst_mac=0x112233445566, vid=5, rpid=0xABCD, cpid_low=0x0102, qntz_fb=11,
                 q_off=-3, q_delta=62, enc_prio=3, enc_dst=0xA0A1A2A3A4A5, msdu_len=4,
                 msdu=b"\xde\xad\xbe\xef")
#: written by hand from the IEEE 802.1Qau CNM PDU layout for REQ with the default configuration
GOLDEN = bytes.fromhex(
    "112233445566" "02000000c001" "8100"           # DA, SA = cp_mac, TPID
    "c005" "22e9"                                  # PCP 6, DEI 0, VID 5; CN-TAG ethertype
    "abcd" "22e7"                                  # RPID; CNM ethertype
    "00" "0b"                                      # version 0 | reserved; reserved | qntzFb 11
    "02000000c0010102"                             # CPID: cp_mac, port/priority 0x0102
    "fffd" "003e"                                  # QOffset -3, QDelta 62
    "6000"                                         # encapsulated priority 3 (top 3 bits)
    "a0a1a2a3a4a5" "0004"                          # encapsulated DA, MSDU length 4
    "deadbeef" + "00" * 10)                        # MSDU bytes, zero padding to 60


@pytest.mark.parametrize("field, value", [("cnm_pcp", 8), ("msdu_bytes", 65),
                                          ("data_bytes", 3), ("cp_mac", 1 << 48)])
def test_config_errors(field, value):
    with pytest.raises(ConfigError, match=f"CnmGenConfig.{field} = {value!r} is out of range"):
        CnmGenConfig(**{field: value})


def test_golden_frame():
    assert len(GOLDEN) == 60
    assert CnmModel(CnmGenConfig()).frame(REQ) == GOLDEN


def parse_cnm(frame: bytes) -> dict:
    """Independent parse, from the IEEE 802.1Qau CNM PDU layout (struct offsets), of a CNM frame."""
    eth_dst, eth_src, tpid, tci, cn_type, rpid, ethertype = struct.unpack(
        ">6s6sHHHHH", frame[:22])
    b0, b1, cpid, q_off, q_delta, prio, enc_dst, msdu_len = struct.unpack(
        ">BBQhhH6sH", frame[22:46])
    return dict(dst=int.from_bytes(eth_dst, "big"), src=int.from_bytes(eth_src, "big"),
                tpid=tpid, pcp=tci >> 13, vid=tci & 0xFFF, cn_type=cn_type, rpid=rpid,
                ethertype=ethertype, version=b0 >> 4, resv=((b0 & 15) << 2) | (b1 >> 6),
                qntz_fb=b1 & 63, cpid=cpid, q_off=q_off, q_delta=q_delta, prio=prio >> 13,
                prio_low=prio & 0x1FFF, enc_dst=int.from_bytes(enc_dst, "big"),
                msdu_len=msdu_len, rest=frame[46:])


def random_request(rng: random.Random, cfg: CnmGenConfig) -> CnmRequest:
    n = rng.choice((0, 1, 13, 14, 15, 63, 64, 65, 1500, rng.randint(0, 200)))
    return CnmRequest(rng.getrandbits(48), rng.getrandbits(12), rng.getrandbits(16),
                      rng.getrandbits(16), rng.randrange(64), rng.randint(-32768, 32767),
                      rng.randint(-32768, 32767), rng.randrange(8), rng.getrandbits(48), n,
                      rng.randbytes(cfg.msdu_bytes))   # bytes beyond msdu_len: garbage


@pytest.mark.parametrize("cfg", [CnmGenConfig(), CnmGenConfig(msdu_bytes=16, cnm_pcp=0)])
def test_model_against_layout_and_scapy(cfg):
    rng, model = random.Random(2), CnmModel(cfg)
    for _ in range(500):
        r = random_request(rng, cfg)
        f = model.frame(r)
        p = parse_cnm(f)
        n = min(r.msdu_len, cfg.msdu_bytes)
        assert p == dict(dst=r.dst_mac, src=cfg.cp_mac, tpid=0x8100, pcp=cfg.cnm_pcp, vid=r.vid,
                         cn_type=0x22E9, rpid=r.rpid, ethertype=0x22E7, version=0, resv=0,
                         qntz_fb=r.qntz_fb, cpid=(cfg.cp_mac << 16) | r.cpid_low,
                         q_off=r.q_off, q_delta=r.q_delta, prio=r.enc_prio, prio_low=0,
                         enc_dst=r.enc_dst, msdu_len=r.msdu_len,
                         rest=r.msdu[:n] + b"\0" * max(0, 14 - n))
        s = Ether(f)                       # scapy: Ethernet and 802.1Q layers
        assert s.dst == ":".join(f"{b:02x}" for b in r.dst_mac.to_bytes(6, "big"))
        assert s.src == ":".join(f"{b:02x}" for b in cfg.cp_mac.to_bytes(6, "big"))
        assert s[Dot1Q].prio == cfg.cnm_pcp and s[Dot1Q].vlan == r.vid and s[Dot1Q].dei == 0
        assert s[Dot1Q].type == 0x22E9
        assert len(f) == max(60, 46 + n)


def run_stream_rtl(dut, requests: list[int], data_bytes: int, p_ready=0.7,
                   inp="request", out="frame") -> list[bytes]:
    """Amaranth simulation of a frame generator: packed ``requests`` into stream ``inp``, the
    byte stream ``out`` read with random back-pressure and assembled into frames."""
    src, sink = getattr(dut, inp), getattr(dut, out)
    frames = FrameAssembler(data_bytes)

    async def sender(ctx):
        await stream_put(ctx, src, requests)

    async def receiver(ctx):
        await stream_get(ctx, sink, rng=random.Random(3), p_ready=p_ready, on_item=frames.push,
                         until=lambda: len(frames.frames) >= len(requests))

    run_testbenches(dut, sender, receiver)
    return frames.frames


def run_rtl(cfg, requests, p_ready=0.7):
    return run_stream_rtl(CnmGenerator(cfg), [pack_cnm_request(cfg, r) for r in requests],
                          cfg.data_bytes, p_ready)


def test_rtl_golden_frame():
    assert run_rtl(CnmGenConfig(), [REQ], p_ready=1.0) == [GOLDEN]


@pytest.mark.parametrize("cfg", [CnmGenConfig(), CnmGenConfig(data_bytes=16, msdu_bytes=20),
                                 CnmGenConfig(data_bytes=4, msdu_bytes=0)])
def test_rtl_random_frames_match_model(cfg):
    rng = random.Random(4)
    reqs = [random_request(rng, cfg) for _ in range(40)]
    model = CnmModel(cfg)
    assert run_rtl(cfg, reqs) == [model.frame(r) for r in reqs]
