"""The topology section of a scenario: one frozen dataclass per kind.

Each knows, without building anything, the host groups the core's builder will create and how
many hosts each has (so that workloads can be checked before a simulation starts), and the rate
of a host's access link (the denominator of a Poisson workload's load).

**Base RTT.** Every kind takes ``base_rtt_ps`` (``base_rtt_us = 8``) as an alternative to the
per-link ``delay_ps``: the link delay is then the base RTT divided by the link crossings of a
round trip on the topology's longest path (rounded to the picosecond), so that its propagation
round trip is the base RTT.  Propagation only: the store-and-forward serialization of a packet
at each hop (80 ns for 1000 B at 100 Gb/s) comes on top, and ``python -m sim run`` prints both
for every distinct path before it simulates.  The longest path: a dumbbell's sender ->
receiver (2 links), a chain's sender -> receiver (``switches + 1`` links; with ``hop_delay``
given, the inter-switch links keep it and the two host links share the rest), a leaf-spine's
leaf -> spine -> leaf (4 links; 2 with one leaf).  Giving both ``delay`` and ``base_rtt`` is an
error unless they agree.
"""

from __future__ import annotations

from dataclasses import dataclass

from hw.params import ConfigError, check_int

GBPS = 10**9
MAX_HOSTS = 100_000
#: Ports of one switch: the egress marker (``hw.switch.marker_config.MarkerConfig.ports``)
#: serves at most 1024, so no switch of the core may have more links.
MAX_SWITCH_PORTS = 1024


DEFAULT_DELAY_PS = 1_000_000      # 1 us per link when neither delay nor base_rtt is given


class TopologyError(ConfigError):
    """A topology field in conflict with another: the message is the whole problem."""

    def __init__(self, owner, field: str, value, problem: str):
        super().__init__(owner, field, value, problem)
        self.args = (problem,)


def _us(ps: int) -> str:
    return f"{ps / 10**6:g} us"


def _resolve_delay(obj, links: int, fixed_ps: int = 0, fixed_what: str = "") -> None:
    """Set ``obj.delay_ps`` from ``obj.base_rtt_ps`` (see the module docstring): a round trip
    crosses ``links`` links of delay ``delay_ps`` each way, plus ``fixed_ps`` of links whose
    delay is given otherwise (each way)."""
    base, delay = obj.base_rtt_ps, obj.delay_ps
    if base is None:
        object.__setattr__(obj, "delay_ps", DEFAULT_DELAY_PS if delay is None else delay)
        return
    check_int(obj, "base_rtt_ps", base, 1, 10**12)
    rest = base - 2 * fixed_ps
    if rest < 0:
        raise TopologyError(obj, "base_rtt_ps", base,
                            f"base_rtt ({_us(base)}) is shorter than the round trip of the "
                            f"{fixed_what} alone ({_us(2 * fixed_ps)})")
    derived = round(rest / (2 * links))
    if delay is not None and delay != derived:
        raise TopologyError(obj, "base_rtt_ps", base,
                            f"base_rtt ({_us(base)}) and delay ({_us(delay)}) disagree: this "
                            f"base RTT over the {2 * links} link crossings of a round trip on "
                            f"the longest path{' besides the ' + fixed_what if fixed_ps else ''}"
                            f" is a delay of {_us(derived)}; give one of them")
    object.__setattr__(obj, "delay_ps", derived)


def _check_link(obj, rate_field: str, rate: int, delay: int) -> None:
    check_int(obj, rate_field, rate, 10**6, 10**13)
    check_int(obj, "delay_ps", delay, 0, 10**12)


@dataclass(frozen=True)
class DumbbellTopology:
    """N senders and R receivers behind one switch (N-to-1 incast when R = 1)."""
    senders: int = 16
    receivers: int = 1
    rate_bps: int = 100 * GBPS
    delay_ps: int | None = None              # per link (default 1 us, or from base_rtt_ps)
    receiver_rate_bps: int | None = None     # the receivers' links (default: rate_bps)
    base_rtt_ps: int | None = None           # propagation RTT sender -> receiver -> sender

    kind = "dumbbell"

    def __post_init__(self):
        _resolve_delay(self, 2)
        check_int(self, "senders", self.senders, 1, MAX_SWITCH_PORTS - self.receivers,
                  hi_name=f"{MAX_SWITCH_PORTS} switch ports - receivers")
        check_int(self, "receivers", self.receivers, 1, MAX_SWITCH_PORTS - 1)
        _check_link(self, "rate_bps", self.rate_bps, self.delay_ps)
        if self.receiver_rate_bps is not None:
            check_int(self, "receiver_rate_bps", self.receiver_rate_bps, 10**6, 10**13)

    def group_rate_bps(self, group: str) -> int:
        """Access-link rate of the hosts of ``group``."""
        if group == "receivers" and self.receiver_rate_bps is not None:
            return self.receiver_rate_bps
        return self.rate_bps

    def groups(self) -> dict[str, int]:
        return {"senders": self.senders, "receivers": self.receivers,
                "all": self.senders + self.receivers}

    def build(self, net, topology):
        return topology.dumbbell(net, senders=self.senders, receivers=self.receivers,
                                 rate_bps=self.rate_bps, delay_ps=self.delay_ps,
                                 receiver_rate_bps=self.receiver_rate_bps)


