"""Export of a block with the user's knobs and clock (gateware/export.py, ``python -m gateware
verilog --config --clk-hz --out``): the configuration and clock reach the hardware and the
written ``<top>.json``; every payload field's offset and width in the JSON, the SystemVerilog
package and the Verilog header agree with Amaranth's packing; the lint waivers work in any
output folder; bad input is one line, not a traceback."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from gateware.export import add_verilator_to_path, configure, export_block
from hw.layouts import Ecn, QueueOp, marker_descriptor_layout
from hw.params import ConfigError


def test_configure_overrides_and_clock():
    cfg = configure("ldcp_tx", {"line_rate_gbps": 25.0, "window": {"rtt_us": 2.0}},
                    clk_hz=156_250_000)
    assert cfg.line_rate_gbps == 25.0 and cfg.window.rtt_us == 2.0
    assert cfg.window.clk_hz == 156_250_000
    assert cfg.window.registers().rtt == round(2.0 * 156.25)
    with pytest.raises(ConfigError, match="k_min"):
        configure("marker_1x1", {"k_min": -1})
    with pytest.raises(ConfigError, match="no_such_knob"):
        configure("marker_1x1", {"no_such_knob": 1})


def test_export_marker_with_knobs(tmp_path):
    out = tmp_path / "ip" / "any where"          # not under gateware/build: waivers still apply
    paths = export_block("marker_1x1", out, overrides={"ports": 3, "priorities": 2,
                                                      "k_min": 1000, "k_max": 9000},
                         clk_hz=200_000_000, name="my_marker")
    meta = json.loads(paths["json"].read_text())
    assert meta["name"] == "my_marker" and meta["config"]["ports"] == 3
    assert meta["config_class"] == "MarkerConfig" and meta["clk_hz"] is None  # no time knob
    desc = meta["ports"]["desc__payload"]
    fields = {f["name"]: (f["offset"], f["width"]) for f in desc["fields"]}
    # the packing the JSON describes is Amaranth's: pack a descriptor both ways
    layout = marker_descriptor_layout(configure("marker_1x1", {"ports": 3, "priorities": 2}))
    values = {"op": QueueOp.DEQUEUE, "port": 2, "prio": 1, "length": 1234, "ecn": Ecn.ECT0}
    packed = sum((v.value if hasattr(v, "value") else v) << fields[k][0]
                 for k, v in values.items())
    assert packed == layout.const(values).as_bits()
    assert desc["width"] == layout.size == sum(w for _, w in fields.values())
    regs = meta["registers"]
    assert regs["block_type"] == "MRKR" and regs["layout"]["K_MIN"] == 4
    # the SystemVerilog package and the header carry the same numbers
    sv = paths["sv"].read_text()
    vh = paths["vh"].read_text()
    for name, (offset, width) in fields.items():
        key = f"DESC__PAYLOAD_{name.upper()}"
        assert f"localparam int unsigned {key}_OFFSET = {offset};" in sv
        assert f"`define MY_MARKER_{key}_WIDTH {width}" in vh
    assert "localparam int unsigned REG_K_MIN_ADDR = 4;" in sv
    assert (out / "my_marker.h").exists() and (out / "my_marker.rdl").exists()


def test_sv_package_elaborates(tmp_path):
    """Verilator elaborates a module that imports the package and checks two offsets."""
    paths = export_block("ldcp_window_g4", tmp_path, clk_hz=156_250_000, registers=False,
                         run_lint=False)
    meta = json.loads(paths["json"].read_text())
    assert meta["clk_hz"] == 156_250_000
    ack = {f["name"]: f for f in meta["ports"]["ack__payload"]["fields"]}
    add_verilator_to_path()

    def elaborate(offset: int) -> subprocess.CompletedProcess:
        check = tmp_path / "check.sv"
        check.write_text(
            "module check;\n  import ldcp_window_g4_pkg::*;\n"
            f"  if (ACK__PAYLOAD_N_OFFSET != {offset}) begin : gen_n $error(\"offset\"); end\n"
            "  if (CLK_HZ != 156250000) begin : gen_clk $error(\"clock\"); end\n"
            "endmodule\n")
        # (the package's other constants are unused here by design)
        return subprocess.run([shutil.which("verilator"), "--lint-only", "-Wall",
                               "-Wno-UNUSEDPARAM", "--top-module", "check", str(paths["sv"]),
                               str(check)], capture_output=True, text=True)
    proc = elaborate(ack["n"]["offset"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert elaborate(ack["n"]["offset"] + 1).returncode != 0      # the check can fail


def test_cli_one_line_errors(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("k_min = -5\n")
    proc = subprocess.run([sys.executable, "-m", "gateware", "verilog", "marker_1x1",
                           "--config", str(bad), "--out", str(tmp_path / "o")],
                          capture_output=True, text=True)
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip().count("\n") == 0 and "k_min" in proc.stderr
