"""The ``"rtl"`` LDCP engines: the Verilated sender (:class:`hw.nic.ldcp_transport.LdcpSender`,
the transport on the window engine :class:`hw.nic.ldcp_window.LdcpWindow`) behind
:class:`sim.net.engine_api.WindowSenderEngine` and the Verilated receiver
(:class:`hw.nic.ldcp_transport.LdcpReceiver`) behind
:class:`~sim.net.engine_api.WindowReceiverEngine`; one instance of each per flow.

Timing is the golden models' (:mod:`sim.models.ldcp_transport`): the engine holds the cycle it
has reached (the number of edges run since the reset); an input stamped with cycle ``c`` is
offered on its stream during cycle ``c`` and taken at the edge that ends it if the RTL is
ready (the ACKs queue in Python and go one per cycle, as in the model: the RTL takes one per
clock and none while a window load is pending); a released packet is the ``pkt`` stream's
payload in that cycle, taken (``ready``) at the edge that ends it.  Stretches without inputs
run in C++ (:meth:`sim.rtl.bridge.RtlInstance.run`), which also counts the event pulses of
the ``state`` port (timeouts, fast-start exits, bad ACKs: the statistics the host reads).

The sender's next wake-up (:meth:`RtlLdcpSender.next_wakeup`: the cycle at which it next
offers a packet, becomes done or a timer fires, with no new input) comes from the RTL itself,
run ahead and then back: the instance's state is saved (a byte copy of the Verilated model's
storage, :meth:`sim.rtl.bridge.RtlInstance.save`: well under a microsecond, where
Verilator's ``--savable`` serialises through a file), the queued inputs are applied edge by
edge, then the RTL runs in C++ until ``pkt.valid`` rises, ``done`` changes, or the sender is
quiet (no load pending or settling, no event pulse, the window engine neither busy nor
ticking, the window unchanged for two edges: its timer and gate registers follow it two
edges late; the harness tracks that across calls);
the state is then restored.  From a quiet state only a timer can act: the
retransmission timeout's edge is computed from the RTL's own counter (``state.rto_cnt``) and
its RTO register (read through the register port after the reset), and the sub-1 pacing timer
(its phase is inside the window engine) is run on in C++ until it offers a packet, only while
the window is below one packet.  A look-ahead thus runs the pipeline's few busy cycles and,
below one packet, the sub-1 timer's period, never the timeout's tens of thousands of idle
cycles.

The receiver's ACKs are read from its ``ack`` register (always taken: the host's NIC queue
has room); its flush-timer deadline comes from its ``state`` port (``age``, ``pending``).
"""

from __future__ import annotations

from collections import deque

from hw.layouts import (
    LdcpTxLoad,
    LdcpTxStage,
    ldcp_rx_deliver_layout,
    ldcp_rx_packet_layout,
    ldcp_rx_state_layout,
    ldcp_tack_layout,
    ldcp_tx_packet_layout,
    ldcp_tx_start_layout,
    ldcp_tx_state_layout,
)
from hw.nic.ldcp_transport_config import RTO_WIDTH
from hw.nic.ldcp_window_config import ONE
from sim.models.ldcp_transport import Deliver, TAck, TxPacket, TxStats

from .bridge import RunSpec
from .engines import AFTER_RESET, rtl_model

__all__ = ["RtlLdcpSender", "RtlLdcpReceiver"]

_RTO_MASK = (1 << RTO_WIDTH) - 1


class _Fields:
    """Pack and unpack the bits of an Amaranth struct layout (field name -> int; enum fields
    to their enum)."""

    def __init__(self, layout, enums=None):
        self.f = [(name, fl.offset, (1 << fl.width) - 1, (enums or {}).get(name))
                  for name, fl in layout]
        self.off = {name: off for name, off, _, _ in self.f}

    def unpack(self, bits: int) -> dict:
        return {n: (e((bits >> o) & m) if e else (bits >> o) & m) for n, o, m, e in self.f}

    def pack(self, **values) -> int:
        bits = 0
        for n, o, m, _ in self.f:
            bits |= (int(values.get(n, 0)) & m) << o
        return bits


