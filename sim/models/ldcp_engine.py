"""Golden model of the multi-flow LDCP window engine's datapath (:class:`hw.nic.ldcp_engine.
LdcpDatapath`), used by :class:`sim.models.flow_engine.FlowEngineModel` as the DCQCN, QCN and
pacer models are.

The window update is :func:`sim.models.ldcp_window.update` itself (the one-flow datapath's
model, no copy); the release timer is written from the RTL's docstring rules, in ints
(Python's exact ``divmod`` where the RTL has its restoring division).
:func:`phase_releases` is the independent reference of the timer: the one-flow phase
accumulator, cycle by cycle.
"""

from __future__ import annotations

from types import SimpleNamespace

from hw.nic.flow_datapath import EventKind
from hw.nic.ldcp_engine import LdcpDatapath
from hw.nic.ldcp_window_config import FRAC_BITS, ONE

from .flow_datapath import FlowDatapathModel, ModelOut, time_le_int
from .ldcp_window import update

__all__ = ["LdcpDatapathModel", "release_step", "phase_releases", "pack_wr", "unpack_wr",
           "LdcpAckMergeModel"]


def pack_wr(cw: int, rel: int) -> int:
    """The ``wr`` field (and the ``rate`` record's value): ``cw`` low 32 bits, ``rel`` above."""
    return cw | rel << 32


def unpack_wr(v: int) -> tuple[int, int]:
    return v & 0xFFFF_FFFF, v >> 32


def release_step(need: int, c: int, j_max: int) -> tuple[int, int]:
    """``(j, ovr)``: the cycles until the phase still needed ``need`` is reached at ``c`` per
    cycle, and the phase left over; ``need <= 0``: (0, 0); saturated at ``j_max``: (j_max, 0)."""
    if need <= 0:
        return 0, 0
    if (need - 1) >> (j_max.bit_length() - 1) >= c:        # quotient of QB bits or more
        return j_max, 0
    q, r = divmod(need - 1, c)
    return q + 1, c - 1 - r


class LdcpDatapathModel(FlowDatapathModel):
    """The LDCP engine datapath in ints (state fields ``wr``, ``on``, ``dl``, ``ovr``)."""

    def __init__(self, rtl: LdcpDatapath):
        super().__init__(rtl)
        cfg = rtl.config
        self.cfg = cfg
        self.nw = cfg.window.event_n_width
        self.j_max = cfg.j_max
        self.rmax = (1 << cfg.rel_width) - 1
        self.fields = [name for name, _ in rtl.state_layout]

    def init_state(self, regs):
        state = {name: 0 for name in self.fields}
        state["wr"] = pack_wr(regs["cw_init"], 0)
        return state

    def update(self, regs, state, kind, payload, t):
        W = self.time_width
        wmask = (1 << W) - 1
        s = dict(state)
        cw, rel = unpack_wr(s["wr"])
        # 1. the release due, as of its deadline
        due = bool(s["on"]) and time_le_int(s["dl"], t, W)
        late = (t - s["dl"]) & wmask if due else 0
        if due:
            rel = 1 if rel == self.rmax else rel + 1
        # 2. the window (the one-flow datapath's function)
        new = cw
        if kind == EventKind.CN:
            nmask = (1 << self.nw) - 1
            p = SimpleNamespace(alpha=regs["alpha"], beta=regs["beta"], gamma=regs["gamma"],
                                cw_max=regs["cw_max"])
            new = update(p, cw, payload & nmask, (payload >> self.nw) & nmask).cw
        # 3. the deadline
        if new >= ONE:
            s["on"], s["ovr"] = 0, 0
        else:
            P = regs["rtt"] << FRAC_BITS
            if s["on"] and cw < ONE:
                d = (s["dl"] - t) & wmask
                if d >> (W - 1):
                    d -= 1 << W
                need = d * (cw & (ONE - 1)) - s["ovr"] + (P if due else 0)
            else:
                need = P
            j, ovr = release_step(need, new, self.j_max)
            s["on"], s["dl"], s["ovr"] = 1, (t + j) & wmask, ovr
        s["wr"] = pack_wr(new, rel)
        return ModelOut(s, s["dl"] if s["on"] else None, due, late)


