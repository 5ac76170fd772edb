"""Configuration of the multi-flow reaction-point engine (:mod:`hw.nic.flow_engine`).

The engine holds the state of ``n_flows`` flows in block RAM and applies one event per clock to
it through an algorithm's datapath (:mod:`hw.nic.flow_datapath`); timers are per-flow deadlines
of ``time_width`` bits serviced by a timing wheel of ``wheel_slots`` one-cycle slots whose
horizon is ``wheel_horizon`` cycles.  The algorithm's own knobs belong to its datapath (and its
configuration); this one sizes the engine.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..params import BlockConfig, ConfigError, check_int
from .timer_calendar_config import TimerCalendarConfig
from .timer_wheel_config import INSERT_LATENCY, TimerWheelConfig

__all__ = ["FlowEngineConfig", "TIMERS", "CSR_ADDR_WIDTH", "CSR_DATA_WIDTH", "COUNTER_BASE",
           "TABLE_LATENCY", "pipe_depth", "min_out_fifo_depth"]

#: Register-file address and data widths (the project's csr_w / csr_raddr convention).
CSR_ADDR_WIDTH = 8
CSR_DATA_WIDTH = 32
#: Read-only counters start at this address; run-time registers are at 0 ... len(regs) - 1.
COUNTER_BASE = 0x80
#: The timer services an engine can be built with.
TIMERS = ("wheel", "calendar")
#: The flow table's read latency: the issued flow's address registered in front of the RAM,
#: the RAM's read register, its output register, and a fabric register after it (where the
#: older forwarding candidates are selected beside the RAM's word): the arbiter ends at a
#: flip-flop, the route out of the block RAMs ends at one and the datapath's first cycle starts
#: at one (:func:`pipe_depth` builds on it).
TABLE_LATENCY = 4


def pipe_depth(latency: int = 1) -> int:
    """The write-back stage's number: an event accepted (issued) at cycle c is read from the
    table at c + 1 (its address registered), its word is out of the RAM's output register at
    c + 3 and out of the forwarding register after it at c + 4, modified over the datapath's
    ``latency`` cycles from c + 4, written back at c + latency + 4 and its output is on
    ``rate``/``rd`` from c + latency + 5.  (Here, beside
    the configuration, so that the configurations that size their FIFOs by it need not import
    the engine; :mod:`hw.nic.flow_engine` exports it too.)"""
    return latency + TABLE_LATENCY


def min_out_fifo_depth(latency: int = 1) -> int:
    """The output FIFOs' least depth for one event per clock with a datapath of ``latency``
    modify cycles: every pipeline stage in flight (:func:`pipe_depth`) may write a record, plus
    the record written last cycle and the event issued now."""
    return pipe_depth(latency) + 2


@dataclass(frozen=True)
class FlowEngineConfig(BlockConfig):
    """Engine sizing.

    n_flows: flows in the table, a power of two 1 ... 65536;
    time_width: W, bits of the cycle counter and of every deadline (wrap-safe compares need every
      armed deadline within 2**(W-2) of now: the wheel horizon and the datapath's periods must
      stay below that);
    clk_hz: the clock (156.25 MHz, the 10GbE MAC clock of a 64-bit datapath);
    wheel_horizon / wheel_slots: the timer wheel (horizon in cycles; slots a power of two);
    out_fifo_depth: depth of the ``rate`` and ``rd`` output FIFOs (>= the datapath's latency
      + 5, :func:`min_out_fifo_depth`: latency + 3 events in flight, one entry written last
      cycle and one for the event issued now, so that depth sustains one event per clock while
      the consumer takes one output per clock; the engine checks it; the default 20 covers
      datapaths of up to 15 cycles, the pipelined DCQCN's 12 among them);
    wheel_entries_per_flow: wheel capacity reserved per flow (the wheel's capacity rule
      ``wheel_slots >= wheel_horizon + n_flows x wheel_entries_per_flow + 32`` is checked);
    wheel_insert_latency: the wheel's insert latency, 4, 5 or 6 (5 registers the wheel's
      bitmap reads before its decision stage; 6 also sends the pops through a buffer so that
      the engine's ``pop.ready`` no longer reaches the wheel's cursor: faster, and every
      re-evaluation one cycle later per step, see :func:`hw.nic.flow_engine.reeval`);
    timer: the timer service, ``"wheel"`` (:mod:`hw.nic.timer_wheel`, the default) or
      ``"calendar"`` (:mod:`hw.nic.timer_calendar`: per-slot lists, insert latency 10, no
      capacity rule, nothing can overflow).  ``wheel_slots`` and ``wheel_horizon`` size
      either service (the calendar's own rules - slots >= 8 words of 32, horizon between
      5 x 32 and slots - 64 - are checked); ``wheel_entries_per_flow`` (the capacity rule)
      and ``wheel_insert_latency`` apply to the wheel only.
    """

    n_flows: int = 1024
    time_width: int = 26
    clk_hz: int = 156_250_000
    wheel_horizon: int = 32768
    wheel_slots: int = 65536
    out_fifo_depth: int = 20
    wheel_entries_per_flow: int = 2
    wheel_insert_latency: int = INSERT_LATENCY
    timer: str = "wheel"

    def __post_init__(self):
        check_int(self, "n_flows", self.n_flows, 1, 65536)
        if self.n_flows & (self.n_flows - 1):
            raise ConfigError(self, "n_flows", self.n_flows, "a power of two 1 ... 65536")
        check_int(self, "time_width", self.time_width, 8, 40)
        check_int(self, "clk_hz", self.clk_hz, 1_000_000, 1_000_000_000)
        check_int(self, "wheel_horizon", self.wheel_horizon, 4, (1 << (self.time_width - 2)) - 1,
                  hi_name="2**(time_width - 2) - 1")
        check_int(self, "wheel_slots", self.wheel_slots, 8, 1 << 20)
        if self.wheel_slots & (self.wheel_slots - 1):
            raise ConfigError(self, "wheel_slots", self.wheel_slots,
                              "a power of two 8 ... 2**20")
        check_int(self, "out_fifo_depth", self.out_fifo_depth, 5, 64)
        check_int(self, "wheel_entries_per_flow", self.wheel_entries_per_flow, 1, 16)
        if self.timer not in TIMERS:
            raise ConfigError(self, "timer", self.timer, " or ".join(repr(t) for t in TIMERS))
        if self.timer == "calendar":
            self.timer_config()         # validates the calendar's sizing (one ConfigError line)
            return
        wheel = self.wheel_config()     # validates the wheel's sizing (capacity rule included)
        if self.wheel_entries_per_flow * self.n_flows > wheel.max_entries:
            raise ConfigError(self, "wheel_slots", self.wheel_slots, "enough slots")

    def wheel_config(self) -> TimerWheelConfig:
        """The timer wheel of this engine: entries {flow, gen (2 bits)}, at most
        ``wheel_entries_per_flow`` per flow (one live entry plus the stale ones a flow leaves
        behind when its wake moves earlier or a WRITE re-evaluates it)."""
        return TimerWheelConfig(slots=self.wheel_slots, horizon=self.wheel_horizon,
                                max_entries=self.wheel_entries_per_flow * self.n_flows,
                                flow_bits=self.flow_width, gen_bits=2,
                                time_width=self.time_width,
                                insert_latency=self.wheel_insert_latency)

    def timer_config(self):
        """The timer service's configuration: :meth:`wheel_config` for the wheel, else the
        calendar's (entries {flow, gen (2 bits)}; no capacity to size: the engine keeps at most
        4 entries per flow, the 2-bit generation space, and the calendar's link RAM holds
        every id)."""
        if self.timer != "calendar":
            return self.wheel_config()
        return TimerCalendarConfig(slots=self.wheel_slots, horizon=self.wheel_horizon,
                                   flow_bits=self.flow_width, gen_bits=2,
                                   time_width=self.time_width)

    @property
    def flow_width(self) -> int:
        """Bits of a flow number on the ports (at least 1)."""
        return max(1, (self.n_flows - 1).bit_length())

    @property
    def addr_width(self) -> int:
        """Bits of a flow-table address (0 for a single flow)."""
        return (self.n_flows - 1).bit_length()


def check_engine_pair(owner, name: str, algo_type: type) -> None:
    """The checks every engine top's configuration makes of its two parts: ``owner.engine`` a
    :class:`FlowEngineConfig`, ``owner.<name>`` an ``algo_type`` at the engine's clock (one
    ConfigError line each)."""
    engine, algo = owner.engine, getattr(owner, name)
    if not isinstance(engine, FlowEngineConfig):
        raise ConfigError(owner, "engine", engine, "a FlowEngineConfig")
    if not isinstance(algo, algo_type):
        raise ConfigError(owner, name, algo, f"a {algo_type.__name__}")
    if algo.clk_hz != engine.clk_hz:
        raise ConfigError(owner, f"{name}.clk_hz", algo.clk_hz,
                          f"the engine's clk_hz ({engine.clk_hz})")
