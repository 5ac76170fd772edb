"""Per-flow state traces of the tracked flows: what each flow's congestion engine did, and when.

For every tracked flow (``FlowSpec.track``, and every long-lived flow: the flows whose
throughput the network samples) :func:`attach` wraps the few methods of the flow's engine
(the golden model) that change its state, on that one object only: the wrapper calls the
method, then reads the engine's state and appends a row when something a trace shows changed.
Untracked flows are not touched, so tracing costs nothing for them; a wrapper only reads
state (no model call, no event scheduled), so a traced run is event for event the run without
tracing (``tests/test_traces.py`` checks it).

A row is ``(time_ps, flow, event, cwnd_pkts, rate_gbps, target_rate_gbps, alpha, rtt_us)``
(:data:`FIELDS` after the first three; None where the algorithm has no such state).  State
columns hold the value after the event on every row; ``rtt_us`` only on rows with a new RTT
sample.  Events:

- ``start``: the flow's initial state, at its start time;
- ``cut``: a multiplicative decrease (DCTCP's ECN cut, a DCQCN/QCN cut on a CNP/CNM, a Swift
  or TIMELY decrease, LDCP's window going down);
- ``increase``: the rate or window went up (DCQCN/QCN: a fast-recovery, additive or hyper
  increase; windows: growth on ACKs);
- ``alpha``: only alpha changed (DCQCN's alpha timer, DCTCP's per-window update);
- ``target``: only DCQCN/QCN's target rate changed;
- ``cnp`` / ``cnm``: a notification that did not cut (DCQCN's hold-off or periodic modes);
- ``fast_retransmit``, ``recovery`` (DCTCP NewReno's window changes in fast recovery),
  ``timeout``, ``nak`` (LDCP);
- ``rtt``: an RTT sample that changed nothing else.

Times: DCQCN and QCN rows carry the engine clock cycle at which the reaction point changed
(a timer's increase is stepped when the flow next wakes, but its row has the cycle it
happened at), the others the simulated time of the ACK, completion or timeout.  LDCP rows
are taken at ACK/NAK arrivals: the window the engine has reached then (its per-ACK update
commits a few cycles later and shows at the next ACK); a timeout is reported at the next
ACK.  Rows of one flow are in time order; :func:`rows` sorts all flows' rows by time.
"""

from __future__ import annotations

FIELDS = ("cwnd_pkts", "rate_gbps", "target_rate_gbps", "alpha", "rtt_us")
_CW, _RATE, _TARGET, _ALPHA, _RTT = range(5)


def rows(net) -> list[tuple]:
    """The network's trace rows sorted by time (stable: one flow's same-time rows keep their
    order)."""
    return sorted(net.trace_rows, key=lambda r: (r[0], r[1]))


def fields(net) -> tuple[str, ...]:
    """The columns of :data:`FIELDS` that the network's algorithm fills."""
    used = [False] * len(FIELDS)
    for r in net.trace_rows:
        for i, v in enumerate(r[3:]):
            if v is not None:
                used[i] = True
    return tuple(f for f, u in zip(FIELDS, used, strict=True) if u)


def attach(net, spec, sender) -> None:
    """Trace flow ``spec``'s ``sender`` (called by the network for tracked flows only)."""
    if type(getattr(sender, "engine", None)).__name__ == "NicFlowEngine":
        return      # a per-NIC engine (sim.rtl.engine_host): its state is not traced
    for cls, hook in _hooks():
        if isinstance(sender, cls):
            hook(net, spec, sender)
            return


def _hooks():
    from . import algorithms as a
    from . import swift, timely
    return ((a.DctcpSenderEndpoint, _dctcp), (a.DcqcnSenderEndpoint, _dcqcn),
            (a.QcnSenderEndpoint, _qcn), (a.LdcpSenderEndpoint, _ldcp),
            (timely.TimelySenderEndpoint, _timely), (swift.SwiftSenderEndpoint, _swift))


def _row(out, t, fid, event, cw=None, rate=None, target=None, alpha=None, rtt=None) -> None:
    out.append((t, fid, event, cw, rate, target, alpha, rtt))


def _wrap(obj, name, after) -> None:
    """Replace ``obj.name`` on this instance only (the class and every other flow's engine
    keep the plain method) by a call of it followed by ``after(result, *args)``, which reads
    the state and may append a row."""
    method = getattr(obj, name)

    def traced(*args):
        result = method(*args)
        after(result, *args)
        return result
    setattr(obj, name, traced)


# -- DCTCP ------------------------------------------------------------------------------------
def _dctcp(net, spec, sender):
    from sim.models.dctcp import ALPHA_ONE
    out, fid, sim, e = net.trace_rows, spec.flow_id, net.sim, sender.engine
    last = [e.cwnd, e.alpha, e.cuts, e.fast_retransmits]
    _row(out, spec.start_ps, fid, "start", e.cwnd, alpha=e.alpha / ALPHA_ONE)

    def note(event=None, rtt=None):
        cw, al = e.cwnd, e.alpha
        if event is None:
            if e.cuts != last[2]:
                event = "cut"
            elif e.fast_retransmits != last[3]:
                event = "fast_retransmit"
            elif cw != last[0]:
                event = "recovery" if e.in_recovery or cw < last[0] else "increase"
            elif al != last[1]:
                event = "alpha"
            elif rtt is not None:
                event = "rtt"
            else:
                return
        last[:] = [cw, al, e.cuts, e.fast_retransmits]
        _row(out, sim.now, fid, event, cw, alpha=al / ALPHA_ONE,
             rtt=None if rtt is None else rtt / 10**6)

    pending = [None]          # the RTT sample of the ACK being processed (rto.on_ack first)

    def rtt_sample(r, *args):
        pending[0] = r

    def acked(result, *args):
        r, pending[0] = pending[0], None
        note(rtt=r)

    _wrap(sender.rto, "on_ack", rtt_sample)
    _wrap(e, "on_ack", acked)
    _wrap(e, "on_timeout", lambda result: note("timeout"))


