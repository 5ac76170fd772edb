"""Bit-exact model of the RoCEv2 CNP frame generator: the bytes of a CNP, built through the shared
header layouts (``hw.layouts``: a header is a big-endian integer), with the IPv4 header checksum
(RFC 1071) and the ICRC (IBTA Annex A17: CRC-32 over 8 bytes of 0xFF and the IP packet with the
variant fields set to ones, appended least-significant byte first)."""

from __future__ import annotations

import zlib
from dataclasses import dataclass

from hw.layouts import (
    BTH_HEADER,
    ETH_HEADER,
    IPV4_HEADER,
    IPV6_HEADER,
    UDP_HEADER,
    VLAN_TAG,
    byte_beat_layout,
    cnp_request_layout,
)
from hw.nic.cnp_config import (
    CNP_OPCODE,
    CNP_PAYLOAD_BYTES,
    REG_WIDTHS,
    ROCEV2_PORT,
    CnpGenConfig,
    CnpReg,
)

__all__ = ["CnpRequest", "CnpModel", "ipv4_checksum", "pack_request", "frame_beats"]


@dataclass(frozen=True)
class CnpRequest:
    dqpn: int
    src_ip: int
    dst_ip: int
    udp_sport: int
    ip_id: int = 0          # IPv4 identification
    flow_label: int = 0     # IPv6 flow label
    dst_mac: int = 0
    src_mac: int = 0


def pack_request(cfg: CnpGenConfig, req: CnpRequest) -> int:
    layout = cnp_request_layout(cfg)
    return layout.const({name: getattr(req, name) for name, _ in layout}).as_bits()


def _bytes(layout, values: dict) -> bytes:
    return layout.const(values).as_bits().to_bytes(layout.size // 8, "big")


def ipv4_checksum(header: bytes) -> int:
    """RFC 1071: one's complement of the one's complement sum of the 16-bit words."""
    total = sum(int.from_bytes(header[i:i + 2], "big") for i in range(0, len(header), 2))
    while total > 0xFFFF:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


class CnpModel:
    """Frames of :class:`hw.nic.cnp_gen.CnpGenerator`, with its registers."""

    def __init__(self, cfg: CnpGenConfig):
        self.cfg = cfg
        self.regs = dict(cfg.registers())

    def write(self, addr: int, value: int) -> None:
        if addr in REG_WIDTHS:
            self.regs[CnpReg(addr)] = value & ((1 << REG_WIDTHS[CnpReg(addr)]) - 1)

    def ip_udp_bth(self, req: CnpRequest, masked: bool) -> bytes:
        """IP header .. reserved payload; ``masked``: the ICRC's view (variant fields = ones)."""
        cfg, r = self.cfg, self.regs
        ones = masked
        udp_len = 8 + 12 + CNP_PAYLOAD_BYTES + 4
        if cfg.ip_version == 4:
            fields = dict(version=4, ihl=5, dscp=r[CnpReg.CNP_DSCP], ecn=r[CnpReg.CNP_ECN],
                          total_length=20 + udp_len, id=req.ip_id, flags=0b010, frag_offset=0,
                          ttl=r[CnpReg.TTL], protocol=17, checksum=0, src=req.src_ip,
                          dst=req.dst_ip)
            fields["checksum"] = ipv4_checksum(_bytes(IPV4_HEADER, fields))
            if ones:
                fields.update(dscp=0x3F, ecn=3, ttl=0xFF, checksum=0xFFFF)
            ip = _bytes(IPV4_HEADER, fields)
        else:
            fields = dict(version=6, dscp=r[CnpReg.CNP_DSCP], ecn=r[CnpReg.CNP_ECN],
                          flow_label=req.flow_label, payload_length=udp_len, next_header=17,
                          hop_limit=r[CnpReg.TTL], src=req.src_ip, dst=req.dst_ip)
            if ones:
                fields.update(dscp=0x3F, ecn=3, flow_label=0xFFFFF, hop_limit=0xFF)
            ip = _bytes(IPV6_HEADER, fields)
        udp = _bytes(UDP_HEADER, dict(sport=req.udp_sport, dport=ROCEV2_PORT, length=udp_len,
                                      checksum=0xFFFF if ones else 0))
        bth = _bytes(BTH_HEADER, dict(opcode=CNP_OPCODE, se=0, migreq=0, padcnt=0, tver=0,
                                      pkey=r[CnpReg.PKEY], fecn=1 if ones else 0, becn=1,
                                      resv6=0x3F if ones else 0, dqpn=req.dqpn, ackreq=0,
                                      resv7=0, psn=0))
        return ip + udp + bth + bytes(CNP_PAYLOAD_BYTES)

    def icrc(self, req: CnpRequest) -> bytes:
        crc = zlib.crc32(b"\xff" * 8 + self.ip_udp_bth(req, masked=True))
        return crc.to_bytes(4, "little")

    def frame(self, req: CnpRequest) -> bytes:
        cfg, r = self.cfg, self.regs
        ethertype = 0x0800 if cfg.ip_version == 4 else 0x86DD
        l2 = b""
        if cfg.l2 == "eth":
            l2 = _bytes(ETH_HEADER, dict(dst=req.dst_mac, src=req.src_mac, ethertype=ethertype))
        elif cfg.l2 == "eth_vlan":
            l2 = (_bytes(ETH_HEADER, dict(dst=req.dst_mac, src=req.src_mac, ethertype=0x8100))
                  + _bytes(VLAN_TAG, dict(pcp=r[CnpReg.CNP_802P_PRIO], dei=0,
                                          vid=r[CnpReg.VLAN_ID], ethertype=ethertype)))
        return l2 + self.ip_udp_bth(req, masked=False) + self.icrc(req)


def frame_beats(cfg: CnpGenConfig, frame: bytes) -> list[int]:
    """The frame as packed output beats (``byte_beat_layout``): byte i of a beat in bits
    [8i, 8i+8), ``keep`` for the valid bytes, ``last`` on the final beat."""
    layout, w = byte_beat_layout(cfg.data_bytes), cfg.data_bytes
    beats = []
    for start in range(0, len(frame), w):
        chunk = frame[start:start + w]
        beats.append(layout.const({
            "data": int.from_bytes(chunk, "little"), "keep": (1 << len(chunk)) - 1,
            "last": int(start + w >= len(frame))}).as_bits())
    return beats
