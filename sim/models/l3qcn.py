"""Bit-exact golden models of L3QCN (draft-yu-tsvwg-l3qcn-00, ``docs/l3qcn.md``): the two tables,
the
private CNM, the congestion point's notifier and the ingress ToR's converter.

Model-level API (also for the network simulator)::

    t = CnpQpTableModel(HashTableConfig.cnp_qp())          # (dst IP, dst QP) -> src QP
    t.add(dst_ip, dst_qp, src_qp) -> HtStatus         # OK / FULL / DUPLICATE
    t.remove(dst_ip, dst_qp) -> HtStatus              # OK / NOT_FOUND
    t.lookup(dst_ip, dst_qp) -> int | None            # None on a miss (counted: t.misses)

    f = FlowIdTableModel(HashTableConfig.flow_id())        # 5-tuple -> (src MAC, flow ID, VID)
    f.learn(FiveTuple(...), FlowInfo(...)) -> HtStatus  # OK (new) / REFRESHED / FULL
    f.lookup(FiveTuple(...)) -> FlowInfo | None

    build_private_cnm(PrivateCnmConfig(), PrivateCnmRequest(...)) -> bytes   # IPv4 packet
    parse_private_cnm(PrivateCnmConfig(), packet) -> PrivateCnm | None
    classify(PrivateCnmConfig(), packet) -> ("cnm" | "other" | "malformed", PrivateCnm | None)

    cp = L3qcnCpModel(L3qcnCpConfig(mode="roce"|"qcn"))
    cp.frame(L3qcnFrame(...)) -> bytes | None   # the CNP or private CNM (IPv4 packet), if any
    tor = TorModel(L3qcnTorConfig())
    tor.learn(five_tuple, flow_info) -> HtStatus;  tor.receive(packet) -> bytes | None (a CNM)

Packets are IPv4 packets without L2 header (the switches' forwarding pipelines add and strip
it); the ToR's output is a whole Ethernet CNM frame (without FCS), built by
:class:`sim.models.cnm.CnmModel`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hw.layouts import (
    CNP_QP_KEY,
    FIVE_TUPLE,
    FLOW_ID_VALUE,
    IPV4_HEADER,
    PRIVATE_CNM_PDU,
    UDP_HEADER,
    HtOp,
    HtStatus,
    LayoutCodec,
)
from hw.switch.hash_table_config import HashTableConfig
from hw.switch.l3qcn_config import (
    L3QCN_CP_GEN_BASE,
    L3QCN_CP_PCNM_BASE,
    L3QCN_CP_WINDOW,
    L3QCN_TOR_GEN_BASE,
    PRIVATE_CNM_PDU_BYTES,
    PRIVATE_CNM_VERSION,
    L3qcnCpConfig,
    L3qcnTorConfig,
    PrivateCnmConfig,
)
from sim.models.cnm import CnmModel, CnmRequest
from sim.models.cnp import CnpModel, CnpRequest
from sim.models.hash_table import HashTableModel
from sim.models.packets import codec, header_bytes, ipv4_header, ones_sum, udp_checksum
from sim.models.qcn import CpFrame, CpModel

__all__ = ["FiveTuple", "FlowInfo", "CnpQpTableModel", "FlowIdTableModel", "PrivateCnmRequest",
           "PrivateCnm", "PrivateCnmGenModel", "build_private_cnm", "parse_private_cnm",
           "classify", "udp_checksum",
           "L3qcnFrame", "L3qcnCpModel", "TorModel", "cnp_qp_key", "five_tuple_key",
           "flow_info_value"]

_KEY = LayoutCodec(CNP_QP_KEY)
_TUPLE = LayoutCodec(FIVE_TUPLE)
_FLOW = LayoutCodec(FLOW_ID_VALUE)
_IP, _UDP, _PDU = codec(IPV4_HEADER), codec(UDP_HEADER), codec(PRIVATE_CNM_PDU)


@dataclass(frozen=True)
class FiveTuple:
    src_ip: int
    dst_ip: int
    sport: int
    dport: int
    protocol: int


@dataclass(frozen=True)
class FlowInfo:
    """What the ingress ToR learnt from the host's data frames."""
    src_mac: int
    rpid: int       # CN-TAG flow ID
    vid: int


def cnp_qp_key(dst_ip: int, dst_qp: int) -> int:
    return _KEY.pack({"dst_ip": dst_ip, "dqpn": dst_qp})


