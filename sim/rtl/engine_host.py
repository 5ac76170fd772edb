"""The per-NIC multi-flow engine in the simulator's loop: every flow of a NIC served by ONE
engine (:class:`hw.nic.flow_engine.FlowEngine` around the algorithm's datapath), as on the
hardware, instead of one single-flow reaction point per flow.

Engine kinds (``--engine`` or the scenario's ``engine`` key; DCQCN, L3QCN and QCN):

* ``"engine"``: the engine's cycle-accurate golden model
  (:class:`sim.models.flow_engine.FlowEngineModel` with :class:`sim.models.dcqcn.DcqcnDatapathModel`
  or :class:`sim.models.qcn.QcnDatapathModel`);
* ``"engine-rtl"``: the same engine's Verilated RTL (:class:`hw.nic.flow_engine.FlowEngine`,
  the component the ``dcqcn_engine_*`` / ``qcn_engine_*`` tops wrap with their register map),
  built once per Verilog hash under ``build/rtl/`` (:mod:`sim.rtl.bridge`).

Their timing is the engine's, not the single-flow blocks': an event waits in its stream until
the arbiter takes it (timer pops first, then control, CN, TX; a flow with an update in the
pipelined datapath waits), its rate comes back on the ``rate`` stream ``pipe_depth(latency) +
1`` cycles later, and timers fire when the timer wheel pops them (late when pops collide, parked
at the wheel's horizon and re-evaluated when a deadline lies further out).  So ``"engine"`` is
the reference of ``"engine-rtl"``; neither is compared with ``"golden"``/``"rtl"``.

The host (:class:`NicEngine`, one per sending host):

* a flow's slot (the engine's flow id) is its order among the host's flows;
* the engine is built at the first event (every flow known then) with ``n_flows`` the next
  power of two >= the host's flows (at least :data:`MIN_FLOWS`) and the smallest timer wheel
  that the capacity rule allows (:func:`engine_config`);
* from cycle 0 the host writes every datapath register through ``csr_w`` (the scenario's knobs:
  one build serves any knob values) and STARTs every slot through ``ctl``, as a driver would;
* each input (a transmitted packet, a CNP/CNM) is queued on its stream, stamped with its cycle,
  and offered from that cycle on until the engine takes it;
* ``rate`` is always ready; a flow's rate register (the rate limiter's input) takes each rate
  output the cycle after the engine offers it.  A flow's rate before its START's output is the
  datapath's initial rate (the START sets the same value).

Idle stretches: with no input due, nothing in the pipeline and the wheel's stages empty, the
golden model skips to a few words before the wheel's earliest entry (:func:`_skip_golden`: the
cursor's position is a closed form there); the RTL runs such stretches in C++
(:meth:`sim.rtl.bridge.RtlInstance.run`), stopping at the first ``rate`` output (not skipped:
its ``now`` and the wheel's cursor registers would have to be set consistently).

Speed: ``python -m sim.rtl.engine_host [SCENARIO [ALGO [KIND [DURATION_US]]]]`` (:func:`main`).

Differential runs: :func:`run_both` (the same scenario with ``"engine"`` and ``"engine-rtl"``,
every rate output and every input's snapshot logged; :func:`sim.rtl.diff.first_divergence`
names the first difference).  ``AFTER_RESET`` plants a wrong register value in the RTL's
initial writes (no second build).
"""

from __future__ import annotations

import copy
import time
from collections import deque
from dataclasses import dataclass, replace

from hw.nic.flow_datapath import CtlOp
from hw.nic.flow_engine import engine_layouts
from hw.nic.flow_engine_config import CSR_ADDR_WIDTH, FlowEngineConfig, min_out_fifo_depth
from hw.params import ConfigError

__all__ = ["NicEngine", "NicFlowEngine", "engine_config", "dcqcn_nic_engine",
           "qcn_nic_engine", "run_logged", "run_both", "MIN_FLOWS", "SKIP_IDLE", "AFTER_RESET",
           "ENGINE_KINDS"]

