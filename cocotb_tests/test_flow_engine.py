"""pytest runners: the multi-flow engine on Verilator through the generic engine testbench
(cocotb_tests/flow_engine_tb.py): the toy datapath (top flow_engine_toy), DCQCN (top
dcqcn_engine_1k, once per profile: the profile's registers written through csr_w at run time
on the one build, ConnectX at reset), QCN (top qcn_engine_1k), TIMELY and Swift (tops
timely_engine_1k, swift_engine_1k: the algorithm's completions / ACKs, test algo_events), and
the LDCP window engine, sender and receiver (ldcp_engine_1k, ldcp_tx_engine_1k,
ldcp_rx_engine_1k: test ldcp_events, behind CC_LDCP_ENGINES=1 or CC_LONG=1); 1024 flows each.

Event counts: ``make test`` runs are sized by the suite's 20-minute budget (toy 8,000 events,
DCQCN 2,000 per profile, QCN 4,000: 20-60 s each with the build on a 2-core machine);
``CC_LONG=1`` (``make test-long``) runs 150,000 events over
the 1024 flows; ``CC_EVENTS`` overrides both.

The toy, DCQCN and QCN runners build their top with a smaller timer wheel (8192 slots, 4096-cycle
horizon, instead of 65536 / 32768; every other parameter the top's): the exported Verilog of
the full wheel is 101 MB and Verilating it takes more than 10 GB of memory (it was killed for
lack of memory on the 23 GB development machine).  The wheel's logic is the same RTL at a
smaller size (its own tests cover it); ``CC_FULL_WHEEL=1`` builds the tops as they are, and
``CC_LONG=1`` builds the toy top as it is (65536 slots: 4 MB of Verilog)."""

from __future__ import annotations

import json
import os

import pytest

from cocotb_tests.infra.build import build_top, long_runs, run_cocotb, run_length
from gateware.tops import TOPS
from hw.nic.dcqcn_config import PROFILES, DcqcnRpConfig

#: The engine tops on Verilator: with the timer wheel's two-level summary their Verilog is a
#: few MB and each build takes about a minute; the DCQCN and QCN runners use an 8192-slot wheel
#: (CC_FULL_WHEEL=1 for the tops' own 65536) to keep the builds short.  ``CC_ENGINE=0`` skips
#: them (the Amaranth-simulator tests, tests/test_flow_engine*.py, cover the same RTL at 16
#: flows every output every cycle).
pytestmark = pytest.mark.skipif(
    os.environ.get("CC_ENGINE", "1") in ("", "0"),
    reason="engine tops on Verilator skipped (CC_ENGINE=0)")

TB = "cocotb_tests.flow_engine_tb"
TOP = "flow_engine_toy"

#: The testbench writes only at mid-period, so inertial writes are safe; with them cocotb drives
#: the clock from C++ instead of a Python coroutine.
FAST_CLOCK = {"COCOTB_TRUST_INERTIAL_WRITES": "1"}

TOY_DP = "sim.models.flow_datapath:ToyDatapathModel"
DCQCN_DP = "sim.models.dcqcn:DcqcnDatapathModel"
QCN_DP = "sim.models.qcn:QcnDatapathModel"
#: soak size of every random run (CC_LONG=1): >= 100,000 events over the 1024 flows
LONG_EVENTS = 150_000


def engine_env(top: str, model_dp: str, events: str, seed: int, **extra) -> dict:
    """The environment of the generic engine testbench (datapath runners reuse it)."""
    return {"CC_TOP": top, "CC_MODEL_DP": model_dp, "CC_EVENTS": events,
            "CC_DEFAULT_SEED": str(seed), **FAST_CLOCK, **extra}


def build(top: str = TOP):
    return build_top(f"{top}_tb", TOPS[top].build())


def full_wheel() -> bool:
    return os.environ.get("CC_FULL_WHEEL", "0") not in ("", "0")


def algo_build(top: str, full: bool = False):
    """(build, extra env) of a datapath top: the top itself with CC_FULL_WHEEL=1 or ``full``,
    else the top with an 8192-slot wheel (see the module docstring)."""
    if full or full_wheel():
        return build(top), {}
    cfg = TOPS[top].config
    small = {"wheel_slots": 8192, "wheel_horizon": 4096}
    # the toy top's config is the engine's own; a datapath top's holds it as ``engine``
    cfg = (cfg.replace(engine=cfg.engine.replace(**small)) if hasattr(cfg, "engine")
           else cfg.replace(**small))
    return (build_top(f"{top}_w8k_tb", TOPS[top].factory(cfg)),
            {"CC_ENGINE_CONFIG": cfg.to_json()})


