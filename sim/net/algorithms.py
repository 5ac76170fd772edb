"""The algorithm registry: per algorithm, its parameters, its switch profile and its endpoints
(one module per algorithm in :mod:`sim.net.algos`; this module re-exports them).

The interface between a host and a flow's endpoints is deliberately narrow:

* a **sender** endpoint has ``start()`` (called at the flow's start time), ``on_control(pkt)``
  (ACK, NAK, CNP or CNM for its flow) and ``retx_bytes``; it transmits with
  ``host.nic.send(pkt)``;
* a **receiver** endpoint has ``on_data(pkt)``, ``delivered_bytes`` (in order) and ``done_ps``
  (when the last byte arrived, None before).

Each :class:`AlgorithmSpec` also says how the switches are configured for it (the marker
profile, optional QCN congestion points, L3QCN) and which congestion engines it has: behind the
endpoints, the engine (the block built in RTL) is a typed protocol of :mod:`sim.net.engine_api`
(cycle-stamped events in, outputs, next wake-up, state snapshot), so that a Verilated RTL engine
can replace a golden model inside the same simulation.
"""

from __future__ import annotations

from .algos import ALGORITHMS, register
from .algos.common import (
    THRESHOLD_MAX,
    AlgorithmSpec,
    PacedRelease,
    _CycleClock,
    _Endpoint,
    _InOrderReceiver,
    _rate_limiter,
    _rate_mbps,
    _RateSender,
    _RtoMixin,
    engine_for,
)
from .algos.dcqcn import (
    RP_KNOBS,
    DcqcnParams,
    DcqcnReceiverEndpoint,
    DcqcnSenderEndpoint,
    _dcqcn_marker,
)
from .algos.dctcp import DctcpParams, DctcpReceiverEndpoint, DctcpSenderEndpoint, _dctcp_marker
from .algos.l3qcn import L3qcnParams
from .algos.ldcp import (
    LdcpParams,
    LdcpReceiverEndpoint,
    LdcpSenderEndpoint,
    _ldcp_marker,
    _ldcp_transport,
    _ldcp_transport_cached,
)
from .algos.qcn import QcnParams, QcnReceiverEndpoint, QcnSenderEndpoint, _no_marking

__all__ = [
    "ALGORITHMS", "register", "THRESHOLD_MAX", "AlgorithmSpec", "PacedRelease", "engine_for",
    "RP_KNOBS", "DcqcnParams", "DcqcnReceiverEndpoint", "DcqcnSenderEndpoint", "DctcpParams",
    "DctcpReceiverEndpoint", "DctcpSenderEndpoint", "L3qcnParams", "LdcpParams",
    "LdcpReceiverEndpoint", "LdcpSenderEndpoint", "QcnParams", "QcnReceiverEndpoint",
    "QcnSenderEndpoint", "_CycleClock", "_Endpoint", "_InOrderReceiver", "_RateSender",
    "_RtoMixin", "_dcqcn_marker", "_dctcp_marker", "_ldcp_marker", "_ldcp_transport",
    "_ldcp_transport_cached", "_no_marking", "_rate_limiter", "_rate_mbps",
]

# The delay-based algorithms live in their own modules, which register themselves here (they
# import this module, so they are imported last: every entry point sees all seven algorithms).
from . import swift as _swift  # noqa: E402, F401, I001
from . import timely as _timely  # noqa: E402, F401
