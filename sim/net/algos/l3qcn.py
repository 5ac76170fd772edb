"""L3QCN (draft-yu-tsvwg-l3qcn-00) in the simulator: DCQCN hosts, the CNPs built by the congested
switch.  The switch's notification point is :func:`switch_np` (one per flow and switch, on the
golden :class:`sim.models.dcqcn_np.NpModel` through :class:`sim.net.engine_api.CnpPacer`)."""

from __future__ import annotations

from dataclasses import dataclass

from ..engine import PS_PER_NS
from ..engine_api import CnpPacer
from .common import AlgorithmSpec
from .dcqcn import ENGINES, DcqcnParams, DcqcnReceiverEndpoint, DcqcnSenderEndpoint, _dcqcn_marker


@dataclass(frozen=True)
class L3qcnParams(DcqcnParams):
    """DCQCN hosts with L3QCN switches: the congested switch builds the CNPs (``l3qcn`` on by
    default), so that one scenario can compare both side by side."""

    l3qcn: bool = True


def switch_np(params: DcqcnParams) -> CnpPacer:
    """A switch's notification point for one flow: at most one switch-built CNP per
    ``cnp_interval_ns``, the mark that finds the window closed answered at once; a mark inside
    the window is not answered later (``defer`` off: the switch keeps no pending CNP)."""
    return CnpPacer(params.cnp_interval_ns * PS_PER_NS, defer=False)


SPEC = AlgorithmSpec(
    "l3qcn", L3qcnParams, "DCQCN hosts, CNPs built by the congested switch (L3QCN)",
    DcqcnSenderEndpoint, DcqcnReceiverEndpoint, _dcqcn_marker,
    l3qcn=lambda p: p.l3qcn, engines=ENGINES)
