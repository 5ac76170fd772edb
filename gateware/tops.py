"""The registry of exported hardware tops.

Amaranth Verilog has no parameters, so every configuration is its own top with its own build
folder.  Each entry names a component factory and the configuration it is built from; the
Verilog export, the lint, the synthesis report and the cocotb builds all read this table.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from hw.nic.cnp_config import CnpGenConfig
from hw.nic.cnp_notify_config import CnpNotifyConfig
from hw.nic.dcqcn_config import DcqcnRpConfig
from hw.nic.dcqcn_engine import DcqcnEngineConfig
from hw.nic.dcqcn_np_config import DcqcnNpConfig
from hw.nic.flow_engine_config import FlowEngineConfig
from hw.nic.ldcp_transport_config import LdcpTransportConfig
from hw.nic.ldcp_window_config import LdcpWindowConfig
from hw.nic.qcn_engine import QcnEngineConfig
from hw.nic.qcn_rp_config import QcnRpConfig
from hw.nic.rate_limiter_config import RateLimiterConfig
from hw.nic.swift_config import SwiftConfig
from hw.nic.timely_config import TimelyConfig
from hw.switch.cnm_config import CnmGenConfig
from hw.switch.hash_table_config import HashTableConfig
from hw.switch.l3qcn_config import L3qcnCpConfig, L3qcnTorConfig, PrivateCnmConfig
from hw.switch.marker_config import MarkerConfig
from hw.switch.qcn_cp_config import QcnCpConfig


@dataclass(frozen=True)
class Top:
    name: str
    config: object
    factory: Callable[[object], object]
    description: str
    #: part of the default set of ``python -m gateware verilog|synth`` (``make run``, ``make
    #: verilog``, ``make synth``) and of the tops every fast test elaborates.  The multi-flow
    #: engine tops are not, yet: their timer wheel's flat summary logic over 2048 bitmap words
    #: exports as ~100 MB of Verilog per top (docs/flow-engine.md, "What limits it"); name them
    #: explicitly to export or synthesize them.
    default: bool = True

    def build(self):
        return self.factory(self.config)


def _cnp_gen(cfg):
    from hw.nic.cnp_gen import CnpGenerator
    return CnpGenerator(cfg)


def _dcqcn_np(cfg):
    from hw.nic.dcqcn_np import DcqcnNp
    return DcqcnNp(cfg)


def _rate_limiter(cfg):
    from hw.nic.rate_limiter import RateLimiter
    return RateLimiter(cfg)


def _dcqcn_rp(cfg):
    from hw.nic.dcqcn_rp import DcqcnRp
    return DcqcnRp(cfg)


def _ldcp_window(cfg):
    from hw.nic.ldcp_window import LdcpWindow
    return LdcpWindow(cfg)


def _ldcp_tx(cfg):
    from hw.nic.ldcp_transport import LdcpSender
    return LdcpSender(cfg)


def _ldcp_rx(cfg):
    from hw.nic.ldcp_transport import LdcpReceiver
    return LdcpReceiver(cfg)


def _qcn_rp(cfg):
    from hw.nic.qcn_rp import QcnRp
    return QcnRp(cfg)


def _cnm_gen(cfg):
    from hw.switch.cnm_gen import CnmGenerator
    return CnmGenerator(cfg)


def _qcn_cp(cfg):
    from hw.switch.qcn_cp import QcnCp
    return QcnCp(cfg)


def _hash_table(cfg):
    from hw.switch.hash_table import HashTable
    return HashTable(cfg)


def _l3qcn_cp(cfg):
    from hw.switch.l3qcn import L3qcnCp
    return L3qcnCp(cfg)


def _l3qcn_tor(cfg):
    from hw.switch.l3qcn import L3qcnTor
    return L3qcnTor(cfg)


def _axis(factory):
    """The block of ``factory`` with AXI-Stream frame ports (hw/lib/axis.py)."""
    def build(cfg):
        from hw.lib.axis import AxisWrapper
        return AxisWrapper(factory(cfg))
    return build


def _private_cnm(cfg):
    from hw.switch.l3qcn import PrivateCnmGen
    return PrivateCnmGen(cfg)


def _cnp_notify(cfg):
    from hw.nic.cnp_notify import CnpNotify
    return CnpNotify(cfg)


def _marker(cfg):
    from hw.switch.marker import EgressMarker
    return EgressMarker(cfg)


def _flow_engine_toy(cfg):
    from hw.nic.flow_datapath import ToyDatapath
    from hw.nic.flow_engine import FlowEngine
    # toy timer period 4000 cycles: 1024 armed flows make 0.26 expiries per cycle
    return FlowEngine(cfg, ToyDatapath(cfg.time_width, period=4000))


def _pacer_config():
    from hw.nic.pacer_config import PacerConfig
    # the three-cycle packet update (docs/pacer.md, "The update alone")
    return PacerConfig(engine=FlowEngineConfig(n_flows=1024), update_cycles=3)


def _pacer(cfg):
    from hw.nic.pacer import pacer_engine
    return pacer_engine(cfg)


def _pacer_bytes_config():
    from hw.nic.pacer_config import PacerConfig
    # the product's two cycles, then the three-cycle update (latency 5; docs/pacer.md,
    # "The update alone")
    return PacerConfig(engine=FlowEngineConfig(n_flows=1024), byte_mode=True,
                       update_cycles=3)


def _pacer_datapath(cfg):
    from hw.nic.flow_datapath import DatapathTop
    from hw.nic.pacer import PacerDatapath
    return DatapathTop(PacerDatapath(cfg), cfg.engine.time_width)


def _ldcp_engine_config():
    from hw.nic.ldcp_engine import LdcpEngineConfig
    return LdcpEngineConfig(engine=FlowEngineConfig(n_flows=1024, out_fifo_depth=32))


def _ldcp_engine(cfg):
    from hw.nic.ldcp_engine import ldcp_engine
    return ldcp_engine(cfg)


def _ldcp_tx_engine_config():
    from hw.nic.ldcp_tx_engine import LdcpTxEngineConfig
    return LdcpTxEngineConfig(engine=FlowEngineConfig(n_flows=1024, out_fifo_depth=34))


def _ldcp_tx_engine(cfg):
    from hw.nic.ldcp_tx_engine import ldcp_tx_engine
    return ldcp_tx_engine(cfg)


def _ldcp_tx_datapath_pipe(cfg):
    from hw.nic.flow_datapath import DatapathTop
    from hw.nic.ldcp_tx_engine import LdcpTxDatapath
    return DatapathTop(LdcpTxDatapath(cfg), cfg.engine.time_width)


def _ldcp_rx_engine_config():
    from hw.nic.ldcp_rx_engine import LdcpRxEngineConfig
    return LdcpRxEngineConfig(engine=FlowEngineConfig(n_flows=1024))


def _ldcp_rx_engine(cfg):
    from hw.nic.ldcp_rx_engine import ldcp_rx_engine
    return ldcp_rx_engine(cfg)


def _dcqcn_engine(cfg):
    from hw.nic.dcqcn_engine import dcqcn_engine
    return dcqcn_engine(cfg)


def _dcqcn_datapath_pipe(cfg):
    from hw.nic.dcqcn_engine import DcqcnDatapathTop
    return DcqcnDatapathTop(cfg.rp, cfg.engine.time_width, pipelined=True)


def _timely_datapath_pipe(cfg):
    from hw.nic.timely_engine import TimelyDatapathTop
    return TimelyDatapathTop(cfg, 26, pipelined=True)


def _swift_datapath_pipe(cfg):
    from hw.nic.swift_engine import SwiftDatapathTop
    return SwiftDatapathTop(cfg, 26, pipelined=True)


def _timely_engine_config():
    from hw.nic.timely_engine import TimelyEngineConfig
    return TimelyEngineConfig.for_flows(1024)


def _timely_engine(cfg):
    from hw.nic.timely_engine import timely_engine
    return timely_engine(cfg)


def _swift_engine_config():
    from hw.nic.swift_engine import SwiftEngineConfig
    return SwiftEngineConfig.for_flows(1024)


def _swift_engine(cfg):
    from hw.nic.swift_engine import swift_engine
    return swift_engine(cfg)


def _swift_nic_config():
    from hw.nic.swift_nic import SwiftNicConfig
    return SwiftNicConfig.for_flows(1024)


def _swift_nic(cfg):
    from hw.nic.swift_nic import SwiftNic
    return SwiftNic(cfg)


def _qcn_engine(cfg):
    from hw.nic.qcn_engine import qcn_engine
    return qcn_engine(cfg)


def _qcn_datapath_pipe(cfg):
    from hw.nic.qcn_engine import QCN_PIPE_LATENCY, QcnDatapathTop
    return QcnDatapathTop(cfg.rp, cfg.engine.time_width, latency=QCN_PIPE_LATENCY)


#: 1 port x 1 priority, LDCP profile (the defaults of MarkerConfig).
MARKER_1X1 = MarkerConfig()

#: 8 ports x 8 priorities, DCQCN (RED-ECN) profile with the DCQCN paper's ramp, 1 MB per
#: queue in a 12 MB shared pool, marking at dequeue as DCQCN recommends.
MARKER_8X8 = MarkerConfig.dcqcn(ports=8, priorities=8, k_min=5_000, k_max=200_000, p_max=0.01,
                                buf_max=1_000_000, shared_buffer=12_000_000,
                                sample_at="dequeue")

#: LDCP window engine, one flow (docs/ldcp-window.md): three parameter sets, 10 us base RTT.
LDCP_WINDOW_G4 = LdcpWindowConfig(alpha=1.0, beta=1.0, gamma=1 / 4, m=4, cw_max=256.0)
LDCP_WINDOW_G8 = LdcpWindowConfig(alpha=1.0, beta=0.5, gamma=1 / 8, m=8, cw_max=1024.0)
LDCP_WINDOW_G16 = LdcpWindowConfig(alpha=0.25, beta=0.125, gamma=1 / 16, m=16, cw_max=4096.0)

#: LDCP transport (docs/ldcp-transport.md): a rack-scale fabric, 100 Gb/s, 1 us base RTT, 1 KB
#: MTU (BDP 13 packets = IW), delayed ACKs up to m = 4, RTO 8 RTTs, 32-bit LSN.
LDCP_TRANSPORT = LdcpTransportConfig(
    window=LdcpWindowConfig(alpha=1.0, beta=0.5, gamma=1 / 8, m=4, cw_max=256.0, cw_init=1.0,
                            rtt_us=1.0, mtu=1024),
    line_rate_gbps=100.0)

TOPS: dict[str, Top] = {t.name: t for t in [
    Top("marker_1x1", MARKER_1X1, _marker, "egress marker, 1 port x 1 priority, LDCP profile"),
    Top("marker_8x8", MARKER_8X8, _marker, "egress marker, 8 ports x 8 priorities, DCQCN profile"),
    Top("marker_64x8", MarkerConfig.dcqcn(ports=64, priorities=8, k_min=5_000, k_max=200_000,
                                          p_max=0.01, buf_max=1_000_000,
                                          shared_buffer=12_000_000, sample_at="dequeue"),
        _marker, "egress marker, 64 ports x 8 priorities (switch radix), DCQCN profile"),
    Top("ldcp_window_g4", LDCP_WINDOW_G4, _ldcp_window,
        "LDCP window engine, alpha 1, beta 1, gamma 1/4, m 4"),
    Top("ldcp_window_g8", LDCP_WINDOW_G8, _ldcp_window,
        "LDCP window engine, alpha 1, beta 1/2, gamma 1/8, m 8"),
    Top("ldcp_window_g16", LDCP_WINDOW_G16, _ldcp_window,
        "LDCP window engine, alpha 1/4, beta 1/8, gamma 1/16, m 16"),
    Top("ldcp_tx", LDCP_TRANSPORT, _ldcp_tx,
        "LDCP sender: fast start, LSN window on the window engine, go-back-N, RTO"),
    Top("ldcp_rx", LDCP_TRANSPORT, _ldcp_rx,
        "LDCP receiver: expected LSN, ACK/delayed ACK (m 4) with CE echo, NAK"),
    # DCQCN reaction point, one flow, one top per named profile (docs/dcqcn.md).
    Top("dcqcn_rp_paper", DcqcnRpConfig.profile("paper"), _dcqcn_rp,
        "DCQCN reaction point, paper profile (40 Gb/s)"),
    Top("dcqcn_rp_ns3_rdma", DcqcnRpConfig.profile("ns3-rdma"), _dcqcn_rp,
        "DCQCN reaction point, ns3-rdma profile (40 Gb/s)"),
    Top("dcqcn_rp_hpcc_mlx", DcqcnRpConfig.profile("hpcc-mlx"), _dcqcn_rp,
        "DCQCN reaction point, HPCC ns-3 mlx profile (100 Gb/s)"),
    Top("dcqcn_rp_connectx", DcqcnRpConfig.profile("connectx"), _dcqcn_rp,
        "DCQCN reaction point, ConnectX firmware defaults (100 Gb/s)"),
    # DCQCN reaction point on the multi-flow engine: ONE build, any profile through the
    # run-time registers (reset: ConnectX), 156.25 MHz (docs/dcqcn.md, docs/flow-engine.md).
    Top("dcqcn_engine_1k", DcqcnEngineConfig.for_flows(1024), _dcqcn_engine,
        "DCQCN engine, 1024 flows in block RAM, every profile at run time", default=False),
    Top("dcqcn_engine_4k", DcqcnEngineConfig.for_flows(4096), _dcqcn_engine,
        "DCQCN engine, 4096 flows in block RAM, every profile at run time", default=False),
    # The same on the calendar timer (per-slot lists, no search: docs/flow-engine.md, "Which
    # timer is the default"); their Verilog is a few MB, not the wheel's ~100 MB.
    Top("dcqcn_engine_1k_cal", DcqcnEngineConfig.for_flows(1024, timer="calendar"),
        _dcqcn_engine, "DCQCN engine, 1024 flows, calendar timer, every profile at run time",
        default=False),
    Top("dcqcn_engine_4k_cal", DcqcnEngineConfig.for_flows(4096, timer="calendar"),
        _dcqcn_engine, "DCQCN engine, 4096 flows, calendar timer, every profile at run time",
        default=False),
    # The engine's pipelined DCQCN datapath alone between flip-flops (out-of-context timing).
    Top("dcqcn_datapath_pipe", DcqcnEngineConfig.for_flows(1024), _dcqcn_datapath_pipe,
        "DCQCN engine datapath alone, pipelined (latency 12), registered inputs and outputs",
        default=False),
    # DCQCN notification point, 8 QPs (docs/dcqcn.md, "Notification point").
    Top("dcqcn_np", DcqcnNpConfig(flows=8, rule="paper", min_time_between_cnps=4), _dcqcn_np,
        "DCQCN notification point, 8 QPs, paper rule, min_time_between_cnps 4 us"),
    Top("dcqcn_np_periodic", DcqcnNpConfig(flows=8, rule="periodic", min_time_between_cnps=50),
        _dcqcn_np, "DCQCN notification point, 8 QPs, ns3-rdma periodic check every 50 us"),
    # Per-flow rate limiter (docs/dcqcn.md, "Rate limiter").
    Top("rate_limiter_4", RateLimiterConfig(flows=4, burst_bytes=9000), _rate_limiter,
        "rate limiter, 4 flows, 100 Gb/s line, token bucket with 9000-byte burst"),
    # RoCEv2 CNP frame generator (docs/dcqcn.md, "CNP generator").
    Top("cnp_gen_ipv4", CnpGenConfig(), _cnp_gen,
        "CNP generator, Ethernet + VLAN + IPv4, 8 bytes per beat"),
    Top("cnp_gen_ipv6", CnpGenConfig(ip_version=6, data_bytes=16), _cnp_gen,
        "CNP generator, Ethernet + VLAN + IPv6, 16 bytes per beat"),
    # QCN congestion point: feedback, quantization, jittered sampling (docs/qcn.md).
    Top("qcn_cp", QcnCpConfig(), _qcn_cp,
        "QCN congestion point, IEEE 802.1Q CN MIB defaults (Q_eq 26000 B, w 2, jitter 15 %)"),
    # QCN reaction point, one rate limiter (docs/qcn.md).
    Top("qcn_rp", QcnRpConfig(), _qcn_rp,
        "QCN reaction point, IEEE 802.1Q CN MIB defaults, 10 Gb/s, no jitter"),
    Top("qcn_rp_jitter", QcnRpConfig(line_rate_mbps=100_000, jitter=0.15), _qcn_rp,
        "QCN reaction point, 100 Gb/s, reloads jittered +/-15 %"),
    # QCN reaction point on the multi-flow engine (docs/qcn.md, docs/flow-engine.md).
    Top("qcn_engine_1k", QcnEngineConfig.for_flows(1024), _qcn_engine,
        "QCN engine, 1024 flows in block RAM, IEEE 802.1Q CN MIB reset values", default=False),
    Top("qcn_engine_4k", QcnEngineConfig.for_flows(4096), _qcn_engine,
        "QCN engine, 4096 flows in block RAM, IEEE 802.1Q CN MIB reset values", default=False),
    Top("qcn_engine_1k_cal", QcnEngineConfig.for_flows(1024, timer="calendar"), _qcn_engine,
        "QCN engine, 1024 flows, calendar timer, IEEE 802.1Q CN MIB reset values",
        default=False),
    Top("qcn_engine_4k_cal", QcnEngineConfig.for_flows(4096, timer="calendar"), _qcn_engine,
        "QCN engine, 4096 flows, calendar timer, IEEE 802.1Q CN MIB reset values",
        default=False),
    # The engine's pipelined QCN datapath alone between flip-flops (out-of-context timing).
    Top("qcn_datapath_pipe", QcnEngineConfig.for_flows(1024), _qcn_datapath_pipe,
        "QCN engine datapath alone, pipelined (latency 6), registered inputs and outputs",
        default=False),
    # The TIMELY and Swift datapaths of the multi-flow engine alone between flip-flops
    # (out-of-context timing; docs/timely.md, docs/swift.md, "Hardware").
    Top("timely_datapath_pipe", TimelyConfig(), _timely_datapath_pipe,
        "TIMELY engine datapath alone, pipelined (latency 29), registered inputs and outputs",
        default=False),
    Top("swift_datapath_pipe", SwiftConfig(), _swift_datapath_pipe,
        "Swift engine datapath alone, pipelined (latency 54), registered inputs and outputs",
        default=False),
    # TIMELY and Swift on the multi-flow engine (docs/timely.md, docs/swift.md, "Hardware").
    Top("timely_engine_1k", _timely_engine_config(), _timely_engine,
        "TIMELY engine, 1024 flows in block RAM, the rate update per completion",
        default=False),
    Top("swift_engine_1k", _swift_engine_config(), _swift_engine,
        "Swift engine, 1024 flows in block RAM, the window update and pacing delay per ACK",
        default=False),
    # Swift's sub-one-packet release: the engine's pace records feed the pacer's intervals
    # (docs/swift.md, "The NIC composition"; two engines, two wheels: not in the default set).
    Top("swift_nic_1k", _swift_nic_config(), _swift_nic,
        "Swift engine + multi-flow pacer, 1024 flows: pace records -> pacer intervals, grants "
        "out, one register port (both maps)", default=False),
    # QCN CNM frame generator (docs/qcn.md, "CNM frame generator").
    Top("cnm_gen", CnmGenConfig(), _cnm_gen,
        "QCN CNM generator, 64 sampled MSDU bytes, 8 bytes per beat"),
    # L3QCN (docs/l3qcn.md): the two tables alone, the CP's notifiers, the ToR's converter.
    Top("cnp_qp_table", HashTableConfig.cnp_qp(), _hash_table,
        "L3QCN CNP-QP table, (dst IP, dst QP) -> src QP, 2-left, 2 x 128 buckets x 4 ways"),
    Top("flow_id_table", HashTableConfig.flow_id(), _hash_table,
        "L3QCN flow-ID table, 5-tuple -> (MAC, flow ID, VID), 2-left, 2 x 128 x 4"),
    Top("l3qcn_cp_roce", L3qcnCpConfig(mode="roce"), _l3qcn_cp,
        "L3QCN CP, RoCEv2 priority: QCN CP + CNP-QP table (1024) + switch-built CNP"),
    Top("l3qcn_cp_qcn", L3qcnCpConfig(mode="qcn"), _l3qcn_cp,
        "L3QCN CP, QCN priority: QCN CP + private CNM (UDP 1021, 16 sampled bytes)"),
    Top("l3qcn_tor", L3qcnTorConfig(), _l3qcn_tor,
        "L3QCN ingress ToR: private CNM parser + flow-ID table (1024) + CNM generator"),
    # AXI-Stream frame ports (s_axis_*/m_axis_*, docs/integration.md "AXI-Stream"); named
    # exports until their synthesis figures are in docs/synthesis.json.
    Top("cnp_gen_axis", CnpGenConfig(), _axis(_cnp_gen),
        "CNP generator, Ethernet + VLAN + IPv4, 64-bit AXI-Stream out", default=False),
    Top("cnm_gen_axis", CnmGenConfig(), _axis(_cnm_gen),
        "QCN CNM generator, 64-bit AXI-Stream out", default=False),
    Top("private_cnm_axis", PrivateCnmConfig(), _axis(_private_cnm),
        "L3QCN private CNM generator, 64-bit AXI-Stream out", default=False),
    Top("l3qcn_tor_axis", L3qcnTorConfig(), _axis(_l3qcn_tor),
        "L3QCN ToR converter, 64-bit AXI-Stream in (private CNM) and out (CNM)", default=False),
    # The NIC notification path (docs/integration.md): RoCEv2 in -> NP -> QP table -> CNP out.
    Top("cnp_notify", CnpNotifyConfig(), _cnp_notify,
        "NIC notification path: RoCEv2 parser, DCQCN NP (8 QPs, 4 us), QP table, CNP "
        "generator, 64-bit AXI-Stream in and out", default=False),
    # The multi-flow engine with the toy datapath (docs/flow-engine.md).
    Top("flow_engine_toy", FlowEngineConfig(n_flows=1024), _flow_engine_toy,
        "multi-flow engine, 1024 flows, toy datapath (counters, one periodic timer)",
        default=False),
    # The multi-flow pacer: the engine with the pacer datapath (docs/pacer.md).
    Top("pacer_1k", _pacer_config(), _pacer,
        "multi-flow pacer, 1024 flows in block RAM, one grant per clock", default=False),
    # its byte-mode build (the size reports, the wait state): on Verilator under CC_LONG=1
    # (cocotb_tests/test_pacer_engine.py), not synthesized by default
    Top("pacer_1k_bytes", _pacer_bytes_config(), _pacer,
        "multi-flow pacer, byte-mode build, 1024 flows in block RAM, one grant per clock",
        default=False),
    Top("pacer_datapath", _pacer_config(), _pacer_datapath,
        "pacer datapath alone, packet-only build (three-cycle update: sums, flags, selects), "
        "registered inputs and outputs", default=False),
    Top("pacer_datapath_bytes", _pacer_bytes_config(), _pacer_datapath,
        "pacer datapath alone, byte-mode build (latency 5: the carry-save product's two "
        "cycles, then the three-cycle update), "
        "registered inputs and outputs", default=False),
    # LDCP for many flows: the engine with the PAWA window + sub-1 release datapath
    # (docs/ldcp-window.md, "Many flows").
    Top("ldcp_engine_1k", _ldcp_engine_config(), _ldcp_engine,
        "multi-flow LDCP window engine, 1024 flows, PAWA window and sub-1 release deadlines",
        default=False),
    # LDCP transport for many flows: the sender (window + LSNs + timeout) and the receiver
    # (docs/ldcp-transport.md, "Many flows").
    Top("ldcp_tx_engine_1k", _ldcp_tx_engine_config(), _ldcp_tx_engine,
        "multi-flow LDCP sender, 1024 flows: LSN window, fast start, go-back-N, timeout "
        "deadline, PAWA window, send gate", default=False),
    Top("ldcp_tx_datapath_pipe", _ldcp_tx_engine_config(), _ldcp_tx_datapath_pipe,
        "multi-flow LDCP sender datapath alone (latency 28), registered inputs and outputs",
        default=False),
    Top("ldcp_rx_engine_1k", _ldcp_rx_engine_config(), _ldcp_rx_engine,
        "multi-flow LDCP receiver, 1024 flows: expected LSN, delayed ACK, NAK, flush deadline",
        default=False),
]}

#: the default set: every top but the multi-flow engine tops (see :attr:`Top.default`)
DEFAULT_TOPS: list[str] = [name for name, top in TOPS.items() if top.default]