#: the engine kinds of this module (golden model, Verilated RTL)
ENGINE_KINDS = ("engine", "engine-rtl")
#: the smallest engine (flows in the table): 8 flows x 4 wheel entries leave the input hold
#: margin of a pipelined datapath (latency + 7 entries) room for every flow's timer
MIN_FLOWS = 8
#: the engine's cycle counter and deadlines (the tops' width)
TIME_WIDTH = 26
#: the wheel's horizon (cycles): deadlines further out are parked there and re-evaluated
WHEEL_HORIZON = 1024
#: skip the golden model's idle stretches (False: step every cycle, to check the skip)
SKIP_IDLE = True
#: algorithm name -> f(register writes [(addr, value)], datapath) -> writes: applied to the
#: RTL's initial register writes only (a test plants a wrong knob there)
AFTER_RESET: dict = {}
_MODELS: dict = {}


def engine_config(n_flows: int, clk_hz: int, latency: int) -> FlowEngineConfig:
    """The engine of a NIC with ``n_flows`` flows (a power of two) at ``clk_hz``, for a
    datapath of ``latency`` modify cycles: output FIFOs of latency + 5 (one event per clock),
    4 wheel entries per flow, and the fewest wheel slots the capacity rule allows (a smaller
    wheel exports and builds faster)."""
    entries = 4
    slots = 64
    while slots < WHEEL_HORIZON + entries * n_flows + 32:
        slots *= 2
    return FlowEngineConfig(n_flows=n_flows, time_width=TIME_WIDTH, clk_hz=clk_hz,
                            wheel_horizon=WHEEL_HORIZON, wheel_slots=slots,
                            out_fifo_depth=min_out_fifo_depth(latency),
                            wheel_entries_per_flow=entries)


# -- the algorithms ---------------------------------------------------------------------------


@dataclass
class _Algo:
    name: str
    datapath: object            # the RTL datapath (layouts, registers, latency)
    model_dp: type              # its model class
    cn_bits: object             # feedback -> the cn payload's bits
    init_rate: int              # the rate a START sets (the host's register before it)


def _dcqcn(cfg, W):
    from hw.nic.dcqcn_engine import DcqcnDatapath
    from sim.models.dcqcn import DcqcnDatapathModel
    dp = DcqcnDatapath(cfg, W, pipelined=True)
    return _Algo("dcqcn", dp, DcqcnDatapathModel, lambda fb: 1, cfg.registers().max_rate)


def _qcn(cfg, W):
    from hw.nic.qcn_engine import QCN_PIPE_LATENCY, QcnDatapath
    from hw.nic.qcn_rp_config import QcnRpConfig
    from sim.models.qcn import QcnDatapathModel
    # the engine's one LFSR has its seed built in (an elaboration-time constant): every NIC's
    # engine is the same build, with the configuration's default seed (not a flow's)
    cfg = cfg.replace(lfsr=replace(cfg.lfsr, seed=QcnRpConfig().lfsr.seed))
    dp = QcnDatapath(cfg, W, latency=QCN_PIPE_LATENCY)
    fb_off = dp.cn_layout["fb"].offset
    return _Algo("qcn", dp, QcnDatapathModel, lambda fb: fb << fb_off,
                 dict((n, r) for n, _, r in dp.regs)["line_rate"])


#: QCN flows differ in their LFSR seeds only: the engine has one LFSR (its build's seed)
_qcn.same = lambda a, b: a.replace(lfsr=b.lfsr) == b


# -- the two backends -------------------------------------------------------------------------


