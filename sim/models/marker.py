"""Bit-exact golden model of the egress congestion point (queue occupancy + WRED/ECN marker).

:class:`MarkerModel` takes the descriptors the RTL takes, in the same order, and returns the
decision the RTL must produce for each, with the same LFSR draws, the same integer comparisons
and the same saturating counters.  Register writes are applied between descriptors, exactly as
the RTL applies them (it drains its pipeline before accepting a write).

Decision rule for one descriptor (``docs/switch-marker.md`` has the rationale):

1. Draw ``r`` (``draw_bits`` bits) from the LFSR: one draw per descriptor, whatever it is.
2. Port or priority outside the configuration: rejected (``BAD_QUEUE``), nothing changes.
3. Enqueue of ``len`` bytes to a queue holding ``q``: dropped ``QUEUE_FULL`` if
   ``q + len > buf_max``, else ``POOL_FULL`` if ``shared + len > shared_buffer``, else (LDCP
   profile) ``NOT_ECT_AT_K`` if the packet is Not-ECT and ``q >= K`` (``>`` under ``gt``);
   otherwise admitted and the queue grows by ``len``.
   Dequeue: rejected (``UNDERFLOW``) if ``len > q``, else the queue shrinks by ``len``.
4. ECN marking of an admitted ECT packet at the sampling point (enqueue: ``q`` before the packet;
   dequeue: ``q`` after removing it): mark if ``q >= K_max``, else, inside the ramp, if
   ``r * (K_max - K_min) < P_max_q * (q - K_min)``.  That is the ramp probability without a
   division: ``P(mark) = ceil(P_max_q (q - K_min) / (K_max - K_min)) / 2**draw_bits``.
"""

from __future__ import annotations

from dataclasses import dataclass

from hw.layouts import (
    Compare,
    DropReason,
    Ecn,
    LayoutCodec,
    Profile,
    QueueOp,
    SamplePoint,
    marker_decision_layout,
    marker_descriptor_layout,
)
from hw.switch.marker_config import COUNTER_MAX, MarkerConfig, MarkerReg

__all__ = ["Descriptor", "Decision", "MarkerModel", "pack_descriptor", "unpack_decision"]

# register codes of the modes (CTRL holds plain codes: software may write any bit pattern)
_PROFILE_LDCP, _PROFILE_DCTCP = Profile.LDCP.value, Profile.DCTCP.value
_COMPARE_GE = Compare.GE.value
_SAMPLE_ENQUEUE, _SAMPLE_DEQUEUE = SamplePoint.ENQUEUE.value, SamplePoint.DEQUEUE.value


@dataclass(frozen=True)
class Descriptor:
    op: QueueOp
    port: int
    prio: int
    length: int
    ecn: Ecn

    @classmethod
    def enqueue(cls, length: int, ecn: Ecn = Ecn.ECT0, port: int = 0, prio: int = 0):
        return cls(QueueOp.ENQUEUE, port, prio, length, ecn)

    @classmethod
    def dequeue(cls, length: int, ecn: Ecn = Ecn.ECT0, port: int = 0, prio: int = 0):
        return cls(QueueOp.DEQUEUE, port, prio, length, ecn)


@dataclass(frozen=True)
class Decision:
    op: QueueOp
    port: int
    prio: int
    length: int
    drop: bool
    reason: DropReason
    ecn: Ecn
    marked: bool
    qlen: int


_codecs: dict = {}


def _codec(kind: str, cfg: MarkerConfig) -> LayoutCodec:
    key = (kind, cfg.port_width, cfg.prio_width, cfg.len_width, cfg.occ_width)
    if key not in _codecs:
        layout = (marker_descriptor_layout if kind == "desc" else marker_decision_layout)(cfg)
        _codecs[key] = LayoutCodec(layout)
    return _codecs[key]


def pack_descriptor(cfg: MarkerConfig, d: Descriptor) -> int:
    """Pack through :func:`hw.layouts.marker_descriptor_layout`; raises if a field does not fit."""
    return _codec("desc", cfg).pack({"op": d.op, "port": d.port, "prio": d.prio,
                                     "length": d.length, "ecn": d.ecn})


def unpack_decision(cfg: MarkerConfig, bits: int) -> Decision:
    """Unpack through :func:`hw.layouts.marker_decision_layout`."""
    v = _codec("decision", cfg).unpack(bits)
    return Decision(op=v["op"], port=v["port"], prio=v["prio"], length=v["length"],
                    drop=bool(v["drop"]), reason=v["reason"], ecn=v["ecn"],
                    marked=bool(v["marked"]), qlen=v["qlen"])


