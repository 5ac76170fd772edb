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

import dataclasses
from types import SimpleNamespace

from hw.layouts import LdcpTxLoad, LdcpTxStage
from hw.nic.flow_datapath import EventKind
from hw.nic.ldcp_engine import LdcpDatapath
from hw.nic.ldcp_tx_engine import OFFER_FLAGS
from hw.nic.ldcp_window_config import FRAC_BITS, MTU_WIDTH, ONE

from .flow_datapath import FlowDatapathModel, ModelOut, time_le_int
from .ldcp_transport import RxPacket, RxState, TAck, load_value, offer_packet, rx_core
from .ldcp_window import update

_SAT16 = (1 << 16) - 1

__all__ = ["LdcpDatapathModel", "LdcpTxDatapathModel", "LdcpRxDatapathModel", "release_step",
           "phase_releases", "pack_wr", "unpack_wr", "LdcpAckMergeModel"]


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
        s["on"], s["dl"], s["ovr"] = self.deadline(regs, s, cw, new, due, t)
        s["wr"] = pack_wr(new, rel)
        return ModelOut(s, s["dl"] if s["on"] else None, due, late)

    def deadline(self, regs, s, cw, new, due, t, enable=True):
        """Rule 3: ``(on, dl, ovr)`` after an update at ``t`` from the window ``cw`` to
        ``new`` (``s``: the flow's ``on``, ``dl``, ``ovr`` before it; ``due``: a release was
        applied); ``enable`` False keeps the timer off (``dl`` kept, ``ovr`` 0)."""
        W = self.time_width
        wmask = (1 << W) - 1
        if new >= ONE or not enable:
            return 0, s["dl"], 0
        P = regs["rtt"] << FRAC_BITS
        if s["on"] and cw < ONE:
            d = (s["dl"] - t) & wmask
            if d >> (W - 1):
                d -= 1 << W
            need = d * (cw & (ONE - 1)) - s["ovr"] + (P if due else 0)
        else:
            need = P
        j, ovr = release_step(need, new, self.j_max)
        return 1, (t + j) & wmask, ovr


def _clamp(v: int, regs) -> int:
    """A window load, clamped to ``[gamma, cw_max]`` (the one-flow window engine's rule)."""
    return min(max(v, regs["gamma"]), regs["cw_max"])


