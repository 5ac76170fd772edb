"""Formal properties of the multi-flow engine (:mod:`hw.nic.flow_engine`) with the toy datapath.

The harness is a miter between the pipelined :class:`FlowEngine` (flow table in RAM, arbiter,
read -> modify -> write-back pipeline with same-flow forwarding, timer wheel, output FIFOs) and
a one-event-at-a-time reference written here: per flow, a shadow of the state word (the toy's
fields and the enable bit) that takes each event in the cycle the engine ACCEPTS it, observed
on the engine's ports (``tx``/``cn``/``ctl`` handshakes, and the timer service's ``pop``
handshake: the wheel is built by the harness and handed to the engine through its documented
``wheel`` factory parameter), with the event's time stamp ``now`` (the ``now`` port), and
updates it at once: the toy's update (the datapath's own one-cycle ``build``, a second
instance, latency 1) for TX/CN/TIMER events of an enabled flow, the control operations'
documented effects (START, STOP, RESET, READ, WRITE of a field) for ``ctl``.  The claims use
only the ports and the module's documented latency (:func:`pipe_depth`), not the pipeline's
internals, so they hold for any re-timing that keeps the contract:

* **one event per clock**: at most one of the four handshakes in a cycle;
* **outputs equal the reference's** (both streams, in order, symbolic-index style: the harness
  picks any ``k`` (a free constant) and latches the k-th output the reference expects, a
  ``{flow, rate}`` record for every event that changes its flow's rate, the whole state word
  (toy fields and ``en``) for every READ; the k-th record to leave must equal it, and no record
  may leave that the reference does not expect).  Since every event is followed by READs of
  any flow at any distance (back to back included), this is the "pipelined engine equals the
  reference on every flow" claim: forwarding at every distance, stalls of both outputs;
* **no event lost, on time**: the expected record leaves at the latest ``pipe_depth + 1``
  cycles after its event was accepted, plus the cycles the consumer held ``ready`` low
  meanwhile (exactly then if the consumer is ready in that cycle), and the records owed (the
  reference's count minus the stream's) never exceed ``out_fifo_depth`` (the engine's credit
  rule: an event issues only when the FIFO has room for everything in flight);
* **every accepted event counted once at write-back**: the counters ``ev_tx``, ``ev_cn``,
  ``ev_timer``, ``ev_ctl`` (read on the register port, any address any cycle) equal the
  harness's own counts of the handshakes ``pipe_depth`` cycles earlier.

``flow_engine.miter`` asserts all of this with any back-pressure on both outputs.  The data
are kept small (TX byte counts 0 ... 3, WRITE values 0 ... 7, into any field): the solver's
work is the datapath's arithmetic along the forwarding paths, and ordering, loss or a wrong
forwarding source show on small values as well.

``flow_engine.pops`` (outputs always drained, no data comparison, so it reaches further)
asserts that **the engine takes every pop in the cycle the wheel offers it** (inputs never
delay a timer: the arbiter's first priority, and a drained rate FIFO always has room), with
the one-event-per-clock and counter claims.  With the wheel's own contract (an entry pops in
its slot, checked against its model in tests/test_timer_wheel.py) this is the engine's part of
"every due timer is serviced within the stated bound".

``LATENESS`` (not in ``PROPERTIES``) states the bound itself: no enabled flow of the reference
has an armed deadline more than ``reeval - 1`` cycles in the past (docs/flow-engine.md,
"Lateness"), with the outputs drained and no WRITE of a timer field (a WRITE of a past deadline
is late by however far in the past it was written, by design); it asserts the bound only (the
output and counter claims are the other two properties').  (The step counts of this paragraph
were measured with the flow table read in 2 cycles, ``reeval`` = 7 and the bound 6; each is two
steps later with the read latency 4 of the twelfth session, not re-run.)  A violation needs 18
steps: the init sweep ends at step 2 (``N_FLOWS`` cycles), a START enables a flow, a TX at step
3 arms its timer at ``3 + period`` = 10, and the deadline is overdue by more than ``reeval -
1`` = 6 at step 17.  With the output and counter claims the check did not get past step 12 in
minutes on the loaded development machine; with the bound only it passes BMC 20 in 42 s (28
November 2026, load 11).  Its cover run (cheap) reaches lateness 1, 2 and 3 (steps 15 to 17) and
not 4 to 6 within 22 steps.  A smaller instance does not shorten that window: it is set by the
engine's timing, not by the sizes.  The period cannot be shorter than ``reeval`` = ``pipe_depth
+ insert latency`` (7 then, 9 now): the toy reloads from the old deadline (``dl += period``, no
drift), so with a shorter period each reload comes due before its insert can pop and is later
than the last by ``reeval - period``: the bound fails by design.  The bound itself is ``reeval -
1``, fixed by the same latencies.  One flow instead of two saves one step of the sweep (17) but
removes the two-flow collisions, one of the causes the bound is about; the wheel is already at
the smallest sizes its configuration allows for the engine's entries, and fewer slots change no
latency.  And a BMC at that depth would be a weak claim anyway: lateness builds up from
collisions and stale wheel entries over several periods, so the bound for every trace needs an
induction proof with invariants of the wheel (its bitmap and slot RAM against the flows' armed
deadlines and generations).

The induction is begun, not finished: ``_harness(..., invariants=True)`` elaborates the
engine and its wheel itself (:func:`_internals`: the blocks then use these fragments; no
change to them) and asserts invariants of their state, grouped (``INVARIANT_GROUPS``):
"wheel" (the cursor's lag register is ``now + 1 - wbt``, word-aligned; the summary flags,
with the last decision ORed in as the wheel's readers do, are ``nz`` / "all bits set" of
the RAM words; the look-ahead registers ``p1``, ``p2`` and the look-ahead read hold the
next three words; the cursor's bits are among its RAM word's; ``occupancy`` = the live
bits; the decision registers ``a_*`` agree), "bounds" (the lag and the pops still to make
in the cursor's word sum to at most ``LAG_MAX``; every live bit within ``AHEAD_MAX`` slots
of the cursor; the inserts in flight between ``insert_latency - 2`` and the horizon after
``now``), "engine" (nothing before the init sweep ends; every pop taken at once; no insert
overflows; drained FIFOs hold at most one record) and "entries" (per flow, the table's
``q_mask`` bit g = its entries of generation g: live bits whose slot RAM word names it, the
wheel's insert stages and pop register, the pops in the pipeline; ``q_valid`` = the live
generation's bit; the write-back stage's
wheel fields, its forwarding selects and sources, and the modify stage's RAM word equal
the table's newest word).  ``INVARIANTS`` (those alone) and ``LATENESS_INDUCTION`` (with
the bound) are ``mode="prove"`` properties outside ``PROPERTIES``; docs/verification.md
("Flow engine") has where the induction stands.  Not written: the reference equals the
table word with the events in flight applied; the live entry's slot against the flow's
deadline (the lateness argument itself).

Configuration: 2 flows, 10-bit time, the toy with a 4-bit rate (max 9, step 3: the rate
saturates and halves within a few events) and a period of ``reeval`` = 9 cycles (the
shortest with which a reload is never late by design); the timer wheel is the project's
:class:`TimerWheel` with 4-bit bitmap words, 64 slots and a 16-cycle horizon (the smallest
sizes its configuration allows for the engine's 16 entries; the engine's capacity rule
holds).  No register writes
(the registers keep their reset values); no reset after the initial state (the init sweep is
in every trace).  Bounded (BMC): the depths are stated with the properties.
"""

