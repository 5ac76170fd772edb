"""DCQCN hosts (Zhu et al., SIGCOMM 2015): the reaction point behind
:class:`sim.net.engine_api.RateEngine`, paced by the rate limiter; the receiver's notification
point is :class:`sim.net.engine_api.CnpPacer` (the golden :class:`sim.models.dcqcn_np.NpModel`)."""

from __future__ import annotations

from dataclasses import dataclass

from hw.layouts import Ecn
from hw.nic.dcqcn_config import PROFILES as DCQCN_PROFILES
from hw.nic.dcqcn_config import DcqcnRpConfig
from hw.params import check_bool, check_choice, check_int, check_real
from hw.switch.marker_config import MarkerConfig

from ..engine import IDLE, PS_PER_NS
from ..engine_api import CnpPacer, dcqcn_nic_engine, dcqcn_rp_engine, dcqcn_rp_rtl_engine
from ..packet import CNP, Packet, control
from .common import (
    THRESHOLD_MAX,
    AlgorithmSpec,
    _InOrderReceiver,
    _rate_mbps,
    _RateSender,
    engine_for,
    make_engine,
)


@dataclass(frozen=True)
class DcqcnParams:
    """DCQCN: reaction point profile (``paper``, ``ns3-rdma``, ``hpcc-mlx``, ``connectx``; the
    line rate is the NIC's), RED-ECN marking ``kmin/kmax/pmax`` (HPCC's 100 Gb/s values by
    default), the NP's minimum CNP interval, receiver ACK coalescing, the go-back-N timeout,
    and ``l3qcn``: switches build the CNPs themselves (L3QCN) instead of the receiver."""

    profile: str = "paper"
    kmin_bytes: int = 100_000
    kmax_bytes: int = 400_000
    pmax: float = 0.2
    cnp_interval_ns: int = 50_000
    ack_every: int = 16
    rto_ns: int = 1_000_000
    l3qcn: bool = False
    # reaction-point knobs over the profile's values (None: the profile's), in the ConnectX
    # names and units of hw.nic.dcqcn_config.DcqcnRpConfig: timers in us, rates in Mb/s
    rpg_time_reset: float | None = None          # T, rate-increase timer (us)
    rpg_byte_reset: int | None = None            # B, byte counter (bytes; 0: none)
    rpg_threshold: int | None = None             # F, fast-recovery stages
    rpg_ai_rate: int | None = None               # R_AI (Mb/s)
    rpg_hai_rate: int | None = None              # R_HAI (Mb/s)
    rpg_gd: int | None = None                    # cut = Rc alpha / 2**(gd - 10)
    rpg_min_dec_fac: int | None = None           # % of Rc one cut leaves at least
    rpg_min_rate: int | None = None              # Mb/s
    rpg_max_rate: int | None = None              # Mb/s (0: the line rate)
    rate_to_set_on_first_cnp: int | None = None  # Mb/s (0: a normal cut)
    dce_tcp_g: int | None = None                 # old alpha weight /1024: g = (1024 - it)/1024
    dce_tcp_rtt: float | None = None             # K, alpha timer (us)
    rate_reduce_monitor_period: float | None = None   # P (us)
    initial_alpha_value: int | None = None       # /1024
    alpha_mode: str | None = None                # profile switches (docs/dcqcn.md, Profiles)
    cut_mode: str | None = None
    increase_rule: str | None = None
    hai_step: str | None = None
    clamp_rule: str | None = None
    alpha_before_cut: bool | None = None
    bc_reload_on_clamp_only: bool | None = None
    halve_in_hyper: bool | None = None
    rt_guard: bool | None = None

    def __post_init__(self):
        check_choice(self, "profile", self.profile, DCQCN_PROFILES)
        # the knobs' own ranges (a ConfigError names the knob); the rates against the NIC's
        # line rate when a flow is built (runner.check, before any run)
        DcqcnRpConfig.profile(self.profile, clk_hz=250_000_000, line_rate_mbps=1_600_000,
                              **self.rp_knobs())
        check_int(self, "kmin_bytes", self.kmin_bytes, 0, THRESHOLD_MAX)
        check_int(self, "kmax_bytes", self.kmax_bytes, self.kmin_bytes + 1, THRESHOLD_MAX,
                  lo_name="kmin_bytes + 1")
        check_real(self, "pmax", self.pmax, 0.0, 1.0)
        check_int(self, "cnp_interval_ns", self.cnp_interval_ns, 0, 10**9)
        check_int(self, "ack_every", self.ack_every, 1, 1024)
        check_int(self, "rto_ns", self.rto_ns, 1000, 10**10)
        check_bool(self, "l3qcn", self.l3qcn)

    def rp_knobs(self) -> dict:
        """The reaction-point knobs set in the scenario (over the profile's values)."""
        return {f: getattr(self, f) for f in RP_KNOBS if getattr(self, f) is not None}

    def rp_config(self, line_rate_mbps: int, clk_hz: int) -> DcqcnRpConfig:
        """The profile at the NIC's line rate and the simulator's engine clock (timers in its
        cycles) with the scenario's knobs; the profile's minimum rate is capped at the line
        rate, a knob's is not (an error if above it)."""
        knobs = self.rp_knobs()
        base = DcqcnRpConfig.profile(self.profile)
        max_rate = min(knobs.pop("rpg_max_rate", 0) or line_rate_mbps, line_rate_mbps)
        min_rate = knobs.pop("rpg_min_rate", min(base.rpg_min_rate, max_rate))
        return base.replace(clk_hz=clk_hz, line_rate_mbps=line_rate_mbps, rpg_min_rate=min_rate,
                            rpg_max_rate=0 if max_rate == line_rate_mbps else max_rate, **knobs)


