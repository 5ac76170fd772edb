"""Byte-exact model of the QCN CNM frame generator (:mod:`hw.switch.cnm_gen`).

Frame (no FCS), every header packed through the shared big-endian layouts of :mod:`hw.layouts`::

    Ethernet  DA = the sampled frame's source MAC, SA = cp_mac, TPID 0x8100
    VLAN TCI  PCP = cnm_pcp, DEI 0, VID = the sampled frame's VID; ethertype 0x22E9
    CN-TAG    flow ID (RPID) of the sampled frame; ethertype 0x22E7
    CNM PDU   version 0, qntzFb, CPID = cp_mac << 16 | cpid_low, QOffset, QDelta,
              encapsulated priority (top 3 bits of 16), encapsulated DA, encapsulated MSDU length
    MSDU      the first min(msdu_len, msdu_bytes) bytes of the sampled MSDU
    padding   zero bytes up to 60
"""

from __future__ import annotations

from dataclasses import dataclass

from hw.layouts import CN_TAG, CNM_PDU, ETH_HEADER, VLAN_TAG, LayoutCodec, cnm_request_layout
from hw.switch.cnm_config import (
    CNM_ETHERTYPE,
    CNTAG_ETHERTYPE,
    MIN_FRAME_BYTES,
    VLAN_TPID,
    CnmGenConfig,
)
from sim.models.packets import header_bytes

__all__ = ["CnmRequest", "CnmModel", "pack_cnm_request"]


@dataclass(frozen=True)
class CnmRequest:
    dst_mac: int
    vid: int
    rpid: int
    cpid_low: int
    qntz_fb: int
    q_off: int          # signed, 64-byte units
    q_delta: int        # signed
    enc_prio: int
    enc_dst: int
    msdu_len: int
    msdu: bytes         # the sampled MSDU's first bytes (at least min(msdu_len, msdu_bytes))
    cpid_high: int = 0  # upper 6 bytes of the CPID when cfg.cpid_from_request (else cp_mac)


def pack_cnm_request(cfg: CnmGenConfig, r: CnmRequest) -> int:
    msdu = r.msdu[:cfg.msdu_bytes].ljust(cfg.msdu_bytes, b"\0")
    extra = {"cpid_high": r.cpid_high} if cfg.cpid_from_request else {}
    return LayoutCodec(cnm_request_layout(cfg)).pack({**extra,
        "dst_mac": r.dst_mac, "vid": r.vid, "rpid": r.rpid, "cpid_low": r.cpid_low,
        "qntz_fb": r.qntz_fb, "q_off": r.q_off & 0xFFFF, "q_delta": r.q_delta & 0xFFFF,
        "enc_prio": r.enc_prio, "enc_dst": r.enc_dst, "msdu_len": r.msdu_len,
        "msdu": int.from_bytes(msdu, "little")})


class CnmModel:
    def __init__(self, cfg: CnmGenConfig):
        self.cfg = cfg
        self.cp_mac, self.cnm_pcp = cfg.cp_mac, cfg.cnm_pcp
        # the register file of CnmGenConfig.register_map (the RTL's csr port)
        self.csr = cfg.register_map().model()

    def write(self, addr: int, value: int) -> None:
        """A register write (applied before the next request is accepted)."""
        if self.csr.write(addr, value) is not None:
            self.cp_mac = self.csr["CP_MAC_HI"] << 32 | self.csr["CP_MAC_LO"]
            self.cnm_pcp = self.csr["CNM_PCP"]

    def read(self, addr: int) -> int:
        return self.csr.read(addr)

    def frame(self, r: CnmRequest) -> bytes:
        cfg = self.cfg
        out = header_bytes(ETH_HEADER, {"dst": r.dst_mac, "src": self.cp_mac,
                                        "ethertype": VLAN_TPID})
        out += header_bytes(VLAN_TAG, {"pcp": self.cnm_pcp, "dei": 0, "vid": r.vid,
                                       "ethertype": CNTAG_ETHERTYPE})
        out += header_bytes(CN_TAG, {"rpid": r.rpid, "ethertype": CNM_ETHERTYPE})
        cpid_high = r.cpid_high if cfg.cpid_from_request else self.cp_mac
        out += header_bytes(CNM_PDU, {
            "version": 0, "resv": 0, "qntz_fb": r.qntz_fb, "cpid": (cpid_high << 16) | r.cpid_low,
            "q_off": r.q_off & 0xFFFF, "q_delta": r.q_delta & 0xFFFF, "enc_prio": r.enc_prio,
            "enc_resv": 0, "enc_dst": r.enc_dst, "msdu_len": r.msdu_len})
        out += r.msdu[:min(r.msdu_len, cfg.msdu_bytes)]
        return out.ljust(MIN_FRAME_BYTES, b"\0")