from __future__ import annotations

from dataclasses import replace

from amaranth.hdl import (
    Assert,
    Assume,
    Cat,
    Const,
    Cover,
    Fragment,
    Module,
    Mux,
    ResetSignal,
    Signal,
)
from amaranth.hdl._ast import AnyConst, AnySeq
from amaranth.lib import data

from hw.nic.flow_datapath import CtlOp, EventKind, ToyDatapath
from hw.nic.flow_engine import COUNTER_BASE, COUNTERS, FlowEngine, pipe_depth, reeval
from hw.nic.flow_engine_config import TABLE_LATENCY, FlowEngineConfig
from hw.nic.timer_wheel import TimerWheel

from .runner import Property

__all__ = ["PROPERTIES", "small_engine"]

N_FLOWS = 2
TIME_WIDTH = 10
#: the toy's timer period: reeval (9), the shortest a reload is never late by design
PERIOD = reeval(1)
STEP = 3
MAX_RATE = 9
RATE_WIDTH = 4


def small_engine(latency: int = 1):
    """(engine, its wheel, the toy datapath) of the harness configuration."""
    L = latency
    cfg = FlowEngineConfig(n_flows=N_FLOWS, time_width=TIME_WIDTH, wheel_slots=256,
                           wheel_horizon=128, out_fifo_depth=pipe_depth(L) + 2,
                           wheel_entries_per_flow=8)
    dp = ToyDatapath(TIME_WIDTH, period=PERIOD, step=STEP, max_rate=MAX_RATE,
                     rate_width=RATE_WIDTH, latency=L)
    # the engine's wheel (same entries, flow/gen widths, time width and insert latency), with
    # the smallest words, slots and horizon its configuration allows
    wheel = TimerWheel(replace(cfg.wheel_config(), slots=64, horizon=16, word_bits=4))
    return FlowEngine(cfg, dp, wheel=lambda _cfg: wheel), wheel, dp


#: bounds of the induction's invariants (cursor lag, entries ahead of the cursor's word)
LAG_MAX = 7
AHEAD_MAX = 40
#: the invariants' groups asserted (all of them for the proof; subsets to find which hold)
INVARIANT_GROUPS = ("wheel", "bounds", "engine", "entries")


def _group(name: str) -> str:
    if name.startswith(("lag_max", "ahead", "lag_ins", "lag_pace")):
        return "bounds"
    if name.startswith(("count", "gen", "live", "q_")):
        return "entries"
    if name.startswith(("sweep", "idle", "swept", "pop_taken", "no_ovf", "rate_fifo",
                        "rd_fifo")):
        return "engine"
    return "wheel"


