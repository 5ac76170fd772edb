"""Cycle-accurate golden model of the multi-flow engine (:mod:`hw.nic.flow_engine`).

``FlowEngineModel(cfg, datapath_model)`` is generic over the model datapath (toy, DCQCN, QCN:
:mod:`sim.models.flow_datapath`).  One call of :meth:`FlowEngineModel.step` is one clock cycle:
it takes what the environment offers that cycle (each input stream's payload or ``None``, the
output streams' ``ready``, the register read address) and returns every output of that cycle
(the input streams' ``ready``, the output streams' valid payloads, ``csr_rdata``), then
advances.

Because the RTL forwards every in-flight state, its pipeline is equivalent to applying events
one after another in issue order: the model applies an event's update (datapath + control
operation + wheel bookkeeping) when it is issued and delays its effects - output FIFO writes,
the wheel insert, the counters - by the pipeline depth, exactly when the RTL's write-back stage
performs them.  The timer wheel is its own model (:class:`sim.models.timer_wheel.TimerWheelModel`)
stepped in the same cycle as the RTL's.
"""

from __future__ import annotations

from collections import deque

from hw.nic.flow_datapath import CtlOp, EventKind
from hw.nic.flow_engine import (
    COUNTERS,
    LATE_BUCKETS,
    MAX_ENTRIES,
    Src,
    check_wheel_margin,
    engine_layouts,
    late_bucket,
    next_gen,
    pipe_depth,
    reeval,
    timer_stats,
    wheel_margin,
)
from hw.nic.flow_engine_config import COUNTER_BASE, CSR_DATA_WIDTH, FlowEngineConfig

from .flow_datapath import FlowDatapathModel, time_le_int
from .timer_calendar import TimerCalendarModel
from .timer_wheel import TimerWheelModel

__all__ = ["FlowEngineModel", "EngineOut"]


class EngineOut:
    """The outputs of one cycle (``rate``/``rd``: the payload offered, or ``None``)."""
    __slots__ = ("tx_ready", "cn_ready", "ctl_ready", "csr_w_ready", "rate", "rd", "csr_rdata",
                 "ready")

    def __repr__(self):
        return "EngineOut(" + ", ".join(f"{k}={getattr(self, k)!r}" for k in self.__slots__) + ")"


class _Flow:
    __slots__ = ("algo", "en", "q_valid", "q_gen", "q_mask", "q_dl")

    def __init__(self, algo):
        self.algo, self.en, self.q_valid, self.q_gen, self.q_mask, self.q_dl = algo, 0, 0, 0, 0, 0

    @property
    def q_cnt(self) -> int:
        """The flow's entries in the timer service, live and stale."""
        return bin(self.q_mask).count("1")