def five_tuple_key(t: FiveTuple) -> int:
    return _TUPLE.pack(vars(t))


def flow_info_value(v: FlowInfo) -> int:
    return _FLOW.pack(vars(v))


class CnpQpTableModel:
    """(destination IP, destination QP) -> source QP, at the congestion point."""

    def __init__(self, cfg: HashTableConfig | None = None):
        self.table = HashTableModel(cfg or HashTableConfig.cnp_qp())

    def add(self, dst_ip: int, dst_qp: int, src_qp: int) -> HtStatus:
        return self.table.command(HtOp.ADD, cnp_qp_key(dst_ip, dst_qp), src_qp).status

    def remove(self, dst_ip: int, dst_qp: int) -> HtStatus:
        return self.table.command(HtOp.REMOVE, cnp_qp_key(dst_ip, dst_qp)).status

    def lookup(self, dst_ip: int, dst_qp: int) -> int | None:
        return self.table.lookup(cnp_qp_key(dst_ip, dst_qp))

    @property
    def misses(self) -> int:
        return self.table.misses


class FlowIdTableModel:
    """IPv4 5-tuple -> (source MAC, CN-TAG flow ID, VLAN ID), at the ingress ToR."""

    def __init__(self, cfg: HashTableConfig | None = None):
        self.table = HashTableModel(cfg or HashTableConfig.flow_id())

    def learn(self, t: FiveTuple, info: FlowInfo) -> HtStatus:
        return self.table.command(HtOp.LEARN, five_tuple_key(t), flow_info_value(info)).status

    def remove(self, t: FiveTuple) -> HtStatus:
        return self.table.command(HtOp.REMOVE, five_tuple_key(t)).status

    def lookup(self, t: FiveTuple) -> FlowInfo | None:
        v = self.table.lookup(five_tuple_key(t))
        return None if v is None else FlowInfo(**_FLOW.unpack(v))

    @property
    def misses(self) -> int:
        return self.table.misses

    @property
    def full(self) -> int:
        return self.table.full


# ---- private CNM ------------------------------------------------------------------------------

@dataclass(frozen=True)
class PrivateCnmRequest:
    """What the CP puts into a private CNM: the congested flow and its feedback."""
    flow: FiveTuple
    qntz_fb: int
    q_off: int          # int16, 64-byte units (as in the CNM)
    q_delta: int        # int16, 64-byte units
    enc_prio: int       # the sampled frame's priority
    msdu_len: int       # the sampled IP packet's total length
    sample: bytes = b""  # the sampled IP packet's first bytes


@dataclass(frozen=True)
class PrivateCnm:
    """A parsed private CNM."""
    cp_ip: int
    flow: FiveTuple
    qntz_fb: int
    cpid: int
    q_off: int
    q_delta: int
    enc_prio: int
    msdu_len: int
    sample: bytes = field(default=b"")


def build_private_cnm(cfg: PrivateCnmConfig, r: PrivateCnmRequest,
                      regs: dict[str, int] | None = None) -> bytes:
    """The private CNM as an IPv4 packet: IPv4 (CP -> the flow's source, DF, id 0) | UDP
    (sport, dport = cfg.udp_port, checksum) | PDU (32 bytes) | sampled bytes (sample_bytes,
    bytes beyond msdu_len zero).  ``regs``: the header fields by register name
    (:meth:`PrivateCnmConfig.registers`, the default: the configuration's values)."""
    h = cfg.registers() if regs is None else regs
    cp_ip, cpid = h["CP_IP"], h["CPID_HI"] << 32 | h["CPID_LO"]
    f = r.flow
    pdu = header_bytes(PRIVATE_CNM_PDU, dict(
        version=PRIVATE_CNM_VERSION, resv0=0, resv1=0, qntz_fb=r.qntz_fb, enc_prio=r.enc_prio,
        resv2=0, cpid=cpid, q_off=r.q_off & 0xFFFF, q_delta=r.q_delta & 0xFFFF,
        src_ip=f.src_ip, dst_ip=f.dst_ip, sport=f.sport, dport=f.dport, protocol=f.protocol,
        resv3=0, msdu_len=r.msdu_len))
    n = min(r.msdu_len, cfg.sample_bytes)
    sample = r.sample[:n].ljust(cfg.sample_bytes, b"\0")
    payload = pdu + sample
    udp = dict(sport=h["UDP_SPORT"], dport=h["UDP_PORT"], length=cfg.udp_length, checksum=0)
    udp["checksum"] = udp_checksum(cp_ip, f.src_ip, header_bytes(UDP_HEADER, udp) + payload)
    udp = header_bytes(UDP_HEADER, udp)
    ip = ipv4_header(dscp=h["DSCP"], ecn=h["ECN"], ttl=h["TTL"], total_length=cfg.packet_bytes,
                     src=cp_ip, dst=f.src_ip)
    return ip + udp + payload