# -- DCQCN and QCN ----------------------------------------------------------------------------
def _dcqcn(net, spec, sender):
    from hw.nic.dcqcn_config import ALPHA_ONE, RATE_FRAC
    from sim.models.dcqcn import DcqcnCnp
    out, fid, clk, rp = net.trace_rows, spec.flow_id, net.clk_ps, sender.rp
    unit = (1 << RATE_FRAC) * 1000          # register units per Gb/s
    s = rp.state
    last = [s.rc, s.rt, s.alpha, rp.cuts]
    _row(out, spec.start_ps, fid, "start", rate=s.rc / unit, target=s.rt / unit,
         alpha=s.alpha / ALPHA_ONE)

    def stepped(state, ev=None):
        rc, rt, al = state.rc, state.rt, state.alpha
        cnp = isinstance(ev, DcqcnCnp)
        if rp.cuts != last[3]:
            event = "cut"
        elif cnp:
            event = "cnp"
        elif rc > last[0]:
            event = "increase"
        elif rc < last[0]:
            event = "cut"
        elif rt != last[1]:
            event = "target"
        elif al != last[2]:
            event = "alpha"
        else:
            return
        last[:] = [rc, rt, al, rp.cuts]
        _row(out, (rp.cycle - 1) * clk, fid, event, rate=rc / unit, target=rt / unit,
             alpha=al / ALPHA_ONE)

    _wrap(rp, "step", stepped)     # (idle() steps every expiry through self.step)


def _qcn(net, spec, sender):
    from hw.nic.qcn_rp_config import RATE_FRAC
    out, fid, clk, rp = net.trace_rows, spec.flow_id, net.clk_ps, sender.rp
    unit = (1 << RATE_FRAC) * 1000
    s = rp.state
    last = [s.cr, s.tr, rp.cuts]
    _row(out, spec.start_ps, fid, "start", rate=s.cr / unit, target=s.tr / unit)

    def cycled(state, fb, tx):
        cr, tr = state.cr, state.tr
        if rp.cuts != last[2]:
            event = "cut"
        elif fb is not None:
            event = "cnm"
        elif cr > last[0]:
            event = "increase"
        elif cr < last[0]:
            event = "cut"
        elif tr != last[1]:
            event = "target"
        else:
            return
        last[:] = [cr, tr, rp.cuts]
        _row(out, (rp.cycle - 1) * clk, fid, event, rate=cr / unit, target=tr / unit)

    _wrap(rp, "_cycle", cycled)    # (step() and idle() both go through self._cycle)


# -- LDCP -------------------------------------------------------------------------------------
def _ldcp(net, spec, sender):
    from hw.nic.ldcp_window_config import ONE

    from .packet import NAK
    out, fid, sim, m = net.trace_rows, spec.flow_id, net.sim, sender.model
    last = [m.cw, m.n_rtos]
    _row(out, spec.start_ps, fid, "start", m.cw / ONE)

    def controlled(result, pkt):
        cw = m.cw
        if m.n_rtos != last[1]:
            event = "timeout"
        elif pkt.kind == NAK:
            event = "nak"
        elif cw > last[0]:
            event = "increase"
        elif cw < last[0]:
            event = "cut"
        else:
            return
        last[:] = [cw, m.n_rtos]
        _row(out, sim.now, fid, event, cw / ONE)

    _wrap(sender, "on_control", controlled)


# -- delay-based: TIMELY and Swift ------------------------------------------------------------
def _timely(net, spec, sender):
    out, fid, sim, m = net.trace_rows, spec.flow_id, net.sim, sender.model
    us_per_cycle = net.clk_ps / 10**6
    last = [m.state.rate]
    _row(out, spec.start_ps, fid, "start", rate=m.state.rate / 1024_000)

    def completed(outcome, ev):
        rate = m.state.rate
        event = "increase" if rate > last[0] else "cut" if rate < last[0] else "rtt"
        last[0] = rate
        _row(out, sim.now, fid, event, rate=rate / 1024_000, rtt=outcome.rtt * us_per_cycle)

    _wrap(m, "complete", completed)


def _swift(net, spec, sender):
    from hw.nic.swift_config import CW_ONE
    out, fid, sim, m = net.trace_rows, spec.flow_id, net.sim, sender.model
    us_per_cycle = net.clk_ps / 10**6
    last = [m.state.cwnd]
    _row(out, spec.start_ps, fid, "start", m.state.cwnd / CW_ONE)

    def note(event, rtt=None):
        cw = m.state.cwnd
        if event is None:
            event = "increase" if cw > last[0] else "cut" if cw < last[0] else "rtt"
        last[0] = cw
        _row(out, sim.now, fid, event, cw / CW_ONE, rtt=rtt)

    _wrap(m, "on_ack", lambda state, ack: note(None, state.rtt * us_per_cycle))
    _wrap(m, "on_timeout", lambda state, now: note("timeout"))
    _wrap(m, "on_fast_recovery", lambda state, now: note("nak"))
