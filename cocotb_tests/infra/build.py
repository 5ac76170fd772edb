"""Export -> Verilator build -> cocotb run, from pytest.

``build_top(name, component)`` exports ``component`` to ``build/cocotb/<name>/<name>.v`` and
builds it with Verilator into the same folder.  The build happens once per content of the
Verilog: an unchanged file keeps its timestamp and Verilator's make finds nothing to do, and a
file lock serialises pytest-xdist workers that want the same build.

``run_cocotb(build, module, testcase=..., env=...)`` runs a cocotb test module on that build in
a fresh simulator process.  cocotb's runner raises when a test fails (under pytest).

Waveforms: set ``WAVES=1`` in the environment; the build then traces (Verilator ``--trace``, VCD)
and
each run writes ``build/cocotb/<name>/<test>/dump.vcd`` (open it with GTKWave or Surfer).
"""

from __future__ import annotations

import fcntl
import os
import re
from dataclasses import dataclass
from pathlib import Path

from gateware.export import ROOT, add_verilator_to_path, export_component

COCOTB_BUILD = ROOT / "build" / "cocotb"


def long_runs() -> bool:
    """True under ``make test-long`` (``CC_LONG=1``): soak-sized random runs."""
    return os.environ.get("CC_LONG", "0") not in ("", "0")


def run_length(default: int, long: int, env: str | None = None) -> str:
    """Event count for a random run, as the string cocotb's environment wants.

    ``make test`` uses ``default`` (sized so the whole suite fits its time budget on 2 cores),
    ``make test-long`` uses ``long``; an explicit ``env`` variable (e.g. ``CC_EVENTS``) set by
    the user wins over both.
    """
    if env and os.environ.get(env):
        return os.environ[env]
    return str(long if long_runs() else default)


#: exported Verilog above this size is a "large" model, compiled at -O0 (the engine tops:
#: 1-3 MB; the frame blocks and the L3QCN tables: 240-600 KB).  Measured per test (CPU of the
#: build plus the run, fresh builds, -Os vs -O0): cnp_notify 56 -> 29 s, flow_id_table 38 -> 20 s,
#: l3qcn_cp_roce 48 -> 33 s, cnp_qp_table 24 -> 18 s; below 200 KB -O0 loses (the one-flow DCQCN
#: RP's 25,000-event runs 10 -> 23 s, the LDCP receiver 26 -> 75 s): their runs are C++-bound.
LARGE_VERILOG = 200_000


def cxx_opt(verilog_bytes: int) -> str:
    """The C++ optimisation level of a Verilated model: ``CC_CXX_OPT`` if set, else ``-O0``
    for a large model and the makefile's own ``-Os`` for the others.

    Large models are up to a few MB of straight-line code on which -Os spends minutes
    (flow_engine_toy: 4 min 48 s of CPU at -Os, 26 s at -O0), while their runs are short and
    bound by the Python testbench (its 20,000-event run: 4.6 s -> about 9 s).  The one-flow
    blocks compile in seconds and their long runs are bound by the model's C++, so they
    keep -Os."""
    opt = os.environ.get("CC_CXX_OPT", "").strip()
    if not opt:
        return "-O0" if verilog_bytes > LARGE_VERILOG else "-Os"
    if not re.fullmatch(r"-O[0-3sg]|-Ofast", opt):
        raise ValueError(f"CC_CXX_OPT={opt!r}: expected one of -O0 -O1 -O2 -O3 -Os -Og -Ofast")
    return opt


#: the compile wrapper that shares the Verilator run-time objects between builds;
#: ``CC_OBJCACHE=0`` turns it off
OBJCACHE = Path(__file__).with_name("objcache")
OBJCACHE_ENABLED = os.environ.get("CC_OBJCACHE", "1") not in ("", "0")


def waves_enabled() -> bool:
    return os.environ.get("WAVES", "0") not in ("", "0")


@dataclass(frozen=True)
class Build:
    name: str
    build_dir: Path
    verilog: Path