def dcqcn_profile_regs(top: str, profile: str) -> dict:
    """The registers of ``profile`` on ``top``'s build (same clock, same structural widths)."""
    rp = TOPS[top].config.rp
    r = DcqcnRpConfig.profile(profile, clk_hz=rp.clk_hz).registers()
    return {name: getattr(r, name) for name in r.__dataclass_fields__}


@pytest.mark.cocotb
def test_random_events():
    """The toy datapath, on the small wheel (its period of 4000 cycles is within the horizon;
    a build of 18 s of CPU instead of 48 s) and on the top's own 65536-slot wheel under
    ``CC_LONG=1``."""
    b, extra = algo_build(TOP, full=long_runs())
    run_cocotb(b, TB, "random_events",
               env=engine_env(TOP, TOY_DP, run_length(8_000, LONG_EVENTS, "CC_EVENTS"), 11,
                              **extra))


@pytest.mark.cocotb
def test_saturation():
    b, extra = algo_build(TOP, full=long_runs())
    run_cocotb(b, TB, "saturation", env=engine_env(TOP, TOY_DP, "0", 12, **extra))


@pytest.mark.cocotb
@pytest.mark.parametrize("profile", PROFILES)
def test_dcqcn_engine_random_events(profile):
    """DCQCN engine, 1024 flows: the profile's registers written at run time (ConnectX is the
    reset value, written again), then random events with hot flows, random WRITEs of every
    state field, register rewrites and back-pressure; every output every cycle, every flow
    READ and every counter compared with the model."""
    top = "dcqcn_engine_1k"
    regs = json.dumps(dcqcn_profile_regs(top, profile))
    b, extra = algo_build(top)
    run_cocotb(b, TB, "random_events", tag=f"random_events_{profile}",
               env=engine_env(top, DCQCN_DP, run_length(2_000, LONG_EVENTS, "CC_EVENTS"),
                              21 + PROFILES.index(profile), CC_REGS=regs, **extra))


@pytest.mark.cocotb
def test_qcn_engine_random_events():
    """QCN engine, 1024 flows, IEEE 802.1Q reset values but timers of 2000 / 1000 cycles with
    +/- 25 % jitter, written at run time (the MIB's 15 ms would not expire within the run): as
    the DCQCN runs (the jittered reloads draw the engine-wide LFSR in the model's order)."""
    top = "qcn_engine_1k"
    regs = json.dumps({"time_lo": 1500, "time_span": 1000, "time_lo_half": 750,
                       "time_span_half": 500})
    b, extra = algo_build(top)
    run_cocotb(b, TB, "random_events",
               env=engine_env(top, QCN_DP, run_length(4_000, LONG_EVENTS, "CC_EVENTS"), 31,
                              CC_REGS=regs, **extra))


@pytest.mark.cocotb
@pytest.mark.parametrize("top,model_dp", [("dcqcn_engine_1k", DCQCN_DP),
                                          ("qcn_engine_1k", QCN_DP)])
def test_engine_saturation(top, model_dp):
    """One event per clock sustained with the real datapaths (hot flow half the time)."""
    b, extra = algo_build(top)
    run_cocotb(b, TB, "saturation", tag="saturation",
               env=engine_env(top, model_dp, "0", 41, CC_SAT_EVENTS="2000", **extra))


# -- TIMELY and Swift (no timers: a small wheel is enough) -------------------------------------

TIMELY_DP = "sim.models.timely:TimelyDatapathModel"
SWIFT_DP = "sim.models.swift:SwiftDatapathModel"


def no_timer_build(top: str):
    """(build, extra env) of a datapath without timers: the top with a 2048-slot wheel (the
    engine's capacity rule at 1024 flows, one entry each; nothing is ever inserted), which
    Verilates in a fraction of the full wheel's time."""
    cfg = TOPS[top].config
    cfg = cfg.replace(engine=cfg.engine.replace(wheel_slots=2048, wheel_horizon=128,
                                                wheel_entries_per_flow=1))
    return (build_top(f"{top}_w2k_tb", TOPS[top].factory(cfg)),
            {"CC_ENGINE_CONFIG": cfg.to_json()})