class _GoldenBackend:
    """:class:`FlowEngineModel`: ``cycle(offers)`` one clock cycle."""

    def __init__(self, cfg, algo):
        from sim.models.flow_engine import FlowEngineModel
        self.m = FlowEngineModel(cfg, algo.model_dp(algo.datapath))
        self.m.log_issue = False

    def cycle(self, tx, cn, ctl, csr_w):
        o = self.m.step(tx=tx, cn=cn, ctl=ctl, csr_w=csr_w)
        return (o.tx_ready, o.cn_ready, o.ctl_ready, o.csr_w_ready), o.rate

    def idle(self, n: int) -> tuple[int, None]:
        """Up to ``n`` cycles with no input offered, skipped where the model is idle:
        ``(cycles skipped, None)`` (0: the caller steps the next cycle)."""
        if not SKIP_IDLE:
            return 0, None
        return _skip_golden(self.m, n), None


def _wheel_idle(w) -> bool:
    return (w.s1 is None and w.s2 is None and w.s_read is None and not w.pop_valid
            and not w.fifo and w.iss == [None, None])


def _skip_golden(m, n: int) -> int:
    """Skip up to ``n`` idle cycles of the engine model ``m`` (nothing in its pipeline or
    output FIFOs, its wheel's stages empty, its cursor caught up with ``now``), stopping two
    words before the wheel's earliest entry comes into the cursor's reach; returns the cycles
    skipped (0: not idle).  In such a stretch only ``now`` and the wheel's cursor move: after
    the cycle in which ``now`` = c, the cursor's word starts at the one multiple of the word
    size B in ``(c + LA - B + 1, c + LA + 1]`` (LA: the wheel's look-ahead; the model's pop
    rule), so that its position is set, not stepped."""
    w = m.wheel
    if (m.busy() or not _wheel_idle(w) or m.sweep != m.cfg.n_flows or w.occ != len(w.pending)
            or w.ovf_r or w.disp_r):
        return 0
    mask, B, S, LA = w.mask, w.B, w.S, w.LA
    last = (m.now - 1) & mask           # the now of the last cycle run
    caught = ((last + LA - B + 1) // B + 1) * B & mask
    if w.wbt != caught:
        return 0
    k = n
    if w.pending:
        base = w.wbt % S
        first = min((s - base) % S for s in w.pending)      # the earliest entry's distance
        k = min(k, first - 2 * B - LA - 2)
    if k <= 0:
        return 0
    m.now = (m.now + k) & mask
    m.cycle += k
    w.cycle += k
    w.max_occ = max(w.max_occ, w.occ)
    w.wbt = (((m.now - 1) & mask) + LA - B + 1) // B * B + B & mask
    w.last_decision = None
    return k


class _RtlBackend:
    """The Verilated :class:`FlowEngine`, one instance: ``cycle(offers)`` one clock cycle from
    Python; ``idle(n)`` runs in C++ up to the first ``rate`` output."""

    def __init__(self, cfg, algo):
        from .bridge import RunSpec
        self.model = _rtl_model(cfg, algo)
        self.rtl = rtl = self.model.instance()
        rtl.reset(1)
        self.lib, self.h = rtl.lib, rtl.h
        p = self.model.port
        self.valid = [p(f"{s}__valid") for s in ("tx", "cn", "ctl", "csr_w")]
        self.payload = [p(f"{s}__payload") for s in ("tx", "cn", "ctl", "csr_w")]
        self.ready = [p(f"{s}__ready") for s in ("tx", "cn", "ctl", "csr_w")]
        self.rate_valid, self.rate_payload = p("rate__valid"), p("rate__payload")
        rtl.poke("rate__ready", 1)
        rtl.poke("rd__ready", 1)
        self.offered = [False] * 4
        self.spec = RunSpec(self.model, now=[("rate__valid", 0, 1)])

    def cycle(self, *offers):
        lib, h = self.lib, self.h
        for i, v in enumerate(offers):
            if v is not None:
                lib.cc_poke64(h, self.payload[i], v)
                lib.cc_poke64(h, self.valid[i], 1)
                self.offered[i] = True
            elif self.offered[i]:
                lib.cc_poke64(h, self.valid[i], 0)
                self.offered[i] = False
        lib.cc_eval(h)
        ready = tuple(offers[i] is not None and bool(lib.cc_peek64(h, self.ready[i]))
                      for i in range(4))
        rate = (lib.cc_peek64(h, self.rate_payload) if lib.cc_peek64(h, self.rate_valid)
                else None)
        lib.cc_step(h, 1)
        return ready, rate

    def idle(self, n: int) -> tuple[int, None]:
        """Up to ``n`` cycles with no input offered, in C++, stopping before the first cycle
        with a ``rate`` output (which the caller steps from Python)."""
        lib, h = self.lib, self.h
        for i in range(4):
            if self.offered[i]:
                lib.cc_poke64(h, self.valid[i], 0)
                self.offered[i] = False
        return self.rtl.run(n, self.spec), None


def _rtl_model(cfg, algo):
    """The built engine: its registers' reset values 0 (the host writes every register at
    start-up, before any event can issue), so that one build serves every knob value."""
    from hw.nic.flow_engine import FlowEngine

    from .bridge import RtlModel
    top = f"{algo.name}_flow_engine"
    key = (top, cfg, algo.datapath.config, algo.datapath.latency)
    m = _MODELS.get(key)
    if m is None:
        dp = copy.copy(algo.datapath)
        dp.regs = [(name, width, 0) for name, width, _ in dp.regs]
        m = _MODELS[key] = RtlModel(FlowEngine(cfg, dp), top)
    return m


def _pack(lay, **fields) -> int:
    return lay.const(fields).as_bits()


# -- the host ---------------------------------------------------------------------------------


class NicEngine:
    """The engine of one NIC and the flows it serves (see the module's docstring).  ``kind``:
    ``"engine"`` (golden) or ``"engine-rtl"``; ``log``: a list that collects ``(cycle, flow,
    "rate output", {"rate": value})`` for every rate output (None: not logged)."""

    def __init__(self, kind: str, algo_name: str, make_algo, clk_hz: int, host: str):
        self.kind, self.algo_name, self.make_algo = kind, algo_name, make_algo
        self.clk_hz, self.host = clk_hz, host
        self.flows: list[int] = []          # flow id by slot
        self.cfg = None                     # the algorithm's configuration (the first flow's)
        self.backend = None
        self.cycle = 0                      # cycles run (the next cycle to run)
        self.log = None
        self.rates: list[int] = []
        self.queues = [deque() for _ in range(4)]     # tx, cn, ctl, csr_w: (cycle, bits)
        self.outputs = 0
        self.wall = 0.0

    def add_flow(self, flow_id: int, cfg) -> int:
        if self.backend is not None:
            raise ConfigError(f"host {self.host}", "flows", flow_id,
                              "every flow added before the run (the engine is built then)")
        same = getattr(self.make_algo, "same", lambda a, b: a == b)
        if self.cfg is None:
            self.cfg = cfg
        elif not same(cfg, self.cfg):
            raise ConfigError(f"flow {flow_id}", "engine", self.kind,
                              f"the same configuration as host {self.host}'s other flows "
                              "(one engine per NIC)")
        self.flows.append(flow_id)
        return len(self.flows) - 1

    def _build(self) -> None:
        n = MIN_FLOWS
        while n < len(self.flows):
            n *= 2
        self.algo = algo = self.make_algo(self.cfg, TIME_WIDTH)
        dp = algo.datapath
        self.ecfg = ecfg = engine_config(n, self.clk_hz, dp.latency)
        self.lay = lay = engine_layouts(ecfg, dp)
        self.fw = ecfg.flow_width
        self.backend = (_GoldenBackend if self.kind == "engine" else _RtlBackend)(ecfg, algo)
        self.rates = [algo.init_rate] * n
        self._tx_lay, self._cn_lay = lay["tx"], lay["cn"]
        self._cn_off = lay["cn"]["cn"].offset
        self._tx_off = lay["tx"]["bytes"].offset
        self._rate_off, self._flow_mask = lay["rate"]["rate"].offset, (1 << self.fw) - 1
        # the driver's start-up: every register, then START every slot
        writes = [(i, reset) for i, (_, _, reset) in enumerate(dp.regs)]
        bug = AFTER_RESET.get(algo.name) if self.kind == "engine-rtl" else None
        if bug is not None:
            writes = bug(writes, dp)
        golden = self.kind == "engine"
        for addr, value in writes:
            self.queues[3].append((0, (addr, value) if golden
                                   else addr | value << CSR_ADDR_WIDTH))
        for slot in range(len(self.flows)):
            ctl = (slot, CtlOp.START, 0, 0)
            self.queues[2].append((0, ctl if golden else _pack(
                lay["ctl"], flow=slot, op=CtlOp.START, field=0, value=0)))

    # -- inputs ----------------------------------------------------------------------------
    def on_tx(self, slot: int, cycle: int, nbytes: int) -> None:
        self.advance(cycle)
        self.queues[0].append((cycle, (slot, nbytes) if self.kind == "engine"
                               else slot | nbytes << self._tx_off))

    def on_cn(self, slot: int, cycle: int, feedback: int) -> None:
        self.advance(cycle)
        bits = self.algo.cn_bits(feedback)
        self.queues[1].append((cycle, (slot, bits) if self.kind == "engine"
                               else slot | bits << self._cn_off))

    # -- running ---------------------------------------------------------------------------
    def advance(self, cycle: int) -> None:
        """Run the engine's cycles before ``cycle``."""
        if self.backend is None:
            self._build()
        if cycle <= self.cycle:
            return
        t0 = time.perf_counter()
        queues, backend = self.queues, self.backend
        while self.cycle < cycle:
            c = self.cycle
            heads = [q[0][1] if q and q[0][0] <= c else None for q in queues]
            if heads == [None, None, None, None]:
                # nothing offered until the next input's cycle (or ``cycle``)
                due = min([q[0][0] for q in queues if q] + [cycle])
                k, _ = backend.idle(due - c)
                if k:
                    self.cycle += k
                    continue
            ready, rate = backend.cycle(*heads)
            for q, h, r in zip(queues, heads, ready, strict=True):
                if r and h is not None:
                    q.popleft()
            if rate is not None:
                self._rate(c, rate)
            self.cycle += 1
        self.wall += time.perf_counter() - t0

    def _rate(self, c: int, payload: int) -> None:
        slot, value = payload & self._flow_mask, payload >> self._rate_off
        self.rates[slot] = value
        self.outputs += 1
        if self.log is not None and slot < len(self.flows):
            self.log.append((c, self.flows[slot], "rate output", {"rate": value}))


class NicFlowEngine:
    """One flow's view of its NIC's engine, behind :class:`sim.net.engine_api.RateEngine`."""

    __slots__ = ("nic", "slot", "cycle")

    def __init__(self, nic: NicEngine, slot: int):
        self.nic, self.slot, self.cycle = nic, slot, 0

    def advance(self, cycle: int) -> None:
        self.nic.advance(cycle)
        self.cycle = max(self.cycle, cycle)

    def on_tx(self, cycle: int, nbytes: int) -> None:
        self.nic.on_tx(self.slot, cycle, nbytes)
        self.cycle = max(self.cycle, cycle)

    def on_notification(self, cycle: int, feedback: int) -> None:
        self.nic.on_cn(self.slot, cycle, feedback)
        self.cycle = max(self.cycle, cycle)

    def rate(self) -> int:
        """The flow's rate register in its last input's cycle (every output before it)."""
        return self.nic.rates[self.slot]

    def next_wakeup(self) -> int | None:
        return None     # the rate is read at the host's releases

    def snapshot(self) -> dict:
        return {"cycle": self.cycle, "rate": self.nic.rates[self.slot]}


def _nic_factory(algo_name: str, make_algo, kind: str):
    def make(cfg, *, net, host, flow: int) -> NicFlowEngine:
        nics = net.__dict__.setdefault("nic_engines", {})
        nic = nics.get(host.id)
        if nic is None:
            nic = nics[host.id] = NicEngine(kind, algo_name, make_algo, 10**12 // net.clk_ps,
                                            host.id)
        return NicFlowEngine(nic, nic.add_flow(flow, cfg))
    make.per_nic = True
    return make


def dcqcn_nic_engine(kind: str):
    """The factory of the DCQCN flows' view of their NIC's engine (``kind``: ``"engine"`` or
    ``"engine-rtl"``)."""
    return _nic_factory("dcqcn", _dcqcn, kind)


def qcn_nic_engine(kind: str):
    """The factory of the QCN flows' view of their NIC's engine."""
    return _nic_factory("qcn", _qcn, kind)


# -- differential runs ------------------------------------------------------------------------


def run_logged(scn, algorithm: str, engine: str, record: bool = True):
    """``(RunResult, log, net)`` of ``scn`` with the engine kind ``engine`` (``"engine"`` or
    ``"engine-rtl"``): the log holds every input's snapshot (:func:`sim.rtl.diff._recorded`)
    and every rate output of every NIC's engine."""
    from sim.scenario import runner

    from .diff import EngineLog, _recorded
    net, _, _ = runner.build(replace(scn, engine=engine), algorithm)
    log = EngineLog()
    if record:
        _recorded(net, log)
        for nic in getattr(net, "nic_engines", {}).values():
            nic.log = log
    net.run(scn.duration_ps)
    return net.result(), log, net


def run_both(scn, algorithm: str, record: bool = True):
    """``(golden RunResult, RTL RunResult, Divergence or None)`` of ``scn`` run with the
    engine's golden model and with its RTL."""
    from .diff import first_divergence
    g, glog, _ = run_logged(scn, algorithm, "engine", record)
    r, rlog, _ = run_logged(scn, algorithm, "engine-rtl", record)
    return g, r, first_divergence(g, r, glog, rlog)


def speed(net, cpu_s: float) -> dict:
    """The run's engine figures: cycles run per NIC, rate outputs, and the rates per CPU
    second (``cpu_s``: the run's)."""
    nics = list(getattr(net, "nic_engines", {}).values())
    cycles = sum(n.cycle for n in nics)
    return {"nics": len(nics), "cycles": cycles, "outputs": sum(n.outputs for n in nics),
            "engine_s": sum(n.wall for n in nics), "events": net.sim.events,
            "cycles_per_s": cycles / cpu_s if cpu_s else 0.0,
            "events_per_s": net.sim.events / cpu_s if cpu_s else 0.0}



def main(argv=None) -> None:
    """``python -m sim.rtl.engine_host [SCENARIO [ALGO [KIND [DURATION_US]]]]``: one run with
    the per-NIC engine (default: ``default``, ``dcqcn``, ``engine-rtl``, the scenario's
    duration) and its speed: CPU seconds, engine cycles and simulator events per CPU second."""
    import sys

    from sim.scenario import config
    args = sys.argv[1:] if argv is None else argv
    name, algo, kind = (list(args[:3]) + ["default", "dcqcn", "engine-rtl"][len(args[:3]):])
    over = {"duration_us": int(args[3])} if len(args) > 3 else {}
    scn = config.load(name, over, [algo])
    if kind == "engine-rtl":            # (the export and any build are not the run's)
        warm = replace(scn, duration_ps=1)
        run_logged(warm, algo, kind, record=False)
    t = time.process_time()
    _, _, net = run_logged(scn, algo, kind, record=False)
    cpu = time.process_time() - t
    s = speed(net, cpu)
    print(f"{name} {algo} --engine {kind}: {cpu:.2f} s CPU, {s['nics']} NICs, "
          f"{s['cycles']} engine cycles ({s['cycles_per_s'] / 1e6:.2f} M/s), "
          f"{s['events']} events ({s['events_per_s'] / 1e3:.1f} k/s), "
          f"{s['outputs']} rate outputs")


if __name__ == "__main__":
    main()
