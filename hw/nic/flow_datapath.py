"""The datapath protocol of the multi-flow engine (:mod:`hw.nic.flow_engine`), and a toy datapath.

A *datapath* is the per-flow update of one algorithm (DCQCN, QCN, the toy below): given one
flow's state, one event and the run-time registers, it computes the flow's next state in ONE
clock cycle.  The engine owns everything else: the flow table in block RAM, the arbiter, the
read -> modify -> write-back pipeline with same-flow forwarding, the timer service (a timing
wheel of per-flow deadlines), control operations, the register file, the output streams and the
statistics.  docs/flow-engine.md describes the engine; this module is the contract.

Time: the engine's free-running cycle counter ``now`` is ``time_width`` (W) bits wide.  A timer
is a stored deadline (a W-bit cycle stamp) plus an ``armed`` bit; :func:`time_le` is the
wrap-safe ``a <= b`` (``(b - a) mod 2**W < 2**(W-1)``).

RTL side, a datapath (subclass of :class:`FlowDatapath`) provides:

- ``state_layout``: ``data.StructLayout`` of the per-flow fields, timer deadlines (W bits) and
  armed bits included (the engine appends its own fields after it: ``en``, ``q_valid``,
  ``q_gen``, ``q_dl``);
- ``rate_field``: the name of the state field that is the flow's current rate (what the engine
  streams out on every change), ``rate_width`` its width;
- ``cn_layout``: payload of a congestion notification; ``tx_bytes_width``;
- ``regs``: ordered list of run-time registers ``(name, width, reset_value)``; the engine builds
  the register file (addresses in this order), its write decode and read-back from it and hands
  the datapath a ``data.View`` of :attr:`regs_layout` (one field per register);
- ``init_state(regs) -> dict``: field name -> Amaranth value, the state START/RESET load (every
  timer disarmed; fields not named are 0);
- ``pre(m, *, kind, tx_bytes, cn, t, regs) -> dict`` (optional, default none): values that
  depend only on the event and the registers; the engine computes them one stage before the
  update and registers them, so they are not in the one-cycle state loop;
- ``latency`` (int, default 1): the clock cycles of the modify stage.  With ``latency == 1``
  :meth:`build` is combinational (a one-cycle state loop, same-flow events back to back).  With
  ``latency = L > 1`` its inputs (state, kind, tx_bytes, cn, t, pre, valid) are valid in the
  first modify cycle only and its :class:`DatapathOut` values belong to those inputs ``L - 1``
  cycles later (the datapath registers what it carries, e.g. with
  :func:`hw.lib.arith.delayed`); the engine guarantees that the registers do not change and
  that no two events of one flow are in the modify stage while an update is in flight, and the
  pipeline never stalls (no enable).
- ``build(m, *, state, kind, tx_bytes, cn, t, regs, pre, valid) -> DatapathOut``: the
  update (``valid``: 1 when the engine applies this update - an enabled flow's
  TX/CN/TIMER event in the modify stage; a datapath with engine-wide registers, e.g. QCN's LFSR,
  advances them only then).  ``kind`` is an :class:`EventKind` (TX, CN, TIMER), ``t`` the
  event's time stamp.
  Semantics: first apply every armed timer whose deadline is ``time_le(deadline, t)`` AS OF ITS
  DEADLINE (the reload is old deadline + period; a timer (re)started by the event at ``t`` gets
  ``t + period``), then the event itself (TIMER carries none).  With lateness 0 this is exactly
  one cycle of the single-flow model at cycle ``t``.

Model side (:mod:`sim.models.flow_datapath`): ``FlowDatapathModel`` mirrors it with plain ints:
``init_state(regs) -> dict`` and ``update(regs, state, kind, payload, t) -> ModelOut``.
"""

from __future__ import annotations

from dataclasses import dataclass

from amaranth.hdl import Module, Mux, Signal, Value
from amaranth.lib import data, enum, wiring
from amaranth.lib.wiring import In, Out

from ..lib.arith import delayed, named_wire

__all__ = ["EventKind", "CtlOp", "time_le", "DatapathOut", "FlowDatapath", "ToyDatapath",
           "DatapathTop"]


class EventKind(enum.Enum, shape=2):
    """What a datapath update is applied for."""
    TX = 0      #: bytes transmitted (``tx_bytes``)
    CN = 1      #: a congestion notification (``cn`` payload)
    TIMER = 2   #: a timer-service pop: only the due timers are applied


class CtlOp(enum.Enum, shape=3):
    """Per-flow control operations (the engine's ``ctl`` stream)."""
    START = 0   #: state := init_state, en := 1
    STOP = 1    #: en := 0 (state kept and readable; events to the flow are counted and dropped)
    RESET = 2   #: state := init_state (en unchanged)
    READ = 3    #: the flow's whole state word on ``rd``
    WRITE = 4   #: state field number ``field`` := ``value`` (then the flow's timers re-evaluated)


def time_le(a, b, width: int) -> Value:
    """Wrap-safe ``a <= b`` of two ``width``-bit time stamps: ``(b - a) mod 2**W < 2**(W-1)``."""
    return ~(b - a)[width - 1]


