"""The registry of exported hardware tops.

Amaranth Verilog has no parameters, so every configuration is its own top with its own build
folder.  Each entry names a component factory and the configuration it is built from; the
Verilog export, the lint, the synthesis report and the cocotb builds all read this table.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from hw.nic.dcqcn_config import DcqcnRpConfig
from hw.switch.marker_config import MarkerConfig


@dataclass(frozen=True)
class Top:
    name: str
    config: object
    factory: Callable[[object], object]
    description: str

    def build(self):
        return self.factory(self.config)


def _dcqcn_rp(cfg):
    from hw.nic.dcqcn_rp import DcqcnRp
    return DcqcnRp(cfg)


def _marker(cfg):
    from hw.switch.marker import EgressMarker
    return EgressMarker(cfg)


#: 1 port x 1 priority, LDCP profile (the defaults of MarkerConfig).
MARKER_1X1 = MarkerConfig()

#: 8 ports x 8 priorities, DCQCN (RED-ECN) profile with the DCQCN paper's ramp, 1 MB per
#: queue in a 12 MB shared pool, marking at dequeue as DCQCN recommends.
MARKER_8X8 = MarkerConfig.dcqcn(ports=8, priorities=8, k_min=5_000, k_max=200_000, p_max=0.01,
                                buf_max=1_000_000, shared_buffer=12_000_000,
                                sample_at="dequeue")

TOPS: dict[str, Top] = {t.name: t for t in [
    Top("marker_1x1", MARKER_1X1, _marker, "egress marker, 1 port x 1 priority, LDCP profile"),
    Top("marker_8x8", MARKER_8X8, _marker, "egress marker, 8 ports x 8 priorities, DCQCN profile"),
    # DCQCN reaction point, one flow, one top per named profile (docs/dcqcn.md).
    Top("dcqcn_rp_paper", DcqcnRpConfig.profile("paper"), _dcqcn_rp,
        "DCQCN reaction point, paper profile (40 Gb/s)"),
    Top("dcqcn_rp_ns3_rdma", DcqcnRpConfig.profile("ns3-rdma"), _dcqcn_rp,
        "DCQCN reaction point, ns3-rdma profile (40 Gb/s)"),
    Top("dcqcn_rp_hpcc_mlx", DcqcnRpConfig.profile("hpcc-mlx"), _dcqcn_rp,
        "DCQCN reaction point, HPCC ns-3 mlx profile (100 Gb/s)"),
    Top("dcqcn_rp_connectx", DcqcnRpConfig.profile("connectx"), _dcqcn_rp,
        "DCQCN reaction point, ConnectX firmware defaults (100 Gb/s)"),
]}
