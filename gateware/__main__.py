"""``python -m gateware verilog|regs|synth [TOP ...]``: export + lint (and the register
descriptions), the register descriptions alone, or synthesize for the ECP5.

``verilog TOP --config my.toml --clk-hz N --out DIR [--name NAME] [--axi]`` exports the block
of a registered top with your own knobs (the TOML holds fields of its configuration) and clock.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import inspect
import json
import sys
import textwrap
from importlib import metadata
from pathlib import Path

from .export import (
    BUILD,
    ROOT,
    export_block,
    export_registers,
    register_map,
    update_doc_tables,
)
from .tops import DEFAULT_TOPS, TOPS

STAMP = ".export-stamp.json"


def _module_file(module: str) -> Path | None:
    """The source file of a module of this project (``hw.nic.dcqcn_rp``), or None."""
    base = ROOT.joinpath(*module.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def _imports(tree: ast.AST, module: str, is_package: bool) -> set[str]:
    """The project modules a parsed module imports (``from .x import y`` resolved; ``y`` too
    when it is a submodule)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = module.split(".")
                keep = len(parts) - node.level + (1 if is_package else 0)
                base = ".".join(parts[:keep] + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return {m for m in found if m.split(".")[0] == "hw" and _module_file(m)}


def _top_sources(name: str) -> list[Path]:
    """Every source file the export of top ``name`` depends on: the modules its factory and
    its configuration class import, transitively within ``hw/`` (and their packages), and the
    exporter itself (``gateware/tops.py`` counts through the factory's source and the
    configuration, both in the key)."""
    top = TOPS[name]
    factory_tree = ast.parse(textwrap.dedent(inspect.getsource(top.factory)))
    todo = _imports(factory_tree, top.factory.__module__, False)
    todo |= {m for m in (type(top.config).__module__, top.factory.__module__)
             if m.startswith("hw.")}
    seen: set[str] = set()
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        seen.add(module)
        parts = module.split(".")
        todo.update(".".join(parts[:i]) for i in range(1, len(parts)))     # the packages
        path = _module_file(module)
        tree = ast.parse(path.read_bytes())
        todo |= _imports(tree, module, path.name == "__init__.py") - seen
    files = {_module_file(m) for m in seen} | {ROOT / "gateware" / f for f in (
        "export.py", "__main__.py", "verilator_waivers.vlt")}
    return sorted(files)


def _stamp_key(name: str) -> str:
    """A hash of what the export of top ``name`` depends on: its source files
    (:func:`_top_sources`), its factory's source, its configuration and the versions of
    Amaranth and Verilator."""
    top = TOPS[name]
    h = hashlib.sha256()
    for path in _top_sources(name):
        h.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes() + b"\0")
    h.update(inspect.getsource(top.factory).encode() + b"\0" + name.encode() + b"\0")
    h.update(top.config.to_json().encode())
    for dist in ("amaranth", "verilator"):
        try:
            h.update(f"{dist}={metadata.version(dist)}".encode())
        except metadata.PackageNotFoundError:
            pass
    return h.hexdigest()


def _up_to_date(out: Path, key: str) -> dict | None:
    """The stamp of ``out`` if it matches ``key`` and every file it lists still exists."""
    try:
        stamp = json.loads((out / STAMP).read_text())
    except (OSError, ValueError):
        return None
    if stamp.get("key") != key or not all((out / f).exists() for f in stamp.get("files", [])):
        return None
    return stamp


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
        # a registered top whose sources, configuration and tools are unchanged since its last
        # export and lint is not redone (--force redoes it)
        key = None if custom else _stamp_key(name)
        stamp = None if custom or args.force else _up_to_date(out, key)
        if stamp is not None:
            path = out / stamp["files"][0]
            shown = path.relative_to(Path.cwd()) if path.is_relative_to(Path.cwd()) else path
            print(f"  {name:<14} {shown}  up to date (lint -Wall: clean)   ({top.description})")
            continue
        (out / STAMP).unlink(missing_ok=True)
        paths = export_block(name, out, overrides=overrides, clk_hz=args.clk_hz,
                             name=args.name, axi=args.axi)
        if key is not None:
            files = [paths["v"].name] + sorted({p.name for k, p in paths.items() if k != "v"})
            (out / STAMP).write_text(json.dumps({"key": key, "files": files}) + "\n")
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
    parser.add_argument("tops", nargs="*",
                        help=f"default: all of {', '.join(DEFAULT_TOPS)}; also: "
                        f"{', '.join(n for n in TOPS if n not in DEFAULT_TOPS)}")
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
    synth.add_argument("--force", action="store_true",
                       help="redo tops whose Verilog is unchanged (verilog: whose sources are "
                       "unchanged since the last export and lint)")
    synth.add_argument("--family", action="append", choices=["ecp5", "nexus"],
                       help="FPGA family (repeatable; default: all)")
    args = parser.parse_intermixed_args(argv)   # (options may follow the top names)
    names = args.tops or list(DEFAULT_TOPS)
    unknown = [n for n in names if n not in TOPS]
    if unknown:
        parser.error(f"unknown top(s) {unknown}; known: {list(TOPS)}")
    if args.command == "verilog":
        from hw.params import ConfigError
        print(f"Exporting {len(names)} hardware top(s) to Verilog and linting (verilator -Wall):")
        try:
            cmd_verilog(names, args)
        except (ConfigError, ValueError, RuntimeError) as exc:   # RuntimeError: lint failed
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
