"""The ``"rtl"`` congestion engines: the Verilated reaction points behind
:class:`sim.net.engine_api.RateEngine`, one Verilated instance per flow.

The timing is the golden engine's (:class:`sim.net.engine_api.GoldenRateEngine`): the engine
holds the cycle it has reached (after the reset: cycle 0, the reset state); an input stamped
with cycle ``c`` first runs the idle cycles up to ``c``, then drives the event for one clock
edge (the RTL's ``event`` stream is always ready), so the state after the edge is the
golden model's after ``step(ev)`` in cycle ``c``.  The rate is the ``rate`` output port.

Idle stretches: a quiet reaction point (DCQCN: every timer counter at 0; QCN: no CNM yet, the
timer not running) changes no register without an input, so its idle cycles are skipped, not
run (before a flow's first congestion notification, most of a run).  Everything else runs
cycle by cycle in C++ (:func:`sim.rtl.bridge.RtlInstance.step`).

Builds: one per configuration (the knobs are the registers' reset values), cached on disk
(:mod:`sim.rtl.bridge`) and in the process (:func:`rtl_model`).  ``PATCHES`` maps a top name
to a function of the Verilog text applied before the build: a test plants an RTL bug there.
"""

from __future__ import annotations

import re
from dataclasses import asdict

from hw.layouts import qcn_rp_event_layout, qcn_rp_state_layout
from sim.models.dcqcn import DcqcnCnp, DcqcnRpCodec, DcqcnTx
from sim.models.qcn import QcnCnm, QcnRpCodec, QcnTx

from .bridge import Port, RtlModel

__all__ = ["RtlRateEngine", "dcqcn_rp_rtl", "qcn_rp_rtl", "rtl_model", "PATCHES",
           "AFTER_RESET"]

#: top name -> Verilog text -> Verilog text (planted bugs in tests; empty in a normal run)
PATCHES: dict = {}
#: top name -> f(instance, cfg), called after each instance's reset: register writes through
#: the RTL's csr port (a test plants a wrong knob there: no rebuild)
AFTER_RESET: dict = {}
#: skip the idle cycles of a quiet reaction point (False: run every cycle, to check that the
#: RTL really holds its state there: tests/test_rtl_in_loop.py)
SKIP_QUIET = True
_MODELS: dict = {}


def rtl_model(top: str, cfg, make, prepare=None, extra_ports=()) -> RtlModel:
    """The built model of ``make(cfg)`` as top ``top`` (one per configuration and patch);
    ``prepare``: a transformation of the exported Verilog that is part of the design (before
    any planted bug of :data:`PATCHES`) and ``extra_ports`` the ports it adds."""
    bug = PATCHES.get(top)
    key = (top, cfg, bug, prepare)
    m = _MODELS.get(key)
    if m is None:
        def patch(text):
            text = prepare(text) if prepare is not None else text
            return bug(text) if bug is not None else text
        m = _MODELS[key] = RtlModel(make(cfg), top, patch=patch, extra_ports=extra_ports)
    return m


class RtlRateEngine:
    """A reaction point's Verilated RTL behind :class:`sim.net.engine_api.RateEngine`.

    ``view``: the :class:`_RpView` of the instance (its ``model``: traces wrap its ``step``,
    as they wrap the golden model's); ``quiet(state_bits)``: the state holds without inputs.
    ``tx(nbytes)`` / ``signal(feedback)``: the golden model's event objects (a traced flow's
    view steps with them); ``pack_tx`` / ``pack_signal``: the same events' payload bits
    directly (the untraced path builds no objects)."""

    __slots__ = ("model", "cycle", "_tx", "_signal", "_quiet", "_live", "_valid", "_payload",
                 "_rate", "_state", "_pack_tx", "_pack_signal", "lib", "h", "rtl")

    def __init__(self, view, tx, signal, quiet, pack_tx, pack_signal):
        self.model = view
        self.rtl, self.lib, self.h = view.rtl, view.rtl.lib, view.rtl.h
        self._tx, self._signal, self._quiet = tx, signal, quiet
        self._pack_tx, self._pack_signal = pack_tx, pack_signal
        self._valid, self._payload = view.valid, view.payload
        self._rate, self._state = view.rate_port, view.state_port
        self.cycle = 0              # the cycle the RTL has reached (0: the reset state)
        self._live = False          # the state may change without input (checked lazily)

    def _idle(self, n: int) -> int:
        """The idle cycles of ``n`` that must run (0 while the state is quiet)."""
        if n <= 0:
            return 0
        if not SKIP_QUIET:
            return n
        if not self._live:
            return 0
        if self._quiet(self.rtl.peek(self._state)):
            self._live = False
            return 0
        return n

    def _traced(self) -> bool:
        # (a trace wrapped the view's method, as it wraps the golden model's)
        return self.model.TRACED in self.model.__dict__

    def advance(self, cycle: int) -> None:
        n = self._idle(cycle - self.cycle)
        if n:
            if self._traced():
                self.model.idle(n)
            else:
                self.lib.cc_step(self.h, n)
        if cycle > self.cycle:
            self.cycle = self.model.cycle = cycle

    def _event(self, cycle: int, ev, bits: int) -> None:
        if ev is not None:                  # (traced: the view steps, timer by timer)
            self.advance(cycle)
            self.model.step(ev)
        else:
            n = self._idle(cycle - self.cycle)
            self.lib.cc_event(self.h, n, self._valid, self._payload, bits)
        self.cycle = self.model.cycle = max(cycle, self.cycle) + 1
        self._live = True

    def on_tx(self, cycle: int, nbytes: int) -> None:
        if self._traced():
            self._event(cycle, self._tx(nbytes), 0)
        else:
            self._event(cycle, None, self._pack_tx(nbytes))

    def on_notification(self, cycle: int, feedback: int) -> None:
        if self._traced():
            self._event(cycle, self._signal(feedback), 0)
        else:
            self._event(cycle, None, self._pack_signal(feedback))

    def rate(self) -> int:
        return self.lib.cc_peek64(self.h, self._rate)

    def next_wakeup(self) -> int | None:
        return None     # as the golden engine: the rate is read at the host's releases

    def snapshot(self) -> dict:
        return {"cycle": self.cycle, **asdict(self.model.state)}


