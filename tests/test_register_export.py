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
from tests.test_csr import FLOWS

pytest.importorskip("peakrdl_cheader")
CC = shutil.which("cc") or shutil.which("gcc")


def _c_program(regmap) -> tuple[str, list[str]]:
    name, up = regmap.name, regmap.name.upper()
    lines, keys = [f'#include "{name}.h"', "#include <stddef.h>", "#include <stdio.h>",
                   "int main(void) {"], []

    def emit(key, expr):
        keys.append(key)
        lines.append(f'    printf("%lu\\n", (unsigned long)({expr}));')

    for r in regmap.registers + regmap.header:
        emit(r.name, f"offsetof({name}_t, {r.name})")
    for r in regmap.flow_registers:
        emit(r.name, f"offsetof({name}_t, FLOW[0].{r.name})")
    for r in regmap.registers + regmap.header + regmap.flow_registers:
        prefix = f"{up}__FLOW__{r.name}" if r in regmap.flow_registers else f"{up}__{r.name}"
        for f in r.fields:
            emit(f"{r.name}.{f.name}", f"{prefix}__{f.name.upper()}_bp")
            emit(f"{r.name}.{f.name}#w", f"{prefix}__{f.name.upper()}_bw")
    lines += ["    return 0;", "}"]
    return "\n".join(lines) + "\n", keys


@pytest.mark.skipif(CC is None, reason="no C compiler")
@pytest.mark.parametrize("top", ["marker_8x8", "ldcp_window_g4", "ldcp_tx", "cnp_gen_ipv4",
                                 "flows"])
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
    assert got == {k: want[k] for k in keys}
    assert set(want) == set(keys)
    if regmap.flows:
        stride = (1 << regmap.flow_shift) * 4
        assert f"FLOW[{regmap.flows}]" in paths["h"].read_text()
        assert stride == 16


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