class FlowEngineModel:
    """The engine, cycle by cycle.

    ``rtl_datapath`` gives the layouts (the model packs ``rd`` words and ``rate`` payloads with
    them); ``wheel`` is the timer-wheel model (default: ``engine_wheel_model(cfg)`` of
    :mod:`sim.models.timer_wheel`).
    """

    def __init__(self, cfg: FlowEngineConfig, dpm: FlowDatapathModel, wheel=None):
        self.cfg = cfg
        self.dpm = dpm
        self.lay = lay = engine_layouts(cfg, dpm.rtl)
        self.W = cfg.time_width
        self.mask = (1 << self.W) - 1
        if wheel is None:
            wheel = (TimerCalendarModel(cfg.timer_config()) if cfg.timer == "calendar"
                     else TimerWheelModel(cfg.wheel_config()))
        self.wheel = wheel
        self.regs = dpm.regs_reset()
        zero = {name: 0 for name in lay["fields"]}
        self.flows = [_Flow(dict(zero)) for _ in range(cfg.n_flows)]
        self.now = 0
        self.sweep = 0
        # stage k holds the write-back action of the event issued k cycles ago (or None)
        #: the datapath's modify cycles (see hw.nic.flow_datapath)
        self.latency = L = getattr(dpm.rtl, "latency", 1)
        check_wheel_margin(cfg, L)
        #: the wheel's insert latency (4, or 5 with its read stage)
        self.insert_latency = IL = cfg.timer_config().insert_latency     # 10: the calendar
        self.reeval = reeval(L, IL)
        self.margin = wheel_margin(L, IL)
        self.pipe: deque = deque([None] * pipe_depth(L))
        self.rate_fifo: deque = deque()
        self.rd_fifo: deque = deque()
        self.counters = {name: 0 for name in COUNTERS}
        self.hist = [0] * len(LATE_BUCKETS)
        self.rdata = 0
        self.fields = lay["fields"]
        self._word = lay["word"]
        self._algo_offsets = [(name, f.offset, f.width) for name, f in lay["word"]["algo"].shape]
        self._word_offsets = {name: (f.offset, f.width) for name, f in lay["word"]}
        self._rate_shift = lay["rate"]["rate"].offset
        self._rd_shift = lay["rd"]["word"].offset
        self._value_mask = {name: (1 << w) - 1 for name, _, w in self._algo_offsets}
        self.cycle = 0
        self.issued = 0          #: events issued (every kind)
        self.log_issue = True    #: keep (cycle, src, flow) of every issued event
        self.issue_log: list = []

    # -- packing ---------------------------------------------------------------------------
    def pack_word(self, f: _Flow) -> int:
        algo = 0
        for name, off, _ in self._algo_offsets:
            algo |= f.algo[name] << off
        o = self._word_offsets
        return (algo << o["algo"][0] | f.en << o["en"][0] | f.q_valid << o["q_valid"][0]
                | f.q_gen << o["q_gen"][0] | f.q_mask << o["q_mask"][0] | f.q_dl << o["q_dl"][0])

    def state(self, flow: int) -> dict:
        """A flow's state now (after every issued event): algorithm fields and core fields."""
        f = self.flows[flow]
        return {"algo": dict(f.algo), "en": f.en, "q_valid": f.q_valid, "q_gen": f.q_gen,
                "q_mask": f.q_mask, "q_dl": f.q_dl}

    def busy(self) -> bool:
        return any(a is not None for a in self.pipe) or bool(self.rate_fifo or self.rd_fifo)

    # -- one cycle ---------------------------------------------------------------------------
    def step(self, tx=None, cn=None, ctl=None, csr_w=None, rate_ready=True, rd_ready=True,
             csr_raddr=0) -> EngineOut:
        """``tx`` (flow, bytes), ``cn`` (flow, cn bits), ``ctl`` (flow, op, field, value),
        ``csr_w`` (addr, data): what is offered this cycle, ``None`` if nothing."""
        cfg = self.cfg
        o = EngineOut()
        ready = self.sweep == cfg.n_flows
        inflight = sum(a is not None for a in self.pipe)
        rd_inflight = sum(a is not None and a[0] == Src.CTL and a[3] == CtlOp.READ
                          for a in self.pipe)
        D = cfg.out_fifo_depth
        rate_ok = len(self.rate_fifo) + inflight < D
        rd_ok = len(self.rd_fifo) + rd_inflight < D
        go = ready and csr_w is None and rate_ok
        w = self.wheel.out
        # a flow with an update in the modify stage (issued in the last latency - 1 cycles)
        # cannot issue: its source waits and the next one in priority order may go
        busy = {a[9] for a in list(self.pipe)[:self.latency - 1] if a is not None}
        pop = (w.pop_flow, w.pop_gen) if w.pop_valid and w.pop_flow not in busy else None
        ctl_go = (ctl is not None and ctl[0] not in busy
                  and (ctl[1] != CtlOp.READ or rd_ok))
        cn_free = cn is not None and cn[0] not in busy
        tx_free = tx is not None and tx[0] not in busy
        go_in = (go and pop is None
                 and (cfg.timer == "calendar"
                      or w.occupancy + self.margin < self.wheel.cfg.max_entries))
        o.ready = ready
        o.ctl_ready = go_in and ctl_go
        o.cn_ready = go_in and not ctl_go and cn_free
        o.tx_ready = go_in and not ctl_go and not cn_free and tx_free
        o.csr_w_ready = ready and inflight == 0
        o.rate = self.rate_fifo[0] if self.rate_fifo else None
        o.rd = self.rd_fifo[0] if self.rd_fifo else None
        o.csr_rdata = self.rdata

        # register read-back (sampled before this cycle's counter updates)
        self.rdata = self._read(csr_raddr)

        # write-back stage of the event issued pipe_depth(latency) cycles ago
        wb = self.pipe.pop()
        ins = self._write_back(wb) if wb is not None else None
        if o.rate is not None and rate_ready:
            self.rate_fifo.popleft()
        if o.rd is not None and rd_ready:
            self.rd_fifo.popleft()
        if wb is not None:
            if wb[5] is not None:
                self.rate_fifo.append(wb[5])
            if wb[6] is not None:
                self.rd_fifo.append(wb[6])

        # issue
        action = None
        t = self.now
        if go and pop is not None:
            action = self._issue(Src.TIMER, pop[0], pop[1], t)
        elif o.ctl_ready:
            action = self._issue(Src.CTL, ctl[0], ctl, t)
        elif o.cn_ready:
            action = self._issue(Src.CN, cn[0], cn[1], t)
        elif o.tx_ready:
            action = self._issue(Src.TX, tx[0], tx[1], t)
        self.pipe.appendleft(action)
        if action is not None:
            self.issued += 1
            if self.log_issue:
                self.issue_log.append((self.cycle, action[0], action[9]))

        if csr_w is not None and o.csr_w_ready:
            addr, value = csr_w
            if addr < len(self.dpm.regs):
                name, width, _ = self.dpm.regs[addr]
                self.regs[name] = value & ((1 << width) - 1)

        self.wheel.step(self.now, ins, go and pop is not None)
        if self.sweep < cfg.n_flows:
            self.sweep += 1
        self.now = (self.now + 1) & self.mask
        self.cycle += 1
        return o

    # -- internals ---------------------------------------------------------------------------
    def _issue(self, src, flow, payload, t):
        """Apply one event now (sequential equivalence); return its write-back action:
        (src, flow, counters..., op, ...)."""
        f = self.flows[flow]
        dpm = self.dpm
        op = None
        old_rate = f.algo[dpm.rate_field]
        applied = expired = False
        late = 0
        wake = None
        force = False
        gen = None
        if src == Src.CTL:
            _, op, field, value = payload
            op = CtlOp(op)
            if op in (CtlOp.START, CtlOp.RESET):
                init = {name: 0 for name in self.fields}
                init.update(dpm.init_state(self.regs))
                f.algo = init
                if op == CtlOp.START:
                    f.en = 1
            elif op == CtlOp.STOP:
                f.en = 0
            elif op == CtlOp.WRITE:
                if field < len(self.fields):
                    name = self.fields[field]
                    f.algo = dict(f.algo)
                    f.algo[name] = value & self._value_mask[name]
                force = True
                wake = t
        else:
            if src == Src.TIMER:
                gen = payload
            if f.en:
                kind = EventKind(src)
                out = dpm.update(self.regs, f.algo, kind,
                                 None if src == Src.TIMER else payload, t)
                f.algo = out.next_state
                applied = True
                expired = bool(out.expired)
                late = out.late if expired else 0
                wake = out.wake
        # wheel bookkeeping (the RTL's write-back stage, in issue order)
        own_pop = src == Src.TIMER and f.q_valid and f.q_gen == gen
        q_valid1 = f.q_valid and not own_pop
        if src == Src.TIMER:
            assert f.q_mask >> gen & 1, f"a pop of flow {flow}'s generation {gen}, not queued"
            f.q_mask &= ~(1 << gen)
        ins = None
        W, mask = self.W, self.mask
        earlier = close = False
        if wake is not None:
            earlier = not time_le_int(f.q_dl, wake, W)
            close = (not earlier and wake != f.q_dl
                     and not time_le_int((f.q_dl + self.reeval) & mask, wake, W))
        if f.q_mask != (1 << MAX_ENTRIES) - 1 and (force or (wake is not None
                                                 and (not q_valid1 or earlier or close))):
            target = t if force else wake
            f.q_gen = next_gen(f.q_gen, f.q_mask)
            f.q_valid = 1
            # the wheel places it no earlier than its insert latency after the insert
            # (write-back)
            soonest = (t + pipe_depth(self.latency) + self.insert_latency) & mask
            f.q_dl = target if time_le_int(soonest, target, W) else soonest
            f.q_mask |= 1 << f.q_gen
            ins = (flow, f.q_gen, target)
        else:
            f.q_valid = int(q_valid1)
        new_rate = f.algo[dpm.rate_field]
        rate_out = (flow | new_rate << self._rate_shift) if new_rate != old_rate else None
        rd_out = (flow | self.pack_word(f) << self._rd_shift) if op == CtlOp.READ else None
        return (src, applied, expired, op, late, rate_out, rd_out, ins, own_pop, flow)

    def _write_back(self, wb):
        src, applied, expired, op, late, _, _, ins, own_pop, _ = wb
        c = self.counters
        top = (1 << CSR_DATA_WIDTH) - 1

        def bump(name):
            c[name] = min(c[name] + 1, top)

        bump(("ev_tx", "ev_cn", "ev_timer", "ev_ctl")[src])
        if src != Src.CTL and not applied:
            bump("disabled")
        if src == Src.TIMER and not own_pop:
            bump("stale_pops")
        if ins is not None:
            bump("wheel_ins")
        if expired:
            bump("expiries")
            c["late_sum"] = min(c["late_sum"] + late, top)
            c["late_max"] = max(c["late_max"], late)
            b = late_bucket(late)
            self.hist[b] = min(self.hist[b] + 1, top)
        return ins

    def _read(self, addr: int) -> int:
        if addr < len(self.dpm.regs):
            return self.regs[self.dpm.regs[addr][0]]
        i = addr - COUNTER_BASE
        if 0 <= i < len(COUNTERS):
            return self.counters[COUNTERS[i]]
        i -= len(COUNTERS)
        if 0 <= i < len(self.hist):
            return self.hist[i]
        i -= len(self.hist)
        stats = timer_stats(self.cfg)
        if 0 <= i < len(stats):
            return 0 if stats[i] is None else int(getattr(self.wheel.out, stats[i]))
        return 0

    # -- read-back helpers for tests -------------------------------------------------------------
    def counter(self, name: str) -> int:
        if name.startswith("late_h"):
            return self.hist[int(name[6:])]
        return self.counters[name]