class _RpView:
    """A Verilated reaction point seen as its golden model is by :mod:`sim.net.trace`:
    ``state`` (decoded from the ``state`` port), ``cycle`` (after the last step), ``cuts``
    (counted from the state: ``is_cut(before, after, ev)``), ``step(ev)`` (one cycle, with
    the golden event object or None) and ``idle(n)`` (timer expiry by expiry, each one a
    ``step``, so that a trace sees every change).  Used cycle by cycle only for traced flows."""

    TRACED = "step"         #: the method a trace wraps (sim.net.trace)

    def __init__(self, model: RtlModel, codec, timers, is_cut, cfg=None, pokes=()):
        self.rtl = model.instance()
        for port, value in pokes:       # inputs the reset loads (QCN: the LFSR seed)
            self.rtl.poke(port, value)
        self.rtl.reset(1)
        hook = AFTER_RESET.get(model.top)
        if hook is not None:
            hook(self.rtl, cfg)
        self.codec, self.timers, self.is_cut = codec, timers, is_cut
        self.valid, self.payload = model.port("event__valid"), model.port("event__payload")
        self.rate_port, self.state_port = model.port("rate"), model.port("state")
        self.cycle = 0
        self.cuts = 0

    @property
    def state(self):
        return self.codec.state(self.rtl.peek(self.state_port))

    def step(self, ev=None):
        before = self.state
        if ev is None:
            self.rtl.step(1)
        else:
            self.rtl.event(0, self.valid, self.payload, self.codec.event(ev))
        after = self.state
        if self.is_cut(before, after, ev):
            self.cuts += 1
        self.cycle += 1
        return after

    def idle(self, n: int):
        while n > 0:
            s = self.state
            live = [getattr(s, k) for k in self.timers if getattr(s, k)]
            skip = min(min(live) - 1 if live else n, n)
            if skip:
                if live or not SKIP_QUIET:
                    self.rtl.step(skip)
                self.cycle += skip
                n -= skip
            if n:
                self.step(None)
                n -= 1


# -- DCQCN ----------------------------------------------------------------------------------


def _dcqcn_quiet(codec: DcqcnRpCodec):
    spans = [(o, (1 << w) - 1) for n, o, w in codec.state_fields if n in ("a_cnt", "t_cnt",
                                                                           "d_cnt")]
    return lambda bits: not any((bits >> o) & mask for o, mask in spans)


def _dcqcn_cut(cfg):
    """Whether a DCQCN step was a cut, from the state before and after: every cut (and the
    first-CNP rate setting, which the golden model does not count) restarts the increase
    timer at T and the stages in fast recovery; a reload at T after an expiry comes with a
    stage above 0."""
    r = cfg.registers()

    def is_cut(s, n, ev):
        if n.t_cnt != r.t_cycles or (s.t_cnt == 1 and (n.t_stage or n.b_stage)):
            return False
        first_set = isinstance(ev, DcqcnCnp) and not s.active and r.first_rate != 0
        return not first_set
    return is_cut


def dcqcn_rp_rtl(cfg) -> RtlRateEngine:
    """The DCQCN reaction point :class:`hw.nic.dcqcn_rp.DcqcnRp` (``cfg``: its
    :class:`hw.nic.dcqcn_config.DcqcnRpConfig`), Verilated."""
    from hw.nic.dcqcn_rp import DcqcnRp

    codec = DcqcnRpCodec(cfg)
    view = _RpView(rtl_model("dcqcn_rp", cfg, DcqcnRp), codec, ("a_cnt", "t_cnt", "d_cnt"),
                   _dcqcn_cut(cfg), cfg)
    cnp, off = DcqcnCnp(), codec.bytes_off
    tx_bits, cnp_bits = codec.event(DcqcnTx(0)), codec.event(cnp)
    return RtlRateEngine(view, DcqcnTx, lambda fb: cnp, _dcqcn_quiet(codec),
                         lambda n: tx_bits | (n << off), lambda fb: cnp_bits)


