"""Configuration of the RoCEv2 CNP frame generator (:mod:`hw.nic.cnp_gen`).

Elaboration-time: ``ip_version`` (4 or 6), ``l2`` (``"none"``: the frame starts at the IP
header; ``"eth"``: Ethernet II header; ``"eth_vlan"``: Ethernet + 802.1Q tag carrying the CNP
priority), ``data_bytes`` (output beat width: 4, 8 or 16 bytes).

Run-time registers (reset values), with the ConnectX names where they exist: ``cnp_dscp``
(0-63, ConnectX default 48), ``cnp_ecn`` (the CNP's ECN field: ECT(1) = 1 or ECT(0) = 2, so
that it is never dropped as Not-ECT), ``cnp_802p_prio`` (PCP of the VLAN tag, default 6),
``vlan_id``, ``ttl`` (IPv4 TTL / IPv6 hop limit), ``pkey`` (BTH P_Key, default 0xFFFF).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from ..lib.csr import Register, RegisterMap
from ..params import BlockConfig, check_choice, check_int

__all__ = ["CnpGenConfig", "CnpReg", "CNP_PAYLOAD_BYTES", "ROCEV2_PORT", "CNP_OPCODE",
           "cnp_header_fields"]

ROCEV2_PORT = 4791
CNP_OPCODE = 0x81
CNP_PAYLOAD_BYTES = 16      #: reserved zero bytes after the BTH
#: word address width of the register port: registers at 0..5, the identification header
#: (hw/lib/csr.py) at 0x10..0x13
CSR_ADDR_WIDTH = 5
CSR_DATA_WIDTH = 32
#: block type in the header's ID register
BLOCK_TYPE = "CNPG"


class CnpReg(enum.IntEnum):
    """Register map (word addresses; written through ``csr_w`` between frames, read back
    through ``csr_raddr``/``csr_rdata``)."""
    CNP_DSCP = 0        #: 6 bits
    CNP_ECN = 1         #: 2 bits
    CNP_802P_PRIO = 2   #: 3 bits
    VLAN_ID = 3         #: 12 bits
    TTL = 4             #: 8 bits (IPv6: hop limit)
    PKEY = 5            #: 16 bits


REG_WIDTHS = {CnpReg.CNP_DSCP: 6, CnpReg.CNP_ECN: 2, CnpReg.CNP_802P_PRIO: 3,
              CnpReg.VLAN_ID: 12, CnpReg.TTL: 8, CnpReg.PKEY: 16}


@dataclass(frozen=True)
class CnpGenConfig(BlockConfig):
    ip_version: int = 4
    l2: str = "eth_vlan"
    data_bytes: int = 8
    cnp_dscp: int = 48
    cnp_ecn: int = 1
    cnp_802p_prio: int = 6
    vlan_id: int = 0
    ttl: int = 64
    pkey: int = 0xFFFF

    def __post_init__(self):
        check_choice(self, "ip_version", self.ip_version, (4, 6))
        check_choice(self, "l2", self.l2, ("none", "eth", "eth_vlan"))
        check_choice(self, "data_bytes", self.data_bytes, (4, 8, 16))
        check_int(self, "cnp_dscp", self.cnp_dscp, 0, 63)
        check_choice(self, "cnp_ecn", self.cnp_ecn, (1, 2))
        check_int(self, "cnp_802p_prio", self.cnp_802p_prio, 0, 7)
        check_int(self, "vlan_id", self.vlan_id, 0, 4095)
        check_int(self, "ttl", self.ttl, 1, 255)
        check_int(self, "pkey", self.pkey, 0, 0xFFFF)


    def register_map(self, name: str = "cnp_gen") -> RegisterMap:
        """The register map with this configuration's reset values: the one declaration the
        RTL, the model, the docs and SystemRDL use."""
        desc = {CnpReg.CNP_DSCP: "DSCP of the CNP", CnpReg.CNP_ECN: "ECN of the CNP",
                CnpReg.CNP_802P_PRIO: "802.1p priority of the VLAN tag",
                CnpReg.VLAN_ID: "VLAN ID of the tag", CnpReg.TTL: "IPv4 TTL / IPv6 hop limit",
                CnpReg.PKEY: "BTH partition key"}
        regs = tuple(Register.single(reg.name, REG_WIDTHS[reg], value, desc=desc[reg],
                                     addr=reg)
                     for reg, value in self.registers().items())
        return RegisterMap(name, regs, BLOCK_TYPE, version=(1, 0),
                           desc="RoCEv2 CNP frame generator")

    def registers(self) -> dict[CnpReg, int]:
        """Reset values of the registers (already in hardware units)."""
        return {CnpReg.CNP_DSCP: self.cnp_dscp, CnpReg.CNP_ECN: self.cnp_ecn,
                CnpReg.CNP_802P_PRIO: self.cnp_802p_prio, CnpReg.VLAN_ID: self.vlan_id,
                CnpReg.TTL: self.ttl, CnpReg.PKEY: self.pkey}

    # -- frame geometry ------------------------------------------------------------------------
    @property
    def l2_bytes(self) -> int:
        return {"none": 0, "eth": 14, "eth_vlan": 18}[self.l2]

    @property
    def ip_bytes(self) -> int:
        return 20 if self.ip_version == 4 else 40

    @property
    def frame_bytes(self) -> int:
        """Bytes out of the generator: L2 + IP + UDP 8 + BTH 12 + 16 reserved + ICRC 4."""
        return self.l2_bytes + self.ip_bytes + 8 + 12 + CNP_PAYLOAD_BYTES + 4

    @property
    def beats(self) -> int:
        return -(-self.frame_bytes // self.data_bytes)

    @property
    def crc_bytes(self) -> int:
        """ICRC input: 8 bytes of 0xFF + IP .. payload (a multiple of 4)."""
        return 8 + self.ip_bytes + 8 + 12 + CNP_PAYLOAD_BYTES

    @property
    def cycles_per_cnp(self) -> int:
        """Cycles between accepted requests, back to back without back-pressure: the last beat
        leaves ``max(beats, crc_words + ICRC beats)`` edges after the request's, and the next
        request is accepted one edge later."""
        first_icrc_beat = (self.frame_bytes - 4) // self.data_bytes
        return max(self.beats, self.crc_bytes // 4 + self.beats - first_icrc_beat) + 1



def cnp_header_fields(cfg: CnpGenConfig, regs, req, checksum, masked: bool):
    """The field values of a CNP's IP header (``IPV4_HEADER`` or ``IPV6_HEADER``), UDP header
    and BTH, shared by the RTL (``regs``, ``req`` and ``checksum`` are signals) and the model
    (ints).  ``regs``: the register values by :class:`CnpReg`; ``req``: the request's fields;
    ``checksum``: the IPv4 header checksum.  ``masked``: the ICRC's view, with the fields a
    router may change set to ones (IPv4 TOS, TTL, checksum; IPv6 traffic class, flow label,
    hop limit; UDP checksum; BTH FECN/BECN byte's reserved bits and FECN)."""
    udp_len = 8 + 12 + CNP_PAYLOAD_BYTES + 4
    if cfg.ip_version == 4:
        ip = dict(version=4, ihl=5, dscp=regs[CnpReg.CNP_DSCP], ecn=regs[CnpReg.CNP_ECN],
                  total_length=20 + udp_len, id=req.ip_id, flags=0b010, frag_offset=0,
                  ttl=regs[CnpReg.TTL], protocol=17, checksum=checksum, src=req.src_ip,
                  dst=req.dst_ip)
        if masked:
            ip.update(dscp=0x3F, ecn=3, ttl=0xFF, checksum=0xFFFF)
    else:
        ip = dict(version=6, dscp=regs[CnpReg.CNP_DSCP], ecn=regs[CnpReg.CNP_ECN],
                  flow_label=req.flow_label, payload_length=udp_len, next_header=17,
                  hop_limit=regs[CnpReg.TTL], src=req.src_ip, dst=req.dst_ip)
        if masked:
            ip.update(dscp=0x3F, ecn=3, flow_label=0xFFFFF, hop_limit=0xFF)
    udp = dict(sport=req.udp_sport, dport=ROCEV2_PORT, length=udp_len,
               checksum=0xFFFF if masked else 0)
    bth = dict(opcode=CNP_OPCODE, se=0, migreq=0, padcnt=0, tver=0, pkey=regs[CnpReg.PKEY],
               fecn=1 if masked else 0, becn=1, resv6=0x3F if masked else 0, dqpn=req.dqpn,
               ackreq=0, resv7=0, psn=0)
    return ip, udp, bth