class LdcpAckMergeModel:
    """:class:`hw.nic.ldcp_engine.LdcpAckMerge`, cycle by cycle: :meth:`step` takes this
    cycle's ACK offer ``(flow, ece, n)`` or None and the engine's ``cn.ready``, returns
    ``(ack_ready, cn_offer)`` (``cn_offer``: ``(flow, packed cn bits)`` or None) and advances."""

    def __init__(self, cfg):
        self.nw = cfg.window.event_n_width
        self.top = (1 << self.nw) - 1
        self.m = cfg.window.m
        self.head = None                  # [flow, n_marked, n_unmarked]

    def step(self, ack, cn_ready):
        h = self.head
        offer = None if h is None else (h[0], h[1] | h[2] << self.nw)
        leave = h is not None and cn_ready
        ready = False
        nxt = None if leave else h
        if ack is not None:
            flow, ece, n = ack
            n = min(n, self.m)
            if n == 0:
                ready = True
            elif h is not None and not leave and flow == h[0] and (
                    (h[1] + h[2] + n if ece else h[2] + n) <= self.top):
                ready = True
                nxt = [flow, h[1] + h[2] + n, 0] if ece else [flow, h[1], h[2] + n]
            elif h is None or leave:
                ready = True
                nxt = [flow, n, 0] if ece else [flow, 0, n]
        self.head = nxt
        return ready, offer


def phase_releases(rtt: int, windows: list[tuple[int, int]], until: int) -> list[int]:
    """The independent reference: the one-flow phase accumulator, one step per cycle.

    ``windows``: ``(t, cw)`` window changes in time order (the flow's window from cycle ``t``
    on, as the engine applies an event at ``t``).  At each cycle ``s`` (``s`` after the first
    change ... ``until``) the phase adds the window of cycle ``s - 1`` while that window is
    below one packet, and a release is at ``s`` when it reaches ``rtt * 2**16`` (then
    ``rtt * 2**16`` is taken off); a window of one packet or more clears it.  Returns the
    release cycles."""
    P = rtt << FRAC_BITS
    out = []
    phase = 0
    i = 0
    cw = None
    for s in range(windows[0][0], until + 1):
        prev = cw                        # the window of cycle s - 1
        while i < len(windows) and windows[i][0] == s:
            cw = windows[i][1]
            i += 1
        if prev is None or prev >= ONE:
            phase = 0
            continue
        phase += prev
        if phase >= P:
            out.append(s)
            phase -= P
    return out


# -- measurements (python -m sim.models.ldcp_engine) ---------------------------------------------

