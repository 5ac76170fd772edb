"""Configuration of L3QCN (draft-yu-tsvwg-l3qcn-00, ``docs/l3qcn.md``): the private CNM, the
congestion
point's notifier (switch-built RoCEv2 CNP or private CNM) and the ingress ToR's converter.

All values are elaboration-time constants (the reset values of run-time registers where a
block has them: its ``register_map``).  Frozen, validated dataclasses; an invalid value
raises :class:`hw.params.ConfigError` naming the field, the value and the allowed range.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..lib.csr import Field, Register, RegisterMap, write_error_register
from ..nic.cnp_config import CnpGenConfig
from ..params import BlockConfig, ConfigError, check_choice, check_int
from .cnm_config import CnmGenConfig
from .hash_table_config import HashTableConfig
from .qcn_cp_config import QcnCpConfig

__all__ = ["PrivateCnmConfig", "L3qcnCpConfig", "L3qcnTorConfig", "PRIVATE_CNM_PORT",
           "L3QCN_CP_GEN_BASE", "L3QCN_CP_PCNM_BASE", "L3QCN_TOR_GEN_BASE", "generator_window",
           "PRIVATE_CNM_VERSION", "PRIVATE_CNM_PDU_BYTES", "CNP_TAG_WIDTH", "PCNM_LEGAL",
           "L3QCN_TOR_PORT_ADDR"]

#: Default UDP destination port of the private CNM: 1021, one of the two ports IANA reserves
#: for RFC 3692-style experiments (RFC 4727).  No port is assigned to L3QCN (the draft's IANA
#: section only says one "will be applied"); a port below 1024 is never an ephemeral port, so
#: ordinary host traffic does not collide with it.
PRIVATE_CNM_PORT = 1021
#: Version nibble of the private CNM PDU (0 is the standard CNM's; 1 marks this format).
PRIVATE_CNM_VERSION = 1
PRIVATE_CNM_PDU_BYTES = 32
#: tag carried by the CP's CNP-QP table lookups: mgmt flag 1 + flow source IP 32 + UDP sport 16
CNP_TAG_WIDTH = 49
#: the L3QCN CP's register words below this address are its QCN CP's
L3QCN_CP_WINDOW = 0x20
#: mode ``roce``: the CNP generator's registers at this word + their own address (``GEN_*``)
L3QCN_CP_GEN_BASE = 0x30
#: mode ``qcn``: the private CNM generator's registers at this word + their own address
#: (``PCNM_*``; the same free window as mode ``roce``'s ``GEN_*``)
L3QCN_CP_PCNM_BASE = 0x30
#: the ToR's CNM generator's registers at this word + their own address (``GEN_*``)
L3QCN_TOR_GEN_BASE = 0x18
#: the ToR's ``PCNM_UDP_PORT`` (the port its parser matches) and ``WERR`` (the next word)
L3QCN_TOR_PORT_ADDR = 0x0C

#: The legal values of the private CNM's header registers (inclusive ranges; a write of another
#: value is refused, ``hw/lib/csr.py`` "Refused writes"; the configuration's reset values obey
#: the same ranges).  The switch originates the packet, so it must be a well-formed one:
#:
#: * ``CP_IP`` (the source address): a unicast address.  Not 0.0.0.0/8 ("this network": a
#:   source only while a host learns its address, RFC 1122 3.2.1.3), not 127/8 (loopback: never
#:   outside a host, RFC 1122), not 224/4 (multicast: never a source, RFC 1112) nor 240/4 with
#:   255.255.255.255 (reserved, limited broadcast: never a source, RFC 1122 3.2.1.3).
#: * ``UDP_PORT`` (destination): 1 ... 65535; port 0 is reserved (RFC 6335; no socket listens
#:   on it) and the ToR could not be told apart from "no port" by it.  ``UDP_SPORT``: every
#:   value; RFC 768 makes the source port optional, 0 when unused (no reply is expected).
#: * ``ECN``: ECT(1) = 1 or ECT(0) = 2.  CE (3) is set only by a congested router (RFC 3168
#:   section 5): a CNM that leaves the CP marked CE reports a congestion no queue saw.  Not-ECT
#:   (0) lets an ECN-marking queue on the way back drop the notification where it would mark
#:   an ECT packet (RFC 3168 section 5, RFC 7567): the CNM is lost exactly when the fabric is
#:   congested, the case it exists for.
#: * ``TTL``: 1 ... 255; a datagram with TTL 0 must not be sent (RFC 1122 3.2.1.7) and is
#:   destroyed by the first router (RFC 791).
#: * ``CPID_*`` (an identifier, 802.1Qau), ``DSCP`` (every codepoint is valid on the wire,
#:   RFC 2474): every value.
PCNM_LEGAL = {
    "CP_IP": ((0x0100_0000, 0x7EFF_FFFF), (0x8000_0000, 0xDFFF_FFFF)),
    "UDP_PORT": ((1, 0xFFFF),),
    "ECN": ((1, 2),),
    "TTL": ((1, 255),),
}


def generator_window(regmap: RegisterMap, base: int, prefix: str = "GEN_") -> list[Register]:
    """A generator's registers (not its ID header) as ``<prefix><name>`` at ``base`` + their
    own word address, for a top's map that forwards them to the generator's register port."""
    return [replace(r, name=f"{prefix}{r.name}", addr=base + r.addr,
                    desc=f"generator: {r.desc}") for r in regmap.registers]


def _tor_port_register(port: Register) -> Register:
    """The ToR's ``PCNM_UDP_PORT``: the generator's ``UDP_PORT`` (field, width, reset, legal
    values) at the ToR's address, described from the parser's side."""
    text = ("UDP destination port of the private CNMs (the CPs' PCNM_UDP_PORT); a packet is "
            "matched with the value in force at its first beat")
    return replace(port, name="PCNM_UDP_PORT", addr=L3QCN_TOR_PORT_ADDR, desc=text,
                   fields=(replace(port.fields[0], desc=text),))


@dataclass(frozen=True)
class PrivateCnmConfig(BlockConfig):
    """The private CNM (an IPv4/UDP packet, ``docs/l3qcn.md``).

    ``cp_ip``: IPv4 source address (the CP's own; see docs for why not the flow's).
    ``cpid``: the CP's 64-bit CPID (MAC in the upper 6 bytes, port/priority in the lower 2).
    ``udp_port``: UDP destination port the ToR recognizes (default 1021, RFC 4727).
    ``udp_sport``: UDP source port.  ``dscp``, ``ecn`` (1 or 2: ECT), ``ttl``: IPv4 fields.
    ``sample_bytes``: bytes of the sampled IP packet carried after the PDU (even, 0..64).
    ``data_bytes``: bytes per beat of the byte streams (4, 8 or 16).

    ``cp_ip``, ``cpid``, ``udp_port``, ``udp_sport``, ``dscp``, ``ecn`` and ``ttl`` are the
    reset values of the generator's run-time registers (:meth:`register_map`)."""

    cp_ip: int = 0x0A_00_FF_01           # 10.0.255.1
    cpid: int = (0x02_00_00_00_C0_01 << 16) | 0x0005
    udp_port: int = PRIVATE_CNM_PORT
    udp_sport: int = PRIVATE_CNM_PORT
    dscp: int = 48
    ecn: int = 1
    ttl: int = 64
    sample_bytes: int = 16
    data_bytes: int = 8

    def __post_init__(self):
        check_int(self, "cp_ip", self.cp_ip, 0, (1 << 32) - 1)
        if not any(lo <= self.cp_ip <= hi for lo, hi in PCNM_LEGAL["CP_IP"]):
            raise ConfigError(self, "cp_ip", self.cp_ip, "a unicast IPv4 address, 1.0.0.0 ... "
                              "126.255.255.255 or 128.0.0.0 ... 223.255.255.255 (0x01000000 ... "
                              "0x7EFFFFFF, 0x80000000 ... 0xDFFFFFFF)")
        check_int(self, "cpid", self.cpid, 0, (1 << 64) - 1)
        check_int(self, "udp_port", self.udp_port, 1, 0xFFFF)
        check_int(self, "udp_sport", self.udp_sport, 0, 0xFFFF)
        check_int(self, "dscp", self.dscp, 0, 63)
        check_choice(self, "ecn", self.ecn, (1, 2))
        check_int(self, "ttl", self.ttl, 1, 255)
        check_int(self, "sample_bytes", self.sample_bytes, 0, 64)
        if self.sample_bytes % 2:
            raise ConfigError(self, "sample_bytes", self.sample_bytes, "an even integer 0..64")
        check_choice(self, "data_bytes", self.data_bytes, (4, 8, 16))

    def registers(self) -> dict[str, int]:
        """Reset values of the run-time registers, by register name (the 64-bit CPID as two
        words, low first)."""
        return {"CP_IP": self.cp_ip, "CPID_LO": self.cpid & 0xFFFF_FFFF,
                "CPID_HI": self.cpid >> 32, "UDP_PORT": self.udp_port,
                "UDP_SPORT": self.udp_sport, "DSCP": self.dscp, "ECN": self.ecn,
                "TTL": self.ttl}

    def register_map(self, name: str = "private_cnm") -> RegisterMap:
        """The generator's register map: the packet's header fields, reset to this
        configuration's values, then ``WERR``.  A write is applied between packets (no request
        held); a value outside :data:`PCNM_LEGAL` is refused (the register keeps its value,
        ``WERR.refused`` is set)."""
        widths = {"CP_IP": 32, "CPID_LO": 32, "CPID_HI": 32, "UDP_PORT": 16, "UDP_SPORT": 16,
                  "DSCP": 6, "ECN": 2, "TTL": 8}
        desc = {"CP_IP": "IPv4 source address (the CP's; unicast)",
                "CPID_LO": "CPID bits 31..0 (port / priority in the low 16)",
                "CPID_HI": "CPID bits 63..32 (the CP's MAC, upper 4 bytes)",
                "UDP_PORT": "UDP destination port (the ToR's PCNM_UDP_PORT matches it)",
                "UDP_SPORT": "UDP source port", "DSCP": "IPv4 DSCP",
                "ECN": "IPv4 ECN (ECT(1) 1 or ECT(0) 2)", "TTL": "IPv4 TTL"}
        regs = tuple(Register.single(n, widths[n], v, desc=desc[n], addr=i,
                                     legal=PCNM_LEGAL.get(n, ()))
                     for i, (n, v) in enumerate(self.registers().items()))
        regs += (write_error_register(len(regs)),)
        return RegisterMap(name, regs, "PCNM", version=(1, 1),
                           desc="L3QCN private CNM generator")

    @property
    def udp_length(self) -> int:
        return 8 + PRIVATE_CNM_PDU_BYTES + self.sample_bytes

    @property
    def packet_bytes(self) -> int:
        """IPv4 total length: 20 + 8 + 32 + sample_bytes."""
        return 20 + self.udp_length