class MarkerModel:
    """Golden model of :class:`hw.switch.marker.EgressMarker` for one :class:`MarkerConfig`."""

    def __init__(self, cfg: MarkerConfig):
        self.cfg = cfg
        r = cfg.registers()
        self.profile, self.compare, self.sample_at = r.profile, r.compare, r.sample_at
        self.k_min, self.k_max, self.p_max = r.k_min, r.k_max, r.p_max
        self.k_drop, self.buf_max, self.shared_buffer = r.k_drop, r.buf_max, r.shared_buffer
        self.occ = [0] * cfg.queues
        self.shared = 0
        self.lfsr_state = cfg.lfsr.seed
        self.counters = {reg: 0 for reg in MarkerReg.counters()}
        self._csr = None     # the register file, made on first use (the network sim needs none)

    # -- helpers ------------------------------------------------------------------------------
    def _at_or_above(self, x: int, k: int) -> bool:
        return x >= k if self.compare == _COMPARE_GE else x > k

    def _count(self, reg: MarkerReg) -> None:
        self.counters[reg] = min(self.counters[reg] + 1, COUNTER_MAX)

    def mark_rule(self, q: int, r: int) -> bool:
        """The marking decision for an ECT packet sampled at queue ``q`` with draw ``r``."""
        if self.profile == _PROFILE_DCTCP:
            return self._at_or_above(q, self.k_max)
        if self._at_or_above(q, self.k_max):
            return True
        if self._at_or_above(q, self.k_min):
            return r * (self.k_max - self.k_min) < self.p_max * (q - self.k_min)
        return False

    def queue(self, port: int = 0, prio: int = 0) -> int:
        return self.occ[port * self.cfg.priorities + prio]

    # -- one descriptor -----------------------------------------------------------------------
    def step(self, d: Descriptor) -> Decision:
        cfg = self.cfg
        self.lfsr_state, r = cfg.lfsr.draw(self.lfsr_state, cfg.draw_bits)

        def decision(reason, qlen, marked=False):
            ecn = Ecn.CE if marked else d.ecn
            return Decision(op=d.op, port=d.port, prio=d.prio, length=d.length,
                            drop=reason != DropReason.NONE, reason=reason, ecn=ecn,
                            marked=marked, qlen=qlen)

        if d.port >= cfg.ports or d.prio >= cfg.priorities:
            self._count(MarkerReg.CNT_MALFORMED)
            return decision(DropReason.BAD_QUEUE, 0)

        idx = d.port * cfg.priorities + d.prio
        q = self.occ[idx]
        if d.op == QueueOp.ENQUEUE:
            if q + d.length > self.buf_max:
                reason = DropReason.QUEUE_FULL
            elif self.shared + d.length > self.shared_buffer:
                reason = DropReason.POOL_FULL
            elif (self.profile == _PROFILE_LDCP and d.ecn == Ecn.NOT_ECT
                  and self._at_or_above(q, self.k_drop)):
                reason = DropReason.NOT_ECT_AT_K
            else:
                reason = DropReason.NONE
            if reason != DropReason.NONE:
                self._count({DropReason.QUEUE_FULL: MarkerReg.CNT_DROP_QUEUE_FULL,
                             DropReason.POOL_FULL: MarkerReg.CNT_DROP_POOL_FULL,
                             DropReason.NOT_ECT_AT_K: MarkerReg.CNT_DROP_NOT_ECT}[reason])
                return decision(reason, q)
            self.occ[idx] = q + d.length
            self.shared += d.length
            self._count(MarkerReg.CNT_ENQUEUED)
            sampled, eligible = q, self.sample_at == _SAMPLE_ENQUEUE
        else:
            if d.length > q:
                self._count(MarkerReg.CNT_MALFORMED)
                return decision(DropReason.UNDERFLOW, q)
            self.occ[idx] = q - d.length
            self.shared -= d.length
            self._count(MarkerReg.CNT_DEQUEUED)
            sampled, eligible = q - d.length, self.sample_at == _SAMPLE_DEQUEUE

        marked = (eligible and d.ecn in (Ecn.ECT0, Ecn.ECT1) and self.mark_rule(sampled, r))
        if marked:
            self._count(MarkerReg.CNT_MARKED)
        return decision(DropReason.NONE, sampled, marked)

    # -- registers (the map declared once in MarkerConfig.register_map) ------------------------
    def _register_file(self):
        if self._csr is None:
            regmap = self.cfg.register_map()
            live = {"SHARED_OCC": lambda: self.shared,
                    "CTRL": lambda: regmap["CTRL"].pack(profile=self.profile,
                                                        compare=self.compare,
                                                        sample_at=self.sample_at)}
            for name in ("K_MIN", "K_MAX", "P_MAX", "K_DROP", "BUF_MAX", "SHARED_BUFFER"):
                live[name] = (lambda n: lambda: getattr(self, n))(name.lower())
            for reg in self.counters:
                live[reg.name] = (lambda r: lambda: self.counters[r])(reg)
            self._csr = regmap.model(live)
        return self._csr

    def write(self, addr: int, value: int) -> None:
        """A register write, as the RTL applies it (bits above a register's fields ignored;
        read-only and unmapped words ignored)."""
        csr = self._register_file()
        hit = csr.write(addr, value)
        if hit is None:
            return
        name = hit[0].name
        if name == "CTRL":
            self.profile = csr.field("CTRL", "profile")
            self.compare = csr.field("CTRL", "compare")
            self.sample_at = csr.field("CTRL", "sample_at")
        elif name.startswith("CNT_"):
            self.counters[MarkerReg[name]] = csr[name]
        else:
            setattr(self, name.lower(), csr[name])

    def read(self, addr: int) -> int:
        """The word the RTL reads back at ``addr`` (0 where nothing is mapped)."""
        return self._register_file().read(addr)

    # -- exact statistics of the integer rule --------------------------------------------------
    def mark_probability(self, q: int) -> float:
        """Exact probability that the integer rule marks an ECT packet sampled at ``q``."""
        n = 1 << self.cfg.draw_bits
        if self.profile == _PROFILE_DCTCP or self._at_or_above(q, self.k_max):
            return float(self.mark_rule(q, 0))
        if not self._at_or_above(q, self.k_min):
            return 0.0
        span = self.k_max - self.k_min
        # r * span < P * d  <=>  r < ceil(P * d / span)
        hits = min(n, -(-self.p_max * (q - self.k_min) // span))
        return hits / n
