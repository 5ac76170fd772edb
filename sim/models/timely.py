"""Bit-exact integer model of TIMELY's per-flow rate computation (Mittal et al., SIGCOMM 2015).

One :meth:`TimelyModel.complete` per completion event (the ACK of one segment).  Every value is
an integer in the formats of :mod:`hw.nic.timely_config`; the order of operations, the rounding
(floor everywhere: arithmetic shifts, floor division) and the saturations are the ones the RTL
must reproduce.  Per completion:

1. ``rtt = (t_completion - t_send) mod 2**32 - floor(seg_bytes * ser_per_byte / 2**24)``,
   clamped to ``[0, 2**rtt_width - 1]`` (the segment's serialization at the line rate is not
   part of the RTT);
2. the first completion of a flow only sets ``prev_rtt``; afterwards ``new_diff = rtt -
   prev_rtt`` and ``rtt_diff += ((new_diff << 8) - rtt_diff) * alpha >> 16`` (EWMA, saturating);
3. ``gradient = rtt_diff * inv_min_rtt >> 24`` (Q.16, = rtt_diff / minRTT; saturating at
   ±GRAD_MAX); ``neg`` counts consecutive completions with ``gradient <= 0`` (saturating at
   ``hai_thresh``; a positive gradient clears it);
4. ``rtt < T_low``: ``R += delta``; else ``rtt > T_high``: ``q = floor(2**16 T_high / rtt)``
   (a 16-step restoring division: ``q < 2**16`` because ``rtt > T_high``),
   ``R = R (2**16 - (beta (2**16 - q) >> 16)) >> 16``; else ``gradient <= 0``: ``R += N delta``
   (N = ``hai_mult`` once ``neg`` reached ``hai_thresh``, else 1); else
   ``R = R max(0, 2**16 - (beta gradient >> 16)) >> 16``;
5. an increase (steps 4's additive branches) happens only if the application is not limited:
   ``app_bytes * 2**40 >= R * app_cycles * app_k`` (the flow sent at least ``app_limit_pct`` %
   of ``R`` over the completion interval);
6. ``R`` is clamped to ``[min_rate, max_rate]``.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace

from hw.nic.timely_config import (
    APP_FRAC,
    DIFF_FRAC,
    FRAC16,
    GRAD_FRAC,
    GRAD_MAX,
    INV_FRAC,
    ONE16,
    SER_FRAC,
    TS_BITS,
    TimelyConfig,
)
from sim.models.divider import udiv_sat
from sim.models.flow_datapath import FlowDatapathModel, ModelOut

__all__ = ["TimelyModel", "TimelyState", "TimelyCompletion", "TimelyOutcome",
           "REGION_LOW", "REGION_HIGH", "REGION_GRAD_INC", "REGION_GRAD_DEC", "REGION_FIRST",
           "timely_update", "timely_rtt", "timely_app_ok", "TimelyDatapathModel"]

TS_MASK = (1 << TS_BITS) - 1
REGION_LOW, REGION_HIGH, REGION_GRAD_INC, REGION_GRAD_DEC = range(4)
REGION_FIRST = REGION_GRAD_INC    # the first completion has gradient 0: the gradient rule


@dataclass
class TimelyState:
    rate: int             #: UQ.10 Mb/s
    prev_rtt: int = 0     #: cycles
    rtt_diff: int = 0     #: signed, cycles * 2**DIFF_FRAC
    neg: int = 0          #: consecutive completions with gradient <= 0 (saturating)
    valid: bool = False   #: a first RTT was seen


@dataclass(frozen=True)
class TimelyCompletion:
    """A completion event: NIC timestamps of the segment's first transmission and of its ACK
    (cycles, modulo 2**32), the segment's bytes, and what the application sent since the
    previous completion (``app_bytes`` over ``app_cycles``) for the application-limited rule."""
    t_send: int
    t_completion: int
    seg_bytes: int
    app_bytes: int = 1 << 30
    app_cycles: int = 0


@dataclass(frozen=True)
class TimelyOutcome:
    rtt: int
    gradient: int
    region: int
    rate: int


def timely_rtt(r, ev: TimelyCompletion) -> int:
    """Step 1: the completion's RTT in cycles (``r``: :class:`TimelyRegisters` or an object
    with its fields)."""
    elapsed = (ev.t_completion - ev.t_send) & TS_MASK
    ser = (ev.seg_bytes * r.ser_per_byte) >> SER_FRAC
    return min(max(elapsed - ser, 0), r.rtt_max)


def timely_app_ok(r, rate: int, ev: TimelyCompletion) -> bool:
    """Step 5: the application sent at least ``app_limit_pct`` % of ``rate``."""
    if r.app_k == 0:
        return True
    cycles = min(ev.app_cycles, r.rtt_max)     # the interval counter saturates too
    return (ev.app_bytes << APP_FRAC) >= rate * cycles * r.app_k


def timely_update(r, s: TimelyState, ev: TimelyCompletion) -> TimelyOutcome:
    """One completion (steps 1-6 of the module docstring) applied to the state ``s`` (updated
    in place): the per-flow update the single-flow model and the multi-flow engine's datapath
    model (:class:`TimelyDatapathModel`) share."""
    diff_max = ((r.rtt_max + 1) << DIFF_FRAC) - 1
    rtt = timely_rtt(r, ev)
    if s.valid:
        new_diff = (rtt - s.prev_rtt) << DIFF_FRAC
        d = s.rtt_diff + (((new_diff - s.rtt_diff) * r.alpha) >> FRAC16)
        s.rtt_diff = min(max(d, -diff_max), diff_max)
    s.prev_rtt = rtt
    s.valid = True
    g = (s.rtt_diff * r.inv_min_rtt) >> (DIFF_FRAC + INV_FRAC - GRAD_FRAC)
    g = min(max(g, -GRAD_MAX), GRAD_MAX)
    s.neg = min(s.neg + 1, r.hai_thresh) if g <= 0 else 0
    inc_ok = timely_app_ok(r, s.rate, ev)
    rate = s.rate
    if rtt < r.t_low:
        region = REGION_LOW
        if inc_ok:
            rate += r.delta
    elif rtt > r.t_high:
        region = REGION_HIGH
        q = udiv_sat(r.t_high << FRAC16, rtt, FRAC16)
        rate = (rate * (ONE16 - ((r.beta * (ONE16 - q)) >> FRAC16))) >> FRAC16
    elif g <= 0:
        region = REGION_GRAD_INC
        if inc_ok:
            rate += r.delta * (r.hai_mult if s.neg >= r.hai_thresh else 1)
    else:
        region = REGION_GRAD_DEC
        rate = (rate * max(ONE16 - ((r.beta * g) >> FRAC16), 0)) >> FRAC16
    s.rate = min(max(rate, r.min_rate), r.max_rate)
    return TimelyOutcome(rtt, g, region, s.rate)


class TimelyModel:
    def __init__(self, cfg: TimelyConfig):
        self.cfg = cfg
        self.r = cfg.registers()
        self.diff_max = (1 << (cfg.rtt_width + DIFF_FRAC)) - 1
        self.state = TimelyState(rate=self.r.init_rate)

    def rtt_of(self, ev: TimelyCompletion) -> int:
        return timely_rtt(self.r, ev)

    def app_ok(self, ev: TimelyCompletion) -> bool:
        return timely_app_ok(self.r, self.state.rate, ev)

    def complete(self, ev: TimelyCompletion) -> TimelyOutcome:
        return timely_update(self.r, self.state, ev)


# -- the multi-flow engine's datapath (hw/nic/timely_engine.py) ---------------------------------

class TimelyDatapathModel(FlowDatapathModel):
    """Model of :class:`hw.nic.timely_engine.TimelyDatapath` for
    :class:`sim.models.flow_engine.FlowEngineModel`: a ``cn`` event is a completion (its packed
    payload unpacked into a :class:`TimelyCompletion`) applied with :func:`timely_update`;
    ``tx`` and timer events change nothing (no timer is ever armed)."""

    def __init__(self, rtl):
        super().__init__(rtl)
        self.fields = [name for name, _ in rtl.state_layout]
        self.cn = [(name, f.offset, f.width) for name, f in rtl.cn_layout]
        self.dw = rtl.state_layout["rtt_diff"].width
        self.rtt_max = (1 << rtl.config.rtt_width) - 1

    def init_state(self, regs: dict) -> dict:
        state = dict.fromkeys(self.fields, 0)
        state["rate"] = regs["init_rate"]
        return state

    def registers(self, regs: dict):
        return SimpleNamespace(**regs, rtt_max=self.rtt_max)

    def completion(self, payload: int) -> TimelyCompletion:
        f = {name: (payload >> o) & ((1 << w) - 1) for name, o, w in self.cn}
        return TimelyCompletion(f["t_send"], f["t_comp"], f["seg_bytes"], f["app_bytes"],
                                f["app_cycles"])

    def update(self, regs, state, kind, payload, t):
        if getattr(kind, "value", kind) != 1:
            return ModelOut(dict(state), None, False, 0)
        dw = self.dw
        rd = state["rtt_diff"]
        rd -= (rd >> (dw - 1)) << dw
        s = TimelyState(rate=state["rate"], prev_rtt=state["prev_rtt"], rtt_diff=rd,
                        neg=state["neg"], valid=bool(state["valid"]))
        timely_update(self.registers(regs), s, self.completion(payload))
        nxt = {"rate": s.rate, "prev_rtt": s.prev_rtt, "rtt_diff": s.rtt_diff & ((1 << dw) - 1),
               "neg": s.neg, "valid": int(s.valid)}
        return ModelOut(nxt, None, False, 0)
