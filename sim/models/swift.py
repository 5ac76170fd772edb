"""Bit-exact integer model of Swift's per-flow window engine (Kumar et al., SIGCOMM 2020).

Events: :meth:`SwiftModel.on_ack` (per ACK), :meth:`SwiftModel.on_timeout` (retransmission
timeout) and :meth:`SwiftModel.on_fast_recovery` (loss detected by a NAK).  Every value is an
integer in the formats of :mod:`hw.nic.swift_config`; rounding is floor everywhere (shifts,
floor divisions that a restoring divider computes exactly) and every result saturates.

Per ACK (``now``, ``fabric`` and ``endpoint`` delays in cycles, ``hops``, ``num_acked``):

1. ``rtt = fabric + endpoint`` (saturating): the sample that times the once-per-RTT guard and
   the pacing delay; ``can_decrease`` = no cut yet, or ``(now - t_last_decrease) mod 2**32 >=
   rtt``; the retransmission counter clears;
2. each window ``w`` (``fcwnd`` against ``target = base + hops * h + fs_rom[fs_index(fcwnd)]``
   with the fabric delay, ``ecwnd`` against ``endpoint_target`` with the endpoint delay):
   ``delay < target``: ``w += floor(ai * num_acked * 2**16 / w)`` if ``w >= 1`` packet, else
   ``w += ai * num_acked``; otherwise, if ``can_decrease``:
   ``ratio = floor(2**16 (delay - target) / delay)`` (16-bit quotient),
   ``w = w * max(2**16 - (beta * ratio >> 16), 2**16 - max_mdf) >> 16``; then ``w`` is clamped
   to ``[min_cwnd, max_cwnd]``;
3. ``cwnd = min(fcwnd, ecwnd)``; a cwnd smaller than before the event stamps
   ``t_last_decrease = now`` (strictly smaller: the paper's ``<=`` would restamp on every ACK
   of a window held at ``max_cwnd`` and so forbid every later cut);
4. ``pace = floor(rtt * 2**16 / cwnd)`` cycles (saturating at ``2**32 - 1``) if ``cwnd`` < 1
   packet, else 0: the gap between two packets of a sub-one window.

A timeout increments the retransmission counter: at ``retx_reset`` both windows drop to
``min_cwnd``; otherwise, if ``can_decrease``, both are cut by ``max_mdf``.  A fast recovery
clears the counter and cuts by ``max_mdf`` if ``can_decrease``.  Steps 3-4 follow each event.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace

from hw.nic.swift_config import (
    CW_FRAC,
    CW_ONE,
    FRAC16,
    ONE16,
    PACE_BITS,
    TS_BITS,
    SwiftConfig,
    fs_index,
)
from sim.models.divider import udiv_sat
from sim.models.flow_datapath import FlowDatapathModel, ModelOut

__all__ = ["SwiftModel", "SwiftState", "SwiftAck", "swift_on_ack", "swift_on_timeout",
           "swift_on_fast_recovery", "swift_target", "SwiftDatapathModel"]

TS_MASK = (1 << TS_BITS) - 1
CW_MAX_Q = 32          #: quotient bits of the increase division (a UQ16.16 result)


@dataclass
class SwiftState:
    fcwnd: int                  #: UQ16.16 packets
    ecwnd: int                  #: UQ16.16 packets
    rtt: int = 0                #: cycles: the last RTT sample
    t_last_decrease: int = 0    #: cycles (mod 2**32)
    decreased: bool = False     #: t_last_decrease holds a stamp
    retx: int = 0               #: consecutive retransmission timeouts
    pace: int = 0               #: cycles between packets while cwnd < 1 (0: window-limited)
    target: int = 0             #: cycles: the fabric target of the last ACK

    @property
    def cwnd(self) -> int:
        return min(self.fcwnd, self.ecwnd)


@dataclass(frozen=True)
class SwiftAck:
    now: int                    #: NIC receive stamp of the ACK, cycles (mod 2**32)
    fabric: int                 #: fabric delay, cycles
    endpoint: int = 0           #: endpoint delay, cycles
    hops: int = 1
    num_acked: int = 1


def swift_target(r, hops: int, fcwnd: int) -> int:
    """The fabric target delay (``r``: :class:`SwiftRegisters` or an object with its fields)."""
    t = r.base_target + min(hops, r.max_hops) * r.hop_scale + r.fs_rom[fs_index(fcwnd)]
    return min(t, r.delay_max)


def _can_decrease(s: SwiftState, now: int) -> bool:
    return not s.decreased or ((now - s.t_last_decrease) & TS_MASK) >= s.rtt


def _clamp(r, w: int) -> int:
    return min(max(w, r.min_cwnd), r.max_cwnd)


def _update(r, w: int, delay: int, target: int, n: int, can_decrease: bool) -> int:
    if delay < target:
        if w >= CW_ONE:
            w += udiv_sat((r.ai * n) << CW_FRAC, w, CW_MAX_Q)
        else:
            w += r.ai * n
    elif can_decrease:
        ratio = udiv_sat((delay - target) << FRAC16, delay, FRAC16)
        f = max(ONE16 - ((r.beta * ratio) >> FRAC16), r.mdf_floor)
        w = (w * f) >> FRAC16
    return _clamp(r, w)


def _cut_both(r, s: SwiftState) -> None:
    s.fcwnd = _clamp(r, (s.fcwnd * r.mdf_floor) >> FRAC16)
    s.ecwnd = _clamp(r, (s.ecwnd * r.mdf_floor) >> FRAC16)


def _finish(s: SwiftState, now: int, prev: int) -> None:
    cwnd = s.cwnd
    if cwnd < prev:
        s.t_last_decrease = now & TS_MASK
        s.decreased = True
    s.pace = udiv_sat(s.rtt << CW_FRAC, cwnd, PACE_BITS) if cwnd < CW_ONE else 0


def swift_on_ack(r, s: SwiftState, ack: SwiftAck) -> SwiftState:
    """One ACK (steps 1-4 of the module docstring) applied to ``s`` in place: the per-flow
    update the single-flow model and the engine's datapath model
    (:class:`SwiftDatapathModel`) share."""
    prev = s.cwnd
    fabric = min(ack.fabric, r.delay_max)
    endpoint = min(ack.endpoint, r.delay_max)
    s.rtt = min(fabric + endpoint, r.delay_max)
    can = _can_decrease(s, ack.now)
    s.retx = 0
    s.target = swift_target(r, ack.hops, s.fcwnd)
    s.fcwnd = _update(r, s.fcwnd, fabric, s.target, ack.num_acked, can)
    s.ecwnd = _update(r, s.ecwnd, endpoint, r.endpoint_target, ack.num_acked, can)
    _finish(s, ack.now, prev)
    return s


def swift_on_timeout(r, s: SwiftState, now: int) -> SwiftState:
    """A retransmission timeout applied to ``s`` in place."""
    prev = s.cwnd
    s.retx = min(s.retx + 1, r.retx_reset)
    if s.retx >= r.retx_reset:
        s.fcwnd = s.ecwnd = r.min_cwnd
    elif _can_decrease(s, now):
        _cut_both(r, s)
    _finish(s, now, prev)
    return s


def swift_on_fast_recovery(r, s: SwiftState, now: int) -> SwiftState:
    """A fast recovery (loss detected by a NAK) applied to ``s`` in place."""
    prev = s.cwnd
    s.retx = 0
    if _can_decrease(s, now):
        _cut_both(r, s)
    _finish(s, now, prev)
    return s


class SwiftModel:
    def __init__(self, cfg: SwiftConfig, registers=None):
        self.cfg = cfg
        self.r = registers if registers is not None else cfg.registers()
        self.state = SwiftState(fcwnd=self.r.init_cwnd, ecwnd=self.r.init_cwnd)

    def target(self, hops: int, fcwnd: int) -> int:
        return swift_target(self.r, hops, fcwnd)

    def on_ack(self, ack: SwiftAck) -> SwiftState:
        return swift_on_ack(self.r, self.state, ack)

    def on_timeout(self, now: int) -> SwiftState:
        return swift_on_timeout(self.r, self.state, now)

    def on_fast_recovery(self, now: int) -> SwiftState:
        return swift_on_fast_recovery(self.r, self.state, now)


# -- the multi-flow engine's datapath (hw/nic/swift_engine.py) ----------------------------------

class SwiftDatapathModel(FlowDatapathModel):
    """Model of :class:`hw.nic.swift_engine.SwiftDatapath` for
    :class:`sim.models.flow_engine.FlowEngineModel`: a ``cn`` event's ``op`` selects
    :func:`swift_on_ack` (0), :func:`swift_on_timeout` (1) or :func:`swift_on_fast_recovery`
    (2) on the flow's state; op 3, ``tx`` and timer events change nothing."""

    def __init__(self, rtl):
        super().__init__(rtl)
        self.fields = [name for name, _ in rtl.state_layout]
        self.cn = [(name, f.offset, f.width) for name, f in rtl.cn_layout]
        self.delay_max = (1 << rtl.config.delay_width) - 1
        self.fs_rom = rtl.fs_rom

    def init_state(self, regs: dict) -> dict:
        state = dict.fromkeys(self.fields, 0)
        state.update(fcwnd=regs["init_cwnd"], ecwnd=regs["init_cwnd"])
        return state

    def registers(self, regs: dict):
        return SimpleNamespace(**regs, delay_max=self.delay_max, fs_rom=self.fs_rom)

    def update(self, regs, state, kind, payload, t):
        if getattr(kind, "value", kind) != 1:
            return ModelOut(dict(state), None, False, 0)
        f = {name: (payload >> o) & ((1 << w) - 1) for name, o, w in self.cn}
        if f["op"] == 3:
            return ModelOut(dict(state), None, False, 0)
        s = SwiftState(fcwnd=state["fcwnd"], ecwnd=state["ecwnd"], rtt=state["rtt"],
                       t_last_decrease=state["t_last"], decreased=bool(state["decreased"]),
                       retx=state["retx"], pace=state["pace"], target=state["target"])
        r = self.registers(regs)
        if f["op"] == 0:
            swift_on_ack(r, s, SwiftAck(f["now"], f["fabric"], f["endpoint"], f["hops"],
                                        f["num_acked"]))
        elif f["op"] == 1:
            swift_on_timeout(r, s, f["now"])
        else:
            swift_on_fast_recovery(r, s, f["now"])
        nxt = {"pace": s.pace, "fcwnd": s.fcwnd, "ecwnd": s.ecwnd, "rtt": s.rtt,
               "t_last": s.t_last_decrease, "decreased": int(s.decreased), "retx": s.retx,
               "target": s.target}
        return ModelOut(nxt, None, False, 0)
