"""Configuration of the QCN CNM frame generator (IEEE 802.1Qau CNM as a byte stream).

``docs/qcn.md`` ("CNM frame generator") gives the frame layout.  The CP's MAC address and the
CNM priority are run-time registers (reset: the configuration's values, :meth:`register_map`);
the beat width, the MSDU bytes carried and the CPID source are structural.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..lib.csr import Register, RegisterMap
from ..params import BlockConfig, check_bool, check_choice, check_int

__all__ = ["CnmGenConfig", "CNM_ETHERTYPE", "CNTAG_ETHERTYPE", "VLAN_TPID", "CNM_HEADER_BYTES",
           "MIN_FRAME_BYTES"]

CNM_ETHERTYPE = 0x22E7
CNTAG_ETHERTYPE = 0x22E9
VLAN_TPID = 0x8100
#: Ethernet 14 + VLAN 4 + CN-TAG 4 + CNM PDU 24 bytes before the sampled MSDU bytes
CNM_HEADER_BYTES = 46
#: frames shorter than this (without FCS) are padded with zero bytes
MIN_FRAME_BYTES = 60


@dataclass(frozen=True)
class CnmGenConfig(BlockConfig):
    """``cp_mac``: the CP's MAC (frame SA and the upper 6 bytes of the CPID).
    ``cnm_pcp``: 802.1p priority of the CNM's VLAN tag (default 6, as for ConnectX CNPs).
    ``msdu_bytes``: sampled MSDU bytes carried (0..64; default 64, the maximum IEEE 802.1Qau
    carries).
    ``data_bytes``: bytes per output beat (4, 8 or 16).
    ``cpid_from_request``: the whole CPID comes from the request (``cpid_high``: its upper 6
    bytes) instead of ``cp_mac``; the L3QCN ToR forwards a remote CP's CPID this way."""

    cp_mac: int = 0x02_00_00_00_C0_01
    cnm_pcp: int = 6
    msdu_bytes: int = 64
    data_bytes: int = 8
    cpid_from_request: bool = False

    def __post_init__(self):
        check_int(self, "cp_mac", self.cp_mac, 0, (1 << 48) - 1)
        check_int(self, "cnm_pcp", self.cnm_pcp, 0, 7)
        check_int(self, "msdu_bytes", self.msdu_bytes, 0, 64)
        check_choice(self, "data_bytes", self.data_bytes, (4, 8, 16))
        check_bool(self, "cpid_from_request", self.cpid_from_request)

    def register_map(self, name: str = "cnm_gen") -> RegisterMap:
        """The run-time registers (reset: this configuration's values)."""
        regs = (
            Register.single("CP_MAC_LO", 32, self.cp_mac & 0xFFFF_FFFF,
                            desc="the CP's MAC address, bits 31..0 (frame SA; CPID bytes 0-5 "
                                 "unless cpid_from_request)"),
            Register.single("CP_MAC_HI", 16, self.cp_mac >> 32,
                            desc="the CP's MAC address, bits 47..32"),
            Register.single("CNM_PCP", 3, self.cnm_pcp,
                            desc="802.1p priority of the CNM's VLAN tag"),
        )
        return RegisterMap(name, regs, "CNMG", version=(1, 0),
                           desc="QCN CNM frame generator (IEEE 802.1Qau)")

    @property
    def max_frame(self) -> int:
        return max(MIN_FRAME_BYTES, CNM_HEADER_BYTES + self.msdu_bytes)