def _internals(dut, wheel):
    """Elaborate the engine and its wheel here and return their internal signals by name
    (``(engine, wheel, fifo levels, memories)``), so that the induction's invariants can
    speak of the state: the engine and the wheel then use these elaborated fragments (a
    formal hook of the harness only, no change to the blocks)."""
    def names(frag):
        out = {}
        for stmts in frag.statements.values():
            for s in stmts:
                for sig in s._lhs_signals() | s._rhs_signals():
                    out.setdefault(sig.name, {})[id(sig)] = sig
        return {k: next(iter(v.values())) for k, v in out.items() if k and len(v) == 1}

    wfrag = Fragment.get(type(wheel).elaborate(wheel, None), None)
    wheel.elaborate = lambda platform: wfrag
    efrag = Fragment.get(type(dut).elaborate(dut, None), None)
    dut.elaborate = lambda platform: efrag
    subs = {name: frag for frag, name, _ in efrag.subfragments}
    wsubs = {name: frag for frag, name, _ in wfrag.subfragments}
    levels = {k: names(subs[k])["level"] for k in ("rate_fifo", "rd_fifo")}
    mems = {"table": subs["table"], "bitmap": wsubs["bitmap"], "slot_ram": wsubs["slot_ram"]}
    return names(efrag), names(wfrag), levels, mems


def _mem_words(m, mem, n, width, name):
    """Every word of a memory, through asynchronous read ports added to it."""
    words = []
    for a in range(n):
        d = Signal(width, name=f"{name}{a}")
        mem.read_port(domain="comb", addr=Const(a, range(n)), data=d, en=Const(1),
                      transparent_for=())
        words.append(d)
    return words


