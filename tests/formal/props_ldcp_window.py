"""Formal properties of the LDCP window engine (:mod:`hw.nic.ldcp_window`).

The update datapath is a feed-forward pipeline of ``UPDATE_LATENCY`` = 12 stages (no state
besides the pipeline registers), so a BMC of depth ``UPDATE_LATENCY + 2`` from reset covers
every input sequence at the output: the output at any cycle is a function of the inputs of the
12 cycles before it, and every such 12-cycle window of inputs occurs in the unrolling.
"""

from __future__ import annotations

from amaranth.hdl import Assert, Assume, Cover, Module, Signal
from amaranth.hdl._ast import AnyConst, AnySeq

from hw.layouts import LdcpIncRule, ldcp_params_layout
from hw.nic.ldcp_window import LdcpWindowUpdate
from hw.nic.ldcp_window_config import CW_WIDTH, GAMMAS, ONE, UPDATE_LATENCY, LdcpWindowConfig

from .runner import Property

__all__ = ["PROPERTIES"]


def _cw_bounds():
    """Every update's new window lies in ``[gamma, cw_max]`` when the window it starts from
    does, for every event and every parameter set in the documented ranges (alpha, beta in
    ``(0, 1]``, gamma one of the allowed powers of two, ``1 <= cw_max <= 65535``)."""
    def build():
        m = Module()
        cfg = LdcpWindowConfig(m=4)
        m.submodules.dut = dut = LdcpWindowUpdate(cfg)
        params = Signal(ldcp_params_layout())
        m.d.comb += params.eq(AnyConst(len(params.as_value())))
        m.d.comb += [
            Assume((params.alpha >= 1) & (params.alpha <= ONE)),
            Assume((params.beta >= 1) & (params.beta <= ONE)),
            Assume(sum(params.gamma == int(g * ONE) for g in GAMMAS) == 1),
            Assume((params.cw_max >= ONE) & (params.cw_max <= 65535 * ONE)),
        ]
        m.d.comb += [
            dut.params.eq(params),
            dut.i_valid.eq(AnySeq(1)),
            dut.i.eq(AnySeq(len(dut.i.as_value()))),
        ]
        with m.If(dut.i_valid):
            m.d.comb += Assume((dut.i.cw >= params.gamma) & (dut.i.cw <= params.cw_max))
        new = dut.o.cw
        with m.If(dut.o_valid):
            m.d.comb += Assert((new >= params.gamma) & (new <= params.cw_max))
        m.d.comb += [Cover(dut.o_valid & (new == params.gamma)),
                     Cover(dut.o_valid & (new == params.cw_max)),
                     Cover(dut.o_valid & (dut.o.inc == LdcpIncRule.RECIP_CAP)),
                     Cover(dut.o_valid & (dut.o.inc == LdcpIncRule.CROSS_CAP))]
        assert len(new) == CW_WIDTH
        return m
    return build


PROPERTIES = [
    Property("ldcp_window.cw_bounds", "every update's window stays in [gamma, cw_max] (any "
             "event, any parameters in range)", _cw_bounds(), mode="bmc",
             depth=UPDATE_LATENCY + 2, cover_depth=UPDATE_LATENCY + 2, quick=True, timeout=400),
]