def measure_load(n_flows=1024, cycles=200_000, seed=1, cw0=0.5, p_mark=0.3, rtt_us=10.0):
    """Release lateness at a load: ``n_flows`` flows below one packet (``cw0``), each release
    sends one packet whose ACK (ECN-marked with probability ``p_mark``) comes back one RTT
    later (``rtt_us``, also the RTT register): the closed loop of the sub-1 regime.  The
    engine's default sizing (W = 26, 65536-slot wheel, 32768-cycle horizon, 2 division steps
    per cycle: L = 26).  The figures are of the last three quarters of the run (the first is
    the start's transient).  Returns a dict of figures."""
    import random
    from collections import deque

    from hw.nic.flow_engine_config import FlowEngineConfig
    from hw.nic.ldcp_engine import LdcpEngineConfig
    from hw.nic.ldcp_window_config import LdcpWindowConfig

    from .flow_engine import FlowEngineModel
    rng = random.Random(seed)
    win = LdcpWindowConfig(cw_init=cw0, rtt_us=rtt_us)
    cfg = LdcpEngineConfig(engine=FlowEngineConfig(n_flows=n_flows, out_fifo_depth=30),
                           window=win)
    m = FlowEngineModel(cfg.engine, LdcpDatapathModel(LdcpDatapath(cfg)))
    m.log_issue = False
    rtt = win.registers().rtt
    nw = win.event_n_width
    from hw.nic.flow_datapath import CtlOp
    ctl = deque((f, CtlOp.START, 0, 0) for f in range(n_flows))
    # the first event of each flow (it arms the timer) at a random phase of one period
    period = int(rtt / cw0)
    tx = deque(sorted((rng.randrange(2 * n_flows, 2 * n_flows + period), f)
                      for f in range(n_flows)))
    # statistics from here on: the start (every flow at cw0, windows moving together) is a
    # transient that over-subscribes the engine for a while
    warm = max(2 * n_flows + 2 * period, cycles // 4)
    base_hist, base = None, None
    acks: deque = deque()                                 # (due cycle, flow, payload)
    cn: deque = deque()
    fmask = (1 << cfg.engine.flow_width) - 1
    shift = m.lay["rate"]["rate"].offset
    last_rel = [0] * n_flows
    held = 0
    for c in range(cycles):
        while acks and acks[0][0] <= c:
            cn.append(acks.popleft()[1:])
        if c == warm:
            base_hist, base = list(m.hist), dict(m.counters)
        txo = (tx[0][1], 0) if tx and tx[0][0] <= c else None
        o = m.step(ctl=ctl[0] if ctl else None, cn=cn[0] if cn else None, tx=txo)
        if ctl and o.ctl_ready:
            ctl.popleft()
        elif cn and o.cn_ready:
            cn.popleft()
        elif txo is not None and o.tx_ready:
            tx.popleft()
        held += c >= warm and bool(cn) and not o.cn_ready
        if o.rate is not None:
            f, v = o.rate & fmask, o.rate >> shift
            rel = v >> 32
            if rel != last_rel[f] and rel:
                n = 1
                acks.append((c + rtt, f, n if rng.random() < p_mark else n << nw))
            last_rel[f] = rel
    assert base is not None, "cycles must cover the warm-up (2 N + 2 periods)"
    k = {name: v - base[name] for name, v in m.counters.items()}
    h = [a - b for a, b in zip(m.hist, base_hist, strict=True)]
    hist = dict(zip(["0", "1", "2-3", "4-7", "8-15", "16-63", "64-255", ">=256"], h,
                    strict=True))
    span = cycles - warm
    return {"flows": n_flows, "cycles": span, "latency": cfg.latency,
            "events_per_cycle": (k["ev_tx"] + k["ev_cn"] + k["ev_timer"]) / span,
            "releases": k["expiries"], "acks": k["ev_cn"],
            "late_max_all": m.counters["late_max"],
            "late_mean": k["late_sum"] / max(1, k["expiries"]),
            "on_time": h[0] / max(1, k["expiries"]), "hist": hist,
            "stale_pops": k["stale_pops"], "ack_cycles_held": held}


def main(argv=None) -> int:
    import argparse
    ap = argparse.ArgumentParser(prog="python -m sim.models.ldcp_engine",
                                 description="LDCP engine release lateness (cycle-accurate model)")
    ap.add_argument("--flows", type=int, default=1024)
    ap.add_argument("--cycles", type=int, default=200_000)
    ap.add_argument("--cw", type=float, default=0.5)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args(argv)
    r = measure_load(n_flows=a.flows, cycles=a.cycles, seed=a.seed, cw0=a.cw)
    print(f"{r['flows']} flows below one packet (start {a.cw}), RTT 10 us, L = {r['latency']}: "
          f"{r['cycles']} cycles after the warm-up, {r['events_per_cycle']:.3f} events per cycle, "
          f"{r['releases']} releases, {r['acks']} ACKs, {r['stale_pops']} stale pops")
    print(f"  release lateness: on time {r['on_time']:.3%}, mean {r['late_mean']:.3f}, max "
          f"(whole run) {r['late_max_all']}; histogram {r['hist']}; cycles an ACK was held "
          f"{r['ack_cycles_held']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
