"""The register descriptions PeakRDL derives from the project's SystemRDL agree with the
project's own register maps: the generated C header, compiled with the system C compiler,
gives every register's byte offset (``offsetof``) and every field's bit position and width
(``_bp`` / ``_bw`` macros) equal to :meth:`RegisterMap.c_layout`; the HTML and IP-XACT files
are written."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from gateware.export import export_registers, register_map
from gateware.tops import TOPS
from hw.lib.csr import RegisterMapGroup
from tests.test_csr import FLOWS

pytest.importorskip("peakrdl_cheader")
CC = shutil.which("cc") or shutil.which("gcc")


def _parts(regmap):
    """(C member prefix, macro prefix, c_layout key prefix, map) of every map on the port: one
    for a map, each part of a group (PeakRDL nests a part's struct under its instance name)."""
    if isinstance(regmap, RegisterMapGroup):
        return [(f"{i}.", f"{i.upper()}__", f"{i}__", m) for i, _, m in regmap.parts]
    return [("", "", "", regmap)]


def _c_program(regmap) -> tuple[str, list[str]]:
    name, up = regmap.name, regmap.name.upper()
    lines, keys = [f'#include "{name}.h"', "#include <stddef.h>", "#include <stdio.h>",
                   "int main(void) {"], []

    def emit(key, expr):
        keys.append(key)
        lines.append(f'    printf("%lu\\n", (unsigned long)({expr}));')

    for member, macro, key, part in _parts(regmap):
        for r in part.registers + part.header:
            emit(key + r.name, f"offsetof({name}_t, {member}{r.name})")
        for r in part.flow_registers:
            emit(key + r.name, f"offsetof({name}_t, {member}FLOW[0].{r.name})")
        # every window register of the last flow and of one in the middle: FLOW(n) offsets
        for flow in sorted({part.flows // 2, part.flows - 1}) if part.flows else ():
            for r in part.flow_registers:
                emit(f"{key}{r.name}@{flow}", f"offsetof({name}_t, {member}FLOW[{flow}].{r.name})")
        for r in part.registers + part.header + part.flow_registers:
            prefix = (f"{up}__{macro}FLOW__{r.name}" if r in part.flow_registers
                      else f"{up}__{macro}{r.name}")
            for f in r.fields:
                emit(f"{key}{r.name}.{f.name}", f"{prefix}__{f.name.upper()}_bp")
                emit(f"{key}{r.name}.{f.name}#w", f"{prefix}__{f.name.upper()}_bw")
    lines += ["    return 0;", "}"]
    return "\n".join(lines) + "\n", keys


def _flow_addr(regmap, key: str) -> int:
    """The byte address of ``[part__]REG@flow``."""
    reg, flow = key.split("@")
    if isinstance(regmap, RegisterMapGroup):
        inst, reg = reg.split("__", 1)
        return 4 * regmap.addr(inst, reg, int(flow))
    return 4 * regmap.addr(reg, int(flow))


def _one_top_per_block() -> list[str]:
    """The first registered top of each configuration class that has a register map (every
    block on the register layer, once)."""
    seen, tops = set(), []
    for name, top in TOPS.items():
        kind = type(top.config)
        if kind not in seen and getattr(top.config, "register_map", None) is not None:
            seen.add(kind)
            tops.append(name)
    return tops


REGISTER_TOPS = _one_top_per_block()


def test_every_block_with_registers_is_covered():
    for name in ("marker_1x1", "ldcp_window_g4", "ldcp_tx", "cnp_gen_ipv4", "dcqcn_np",
                 "rate_limiter_4", "qcn_rp", "qcn_cp", "cnm_gen", "dcqcn_rp_paper",
                 "l3qcn_cp_roce", "l3qcn_tor", "dcqcn_engine_1k", "qcn_engine_1k",
                 "swift_nic_1k"):
        assert name in REGISTER_TOPS, name


@pytest.mark.skipif(CC is None, reason="no C compiler")
@pytest.mark.parametrize("top", [*REGISTER_TOPS, "flows"])
def test_c_header_matches(top, tmp_path):
    regmap = FLOWS if top == "flows" else register_map(TOPS[top])
    paths = export_registers(regmap, tmp_path)
    assert (paths["html"] / "index.html").exists()
    assert "ipxact:component" in paths["xml"].read_text() or "spirit:component" in \
        paths["xml"].read_text()
    source, keys = _c_program(regmap)
    (tmp_path / "check.c").write_text(source)
    subprocess.run([CC, "-std=c11", "-Wall", "-Werror", "-I", str(tmp_path), "-o",
                    str(tmp_path / "check"), str(tmp_path / "check.c")], check=True)
    out = subprocess.run([str(tmp_path / "check")], check=True, capture_output=True,
                         text=True).stdout.split()
    got = dict(zip(keys, map(int, out), strict=True))
    want = regmap.c_layout()
    for key in [k for k in keys if "@" in k]:
        want[key] = _flow_addr(regmap, key)
    assert got == {k: want[k] for k in keys}
    assert set(want) == set(keys)
    for _, _, _, part in _parts(regmap):
        if part.flows:
            stride = (1 << part.flow_shift) * 4
            assert f"FLOW[{part.flows}]" in paths["h"].read_text()
            assert stride == 16 or top != "flows"


def test_doc_tables_current():
    """The register tables in docs/ are the generated ones (``python -m gateware regs --docs``
    rewrites them)."""
    from gateware.export import ROOT, doc_register_tables
    tables = 0
    for path in sorted((ROOT / "docs").glob("*.md")):
        text = path.read_text()
        tables += text.count("<!-- registers: ")
        assert doc_register_tables(text) == text, f"{path.name}: run python -m gateware regs " \
            "--docs"
    assert tables >= 4


#: block pages, the tops whose generated register table each must hold, and its port tables
DOC_TABLES = {
    "dcqcn.md": ["dcqcn_rp_connectx", "dcqcn_engine_1k", "cnp_gen_ipv4", "dcqcn_np",
                 "rate_limiter_4"],
    "qcn.md": ["qcn_cp", "qcn_rp", "qcn_engine_1k", "cnm_gen"],
    "l3qcn.md": ["l3qcn_cp_roce", "l3qcn_tor"],
    "switch-marker.md": ["marker_1x1"], "ldcp-window.md": ["ldcp_window_g8"],
    "ldcp-transport.md": ["ldcp_tx"], "swift.md": ["swift_nic_1k"],
}
BLOCK_PAGES = ["dcqcn.md", "qcn.md", "l3qcn.md", "switch-marker.md", "ldcp-window.md",
               "ldcp-transport.md", "pacer.md", "flow-engine.md"]


def test_block_pages_have_ports_and_register_tables():
    """Every block page has a Ports section (a port table with the csr rows where the block
    has registers) and the generated register table of each of its blocks."""
    from gateware.export import ROOT
    for page in BLOCK_PAGES:
        text = (ROOT / "docs" / page).read_text()
        assert "| port |" in text, f"{page}: no port table"
        assert "Ports" in text or "ports" in text, page
    for page, tops in DOC_TABLES.items():
        text = (ROOT / "docs" / page).read_text()
        for top in tops:
            assert f"<!-- registers: {top} " in text, f"{page}: no register table of {top}"


@pytest.mark.skipif(CC is None, reason="no C compiler")
def test_engine_window_c_header(tmp_path):
    """The DCQCN engine's per-flow windows in PeakRDL's C header, against hand-derived offsets:
    16 state fields + CTRL = 17 words, so 32 words (128 bytes) per flow; the windows start at
    word 0x8000 (byte 0x20000: 1024 x 32 words above the 0x200 words of the header's half);
    CTRL's command bits 0, 1, 2 and its enable bit 8."""
    regmap = register_map(TOPS["dcqcn_engine_1k"])
    paths = export_registers(regmap, tmp_path)
    name, up = regmap.name, regmap.name.upper()
    checks = {
        f"offsetof({name}_t, FLOW[0].RC)": 0x20000,
        f"offsetof({name}_t, FLOW[1].RC)": 0x20000 + 128,
        f"offsetof({name}_t, FLOW[1023].CTRL)": 0x20000 + 1023 * 128 + 16 * 4,
        f"offsetof({name}_t, FLOW[5].D_DL)": 0x20000 + 5 * 128 + 15 * 4,
        f"sizeof({name}_t)": 0x40000,
        f"{up}__FLOW__CTRL__START_bm": 1, f"{up}__FLOW__CTRL__STOP_bm": 2,
        f"{up}__FLOW__CTRL__RESET_bm": 4, f"{up}__FLOW__CTRL__EN_bm": 0x100,
        f"{up}__FLOWS__FLOWS_reset": 1024 | 5 << 16,
    }
    body = "".join(f'    printf("%lu\\n", (unsigned long)({e}));\n' for e in checks)
    (tmp_path / "win.c").write_text(f'#include "{paths["h"].name}"\n#include <stddef.h>\n'
                                    f"#include <stdio.h>\nint main(void) {{\n{body}"
                                    "    return 0;\n}\n")
    subprocess.run([CC, "-std=c11", "-Wall", "-Werror", "-I", str(tmp_path), "-o",
                    str(tmp_path / "win"), str(tmp_path / "win.c")], check=True)
    out = subprocess.run([str(tmp_path / "win")], check=True, capture_output=True,
                         text=True).stdout.split()
    assert dict(zip(checks, map(int, out), strict=True)) == checks