def build_top(name: str, component) -> Build:
    """Export and Verilate ``component`` as top module ``name`` (once per content)."""
    add_verilator_to_path()
    from cocotb_tools.runner import get_runner

    build_dir = COCOTB_BUILD / name
    build_dir.mkdir(parents=True, exist_ok=True)
    # The PyPI wheel's verilated.mk leaves CFG_CXXFLAGS_PCH_I empty, which breaks the
    # precompiled-header rule Verilator uses once a model is split into several C++ files
    # ("Vtop__pch.h.fast: linker input file not found").  GCC's flag is -include; a variable
    # set in MAKEFLAGS has command-line precedence over the makefile's own assignment.
    if "CFG_CXXFLAGS_PCH_I" not in os.environ.get("MAKEFLAGS", ""):
        os.environ["MAKEFLAGS"] = (os.environ.get("MAKEFLAGS", "") +
                                   " CFG_CXXFLAGS_PCH_I=-include").strip()
    # the Verilator run-time objects are compiled once per compile command and copied into
    # every other build (cocotb_tests/infra/objcache: about 10 s of CPU per one-flow build)
    if OBJCACHE_ENABLED and " " not in str(OBJCACHE):
        os.environ.setdefault("CC_OBJCACHE_DIR", str(COCOTB_BUILD / ".objcache"))
        if "OBJCACHE=" not in os.environ["MAKEFLAGS"]:
            os.environ["MAKEFLAGS"] += f" OBJCACHE={OBJCACHE}"
    base_flags = re.sub(r"\s*OPT_(FAST|SLOW|GLOBAL)=\S+", "", os.environ["MAKEFLAGS"])
    with open(build_dir / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        verilog = export_component(component, name, build_dir)
        # the C++ level by the model's size (cxx_opt); an existing build is not recompiled
        # when only the level changes
        opt = cxx_opt(verilog.stat().st_size)
        # (-Os: the makefile's own levels, which leave the "slow" constructor code unoptimised)
        os.environ["MAKEFLAGS"] = base_flags + (
            "" if opt == "-Os" else f" OPT_FAST={opt} OPT_GLOBAL={opt}"
            + (" OPT_SLOW=-O0" if opt == "-O0" else ""))
        runner = get_runner("verilator")
        runner.build(
            sources=[verilog],
            hdl_toplevel=name,
            build_dir=build_dir,
            build_args=["-Wno-fatal", "-O3", "--x-assign", "fast", "--x-initial", "fast"],
            waves=waves_enabled(),
            timescale=("1ns", "1ps"),
            log_file=build_dir / "build.log",
        )
    return Build(name, build_dir, verilog)


def run_cocotb(build: Build, module: str, testcase: str | list[str] | None = None,
               env: dict[str, str] | None = None, tag: str | None = None) -> Path:
    """Run cocotb test ``module`` (a dotted module name) on ``build``; return results.xml."""
    add_verilator_to_path()
    from cocotb_tools.runner import get_runner

    cases = [testcase] if isinstance(testcase, str) else testcase
    label = tag or (cases[0] if cases and len(cases) == 1 else module.rsplit(".", 1)[-1])
    test_dir = build.build_dir / re.sub(r"[^A-Za-z0-9_.-]", "_", label)
    test_dir.mkdir(parents=True, exist_ok=True)
    runner = get_runner("verilator")
    extra_env = {"PYTHONWARNINGS": os.environ.get("PYTHONWARNINGS", "error"), **(env or {})}
    results = runner.test(
        test_module=module,
        hdl_toplevel=build.name,
        hdl_toplevel_lang="verilog",
        testcase=cases,
        build_dir=build.build_dir,
        test_dir=test_dir,
        extra_env=extra_env,
        waves=waves_enabled(),
        results_xml=str(test_dir / "results.xml"),
        log_file=test_dir / "sim.log",
    )
    # The runner fails on failing tests, but not on a filter that selected nothing.
    from cocotb_tools.check_results import get_results

    total, failed = get_results(Path(results))
    if total == 0 or failed:
        raise AssertionError(f"cocotb {module} {cases or ''}: {total} tests ran, {failed} failed"
                             f" (log: {test_dir / 'sim.log'})")
    return Path(results)
