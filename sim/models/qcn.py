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

__all__ = ["CpFrame", "CpDecision", "CpModel", "CpCodec", "saturate_i16"]

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
