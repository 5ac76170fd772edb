"""Configuration of the NIC notification path (:mod:`hw.nic.cnp_notify`): received RoCEv2
packets in, CNPs out, through the DCQCN notification point and a per-QP table.

``np``: the notification point (``flows`` QPs tracked, a power of two: the table has one entry
per flow, at index ``DestQP mod flows``; the pacing rule and ``min_time_between_cnps``).
``cnp``: the CNP generator (IPv4 with an L2 header; its ``data_bytes`` is the width of both
AXI-Stream interfaces).  ``counter_width``: bits of the saturating counters.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..lib.csr import Field, Register, RegisterMap
from ..params import BlockConfig, ConfigError, check_int
from .cnp_config import CnpGenConfig
from .dcqcn_np_config import DcqcnNpConfig

__all__ = ["CnpNotifyConfig", "COUNTERS", "FLOW_REGS", "BLOCK_TYPE", "CAPTURE_BYTES"]

BLOCK_TYPE = "CNPN"
#: bytes of a received frame the parser keeps: Ethernet 14 + VLAN 4 + IPv4 20 + UDP 8 + BTH 12
CAPTURE_BYTES = 58
#: read-only counters (global registers after the NP's): name -> description
COUNTERS = {
    "CNT_CNP": "CNPs sent",
    "CNT_CE": "CE-marked RoCEv2 packets of a configured QP (given to the NP)",
    "CNT_MALFORMED": "frames dropped as malformed (bad frame, runt, IPv4 header errors, "
                     "fragment, truncated, UDP length)",
    "CNT_OTHER": "frames that are not RoCEv2 data (not IPv4/UDP to port 4791, or a CNP)",
    "CNT_UNKNOWN_QP": "RoCEv2 packets whose QP has no valid table entry (and CNPs dropped "
                      "because the entry was invalidated meanwhile)",
}
#: word of the notification point's registers (its own map's word 0), after the generator's
NP_BASE = 6
#: the per-QP table: one window of 16 words per flow (word: register)
FLOW_REGS = ("QP", "DEST_QP", "DEST_IP", "SRC_IP", "DEST_MAC_LO", "DEST_MAC_HI", "SRC_MAC_LO",
             "SRC_MAC_HI", "UDP_SPORT")


@dataclass(frozen=True)
class CnpNotifyConfig(BlockConfig):
    np: DcqcnNpConfig = DcqcnNpConfig()
    cnp: CnpGenConfig = CnpGenConfig(l2="eth")
    counter_width: int = 32

    def __post_init__(self):
        if not isinstance(self.np, DcqcnNpConfig):
            raise ConfigError(self, "np", self.np, "a DcqcnNpConfig")
        if not isinstance(self.cnp, CnpGenConfig):
            raise ConfigError(self, "cnp", self.cnp, "a CnpGenConfig")
        if self.np.flows & (self.np.flows - 1):
            raise ConfigError(self, "np.flows", self.np.flows,
                              "a power of two (the table index is DestQP mod flows)")
        if self.cnp.ip_version != 4 or self.cnp.l2 == "none":
            raise ConfigError(self, "cnp", f"ip_version={self.cnp.ip_version}, "
                              f"l2={self.cnp.l2!r}", "IPv4 with l2 'eth' or 'eth_vlan' "
                              "(the path parses Ethernet + IPv4 RoCEv2)")
        check_int(self, "counter_width", self.counter_width, 8, 32)

    @property
    def flows(self) -> int:
        return self.np.flows

    @property
    def index_width(self) -> int:
        return (self.np.flows - 1).bit_length()

    @property
    def data_bytes(self) -> int:
        return self.cnp.data_bytes

    def np_registers(self) -> tuple[Register, ...]:
        """The notification point's own registers (at their own word addresses), if it has
        a register map."""
        make = getattr(self.np, "register_map", None)
        return make().registers if make is not None else ()

    def register_map(self, name: str = "cnp_notify", forwarded: bool = True) -> RegisterMap:
        """Words 0-5: the CNP generator's registers (forwarded to it, same names and resets);
        from word 6: the notification point's registers (``MIN_TIME_BETWEEN_CNPS``, forwarded);
        then the counters; the identification header at 0x10; the per-QP table in windows of 16
        words from ``flow_base`` (flow ``f``, register ``r`` at ``flow_base + 16 f + r``;
        ``flow_base`` = 0x80 for up to 8 flows, ``16 * flows`` above).  ``forwarded=False``:
        without the generator's and the NP's registers (the block's own storage: same
        addresses, same header)."""
        cnp_regs = self.cnp.register_map().registers
        np_regs = tuple(replace(r, addr=NP_BASE + r.addr) for r in self.np_registers())
        base = max(r.addr for r in cnp_regs + np_regs) + 1
        cw = self.counter_width
        counters = tuple(Register.single(n, cw, access="ro", desc=d, addr=base + i)
                         for i, (n, d) in enumerate(COUNTERS.items()))
        flow = (
            Register("QP", (Field("qpn", 24, desc="the local QP (the data packets' DestQP); "
                                  "its low bits must equal the flow number"),
                            Field("valid", 1, offset=31, desc="entry in use")),
                     "the local QP of the flow, and the entry's valid bit"),
            Register.single("DEST_QP", 24, desc="the CNP's DestQP: the QP at the data sender"),
            Register.single("DEST_IP", 32, desc="the CNP's destination: the data sender's IP"),
            Register.single("SRC_IP", 32, desc="the CNP's source: this NIC's IP for the QP"),
            Register.single("DEST_MAC_LO", 32, desc="the CNP's destination MAC, bits 31:0 "
                            "(the next hop's)"),
            Register.single("DEST_MAC_HI", 16, desc="the CNP's destination MAC, bits 47:32"),
            Register.single("SRC_MAC_LO", 32, desc="the CNP's source MAC, bits 31:0"),
            Register.single("SRC_MAC_HI", 16, desc="the CNP's source MAC, bits 47:32"),
            Register.single("UDP_SPORT", 16, desc="the CNP's UDP source port"),
        )
        assert tuple(r.name for r in flow) == FLOW_REGS
        own = counters if not forwarded else cnp_regs + np_regs + counters
        return RegisterMap(name, own, BLOCK_TYPE, version=(1, 0),
                           desc="NIC notification path: RoCEv2 packets in, paced CNPs out",
                           flows=self.np.flows, flow_registers=flow)