class PrivateCnmGenModel:
    """The private CNM generator with its run-time registers
    (:meth:`PrivateCnmConfig.register_map`): ``write`` / ``read`` as the RTL's register port
    (a write applies before the next packet, as the RTL's between packets; a value outside
    ``PCNM_LEGAL`` is refused: the register keeps its value, ``WERR.refused`` is set),
    ``packet`` builds the next private CNM from the registers' current values."""

    def __init__(self, cfg: PrivateCnmConfig):
        self.cfg = cfg
        self.csr = cfg.register_map().model()

    def write(self, addr: int, value: int) -> None:
        self.csr.write(addr, value)

    def read(self, addr: int) -> int:
        return self.csr.read(addr)

    def regs(self) -> dict[str, int]:
        return {name: self.csr[name] for name in self.cfg.registers()}

    def packet(self, r: PrivateCnmRequest) -> bytes:
        return build_private_cnm(self.cfg, r, self.regs())


def _s16(v: int) -> int:
    return v - (1 << 16) if v >> 15 else v


def classify(cfg: PrivateCnmConfig, pkt: bytes,
             udp_port: int | None = None) -> tuple[str, PrivateCnm | None]:
    """``("other", None)``: not for the private-CNM port (not IPv4 without options + UDP to
    ``udp_port`` (default ``cfg.udp_port``; the ToR's ``PCNM_UDP_PORT``), or shorter than 24
    bytes); ``("malformed", None)``: to the port but not a valid private CNM (length, IPv4
    checksum, fragment, UDP length or checksum, version); ``("cnm", PrivateCnm)``."""
    if len(pkt) < 24 or pkt[0] != 0x45 or pkt[9] != 17:
        return "other", None
    port = cfg.udp_port if udp_port is None else udp_port
    if int.from_bytes(pkt[22:24], "big") != port:
        return "other", None
    if len(pkt) != cfg.packet_bytes:
        return "malformed", None
    ip = _IP.unpack(int.from_bytes(pkt[:20], "big"))
    udp = _UDP.unpack(int.from_bytes(pkt[20:28], "big"))
    body = pkt[28:]
    pdu = _PDU.unpack(int.from_bytes(body[:PRIVATE_CNM_PDU_BYTES], "big"))
    udp_ok = udp["checksum"] == 0 or ones_sum(
        ip["src"].to_bytes(4, "big") + ip["dst"].to_bytes(4, "big") + bytes([0, 17])
        + cfg.udp_length.to_bytes(2, "big") + pkt[20:]) == 0xFFFF
    if (ip["total_length"] != cfg.packet_bytes or ones_sum(pkt[:20]) != 0xFFFF
            or ip["flags"] & 1 or ip["frag_offset"] or udp["length"] != cfg.udp_length
            or not udp_ok or pdu["version"] != PRIVATE_CNM_VERSION):
        return "malformed", None
    flow = FiveTuple(pdu["src_ip"], pdu["dst_ip"], pdu["sport"], pdu["dport"], pdu["protocol"])
    return "cnm", PrivateCnm(ip["src"], flow, pdu["qntz_fb"], pdu["cpid"], _s16(pdu["q_off"]),
                             _s16(pdu["q_delta"]), pdu["enc_prio"], pdu["msdu_len"],
                             body[PRIVATE_CNM_PDU_BYTES:])


def parse_private_cnm(cfg: PrivateCnmConfig, pkt: bytes) -> PrivateCnm | None:
    return classify(cfg, pkt)[1]


# ---- congestion point --------------------------------------------------------------------------

@dataclass(frozen=True)
class L3qcnFrame:
    """A frame entering the CP's queue with its parsed headers (``l3qcn_frame_layout``)."""
    qlen: int
    length: int
    src_ip: int
    dst_ip: int
    sport: int
    dqpn: int = 0          # mode roce
    roce: bool = True      # mode roce: parsed as RoCEv2
    dport: int = 0         # mode qcn
    protocol: int = 17
    prio: int = 0
    ip_len: int = 0
    sample: bytes = b""


