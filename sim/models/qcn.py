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
from hw.switch.qcn_cp_config import QNTZ_MAX, QOFF_UNIT_SHIFT, QcnCpConfig

__all__ = ["CpFrame", "CpDecision", "CpModel", "CpCodec", "saturate_i16", "QcnCnm", "QcnTx",
           "QcnRpState",
           "QcnRpCodec", "QcnRpModel"]

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

    @staticmethod
    def quantize(reg, s: int) -> int:
        """qntzFb of ``s = -Fb > 0`` (bytes): saturate at Fb_max, ceiling onto 1..63."""
        mag = min(s, reg.fb_max)
        return ((mag * QNTZ_MAX + reg.fb_max - 1) * reg.qntz_mult) >> reg.qntz_shift

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


class QcnRpModel:
    """Bit-exact QCN reaction point, one clock cycle per :meth:`step` (with an event) or per
    idle cycle (:meth:`idle`).  Rules (``docs/qcn.md``, "Reaction point"):

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
        from hw.nic.qcn_rp_config import MDF_FRAC, STAGE_MAX
        self.cfg = cfg
        self.reg = cfg.registers()
        self.mdf_frac, self.stage_max = MDF_FRAC, STAGE_MAX
        self.state = QcnRpState(cr=self.reg.line_rate, tr=self.reg.line_rate)
        self.lfsr = cfg.lfsr.seed
        self.cycle = 0
        self.cuts = self.byte_cycles = self.timer_cycles = self.guards = 0
        self.log: list = []     # (cycle, action, fb or None, b_stage, t_stage, guard fired)

    def _draw(self) -> int:
        self.lfsr, r = self.cfg.lfsr.draw(self.lfsr, self.cfg.draw_bits)
        return r

    def _reload(self, lo, span, half: bool, r: int) -> int:
        k = int(half)
        return lo[k] + ((span[k] * r) >> self.cfg.draw_bits)

    def _increase(self, action: str):
        s, reg = self.state, self.reg
        guard = bool(s.fresh and reg.tr_guard and s.tr > 10 * s.cr)
        if guard:
            s.tr >>= 3
            self.guards += 1
        s.fresh = 0
        F = reg.threshold
        if s.b_stage <= F and s.t_stage <= F:
            pass                                        # fast recovery: F cycles
        elif s.b_stage > F and s.t_stage > F:
            s.tr += (min(s.b_stage, s.t_stage) - F) * reg.hai_rate
        else:
            s.tr += reg.ai_rate
        s.tr = min(s.tr, reg.line_rate)
        s.cr = min((s.cr + s.tr) >> 1, reg.line_rate)
        self.log.append((self.cycle, action, None, s.b_stage, s.t_stage, guard))

    def _cut(self, fb: int):
        s, reg = self.state, self.reg
        new = s.cr - ((s.cr * fb) >> reg.gd_shift)
        new = max(new, (s.cr * reg.min_dec_fac) >> self.mdf_frac, reg.min_rate)
        s.tr, s.cr = s.cr, new
        s.b_stage = s.t_stage = 0
        r = self._draw()
        s.bc = self._reload(reg.byte_lo, reg.byte_span, False, r)
        s.t_cnt = self._reload(reg.time_lo, reg.time_span, False, r)
        s.active = s.fresh = 1
        self.cuts += 1
        self.log.append((self.cycle, "cut", fb, 0, 0, False))

    def _timer_tick(self, blocked: bool):
        s, reg = self.state, self.reg
        if not s.active:
            return
        if s.t_cnt > 1:
            s.t_cnt -= 1
        elif not blocked:
            s.t_stage = min(s.t_stage + 1, self.stage_max)
            s.t_cnt = self._reload(reg.time_lo, reg.time_span, s.t_stage >= reg.threshold,
                                   self._draw())
            self.timer_cycles += 1
            self._increase("timer")

    def step(self, ev) -> QcnRpState:
        s, reg = self.state, self.reg
        if isinstance(ev, QcnCnm):
            self._cut(ev.fb)
        elif s.active and ev.nbytes >= s.bc:
            s.b_stage = min(s.b_stage + 1, self.stage_max)
            s.bc = self._reload(reg.byte_lo, reg.byte_span, s.b_stage >= reg.threshold,
                                self._draw())
            self.byte_cycles += 1
            self._increase("byte")
            self._timer_tick(blocked=True)
        else:
            if s.active:
                s.bc -= ev.nbytes
            self._timer_tick(blocked=False)
        self.cycle += 1
        return s

    def idle(self, n: int) -> QcnRpState:
        """``n`` cycles without an event (skips straight to each timer expiry)."""
        s = self.state
        while n > 0:
            if not s.active:
                self.cycle += n
                return s
            k = min(n, s.t_cnt - 1)     # cycles of plain counting
            s.t_cnt -= k
            self.cycle += k
            n -= k
            if n:
                self._timer_tick(blocked=False)
                self.cycle += 1
                n -= 1
        return s
