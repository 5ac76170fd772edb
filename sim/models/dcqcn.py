"""Bit-exact golden model of the DCQCN reaction point (:mod:`hw.nic.dcqcn_rp`).

:class:`DcqcnRpModel` holds one flow's state and advances it one clock cycle per
:meth:`DcqcnRpModel.step`
(with at most one event: a CNP or ``TX bytes``), with the RTL's integer widths, truncations and
saturations.  Timers are per-flow down-counters, so an expiry happens on exactly the cycle an
ideal timer would fire (``docs/dcqcn.md``, "Timers"); :meth:`DcqcnRpModel.idle` skips idle cycles in
O(number of expiries).

One cycle, in this order (the RTL computes the same chain combinationally):

1. timers: a counter at 1 expires this cycle (and drops to 0), any other non-zero one counts down;
2. the cut decision: ``every_cnp``: a CNP; ``holdoff``: a CNP with no cut in the last P cycles;
   ``periodic_check``: the check timer expires and a CNP arrived since the last check.  The first
   CNP with ``first_rate != 0`` sets ``Rc = Rt = first_rate`` instead of cutting;
3. alpha: ``on_cnp``: a CNP gives ``a - a*g + g`` and restarts the alpha timer, an expiry
   without a CNP gives ``a - a*g``; ``periodic``: an expiry gives ``a - a*g + g*flag``;
4. rate increase (only if no cut this cycle: a cut restarts the increase timer and wins the tie):
   timer expiry and/or byte-counter expiry advance their stages, the rule picks FR / AI / HAI;
5. the cut (``Rt = Rc`` per the clamp rule; ``Rc = max(Rc - Rc*alpha >> gd_shift,
   Rc*min_dec_fac >> 16, min_rate)``), resetting stages and restarting the timers;
6. the CNP's flags (periodic modes) and the first-CNP activation.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

from hw.layouts import RpEventKind, RpMode, rp_event_layout, rp_state_layout
from hw.nic.dcqcn_config import (
    ALPHA_FRAC,
    ALPHA_ONE,
    G_FRAC,
    MDF_FRAC,
    STAGE_MAX,
    AlphaMode,
    ClampRule,
    CutMode,
    DcqcnRpConfig,
    HaiStep,
    IncreaseRule,
)

from .flow_datapath import FlowDatapathModel, ModelOut

__all__ = ["DcqcnRpState", "DcqcnRpModel", "DcqcnCnp", "DcqcnTx", "pack_event", "unpack_state",
           "pack_state", "DcqcnRpCodec", "rp_update", "alpha_next", "RESTART", "RELOAD",
           "dcqcn_deadline_update", "le_time", "deadline_apply", "earliest", "TIMERS",
           "DcqcnDatapathModel"]

_ON_CNP = AlphaMode.ALL.index(AlphaMode.ON_CNP)
_EVERY, _CHECK, _HOLD = (CutMode.ALL.index(m) for m in
                         (CutMode.EVERY_CNP, CutMode.PERIODIC_CHECK, CutMode.HOLDOFF))
_R_PAPER, _R_NS3, _R_HPCC = (IncreaseRule.ALL.index(m) for m in
                             (IncreaseRule.PAPER, IncreaseRule.NS3, IncreaseRule.HPCC))
_LIN0, _LIN1, _CONST = (HaiStep.ALL.index(m) for m in
                        (HaiStep.LINEAR0, HaiStep.LINEAR1, HaiStep.CONST))
_C_ALWAYS, _C_BYTE, _C_TIME, _C_ANY = (ClampRule.ALL.index(m) for m in
                                       (ClampRule.ALWAYS, ClampRule.BYTE_STAGE,
                                        ClampRule.TIME_STAGE, ClampRule.ANY_STAGE))
_FR, _AI, _HAI = RpMode.FR.value, RpMode.AI.value, RpMode.HAI.value


@dataclass(frozen=True)
class DcqcnCnp:
    pass


@dataclass(frozen=True)
class DcqcnTx:
    bytes: int


@dataclass(frozen=True)
class DcqcnRpState:
    rc: int
    rt: int
    alpha: int
    t_stage: int = 0
    b_stage: int = 0
    mode: int = _FR
    t_cnt: int = 0
    a_cnt: int = 0
    d_cnt: int = 0
    bc: int = 0
    active: int = 0
    alpha_flag: int = 0
    dec_flag: int = 0


def pack_event(cfg: DcqcnRpConfig, ev) -> int:
    if isinstance(ev, DcqcnCnp):
        return rp_event_layout(cfg).const({"kind": RpEventKind.CNP, "bytes": 0}).as_bits()
    return rp_event_layout(cfg).const({"kind": RpEventKind.TX, "bytes": ev.bytes}).as_bits()


def pack_state(cfg: DcqcnRpConfig, s: DcqcnRpState) -> int:
    return rp_state_layout(cfg).const({f.name: getattr(s, f.name)
                                       for f in fields(DcqcnRpState)}).as_bits()


def unpack_state(cfg: DcqcnRpConfig, bits: int) -> DcqcnRpState:
    v = rp_state_layout(cfg).from_bits(bits)
    return DcqcnRpState(**{f.name: int(getattr(v, f.name)) if f.name != "mode"
                      else RpMode(v.mode).value for f in fields(DcqcnRpState)})


class DcqcnRpCodec:
    """Fast pack/unpack for testbenches, with field offsets and widths read from the layouts
    (``tests/test_dcqcn_rp_model.py`` checks it against ``layout.const`` / ``from_bits``)."""

    def __init__(self, cfg: DcqcnRpConfig):
        def spans(layout):
            return [(name, f.offset, f.width) for name, f in layout]
        self.state_fields = spans(rp_state_layout(cfg))
        ev = dict((n, (o, w)) for n, o, w in spans(rp_event_layout(cfg)))
        self.kind_off, self.bytes_off = ev["kind"][0], ev["bytes"][0]

    def event(self, ev) -> int:
        if isinstance(ev, DcqcnCnp):
            return RpEventKind.CNP.value << self.kind_off
        return (RpEventKind.TX.value << self.kind_off) | (ev.bytes << self.bytes_off)

    def state(self, bits: int) -> DcqcnRpState:
        return DcqcnRpState(**{n: (bits >> o) & ((1 << w) - 1) for n, o, w in self.state_fields})


# ================================================================================================
# The per-flow update, shared by the single-flow counter model and the multi-flow deadline model
# ================================================================================================

#: Timer actions returned by :func:`rp_update` (with a period): ``None`` keeps the timer (a due
#: timer that is not reloaded stops: a counter drops to 0, a deadline is disarmed); ``RESTART``
#: starts it ``period`` cycles after the event (counter := period, deadline := t + period);
#: ``RELOAD`` (only for a due timer) reloads it from its expiry (counter := period, deadline :=
#: old deadline + period: no drift when the expiry is applied late).
RESTART, RELOAD = "restart", "reload"


class _Fields(dict):
    """A dict whose keys are also attributes (a deadline-form state or register dict, read by
    :func:`rp_update` like a :class:`DcqcnRpState` / :class:`DcqcnRpRegisters`)."""
    __getattr__ = dict.__getitem__


def alpha_next(g: int, alpha: int, plus_g: bool) -> int:
    """``(1 - g) alpha (+ g)``, UQ1.24, saturating at 1.0; a gain above 1.0 acts as 1.0."""
    g = min(g, 1 << G_FRAC)
    a = alpha - ((alpha * g) >> G_FRAC) + ((g << (ALPHA_FRAC - G_FRAC)) if plus_g else 0)
    return min(a, ALPHA_ONE)


def rp_update(r, s, cnp: bool, tx: int | None, a_due: bool, t_due: bool, d_due: bool,
              d_quiet: bool):
    """One update of one flow: the algorithm of the module docstring (steps 2-6).

    ``r``: the registers (:class:`DcqcnRpRegisters` or a dict with its field names); ``s``: the
    flow's state (only the fields that are not timers are read); ``cnp``: a CNP; ``tx``: the
    bytes of a TX event (``None``: no TX); ``a_due`` / ``t_due`` / ``d_due``: the alpha,
    rate-increase and cut-check timers expire in this update; ``d_quiet``: the cut-check timer
    is stopped or expiring (holdoff: a CNP may cut).

    Returns ``(fields, (a_act, t_act, d_act), cut)``: the new values of the non-timer fields,
    one action per timer (``None``, ``(RESTART, period)`` or ``(RELOAD, period)``), and whether
    a cut happened (not counting the first-CNP rate setting).
    """
    # 2. cut decision
    first = cnp and not s.active
    if r.cut_mode == _EVERY:
        cut = cnp
    elif r.cut_mode == _HOLD:
        cut = cnp and d_quiet
    else:
        cut = d_due and bool(s.dec_flag)
    first_set = first and r.first_rate != 0
    action = cut or first_set
    a_act = t_act = d_act = None

    # 3. alpha
    alpha, alpha_flag = s.alpha, s.alpha_flag
    if r.alpha_mode == _ON_CNP:
        alpha_cnp = alpha_next(r.g, s.alpha, True)
        if cnp:
            alpha, a_act = alpha_cnp, (RESTART, r.k_cycles)
        elif a_due:
            alpha, a_act = alpha_next(r.g, s.alpha, False), (RELOAD, r.k_cycles)
        alpha_for_cut = alpha_cnp if r.alpha_before_cut else s.alpha
    else:
        if a_due:
            alpha, alpha_flag = alpha_next(r.g, s.alpha, bool(s.alpha_flag)), 0
            a_act = (RELOAD, r.k_cycles)
        alpha_for_cut = alpha

    # 4. byte counter and rate increase
    rc, rt = s.rc, s.rt
    t_stage, b_stage, mode, bc = s.t_stage, s.b_stage, s.mode, s.bc
    byte_on = r.byte_reset != 0
    b_fire = False
    if tx is not None and s.active and byte_on:
        b_fire = tx >= s.bc
        halve = r.halve_in_hyper and s.mode == _HAI
        bc = (r.byte_half if halve else r.byte_reset) if b_fire else s.bc - tx
    t_ev = t_due and not action
    b_ev = b_fire and not action
    if t_ev or b_ev:
        ts = min(s.t_stage + t_ev, STAGE_MAX)
        bs = min(s.b_stage + b_ev, STAGE_MAX)
        F = r.threshold
        hi = max(ts, bs) if byte_on else ts
        lo = min(ts, bs) if byte_on else ts
        if r.increase_rule == _R_NS3:
            this = ts if t_ev else bs
            select = _AI if (bs < F or ts < F) else _HAI
            if s.mode == _FR:
                cls = _FR if this < F else select
            elif s.mode == _AI:
                cls = select if t_ev else _AI
            else:
                cls = _HAI
        else:
            fe = F + (1 if r.increase_rule == _R_HPCC else 0)
            cls = _FR if hi < fe else _HAI if lo > fe else _AI
        if r.hai_step == _CONST:
            mult = 1
        else:
            mult = min(max(lo - F + (1 if r.hai_step == _LIN1 else 0), 0), STAGE_MAX)
        inc = 0 if cls == _FR else r.ai_rate if cls == _AI else r.hai_rate * mult
        guard = r.rt_guard and (ts == 1 or bs == 1) and s.rt > 10 * s.rc
        rt = s.rt >> 3 if guard else min(s.rt + inc, r.max_rate)
        rc = min(max((rt + s.rc) >> 1, r.min_rate), r.max_rate)
        if t_ev:
            halve = r.halve_in_hyper and s.mode == _HAI
            t_act = (RELOAD, r.t_half_cycles if halve else r.t_cycles)
        t_stage, b_stage, mode = ts, bs, cls

    # 5. the cut
    dec_flag = s.dec_flag
    if r.cut_mode == _CHECK and d_due:
        d_act = (RELOAD, r.p_cycles)
    did_cut = False
    if action:
        if first_set:
            rc = rt = r.first_rate
            clamp = True
        else:
            clamp = {_C_ALWAYS: True, _C_BYTE: s.b_stage != 0, _C_TIME: s.t_stage != 0,
                     _C_ANY: s.b_stage != 0 or s.t_stage != 0}[r.clamp_rule]
            rt = s.rc if clamp else s.rt
            dec = (s.rc * alpha_for_cut) >> r.gd_shift
            cut_rc = s.rc - dec if dec < s.rc else 0
            # (a factor above 1.0 acts as 1.0: the floor is at most Rc)
            mdf = min(r.min_dec_fac, 1 << MDF_FRAC)
            rc = max(cut_rc, (s.rc * mdf + (1 << MDF_FRAC) - 1) >> MDF_FRAC, r.min_rate)
            did_cut = True
        t_stage = b_stage = 0
        mode = _FR
        t_act = (RESTART, r.t_cycles)
        if byte_on and (clamp or not r.bc_reload_on_clamp_only):
            bc = r.byte_reset
        if r.cut_mode == _HOLD:
            d_act = (RESTART, r.p_cycles)
        if r.cut_mode == _CHECK:
            dec_flag = 0

    # 6. the CNP's flags
    if cnp and r.alpha_mode != _ON_CNP:
        if first:
            a_act, alpha_flag = (RESTART, r.k_cycles), 0
        else:
            alpha_flag = 1
    if cnp and r.cut_mode == _CHECK:
        dec_flag = 1
        if first:
            d_act = (RESTART, r.p_cycles + 1)
    active = 1 if cnp else s.active

    fields = {"rc": rc, "rt": rt, "alpha": alpha, "t_stage": t_stage, "b_stage": b_stage,
              "mode": mode, "bc": bc, "active": active, "alpha_flag": alpha_flag,
              "dec_flag": dec_flag}
    return fields, (a_act, t_act, d_act), did_cut


def _counter(cnt: int, act) -> int:
    """The counter form of a timer action (a running counter counts down; 1 expires -> 0)."""
    return max(cnt - 1, 0) if act is None else act[1]


class DcqcnRpModel:
    """Golden model of one flow of :class:`hw.nic.dcqcn_rp.DcqcnRp` (timers as down-counters;
    the update is :func:`rp_update`)."""

    def __init__(self, cfg: DcqcnRpConfig):
        self.cfg = cfg
        self.r = r = cfg.registers()
        self.state = DcqcnRpState(rc=r.max_rate, rt=r.max_rate, alpha=r.alpha_init, bc=r.byte_reset)
        self.cycle = 0
        self.cuts = 0
        self.cut_cycles: list[int] = []   #: the cycle of every cut (for tests)
        # the register file of DcqcnRpConfig.register_map (the RTL's csr port)
        self.csr = cfg.register_map().model()

    def write(self, addr: int, value: int) -> None:
        """A register write, applied after this cycle's :meth:`step` (the RTL applies it at
        the edge that takes it)."""
        if self.csr.write(addr, value) is not None:
            self.r = self.cfg.registers_from(self.csr.values)

    def read(self, addr: int) -> int:
        return self.csr.read(addr)

    # -- one clock cycle -------------------------------------------------------------------------
    def step(self, ev=None) -> DcqcnRpState:
        s = self.state
        # 1. timers: a counter at 1 expires this cycle
        fields, (a_act, t_act, d_act), cut = rp_update(
            self.r, s, isinstance(ev, DcqcnCnp), ev.bytes if isinstance(ev, DcqcnTx) else None,
            s.a_cnt == 1, s.t_cnt == 1, s.d_cnt == 1, s.d_cnt <= 1)
        if cut:
            self.cuts += 1
            self.cut_cycles.append(self.cycle)
        self.state = DcqcnRpState(a_cnt=_counter(s.a_cnt, a_act), t_cnt=_counter(s.t_cnt, t_act),
                                  d_cnt=_counter(s.d_cnt, d_act), **fields)
        self.cycle += 1
        return self.state

    def idle(self, n: int) -> DcqcnRpState:
        """``n`` cycles without events, skipping the cycles in which no timer expires."""
        while n > 0:
            live = [c for c in (self.state.a_cnt, self.state.t_cnt, self.state.d_cnt) if c]
            skip = min(min(live) - 1 if live else n, n)
            if skip:
                s = self.state
                self.state = replace(s, **{k: (getattr(s, k) - skip if getattr(s, k) else 0)
                                           for k in ("a_cnt", "t_cnt", "d_cnt")})
                self.cycle += skip
                n -= skip
            if n:
                self.step(None)
                n -= 1
        return self.state


# -- the deadline form (multi-flow engine) ------------------------------------------------------

#: Per-flow state of the deadline form, in the order of the RTL layout
#: (:func:`hw.nic.dcqcn_engine.flow_state_layout`): the non-timer fields of
#: :class:`DcqcnRpState`, then per timer an armed bit and a W-bit deadline.
TIMERS = ("a", "t", "d")      #: alpha, rate increase, cut check / holdoff


def le_time(a: int, b: int, width: int) -> bool:
    """Wrap-safe ``a <= b`` of ``width``-bit cycle stamps."""
    return ((b - a) & ((1 << width) - 1)) < (1 << (width - 1))


def deadline_apply(on: int, dl: int, due: bool, act, t: int, width: int) -> tuple[int, int]:
    """The deadline form of a timer action: ``(armed, deadline)`` after the update (a stopped
    timer keeps its old deadline value)."""
    if act is None:
        return (0 if due else on), dl
    base = dl if act[0] == RELOAD else t
    return 1, (base + act[1]) & ((1 << width) - 1)


def earliest(deadlines, width: int) -> int | None:
    """The earliest of the armed ``(on, deadline)`` pairs, in the RTL's pairwise order (the
    first wins a tie); ``None`` if none is armed."""
    best = None
    for on, dl in deadlines:
        if on and (best is None or not le_time(best, dl, width)):
            best = dl
    return best


def dcqcn_deadline_update(regs, state: dict, kind: int, payload, t: int, width: int):
    """The deadline form of :func:`rp_update` for the multi-flow engine.

    ``regs``: dict of :class:`DcqcnRpRegisters` fields; ``state``: dict (fields of
    :data:`hw.nic.dcqcn_engine` ``flow_state_layout``); ``kind``: 0 TX (``payload`` bytes),
    1 CN, 2 TIMER (``hw.nic.flow_datapath.EventKind`` values); ``t``: the event's W-bit stamp.
    Every armed timer with ``deadline <= t`` expires in this update together with the event
    (one update, as the counter form's cycle when the deadline is ``t``); reloads count from
    the old deadline, restarts from ``t``.  Returns ``(next_state, wake, expired, late)``.
    """
    kind = getattr(kind, "value", kind)
    s = _Fields(state)
    due = {k: bool(s[k + "_on"]) and le_time(s[k + "_dl"], t, width) for k in TIMERS}
    fields, acts, _ = rp_update(regs if hasattr(regs, "g") else _Fields(regs), s, kind == 1,
                                payload if kind == 0 else None, due["a"], due["t"], due["d"],
                                not s.d_on or due["d"])
    mask = (1 << width) - 1
    for k, act in zip(TIMERS, acts, strict=True):
        fields[k + "_on"], fields[k + "_dl"] = deadline_apply(s[k + "_on"], s[k + "_dl"], due[k],
                                                              act, t, width)
    nxt = {name: fields[name] for name in state}
    late = max(((t - s[k + "_dl"]) & mask for k in TIMERS if due[k]), default=0)
    wake = earliest(((nxt[k + "_on"], nxt[k + "_dl"]) for k in TIMERS), width)
    return nxt, wake, any(due.values()), late


class DcqcnDatapathModel(FlowDatapathModel):
    """Model of :class:`hw.nic.dcqcn_engine.DcqcnDatapath` for
    :class:`sim.models.flow_engine.FlowEngineModel` (:func:`dcqcn_deadline_update`)."""

    def __init__(self, rtl):
        super().__init__(rtl)
        self.fields = [name for name, _ in rtl.state_layout]

    def init_state(self, regs: dict) -> dict:
        state = dict.fromkeys(self.fields, 0)
        state.update(rc=regs["max_rate"], rt=regs["max_rate"], alpha=regs["alpha_init"],
                     bc=regs["byte_reset"])
        return state

    def update(self, regs, state, kind, payload, t) -> ModelOut:
        return ModelOut(*dcqcn_deadline_update(regs, state, kind, payload, t, self.time_width))
