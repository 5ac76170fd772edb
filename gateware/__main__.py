"""``python -m gateware verilog|regs|synth [TOP ...]``: export + lint (and the register
descriptions), the register descriptions alone, or synthesize for the ECP5.

``verilog TOP --config my.toml --clk-hz N --out DIR [--name NAME] [--axi]`` exports the block
of a registered top with your own knobs (the TOML holds fields of its configuration) and clock.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .export import (
    BUILD,
    export_block,
    export_registers,
    register_map,
    update_doc_tables,
)
from .tops import TOPS


def cmd_verilog(names, args):
    import tomllib

    overrides = {}
    if args.config:
        try:
            with open(args.config, "rb") as f:
                overrides = tomllib.load(f)
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise ValueError(f"--config {args.config}: {exc}") from None
    custom = bool(args.config or args.clk_hz or args.out or args.name or args.axi)
    if args.name and len(names) != 1:
        raise ValueError("--name renames one top: give exactly one")
    for name in names:
        top = TOPS[name]
        if args.out:
            out = Path(args.out) if len(names) == 1 else Path(args.out) / name
        else:
            out = BUILD / (args.name or name)
        paths = export_block(name, out, overrides=overrides, clk_hz=args.clk_hz,
                             name=args.name, axi=args.axi)
        path = paths["v"]
        shown = path.relative_to(Path.cwd()) if path.is_relative_to(Path.cwd()) else path
        print(f"  {args.name or name:<14} {shown}  lint -Wall: clean   ({top.description}"
              f"{', your configuration' if custom else ''})")
        if "rdl" in paths:
            print(f"  {'':<14} registers: " + ", ".join(
                paths[k].name for k in ("rdl", "h", "html", "xml") if k in paths))


def cmd_regs(names, quiet=False):
    """SystemRDL, C header, HTML and IP-XACT of each top with registers."""
    for name in names:
        regmap = register_map(TOPS[name])
        if regmap is None:
            if not quiet:
                print(f"  {name:<14} (no registers)")
            continue
        paths = export_registers(regmap, BUILD / name)
        print(f"  {name:<14} registers: "
              + ", ".join(p.name for k, p in paths.items() if k != "md")
              + ("" if "h" in paths else "  (PeakRDL not installed: SystemRDL only)"))


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m gateware", description=__doc__)
    parser.add_argument("command", choices=["verilog", "regs", "synth"])
    parser.add_argument("tops", nargs="*", help=f"default: all of {', '.join(TOPS)}")
    parser.add_argument("--docs", action="store_true",
                        help="regs: also rewrite the register tables in docs/*.md")
    verilog = parser.add_argument_group("verilog")
    verilog.add_argument("--config", help="TOML file of configuration fields to override")
    verilog.add_argument("--clk-hz", type=int, default=None, help="the block's clock, Hz")
    verilog.add_argument("--out", help="output folder (default: the top's build folder)")
    verilog.add_argument("--name", help="Verilog module name (default: the top's name)")
    verilog.add_argument("--axi", action="store_true",
                         help="register port as an AXI4-Lite slave (s_axil_*)")
    synth = parser.add_argument_group("synth")
    synth.add_argument("--write-docs", action="store_true",
                       help="merge the results into docs/synthesis.json and .md")
    synth.add_argument("--jobs", type=int, default=None, help="parallel jobs (default: cores)")
    synth.add_argument("--force", action="store_true", help="redo tops whose Verilog is unchanged")
    synth.add_argument("--family", action="append", choices=["ecp5", "nexus"],
                       help="FPGA family (repeatable; default: all)")
    args = parser.parse_intermixed_args(argv)   # (options may follow the top names)
    names = args.tops or list(TOPS)
    unknown = [n for n in names if n not in TOPS]
    if unknown:
        parser.error(f"unknown top(s) {unknown}; known: {list(TOPS)}")
    if args.command == "verilog":
        from hw.params import ConfigError
        print(f"Exporting {len(names)} hardware top(s) to Verilog and linting (verilator -Wall):")
        try:
            cmd_verilog(names, args)
        except (ConfigError, ValueError) as exc:
            print(f"verilog: {exc}", file=sys.stderr)
            return 1
    elif args.command == "regs":
        print(f"Register descriptions of {len(names)} top(s) (SystemRDL + PeakRDL):")
        cmd_regs(names)
        if args.docs:
            for path in update_doc_tables():
                print(f"  rewrote the register tables of {path.name}")
    else:
        from .synth import SynthError, synth_all
        try:
            failed = synth_all(names, families=args.family, jobs=args.jobs, force=args.force,
                               write_docs=args.write_docs)
        except SynthError as exc:
            print(f"synth: {exc}", file=sys.stderr)
            return 1
        return 1 if failed else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
