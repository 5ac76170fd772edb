"""Event sources of the three multi-flow LDCP engine tops for the generic engine testbench
(cocotb_tests/flow_engine_tb.py, test ``ldcp_events``; ``CC_LDCP_SOURCE`` picks one).

Each source is built on the testbench (:class:`~cocotb_tests.flow_engine_tb.FlowEngineTB`: its
``queues``, its engine model ``model`` and its ``rng``) and queues ``n`` input events per call,
reading the engine model's state of a flow where the event depends on it (the sender's next
LSN and window; the receiver's expected LSN), so most events are coherent; some go stale before
they issue, which the rules cover.  ``regs``: the registers written before the flows START
(``cw_init`` is read at START); :meth:`prime`: the events after the START (the sender: a message
per flow).

- ``window`` (``ldcp_engine_1k``): ACKs ``{n_marked, n_unmarked}`` (1-3 packets, marked with
  the flow's probability :data:`MARK_P`; coalesced; the counts' largest), TX (applies a due
  release only), READs, WRITEs of every state field (a deadline near the engine's time),
  register rewrites (alpha, beta, rtt 400 ... 1600 cycles).  cw_init 1.25 packets and an RTT
  of 800 cycles: the flows marked most settle below one packet, where their release deadlines
  are timer events every RTT / cw cycles (with 200 cycles, 1024 flows below one packet asked
  for more pops than one per clock, and the pops, first in the engine's priority, starved
  the inputs).
- ``tx`` (``ldcp_tx_engine_1k``): the Amaranth runner's sender events
  (:func:`tests.test_ldcp_tx_engine._tx_engine_events`: starts, sent reports at ``nxt`` or
  stale, ACKs and NAKs within, at and beyond the window, READs, WRITEs of the window, register
  rewrites of alpha, beta, rtt, iw, rto); IW 4 packets, RTT 200 and RTO 600 cycles times
  ``n_flows / 64``, at most 6 (1200 and 3600 at 1024 flows: the flows' timer events near 0.3
  per clock, the RTO within the wheel's 4096-cycle horizon),
  so fast start, its exits, the window and the timeouts all happen within a run.
- ``rx`` (``ldcp_rx_engine_1k``): each flow's packets in order with gaps (a NAK), duplicates,
  the sender's go-back (from the expected LSN), CE marks, malformed and last packets; TX (a due
  flush only), READs, RESETs (a new message), register rewrites (m, MTU, ack_delay); the flush
  delay 40 cycles.

Hot flows: every source draws one flow (``hot``) for a share of its events (``CC_LDCP_HOT``,
default 0.3; the pytest runner's ``CC_LONG`` runs 0.1), changed with probability 0.02 per
event, and now and then a hot stretch (a chunk of events of one flow at 95 %,
:data:`P_STRETCH`): the same flow's events back to back, each held by the engine until its
predecessor's update is written back.
"""

from __future__ import annotations

import os

from hw.nic.flow_datapath import CtlOp
from hw.nic.ldcp_window_config import MTU_WIDTH, ONE

__all__ = ["LDCP_SOURCES", "WindowEvents", "TxEvents", "RxEvents"]

#: chance per call (a chunk of events) that the chunk is a hot stretch
P_STRETCH = 0.05
#: the window engine's ACKs: a flow's chance that an ACK is marked, by flow number mod 4
MARK_P = (0.1, 0.5, 0.7, 0.9)


class _Source:
    regs: dict = {}

    def __init__(self, tb, p_hot: float | None = None):
        if p_hot is None:
            p_hot = float(os.environ.get("CC_LDCP_HOT") or 0.3)
        self.tb, self.rng = tb, tb.rng
        self.flows = list(range(tb.cfg.n_flows))
        self.hot = 0
        self.p_hot = p_hot
        self.generated = 0
        self.reg_index = {name: i for i, (name, _, _) in enumerate(tb.dp.regs)}

    def _flow(self, p_hot: float) -> int:
        rng = self.rng
        if rng.random() < 0.02:
            self.hot = rng.choice(self.flows)
        return self.hot if rng.random() < p_hot else rng.choice(self.flows)

    def _p_hot(self) -> float:
        """This chunk's hot share: a hot stretch now and then (:data:`P_STRETCH`)."""
        return 0.95 if self.rng.random() < P_STRETCH else self.p_hot

    def _csr(self, name: str, value: int):
        self.tb.queues["csr_w"].append((self.reg_index[name], value))

    def prime(self):
        """Events after every flow's START (none by default)."""

    def __call__(self, n: int):
        raise NotImplementedError


