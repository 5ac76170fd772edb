"""Bit-exact golden models of QCN (IEEE 802.1Qau): the congestion point's feedback, quantization
and sampling (:class:`CpModel`).

The RTL (:mod:`hw.switch.qcn_cp`) must produce exactly the decisions of these models, frame by
frame.  ``docs/qcn.md`` states the rules; in short, for a frame of ``length`` bytes that finds
``Q`` bytes in the queue:

1. ``remaining`` counts the bytes left before the next sample.  If ``length >= remaining`` the
   frame is sampled, else ``remaining -= length`` and nothing else happens.
2. A sampled frame: ``Q_off = Q - Q_eq``, ``Q_delta = Q - Q_old``, ``Q_old = Q``;
   ``s = Q_off + w Q_delta`` (= ``-Fb``).  ``s > 0`` (``Fb < 0``): a CNM with
   ``qntzFb = ceil(min(s, Fb_max) * 63 / Fb_max)`` (1..63), computed as
   ``((min(s, Fb_max) 63 + Fb_max - 1) M) >> K`` with the reciprocal of
   :meth:`QcnCpConfig.registers` (exact for every input, no division).  ``s <= 0``: no CNM,
   ``qntzFb = 0``.
3. One LFSR draw ``r`` (``draw_bits`` bits) per sampled frame; the next interval is
   ``remaining = lo[i] + ((span[i] r) >> draw_bits)`` with ``i = qntzFb >> 3``.
4. QOffset, QDelta reported in 64-byte units: ``x >> 6`` (floor), saturated to int16.
"""

from __future__ import annotations

from dataclasses import dataclass

from hw.layouts import LayoutCodec, qcn_cp_decision_layout, qcn_cp_frame_layout
from hw.nic.qcn_rp_config import MDF_FRAC, STAGE_MAX
from hw.switch.qcn_cp_config import QNTZ_MAX, QOFF_UNIT_SHIFT, QcnCpConfig

from .flow_datapath import FlowDatapathModel, ModelOut

__all__ = ["CpFrame", "CpDecision", "CpModel", "CpCodec", "saturate_i16", "QcnCnm", "QcnTx",
           "QcnRpState",
           "QcnRpCodec", "QcnRpModel", "qcn_update", "RESTART", "RELOAD", "HOLD",
           "qcn_regs", "qcn_deadline_update", "RELOAD_PAIRS", "QcnDatapathModel"]

I16_MIN, I16_MAX = -(1 << 15), (1 << 15) - 1


def saturate_i16(x: int) -> int:
    return max(I16_MIN, min(I16_MAX, x))


@dataclass(frozen=True)
class CpFrame:
    qlen: int
    length: int


@dataclass(frozen=True)
class CpDecision:
    sampled: bool = False
    cnm: bool = False
    qntz_fb: int = 0
    q_off: int = 0      # 64-byte units, int16
    q_delta: int = 0    # 64-byte units, int16


class CpCodec:
    """Pack frames and unpack decisions through the shared layouts."""

    def __init__(self, cfg: QcnCpConfig):
        self.frame = LayoutCodec(qcn_cp_frame_layout(cfg))
        self.decision = LayoutCodec(qcn_cp_decision_layout(cfg))

    def pack_frame(self, f: CpFrame) -> int:
        return self.frame.pack({"qlen": f.qlen, "length": f.length})

    def unpack_decision(self, bits: int) -> CpDecision:
        d = self.decision.unpack(bits)

        def s16(v):
            return v - (1 << 16) if v >> 15 else v
        return CpDecision(bool(d["sampled"]), bool(d["cnm"]), d["qntz_fb"], s16(d["q_off"]),
                          s16(d["q_delta"]))