class _RtlLdcpEngine:
    """What the sender's and the receiver's constructors share: the Verilated top ``TOP`` of
    ``make(cfg)`` (one build per configuration, :func:`sim.rtl.engines.rtl_model`), one
    instance of it (``rtl``) after a reset and the top's after-reset hook
    (:data:`sim.rtl.engines.AFTER_RESET`: register writes, planted bugs)."""

    TOP = ""

    def __init__(self, cfg, make):
        self.cfg = cfg
        self._model = rtl_model(self.TOP, cfg, make)
        self.rtl = inst = self._model.instance()
        inst.reset(1)
        hook = AFTER_RESET.get(self.TOP)
        if hook is not None:
            hook(inst, cfg)

    def _stream(self, name: str) -> tuple[int, int, int]:
        """The port indices of stream ``name``: ``valid``, ``ready``, ``payload``."""
        p = self._model.port
        return p(f"{name}__valid"), p(f"{name}__ready"), p(f"{name}__payload")


class RtlLdcpSender(_RtlLdcpEngine):
    """The LDCP sender's Verilated RTL behind :class:`sim.net.engine_api.WindowSenderEngine`
    (the module docstring has the timing); ``cfg``: its
    :class:`hw.nic.ldcp_transport_config.LdcpTransportConfig` (one build per configuration:
    the window engine's knobs are its registers' reset values)."""

    TOP = "ldcp_sender"

    def __init__(self, cfg):
        from hw.nic.ldcp_transport import LdcpSender

        super().__init__(cfg, LdcpSender)
        model, inst, p = self._model, self.rtl, self._model.port
        self._p_valid, self._p_ready, self._p_payload = self._stream("pkt")
        self._a_valid, self._a_ready, self._a_payload = self._stream("ack")
        self._s_valid, self._s_ready, self._s_payload = self._stream("start")
        self._state, self._cw = p("state"), p("cw")
        self.st = _Fields(ldcp_tx_state_layout(cfg), {"stage": LdcpTxStage,
                                                      "load_kind": LdcpTxLoad})
        self.pk = _Fields(ldcp_tx_packet_layout(cfg))
        self.ak = _Fields(ldcp_tack_layout(cfg))
        self.sk = _Fields(ldcp_tx_start_layout(cfg))
        o = self.st.off
        self._o_active, self._o_done = o["active"], o["done"]
        st = self._state
        # the event pulses counted after every edge: RTO, exit 1, exit 2, bad ACK
        self._count = RunSpec(model, count=[(st, o["ev_rto"], ), (st, o["ev_exit"]),
                                            (st, o["ev_exit"] + 1), (st, o["ev_bad_ack"])])
        self._plain = RunSpec(model)
        quiet = [(st, o["load_pending"], 0), (st, o["settle"], 0), (st, o["settle"] + 1, 0),
                 (st, o["ev_rto"], 0), (st, o["ev_bad_ack"], 0), (st, o["ev_exit"], 0),
                 (st, o["ev_exit"] + 1, 0), (p("busy"), 0, 0), (p("tick"), 0, 0)]
        now = [[(self._p_valid, 0, 1), (st, o["done"], 1 - d)] for d in (0, 1)]
        # (and the window unchanged for 2 edges: the timer's and the gate's pipeline registers
        # follow a new window two edges late; the golden model's quiet state waits for them)
        inst.watch(self._cw)
        self._to_quiet = [RunSpec(model, now=now[d], arm=quiet, hold=2) for d in (0, 1)]
        self._to_offer = [RunSpec(model, now=now[d]) for d in (0, 1)]
        w = cfg.window.registers()
        # no run ahead is longer than a timeout plus the sub-1 timer's longest period (the
        # window at its floor gamma) and the pipelines: past it the RTL is stuck
        self._limit = 4 * (cfg.registers().rto + (w.rtt << 16) // max(1, w.gamma)) + 10_000
        self._rto = self._read_register(cfg, "RTO")
        self.cycle = 0
        self._acks: deque = deque()
        self._start: int | None = None
        self._taken_at: int | None = None
        self.n_packets = self.n_retx = self.n_naks = 0

    def _read_register(self, cfg, name: str) -> int:
        """A register's value through the RTL's read port (address, then data a cycle later),
        in a look-ahead that is undone."""
        inst, regmap = self.rtl, cfg.register_map()
        inst.save()
        inst.poke("csr_raddr", regmap.addr(name))
        inst.step(1)
        value = inst.peek("csr_rdata")
        inst.restore()
        inst.poke("csr_raddr", 0)
        inst.eval()
        return value or 1 << RTO_WIDTH       # (RTO 0 means 2**32)

    # -- stepping ---------------------------------------------------------------------------
    def _pending(self) -> bool:
        return bool(self._acks) or self._start is not None or self._taken_at == self.cycle

    def _edge(self, commit: bool) -> None:
        """One edge with the queued inputs offered; ``commit``: count what it takes (False in
        a look-ahead, which is undone)."""
        inst = self.rtl
        ack = self._acks[0] if self._acks else None
        take = self._taken_at == self.cycle
        if ack is not None:
            inst.poke(self._a_payload, self.ak.pack(lsn=ack.lsn, ece=ack.ece, n=ack.n,
                                                    nak=ack.nak))
            inst.poke(self._a_valid, 1)
        if self._start is not None:
            inst.poke(self._s_payload, self._start)
            inst.poke(self._s_valid, 1)
        if take:
            inst.poke(self._p_ready, 1)
        inst.eval()
        ack_t = ack is not None and inst.bit(self._a_ready, 0)
        start_t = self._start is not None and inst.bit(self._s_ready, 0)
        if commit:
            if ack_t and ack.nak:       # (the RTL has no NAK pulse: a valid NAK, as it sees it)
                s = self.st.unpack(inst.peek(self._state))
                self.n_naks += s["active"] and ack.lsn <= s["snd_max"]
            if take and inst.bit(self._p_valid, 0):
                self.n_packets += 1
                pkt = self.pk.unpack(inst.peek(self._p_payload))
                self.n_retx += pkt["retx"]
        inst.run(1, self._count if commit else self._plain)
        if ack is not None:
            inst.poke(self._a_valid, 0)
        if self._start is not None:
            inst.poke(self._s_valid, 0)
        if take:
            inst.poke(self._p_ready, 0)
        inst.eval()
        if ack_t:
            self._acks.popleft()
        if start_t:
            self._start = None
        self.cycle += 1

    def advance(self, cycle: int) -> None:
        if cycle < self.cycle:
            raise ValueError(f"RtlLdcpSender: time went back ({cycle} < {self.cycle})")
        while self.cycle < cycle:
            if self._pending():
                self._edge(True)
            else:
                self.cycle += self.rtl.run(cycle - self.cycle, self._count)

    # -- the WindowSenderEngine interface --------------------------------------------------------
    def start_message(self, cycle: int, length: int) -> None:
        from sim.models.ldcp_transport import check_message_length
        check_message_length(self.cfg, length)
        self.advance(cycle)
        if self.rtl.bit(self._state, self._o_active) or self._start is not None:
            raise RuntimeError("RtlLdcpSender: a message is still active")
        self._start = length

    def on_ack(self, cycle: int, ack: TAck) -> None:
        if cycle != self.cycle:
            self.advance(cycle)
        self._acks.append(ack)

    def release(self, cycle: int) -> TxPacket | None:
        if cycle != self.cycle:
            self.advance(cycle)
        if self._taken_at == self.cycle or not self.rtl.bit(self._p_valid, 0):
            return None
        p = self.pk.unpack(self.rtl.peek(self._p_payload))
        self._taken_at = self.cycle
        return TxPacket(p["lsn"], p["length"], bool(p["ect"]), bool(p["retx"]),
                        bool(p["last"]))

    def next_wakeup(self) -> int | None:
        inst = self.rtl
        if self._taken_at != self.cycle and inst.bit(self._p_valid, 0):
            return self.cycle
        was_done = inst.bit(self._state, self._o_done)
        saved = (self.cycle, list(self._acks), self._start, self._taken_at)
        inst.save()
        try:
            while self._pending():
                self._edge(False)
                if inst.bit(self._p_valid, 0) or inst.bit(self._state, self._o_done) != was_done:
                    return self.cycle
            if not inst.bit(self._state, self._o_active):
                return None             # (inactive, no start queued: nothing until an input)
            k = inst.run(self._limit, self._to_quiet[was_done])
            if k == self._limit:
                raise RuntimeError("RtlLdcpSender: busy without end")
            c = self.cycle + k
            if inst.bit(self._p_valid, 0) or inst.bit(self._state, self._o_done) != was_done:
                return c
            # quiet: no input, nothing in flight in the pipelines; only a timer can act now.
            # The timeout, from the RTL's counter and its RTO register; the sub-1 timer (its
            # phase is inside the window engine) by running on until it offers a packet
            s = self.st.unpack(inst.peek(self._state))
            j_rto = None
            if s["active"] and not s["load_pending"] and s["una"] < s["nxt"]:
                j_rto = (self._rto - 1 - s["rto_cnt"]) & _RTO_MASK
            if (inst.peek(self._cw) < ONE and s["active"] and s["nxt"] < s["msg_len"]
                    and s["stage"] is LdcpTxStage.STABLE):
                n = self._limit if j_rto is None else j_rto + 1
                k = inst.run(n, self._to_offer[was_done])
                if k < n:
                    return c + k
                if j_rto is None:
                    raise RuntimeError("RtlLdcpSender: the sub-1 timer never fires")
            return None if j_rto is None else c + j_rto + 1
        finally:
            inst.restore()
            self.cycle, acks, self._start, self._taken_at = saved
            self._acks = deque(acks)

    @property
    def done(self) -> bool:
        return bool(self.rtl.bit(self._state, self._o_done))

    @property
    def active(self) -> bool:
        return bool(self.rtl.bit(self._state, self._o_active))

    @property
    def cw(self) -> int:
        return self.rtl.peek(self._cw)

    @property
    def n_rtos(self) -> int:
        return self._count.counts[0]

    @property
    def stats(self) -> TxStats:
        rto, ex1, ex2, bad = self._count.counts
        return TxStats(self.n_packets, self.n_retx, self.n_naks, rto, bad, {1: ex1, 2: ex2})

    def snapshot(self) -> dict:
        """As :func:`sim.net.engine_api._tx_snapshot`: the registers, the counters, the cycle
        and the window."""
        st = self.stats
        return {**{k: (bool(v) if k in _FLAGS else v)
                   for k, v in self.st.unpack(self.rtl.peek(self._state)).items()},
                "n_packets": st.packets, "n_retx": st.retransmissions, "n_naks": st.naks,
                "n_rtos": st.rtos, "n_bad": st.bad_acks, "n_exit1": st.exits[1],
                "n_exit2": st.exits[2], "cycle": self.cycle, "cw": self.cw}


_FLAGS = {"active", "done", "first_ack", "load_pending", "ev_rto", "ev_bad_ack"}


class RtlLdcpReceiver(_RtlLdcpEngine):
    """The LDCP receiver's Verilated RTL behind :class:`sim.net.engine_api.WindowReceiverEngine`.

    A packet at cycle ``c`` is offered in cycle ``c`` and taken at the edge that ends it; its
    ACKs are in the ``ack`` register from cycle ``c + 1`` (a CE flush's second one a cycle
    later) and are returned at once, as the golden model returns them, stamped ``c``.  The
    flush timer's ACK, decided at the edge that ends the deadline cycle, is returned by
    :meth:`poll` (or ahead of the next packet's, as the golden model's ``receive`` does).  The
    engine may stand a cycle or two ahead of the host after a packet; a packet that arrives
    inside that is taken at the engine's cycle."""

    TOP = "ldcp_receiver"

    def __init__(self, cfg):
        from hw.nic.ldcp_transport import LdcpReceiver

        super().__init__(cfg, LdcpReceiver)
        model, inst, p = self._model, self.rtl, self._model.port
        self._d_valid, self._d_ready, self._d_payload = self._stream("data")
        self._a_valid, self._a_payload = p("ack__valid"), p("ack__payload")
        self._dl_valid, self._dl = p("deliver_valid"), p("deliver")
        self._state = p("state")
        inst.poke(p("ack__ready"), 1)       # (the host always takes an ACK)
        inst.eval()
        self.st = _Fields(ldcp_rx_state_layout(cfg))
        self.ak = _Fields(ldcp_tack_layout(cfg))
        self.rk = _Fields(ldcp_rx_packet_layout(cfg))
        self.dk = _Fields(ldcp_rx_deliver_layout(cfg))
        self._until_ack = RunSpec(model, now=[(self._a_valid, 0, 1)])
        self._one = RunSpec(model)
        self.ack_delay = cfg.registers().ack_delay
        self.cycle = 0
        self._seen: int | None = None       # the cycle whose ACK register was read
        self.delivered: list[Deliver] = []

    def _collect(self, out: list) -> None:
        inst = self.rtl
        if self._seen != self.cycle and inst.bit(self._a_valid, 0):
            a = self.ak.unpack(inst.peek(self._a_payload))
            out.append(TAck(a["lsn"], bool(a["ece"]), a["n"], bool(a["nak"])))
            self._seen = self.cycle

    def _run_to(self, cycle: int, out: list) -> None:
        """Run the edges up to ``cycle`` (no packet), collecting the ACKs they make."""
        inst = self.rtl
        while True:
            self._collect(out)
            if self.cycle >= cycle:
                return
            if self._seen == self.cycle:        # (the ACK read: its edge takes it)
                self.cycle += inst.run(1, self._one)
                continue
            self.cycle += inst.run(cycle - self.cycle, self._until_ack)

    def receive(self, cycle: int, p) -> list[TAck]:
        out: list[TAck] = []
        self._run_to(cycle, out)
        inst = self.rtl
        while not inst.bit(self._d_ready, 0):   # (a CE flush's second ACK holds the input)
            self._run_to(self.cycle + 1, out)
        inst.poke(self._d_payload, self.rk.pack(lsn=p.lsn, length=p.length, ce=p.ce,
                                                last=p.last))
        inst.poke(self._d_valid, 1)
        self.cycle += inst.run(1, self._one)
        inst.poke(self._d_valid, 0)
        inst.eval()
        if inst.bit(self._dl_valid, 0):
            d = self.dk.unpack(inst.peek(self._dl))
            self.delivered.append(Deliver(d["lsn"], d["length"], bool(d["last"])))
        self._collect(out)
        if not inst.bit(self._d_ready, 0):      # a second ACK is held: it comes next cycle
            self._run_to(self.cycle + 1, out)
        return out

    def poll(self, cycle: int) -> list[TAck]:
        out: list[TAck] = []
        self._run_to(cycle + 1, out)            # (the edge that ends ``cycle`` decides)
        return out

    def next_wakeup(self) -> int | None:
        s = self.st.unpack(self.rtl.peek(self._state))
        if not s["pending"]:
            return None
        return self.cycle + max(0, self.ack_delay - s["age"])

    @property
    def s(self):
        from sim.models.ldcp_transport import RxState
        return RxState(**{k: (bool(v) if k in ("nak_sent", "ev_bad") else v)
                          for k, v in self.st.unpack(self.rtl.peek(self._state)).items()})

    def snapshot(self) -> dict:
        return {**self.st.unpack(self.rtl.peek(self._state)), "deadline": self.next_wakeup()}