# -- QCN ------------------------------------------------------------------------------------


class _QcnView(_RpView):
    """The QCN reaction point as :class:`sim.models.qcn.QcnRpModel` is seen by the trace: every
    cycle with an event or a timer expiry goes through ``_cycle(fb, tx)``; each CNM is a
    cut."""

    TRACED = "_cycle"

    def _cycle(self, fb, tx):
        if fb is not None:
            ev = QcnCnm(fb)
        elif tx is not None:
            ev = QcnTx(tx)
        else:
            ev = None
        if ev is None:
            self.rtl.step(1)
        else:
            self.rtl.event(0, self.valid, self.payload, self.codec.event(ev))
        self.cuts += fb is not None
        self.cycle += 1
        return self.state

    def step(self, ev):
        if isinstance(ev, QcnCnm):
            return self._cycle(ev.fb, None)
        return self._cycle(None, ev.nbytes)

    def idle(self, n: int):
        while n > 0:
            s = self.state
            if not s.active:
                if not SKIP_QUIET:
                    self.rtl.step(n)
                self.cycle += n
                return
            k = min(n, s.t_cnt - 1)     # plain counting
            self.rtl.step(k)
            self.cycle += k
            n -= k
            if n:
                self._cycle(None, None)
                n -= 1


_LFSR_TMP = re.compile(r"lfsr <= (\\\$\d+) ;")


def qcn_lfsr_port(width: int, seed: int, top: str = "qcn_rp"):
    """The transformation of the QCN reaction point's Verilog (exported with LFSR seed
    ``seed``) that makes its LFSR's reset value an input port, ``lfsr_seed``, so that one
    build serves every flow (each flow's seed differs: :meth:`sim.net.network.Network.seeded`).
    The power-up value becomes 0; the harness pokes the port, then resets (which loads it).
    ``top``: the module's name (the switch marker's LFSR, a register named ``lfsr`` too, is
    made a port the same way: :mod:`sim.rtl.marker`)."""
    const = f"{width}'d{seed};"

    def prepare(text: str) -> str:
        m = _LFSR_TMP.search(text)
        decl = f"reg [{width - 1}:0] lfsr = {const}"
        assign = f"{m.group(1)}  = {const}" if m else None
        if m is None or text.count(decl) != 1 or text.count(assign) != 1:
            raise RuntimeError(f"{top} Verilog: the lfsr register's reset was not found")
        text = text.replace(decl, f"reg [{width - 1}:0] lfsr = {width}'d0;")
        text = text.replace(assign, f"{m.group(1)}  = lfsr_seed;")
        text = re.sub(rf"module {top}\(", f"module {top}(lfsr_seed, ", text, count=1)
        return re.sub(rf"(module {top}\([^;]*;\n)", rf"\1  input [{width - 1}:0] lfsr_seed;\n",
                      text, count=1)
    return prepare


#: the seed the shared build is exported with (the flows' own seeds come in at the port)
_QCN_BUILD_SEED = 1


def _qcn_prepare(width: int):
    return _QCN_PREPARE.setdefault(width, qcn_lfsr_port(width, _QCN_BUILD_SEED))


_QCN_PREPARE: dict = {}


def qcn_rp_rtl(cfg) -> RtlRateEngine:
    """The QCN reaction point :class:`hw.nic.qcn_rp.QcnRp` (``cfg``: its
    :class:`hw.nic.qcn_rp_config.QcnRpConfig`), Verilated; one build for every flow (the LFSR
    seed is an input port, :func:`qcn_lfsr_port`)."""
    from dataclasses import replace

    from hw.nic.qcn_rp import QcnRp

    lfsr = cfg.lfsr
    build_cfg = cfg.replace(lfsr=replace(lfsr, seed=_QCN_BUILD_SEED))
    model = rtl_model("qcn_rp", build_cfg, QcnRp, _qcn_prepare(lfsr.width),
                      (Port("lfsr_seed", "in", lfsr.width),))
    codec = QcnRpCodec(cfg)
    view = _QcnView(model, codec, (), None, cfg, pokes=(("lfsr_seed", lfsr.seed),))
    active = dict(qcn_rp_state_layout(cfg))["active"].offset
    ev = dict(qcn_rp_event_layout(cfg))
    tx_bits, fb_off, n_off = codec.event(QcnTx(0)), ev["fb"].offset, ev["bytes"].offset
    cnm_bits = codec.event(QcnCnm(0))
    return RtlRateEngine(view, QcnTx, QcnCnm, lambda bits: not (bits >> active) & 1,
                         lambda n: tx_bits | (n << n_off), lambda fb: cnm_bits | (fb << fb_off))