@dataclass
class DatapathOut:
    """What :meth:`FlowDatapath.build` returns (Amaranth values).

    next_state: a value of ``state_layout``'s size (a ``data.View`` or its bits);
    wake_valid / wake: 1 if a timer of ``next_state`` is armed, and its earliest deadline;
    expired: 1 if the update applied at least one timer;
    late: ``t - (earliest applied deadline)`` mod 2**W (W bits; only meaningful with expired);
    wake_terms: optional, ``[(sel, deadline), ...]`` with exactly one ``sel`` set in every cycle
    and ``wake`` equal to that term's deadline (a datapath whose ``wake`` is a choice among
    several timers gives them, so that the engine compares each deadline side by side with the
    choice and selects the results: no multiplexer tree in front of its compares).
    """
    next_state: Value
    wake_valid: Value
    wake: Value
    expired: Value
    late: Value
    wake_terms: list | None = None


class FlowDatapath:
    """Base class of the RTL datapaths (see the module docstring for the contract)."""

    name: str = "datapath"
    time_width: int
    state_layout: data.StructLayout
    cn_layout: data.StructLayout
    tx_bytes_width: int
    rate_field: str
    regs: list[tuple[str, int, int]]
    #: clock cycles of the modify stage (see the module docstring)
    latency: int = 1

    @property
    def rate_width(self) -> int:
        return self.state_layout[self.rate_field].width

    @property
    def regs_layout(self) -> data.StructLayout:
        return data.StructLayout({name: width for name, width, _ in self.regs})

    def regs_reset(self) -> dict[str, int]:
        return {name: reset for name, _, reset in self.regs}

    def init_state(self, regs) -> dict:
        raise NotImplementedError

    def pre(self, m: Module, *, kind, tx_bytes, cn, t, regs) -> dict:
        return {}

    def build(self, m: Module, *, state, kind, tx_bytes, cn, t, regs, pre,
              valid=None) -> DatapathOut:
        raise NotImplementedError


# -- the toy datapath ---------------------------------------------------------------------------

class ToyDatapath(FlowDatapath):
    """A datapath with no algorithm behind it, to test the engine on its own.

    Per flow: ``cnt`` (events seen, saturating), ``nbytes`` (bytes summed, saturating),
    ``ticks`` (timer expiries, wrapping), one periodic timer (``dl``, ``armed``) and a rate:

    - timer (applied first, as of its deadline): ticks += 1, rate := min(rate + step, max_rate),
      dl := dl + period (reloaded from the old deadline: no drift);
    - TX: cnt += 1, nbytes += bytes; arms the timer at t + period if it is not armed;
    - CN (payload ``fb``, 6 bits): cnt += 1, rate := rate - (rate >> (1 + fb[0:2])), and the
      timer restarts at t + period;
    - TIMER: nothing more.

    Registers: ``period`` (cycles, 1 ... 2**(W-2) - 1), ``step``, ``max_rate``.

    Latency: ``latency`` cycles (default 1).  Above 1 its inputs are registered first, the
    update computed in the second cycle and its result delayed by the rest, so that the
    engine's multi-cycle modify stage is exercised and an Fmax measurement of the engine
    (``tools.engine_fmax``) shows the engine's paths rather than the toy's.
    """

    name = "toy"

    def __init__(self, time_width: int = 16, *, period: int = 40, step: int = 3,
                 max_rate: int = 1000, rate_width: int = 12, latency: int = 1):
        self.time_width = W = time_width
        assert latency >= 1
        self.latency = latency
        assert 1 <= period < (1 << (W - 2)), "period must be below 2**(time_width - 2)"
        assert 0 < max_rate < (1 << rate_width)
        self.state_layout = data.StructLayout({
            "cnt": 12, "nbytes": 20, "ticks": 8, "dl": W, "armed": 1, "rate": rate_width})
        self.cn_layout = data.StructLayout({"fb": 6})
        self.tx_bytes_width = 14
        self.rate_field = "rate"
        self.regs = [("period", W - 2, period), ("step", 8, step),
                     ("max_rate", rate_width, max_rate)]

    def init_state(self, regs) -> dict:
        return {"rate": regs.max_rate}

    def pre(self, m, *, kind, tx_bytes, cn, t, regs) -> dict:
        # the restart deadline depends only on the event's time stamp and a register
        return {"restart": (t + regs.period)[:self.time_width]}

    def build(self, m, *, state, kind, tx_bytes, cn, t, regs, pre, valid=None) -> DatapathOut:
        W = self.time_width
        d = self.latency - 1

        def reg(v, name):
            # a register of the same shape (a layout stays a layout: delayed() would not)
            r = Signal.like(v, name=f"toy_{name}")
            m.d.sync += r.eq(v)
            return r
        if d:
            # latency > 1: the inputs registered first, so that the engine's forwarding
            # multiplexer and the update are in different cycles (the engine's own paths, not
            # the toy's, are then what an Fmax measurement of the engine shows)
            state, kind, tx_bytes, cn, t = (reg(state, "in_state"), reg(kind, "in_kind"),
                                            reg(tx_bytes, "in_bytes"), reg(cn, "in_cn"),
                                            reg(t, "in_t"))
            pre = {"restart": reg(pre["restart"], "in_restart")}
            d -= 1
        s = state
        nxt = Signal(self.state_layout, name="toy_next")
        due = named_wire(m, "toy_due", s.armed & time_le(s.dl, t, W))
        sum_rate = s.rate + regs.step
        rate1 = named_wire(m, "toy_rate1",
                           Mux(due, Mux(sum_rate > regs.max_rate, regs.max_rate, sum_rate),
                               s.rate), width=len(s.rate))
        late = named_wire(m, "toy_late", (t - s.dl)[:W], width=W)
        if d:
            # latency > 2: the timer's compare and the increase in a cycle of their own, the
            # rest of the update in the next (one carry chain per cycle)
            due, rate1, late = reg(due, "mid_due"), reg(rate1, "mid_rate1"), reg(late, "mid_late")
            s, kind, tx_bytes, cn = (reg(s, "mid_state"), reg(kind, "mid_kind"),
                                     reg(tx_bytes, "mid_bytes"), reg(cn, "mid_cn"))
            pre = {"restart": reg(pre["restart"], "mid_restart")}
            d -= 1
        m.d.comb += nxt.eq(s)
        with m.If(due):
            m.d.comb += [nxt.ticks.eq(s.ticks + 1), nxt.dl.eq(s.dl + regs.period)]
        m.d.comb += nxt.rate.eq(rate1)
        # (an If chain, not a case: TIMER applies only the due timer above)
        with m.If(kind == EventKind.TX):
            m.d.comb += nxt.cnt.eq(s.cnt + (s.cnt != 0xFFF))
            total = s.nbytes + tx_bytes
            m.d.comb += nxt.nbytes.eq(Mux(total > 0xFFFFF, 0xFFFFF, total))
            with m.If(~s.armed):
                m.d.comb += [nxt.armed.eq(1), nxt.dl.eq(pre["restart"])]
        with m.Elif(kind == EventKind.CN):
            m.d.comb += nxt.cnt.eq(s.cnt + (s.cnt != 0xFFF))
            m.d.comb += nxt.rate.eq(rate1 - (rate1 >> (cn.fb[0:2] + 1)))
            m.d.comb += [nxt.armed.eq(1), nxt.dl.eq(pre["restart"])]
        # latency > 1 (to test the engine's multi-cycle modify stage): the same update, its
        # result delayed by the remaining latency - 3 cycles (latency - 2 at latency 2)
        return DatapathOut(next_state=delayed(m, nxt, d, "toy_next"),
                           wake_valid=delayed(m, nxt.armed, d, "toy_wv"),
                           wake=delayed(m, nxt.dl, d, "toy_wake"),
                           expired=delayed(m, due, d, "toy_due"),
                           late=delayed(m, late, d, "toy_late"))



