"""``python -m gateware verilog|regs|synth [TOP ...]``: export + lint (and the register
descriptions), the register descriptions alone, or synthesize for the ECP5."""

from __future__ import annotations

import argparse
import sys

from .export import (
    BUILD,
    export_component,
    export_registers,
    lint,
    register_map,
    update_doc_tables,
)
from .tops import TOPS


def cmd_verilog(names):
    for name in names:
        top = TOPS[name]
        path = export_component(top.build(), name, BUILD / name)
        lint(path, name)
        print(f"  {name:<14} {path.relative_to(BUILD.parent.parent)}  lint -Wall: clean"
              f"   ({top.description})")
        cmd_regs([name], quiet=True)


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
              + ", ".join(p.name for k, p in paths.items() if k != "md"))


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m gateware", description=__doc__)
    parser.add_argument("command", choices=["verilog", "regs", "synth"])
    parser.add_argument("tops", nargs="*", help=f"default: all of {', '.join(TOPS)}")
    parser.add_argument("--docs", action="store_true",
                        help="regs: also rewrite the register tables in docs/*.md")
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
        print(f"Exporting {len(names)} hardware top(s) to Verilog and linting (verilator -Wall):")
        cmd_verilog(names)
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
