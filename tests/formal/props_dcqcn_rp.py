"""Formal properties of the DCQCN reaction point (:mod:`hw.nic.dcqcn_rp`), per profile.

The whole state is the component's ``state`` port (one register), so the invariants are
stated on it and proven by k-induction: they hold after reset and are preserved by every event
(CNP or TX of any size) in every cycle, from every state that satisfies them.
"""

from __future__ import annotations

from amaranth.hdl import Assert, Assume, Cover, Module, Signal
from amaranth.hdl._ast import AnySeq

from hw.layouts import RpEventKind
from hw.nic.dcqcn_config import ALPHA_ONE, PROFILES, DcqcnRpConfig
from hw.nic.dcqcn_rp import DcqcnRp

from .runner import Property

__all__ = ["PROPERTIES"]


def _invariants(profile: str):
    """``min_rate <= rc <= max_rate``, ``rt <= max_rate``, ``alpha <= 1`` (UQ1.24); each timer
    counts down by exactly one per cycle or is reloaded to a period: a running timer (> 1)
    never reaches 0 without passing 1, where its expiry is acted on."""
    def build():
        m = Module()
        cfg = DcqcnRpConfig.profile(profile)
        r = cfg.registers()
        dut = DcqcnRp(cfg)
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
            Assert((s.rc >= r.min_rate) & (s.rc <= r.max_rate)),
            Assert(s.rt <= r.max_rate),
            Assert(s.alpha <= ALPHA_ONE),
        ]
        periods = {r.t_cycles, r.t_half_cycles, r.k_cycles, r.p_cycles, r.p_cycles + 1}
        counting = []
        for name in ("t_cnt", "a_cnt", "d_cnt"):
            cnt = getattr(s, name)
            prev = Signal.like(cnt, name=f"prev_{name}")
            m.d.sync += prev.eq(cnt)
            # a counter above 1 is followed by itself - 1 or by a reload (a period)
            with m.If(prev > 1):
                m.d.comb += Assert((cnt == prev - 1) | sum(cnt == p for p in periods).any())
            counting.append((prev > 1) & (cnt == prev - 1))
        # reachable (within the cover depth, from reset): a second CNP, a timer counting down,
        # a cut.
        # The floor and the timer expiries lie thousands of cycles deep at the real periods:
        # the induction covers them (every state satisfying the invariants), the cover cannot.
        cnp = dut.event.valid & (dut.event.payload.kind == RpEventKind.CNP)
        m.d.comb += [Cover(cnp & s.active), Cover(sum(counting).any())]
        if profile in ("paper", "ns3-rdma"):      # the others cut at a later, periodic check
            m.d.comb += Cover(s.rc < r.max_rate)
        return m
    return build


PROPERTIES = [
    Property(f"dcqcn_rp.{p}.invariants", f"DCQCN RP ({p} profile): rate in [min, max], "
             "alpha in [0, 1], timers count down without skipping", _invariants(p),
             mode="prove", depth=2, cover_depth=6, quick=(p == "paper"), timeout=300)
    for p in PROFILES
]