class CpModel:
    """Congestion point of one queue: ``step(frame) -> CpDecision``."""

    def __init__(self, cfg: QcnCpConfig):
        self.cfg = cfg
        self.reg = cfg.registers()
        self.lfsr = cfg.lfsr.seed
        self.remaining = self.reg.first_interval
        self.q_old = 0
        self.samples = 0
        self.cnms = 0
        # the register file of QcnCpConfig.register_map (the RTL's csr port)
        self.csr = cfg.register_map().model()

    def write(self, addr: int, value: int) -> None:
        """A register write (the RTL applies it between samples)."""
        if self.csr.write(addr, value) is not None:
            self.reg = self.cfg.registers_from(self.csr.values)

    def read(self, addr: int) -> int:
        return self.csr.read(addr)

    @staticmethod
    def quantize(reg, s: int) -> int:
        """qntzFb of ``s = -Fb > 0`` (bytes): saturate at Fb_max, ceiling onto 1..63."""
        mag = min(s, reg.fb_max)
        # (6 bits, as the RTL keeps them: exact for the constants of QcnCpConfig.registers())
        return (((mag * QNTZ_MAX + reg.fb_max - 1) * reg.qntz_mult) >> reg.qntz_shift) \
            & QNTZ_MAX

    def step(self, f: CpFrame) -> CpDecision:
        if f.length < self.remaining:
            self.remaining -= f.length
            return CpDecision()
        reg = self.reg
        q_off = f.qlen - reg.q_eq
        q_delta = f.qlen - self.q_old
        self.q_old = f.qlen
        s = q_off + reg.w * q_delta
        cnm = s > 0
        qntz = self.quantize(reg, s) if cnm else 0
        self.lfsr, r = self.cfg.lfsr.draw(self.lfsr, self.cfg.draw_bits)
        i = qntz >> 3
        self.remaining = reg.sample_lo[i] + ((reg.sample_span[i] * r) >> self.cfg.draw_bits)
        self.samples += 1
        self.cnms += cnm
        if not cnm:
            return CpDecision(sampled=True)
        return CpDecision(True, True, qntz, saturate_i16(q_off >> QOFF_UNIT_SHIFT),
                          saturate_i16(q_delta >> QOFF_UNIT_SHIFT))


# ================================================================================================
# Reaction point
# ================================================================================================

@dataclass(frozen=True)
class QcnCnm:
    """A CNM for this rate limiter with quantized feedback ``fb`` (0..63)."""
    fb: int


@dataclass(frozen=True)
class QcnTx:
    """The rate limiter sent ``nbytes`` bytes."""
    nbytes: int


@dataclass
class QcnRpState:
    cr: int
    tr: int
    bc: int = 0
    b_stage: int = 0
    t_cnt: int = 0
    t_stage: int = 0
    active: int = 0
    fresh: int = 0


class QcnRpCodec:
    def __init__(self, cfg):
        from hw.layouts import QcnRpEventKind, qcn_rp_event_layout, qcn_rp_state_layout
        self.kind = QcnRpEventKind
        self.ev = LayoutCodec(qcn_rp_event_layout(cfg))
        self.st = LayoutCodec(qcn_rp_state_layout(cfg))

    def event(self, ev) -> int:
        if isinstance(ev, QcnCnm):
            return self.ev.pack({"kind": self.kind.CNM, "fb": ev.fb})
        return self.ev.pack({"kind": self.kind.TX, "bytes": ev.nbytes})

    def state(self, bits: int) -> QcnRpState:
        return QcnRpState(**self.st.unpack(bits))


#: Timer actions of :func:`qcn_update` (``None``: keep; a running counter counts down).
RESTART, RELOAD, HOLD = "restart", "reload", "hold"


def _reload(lo, span, half: bool, r: int, draw_bits: int, width: int) -> int:
    """``lo + (span r >> D)`` of the (full, half) pair, mod ``2**width`` (the counter's width:
    the registers a configuration derives keep it below; written ones may not, and the RTL's
    counter keeps the low bits)."""
    k = int(half)
    return (lo[k] + ((span[k] * r) >> draw_bits)) & ((1 << width) - 1)


