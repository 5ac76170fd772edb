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
from hw.nic.ldcp_window import LdcpWindow, LdcpWindowUpdate
from hw.nic.ldcp_window_config import (
    CW_WIDTH,
    GAMMAS,
    ONE,
    UPDATE_LATENCY,
    LdcpWindowConfig,
    LdcpWindowReg,
)

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


def _gate():
    """The send gate never opens beyond the window: with ``cw >= 1`` (two cycles earlier: the
    gate's pipeline), ``may_send`` implies ``inflight * 2**16 < cw * mtu``, i.e. fewer bytes
    in flight than the window's ``ceil(cw * mtu)``.  Any ACKs, sends, in-flight counts and
    register writes other than the MTU (held at its reset value, so that the reference product
    is by a constant).

    Bounded, and complete: the gate is a function of the window two cycles earlier and of
    ``inflight`` now, and within 8 cycles of reset the register writes (CW_MAX, then a window
    load) reach every window value, so the BMC sees every argument of that function.  (The
    k-induction fails only because it may start from an MTU register other than the reset
    value, which the harness cannot constrain from outside.)"""
    def build():
        m = Module()
        cfg = LdcpWindowConfig(m=4)
        reset = cfg.registers()
        m.submodules.dut = dut = LdcpWindow(cfg)
        for port in (dut.ack, dut.csr_w):
            m.d.comb += [port.valid.eq(AnySeq(1)),
                         port.payload.eq(AnySeq(len(port.payload.as_value())))]
        m.d.comb += [dut.inflight.eq(AnySeq(len(dut.inflight))), dut.sent.eq(AnySeq(1))]
        with m.If(dut.csr_w.valid):
            m.d.comb += Assume(dut.csr_w.payload.addr != LdcpWindowReg.MTU)
        cw1 = Signal(CW_WIDTH, init=reset.cw_init)
        cw2 = Signal(CW_WIDTH, init=reset.cw_init)
        m.d.sync += [cw1.eq(dut.cw), cw2.eq(cw1)]
        with m.If(dut.may_send & (cw2 >= ONE)):
            m.d.comb += Assert((dut.inflight << 16) < cw2 * reset.mtu)
        m.d.comb += [Cover(dut.may_send & (cw2 >= ONE)),
                     Cover(~dut.may_send & (cw2 >= ONE)),
                     Cover(dut.may_send & (cw2 >= ONE)
                           & ((dut.inflight + 1) << 16 >= cw2 * reset.mtu))]
        return m
    return build


PROPERTIES = [
    Property("ldcp_window.cw_bounds", "every update's window stays in [gamma, cw_max] (any "
             "event, any parameters in range)", _cw_bounds(), mode="bmc",
             depth=UPDATE_LATENCY + 2, cover_depth=UPDATE_LATENCY + 2, quick=True, timeout=400),
    Property("ldcp_window.gate", "the send gate never opens beyond the window (cw >= 1: "
             "inflight < ceil(cw * mtu))", _gate(), mode="bmc", depth=8, cover_depth=8,
             timeout=300),
]