class LdcpTxDatapathModel(LdcpDatapathModel):
    """The multi-flow LDCP sender (:class:`hw.nic.ldcp_tx_engine.LdcpTxDatapath`) in ints.

    The one-flow functions are reused, not copied: the window is
    :func:`sim.models.ldcp_window.update`, the release deadline :meth:`deadline` (the window
    engine's rule 3), the offered packet :func:`sim.models.ldcp_transport.offer_packet`, the
    exit and timeout loads :func:`sim.models.ldcp_transport.load_value`.  The sender's rules
    are those of :class:`sim.models.ldcp_transport.LdcpSenderModel` with its one-flow
    artefacts removed (the window is in the same word: a load is immediate, no pending load,
    no settling cycles) and its timeout counter turned into a deadline.  One update at ``t``:

    1. Due timers, as of their deadlines (they commute: a timeout leaves a window below one
       packet as it is, and a window of one or more has no release timer): a release
       (``on`` and ``dl <= t``): ``rel += 1``, ``credit := 1``; a timeout (``rto_on`` and
       ``rto_dl <= t``): ``nxt := una``; fast start: exit 1 (stable stage, window
       ``fs_acked`` packets), stable: window ``min(cw, 1)``; a load is clamped to
       ``[gamma, cw_max]``.
    2. The event.  ACK (flow active; ``lsn > snd_max`` ignored): ``una := max(una, lsn)``;
       fast start: ``fs_acked += n`` (saturating), ``first_ack``, a NAK is exit 1 (window
       ``fs_acked``), else ``una >= IW x MTU`` exit 2 (window ``cw_bdp``); stable stage with
       ``n > 0``: the PAWA update (``n`` marked if ECN-Echo, else unmarked); a NAK, or ``una``
       beyond ``nxt``, sets ``nxt := una``.  TX start (no message active): a message of
       ``value`` bytes in fast start, every LSN 0, ``credit`` 0 (``value = 0``: nothing).
       TX sent (active, ``value == nxt < msg_len``): ``nxt += min(MTU, msg_len - nxt)``, a
       new packet moves ``snd_max`` and counts ``new_cnt``; ``credit := 0``.  Else ignored.
    3. ``una == msg_len``: done (inactive).  Timeout: armed while active with bytes in flight
       (``una < nxt``: ``rto_on`` is exactly that); (re)started at ``t + rto`` (``rto = 0``
       counts as 1) when bytes came in flight at this update or on progress; kept otherwise.
    4. Release timer: armed only for an active flow in the stable stage below one packet
       (:meth:`deadline`, from the window the update started with); ``credit`` is kept only
       there.
    5. The offer: ``elig`` = active, bytes left, and the gate (fast start ``nxt - una <
       IW x MTU``; stable: ``credit`` below one packet, else ``nxt - una < ceil(cw x MTU /
       2**16)``); ``ect``, ``retx``, ``last`` of the packet at ``nxt``; ``act``.
    """

    def __init__(self, rtl):
        super().__init__(rtl)
        cfg = rtl.tx_config
        self.lw = cfg.transport.lsn_width
        self.lmask = (1 << self.lw) - 1
        self.mtu = rtl.mtu
        self.n_width = cfg.transport.n_width

    def init_state(self, regs):
        state = {name: 0 for name in self.fields}
        state["wr"] = pack_wr(regs["cw_init"], 0)
        return state

    def offer_fields(self, offer: int) -> dict:
        out = {"nxt": offer & self.lmask}
        for i, name in enumerate(OFFER_FLAGS):
            out[name] = (offer >> (self.lw + i)) & 1
        return out

    def update(self, regs, state, kind, payload, t):
        W, LW, lmask, mtu = self.time_width, self.lw, self.lmask, self.mtu
        wmask = (1 << W) - 1
        s = dict(state)
        cw, rel = unpack_wr(s["wr"])
        o = self.offer_fields(s["offer"])
        nxt, act = o["nxt"], o["act"]
        una, snd_max, msg_len = s["una"], s["snd_max"], s["msg_len"]
        stage = LdcpTxStage(s["stage"])
        # 1. the due timers
        rel_due = bool(s["on"]) and time_le_int(s["dl"], t, W)
        rto_due = bool(s["rto_on"]) and time_le_int(s["rto_dl"], t, W)
        late = 0
        if rel_due or rto_due:
            rel_first = time_le_int(s["dl"], s["rto_dl"], W)
            late = (t - (s["dl"] if rel_due and (not rto_due or rel_first) else s["rto_dl"])
                    ) & wmask
        credit = s["credit"] or rel_due
        if rel_due:
            rel = 1 if rel == self.rmax else rel + 1
        cw_in = cw
        if rto_due:
            nxt = una
            kind_l = LdcpTxLoad.ACKED if stage is LdcpTxStage.FAST else LdcpTxLoad.MIN1
            cw_in = _clamp(load_value(kind_l, s["fs_acked"], regs["cw_bdp"], cw), regs)
            stage = LdcpTxStage.STABLE
        counting0 = act and una < nxt
        # 2. the event
        progress = start = sent = False
        counts = None
        load = None
        if kind == EventKind.CN and act:
            lsn = payload & lmask
            ece = (payload >> LW) & 1
            n = (payload >> (LW + 1)) & ((1 << self.n_width) - 1)
            nak = (payload >> (LW + 1 + self.n_width)) & 1
            if lsn <= snd_max:
                if lsn > una:
                    una, progress = lsn, True
                if stage is LdcpTxStage.FAST:
                    s["fs_acked"] = min(s["fs_acked"] + n, _SAT16)
                    s["first_ack"] = 1
                    if nak:
                        load = load_value(LdcpTxLoad.ACKED, s["fs_acked"], regs["cw_bdp"], cw)
                        stage = LdcpTxStage.STABLE
                    elif una >= regs["iw"] * mtu:
                        load = load_value(LdcpTxLoad.BDP, s["fs_acked"], regs["cw_bdp"], cw)
                        stage = LdcpTxStage.STABLE
                elif n:
                    counts = (n, 0) if ece else (0, n)
                if nak or nxt < una:
                    nxt = una
        elif kind == EventKind.TX:
            value = payload & lmask
            if (payload >> LW) & 1:
                if not act:
                    start = True
                    msg_len, act = value, int(value != 0)
                    stage = LdcpTxStage.FAST
                    nxt = una = snd_max = 0
                    s["first_ack"] = s["new_cnt"] = s["fs_acked"] = 0
                    credit = False
            elif act and value == nxt and nxt < msg_len:
                sent = True
                end = nxt + min(mtu, msg_len - nxt)
                if nxt >= snd_max:
                    snd_max = end
                    s["new_cnt"] = min(s["new_cnt"] + 1, _SAT16)
                nxt = end
                credit = False
        # 3. done, the timeout
        if act and una == msg_len:
            act = 0
        counting = bool(act) and una < nxt
        if counting and (not counting0 or progress):
            s["rto_dl"] = (t + (regs["rto"] or 1)) & wmask
        s["rto_on"] = int(counting)
        # 4. the window and the release timer
        new = cw_in
        if counts is not None:
            p = SimpleNamespace(alpha=regs["alpha"], beta=regs["beta"], gamma=regs["gamma"],
                                cw_max=regs["cw_max"])
            new = update(p, cw_in, *counts).cw
        if load is not None:
            new = _clamp(load, regs)
        stable = stage is LdcpTxStage.STABLE
        enable = stable and bool(act)
        s["on"], s["dl"], s["ovr"] = self.deadline(regs, s, cw_in, new, rel_due, t, enable)
        sub1 = new < ONE
        credit = bool(credit) and sub1 and enable
        s["wr"] = pack_wr(new, rel)
        # 5. the offer
        inflight = (nxt - una) & lmask
        if not stable:
            gate = inflight < regs["iw"] * mtu
        elif sub1:
            gate = credit
        else:
            gate = inflight < (new * mtu + ONE - 1) >> FRAC_BITS
        pkt = offer_packet(mtu, regs["iw"], stable, s["first_ack"], s["new_cnt"], nxt,
                           msg_len, snd_max)
        flags = {"elig": bool(act) and nxt < msg_len and gate, "ect": pkt.ect,
                 "retx": pkt.retx, "last": pkt.last, "act": act}
        offer = nxt
        for i, name in enumerate(OFFER_FLAGS):
            offer |= int(bool(flags[name])) << (LW + i)
        s.update(offer=offer, una=una, snd_max=snd_max, msg_len=msg_len, stage=stage.value,
                 credit=int(credit))
        wakes = [d for on, d in ((s["on"], s["dl"]), (s["rto_on"], s["rto_dl"])) if on]
        wake = None
        if wakes:
            wake = wakes[0] if len(wakes) == 1 or time_le_int(wakes[0], wakes[1], W) \
                else wakes[1]
        del start, sent
        return ModelOut(s, wake, rel_due or rto_due, late)