class L3qcnCpModel:
    """The L3QCN congestion point of one queue: the QCN CP (:class:`CpModel`) decides; a frame
    sampled with Fb < 0 becomes, in mode ``roce``, a CNP to its source with the QP from the
    CNP-QP table (a miss: no CNP, counted in ``no_qp``; a frame not parsed as RoCEv2: no CNP,
    ``not_roce``), in mode ``qcn`` a private CNM to its source IP.

    Counters: ``notifications`` (packets emitted), ``no_qp``, ``not_roce``.  The CNP's
    addresses: source = the flow's destination IP, destination = the flow's source IP, UDP
    source port = the sampled packet's, IPv4 id 0 (atomic datagram, DF set)."""

    def __init__(self, cfg: L3qcnCpConfig):
        self.cfg = cfg
        self.cp = CpModel(cfg.cp)
        self.table = CnpQpTableModel(cfg.table_config())
        self.cnp = CnpModel(cfg.cnp)
        self.private = PrivateCnmGenModel(cfg.private)
        self.notifications = self.no_qp = self.not_roce = 0
        # the CP's own registers (L3qcnCpConfig.register_map; the QCN CP's are in self.cp)
        self.tbl_status = self.tbl_result = 0
        mask = (1 << 32) - 1
        self.csr = cfg.register_map().model({
            "TBL_STATUS": lambda: self.tbl_status << 1, "TBL_RESULT": lambda: self.tbl_result,
            "NOTIFICATIONS": lambda: self.notifications & mask,
            "NO_QP": lambda: self.no_qp & mask, "NOT_ROCE": lambda: self.not_roce & mask})

    def write(self, addr: int, value: int) -> None:
        """A register write: the QCN CP's below ``L3QCN_CP_WINDOW``; a write to ``TBL_CMD``
        applies the table command at once (the RTL's result is in ``TBL_STATUS`` /
        ``TBL_RESULT`` once ``busy`` has cleared)."""
        if addr < L3QCN_CP_WINDOW:
            self.cp.write(addr, value)
            return
        if self._gen(addr):                 # GEN_*: the CNP generator's own registers
            self.cnp.write(addr - L3QCN_CP_GEN_BASE, value)
            return
        if self._pcnm(addr):                # PCNM_*: the private CNM generator's
            self.private.write(addr - L3QCN_CP_PCNM_BASE, value)
            return
        hit = self.csr.write(addr, value)
        if hit is not None and hit[0].name == "TBL_CMD":
            r = self.table.table.command(
                HtOp(self.csr["TBL_CMD"]), cnp_qp_key(self.csr["TBL_KEY_IP"],
                                                      self.csr["TBL_KEY_QP"]),
                self.csr["TBL_VALUE"])
            self.tbl_status, self.tbl_result = int(r.status.value), r.value

    def _gen(self, addr: int) -> bool:
        regs = self.cfg.cnp.register_map().registers
        return (self.cfg.mode == "roce"
                and 0 <= addr - L3QCN_CP_GEN_BASE <= max(r.addr for r in regs))

    def _pcnm(self, addr: int) -> bool:
        regs = self.cfg.private.register_map().registers
        return (self.cfg.mode == "qcn"
                and 0 <= addr - L3QCN_CP_PCNM_BASE <= max(r.addr for r in regs))

    def read(self, addr: int) -> int:
        if addr < L3QCN_CP_WINDOW:
            return self.cp.read(addr)
        if self._gen(addr):
            return self.cnp.read(addr - L3QCN_CP_GEN_BASE)
        if self._pcnm(addr):
            return self.private.read(addr - L3QCN_CP_PCNM_BASE)
        return self.csr.read(addr)

    def frame(self, f: L3qcnFrame) -> bytes | None:
        d = self.cp.step(CpFrame(f.qlen, f.length))
        if not d.cnm:
            return None
        if self.cfg.mode == "qcn":
            pkt = self.private.packet(PrivateCnmRequest(
                FiveTuple(f.src_ip, f.dst_ip, f.sport, f.dport, f.protocol), d.qntz_fb,
                d.q_off, d.q_delta, f.prio, f.ip_len, f.sample))
        elif not f.roce:
            self.not_roce += 1
            return None
        else:
            qp = self.table.lookup(f.dst_ip, f.dqpn)
            if qp is None:
                self.no_qp += 1
                return None
            pkt = self.cnp.frame(CnpRequest(dqpn=qp, src_ip=f.dst_ip, dst_ip=f.src_ip,
                                            udp_sport=f.sport))
        self.notifications += 1
        return pkt