class WindowEvents(_Source):
    """The window engine's events (module docstring)."""

    regs = {"rtt": 800, "cw_init": ONE + ONE // 4}

    def __call__(self, n: int):
        tb, rng = self.tb, self.rng
        q = tb.queues
        nw = tb.dp.config.window.event_n_width
        top = (1 << nw) - 1
        vw = tb.lay["ctl"]["value"].width
        p_hot = self._p_hot()
        for _ in range(n):
            f = self._flow(p_hot)
            r = rng.random()
            if r < 0.6:
                # each flow its own mark probability (MARK_P[f % 4]): the windows settle
                # above one packet, near it, and below it (PAWA's balance: cw = (1 - p)
                # alpha / (p beta) packets), so releases, entries and exits all happen
                k = rng.randrange(1, 4)
                nm, nu = (k, 0) if rng.random() < MARK_P[f % 4] else (0, k)
                x = rng.random()
                if x < 0.1:                                 # coalesced: both parts
                    nm, nu = rng.randrange(0, 4), rng.randrange(0, 9)
                elif x < 0.12:                              # the counts' largest
                    nm, nu = rng.choice([(top, 0), (0, top), (top, top), (0, 0)])
                q["cn"].append((f, nm | nu << nw))
            elif r < 0.85:
                q["tx"].append((f, 0))
            elif r < 0.95:
                q["ctl"].append((f, CtlOp.READ, 0, 0))
            else:
                # wr (cw, and the release counter above it), on, dl, ovr; values in range
                # mostly, any bits now and then
                field = rng.choice([0, 0, 1, 2, 3])
                # (a deadline near the engine's time: lateness stays that of the engine's
                # timer service, not of a deadline written 2**25 cycles in the past)
                now = tb.model.now
                value = [rng.randrange(ONE // 8, 3 * ONE) | rng.randrange(256) << 32, 1,
                         (now + rng.randrange(-100, 4000)) % (1 << tb.cfg.time_width),
                         rng.randrange(1 << 12)][field]
                if rng.random() < 0.05:
                    value = rng.getrandbits(vw)
                q["ctl"].append((f, CtlOp.WRITE, field, value))
            if rng.random() < 0.002:
                name, value = rng.choice([("alpha", rng.randrange(1 << 12, 1 << 16)),
                                          ("beta", rng.randrange(1 << 12, 1 << 16)),
                                          ("rtt", rng.randrange(400, 1600))])
                self._csr(name, value)
        self.generated += n


class TxEvents(_Source):
    """The sender's events: the Amaranth runner's source (module docstring), its RTT and RTO
    scaled by ``n_flows / 64`` (1 to 6)."""

    def __init__(self, tb, p_hot: float | None = None):
        super().__init__(tb, p_hot)
        tr = tb.dp.tx_config.transport
        self.lw, self.nw = tr.lsn_width, tr.n_width
        # 1024 flows with RTO 600 and RTT 200 cycles asked for more than one timer pop per
        # clock: the pops, first in the engine's priority, starved the inputs (a 100,000-event
        # run did not end in 42 minutes); x6 keeps them near 0.3 per clock and the longest
        # RTO (3600) within the tops' 4096-cycle wheel horizon
        self.scale = max(1, min(tb.cfg.n_flows // 64, 6))
        self.regs = {"iw": 4, "rtt": 200 * self.scale, "rto": 600 * self.scale}

    def prime(self):
        lw = self.lw
        for f in self.flows:                         # a message for every flow
            self.tb.queues["tx"].append((f, self.rng.randrange(1, 12000) | 1 << lw))

    def __call__(self, n: int):
        from tests.test_ldcp_tx_engine import _tx_engine_events
        self.hot = _tx_engine_events(self.tb, self.rng, self.flows, n, self.hot, self.nw,
                                     self.lw, self._p_hot(), self.scale)
        self.generated += n


class RxEvents(_Source):
    """The receiver's packets (module docstring)."""

    regs = {"ack_delay": 40}

    def __init__(self, tb, p_hot: float | None = None):
        super().__init__(tb, p_hot)
        self.lw = tb.dp.config.transport.lsn_width
        self.mtu0 = self.mtu = dict((name, reset) for name, _, reset in tb.dp.regs)["mtu"]
        self.nxt = dict.fromkeys(self.flows, 0)

    def _pkt(self, lsn, length, ce, last):
        lw = self.lw
        return lsn | length << lw | ce << (lw + MTU_WIDTH) | last << (lw + MTU_WIDTH + 1)

    def __call__(self, n: int):
        tb, rng, mtu, nxt = self.tb, self.rng, self.mtu, self.nxt
        q = tb.queues
        model = tb.model
        p_hot = self._p_hot()
        for _ in range(n):
            f = self._flow(p_hot)
            r = rng.random()
            if r < 0.8:
                lsn = nxt[f]
                x = rng.random()
                if x < 0.05:
                    lsn += mtu                                      # a gap
                elif x < 0.1:
                    lsn = max(0, lsn - mtu)                         # a duplicate
                elif x < 0.15:
                    # the sender's go-back: from the receiver's expected LSN
                    lsn = model.dpm.rec_fields(model.flows[f].algo["rec"])["exp"]
                length = mtu if rng.random() < 0.9 else rng.choice([1, 0, mtu + 1, 300])
                q["cn"].append((f, self._pkt(lsn, length, int(rng.random() < 0.2),
                                             int(rng.random() < 0.05))))
                if 0 < length <= mtu:
                    nxt[f] = lsn + length
            elif r < 0.9:
                q["tx"].append((f, 0))
            elif r < 0.97:
                q["ctl"].append((f, CtlOp.READ, 0, 0))
            else:
                q["ctl"].append((f, CtlOp.RESET, 0, 0))
                nxt[f] = 0
            if rng.random() < 0.003:
                name, value = rng.choice([("m", rng.randrange(1, 8)),
                                          ("mtu", rng.choice([self.mtu0, 2 * self.mtu0])),
                                          ("ack_delay", rng.randrange(0, 120))])
                self._csr(name, value)
                if name == "mtu":
                    self.mtu = value
        self.generated += n


#: ``CC_LDCP_SOURCE`` -> source class
LDCP_SOURCES = {"window": WindowEvents, "tx": TxEvents, "rx": RxEvents}
