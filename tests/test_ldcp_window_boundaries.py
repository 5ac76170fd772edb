"""LDCP window engine RTL at the boundaries of its comparisons and widths (mutation testing:
``python -m tools.mutate --block ldcp_window``).

Each case sits exactly on a boundary that the random tests of ``tests/test_ldcp_window_rtl.py``
hit only by chance: a comparison at equality, where the two arms give different rule codes or
gate decisions, and the send gate's products at the top of the register ranges.  The expected
values are derived by hand in each docstring from the rules of ``docs/ldcp-window.md`` (the
module docstring of :mod:`sim.models.ldcp_window`) and checked against the bit-exact model too.
"""

from __future__ import annotations

import dataclasses

from amaranth.sim import Simulator

from hw.layouts import LdcpDecRule, LdcpIncRule
from hw.nic.ldcp_window import LdcpWindow, LdcpWindowUpdate
from hw.nic.ldcp_window_config import ONE, UPDATE_LATENCY, LdcpWindowReg
from sim.models.ldcp_window import LdcpWindowModel, update
from tests.test_ldcp_window_rtl import CONFIGS

#: alpha = beta = 1.0, gamma = 1/4 (16384), m = 4, cw_max = 64 packets
CFG = CONFIGS[0]
REGS = CFG.registers()
GAMMA = ONE // 4
assert (REGS.alpha, REGS.beta, REGS.gamma) == (ONE, ONE, GAMMA)


def run_datapath(regs, events):
    """Feed ``events`` ``(cw, n_marked, n_unmarked)`` back to back into the datapath with the
    parameters of ``regs``; returns ``(cw, dec, inc)`` of each result, in order."""
    dut = LdcpWindowUpdate(CFG)
    results = []

    async def bench(ctx):
        ctx.set(dut.params, {"alpha": regs.alpha, "beta": regs.beta, "gamma": regs.gamma,
                             "cw_max": regs.cw_max})
        for cycle in range(len(events) + UPDATE_LATENCY):
            ctx.set(dut.i_valid, cycle < len(events))
            if cycle < len(events):
                cw, nm, nu = events[cycle]
                ctx.set(dut.i, {"cw": cw, "n_marked": nm, "n_unmarked": nu})
            await ctx.tick()
            if ctx.get(dut.o_valid):
                o = ctx.get(dut.o)
                results.append((o.cw, LdcpDecRule(o.dec), LdcpIncRule(o.inc)))

    sim = Simulator(dut)
    sim.add_clock(4e-9)
    sim.add_testbench(bench)
    sim.run()
    assert len(results) == len(events)
    return results


def check_datapath(regs, cases):
    """``cases``: ``((cw, n_marked, n_unmarked), (new cw, dec, inc))`` with the expected values
    derived by hand; each is also checked against the model's :func:`update`."""
    events = [ev for ev, _ in cases]
    for ev, want in cases:
        u = update(regs, *ev)
        assert (u.cw, u.dec, u.inc) == want, ("model", ev)
    got = run_datapath(regs, events)
    for (ev, want), g in zip(cases, got, strict=True):
        assert g == want, ev