# ---- ingress ToR ---------------------------------------------------------------------------------

class TorModel:
    """The ingress ToR: learns 5-tuple -> (MAC, flow ID, VID) from host data frames, turns
    private CNMs (UDP to the run-time register ``PCNM_UDP_PORT``) into standard CNMs.
    Counters: ``cnms``, ``other``, ``malformed``, ``misses`` (private CNMs whose flow is
    unknown: no CNM), ``full`` (learns rejected)."""

    def __init__(self, cfg: L3qcnTorConfig):
        self.cfg = cfg
        self.flows = FlowIdTableModel(cfg.table_config())
        self.cnm = CnmModel(cfg.cnm_config())
        self.cnms = self.other = self.malformed = 0
        # the register file (L3qcnTorConfig.register_map)
        self.tbl_status, self.tbl_result = 0, FlowInfo(0, 0, 0)
        mask = (1 << 32) - 1
        self.csr = cfg.register_map().model({
            "TBL_STATUS": lambda: self.tbl_status << 1,
            "RES_MAC_LO": lambda: self.tbl_result.src_mac & mask,
            "RES_MAC_HI": lambda: self.tbl_result.src_mac >> 32,
            "RES_FLOW": lambda: self.tbl_result.rpid | self.tbl_result.vid << 16,
            **{c.upper(): (lambda c=c: getattr(self, c) & mask)
               for c in ("cnms", "other", "malformed", "misses", "full")},
            "OCCUPANCY": lambda: self.flows.table.occupancy})

    def write(self, addr: int, value: int) -> None:
        """A register write; a write to ``TBL_CMD`` applies the table command at once (the
        RTL's result is in ``TBL_STATUS`` / ``RES_*`` once ``busy`` has cleared); ``GEN_*``:
        the CNM generator's registers."""
        if self._gen(addr):
            self.cnm.write(addr - L3QCN_TOR_GEN_BASE, value)
            return
        hit = self.csr.write(addr, value)
        if hit is None or hit[0].name != "TBL_CMD":
            return
        f = self.csr.field
        key = FiveTuple(self.csr["TBL_SRC_IP"], self.csr["TBL_DST_IP"],
                        f("TBL_PORTS", "sport"), f("TBL_PORTS", "dport"),
                        self.csr["TBL_PROTOCOL"])
        info = FlowInfo(self.csr["TBL_MAC_HI"] << 32 | self.csr["TBL_MAC_LO"],
                        f("TBL_FLOW", "rpid"), f("TBL_FLOW", "vid"))
        r = self.flows.table.command(HtOp(self.csr["TBL_CMD"]), five_tuple_key(key),
                                     flow_info_value(info))
        self.tbl_status = int(r.status.value)
        self.tbl_result = FlowInfo(**_FLOW.unpack(r.value))

    def _gen(self, addr: int) -> bool:
        regs = self.cfg.cnm_config().register_map().registers
        return 0 <= addr - L3QCN_TOR_GEN_BASE <= max(r.addr for r in regs)

    def read(self, addr: int) -> int:
        if self._gen(addr):
            return self.cnm.read(addr - L3QCN_TOR_GEN_BASE)
        return self.csr.read(addr)

    def learn(self, t: FiveTuple, info: FlowInfo) -> HtStatus:
        return self.flows.learn(t, info)

    @property
    def misses(self) -> int:
        return self.flows.misses

    @property
    def full(self) -> int:
        return self.flows.full

    def receive(self, pkt: bytes) -> bytes | None:
        """A packet (its first beat after every earlier register write): the CNM, if any."""
        kind, p = classify(self.cfg.private, pkt, self.csr["PCNM_UDP_PORT"])
        if kind != "cnm":
            setattr(self, kind, getattr(self, kind) + 1)
            return None
        info = self.flows.lookup(p.flow)
        if info is None:
            return None
        self.cnms += 1
        return self.cnm.frame(CnmRequest(
            dst_mac=info.src_mac, vid=info.vid, rpid=info.rpid, cpid_low=p.cpid & 0xFFFF,
            qntz_fb=p.qntz_fb, q_off=p.q_off, q_delta=p.q_delta, enc_prio=p.enc_prio,
            enc_dst=self.cfg.tor_mac, msdu_len=p.msdu_len, msdu=p.sample,
            cpid_high=p.cpid >> 16))