@dataclass(frozen=True)
class L3qcnCpConfig(BlockConfig):
    """The L3QCN congestion point of one queue (``docs/l3qcn.md``, "Congestion point").

    ``mode``: ``"roce"`` (the queue of the RoCEv2 priority: a sampled frame with Fb < 0 gets a
    switch-built CNP to its source, the sender's QP from the CNP-QP table) or ``"qcn"`` (the
    QCN priority: a private CNM to the flow's source IP).
    ``cp``: the QCN congestion point (feedback, quantization, sampling).
    ``private``: the private CNM (mode ``qcn``).  ``cnp``: the CNP generator (mode ``roce``;
    IPv4, no L2 header: the switch's forwarding pipeline adds it).
    ``buckets``, ``ways``, ``hash_seed``: the CNP-QP table (mode ``roce``).
    ``counter_width``: bits of the saturating counters."""

    mode: str = "qcn"
    cp: QcnCpConfig = QcnCpConfig()
    private: PrivateCnmConfig = PrivateCnmConfig()
    cnp: CnpGenConfig = CnpGenConfig(l2="none")
    buckets: int = 256
    ways: int = 4
    hash_seed: int = 0
    counter_width: int = 32

    def __post_init__(self):
        check_choice(self, "mode", self.mode, ("roce", "qcn"))
        for name, kind in (("cp", QcnCpConfig), ("private", PrivateCnmConfig),
                           ("cnp", CnpGenConfig)):
            if not isinstance(getattr(self, name), kind):
                raise ConfigError(self, name, getattr(self, name), f"a {kind.__name__}")
        if self.cnp.ip_version != 4 or self.cnp.l2 != "none":
            raise ConfigError(self, "cnp", self.cnp, "a CnpGenConfig with ip_version 4, l2 'none'")
        if self.private.data_bytes != self.cnp.data_bytes:
            raise ConfigError(self, "cnp", self.cnp, "data_bytes equal to private.data_bytes"
                              f" (= {self.private.data_bytes})")
        check_int(self, "counter_width", self.counter_width, 8, 64)
        self.table_config()      # validates buckets, ways, hash_seed


    def table_config(self) -> HashTableConfig:
        return HashTableConfig.cnp_qp(self.buckets, self.ways, CNP_TAG_WIDTH).replace(
            hash_seed=self.hash_seed, counter_width=self.counter_width)

    def register_map(self, name: str = "l3qcn_cp") -> RegisterMap:
        """The CP's register map: the QCN CP's registers at their own addresses (words 0 ...
        0x1F, forwarded to it), then (mode ``roce``) the CNP-QP table's command registers and
        the counters, then the identification header.  A write to ``TBL_CMD`` issues the command
        with ``TBL_KEY_*`` / ``TBL_VALUE``; until its result is in ``TBL_STATUS`` /
        ``TBL_RESULT`` (``busy`` = 0) the table registers take no write."""
        regs = list(self.cp.register_map().registers)
        assert max(r.addr for r in regs) < L3QCN_CP_WINDOW
        base = L3QCN_CP_WINDOW
        if self.mode == "roce":
            regs += [
                Register.single("TBL_KEY_IP", 32, desc="table key: the flow's destination IP "
                                "(the CNP's source)", addr=base),
                Register.single("TBL_KEY_QP", 24, desc="table key: the flow's destination QP"),
                Register.single("TBL_VALUE", 24, desc="the value an ADD / LEARN writes: the "
                                "sender's (source) QP"),
                Register("TBL_CMD", (Field("op", 2, desc="LOOKUP 0, ADD 1, REMOVE 2, LEARN 3; "
                                           "a write issues the command"),),
                         "CNP-QP table command"),
                Register("TBL_STATUS", (
                    Field("busy", 1, "ro", desc="1 while a command is in flight"),
                    Field("status", 3, "ro", desc="the last command's status: OK 0, NOT_FOUND "
                          "1, FULL 2, DUPLICATE 3, REFRESHED 4")),
                    "the last register-issued table command"),
                Register("TBL_RESULT", (Field("value", 24, "ro", desc="the key's value before "
                                              "the last command (0 if absent)"),),
                         "the last register-issued table command's value"),
            ]
        counters = ["notifications"] + (["no_qp", "not_roce"] if self.mode == "roce" else [])
        text = {"notifications": "packets emitted", "no_qp": "samples whose (IP, QP) missed "
                "the table", "not_roce": "samples of frames not parsed as RoCEv2"}
        for i, c in enumerate(counters):
            regs.append(Register(c.upper(), (Field(c, 32, "ro", desc=text[c] + " (saturating; "
                                                   "the low 32 bits)"),), text[c],
                                 base + 8 + i))
        if self.mode == "roce":
            # the CNP generator's run-time knobs (DSCP, ECN, priority, VLAN, TTL, P_Key)
            regs += generator_window(self.cnp.register_map(), L3QCN_CP_GEN_BASE)
        else:
            # the private CNM's header fields (source IP, CPID, UDP ports, DSCP, ECN, TTL)
            # and its WERR
            regs += generator_window(self.private.register_map(), L3QCN_CP_PCNM_BASE, "PCNM_")
        return RegisterMap(name, tuple(regs), "L3CP", version=(1, 1),
                           desc=f"L3QCN congestion point, mode {self.mode}")