@pytest.mark.cocotb
@pytest.mark.skipif(
    not long_runs() and os.environ.get("CC_DELAY_ENGINES", "0") in ("", "0"),
    reason="TIMELY / Swift engine tops on Verilator: CC_LONG=1 or CC_DELAY_ENGINES=1 (a "
           "build takes 5-30 minutes and the two 2,000-event runs about 1.5 minutes with "
           "cached builds on the shared 2-core machine: over make test's budget)")
@pytest.mark.parametrize("top,model_dp,source,seed", [
    ("timely_engine_1k", TIMELY_DP, "timely", 51), ("swift_engine_1k", SWIFT_DP, "swift", 52)])
def test_delay_engine_random_events(top, model_dp, source, seed):
    """TIMELY / Swift engine, 1024 flows: the algorithm's completions / ACKs (hot flows, every
    flow active), TX, READ / WRITE / STOP / START / RESET, register rewrites, back-pressure;
    every output every cycle, every flow READ and every counter compared with the model.
    ``CC_DELAY_ENGINES=1``: 2,000 events; ``CC_LONG=1``: 150,000 over the 1024 flows, with hot
    stretches 20 times rarer (``CC_HOT_START``): a hot flow's events are the datapath's
    latency apart (29 / 54 cycles), and at the default share the Swift run would take about
    5.7 million cycles (hours on Verilator with the per-cycle model)."""
    b, extra = no_timer_build(top)
    hot = os.environ.get("CC_HOT_START") or ("0.0001" if long_runs() else "")
    run_cocotb(b, TB, "algo_events", tag=f"algo_events_{source}",
               env=engine_env(top, model_dp, run_length(2_000, LONG_EVENTS, "CC_EVENTS"), seed,
                              CC_CN_SOURCE=source, CC_HOT_START=hot, **extra))


# -- LDCP: the window engine, the sender and the receiver (timers: the 8192-slot wheel) ---------

LDCP_ENGINES = [("ldcp_engine_1k", "sim.models.ldcp_engine:LdcpDatapathModel", "window", 61),
                ("ldcp_tx_engine_1k", "sim.models.ldcp_engine:LdcpTxDatapathModel", "tx", 62),
                ("ldcp_rx_engine_1k", "sim.models.ldcp_engine:LdcpRxDatapathModel", "rx", 63)]
#: the LDCP runs' soak size (CC_LONG=1): >= 100,000 input events over the 1024 flows
LDCP_LONG_EVENTS = 100_000


@pytest.mark.cocotb
@pytest.mark.skipif(
    not long_runs() and os.environ.get("CC_LDCP_ENGINES", "0") in ("", "0"),
    reason="LDCP engine tops on Verilator: CC_LDCP_ENGINES=1 (2,000 events each) or CC_LONG=1 "
           "(100,000): not in make test's budget")
@pytest.mark.parametrize("top,model_dp,source,seed", LDCP_ENGINES)
def test_ldcp_engine_random_events(top, model_dp, source, seed):
    """The multi-flow LDCP tops, 1024 flows (window engine, sender, receiver; the tops with
    an 8192-slot wheel, 4096-cycle horizon, as the DCQCN runners): the source's registers, a
    START of every flow, then events from the engine model's state of each flow
    (cocotb_tests/ldcp_engine_events.py: ACKs, sent reports, packets, TX, READ / WRITE /
    RESET, register rewrites), hot flows and hot stretches, back-pressure; release
    deadlines, timeouts and flushes from the wheel; every output every cycle, every flow READ
    and every counter compared with the model.  ``CC_LDCP_ENGINES=1``: 2,000 input events;
    ``CC_LONG=1``: 100,000 over the 1024 flows, the hot flow's share 10 % instead of 30 %
    (``CC_LDCP_HOT``: a hot flow's events are the datapath's latency apart, 26 / 28 cycles
    for the window engine and the sender, and at 30 % the sender's run took 9 cycles per
    event); ``CC_EVENTS`` overrides the count."""
    b, extra = algo_build(top)
    hot = os.environ.get("CC_LDCP_HOT") or ("0.1" if long_runs() else "")
    run_cocotb(b, TB, "ldcp_events", tag=f"ldcp_events_{source}",
               env=engine_env(top, model_dp, run_length(2_000, LDCP_LONG_EVENTS, "CC_EVENTS"),
                              seed, CC_LDCP_SOURCE=source, CC_LDCP_HOT=hot, **extra))
