"""Formal properties of the QCN reaction point (:mod:`hw.nic.qcn_rp`).

The whole state is the ``state`` port (one register): the invariants are stated on it and
proven by k-induction, for every event sequence (CNM with any feedback, TX of any size).
"""

from __future__ import annotations

from amaranth.hdl import Assert, Assume, Cover, Module, Signal
from amaranth.hdl._ast import AnySeq

from hw.layouts import QcnRpEventKind
from hw.nic.qcn_rp import QcnRp
from hw.nic.qcn_rp_config import QcnRpConfig

from .runner import Property

__all__ = ["PROPERTIES"]


def _invariants():
    """``min_rate <= cr <= line_rate`` once a CNM has cut (CR starts at the line rate),
    ``min_rate <= tr <= line_rate`` (TR's lower bound is what keeps the averaged
    CR above the floor); the timer of an active limiter is never 0 (an expiry at 1 is always
    taken, now or, behind a byte cycle, at the next cycle) and counts down by one per cycle or
    is reloaded; stages never wrap."""
    def build():
        m = Module()
        cfg = QcnRpConfig()
        r = cfg.registers()
        dut = QcnRp(cfg)
        # elaborated here, so that its run-time registers can be held at their reset values
        # (no register writes; the k-induction may otherwise start from any register value)
        m.submodules.dut = dut.elaborate(None)
        dut._MustUse__silence = True        # (used through its elaborated module)
        m.d.comb += dut.csr_w.valid.eq(0)
        for reg in dut.csr_bank.storage.values():
            m.d.comb += Assume(reg == reg.init)
        m.d.comb += [dut.event.valid.eq(AnySeq(1)),
                     dut.event.payload.eq(AnySeq(len(dut.event.payload.as_value())))]
        s = dut.state
        m.d.comb += [
            Assert((s.cr >= r.min_rate) & (s.cr <= r.line_rate)),
            Assert((s.tr >= r.min_rate) & (s.tr <= r.line_rate)),
            Assert(~s.active | (s.t_cnt != 0)),
        ]
        prev_t, prev_active = Signal.like(s.t_cnt), Signal()
        prev_bs, prev_ts = Signal(8), Signal(8)
        m.d.sync += [prev_t.eq(s.t_cnt), prev_active.eq(s.active), prev_bs.eq(s.b_stage),
                     prev_ts.eq(s.t_stage)]
        hi = max(r.time_lo[0] + r.time_span[0], r.time_lo[1] + r.time_span[1])
        with m.If(prev_active & (prev_t > 1)):
            m.d.comb += Assert((s.t_cnt == prev_t - 1) | (s.t_cnt <= hi))
        with m.If(prev_active):
            # ByteStage / TimeStage only grow by one (saturating) or restart at 0 on a CNM
            m.d.comb += Assert((s.b_stage == 0) | (s.b_stage >= prev_bs))
            m.d.comb += Assert((s.t_stage == 0) | (s.t_stage >= prev_ts))
        cnm = dut.event.valid & (dut.event.payload.kind == QcnRpEventKind.CNM)
        m.d.comb += [Cover(s.cr < r.line_rate), Cover(cnm & s.active),
                     Cover(prev_active & (prev_t > 1) & (s.t_cnt == prev_t - 1))]
        return m
    return build


PROPERTIES = [
    Property("qcn_rp.invariants", "QCN RP: CR and TR in [min, line], the timer never "
             "stops or skips while active, stages never wrap", _invariants(), mode="prove",
             depth=2, cover_depth=6, quick=True),
]