def qcn_update(reg, s, fb: int | None, tx: int | None, t_due: bool, draw, draw_bits: int,
               widths: tuple[int, int]):
    """One update of one QCN rate limiter (the rules of :class:`QcnRpModel`).

    ``reg``: :class:`QcnRpRegisters` (or an object with its fields); ``s``: the state (the timer
    itself is not read); ``fb``: a CNM's feedback (``None``: no CNM); ``tx``: a TX event's bytes
    (``None``: none); ``t_due``: the timer expires in this update; ``draw()``: the next LFSR draw
    (called at most once, only by a reload); ``widths``: the bits of the byte counter and of
    the timer's period (``QcnRpConfig.byte_width``, ``timer_width``): a reload is mod those.

    Returns ``(fields, t_act, action, guard)``: the new values of the non-timer fields, the
    timer's action (``None``; ``HOLD``: a byte cycle took the update, the expiry waits one
    cycle; ``(RESTART, period)`` from the event; ``(RELOAD, period)`` from the expiry), the rate
    change (``"cut"``, ``"byte"``, ``"timer"`` or ``None``) and whether the TR guard fired.
    """
    F, D = reg.threshold, draw_bits
    BW, TW = widths
    cr, tr, bc, b_stage, t_stage = s.cr, s.tr, s.bc, s.b_stage, s.t_stage
    active, fresh = s.active, s.fresh
    if fb is not None:                                  # CNM: cut
        new = cr - ((cr * fb) >> reg.gd_shift)
        # (a factor above 1.0 reads as 1.0: the floor is at most Cr)
        new = max(new, (cr * min(reg.min_dec_fac, 1 << MDF_FRAC)) >> MDF_FRAC, reg.min_rate)
        r = draw()
        fields = {"cr": new, "tr": cr, "bc": _reload(reg.byte_lo, reg.byte_span, False, r, D, BW),
                  "b_stage": 0, "t_stage": 0, "active": 1, "fresh": 1}
        period = _reload(reg.time_lo, reg.time_span, False, r, D, TW)
        return fields, (RESTART, period), "cut", False
    action = t_act = None
    if active and tx is not None and tx >= bc:          # byte cycle (the timer holds)
        b_stage = min(b_stage + 1, STAGE_MAX)
        bc = _reload(reg.byte_lo, reg.byte_span, b_stage >= F, draw(), D, BW)
        action, t_act = "byte", (HOLD if t_due else None)
    else:
        if active and tx is not None:
            bc -= tx
        if t_due:                                       # timer cycle
            t_stage = min(t_stage + 1, STAGE_MAX)
            t_act = (RELOAD, _reload(reg.time_lo, reg.time_span, t_stage >= F, draw(), D, TW))
            action = "timer"
    guard = False
    if action is not None:                              # increase
        guard = bool(fresh and reg.tr_guard and tr > 10 * cr)
        if guard:
            tr >>= 3
        fresh = 0
        if b_stage <= F and t_stage <= F:
            pass                                        # fast recovery: F cycles
        elif b_stage > F and t_stage > F:
            tr += (min(b_stage, t_stage) - F) * reg.hai_rate
        else:
            tr += reg.ai_rate
        tr = min(tr, reg.line_rate)
        cr = min((cr + tr) >> 1, reg.line_rate)
    fields = {"cr": cr, "tr": tr, "bc": bc, "b_stage": b_stage, "t_stage": t_stage,
              "active": active, "fresh": fresh}
    return fields, t_act, action, guard