@dataclass(frozen=True)
class L3qcnTorConfig(BlockConfig):
    """The ingress ToR's private-CNM-to-CNM converter (``docs/l3qcn.md``, "ToR").

    ``private``: the private CNM format it accepts (``sample_bytes``, ``data_bytes`` of the
    input stream; ``udp_port``: the reset value of the run-time register ``PCNM_UDP_PORT``, the
    port the parser matches).  ``tor_mac``: the ToR's MAC: the CNM's source address,
    and its encapsulated destination MAC (hosts send routed traffic to their gateway).  The
    CNM's CPID is the remote CP's, carried by the private CNM.
    ``cnm_pcp``: priority of the CNM's VLAN tag.  ``buckets``, ``ways``, ``hash_seed``: the
    flow-ID mapping table.  ``counter_width``: bits of the saturating counters."""

    private: PrivateCnmConfig = PrivateCnmConfig()
    tor_mac: int = 0x02_00_00_00_70_01
    cnm_pcp: int = 6
    buckets: int = 256
    ways: int = 4
    hash_seed: int = 0
    counter_width: int = 32

    def __post_init__(self):
        if not isinstance(self.private, PrivateCnmConfig):
            raise ConfigError(self, "private", self.private, "a PrivateCnmConfig")
        check_int(self, "counter_width", self.counter_width, 8, 64)
        self.cnm_config()        # validates tor_mac, cnm_pcp
        self.table_config()      # validates buckets, ways, hash_seed


    def table_config(self) -> HashTableConfig:
        # tag bit 0: a private CNM's lookup; bit 1: a register-issued command
        return HashTableConfig.flow_id(self.buckets, self.ways, 2).replace(
            hash_seed=self.hash_seed, counter_width=self.counter_width)

    def register_map(self, name: str = "l3qcn_tor") -> RegisterMap:
        """The ToR's register map: the flow-ID table's command registers (key: the 5-tuple;
        value: source MAC, CN-TAG flow ID, VLAN ID), the result of the last register-issued
        command, ``PCNM_UDP_PORT`` (the private CNMs' port: the CP's register of that name,
        its width, reset and legal values) and ``WERR``, the counters, the CNM generator's
        registers and the identification header.  A write to ``TBL_CMD`` issues the command;
        until its result is in (``busy`` = 0) the table registers take no write."""
        ro = "ro"
        regs = [
            Register.single("TBL_SRC_IP", 32, desc="table key: source IP", addr=0),
            Register.single("TBL_DST_IP", 32, desc="table key: destination IP"),
            Register("TBL_PORTS", (Field("dport", 16, desc="destination port"),
                                   Field("sport", 16, desc="source port")),
                     "table key: the UDP / TCP ports"),
            Register.single("TBL_PROTOCOL", 8, desc="table key: IP protocol"),
            Register.single("TBL_MAC_LO", 32, desc="value: the host's MAC, bits 31..0"),
            Register.single("TBL_MAC_HI", 16, desc="value: the host's MAC, bits 47..32"),
            Register("TBL_FLOW", (Field("rpid", 16, desc="value: CN-TAG flow ID"),
                                  Field("vid", 12, desc="value: VLAN ID")),
                     "value: flow ID and VLAN"),
            Register("TBL_CMD", (Field("op", 2, desc="LOOKUP 0, ADD 1, REMOVE 2, LEARN 3; a "
                                       "write issues the command"),),
                     "flow-ID table command"),
            Register("TBL_STATUS", (
                Field("busy", 1, ro, desc="1 while a command is in flight"),
                Field("status", 3, ro, desc="the last command's status: OK 0, NOT_FOUND 1, "
                      "FULL 2, DUPLICATE 3, REFRESHED 4")),
                "the last register-issued table command"),
            Register.single("RES_MAC_LO", 32, access=ro, desc="the key's value before the "
                            "last command (0 if absent): MAC bits 31..0"),
            Register.single("RES_MAC_HI", 16, access=ro, desc="... MAC bits 47..32"),
            Register("RES_FLOW", (Field("rpid", 16, ro, desc="... flow ID"),
                                  Field("vid", 12, ro, desc="... VLAN ID")),
                     "the last command's value: flow ID and VLAN"),
            # the CP's PCNM_UDP_PORT itself (one software value configures both), then WERR
            _tor_port_register(self.private.register_map()["UDP_PORT"]),
            write_error_register(L3QCN_TOR_PORT_ADDR + 1),
        ]
        text = {"cnms": "CNMs emitted", "other": "packets ignored (not a private CNM)",
                "malformed": "private CNMs dropped as malformed",
                "misses": "private CNMs whose 5-tuple missed the table",
                "full": "inserts refused (bucket full)", "occupancy": "entries in the table"}
        for i, (c, t) in enumerate(text.items()):
            suffix = "" if c == "occupancy" else " (saturating; the low 32 bits)"
            regs.append(Register(c.upper(), (Field(c, 32, ro, desc=t + suffix),), t, 0x10 + i))
        # the CNM generator's run-time knobs (the CNMs' source MAC, their priority)
        regs += generator_window(self.cnm_config().register_map(), L3QCN_TOR_GEN_BASE)
        return RegisterMap(name, tuple(regs), "L3TR", version=(1, 1),
                           desc="L3QCN ingress ToR: private CNM to CNM")

    def cnm_config(self) -> CnmGenConfig:
        return CnmGenConfig(cp_mac=self.tor_mac, cnm_pcp=self.cnm_pcp,
                            msdu_bytes=self.private.sample_bytes,
                            data_bytes=self.private.data_bytes, cpid_from_request=True)

    @property
    def capture_bytes(self) -> int:
        """Bytes of an input packet kept for parsing: a whole private CNM."""
        return self.private.packet_bytes
