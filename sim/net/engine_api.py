"""The interface between a host and a flow's congestion engine, and its golden implementations.

The split is ns-3's between a TCP socket and its ``TcpCongestionOps``: the **transport** (the
packet numbering, go-back-N, the retransmission and delayed-ACK timers where the engine has
none, the ACK policy, the NIC queue) stays in the host endpoints (:mod:`sim.net.algos`); the
**congestion engine** -- the block the project builds in RTL -- sits behind one of the typed
protocols below.  Every input is stamped with the engine-clock cycle at which it reaches the
engine (``sim.now // net.clk_ps``, never decreasing), so that a cycle-accurate implementation (a
Verilated RTL harness) can run the idle cycles in between and take the event at the same edge
as the golden model; every engine says when it next needs the host without a new input
(:meth:`Engine.next_wakeup`), so that idle stretches can be skipped; and every engine gives a
:meth:`Engine.snapshot` of its registers (for traces and for comparing two implementations).

Implementations (an algorithm's :attr:`sim.net.algos.AlgorithmSpec.engines`, keyed by name):

* ``"golden"``: the bit-exact golden models of :mod:`sim.models` (the reference the RTL is
  checked against), wrapped where their calls differ: :class:`GoldenRateEngine` for the DCQCN
  and QCN reaction points; :class:`GoldenLdcpSender` / :class:`GoldenLdcpReceiver` (the LDCP
  window + transport cycle models);
* ``"fast"``: :class:`FastLdcpSender` / :class:`FastLdcpReceiver`, LDCP's transaction-level
  twins (:mod:`sim.models.ldcp_transport_fast`), identical results to the cycle models (checked
  by ``tests/test_ldcp_fast.py``) and faster; the default for LDCP;
* ``"rtl"``: the Verilated RTL (:mod:`sim.rtl.engines`, built and driven through
  :mod:`sim.rtl.bridge`): :func:`dcqcn_rp_rtl_engine` (DCQCN, L3QCN hosts),
  :func:`qcn_rp_rtl_engine`, :func:`ldcp_sender_rtl_engine` / :func:`ldcp_receiver_rtl_engine`
  (:mod:`sim.rtl.ldcp`); the same protocol (advance to the event's cycle, drive the
  event for one edge, read the outputs);
* ``"engine"`` / ``"engine-rtl"``: ONE multi-flow engine per NIC for every flow of the host
  (:func:`dcqcn_nic_engine`, :func:`qcn_nic_engine`; :mod:`sim.rtl.engine_host`), its golden
  model or its Verilated RTL, with the engine's own timing (pipeline, timer wheel).

An algorithm without an engine of the kind asked for is refused with one line
(:func:`check_engine`).

A notification point (DCQCN's receiver NP, L3QCN's switch NP) is :class:`CnpPacer`, on the
golden :class:`sim.models.dcqcn_np.NpModel`.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Protocol, runtime_checkable

from hw.nic.dcqcn_np_config import DcqcnNpConfig
from sim.models import dcqcn as dcqcn_model
from sim.models import qcn as qcn_model
from sim.models.dcqcn_np import NpModel
from sim.models.ldcp_transport import (
    _TX_SAVED,
    LdcpReceiverModel,
    LdcpSenderModel,
    RxPacket,
    TAck,
    TxPacket,
)
from sim.models.ldcp_transport_fast import FastLdcpReceiverModel, FastLdcpSenderModel

__all__ = [
    "Engine", "RateEngine", "WindowSenderEngine", "WindowReceiverEngine", "NotificationPoint",
    "GoldenRateEngine", "GoldenLdcpSender", "GoldenLdcpReceiver", "FastLdcpSender",
    "FastLdcpReceiver", "CnpPacer", "dcqcn_rp_engine", "qcn_rp_engine", "dcqcn_rp_rtl_engine",
    "qcn_rp_rtl_engine", "ldcp_sender_rtl_engine", "ldcp_receiver_rtl_engine", "check_engine",
    "dcqcn_nic_engine", "qcn_nic_engine",
]


# --------------------------------------------------------------------------------------------
# The protocols
# --------------------------------------------------------------------------------------------


@runtime_checkable
class Engine(Protocol):
    """What every congestion engine has.  Cycles are the engine clock's (``net.clk_ps``) and
    never decrease from one call to the next."""

    def advance(self, cycle: int) -> None:
        """Run the cycles up to ``cycle`` with no input (timers may fire inside)."""

    def next_wakeup(self) -> int | None:
        """The next cycle at which the engine has an output for the host with no new input (a
        packet to release, a timer's ACK), or None: nothing until the next input."""

    def snapshot(self) -> dict:
        """The engine's registers now (plain ints/bools), for traces and differential runs."""


@runtime_checkable
class RateEngine(Engine, Protocol):
    """A reaction point (DCQCN RP, QCN RP): the host's rate limiter paces the flow at
    :meth:`rate`, read at each release.  Inputs: a transmitted packet, a congestion
    notification (a CNP; a CNM with its quantized feedback)."""

    def on_tx(self, cycle: int, nbytes: int) -> None:
        """A packet of ``nbytes`` bytes leaves at ``cycle`` (the byte counter's input)."""

    def on_notification(self, cycle: int, feedback: int) -> None:
        """A congestion notification arrives at ``cycle`` (``feedback``: a CNM's quantized
        Fb; 0 for a CNP)."""

    def rate(self) -> int:
        """The current-rate register (the rate limiter's input)."""


@runtime_checkable
class WindowSenderEngine(Engine, Protocol):
    """A window engine with its transport in hardware (LDCP): it owns the sequence space, the
    window, go-back-N and the timeout; the host offers it the NIC and feeds it ACKs/NAKs."""

    done: bool
    cw: int

    def start_message(self, cycle: int, length: int) -> None:
        """A message of ``length`` bytes is posted at ``cycle``."""

    def on_ack(self, cycle: int, ack: TAck) -> None:
        """An ACK or NAK arrives at ``cycle``."""

    def release(self, cycle: int) -> TxPacket | None:
        """The packet the engine offers at ``cycle`` (taken by the host), or None."""


@runtime_checkable
class WindowReceiverEngine(Protocol):
    """The receiving side of a transport in hardware (LDCP): in-order delivery, ACK/NAK
    generation, the delayed-ACK flush timer.  Delivered segments collect in ``delivered``."""

    delivered: list

    def receive(self, cycle: int, p: RxPacket) -> list[TAck]:
        """A data packet at ``cycle``; the ACKs/NAKs to send."""

    def poll(self, cycle: int) -> list[TAck]:
        """The timer's wake-up at ``cycle``; the ACKs to send."""

    def next_wakeup(self) -> int | None:
        """The next cycle at which :meth:`poll` has something to send, or None."""


@runtime_checkable
class NotificationPoint(Protocol):
    """CNP pacing (DCQCN's NP, L3QCN's switch NP): CE-marked packets in, CNPs out."""

    def on_ce(self, tick: int) -> bool:
        """A CE-marked packet of the flow at ``tick``: True if a CNP goes now; otherwise one may
        become due at :meth:`next_wakeup`."""

    def next_wakeup(self) -> int | None:
        """The tick at which the next CNP is due, or None."""

    def fire(self, tick: int) -> bool:
        """The wake-up at :meth:`next_wakeup`'s tick: True if the CNP goes now."""


# --------------------------------------------------------------------------------------------
# Golden implementations
# --------------------------------------------------------------------------------------------


class GoldenRateEngine:
    """A reaction point's golden model (:class:`sim.models.dcqcn.DcqcnRpModel`,
    :class:`sim.models.qcn.QcnRpModel`) behind :class:`RateEngine`: each input first runs the
    idle cycles up to its cycle (``model.idle``, which steps only the timer expiries), then is
    one ``model.step``.  ``model`` is public (traces wrap its methods)."""

    __slots__ = ("model", "_tx", "_signal", "_rate")

    def __init__(self, model, tx, signal, rate_field: str):
        self.model, self._tx, self._signal, self._rate = model, tx, signal, rate_field

    def advance(self, cycle: int) -> None:
        m = self.model
        if cycle > m.cycle:
            m.idle(cycle - m.cycle)

    def on_tx(self, cycle: int, nbytes: int) -> None:
        self.advance(cycle)
        self.model.step(self._tx(nbytes))

    def on_notification(self, cycle: int, feedback: int) -> None:
        self.advance(cycle)
        self.model.step(self._signal(feedback))

    def rate(self) -> int:
        return getattr(self.model.state, self._rate)

    def next_wakeup(self) -> int | None:
        return None     # the rate is read at the host's releases: no output of its own

    def snapshot(self) -> dict:
        return {"cycle": self.model.cycle, **asdict(self.model.state)}


def dcqcn_rp_engine(cfg) -> GoldenRateEngine:
    """The DCQCN reaction point (:class:`hw.nic.dcqcn_config.DcqcnRpConfig`)."""
    return GoldenRateEngine(dcqcn_model.DcqcnRpModel(cfg), dcqcn_model.DcqcnTx,
                            lambda fb: dcqcn_model.DcqcnCnp(), "rc")


def qcn_rp_engine(cfg) -> GoldenRateEngine:
    """The QCN reaction point (:class:`hw.nic.qcn_rp_config.QcnRpConfig`)."""
    return GoldenRateEngine(qcn_model.QcnRpModel(cfg), qcn_model.QcnTx, qcn_model.QcnCnm, "cr")


def dcqcn_rp_rtl_engine(cfg):
    """The DCQCN reaction point's Verilated RTL (:class:`hw.nic.dcqcn_rp.DcqcnRp`)."""
    # (imported here: Amaranth and Verilator are loaded only when the RTL is used)
    from sim.rtl.engines import dcqcn_rp_rtl
    return dcqcn_rp_rtl(cfg)


def qcn_rp_rtl_engine(cfg):
    """The QCN reaction point's Verilated RTL (:class:`hw.nic.qcn_rp.QcnRp`)."""
    from sim.rtl.engines import qcn_rp_rtl
    return qcn_rp_rtl(cfg)


def ldcp_sender_rtl_engine(cfg):
    """The LDCP sender's Verilated RTL (:class:`hw.nic.ldcp_transport.LdcpSender` on
    :class:`hw.nic.ldcp_window.LdcpWindow`), :class:`sim.rtl.ldcp.RtlLdcpSender`."""
    from sim.rtl.ldcp import RtlLdcpSender
    return RtlLdcpSender(cfg)


def ldcp_receiver_rtl_engine(cfg):
    """The LDCP receiver's Verilated RTL (:class:`hw.nic.ldcp_transport.LdcpReceiver`),
    :class:`sim.rtl.ldcp.RtlLdcpReceiver`."""
    from sim.rtl.ldcp import RtlLdcpReceiver
    return RtlLdcpReceiver(cfg)


def _nic_engine(algorithm: str, kind: str):
    """A per-NIC engine factory (:mod:`sim.rtl.engine_host`, imported at the first flow)."""
    def make(cfg, *, net, host, flow):
        from sim.rtl import engine_host
        factory = getattr(engine_host, f"{algorithm}_nic_engine")(kind)
        return factory(cfg, net=net, host=host, flow=flow)
    make.per_nic = True
    return make


def dcqcn_nic_engine(kind: str):
    """DCQCN flows on ONE multi-flow engine per NIC (``kind``: ``"engine"``, its golden model;
    ``"engine-rtl"``, its Verilated RTL): :mod:`sim.rtl.engine_host`."""
    return _nic_engine("dcqcn", kind)


def qcn_nic_engine(kind: str):
    """QCN flows on ONE multi-flow engine per NIC (:mod:`sim.rtl.engine_host`)."""
    return _nic_engine("qcn", kind)


def check_engine(algorithm: str, engines: dict, kind: str | None) -> None:
    """Raise :class:`hw.params.ConfigError` (one line) if ``kind`` is set and ``algorithm``
    (its :attr:`AlgorithmSpec.engines`) has no engine of that kind.  An algorithm without an
    engine table has only its built-in host model, which counts as ``"golden"``."""
    from hw.params import ConfigError

    if kind is None or kind in engines or (kind == "golden" and not engines):
        return
    have = ", ".join(engines) or "golden (its host model)"
    raise ConfigError(algorithm, "engine", kind,
                      f"one of its engines: {have} (no {kind!r} engine for {algorithm} yet)")


def _tx_snapshot(self) -> dict:
    """The transport's registers and the window engine's ``cw``."""
    return {**{n: getattr(self, n) for n in _TX_SAVED if not n.startswith("_")}, "cw": self.cw}


class GoldenLdcpSender(LdcpSenderModel):
    """The LDCP window + transport cycle model behind :class:`WindowSenderEngine`."""

    snapshot = _tx_snapshot


class FastLdcpSender(FastLdcpSenderModel):
    """LDCP's transaction-level sender twin behind :class:`WindowSenderEngine`."""

    snapshot = _tx_snapshot


def _rx_snapshot(self) -> dict:
    """The receiver's registers (``age``: 0 at event level) and its flush deadline."""
    return {**asdict(self.s), "deadline": self.deadline}


class GoldenLdcpReceiver(LdcpReceiverModel):
    """The LDCP receiver cycle model behind :class:`WindowReceiverEngine`."""

    snapshot = _rx_snapshot


class FastLdcpReceiver(FastLdcpReceiverModel):
    """LDCP's transaction-level receiver twin behind :class:`WindowReceiverEngine`."""

    snapshot = _rx_snapshot


# --------------------------------------------------------------------------------------------
# The notification point
# --------------------------------------------------------------------------------------------


def _np_config() -> DcqcnNpConfig:
    return DcqcnNpConfig(flows=1, rule="paper", timer_width=32, min_time_between_cnps=0)


_NP_CFG = None


class CnpPacer:
    """One flow's CNP pacing (the paper rule: at most one CNP per ``interval`` ticks; a CE
    inside the window makes one CNP due at the window's end) on the golden notification point,
    :class:`sim.models.dcqcn_np.NpModel` (one flow), driven event by event.

    The simulator's NP ticks at its time resolution (1 ps), not the engine clock, so that the
    pacing is exact for CE-marked packets that arrive between clock edges: ``interval`` is N in
    ticks, set through the model's ``n`` (above the RTL's register width; the model's rule does
    not depend on it).  Between events the model skips its idle ticks (:meth:`NpModel.skip`).
    A CE at time t is the model's event in its cycle t; the NP offers a CNP due in cycle t in
    cycle t + 1 (one register stage) and the host sends it at time t: a model cycle c's send
    is at time c - 1, so that the window of N ticks is the same in both (the model's next CNP
    is N cycles later, the host's N ps later).

    ``defer`` False (the simulator's L3QCN switch): a CE inside the window is dropped, not
    answered at the window's end (the pending flag is cleared at once)."""

    __slots__ = ("np", "defer")

    def __init__(self, interval: int, defer: bool = True):
        self.defer = defer
        global _NP_CFG
        if _NP_CFG is None:
            _NP_CFG = _np_config()
        self.np = NpModel(_NP_CFG)
        self.np.n = interval

    def _to(self, tick: int) -> None:
        np = self.np
        if tick > np.cycle:
            np.skip(tick - np.cycle)

    def on_ce(self, tick: int) -> bool:
        np = self.np
        self._to(tick)
        np.step(0, ready=False)             # the CE at tick: due (free) or pending (inside N)
        if np.due[0]:
            np.step(None, ready=True)       # offered and sent at the next model tick
            return True
        if not self.defer:
            np.pending[0] = 0
        return False

    def next_wakeup(self) -> int | None:
        np = self.np
        if not np.pending[0]:
            return None
        # the hold reaches 0 (due) in model tick cycle + hold - 1, the CNP goes in the next:
        # simulated time = that model tick - 1
        return np.cycle + np.hold[0] - 1

    def fire(self, tick: int) -> bool:
        np = self.np
        if not np.pending[0] and not np.due[0]:
            return False
        self._to(tick)
        np.step(None, ready=False)          # the hold runs out: due
        if np.due[0]:
            np.step(None, ready=True)
            return True
        return False