class QcnRpModel:
    """Bit-exact QCN reaction point, one clock cycle per :meth:`step` (with an event) or per
    idle cycle (:meth:`idle`); the update is :func:`qcn_update`.  Rules (``docs/qcn.md``,
    "Reaction point"):

    - CNM(fb): ``TR = CR``; ``CR = max(CR - ((CR fb) >> gd), (CR mdf) >> 8, MinRate)``; stages 0;
      BC and timer reloaded (full) from one draw; active; fresh.
    - TX(n) while active: ``n >= BC``: a byte cycle (ByteStage + 1, BC reloaded, half once
      ByteStage >= F, increase); else ``BC -= n``.
    - Timer while active: a cycle with ``t_cnt == 1`` and no CNM or byte cycle is a timer cycle
      (TimeStage + 1, reload, half once TimeStage >= F, increase); otherwise ``t_cnt -= 1``,
      holding at 1 while a byte cycle takes the cycle (one rate change per clock).
    - increase: if fresh and the guard is on and ``TR > 10 CR``: ``TR >>= 3``; fresh = 0;
      with the stages *after* this cycle's increment, both <= F: fast recovery, TR unchanged
      (so F cycles, 5 by default); both > F: ``TR += (min - F) R_HAI``; else ``TR += R_AI``;
      ``TR = min(TR, line)``; ``CR = min((CR + TR) >> 1, line)``.
    """

    def __init__(self, cfg):
        self.cfg = cfg
        self.reg = cfg.registers()
        self.mdf_frac, self.stage_max = MDF_FRAC, STAGE_MAX
        self.state = QcnRpState(cr=self.reg.line_rate, tr=self.reg.line_rate)
        self.lfsr = cfg.lfsr.seed
        self.cycle = 0
        self.cuts = self.byte_cycles = self.timer_cycles = self.guards = 0
        self.log: list = []     # (cycle, action, fb or None, b_stage, t_stage, guard fired)
        # the register file of QcnRpConfig.register_map (the RTL's csr port)
        self.csr = cfg.register_map().model()

    def write(self, addr: int, value: int) -> None:
        """A register write, applied after this cycle (the RTL applies it at the edge that
        takes it)."""
        if self.csr.write(addr, value) is not None:
            self.reg = self.cfg.registers_from(self.csr.values)

    def read(self, addr: int) -> int:
        return self.csr.read(addr)

    def _draw(self) -> int:
        self.lfsr, r = self.cfg.lfsr.draw(self.lfsr, self.cfg.draw_bits)
        return r

    def _cycle(self, fb: int | None, tx: int | None) -> QcnRpState:
        s = self.state
        fields, t_act, action, guard = qcn_update(
            self.reg, s, fb, tx, bool(s.active) and s.t_cnt <= 1, self._draw,
            self.cfg.draw_bits, (self.cfg.byte_width, self.cfg.timer_width))
        if t_act is None:
            t_cnt = s.t_cnt - 1 if s.active and s.t_cnt > 1 else s.t_cnt
        else:
            t_cnt = s.t_cnt if t_act == HOLD else t_act[1]
        for name, value in fields.items():
            setattr(s, name, value)
        s.t_cnt = t_cnt
        if action == "cut":
            self.cuts += 1
            self.log.append((self.cycle, "cut", fb, 0, 0, False))
        elif action is not None:
            if action == "byte":
                self.byte_cycles += 1
            else:
                self.timer_cycles += 1
            self.guards += guard
            self.log.append((self.cycle, action, None, s.b_stage, s.t_stage, guard))
        self.cycle += 1
        return s

    def step(self, ev) -> QcnRpState:
        if isinstance(ev, QcnCnm):
            return self._cycle(ev.fb, None)
        return self._cycle(None, ev.nbytes)

    def idle(self, n: int) -> QcnRpState:
        """``n`` cycles without an event (skips straight to each timer expiry)."""
        s = self.state
        while n > 0:
            if not s.active:
                self.cycle += n
                return s
            k = min(n, max(s.t_cnt - 1, 0))     # cycles of plain counting (0: a zero period)
            s.t_cnt -= k
            self.cycle += k
            n -= k
            if n:
                self._cycle(None, None)
                n -= 1
        return s


# -- the deadline form (multi-flow engine) ------------------------------------------------------