def _harness(what: str, latency: int = 1, invariants: bool = False):
    """``what``: "miter" (any back-pressure, outputs compared with the reference), "pops"
    (outputs drained, every pop offered taken at once) or "lateness" (outputs drained, no
    WRITE of a timer field, no armed deadline overdue by more than ``TIMER_BOUND``)."""
    stalls = data_checks = what == "miter"
    timers = what in ("lateness", "invariants")
    pops_taken = what == "pops"
    io_claims = not timers

    def build():
        m = Module()
        dut, wheel, dp = small_engine(latency)
        internals = _internals(dut, wheel) if invariants else None
        m.submodules.dut = dut
        cfg = dut.config
        word_lay = dut.layouts["word"]
        N, W = cfg.n_flows, cfg.time_width
        WB = pipe_depth(dp.latency)
        ref_dp = ToyDatapath(W, period=PERIOD, step=STEP, max_rate=MAX_RATE,
                             rate_width=RATE_WIDTH, latency=1)
        fields = list(data.Layout.cast(ref_dp.state_layout))

        m.d.comb += Assume(~ResetSignal())
        # -- inputs: anything, any cycle ---------------------------------------------------------
        for s in (dut.tx, dut.cn, dut.ctl):
            m.d.comb += [s.valid.eq(AnySeq(1)), s.payload.eq(AnySeq(len(s.payload.as_value())))]
        m.d.comb += [dut.csr_w.valid.eq(0), dut.csr_raddr.eq(AnySeq(len(dut.csr_raddr)))]
        # small data (the solver's work is the datapath's arithmetic along the forwarding
        # paths): TX byte counts 0 ... 3, WRITE values 0 ... 7 (into any field)
        m.d.comb += [Assume(dut.tx.payload.bytes < 4), Assume(dut.ctl.payload.value < 8)]
        if stalls:
            m.d.comb += [dut.rate.ready.eq(AnySeq(1)), dut.rd.ready.eq(AnySeq(1))]
        else:
            m.d.comb += [dut.rate.ready.eq(1), dut.rd.ready.eq(1)]
        if timers:
            # a WRITE of a past deadline is late by design (docs/flow-engine.md): no WRITE of
            # the deadline or the armed bit
            m.d.comb += Assume(~dut.ctl.valid | (dut.ctl.payload.op != CtlOp.WRITE)
                               | ((dut.ctl.payload.field != 3) & (dut.ctl.payload.field != 4)))

        # -- the accepted event, observed on the ports -------------------------------------------
        pop = wheel.pop
        acc = {"pop": pop.valid & pop.ready, "ctl": dut.ctl.valid & dut.ctl.ready,
               "cn": dut.cn.valid & dut.cn.ready, "tx": dut.tx.valid & dut.tx.ready}
        m.d.comb += Assert(sum(acc.values()) <= 1)

        def claim(cond):
            """The output and counter claims (miter, pops); the lateness proof leaves them to
            those properties (its induction would need their invariants too)."""
            if io_claims:
                m.d.comb += Assert(cond)
        any_acc = acc["pop"] | acc["ctl"] | acc["cn"] | acc["tx"]
        flow = Signal(cfg.flow_width)
        kind = Signal(EventKind)
        with m.If(acc["pop"]):
            m.d.comb += [flow.eq(pop.payload.flow), kind.eq(EventKind.TIMER)]
        with m.Elif(acc["ctl"]):
            m.d.comb += flow.eq(dut.ctl.payload.flow)
        with m.Elif(acc["cn"]):
            m.d.comb += [flow.eq(dut.cn.payload.flow), kind.eq(EventKind.CN)]
        with m.Else():
            m.d.comb += [flow.eq(dut.tx.payload.flow), kind.eq(EventKind.TX)]

        # -- the reference: per-flow shadow state, updated at acceptance --------------------------
        ref = [Signal(ref_dp.state_layout, name=f"ref{f}") for f in range(N)]
        ref_en = [Signal(name=f"ref{f}_en") for f in range(N)]
        cur = Signal(ref_dp.state_layout)
        cur_en = Signal()
        for f in range(N):
            with m.If(flow == f):
                m.d.comb += [cur.eq(ref[f]), cur_en.eq(ref_en[f])]
        regs = Signal(ref_dp.regs_layout, init=ref_dp.regs_reset())   # no register writes
        now = dut.now
        pre = {k: Signal.like(v, name=f"ref_pre_{k}") if isinstance(v, Signal) else v
               for k, v in ref_dp.pre(m, kind=kind, tx_bytes=dut.tx.payload.bytes,
                                      cn=dut.cn.payload.cn, t=now, regs=regs).items()}
        upd = ref_dp.build(m, state=cur, kind=kind, tx_bytes=dut.tx.payload.bytes,
                           cn=dut.cn.payload.cn, t=now, regs=regs, pre=pre)
        init = Signal(ref_dp.state_layout)
        for name, value in ref_dp.init_state(regs).items():
            m.d.comb += init[name].eq(value)
        c = dut.ctl.payload
        written = Signal(ref_dp.state_layout)
        m.d.comb += written.eq(cur)
        with m.Switch(c.field):
            for i, (name, _) in enumerate(fields):
                with m.Case(i):
                    m.d.comb += written[name].eq(c.value)
        nxt = Signal(ref_dp.state_layout)
        nxt_en = Signal()
        m.d.comb += [nxt.eq(cur), nxt_en.eq(cur_en)]
        with m.If(acc["ctl"]):
            with m.Switch(c.op):
                with m.Case(CtlOp.START):
                    m.d.comb += [nxt.eq(init), nxt_en.eq(1)]
                with m.Case(CtlOp.STOP):
                    m.d.comb += nxt_en.eq(0)
                with m.Case(CtlOp.RESET):
                    m.d.comb += nxt.eq(init)
                with m.Case(CtlOp.WRITE):
                    m.d.comb += nxt.eq(written)
        with m.Elif(cur_en):
            m.d.comb += nxt.eq(upd.next_state)
        for f in range(N):
            with m.If(any_acc & (flow == f)):
                m.d.sync += [ref[f].eq(nxt), ref_en[f].eq(nxt_en)]

        # -- outputs: the k-th expected record of each stream ------------------------------------
        CW = 6
        rd_word = dut.layouts["rd"]
        streams = {
            "rate": (dut.rate, any_acc & (nxt.rate != cur.rate),
                     lambda p: (p.flow == flow) & (p.rate == nxt.rate)),
            "rd": (dut.rd, acc["ctl"] & (c.op == CtlOp.READ),
                   lambda p: (p.flow == flow) & (p.word.algo.as_value() == cur.as_value())
                   & (p.word.en == cur_en)),
        }
        checked = {}
        for name, (port, expect, _) in streams.items():
            k = Signal(CW, name=f"{name}_k")
            m.d.comb += k.eq(AnyConst(CW))
            n_exp = Signal(CW + 1, name=f"{name}_n_exp")
            n_out = Signal(CW + 1, name=f"{name}_n_out")
            latched = Signal(name=f"{name}_latched")
            done = Signal(name=f"{name}_done")
            exp_val = Signal(len(port.payload.as_value()), name=f"{name}_exp")
            age = Signal(CW + 1, name=f"{name}_age")        # cycles since acceptance ...
            held = Signal(CW + 1, name=f"{name}_held")      # ... of which ready was low
            fire = port.valid & port.ready
            exp_now = Signal(len(port.payload.as_value()), name=f"{name}_exp_now")
            if name == "rate":
                m.d.comb += exp_now.eq(Cat(flow, nxt.rate))
            else:
                word = Signal(rd_word, name="rd_exp_word")
                m.d.comb += [word.flow.eq(flow), word.word.algo.eq(cur), word.word.en.eq(cur_en)]
                exp_now = word.as_value()
            with m.If(expect):
                m.d.sync += n_exp.eq(n_exp + 1)
                with m.If(n_exp == k):
                    # the stalls count from the acceptance cycle (an output ahead may be due)
                    m.d.sync += [latched.eq(1), exp_val.eq(exp_now), age.eq(0),
                                 held.eq(~port.ready)]
            with m.If(fire):
                m.d.sync += n_out.eq(n_out + 1)
                # no record the reference does not expect (nor ahead of its event)
                claim(n_out < n_exp)
            # the credit rule: never more records owed than the FIFO holds (else one is lost)
            claim(n_exp - n_out <= cfg.out_fifo_depth)
            with m.If(latched & ~done):
                m.d.sync += [age.eq(age + 1), held.eq(held + ~port.ready)]
            is_k = fire & (n_out == k)
            with m.If(is_k):
                m.d.sync += done.eq(1)
                claim(latched)
                if not data_checks:
                    pass
                elif name == "rate":
                    claim(port.payload.as_value() == exp_val)
                else:
                    got = port.payload
                    want = data.View(rd_word, exp_val)
                    claim((got.flow == want.flow)
                          & (got.word.algo.as_value() == want.word.algo.as_value())
                          & (got.word.en == want.word.en))
            # on time: leaves pipe_depth + 1 cycles after acceptance, plus the stalls meanwhile
            pending = latched & ~done
            claim(~pending | (age - held <= WB))
            with m.If(pending & (age - held == WB) & port.ready):
                claim(is_k)
            checked[name] = is_k

        # -- counters: every accepted event counted once, at write-back --------------------------
        srcs = {"ev_tx": "tx", "ev_cn": "cn", "ev_timer": "pop", "ev_ctl": "ctl"}
        hist = {}
        for cname, src in srcs.items():
            cnt = Signal(CW, name=f"n_{src}")
            with m.If(acc[src]):
                m.d.sync += cnt.eq(cnt + 1)
            line = cnt
            for j in range(WB + 1):
                d = Signal(CW, name=f"n_{src}_d{j + 1}")
                m.d.sync += d.eq(line)
                line = d
            hist[cname] = line
        raddr_q = Signal.like(dut.csr_raddr)
        m.d.sync += raddr_q.eq(dut.csr_raddr)
        for cname, line in hist.items():
            with m.If(raddr_q == COUNTER_BASE + COUNTERS.index(cname)):
                claim(dut.csr_rdata == line)

        # -- timers: no enabled flow's armed deadline overdue by more than the bound --------------
        lags = []
        for f in range(N):
            lag = Signal(W, name=f"lag{f}")
            m.d.comb += lag.eq(now - ref[f].dl)
            overdue = ref_en[f] & ref[f].armed & ~lag[W - 1]
            lags.append((overdue, lag))
            if what == "lateness":
                m.d.comb += Assert(~overdue | (lag <= TIMER_BOUND))
        if pops_taken:
            # inputs never delay a pop (the arbiter's first priority; the rate FIFO, drained,
            # always has room): the engine takes every pop in the cycle the wheel offers it
            m.d.comb += Assert(~pop.valid | pop.ready)

        # -- induction invariants (the lateness proof): each one asserted, all proven together --
        if invariants:
            E, Wh, levels, mems = internals
            wc = wheel.config
            B, S, NWD, WS = wc.word_bits, wc.slots, wc.n_words, wc.word_shift
            K = len(Wh["nz_g0"])
            nz_r = Cat(*[Wh[f"nz_g{g}"] for g in range(NWD // K)])
            full_r = Cat(*[Wh[f"full_g{g}"] for g in range(NWD // K)])
            bm = _mem_words(m, mems["bitmap"], NWD, B, "inv_bm")
            slot_ram = _mem_words(m, mems["slot_ram"], S, wc.entry_bits, "inv_slot")
            table = [data.View(word_lay, w)
                     for w in _mem_words(m, mems["table"], N, word_lay.size, "inv_tab")]
            wbt, lag1 = Wh["wbt"], Wh["cur_lag"]
            cw = wbt[WS:wc.slot_bits]
            cwn = [(cw + j)[:len(cw)] for j in range(4)]     # the cursor's word and the next
            a_valid, a_word, a_bit = Wh["a_valid"], Wh["a_word"], Wh["a_bit"]

            def a_oh(w):
                return Mux(a_valid & (a_word == w), Const(1, B) << a_bit, 0)

            # the summary flags as the wheel sees them: the registers take the last decision
            # (a_*) one cycle late, every reader ORs it in
            a_full = Wh.get("a_full", Const(0))
            nz = Signal(NWD, name="inv_nz")
            full = Signal(NWD, name="inv_full")
            # (and the cursor's leave, one cycle late too: every reader clears the word it
            # left, before the decision's set)
            for w in range(NWD):
                at = a_valid & (a_word == w)
                left = Wh["leave_r"] & (Wh["lv_word"] == w)
                m.d.comb += [nz[w].eq((nz_r[w] & ~left) | at),
                             full[w].eq((full_r[w] & ~left) | (at & a_full))]

            live = [Signal(B, name=f"inv_live{w}") for w in range(NWD)]
            for w in range(NWD):
                m.d.comb += live[w].eq(Mux(cw == w, Wh["bits_eff"], Mux(nz[w], bm[w], 0)))

            def live_at(wi):
                x = Signal(B, name="")
                for w in range(NWD):
                    with m.If(wi == w):
                        m.d.comb += x.eq(Mux(nz[w], bm[w], 0))
                return x
            inv = []
            # the cursor: its lag register is now + lookahead - wbt; words start at a multiple
            # of B
            inv.append(("lag", lag1 == (now + wc.lookahead - wbt)[:W]))
            inv.append(("wbt_aligned", wbt[:WS] == 0))
            # the last decision's registers agree (its summary update, decoded)
            inv.append(("a_data", ~a_valid | ((Wh["a_data"] >> a_bit)[0] == 1)))
            if "a_hi" in Wh:
                lk = (K - 1).bit_length()
                inv.append(("a_hi", ~a_valid | (Wh["a_hi"] == Const(1, len(Wh["a_hi"]))
                                                 << a_word[lk:])))
                inv.append(("a_lo", ~a_valid | (Wh["a_lo"] == Const(1, K) << a_word[:lk])))
                inv.append(("a_full", a_full == (a_valid & (Wh["a_data"] == (1 << B) - 1))))
            # the summary: full = nz and all B bits set in the RAM word
            for w in range(NWD):
                inv.append((f"full{w}", full[w] == (nz[w] & (bm[w] == (1 << B) - 1))))
            # the cursor's look-ahead registers hold the next words (the last decision
            # forwarded where they are used)
            inv.append(("p1", (Wh["p1"] | a_oh(cwn[1])) == live_at(cwn[1])))
            inv.append(("p2", (Wh["p2"] | a_oh(cwn[2])) == live_at(cwn[2])))
            r_nz = Mux(Wh["leave_r"], Wh["nz4"], Wh["nz3"])
            inv.append(("p3", (Mux(r_nz, Wh["b_rdc__data"], 0) | a_oh(cwn[3]))
                        == live_at(cwn[3])))
            # the cursor's own bits are among its word's RAM bits
            cur_ram = live_at(cw)
            inv.append(("cur_bits", (Wh["bits_eff"] & ~cur_ram) == 0))
            # occupancy = the live bits
            inv.append(("occupancy",
                        Wh["occupancy"] == sum(live[w][i] for w in range(NWD) for i in range(B))))
            # drained outputs: the FIFOs never hold more than one record
            inv += [(f"{k}_level", levels[k] <= 1) for k in levels]
            # -- the engine's pipeline, its table and the wheel's entries -------------------------
            lay = dut.layouts
            ev_lay = data.StructLayout({
                "flow": cfg.flow_width, "src": 2, "bytes": dp.tx_bytes_width, "cn": dp.cn_layout,
                "op": CtlOp, "field": lay["ctl"].members["field"],
                "value": lay["ctl"].members["value"], "gen": 2})
            sv = {k: E[f"s{k}_valid"] for k in range(1, WB + 1)}
            sev = {k: data.View(ev_lay, E[f"s{k}_ev"]) for k in range(1, WB + 1)}
            assert all(len(E[f"s{k}_ev"]) == ev_lay.size for k in sev)
            swept = E["swept"]
            # the init sweep: nothing happens before it ends
            idle = [~Wh["s1_valid"], ~Wh["s2_valid"], ~a_valid, ~pop.valid,
                    Wh["occupancy"] == 0, nz_r == 0, wbt == 0, now == E["sweep"],
                    Wh["cur_bits"] == 0, Wh["p1"] == 0, Wh["p2"] == 0, ~Wh["nz3"], ~Wh["nz4"]]
            idle += [~sv[k] for k in sv] + [~ref_en[f] for f in range(N)]
            idle += [ref[f].as_value() == 0 for f in range(N)]
            idle += [table[f].as_value() == 0 for f in range(N) if f < 1]
            inv.append(("sweep", E["sweep"] <= N))
            inv.append(("swept", swept == (E["sweep"] == N)))     # the flag is a register
            for i, c_ in enumerate(idle):
                inv.append((f"idle{i}", swept | c_))
            for f in range(N):
                inv.append((f"swept_tab{f}", ~(E["sweep"] > f) | (table[f].as_value() == 0)
                            | swept))
            # every pop taken in the cycle it is offered; no insert overflows
            inv.append(("pop_taken", ~pop.valid | pop.ready))
            inv.append(("no_ovf", ~Wh["ovf"]))
            # the words written back in the last cycles (the write-back stage's forwarding
            # sources): the newest write of a flow is its table word; the stage's selects pick
            # the newest one, and the RAM's word when there is none
            L_ = dp.latency
            TL = TABLE_LATENCY
            ks = range(WB + 1, WB + L_ + TL + 1)
            # (the last stage's valid bit and flow may be gone: its select is made a stage
            # earlier)
            ks = [k for k in ks if f"s{k}_wvalid" in E]
            wv = {k: E[f"s{k}_wvalid"] for k in ks}
            wfl = {k: E[f"s{k}_flow"] for k in ks}
            wwd = {k: data.View(word_lay, E[f"s{k}_word"]) for k in ks}
            # (the table is written from stage WB + 1's register, at the end of that cycle:
            # its word is pending, the table holds the newest of the older ones)
            written = [k for k in ks if k > WB + 1]
            for k in written:
                newer = Const(0)
                for j in written:
                    if j < k:
                        newer = newer | (wv[j] & (wfl[j] == wfl[k]))
                for f in range(N):
                    inv.append((f"q_fwd{k}_{f}", ~(wv[k] & ~newer & (wfl[k] == f))
                                | (wwd[k].as_value() == table[f].as_value())))
            f3 = sev[WB].flow
            for i, k in enumerate(ks):
                inv.append((f"q_gq{i}", ~sv[WB] | (E[f"gq{i}"] == (wv[k] & (wfl[k] == f3)))))
            rq = data.View(word_lay, E["s3_rdata_q"])
            none = ~Cat(*[E[f"gq{i}"] for i in range(TL + 1)]).any()
            for f in range(N):
                inv.append((f"q_ram{f}", ~(sv[WB] & none & (f3 == f))
                            | (rq.as_value() == table[f].as_value())))
            # the modify stage's RAM word: the table's, unless written since its read (then
            # it is forwarded)
            f2 = sev[TL].flow
            missed = sv[WB] & (sev[WB].flow == f2)
            for k in range(WB + 1, WB + TL + 1):
                missed = missed | (wv[k] & (wfl[k] == f2))
            r2 = data.View(word_lay, E["m0_rdata"])
            for f in range(N):
                inv.append((f"q_ram2_{f}", ~(sv[TL] & ~missed & (f2 == f))
                            | (r2.as_value() == table[f].as_value())))
            # a flow's newest word: the pending write's (stage WB + 1) if it is of the flow,
            # else the table's
            newest = []
            for f in range(N):
                nw = Signal(word_lay, name=f"inv_newest{f}")
                m.d.comb += nw.eq(Mux(wv[WB + 1] & (wfl[WB + 1] == f), wwd[WB + 1].as_value(),
                                      table[f].as_value()))
                newest.append(nw)
            # the write-back stage's wheel fields are the flow's newest
            q_in = data.View(word_lay, E["q_in"])
            for f in range(N):
                for fld in ("q_valid", "q_gen", "q_mask", "q_dl"):
                    inv.append((f"q_in{f}_{fld}", ~(sv[WB] & (sev[WB].flow == f))
                                | (q_in[fld] == newest[f][fld])))
            # every entry of a flow: a live bit of the wheel (its slot RAM word), the wheel's
            # insert stages, its pop register, and the pops in the engine's pipeline
            ents = []
            for w in range(NWD):
                for i in range(B):
                    e = slot_ram[w * B + i]
                    ents.append((live[w][i], e[:cfg.flow_width], e[cfg.flow_width:]))
            ents.append((Wh["s1_valid"], Wh["s1_flow"], Wh["s1_gen"]))
            ents.append((Wh["s2_valid"], Wh["s2_flow"], Wh["s2_gen"]))
            ents.append((pop.valid, pop.payload.flow, pop.payload.gen))
            for k in sv:
                ents.append((sv[k] & (sev[k].src == 2), sev[k].flow, sev[k].gen))
            for f in range(N):
                mine = [Signal(name=f"inv_ent{f}_{j}") for j in range(len(ents))]
                for j, (v, fl, _) in enumerate(ents):
                    m.d.comb += mine[j].eq(v & (fl == f))
                t = newest[f]
                # per generation: its entries are exactly the newest word's q_mask bit (so a flow's
                # entries have distinct generations, at most 4), and the live generation is
                # queued exactly when q_valid
                for g in range(4):
                    n_g = Signal(range(len(ents) + 1), name=f"inv_n{f}_{g}")
                    m.d.comb += n_g.eq(sum(mine[j] & (ents[j][2] == g)
                                           for j in range(len(ents))))
                    inv.append((f"count{f}_{g}", n_g == t.q_mask[g]))
                inv.append((f"live{f}", t.q_valid == t.q_mask.bit_select(t.q_gen, 1)))
            # the cursor lags now by a few slots at most, and every entry is a few slots ahead
            inv.append(("lag_max", lag1 <= LAG_MAX))
            # the cursor keeps pace: it lags only by the pops still to make in its word
            be = Wh["bits_eff"]
            inv.append(("lag_pace", lag1 + sum(be[i] for i in range(B)) <= LAG_MAX))
            # the inserts in flight: at least insert_latency - 1 (- 2) slots after now, at most
            # the horizon
            t1 = (Wh["s1_target"] - now)[:W]
            inv.append(("lag_ins1", ~Wh["s1_valid"] | ((t1 >= wc.insert_latency - 1)
                                                       & (t1 <= wc.horizon))))
            t2 = (Wh["s2_tslot"] - now[:wc.slot_bits])[:wc.slot_bits]
            inv.append(("lag_ins2", ~Wh["s2_valid"] | ((t2 >= wc.insert_latency - 2)
                                                       & (t2 <= wc.horizon))))
            for w in range(NWD):
                for i in range(B):
                    rel = (Const(w * B + i, wc.slot_bits) - wbt[:wc.slot_bits])[:wc.slot_bits]
                    inv.append((f"ahead{w * B + i}", ~live[w][i] | (rel <= AHEAD_MAX)))
            for name, cond in inv:
                if _group(name) not in INVARIANT_GROUPS:
                    continue
                ok = Signal(name=f"inv_{name}")
                m.d.comb += [ok.eq(cond), Assert(ok)]

        # -- covers -------------------------------------------------------------------------------
        prev = []
        last = (any_acc, flow)
        for j in range(TABLE_LATENCY + 1):
            v, fl = Signal(name=f"acc_d{j + 1}"), Signal(cfg.flow_width, name=f"flow_d{j + 1}")
            m.d.sync += [v.eq(last[0]), fl.eq(last[1])]
            prev.append((v, fl))
            last = (v, fl)
        is_input = acc["tx"] | acc["cn"]
        due = cur_en & cur.armed & ~(now - cur.dl)[W - 1]
        if timers:
            m.d.comb += [
                Cover(lags[0][0] & (lags[0][1] == TIMER_BOUND)),
                Cover(acc["pop"] & due),
                Cover(acc["pop"] & ~due),                 # a stale (or early) pop
            ]
        elif pops_taken:
            m.d.comb += [
                # a pop that applies an expiry, taken while every input stream offers an event
                Cover(acc["pop"] & due & dut.tx.valid & dut.cn.valid & dut.ctl.valid),
                Cover(acc["pop"] & ~due),                 # a stale (or early) pop
                # two pops back to back (two flows' deadlines in one slot run)
                Cover(acc["pop"] & prev[0][0] & (prev[0][1] != flow)),
            ]
        else:
            m.d.comb += [
                # same flow back to back (the one-cycle loop), at distance 2, 3 and 4
                # (forwarded from the words written one, two and three cycles ago), each with a
                # rate change
                *[Cover(is_input & ~Cat(*(prev[i][0] for i in range(d))).any()
                        & prev[d][0] & (prev[d][1] == flow) & (nxt.rate != cur.rate))
                  for d in range(TABLE_LATENCY + 1)],
                # a READ right behind an update of its flow
                Cover(acc["ctl"] & (c.op == CtlOp.READ) & prev[0][0] & (prev[0][1] == flow)
                      & cur_en & (cur.cnt != 0)),
                Cover(acc["pop"] & due),                  # a timer pop that applies an expiry
                Cover(checked["rd"]),
                Cover(checked["rate"]),
                Cover(dut.rate.valid & ~dut.rate.ready),  # back-pressure on both outputs
                Cover(dut.rd.valid & ~dut.rd.ready),
            ]
        return m
    return build


#: small memories (the flow table, the wheel's slot RAM and bitmap) as flip-flops
SCRIPT = ("prep -top top", "flatten", "memory_map", "opt_clean")

#: BMC bounds.  The miter: the init sweep ends at step 2, so events accepted at steps 2 ... 6
#: (the one just ahead, two, three and four ahead) have their outputs checked by step 12 (an
#: output leaves pipe_depth + 1 = 6 cycles after its event); the covers (same-flow events at
#: distances 1 ... 5 with a rate change: every forwarding distance with the table read in 4
#: cycles; a READ right behind an update of its flow, a pop applying an expiry, both outputs
#: held) are all reached by then.  The output of an event five behind its flow's previous one
#: (the oldest forwarded word) would need step 13 (BMC 14): its last step ran 13 minutes
#: without an answer on the loaded 2-core machine (twelfth session), so that distance is
#: reached (covered) but its output is checked by simulation only (the same loop builds
#: every far candidate; tests/test_flow_engine*.py run hot flows at every distance).  A WRITE
#: arms a timer at once (it inserts at its own time), so the first pops come at step 11.
MITER_DEPTH = N_FLOWS + TABLE_LATENCY + pipe_depth(1) + 2
#: The pops property: the first pops come at step 10 (a WRITE at step 2 inserts at its own
#: time, at its write-back, and the wheel pops it 4 cycles later), so 12 steps check the pops
#: at steps 10 and 11 (two flows' pops back to back is a cover); the last step takes minutes
#: on a loaded machine (the wheel's search after several inserts).
POPS_DEPTH = 12
#: The lateness claim (not in PROPERTIES, see the module docstring): docs/flow-engine.md,
#: "Lateness" bounds a toy (one timer per flow) expiry by reeval - 1.
LATENESS_DEPTH = 20
TIMER_BOUND = reeval(1) - 1

PROPERTIES = [
    Property("flow_engine.miter", "engine (toy, 2 flows) = one-event-at-a-time reference: "
             "every rate record and READ word, in order, on time (pipe_depth + 1 + stalls), "
             "never more owed than the FIFO holds; one event per clock; ev_* counters = "
             "accepted events", _harness("miter"), mode="bmc", depth=MITER_DEPTH,
             cover_depth=MITER_DEPTH, timeout=900, extra_script=SCRIPT),
    Property("flow_engine.pops", "engine (toy, 2 flows, outputs drained): every pop the "
             "wheel offers is taken in that cycle; one event per clock; counters",
             _harness("pops"), mode="bmc", depth=POPS_DEPTH, cover_depth=POPS_DEPTH,
             timeout=600, extra_script=SCRIPT),
]

#: every due timer within the documented bound: too deep for the solver today (kept for a
#: faster solver; run with ``run_property(LATENESS)``)
LATENESS = Property("flow_engine.lateness", "engine (toy, 2 flows, outputs drained, no WRITE "
                    "of a timer field): no armed deadline overdue by more than reeval - 1",
                    _harness("lateness"), mode="bmc", depth=LATENESS_DEPTH,
                    cover_depth=LATENESS_DEPTH, timeout=1800, extra_script=SCRIPT)

#: The induction of the bound, begun (module docstring; docs/verification.md, "Flow
#: engine"): not closed, so not in PROPERTIES.  Run one with
#: ``run_property(INVARIANTS)`` (``INVARIANT_GROUPS`` selects the groups asserted).
INDUCTION_DEPTH = 2
LATENESS_INDUCTION = Property(
    "flow_engine.lateness_induction", "engine (toy, 2 flows, outputs drained, no WRITE of a "
    "timer field): no armed deadline overdue by more than reeval - 1, with the invariants",
    _harness("lateness", invariants=True), mode="prove", depth=INDUCTION_DEPTH,
    timeout=900, extra_script=SCRIPT)
INVARIANTS = Property(
    "flow_engine.invariants", "the lateness induction's invariants of the engine and its "
    "wheel, alone", _harness("invariants", invariants=True), mode="prove",
    depth=INDUCTION_DEPTH, timeout=900, extra_script=SCRIPT)
