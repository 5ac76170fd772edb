"""QCN hosts (IEEE 802.1Qau): the reaction point behind
:class:`sim.net.engine_api.RateEngine`, driven by the switches' congestion points."""

from __future__ import annotations

import re
from dataclasses import dataclass

from hw.nic.qcn_rp_config import QcnRpConfig
from hw.params import ConfigError, check_int
from hw.switch.marker_config import MarkerConfig
from hw.switch.qcn_cp_config import SAMPLE_TABLE, QcnCpConfig

from ..engine_api import qcn_nic_engine, qcn_rp_engine, qcn_rp_rtl_engine
from ..packet import CNM
from .common import (
    AlgorithmSpec,
    _InOrderReceiver,
    _rate_mbps,
    _RateSender,
    engine_for,
    make_engine,
)


@dataclass(frozen=True)
class QcnParams:
    """QCN: reaction point (the IEEE MIB values, which are for 10 Gb/s, with the increase steps
    scaled x10 and the timer /10 for 100 Gb/s; the line rate is the NIC's), congestion point
    on every switch egress port, receiver ACKs for reliability (go-back-N), timeout.

    Congestion point (:class:`hw.switch.qcn_cp_config.QcnCpConfig`): set point ``q_eq_bytes``,
    weight ``w``, the sampling table scaled to ``sample_base_bytes`` (the interval while
    Fb >= 0; the IEEE table's 150 KB = 153,600 B by default, every entry scaled by the same
    factor and rounded) and the sampling jitter ``cp_jitter``.  Reaction point
    (:class:`hw.nic.qcn_rp_config.QcnRpConfig`): ``gd`` (Gd = 2**-gd), ``min_dec_fac``,
    ``min_rate_mbps``, ``ai_rate_mbps`` (R_AI), ``hai_rate_mbps`` (R_HAI), ``byte_reset`` (the
    byte counter's limit BC), ``time_reset_us`` (the timer T), ``threshold`` (F: fast recovery
    lasts F byte-counter/timer cycles), ``tr_guard`` and the reload jitter ``rp_jitter``."""

    q_eq_bytes: int = 26_000
    w: int = 2
    sample_base_bytes: int = SAMPLE_TABLE[0]
    cp_jitter: float = 0.15
    gd: int = 7
    min_dec_fac: float = 0.5
    min_rate_mbps: float = 10.0
    ai_rate_mbps: float = 50.0
    hai_rate_mbps: float = 500.0
    byte_reset: int = 150_000
    time_reset_us: float = 1_500.0
    threshold: int = 5
    tr_guard: bool = True
    rp_jitter: float = 0.0
    ack_every: int = 16
    rto_ns: int = 1_000_000

    def __post_init__(self):
        check_int(self, "sample_base_bytes", self.sample_base_bytes, 8, (1 << 23) - 1)
        # the blocks' own checks, reported on this class's field that set the value
        for build, names in ((lambda: self.cp(1000), _QCN_CP_FIELDS),
                             (lambda: self.rp(100_000, 250_000_000), _QCN_RP_FIELDS)):
            try:
                build()
            except ConfigError as e:
                name = names.get(e.field, e.field)
                if not hasattr(self, name):
                    raise
                allowed = re.sub(rf"\b{e.field}\b", name, e.allowed)
                raise ConfigError(self, name, getattr(self, name), allowed) from None
        check_int(self, "ack_every", self.ack_every, 1, 1024)
        check_int(self, "rto_ns", self.rto_ns, 1000, 10**10)

    def cp(self, mtu: int) -> QcnCpConfig:
        base = self.sample_base_bytes
        table = SAMPLE_TABLE if base == SAMPLE_TABLE[0] else tuple(
            max(1, round(s * base / SAMPLE_TABLE[0])) for s in SAMPLE_TABLE)
        return QcnCpConfig(q_eq=self.q_eq_bytes, w=self.w, sample_table=table,
                           jitter=self.cp_jitter)

    def rp(self, line_rate_mbps: int, clk_hz: int) -> QcnRpConfig:
        """The reaction point at the NIC's line rate and the simulator's engine clock."""
        return QcnRpConfig(clk_hz=clk_hz, line_rate_mbps=line_rate_mbps,
                           min_rate_mbps=self.min_rate_mbps,
                           ai_rate_mbps=self.ai_rate_mbps, hai_rate_mbps=self.hai_rate_mbps,
                           gd=self.gd, min_dec_fac=self.min_dec_fac, threshold=self.threshold,
                           byte_reset=self.byte_reset, time_reset_us=self.time_reset_us,
                           tr_guard=self.tr_guard, jitter=self.rp_jitter)


#: QcnCpConfig / QcnRpConfig field -> the QcnParams field that sets it (where they differ)
_QCN_CP_FIELDS = {"q_eq": "q_eq_bytes", "sample_table": "sample_base_bytes",
                  "jitter": "cp_jitter"}
_QCN_RP_FIELDS = {"jitter": "rp_jitter"}


#: engine kind -> (reaction point factory, receiver engine: none, the NP is the host's)
#: ("rtl": the Verilated hw.nic.qcn_rp.QcnRp, one instance per flow)
ENGINES = {"golden": (qcn_rp_engine, None), "rtl": (qcn_rp_rtl_engine, None),
           "engine": (qcn_nic_engine("engine"), None),
           "engine-rtl": (qcn_nic_engine("engine-rtl"), None)}


class QcnSenderEndpoint(_RateSender):
    _signal_kind = CNM

    def __init__(self, net, spec, host):
        line = _rate_mbps(net, host)
        cfg = net.params.rp(line, 10**12 // net.clk_ps)
        cfg = cfg.replace(lfsr=net.seeded(cfg.lfsr, "rp", spec.flow_id))
        super().__init__(net, spec, host,
                         make_engine(engine_for(net, ENGINES)[0], cfg, net, host, spec), line)



class QcnReceiverEndpoint(_InOrderReceiver):
    def __init__(self, net, spec, host):
        super().__init__(net, spec, host, net.params.ack_every)


def _no_marking(params, *, ports, mtu, buf_max, shared_buffer, sample_at):
    """QCN frames are Not-ECT: the DCTCP profile forwards them; K at the buffer size."""
    return MarkerConfig.dctcp(ports=ports, priorities=2, k=buf_max, buf_max=buf_max,
                              shared_buffer=shared_buffer, compare="gt", sample_at=sample_at)


SPEC = AlgorithmSpec(
    "qcn", QcnParams, "QCN: rate-based RP driven by the switches' congestion points",
    QcnSenderEndpoint, QcnReceiverEndpoint, _no_marking,
    cp_config=lambda p, mtu: p.cp(mtu), engines=ENGINES)
