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
    cnp_request_layout,
)
from hw.nic.cnp_config import (
    CNP_PAYLOAD_BYTES,
    CnpGenConfig,
    CnpReg,
    cnp_header_fields,
)
from sim.models.packets import header_bytes, ipv4_checksum, stream_beats

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


class CnpModel:
    """Frames of :class:`hw.nic.cnp_gen.CnpGenerator`, with its registers."""

    def __init__(self, cfg: CnpGenConfig):
        self.cfg = cfg
        self.regs = dict(cfg.registers())
        # the register file of the map declared once in CnpGenConfig.register_map
        self.csr = cfg.register_map().model()

    def write(self, addr: int, value: int) -> None:
        hit = self.csr.write(addr, value)
        if hit is not None:
            self.regs[CnpReg[hit[0].name]] = self.csr[hit[0].name]

    def read(self, addr: int) -> int:
        """The word the RTL reads back at ``addr`` (0 where nothing is mapped)."""
        return self.csr.read(addr)

    def ip_udp_bth(self, req: CnpRequest, masked: bool) -> bytes:
        """IP header .. reserved payload; ``masked``: the ICRC's view (variant fields = ones)."""
        cfg = self.cfg
        ip, udp, bth = cnp_header_fields(cfg, self.regs, req, 0, masked)
        ip_layout = IPV4_HEADER if cfg.ip_version == 4 else IPV6_HEADER
        if cfg.ip_version == 4 and not masked:
            ip["checksum"] = ipv4_checksum(header_bytes(IPV4_HEADER, ip))
        return (header_bytes(ip_layout, ip) + header_bytes(UDP_HEADER, udp)
                + header_bytes(BTH_HEADER, bth) + bytes(CNP_PAYLOAD_BYTES))

    def icrc(self, req: CnpRequest) -> bytes:
        crc = zlib.crc32(b"\xff" * 8 + self.ip_udp_bth(req, masked=True))
        return crc.to_bytes(4, "little")

    def frame(self, req: CnpRequest) -> bytes:
        cfg, r = self.cfg, self.regs
        ethertype = 0x0800 if cfg.ip_version == 4 else 0x86DD
        l2 = b""
        if cfg.l2 == "eth":
            l2 = header_bytes(ETH_HEADER, dict(dst=req.dst_mac, src=req.src_mac,
                                               ethertype=ethertype))
        elif cfg.l2 == "eth_vlan":
            l2 = (header_bytes(ETH_HEADER, dict(dst=req.dst_mac, src=req.src_mac,
                                                ethertype=0x8100))
                  + header_bytes(VLAN_TAG, dict(pcp=r[CnpReg.CNP_802P_PRIO], dei=0,
                                                vid=r[CnpReg.VLAN_ID], ethertype=ethertype)))
        return l2 + self.ip_udp_bth(req, masked=False) + self.icrc(req)


def frame_beats(cfg: CnpGenConfig, frame: bytes) -> list[int]:
    """The frame as packed output beats (:func:`sim.models.packets.stream_beats`)."""
    return stream_beats(cfg.data_bytes, frame)