def le_time(a: int, b: int, width: int) -> bool:
    """Wrap-safe ``a <= b`` of ``width``-bit cycle stamps."""
    return ((b - a) & ((1 << width) - 1)) < (1 << (width - 1))


class _Fields(dict):
    __getattr__ = dict.__getitem__


#: The engine's run-time registers: the scalar fields of :class:`QcnRpRegisters`, with each
#: (full, half) reload pair as two registers (``byte_lo`` and ``byte_lo_half``, ...).
RELOAD_PAIRS = ("byte_lo", "byte_span", "time_lo", "time_span")


def qcn_regs(values: dict) -> _Fields:
    """The registers of :func:`qcn_update` from the engine's flat register dict."""
    r = _Fields(values)
    for name in RELOAD_PAIRS:
        r[name] = (values[name], values[name + "_half"])
    return r


def qcn_deadline_update(regs, state: dict, kind: int, payload, t: int, width: int, draw,
                        draw_bits: int, widths: tuple[int, int]):
    """The deadline form of :func:`qcn_update` for the multi-flow engine.

    ``regs``: :func:`qcn_regs` of the register values; ``state``: dict (the fields of
    ``hw.nic.qcn_engine`` ``flow_state_layout``: the non-timer fields of :class:`QcnRpState`,
    ``t_on`` and the W-bit deadline ``t_dl``); ``kind``: 0 TX (``payload`` bytes), 1 CN
    (``payload`` = fb), 2 TIMER; ``draw()``: the engine-wide LFSR's next draw.  The timer is due
    when armed with ``t_dl <= t``; a byte cycle holds a due expiry to ``t + 1``; a reload counts
    from the old deadline, a restart (CNM) from ``t``.  Returns ``(next_state, wake, expired,
    late)`` (expired: the expiry was applied or superseded by a CNM; a held one is not).
    """
    kind = getattr(kind, "value", kind)
    mask = (1 << width) - 1
    s = _Fields(state)
    due = bool(s.t_on) and le_time(s.t_dl, t, width)
    fields, act, _, _ = qcn_update(regs, s, payload if kind == 1 else None,
                                   payload if kind == 0 else None, due, draw, draw_bits,
                                   widths)
    if act is None:
        on, dl = s.t_on, s.t_dl
    elif act == HOLD:
        on, dl = 1, (t + 1) & mask
    else:
        on, dl = 1, ((s.t_dl if act[0] == RELOAD else t) + act[1]) & mask
    fields["t_on"], fields["t_dl"] = on, dl
    nxt = {name: fields[name] for name in state}
    expired = due and act != HOLD
    return nxt, (dl if on else None), expired, ((t - s.t_dl) & mask) if expired else 0


class QcnDatapathModel(FlowDatapathModel):
    """Model of :class:`hw.nic.qcn_engine.QcnDatapath` for
    :class:`sim.models.flow_engine.FlowEngineModel`: :func:`qcn_deadline_update` with ONE LFSR
    (the engine's) drawn in the order the updates are applied."""

    def __init__(self, rtl):
        super().__init__(rtl)
        self.cfg = rtl.config
        self.fields = [name for name, _ in rtl.state_layout]
        self.lfsr = self.cfg.lfsr.seed

    def _draw(self) -> int:
        self.lfsr, r = self.cfg.lfsr.draw(self.lfsr, self.cfg.draw_bits)
        return r

    def init_state(self, regs: dict) -> dict:
        state = dict.fromkeys(self.fields, 0)
        state.update(cr=regs["line_rate"], tr=regs["line_rate"])
        return state

    def update(self, regs, state, kind, payload, t) -> ModelOut:
        return ModelOut(*qcn_deadline_update(qcn_regs(regs), state, kind, payload, t,
                                             self.time_width, self._draw, self.cfg.draw_bits,
                                             (self.cfg.byte_width, self.cfg.timer_width)))
