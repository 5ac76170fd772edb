"""Amaranth-simulation harness for one datapath of the multi-flow engine (the
:mod:`hw.nic.flow_datapath` protocol) on its own: every input a signal, the outputs and the
initial state read back as dicts.  Used by the per-algorithm engine tests
(``test_dcqcn_engine.py``, ``test_qcn_engine.py``)."""

from __future__ import annotations

from amaranth.hdl import Elaboratable, Module, Signal
from amaranth.sim import Simulator

from hw.nic.flow_datapath import EventKind

__all__ = ["Harness", "spans", "unpack", "run_rtl", "random_event"]


class Harness(Elaboratable):
    """The datapath alone (``pre`` computed in the same cycle); with ``feedback`` the next state
    is registered back into the state (one flow, one update per clock) and ``valid`` gates it
    (a datapath with engine-wide state, the QCN LFSR, advances it only on a valid update)."""

    def __init__(self, dp, feedback=False):
        self.dp, self.feedback = dp, feedback
        self.state = Signal(dp.state_layout)
        self.kind = Signal(EventKind)
        self.tx_bytes = Signal(dp.tx_bytes_width)
        self.cn = Signal(dp.cn_layout)
        self.t = Signal(dp.time_width)
        self.regs = Signal(dp.regs_layout)
        self.valid = Signal()
        self.next = Signal(dp.state_layout)
        self.init = Signal(dp.state_layout)
        self.wake_valid, self.wake = Signal(), Signal(dp.time_width)
        self.expired, self.late = Signal(), Signal(dp.time_width)

    def elaborate(self, platform):
        m = Module()
        dp = self.dp
        pre = dp.pre(m, kind=self.kind, tx_bytes=self.tx_bytes, cn=self.cn, t=self.t,
                     regs=self.regs)
        out = dp.build(m, state=self.state, kind=self.kind, tx_bytes=self.tx_bytes, cn=self.cn,
                       t=self.t, regs=self.regs, pre=pre, valid=self.valid)
        m.d.comb += [self.next.eq(out.next_state), self.wake_valid.eq(out.wake_valid),
                     self.wake.eq(out.wake), self.expired.eq(out.expired),
                     self.late.eq(out.late)]
        for name, value in dp.init_state(self.regs).items():
            m.d.comb += self.init[name].eq(value)
        if self.feedback:
            with m.If(self.valid):
                m.d.sync += self.state.eq(self.next)
        return m


def spans(layout) -> list[tuple[str, int, int]]:
    """``(name, offset, width)`` of each field of a struct layout."""
    return [(name, f.offset, f.width) for name, f in layout]


def unpack(sp, bits: int) -> dict:
    """The fields of ``bits`` (a layout's value) by name, from :func:`spans`."""
    return {name: (bits >> o) & ((1 << w) - 1) for name, o, w in sp}


def run_rtl(dp, vectors) -> list[tuple]:
    """Apply each ``(regs, state, kind, payload, t)`` vector on its own (``valid`` low: engine-
    wide state such as an LFSR stays at its reset value); return the outputs as
    ``(next_state, wake, expired, late, init_state)`` (``wake`` None if not valid, ``late`` 0
    if nothing expired)."""
    h = Harness(dp)
    lay = dp.state_layout
    sp = spans(lay)
    results = []

    async def bench(ctx):
        for regs, state, kind, payload, t in vectors:
            ctx.set(h.regs.as_value(), dp.regs_layout.const(regs).as_bits())
            ctx.set(h.state.as_value(), lay.const(state).as_bits())
            ctx.set(h.kind, kind)
            ctx.set(h.tx_bytes, payload if kind == EventKind.TX else 0)
            ctx.set(h.cn.as_value(), (payload or 0) if kind == EventKind.CN else 0)
            ctx.set(h.t, t)
            expired = bool(ctx.get(h.expired))
            results.append((unpack(sp, ctx.get(h.next.as_value())),
                            ctx.get(h.wake) if ctx.get(h.wake_valid) else None, expired,
                            ctx.get(h.late) if expired else 0,
                            unpack(sp, ctx.get(h.init.as_value()))))

    sim = Simulator(h)
    sim.add_testbench(bench)
    sim.run()
    return results


def random_event(rng, bc: int, byte_width: int, cn_payload):
    """A random vector's event ``(kind, payload)``: TX twice as often as CN or TIMER; a TX's
    bytes at, just below or just above the byte counter ``bc``, or anywhere in the field; a
    CN's payload from ``cn_payload()``; a TIMER's None."""
    kind = rng.choice([EventKind.TX, EventKind.TX, EventKind.CN, EventKind.TIMER])
    payload = None
    if kind == EventKind.TX:
        payload = rng.choice([bc, max(bc - 1, 0), min(bc + 1, (1 << byte_width) - 1),
                              rng.randrange(1 << byte_width), rng.randint(64, 9000)])
    elif kind == EventKind.CN:
        payload = cn_payload()
    return kind, payload
