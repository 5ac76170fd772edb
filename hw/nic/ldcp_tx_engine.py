"""LDCP transport senders for many flows: the sender state of :mod:`hw.nic.ldcp_transport` and
the PAWA window of :mod:`hw.nic.ldcp_engine` in one flow-table word, as one datapath of the
multi-flow engine (:mod:`hw.nic.flow_engine`).

:class:`LdcpTxDatapath` extends :class:`hw.nic.ldcp_engine.LdcpDatapath` (its window update and
sub-one-packet release deadline, :meth:`~hw.nic.ldcp_engine.LdcpDatapath.window_part`, unchanged)
with the sender's per-flow state: next LSN, cumulative ACK ``una``, highest LSN sent, message
length, fast-start stage, the packets acknowledged in fast start, the retransmission timeout as
a second stored deadline, and the sub-one release credit.  One state word, one update: the
window, the gate and the sender's LSNs never disagree, and the send gate needs no second engine.
``docs/ldcp-transport.md``, "Many flows", has the rules, the state bits, the ports and the
figures; the golden model is :class:`sim.models.ldcp_engine.LdcpTxDatapathModel`.

Events (one per clock across flows, the engine's streams):

- ``cn`` -- an ACK or NAK ``{lsn, ece, n, nak}`` (:func:`hw.layouts.ldcp_tack_layout`);
- ``tx`` -- ``bytes`` = ``{value, start}``: ``start = 1`` starts a message of ``value`` bytes
  (only while the flow has none active); ``start = 0`` reports that the packet at LSN ``value``
  was transmitted (the scheduler took the flow's offer; a stale LSN is ignored);
- ``TIMER`` -- the wheel pops the flow's earliest deadline (release or timeout);
- ``ctl`` -- START/RESET (an idle flow, the window ``cw_init``), STOP, READ, WRITE.

Per update at ``t``, in this order (the model's docstring is the normative statement):
1. due timers as of their deadlines: a release (``rel += 1``, one send credit); a timeout (go
   back to ``una``; fast start: exit 1, the window ``fs_acked`` packets; stable: ``min(cw, 1)``;
   loads clamped to ``[gamma, cw_max]``);
2. the event (the one-flow sender's ACK, release and start rules);
3. the flow is done when ``una`` reaches the message length; the timeout is (re)armed at
   ``t + rto`` when bytes come in flight or on progress, disarmed when none are in flight;
4. the window: a stable-stage ACK applies the PAWA update, an exit loads; the release deadline
   (armed only for an active flow in the stable stage below one packet);
5. the offer (the streamed field): ``{nxt, elig, ect, retx, last, act}``, ``elig`` the gate:
   fast start ``nxt - una < IW x MTU``; stable ``credit`` below one packet, else
   ``nxt - una < ceil(cw x MTU / 2**16)``; and bytes left.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import data

from ..layouts import LdcpTxStage
from ..lib.arith import delayed, named_wire
from ..params import BlockConfig
from .flow_datapath import DatapathOut, EventKind, time_le
from .flow_engine_config import FlowEngineConfig
from .ldcp_engine import (
    LdcpDatapath,
    LdcpEngineConfig,
    check_deadline,
    check_window_engine,
    ldcp_register_list,
)
from .ldcp_transport_config import IW_WIDTH, LdcpTransportConfig
from .ldcp_window_config import CW_WIDTH, FRAC_BITS, ONE, LdcpWindowConfig

__all__ = ["LdcpTxEngineConfig", "LdcpTxDatapath", "ldcp_tx_engine", "ldcp_tx_state_layout",
           "TX_OFF", "OFFER_FLAGS"]

#: modify cycles of the sender's own rules before the window part takes its inputs (cycle 1:
#: the due timers; cycle 2: the event)
TX_OFF = 2
#: the offer field's flag bits above the LSN, in order
OFFER_FLAGS = ("elig", "ect", "retx", "last", "act")
_SAT16 = (1 << 16) - 1
#: the state fields the event cycle (2) reads from the word read in cycle 1
_C2_FIELDS = ("una", "snd_max", "msg_len", "first_ack", "credit", "new_cnt", "fs_acked",
              "rto_dl", "on", "dl", "ovr")


@dataclass(frozen=True)
class LdcpTxEngineConfig(BlockConfig):
    """The multi-flow LDCP sender.

    engine: the multi-flow engine (flows, ``time_width`` W, wheel, output FIFOs: at least the
      datapath's latency + 5 entries);
    transport: the one-flow transport's configuration (LSN width, MTU - a build-time constant
      -, ``m``, the reset values of IW, CW_BDP and RTO; its ``window`` the PAWA registers'
      reset values);
    div_steps, rel_width: as :class:`hw.nic.ldcp_engine.LdcpEngineConfig`.
    Latency: ``16 + ceil((W - 3) / div_steps)`` cycles (28 at W = 26, 2 steps per cycle).
    """

    engine: FlowEngineConfig = FlowEngineConfig(out_fifo_depth=34)
    transport: LdcpTransportConfig = field(
        default_factory=lambda: LdcpTransportConfig(window=LdcpWindowConfig(m=1)))
    div_steps: int = 2
    rel_width: int = 8

    def __post_init__(self):
        # (the window engine's checks, then the timeout's)
        check_window_engine(self, "transport", LdcpTransportConfig)
        check_deadline(self, "transport.rto_us", self.transport.rto_us,
                       self.transport.registers().rto, self.rto_width, "the timeout")

    @property
    def window_engine(self) -> LdcpEngineConfig:
        """The window part's configuration (its latency without the sender's cycles)."""
        return LdcpEngineConfig(engine=self.engine.replace(out_fifo_depth=64),
                                window=self.transport.window, div_steps=self.div_steps,
                                rel_width=self.rel_width)

    @property
    def latency(self) -> int:
        return self.window_engine.latency + TX_OFF

    @property
    def rto_width(self) -> int:
        """Bits of the ``rto`` register: a deadline stays within ``2**(W-2)`` cycles of now."""
        return self.engine.time_width - 2

    def register_map(self, name: str = "ldcp_tx_engine"):
        """The engine's register map (:func:`hw.nic.engine_regs.engine_register_map`): the
        datapath's registers, the engine's counters, the header and the per-flow windows
        (``wr`` and ``offer`` are two words each)."""
        from .engine_regs import engine_register_map
        return engine_register_map(name, LdcpTxDatapath(self), "LDTE",
                                   f"LDCP sender engine, {self.engine.n_flows} flows",
                                   flows=self.engine.n_flows,
                                   timer=self.engine.timer)


def ldcp_tx_state_layout(cfg: LdcpTxEngineConfig) -> data.StructLayout:
    """Per-flow state: the window engine's four fields first (``wr``, ``on``, ``dl``, ``ovr``:
    the same WRITE field numbers 0 ... 3), then the sender's.  ``offer`` (the streamed field):
    ``nxt`` in its low ``lsn_width`` bits, then :data:`OFFER_FLAGS`."""
    W, LW = cfg.engine.time_width, cfg.transport.lsn_width
    return data.StructLayout({
        "wr": CW_WIDTH + cfg.rel_width, "on": 1, "dl": W, "ovr": FRAC_BITS,
        "offer": LW + len(OFFER_FLAGS),
        "una": LW, "snd_max": LW, "msg_len": LW,
        "stage": 1, "first_ack": 1, "credit": 1,
        "new_cnt": IW_WIDTH, "fs_acked": IW_WIDTH,
        "rto_on": 1, "rto_dl": W,
    })


def ldcp_tx_register_list(cfg: LdcpTxEngineConfig) -> list[tuple[str, int, int]]:
    """The window's six registers, then ``iw`` (packets), ``cw_bdp`` (UQ16.16), ``rto``
    (cycles)."""
    r = cfg.transport.registers()
    return ldcp_register_list(cfg.window_engine) + [
        ("iw", IW_WIDTH, r.iw), ("cw_bdp", CW_WIDTH, r.cw_bdp), ("rto", cfg.rto_width, r.rto)]


class LdcpTxDatapath(LdcpDatapath):
    """The multi-flow LDCP sender's per-flow update (module docstring).

    Interface (the :mod:`hw.nic.flow_datapath` protocol): state :func:`ldcp_tx_state_layout`;
    CN payload :func:`hw.layouts.ldcp_tack_layout`; TX ``bytes`` = ``value | start << LW``;
    registers :func:`ldcp_tx_register_list`; rate field ``offer`` (a record whenever the
    offered packet, its gate or the flow's activity changes).

    Modify cycles: 1 the due timers (release, timeout), the timeout's go-back-N and window
    load; 2 the event (ACK, sent packet, start), ``una``/``nxt``/``snd_max``, the exits, the
    timeout's re-arm, bytes in flight; 3 ... the window part (:meth:`LdcpDatapath.window_part`
    from cycle 3: 12 window stages, the divider) with the exit's load at its window cycle; the
    gate's product ``cw' x MTU`` and compare in the two cycles after it; L the state word,
    the earlier of the two deadlines.  ``latency`` = ``16 + ceil((W - 3) / div_steps)``.
    Throughput: one update per clock (a flow's next event waits L cycles, the engine's rule).
    """

    name = "ldcp_tx"

    def __init__(self, config: LdcpTxEngineConfig | None = None):
        cfg = LdcpTxEngineConfig() if config is None else config
        if not isinstance(cfg, LdcpTxEngineConfig):
            raise TypeError(f"LdcpTxDatapath needs a LdcpTxEngineConfig, not {cfg!r}")
        super().__init__(cfg.window_engine)
        self.tx_config = cfg
        self.latency = cfg.latency
        self.state_layout = ldcp_tx_state_layout(cfg)
        t = cfg.transport
        self.cn_layout = data.StructLayout({"lsn": t.lsn_width, "ece": 1, "n": t.n_width,
                                            "nak": 1})
        self.tx_bytes_width = t.lsn_width + 1
        self.rate_field = "offer"
        self.regs = ldcp_tx_register_list(cfg)
        self.mtu = t.window.mtu

    def init_state(self, regs) -> dict:
        return {"wr": regs.cw_init}          # idle: no message, fast start, timers off

    def pre(self, m, *, kind, tx_bytes, cn, t, regs) -> dict:
        # IW x MTU depends on a register only: computed a stage early, out of the update
        return {"iw_bytes": regs.iw * self.mtu}

    def build(self, m: Module, *, state, kind, tx_bytes, cn, t, regs, pre,
              valid=None) -> DatapathOut:
        cfg = self.tx_config
        W, L = self.time_width, self.latency
        LW = cfg.transport.lsn_width
        mtu = self.mtu
        s = state

        def wire(name, expr, width=None):
            return named_wire(m, "tx_" + name, expr, width)

        def at(x, frm, to, name):
            return delayed(m, x, to - frm, "tx_" + name)

        def clamp(v):
            return Mux(v < regs.gamma, regs.gamma, Mux(v > regs.cw_max, regs.cw_max, v))

        # ---- cycle 1: the due timers, as of their deadlines ---------------------------------
        nxt0 = s.offer[:LW]
        act0 = s.offer[LW + OFFER_FLAGS.index("act")]
        cw0 = s.wr[:CW_WIDTH]
        rel_due = wire("rel_due", s.on & time_le(s.dl, t, W))
        rto_due = wire("rto_due", s.rto_on & time_le(s.rto_dl, t, W))
        fast0 = s.stage == LdcpTxStage.FAST
        # the timeout's window load (exit 1 in fast start, min(cw, 1) in the stable stage)
        rto_load = Mux(fast0, s.fs_acked << FRAC_BITS, Mux(cw0 < ONE, cw0, ONE))
        cw_in = wire("cw_in", Mux(rto_due, clamp(rto_load), cw0), CW_WIDTH)
        nxt1 = wire("nxt1", Mux(rto_due, s.una, nxt0), LW)
        stage1 = wire("stage1", Mux(rto_due, LdcpTxStage.STABLE, s.stage))
        # the earlier of the applied deadlines (lateness); both due: the earlier one
        rel_first = time_le(s.dl, s.rto_dl, W)
        late = wire("late", Mux(rel_due & (~rto_due | rel_first), t - s.dl, t - s.rto_dl), W)
        # the state fields cycle 2 reads (the window's cw comes as cw_in, nxt as nxt1; the
        # stage and rto_on are not read again), carried one cycle
        c1 = {**{"s_" + f: s[f] for f in _C2_FIELDS}, "s_wr_hi": s.wr[CW_WIDTH:],
              "kind": kind, "tx": tx_bytes, "cn": cn.as_value(), "t": t,
              "rel_due": rel_due, "rto_due": rto_due, "cw_in": cw_in, "nxt1": nxt1,
              "stage1": stage1, "late": late, "act": act0,
              "counting0": wire("counting0", act0 & (s.una < nxt1)),
              "left0": wire("left0", nxt1 < s.msg_len),
              "iw_bytes": pre["iw_bytes"]}
        r = {k: at(v, 1, 2, "c1_" + k) for k, v in c1.items()}
        s2 = SimpleNamespace(**{f: r["s_" + f] for f in _C2_FIELDS})
        a = self.cn_layout(r["cn"])

        # ---- cycle 2: the event --------------------------------------------------------------
        act, t2, nxt1, una1 = r["act"], r["t"], r["nxt1"], s2.una
        fast1 = r["stage1"] == LdcpTxStage.FAST
        is_ack = (r["kind"] == EventKind.CN) & act
        valid_ack = wire("ack_ok", is_ack & (a.lsn <= s2.snd_max))
        progress = wire("progress", valid_ack & (a.lsn > una1))
        una2 = wire("una2", Mux(progress, a.lsn, una1), LW)
        fs_sum = s2.fs_acked + a.n
        fs_new = wire("fs_new", Mux(fs_sum > _SAT16, _SAT16, fs_sum), IW_WIDTH)
        ge_iw = Mux(progress, a.lsn >= r["iw_bytes"], una1 >= r["iw_bytes"])
        exit1 = wire("exit1", valid_ack & fast1 & a.nak)
        exit2 = wire("exit2", valid_ack & fast1 & ~a.nak & ge_iw)
        win_ack = wire("win_ack", valid_ack & ~fast1 & (a.n != 0))
        passed = Mux(progress, nxt1 < a.lsn, 0)
        nxt_ack = Mux(valid_ack & (a.nak | passed), una2, nxt1)
        is_tx = r["kind"] == EventKind.TX
        tv, tstart = r["tx"][:LW], r["tx"][LW]
        start = wire("start", is_tx & tstart & ~act)
        sent = wire("sent", is_tx & ~tstart & act & (tv == nxt1) & r["left0"])
        remaining = (s2.msg_len - nxt1)[:LW]
        length = Mux(remaining > mtu, mtu, remaining)
        end = wire("end", (nxt1 + length)[:LW], LW)
        new_pkt = nxt1 >= s2.snd_max
        nxt2 = wire("nxt2", Mux(start, 0, Mux(sent, end, nxt_ack)), LW)
        una3 = wire("una3", Mux(start, 0, una2), LW)
        snd_max2 = wire("snd_max2", Mux(start, 0, Mux(sent & new_pkt, end, s2.snd_max)), LW)
        msg2 = wire("msg2", Mux(start, tv, s2.msg_len), LW)
        nc_inc = Mux(s2.new_cnt == _SAT16, _SAT16, s2.new_cnt + 1)
        new_cnt2 = Mux(start, 0, Mux(sent & new_pkt, nc_inc, s2.new_cnt))
        fs2 = Mux(start, 0, Mux(valid_ack & fast1, fs_new, s2.fs_acked))
        first2 = Mux(start, 0, s2.first_ack | (valid_ack & fast1))
        stage2 = Mux(start, LdcpTxStage.FAST, Mux(exit1 | exit2, LdcpTxStage.STABLE,
                                                  r["stage1"]))
        credit2 = Mux(start | sent, 0, s2.credit | r["rel_due"])
        # done: una reaches the message length (una3 == msg2 compared on both candidates)
        done = Mux(progress, a.lsn == s2.msg_len, una1 == s2.msg_len)
        act2 = wire("act2", Mux(start, tv != 0, act & ~done))
        counting = wire("counting", act2 & (una3 < nxt2))
        restart = counting & (~r["counting0"] | progress)
        rto = regs.rto
        rto_dl2 = Mux(restart, (t2 + Mux(rto == 0, 1, rto))[:W], s2.rto_dl)
        exit_v = Mux(exit1, fs_new << FRAC_BITS, regs.cw_bdp)
        c2 = {"stage": stage2, "first": first2, "credit": credit2,
              "act": act2, "nxt": nxt2, "una": una3, "snd_max": snd_max2, "msg": msg2,
              # (new_cnt saturates at 2**16 - 1: its 17th bit is always 0)
              "new_cnt": new_cnt2[:IW_WIDTH], "fs": fs2, "rto_on": counting, "rto_dl": rto_dl2,
              "inflight": wire("inflight", (nxt2 - una3)[:LW], LW),
              "left": wire("left", nxt2 < msg2),
              "last": wire("last", (msg2 - nxt2)[:LW] <= mtu),
              "retx": wire("retx", nxt2 < snd_max2),
              "iw_hit": (new_cnt2 + 1) == regs.iw,
              "fast_gate": wire("fast_gate", (nxt2 - una3)[:LW] < r["iw_bytes"]),
              "load": exit1 | exit2, "load_v": wire("exit_v", clamp(exit_v), CW_WIDTH),
              "expired": r["rel_due"] | r["rto_due"], "late": r["late"]}
        q = {k: at(v, 2, 3, "c2_" + k) for k, v in c2.items()}

        # ---- cycles 3 ... L: the window part, then the gate ---------------------------------
        A = 3
        enable_l = at(wire("tmr_en", (q["stage"] == LdcpTxStage.STABLE) & q["act"]), A, L,
                      "tmr_en")
        wp = self.window_part(
            m, wr=at(Cat(r["cw_in"], r["s_wr_hi"]), 2, A, "wr_in"),
            on=at(s2.on, 2, A, "on"), dl=at(s2.dl, 2, A, "dl"), ovr=at(s2.ovr, 2, A, "ovr"),
            n_marked=at(Mux(win_ack & a.ece, a.n, 0), 2, A, "nm"),
            n_unmarked=at(Mux(win_ack & ~a.ece, a.n, 0), 2, A, "nu"),
            t=at(t2, 2, A, "t_w"), regs=regs,
            # (no valid: in the window datapath it only feeds an output-valid chain that the
            # window part never reads)
            off=A - 1, load=q["load"], load_value=q["load_v"], enable=enable_l)
        WIN = wp.win_at
        assert WIN + 2 <= L
        # the gate from the new window: ceil(cw' x MTU / 2**16) bytes (the one-flow gate)
        prod = at(wire("gprod", wp.new_w * mtu), WIN, WIN + 1, "gprod")
        win_bytes = wire("win_bytes", (prod + ONE - 1) >> FRAC_BITS)
        infl = at(q["inflight"], A, WIN + 1, "infl")
        win_gate = at(wire("win_gate", infl < win_bytes), WIN + 1, L, "win_gate")
        new_sub1 = at(wp.new_w[FRAC_BITS:] == 0, WIN, L, "gsub1")

        def lq(name):
            return at(q[name], A, L, "l_" + name)

        stable_l = lq("stage") == LdcpTxStage.STABLE
        credit_l = wire("credit_l", lq("credit") & new_sub1 & stable_l & lq("act"))
        gate = Mux(~stable_l, lq("fast_gate"), Mux(new_sub1, credit_l, win_gate))
        last_l = lq("last")
        elig = wire("elig", lq("act") & lq("left") & gate)
        ect = stable_l | lq("first") | lq("iw_hit") | last_l
        nxt = Signal(self.state_layout, name="tx_next")
        flags = {"elig": elig, "ect": ect, "retx": lq("retx"), "last": last_l,
                 "act": lq("act")}
        m.d.comb += [
            nxt.wr.eq(wp.wr), nxt.on.eq(wp.sub1), nxt.dl.eq(wp.dl), nxt.ovr.eq(wp.ovr),
            nxt.offer[:LW].eq(lq("nxt")),
            nxt.una.eq(lq("una")), nxt.snd_max.eq(lq("snd_max")), nxt.msg_len.eq(lq("msg")),
            nxt.stage.eq(lq("stage")), nxt.first_ack.eq(lq("first")), nxt.credit.eq(credit_l),
            nxt.new_cnt.eq(lq("new_cnt")), nxt.fs_acked.eq(lq("fs")),
            nxt.rto_on.eq(lq("rto_on")), nxt.rto_dl.eq(lq("rto_dl")),
        ]
        m.d.comb += [nxt.offer[LW + i].eq(flags[n]) for i, n in enumerate(OFFER_FLAGS)]
        # the flow's earliest deadline (the wheel holds one per flow)
        rel_first = time_le(wp.dl, nxt.rto_dl, W)
        wake = wire("wake", Mux(wp.sub1 & (~nxt.rto_on | rel_first), wp.dl, nxt.rto_dl), W)
        return DatapathOut(next_state=nxt, wake_valid=wp.sub1 | nxt.rto_on, wake=wake,
                           expired=lq("expired"), late=lq("late"))


def ldcp_tx_engine(config: LdcpTxEngineConfig | None = None):
    """The top: :class:`~hw.nic.flow_engine.FlowEngine` around an :class:`LdcpTxDatapath`,
    with the register map's header and per-flow windows
    (:class:`hw.nic.engine_regs.EngineRegs`)."""
    from .engine_regs import EngineRegs
    from .flow_engine import FlowEngine
    cfg = LdcpTxEngineConfig() if config is None else config
    return EngineRegs(FlowEngine(cfg.engine, LdcpTxDatapath(cfg)), cfg.register_map())