@dataclass(frozen=True)
class ChainTopology:
    """Senders on the first of a line of switches, receivers (and ``cross_senders``) on the last
    (multi-hop: control-loop delay).  ``hop_delay_ps``: inter-switch links (default delay_ps)."""
    switches: int = 3
    senders: int = 4
    receivers: int = 1
    rate_bps: int = 100 * GBPS
    delay_ps: int | None = None
    cross_senders: int = 0
    hop_delay_ps: int | None = None
    base_rtt_ps: int | None = None

    kind = "chain"

    def __post_init__(self):
        check_int(self, "switches", self.switches, 1, 64)
        if self.hop_delay_ps is not None:
            check_int(self, "hop_delay_ps", self.hop_delay_ps, 0, 10**12)
            _resolve_delay(self, 2, (self.switches - 1) * self.hop_delay_ps,
                           f"{self.switches - 1} inter-switch link(s) of hop_delay")
        else:
            _resolve_delay(self, self.switches + 1)
        check_int(self, "senders", self.senders, 1, MAX_SWITCH_PORTS - 1,
                  hi_name=f"{MAX_SWITCH_PORTS} switch ports - 1")
        check_int(self, "receivers", self.receivers, 1, MAX_SWITCH_PORTS - 1)
        check_int(self, "cross_senders", self.cross_senders, 0,
                  MAX_SWITCH_PORTS - 1 - self.receivers,
                  hi_name=f"{MAX_SWITCH_PORTS} switch ports - 1 - receivers")
        _check_link(self, "rate_bps", self.rate_bps, self.delay_ps)
        if self.hop_delay_ps is not None:
            check_int(self, "hop_delay_ps", self.hop_delay_ps, 0, 10**12)

    def group_rate_bps(self, group: str) -> int:
        return self.rate_bps

    def groups(self) -> dict[str, int]:
        return {"senders": self.senders, "receivers": self.receivers,
                "cross_senders": self.cross_senders,
                "all": self.senders + self.cross_senders + self.receivers}

    def build(self, net, topology):
        return topology.chain(net, switches=self.switches, senders=self.senders,
                              receivers=self.receivers, rate_bps=self.rate_bps,
                              delay_ps=self.delay_ps, cross_senders=self.cross_senders,
                              hop_delay_ps=self.hop_delay_ps)


@dataclass(frozen=True)
class LeafSpineTopology:
    """Two tiers: ``leaves`` leaf switches of ``hosts_per_leaf`` hosts, ``spines`` spines, ECMP."""
    leaves: int = 4
    spines: int = 2
    hosts_per_leaf: int = 8
    host_rate_bps: int = 100 * GBPS
    fabric_rate_bps: int = 100 * GBPS
    delay_ps: int | None = None
    base_rtt_ps: int | None = None

    kind = "leaf_spine"

    def __post_init__(self):
        check_int(self, "leaves", self.leaves, 1, 256)
        _resolve_delay(self, 4 if self.leaves > 1 else 2)
        check_int(self, "leaves", self.leaves, 1, 256)
        check_int(self, "spines", self.spines, 1, 256)
        check_int(self, "hosts_per_leaf", self.hosts_per_leaf, 1 if self.leaves > 1 else 2,
                  MAX_SWITCH_PORTS - self.spines,
                  hi_name=f"{MAX_SWITCH_PORTS} switch ports - spines")
        _check_link(self, "host_rate_bps", self.host_rate_bps, self.delay_ps)
        check_int(self, "fabric_rate_bps", self.fabric_rate_bps, 10**6, 10**13)

    def group_rate_bps(self, group: str) -> int:
        return self.host_rate_bps

    def groups(self) -> dict[str, int]:
        groups = {f"leaf{i}": self.hosts_per_leaf for i in range(self.leaves)}
        groups["all"] = self.leaves * self.hosts_per_leaf
        return groups

    def build(self, net, topology):
        return topology.leaf_spine(net, leaves=self.leaves, spines=self.spines,
                                   hosts_per_leaf=self.hosts_per_leaf,
                                   host_rate_bps=self.host_rate_bps,
                                   fabric_rate_bps=self.fabric_rate_bps, delay_ps=self.delay_ps)


TOPOLOGIES = {cls.kind: cls for cls in (DumbbellTopology, ChainTopology, LeafSpineTopology)}
