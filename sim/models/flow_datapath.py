"""Model side of the multi-flow engine's datapath protocol (:mod:`hw.nic.flow_datapath`).

A model datapath works on plain ints: the per-flow state is a ``dict`` with exactly the fields
of the RTL datapath's ``state_layout`` (the engine model packs it with the same layout), the
registers a ``dict`` name -> value.

``update(regs, state, kind, payload, t) -> ModelOut``: ``kind`` an ``EventKind``; ``payload``
the TX byte count, the packed ``cn_layout`` bits of a CN, ``None`` for TIMER; ``t`` the event's
W-bit time stamp.  It must not modify ``state`` (return a new dict).
"""

from __future__ import annotations

from typing import NamedTuple

from hw.nic.flow_datapath import EventKind, ToyDatapath

__all__ = ["ModelOut", "FlowDatapathModel", "ToyDatapathModel", "time_le_int"]


def time_le_int(a: int, b: int, width: int) -> bool:
    """Wrap-safe ``a <= b`` of ``width``-bit stamps (as :func:`hw.nic.flow_datapath.time_le`)."""
    return ((b - a) & ((1 << width) - 1)) < (1 << (width - 1))


class ModelOut(NamedTuple):
    next_state: dict
    wake: int | None      #: earliest armed deadline of next_state, None if no timer is armed
    expired: bool         #: at least one timer was applied
    late: int             #: t - earliest applied deadline, mod 2**W (0 unless expired)


class FlowDatapathModel:
    """Base of the model datapaths: the RTL datapath ``rtl`` gives layouts and registers."""

    def __init__(self, rtl):
        self.rtl = rtl
        self.time_width = rtl.time_width
        self.rate_field = rtl.rate_field
        self.regs = list(rtl.regs)

    def regs_reset(self) -> dict[str, int]:
        return {name: reset for name, _, reset in self.regs}

    def init_state(self, regs: dict) -> dict:
        raise NotImplementedError

    def update(self, regs: dict, state: dict, kind: EventKind, payload, t: int) -> ModelOut:
        raise NotImplementedError


class ToyDatapathModel(FlowDatapathModel):
    """The toy datapath (:class:`hw.nic.flow_datapath.ToyDatapath`), in ints."""

    def __init__(self, rtl: ToyDatapath):
        super().__init__(rtl)
        lay = rtl.state_layout
        self.fields = {name: f.width for name, f in lay}

    def init_state(self, regs):
        state = {name: 0 for name in self.fields}
        state["rate"] = regs["max_rate"]
        return state

    def update(self, regs, state, kind, payload, t):
        W = self.time_width
        mask = (1 << W) - 1
        s = dict(state)
        due = bool(s["armed"]) and time_le_int(s["dl"], t, W)
        late = (t - state["dl"]) & mask if due else 0
        if due:
            s["ticks"] = (s["ticks"] + 1) & 0xFF
            s["dl"] = (s["dl"] + regs["period"]) & mask
            s["rate"] = min(s["rate"] + regs["step"], regs["max_rate"])
        restart = (t + regs["period"]) & mask
        if kind == EventKind.TX:
            s["cnt"] = min(s["cnt"] + 1, 0xFFF)
            s["nbytes"] = min(s["nbytes"] + payload, 0xFFFFF)
            if not state["armed"]:
                s["armed"], s["dl"] = 1, restart
        elif kind == EventKind.CN:
            s["cnt"] = min(s["cnt"] + 1, 0xFFF)
            s["rate"] -= s["rate"] >> ((payload & 3) + 1)
            s["armed"], s["dl"] = 1, restart
        return ModelOut(s, s["dl"] if s["armed"] else None, due, late)