def test_marked_part_at_its_boundaries():
    """The marked part at equality of each of its three comparisons (alpha = beta = 1.0,
    gamma = 1/4 = 16384):

    * ``t >= ONE`` (``cw - 1 >= n * beta``): ``cw = 2.0``, one marked packet gives
      ``t = 2.0 - 1.0 = 1.0``: LINEAR, ``cw = 65536``; one LSB less (``cw = 131071``) gives
      ``t = 65535 < ONE``, above gamma: CROSS.
    * ``t >= gamma`` (``cw - gamma >= n * beta``): ``cw = 1.25 = 81920``, ``t = 0.25 = gamma``:
      CROSS (not CROSS_FLOOR), ``cw = 16384``; ``cw = 81919`` gives ``t = 16383 < gamma``:
      CROSS_FLOOR, ``cw = gamma``.
    * ``h > gamma`` (sub-1 halving, ``h = cw >> n``): ``cw = 0.5 = 32768``, ``h = 16384 =
      gamma``: HALVE_FLOOR, ``cw = gamma``; ``cw = 32770`` gives ``h = 16385 > gamma``: HALVE.
    """
    N, I = LdcpDecRule, LdcpIncRule.NONE
    check_datapath(REGS, [
        ((2 * ONE, 1, 0), (ONE, N.LINEAR, I)),
        ((2 * ONE - 1, 1, 0), (ONE - 1, N.CROSS, I)),
        ((ONE + GAMMA, 1, 0), (GAMMA, N.CROSS, I)),
        ((ONE + GAMMA - 1, 1, 0), (GAMMA, N.CROSS_FLOOR, I)),
        ((ONE // 2, 1, 0), (GAMMA, N.HALVE_FLOOR, I)),
        ((ONE // 2 + 2, 1, 0), (GAMMA + 1, N.HALVE, I)),
    ])


def test_increase_exactly_at_the_cap():
    """The unmarked part reaching ``cw_max`` exactly: the rule is the capped one.

    * Window regime, ``c + inc >= cw_max``: ``cw = 2.0`` is ``x = 1.0`` with ``e = 1``, so the
      table reciprocal is exact, ``r = T[0] = 2**18``; one unmarked packet with
      ``alpha = 1.0`` adds ``(65536 * 2**18) >> (18 + 1) = 32768`` (0.5 packet), so with
      ``cw_max = 2.5 = 163840`` the sum is exactly the cap: RECIP_CAP, ``cw = 163840``.  With
      ``cw_max`` one LSB above (163841) it is RECIP, ``cw = 163840``.
    * Sub-1 regime, ``c + n * gamma >= cw_max``: ``cw = 0.5`` and two unmarked packets give
      ``0.5 + 2 * 0.25 = 1.0``; with ``cw_max = 1.0`` that is the cap: CROSS_CAP,
      ``cw = 65536``; with ``cw_max = 65537`` it is CROSS, ``cw = 65536``.
    """
    D, I = LdcpDecRule.NONE, LdcpIncRule
    at = dataclasses.replace(REGS, cw_max=163840)
    check_datapath(at, [((2 * ONE, 0, 1), (163840, D, I.RECIP_CAP))])
    above = dataclasses.replace(REGS, cw_max=163841)
    check_datapath(above, [((2 * ONE, 0, 1), (163840, D, I.RECIP))])
    at = dataclasses.replace(REGS, cw_max=ONE)
    check_datapath(at, [((ONE // 2, 0, 2), (ONE, D, I.CROSS_CAP))])
    above = dataclasses.replace(REGS, cw_max=ONE + 1)
    check_datapath(above, [((ONE // 2, 0, 2), (ONE, D, I.CROSS))])


def run_gate(writes, probes):
    """The single-flow wrapper: the register ``writes`` ``(LdcpWindowReg, value)`` one after
    another (each accepted while idle), then idle edges until the send gate shows the loaded
    window; then ``probes`` ``(inflight, expected may_send)`` are checked on the gate (and on
    the model, run in lockstep).  Returns the gate's product registers ``(gate_lo, gate_hi)``
    and the window."""
    dut = LdcpWindow(CFG)
    model = LdcpWindowModel(CFG)
    out = {}

    async def bench(ctx):
        queue = list(writes)
        for _ in range(4 * len(writes) + 6):
            write = None
            if queue and model.idle:
                reg, value = queue.pop(0)
                write = (int(reg), value)
            ctx.set(dut.csr_w.valid, write is not None)
            if write is not None:
                ctx.set(dut.csr_w.payload, {"addr": write[0], "data": write[1]})
                assert ctx.get(dut.csr_w.ready) == 1
            assert ctx.get(dut.cw) == model.outputs().cw
            model.edge(None, False, write)
            await ctx.tick()
        assert not queue
        ctx.set(dut.csr_w.valid, 0)
        o = model.outputs()
        assert ctx.get(dut.cw) == o.cw and not o.sub1
        for inflight, want in probes:
            assert o.may_send(inflight) == want, ("model", inflight)
            ctx.set(dut.inflight, inflight)
            assert ctx.get(dut.may_send) == want, inflight
        out.update(lo=ctx.get(dut.gate_lo), hi=ctx.get(dut.gate_hi), cw=ctx.get(dut.cw))

    sim = Simulator(dut)
    sim.add_clock(4e-9)
    sim.add_testbench(bench)
    sim.run()
    return out["lo"], out["hi"], out["cw"]


def test_gate_exact_window():
    """A window whose byte count is whole: ``cw = 4.0``, ``mtu = 1024`` is exactly 4096 bytes,
    so ``ceil`` adds nothing: may send at 4095 bytes in flight, not at 4096 (the gate is
    ``inflight < win_bytes``, strict).  ``4.0 = 2**18`` is all in the high partial product:
    ``cw[:18] = 0``, ``cw[18:] = 1``, ``4096 = (0 + 1024 * 2**18) / 2**16``."""
    R = LdcpWindowReg
    lo, hi, cw = run_gate([(R.MTU, 1024), (R.CW, 4 * ONE)],
                          [(0, 1), (4095, 1), (4096, 0), (4097, 0)])
    assert (lo, hi, cw) == (0, 1024, 4 * ONE)


def test_gate_rounds_a_fraction_of_one_unit_up():
    """A window whose byte count is one 2**-16 above a whole number: ``mtu = 1025`` and
    ``cw = 3 + 64513 / 65536 = 261121`` (``1025 * 64513 = 66125825 = 1009 * 65536 + 1``), so
    ``cw * mtu = (3075 + 1009) * 65536 + 1 = 4084 * 65536 + 1``: ``ceil`` gives 4085 bytes;
    may send at 4084 in flight, not at 4085."""
    R = LdcpWindowReg
    lo, hi, cw = run_gate([(R.MTU, 1025), (R.CW, 261121)],
                          [(4083, 1), (4084, 1), (4085, 0)])
    assert (lo, hi, cw) == (261121 * 1025, 0, 261121)


def test_gate_low_product_at_its_full_width():
    """The low partial product ``cw[:18] * mtu`` at its top: ``cw = 2**18 - 1`` (just under 4
    packets, all 18 low bits set) with the MTU register at its maximum ``2**14 - 1 = 16383``:
    ``262143 * 16383 = 4294688769`` (>= 2**31: needs all 32 bits), ``= 65531 * 65536 + 49153``,
    so 65532 bytes: may send at 65531 in flight, not at 65532."""
    R = LdcpWindowReg
    lo, hi, cw = run_gate([(R.MTU, 16383), (R.CW, (1 << 18) - 1)],
                          [(65531, 1), (65532, 0)])
    assert (lo, hi, cw) == (4294688769, 0, (1 << 18) - 1)


def test_gate_high_product_at_the_largest_window():
    """The high partial product ``cw[18:] * mtu`` at the largest window: ``cw_max`` and the
    window loaded at 65535 packets (``0xFFFF0000``) with ``mtu = 9216`` (both the configuration's
    limits): ``cw[18:] = 16383``, ``16383 * 9216 = 150985728`` (>= 2**27: needs all 28 bits),
    ``cw[:18] * mtu = 0x30000 * 9216 = 1811939328``; the window is ``65535 * 9216 = 603970560``
    bytes exactly: may send at 603970559 in flight, not at 603970560."""
    R = LdcpWindowReg
    top = 0xFFFF0000
    lo, hi, cw = run_gate([(R.MTU, 9216), (R.CW_MAX, top), (R.CW, top)],
                          [(603970559, 1), (603970560, 0), (0xFFFFFFFF, 0)])
    assert (lo, hi, cw) == (1811939328, 150985728, top)
