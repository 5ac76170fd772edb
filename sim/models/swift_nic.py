"""Cycle-accurate golden model of the Swift NIC composition (:mod:`hw.nic.swift_nic`).

Two :class:`sim.models.flow_engine.FlowEngineModel`\\ s, one around the Swift engine's model
datapath (:class:`sim.models.swift.SwiftDatapathModel`), one around the pacer's
(:class:`sim.models.pacer.PacerDatapathModel`, built from the composition's
:class:`hw.nic.swift_nic.NicPacerDatapath` so its reset values are the composition's), joined
as the RTL joins them: the record at the head of the Swift engine's ``rate`` FIFO is offered to
the pacer's ``cn`` as the interval ``min(pace, 2**IB - 1) << F``, and the Swift engine's
``rate_ready`` is the pacer's ``cn_ready`` of the same cycle.  Each cycle the pacer is stepped
first (its ``cn`` offer is the Swift engine's output of this cycle, known before that engine
steps), then the Swift engine with the pacer's answer.  The register port is not modelled (its
halves are each engine's own, checked by their tests; ``tests/test_swift_nic.py`` reads both
halves against this model's state).
"""

from __future__ import annotations

from hw.nic.swift_engine import SwiftDatapath
from hw.nic.swift_nic import NicPacerDatapath, SwiftNicConfig

from .flow_engine import FlowEngineModel
from .pacer import PacerDatapathModel
from .swift import SwiftDatapathModel

__all__ = ["SwiftNicModel", "NicOut"]


class NicOut:
    """The outputs of one cycle: the input streams' ``ready``, the output streams' payloads
    (``None``: not valid), the record offered between the engines (``pace``: Swift's ``rate``
    payload or ``None``) and whether the pacer took it."""
    __slots__ = ("cn_ready", "tx_ready", "swift_ctl_ready", "pacer_ctl_ready", "grant",
                 "swift_rd", "pacer_rd", "pace", "pace_taken", "ready")

    def __repr__(self):
        return "NicOut(" + ", ".join(f"{k}={getattr(self, k)!r}" for k in self.__slots__) + ")"


class SwiftNicModel:
    """The composition, cycle by cycle (:meth:`step`); ``swift`` and ``pacer`` are the two
    engine models (their ``state(flow)``, ``counters`` for read-back)."""

    def __init__(self, cfg: SwiftNicConfig):
        self.cfg = cfg
        s = cfg.swift
        sdp = SwiftDatapath(s.swift, s.engine.time_width, pipelined=s.pipelined)
        self.swift = FlowEngineModel(s.engine, SwiftDatapathModel(sdp))
        self.pacer = FlowEngineModel(cfg.pacer.engine,
                                     PacerDatapathModel(NicPacerDatapath(cfg.pacer)))
        self.swift.log_issue = self.pacer.log_issue = False
        lay = self.swift.lay["rate"]
        self._fmask = (1 << lay["flow"].width) - 1
        self._pace_shift = lay["rate"].offset
        self._ival_max = (1 << cfg.pacer.ival_int_bits) - 1
        self._frac = cfg.pacer.frac_bits
        self.records = 0        #: pace records taken by the pacer
        self.stalled_records = 0    #: cycles a record was offered and not taken (back-pressure)

    def busy(self) -> bool:
        return self.swift.busy() or self.pacer.busy()

    def step(self, cn=None, tx=None, swift_ctl=None, pacer_ctl=None, grant_ready=True,
             swift_rd_ready=True, pacer_rd_ready=True) -> NicOut:
        """One clock: ``cn`` (flow, Swift event bits), ``tx`` (flow, packets), ``swift_ctl`` /
        ``pacer_ctl`` (flow, op, field, value): what is offered, ``None`` if nothing."""
        sw = self.swift
        rec = sw.rate_fifo[0] if sw.rate_fifo else None     # Swift's rate output this cycle
        pcn = None
        if rec is not None:
            pace = rec >> self._pace_shift
            pcn = (rec & self._fmask, min(pace, self._ival_max) << self._frac)
        op = self.pacer.step(tx=tx, cn=pcn, ctl=pacer_ctl, rate_ready=grant_ready,
                             rd_ready=pacer_rd_ready)
        taken = rec is not None and op.cn_ready
        os = sw.step(cn=cn, ctl=swift_ctl, rate_ready=taken, rd_ready=swift_rd_ready)
        assert os.rate == rec
        self.records += taken
        self.stalled_records += rec is not None and not taken
        o = NicOut()
        o.cn_ready, o.swift_ctl_ready = os.cn_ready, os.ctl_ready
        o.tx_ready, o.pacer_ctl_ready = op.tx_ready, op.ctl_ready
        o.grant, o.swift_rd, o.pacer_rd = op.rate, os.rd, op.rd
        o.pace, o.pace_taken = rec, taken
        o.ready = os.ready and op.ready
        return o
