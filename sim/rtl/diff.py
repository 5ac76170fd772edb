"""Differential runs: one scenario with the golden engines and with the Verilated RTL, and
where the two first diverge.

:func:`run_both` runs the scenario twice (``engine`` ``"golden"``, then ``"rtl"``), recording
every rate engine's snapshot after each of its inputs (a transmitted packet, a notification),
every window sender's after each of its inputs and releases (LDCP: a start, an ACK, a packet),
every window receiver's ACKs, and every switch marker's decisions (keyed ``"switch <name>"``,
in the log's :attr:`EngineLog.markers`).
:func:`first_divergence` names the first difference: in the engines' logs, the earliest
``(cycle, flow)`` whose snapshots differ, and the field; else the first field of the two
:class:`sim.net.network.RunResult` that differs (a flow record, a counter, a series).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from sim.scenario import runner


@dataclass
class Divergence:
    where: str          # "engine" or the RunResult field
    flow: int | None
    cycle: int | None
    field: str
    golden: object
    rtl: object

    def __str__(self) -> str:
        at = ("" if self.flow is None else f"{self.flow}, cycle {self.cycle}, "
              if isinstance(self.flow, str) else f"flow {self.flow}, cycle {self.cycle}, ")
        return (f"first divergence ({self.where}): {at}{self.field}: golden {self.golden!r}, "
                f"rtl {self.rtl!r}")


class _Recorder:
    """A rate engine that logs ``(cycle, flow, input, snapshot after)`` for each input."""

    def __init__(self, engine, log: list, flow: int):
        self._e, self._log, self._flow = engine, log, flow

    def on_tx(self, cycle: int, nbytes: int) -> None:
        self._e.on_tx(cycle, nbytes)
        self._log.append((cycle, self._flow, "tx", self._e.snapshot()))

    def on_notification(self, cycle: int, feedback: int) -> None:
        self._e.on_notification(cycle, feedback)
        self._log.append((cycle, self._flow, "notification", self._e.snapshot()))

    def __getattr__(self, name):
        return getattr(self._e, name)


class _WindowRecorder:
    """A window sender engine (LDCP) that logs its inputs (a start, an ACK, a released packet)
    with its snapshot after each, and every next wake-up it reports."""

    def __init__(self, engine, log: list, flow: int):
        self._e, self._log, self._flow = engine, log, flow

    def start_message(self, cycle: int, length: int) -> None:
        self._e.start_message(cycle, length)
        self._log.append((cycle, self._flow, "start", self._e.snapshot()))

    def on_ack(self, cycle: int, ack) -> None:
        self._e.on_ack(cycle, ack)
        self._log.append((cycle, self._flow, "ack", self._e.snapshot()))

    def release(self, cycle: int):
        p = self._e.release(cycle)
        if p is not None:
            self._log.append((cycle, self._flow, "release", {"packet": p,
                                                             **self._e.snapshot()}))
        return p

    def next_wakeup(self):
        w = self._e.next_wakeup()
        self._log.append((self._e.cycle, self._flow, "wakeup", {"at": w}))
        return w

    def __getattr__(self, name):
        return getattr(self._e, name)


class _ReceiverRecorder:
    """A window receiver engine (LDCP) that logs each packet's and each poll's ACKs (the
    receivers' snapshots are not compared: the golden event model keeps no flush-timer age)."""

    def __init__(self, engine, log: list, flow: int):
        self._e, self._log, self._flow = engine, log, flow

    def receive(self, cycle: int, p):
        acks = self._e.receive(cycle, p)
        self._log.append((cycle, self._flow, "receive", {"acks": tuple(acks),
                                                         "wakeup": self._e.next_wakeup()}))
        return acks

    def poll(self, cycle: int):
        acks = self._e.poll(cycle)
        if acks:
            self._log.append((cycle, self._flow, "poll", {"acks": tuple(acks)}))
        return acks

    def __getattr__(self, name):
        return getattr(self._e, name)


class _MarkerRecorder:
    """A switch's marker (golden or RTL) that logs each descriptor with its decision, under
    the key ``"switch <name>"`` (in place of a flow id)."""

    def __init__(self, marker, log: list, net, name: str):
        self._m, self._log, self._net, self._key = marker, log, net, f"switch {name}"

    def step(self, d):
        out = self._m.step(d)
        self._log.append((self._net.sim.now // self._net.clk_ps, self._key,
                          f"{d.op.name.lower()} port {d.port} prio {d.prio}",
                          {"length": d.length, "ecn_in": d.ecn, "drop": out.drop,
                           "reason": out.reason, "marked": out.marked, "ecn": out.ecn,
                           "qlen": out.qlen}))
        return out

    def __getattr__(self, name):
        return getattr(self._m, name)


class EngineLog(list):
    """The engines' log (``(cycle, flow, input, snapshot)`` entries) with the switch markers'
    log beside it (:attr:`markers`, entries keyed ``"switch <name>"``), so that the engines'
    entries stay engine snapshots only."""

    def __init__(self):
        super().__init__()
        self.markers: list = []


def _recorded(net, log: list) -> None:
    """Put a :class:`_Recorder` around every sender's rate engine, a :class:`_WindowRecorder`
    around every window sender engine and a :class:`_ReceiverRecorder` around every window
    receiver engine, and a :class:`_MarkerRecorder` around every switch's marker."""
    for sw in net.switches:
        if sw.marker is not None:
            sw.marker = _MarkerRecorder(sw.marker, getattr(log, "markers", log), net,
                                        sw.name)
            for p in sw.ports:
                p.marker = sw.marker
    for host in net.hosts.values():
        for fid, sender in host.senders.items():
            e = getattr(sender, "engine", None)
            if e is not None and hasattr(e, "on_notification"):
                sender.engine = _Recorder(e, log, fid)
            m = getattr(sender, "model", None)
            if m is not None and hasattr(m, "on_ack") and hasattr(m, "release"):
                sender.model = _WindowRecorder(m, log, fid)
        for fid, receiver in host.receivers.items():
            m = getattr(receiver, "model", None)
            if m is not None and hasattr(m, "receive") and hasattr(m, "poll"):
                receiver.model = _ReceiverRecorder(m, log, fid)


def run_logged(scn, algorithm: str, engine: str, record: bool = True):
    """``(RunResult, engine log)`` of ``scn`` with the engine kind ``engine``."""
    from dataclasses import replace
    net, _, _ = runner.build(replace(scn, engine=engine), algorithm)
    log = EngineLog()
    if record:
        _recorded(net, log)
    net.run(scn.duration_ps)
    return net.result(), log


def _order(d: Divergence):
    return (d.cycle, isinstance(d.flow, str), str(d.flow) if isinstance(d.flow, str) else d.flow)


def first_divergence(golden, rtl, glog=(), rlog=()) -> Divergence | None:
    """The first difference between two runs (results and engine logs), or None."""
    # the engines' logs: per flow in order; the earliest cycle at which any flow differs
    best = None
    by_flow: dict = {}
    for tag, log in (("g", [*glog, *getattr(glog, "markers", ())]),
                     ("r", [*rlog, *getattr(rlog, "markers", ())])):
        for cycle, fid, kind, snap in log:
            by_flow.setdefault(fid, {"g": [], "r": []})[tag].append((cycle, kind, snap))
    for fid, logs in by_flow.items():
        g, r = logs["g"], logs["r"]
        for i in range(max(len(g), len(r))):
            a = g[i] if i < len(g) else None
            b = r[i] if i < len(r) else None
            if a == b:
                continue
            cycle = min(x[0] for x in (a, b) if x is not None)
            where = "marker" if isinstance(fid, str) else "engine"
            if a is None or b is None or a[:2] != b[:2]:
                d = Divergence(where, fid, cycle, "input", a and a[:2], b and b[:2])
            else:
                f = next(k for k in a[2] if a[2][k] != b[2].get(k))
                d = Divergence(where, fid, cycle, f"{b[1]} -> {f}", a[2][f], b[2].get(f))
            # (a marker's key is a string: at one cycle, flows before switches)
            if best is None or _order(d) < _order(best):
                best = d
            break
    if best is not None:
        return best
    for f in fields(golden):
        a, b = getattr(golden, f.name), getattr(rtl, f.name)
        if a == b:
            continue
        if isinstance(a, list) and isinstance(b, list):
            for i, (x, y) in enumerate(zip(a, b, strict=False)):
                if x != y:
                    return Divergence(f.name, getattr(x, "flow_id", None), None,
                                      f"{f.name}[{i}]", x, y)
        if isinstance(a, dict) and isinstance(b, dict):
            for k in sorted(set(a) | set(b), key=str):
                if a.get(k) != b.get(k):
                    return Divergence(f.name, None, None, f"{f.name}[{k!r}]", a.get(k),
                                      b.get(k))
        return Divergence(f.name, None, None, f.name, a, b)
    return None


def run_both(scn, algorithm: str, record: bool = True):
    """``(golden RunResult, rtl RunResult, Divergence or None)``."""
    g, glog = run_logged(scn, algorithm, "golden", record)
    r, rlog = run_logged(scn, algorithm, "rtl", record)
    return g, r, first_divergence(g, r, glog, rlog)