class LdcpRxDatapathModel(FlowDatapathModel):
    """The multi-flow LDCP receiver (:class:`hw.nic.ldcp_rx_engine.LdcpRxDatapath`) in ints:
    the flush timer as of its deadline, then the one-flow rule
    :func:`sim.models.ldcp_transport.rx_core` itself (registers ``m`` and ``mtu`` in place of
    the build's), then the flush deadline and the record (the RTL's docstring)."""

    def __init__(self, rtl):
        super().__init__(rtl)
        cfg = rtl.config
        t = cfg.transport
        self.lw = t.lsn_width
        self.nw = t.n_width
        self.max_message = t.max_message
        self.rec_spans = [(name, f.offset, f.width) for name, f in rtl.rec_layout]
        self.fields = [name for name, _ in rtl.state_layout]

    def init_state(self, regs):
        return {name: 0 for name in self.fields}

    def rec_fields(self, rec: int) -> dict:
        return {name: (rec >> o) & ((1 << w) - 1) for name, o, w in self.rec_spans}

    def pack_rec(self, f: dict) -> int:
        v = 0
        for name, o, w in self.rec_spans:
            v |= (f[name] & ((1 << w) - 1)) << o
        return v

    def update(self, regs, state, kind, payload, t):
        W, LW, nw = self.time_width, self.lw, self.nw
        wmask = (1 << W) - 1
        s = dict(state)
        rec = self.rec_fields(s["rec"])
        due = bool(s["fl_on"]) and time_le_int(s["fl_dl"], t, W)
        late = (t - s["fl_dl"]) & wmask if due else 0
        pre = []
        main = None
        rx = RxState(rec["exp"], s["pend"], bool(s["nak_sent"]), 0)
        if due:
            pre.append(TAck(rx.expected, False, rx.pending))
            rx = dataclasses.replace(rx, pending=0)
        pend0 = rx.pending
        if kind == EventKind.CN:
            pkt = RxPacket(payload & ((1 << LW) - 1), (payload >> LW) & ((1 << MTU_WIDTH) - 1),
                           bool((payload >> (LW + MTU_WIDTH)) & 1),
                           bool((payload >> (LW + MTU_WIDTH + 1)) & 1))
            view = SimpleNamespace(window=SimpleNamespace(m=regs["m"], mtu=regs["mtu"]),
                                   max_message=self.max_message)
            rx, new, _, _ = rx_core(view, rx, pkt)
            if len(new) == 2:                     # a CE mark flushes the pending ones first
                pre.append(new[0])
            if new:
                main = new[-1]
        assert len(pre) <= 1 and (main is None or main.lsn == rx.expected)
        pend = rx.pending & ((1 << nw) - 1)
        if pre or main:
            rec["seq"] = (rec["seq"] + 1) & 3
        rec["pre"], rec["n_pre"] = (1, pre[0].n) if pre else (0, 0)
        rec["main"] = int(main is not None)
        rec["ece"], rec["n"], rec["nak"] = ((int(main.ece), main.n, int(main.nak)) if main
                                            else (0, 0, 0))
        rec["exp"] = rx.expected
        s["rec"] = self.pack_rec(rec)
        s["nak_sent"] = int(rx.nak_sent)
        if pend and not pend0:
            s["fl_dl"] = (t + (regs["ack_delay"] or 1)) & wmask
        s["pend"], s["fl_on"] = pend, int(pend != 0)
        return ModelOut(s, s["fl_dl"] if s["fl_on"] else None, due, late)


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
    cfg = LdcpEngineConfig(engine=FlowEngineConfig(n_flows=n_flows, out_fifo_depth=32),
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