RP_KNOBS = ("rpg_time_reset", "rpg_byte_reset", "rpg_threshold", "rpg_ai_rate", "rpg_hai_rate",
            "rpg_gd", "rpg_min_dec_fac", "rpg_min_rate", "rpg_max_rate",
            "rate_to_set_on_first_cnp", "dce_tcp_g", "dce_tcp_rtt",
            "rate_reduce_monitor_period", "initial_alpha_value", "alpha_mode", "cut_mode",
            "increase_rule", "hai_step", "clamp_rule", "alpha_before_cut",
            "bc_reload_on_clamp_only", "halve_in_hyper", "rt_guard")


#: engine kind -> (reaction point factory, receiver engine: none, the NP is the host's)
#: ("rtl": the Verilated hw.nic.dcqcn_rp.DcqcnRp, one instance per flow; "engine" /
#: "engine-rtl": ONE multi-flow engine per NIC, its golden model / its Verilated RTL,
#: sim.rtl.engine_host)
ENGINES = {"golden": (dcqcn_rp_engine, None), "rtl": (dcqcn_rp_rtl_engine, None),
           "engine": (dcqcn_nic_engine("engine"), None),
           "engine-rtl": (dcqcn_nic_engine("engine-rtl"), None)}


class DcqcnSenderEndpoint(_RateSender):
    _signal_kind = CNP

    def __init__(self, net, spec, host):
        line = _rate_mbps(net, host)
        cfg = net.params.rp_config(line, 10**12 // net.clk_ps)
        super().__init__(net, spec, host,
                         make_engine(engine_for(net, ENGINES)[0], cfg, net, host, spec), line)



class DcqcnReceiverEndpoint(_InOrderReceiver):
    """The notification point: at most one CNP per ``cnp_interval`` per flow; a CE packet
    inside the interval makes a CNP due at the interval's end: the paper rule of the golden
    :class:`sim.models.dcqcn_np.NpModel`, through :class:`sim.net.engine_api.CnpPacer`."""

    def __init__(self, net, spec, host):
        super().__init__(net, spec, host, net.params.ack_every)
        self.np = CnpPacer(net.params.cnp_interval_ns * PS_PER_NS)
        self.pending_cnp = False          # a wake-up is scheduled at the due CNP
        self.ce_sent_ps = 0

    def on_data(self, pkt: Packet) -> None:
        if pkt.ecn == Ecn.CE:
            self.ce_sent_ps = pkt.sent_ps
            if self.np.on_ce(self.sim.now):
                self._cnp()
            elif not self.pending_cnp:
                due = self.np.next_wakeup()
                if due is not None:
                    self.pending_cnp = True
                    self.sim.at(due, self._due)
        super().on_data(pkt)

    def _due(self):
        self.pending_cnp = False
        if not self.np.fire(self.sim.now):
            return IDLE         # (a CE at the same time took the CNP)
        self._cnp()
        return None

    def _cnp(self) -> None:
        self.net.counters["cnps"] += 1
        f = self.spec
        self.host.nic.send(control(CNP, f.flow_id, f.dst, f.src, sent_ps=self.ce_sent_ps))


def _dcqcn_marker(params: DcqcnParams, *, ports, mtu, buf_max, shared_buffer, sample_at):
    return MarkerConfig.dcqcn(ports=ports, priorities=2,
                              k_min=min(params.kmin_bytes, buf_max - 1),
                              k_max=min(params.kmax_bytes, buf_max), p_max=params.pmax,
                              buf_max=buf_max, shared_buffer=shared_buffer, sample_at=sample_at,
                              compare="gt")


SPEC = AlgorithmSpec(
    "dcqcn", DcqcnParams, "DCQCN: rate-based RP/NP with RED-ECN marking",
    DcqcnSenderEndpoint, DcqcnReceiverEndpoint, _dcqcn_marker,
    l3qcn=lambda p: p.l3qcn, engines=ENGINES)