class DatapathTop(wiring.Component):
    """A datapath alone between flip-flops, to measure its timing out of context (the
    ``*_datapath_pipe`` tops of ``gateware/tops.py``): every input (state, event, ``t``,
    registers, ``valid``, and ``pre`` computed from the ports as the engine does one stage
    earlier) is registered, the datapath's ``latency``-cycle update runs on the registered
    values, and every :class:`DatapathOut` field is registered to the outputs.

    Parameters: ``dp``, any :class:`FlowDatapath`; ``time_width``, the engine's time width.
    Latency: ``dp.latency + 1`` cycles from the ports to the outputs; one event per clock."""

    def __init__(self, dp, time_width: int = 26):
        self.dp = dp
        W = time_width
        super().__init__({
            "state": In(dp.state_layout), "kind": In(EventKind), "tx_bytes": In(dp.tx_bytes_width),
            "cn": In(dp.cn_layout), "t": In(W), "regs": In(dp.regs_layout), "valid": In(1),
            "next_state": Out(dp.state_layout), "wake_valid": Out(1), "wake": Out(W),
            "expired": Out(1), "late": Out(W),
        })

    def elaborate(self, platform):
        m = Module()
        dp = self.dp
        ins = {}
        for name in ("state", "kind", "tx_bytes", "cn", "t", "regs", "valid"):
            port = getattr(self, name)
            ins[name] = Signal.like(port, name=f"{name}_r")
            m.d.sync += ins[name].eq(port)
        pre = {}
        for name, value in dp.pre(m, kind=self.kind, tx_bytes=self.tx_bytes, cn=self.cn,
                                  t=self.t, regs=self.regs).items():
            pre[name] = Signal.like(value, name=f"pre_{name}")
            m.d.sync += pre[name].eq(value)
        kw = {name: ins[name] for name in ("kind", "tx_bytes", "cn", "t", "regs")}
        out = dp.build(m, state=ins["state"], pre=pre, valid=ins["valid"], **kw)
        m.d.sync += [self.next_state.eq(out.next_state), self.wake_valid.eq(out.wake_valid),
                     self.wake.eq(out.wake), self.expired.eq(out.expired),
                     self.late.eq(out.late)]
        return m
