"""FuseSoC packaging: the ``.core`` written with an exported top is a valid CAPI2 core whose
``lint`` target (``verilator --lint-only -Wall`` with the top's waivers, in FuseSoC's own work
tree) passes, and fails when the Verilog has a real lint problem."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from gateware.export import export_block, verilator_bin

pytest.importorskip("fusesoc")


def _lint(cores, build):
    env = dict(os.environ, PATH=f"{verilator_bin()}{os.pathsep}{os.environ.get('PATH', '')}")
    return subprocess.run([sys.executable, "-c", "import sys; from fusesoc.main import main; "
                           "sys.exit(main())", "--cores-root", str(cores), "run",
                           "--build-root", str(build), "--target", "lint",
                           "cc-engines:ip:cnp_gen_ipv4"],
                          capture_output=True, text=True, env=env, cwd=build.parent)


def test_fusesoc_lint(tmp_path):
    ip = tmp_path / "ip"
    paths = export_block("cnp_gen_ipv4", ip)
    assert paths["core"].read_text().startswith("CAPI=2:")
    proc = _lint(ip, tmp_path / "fusesoc")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "ERROR" not in proc.stdout + proc.stderr
    # a real problem (an unused, undriven wire) is not waived: the lint target fails
    v = paths["v"]
    v.write_text(v.read_text().replace("endmodule", "  wire lint_bait;\nendmodule", 1))
    proc = _lint(ip, tmp_path / "fusesoc2")
    assert proc.returncode != 0
