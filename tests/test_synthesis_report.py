"""docs/synthesis.json covers every exported top, and the synthesis harness for the Nexus wires
every port (fast: no synthesis is run)."""

import json
from pathlib import Path

from gateware.synth import (
    TARGET_MHZ,
    family_comparison,
    harness_verilog,
    render_markdown,
    verilog_ports,
)
from gateware.tops import DEFAULT_TOPS

DOCS = Path(__file__).resolve().parent.parent / "docs"


def test_every_top_has_a_synthesis_entry():
    tops = json.loads((DOCS / "synthesis.json").read_text())["tops"]
    missing = [name for name in DEFAULT_TOPS if name not in tops]
    assert not missing, (f"docs/synthesis.json has no entry for {missing}: run "
                         f"`python -m gateware synth --write-docs {' '.join(missing)}`")
    for name in DEFAULT_TOPS:
        assert tops[name].get("fmax_mhz"), f"{name}: no ECP5 Fmax in docs/synthesis.json"


def test_report_summary_counts_tops_meeting_the_target():
    tops = {"a": {"top": "a", "description": "x", "fmax_mhz": TARGET_MHZ,
                  "nexus": {"fmax_mhz": 100.0}},
            "b": {"top": "b", "description": "y", "fmax_mhz": 150.0}}
    md = render_markdown(tops, {"yosys": "Y", "nextpnr-ecp5": "E", "nextpnr-nexus": "N"})
    assert f"**1 of 2 tops meet {TARGET_MHZ} MHz on the ECP5; 0 of 2 on the Nexus.**" in md
    assert "| 150.0 (miss) |" in md and "| 100.0 (miss) |" in md
    assert "## ECP5 and Nexus compared" in md


def test_family_comparison_sorts_tops_by_what_the_nexus_gains():
    tops = {"slow": {"top": "slow", "fmax_mhz": 150.0, "nexus": {"fmax_mhz": 120.0}},
            "same": {"top": "same", "fmax_mhz": 100.0, "nexus": {"fmax_mhz": 100.0}},
            "bit": {"top": "bit", "fmax_mhz": 100.0, "nexus": {"fmax_mhz": 110.0}},
            "lot": {"top": "lot", "fmax_mhz": 200.0, "nexus": {"fmax_mhz": 300.0}},
            "ecp5_only": {"top": "ecp5_only", "fmax_mhz": 90.0},
            "failed": {"top": "failed", "fmax_mhz": 90.0, "nexus": {"fmax_mhz": None}}}
    # by hand: gains 1.5 (lot), 1.1 (bit); not faster: 1.0 (same), 0.8 (slow)
    assert family_comparison(tops) == [
        "Measured on both families: 4 top(s). Faster on the Nexus (ECP5 -> Nexus Fmax): "
        "`lot` (200.0 -> 300.0 MHz), `bit` (100.0 -> 110.0 MHz). Not faster on the Nexus: "
        "`same` (100.0 -> 100.0 MHz), `slow` (150.0 -> 120.0 MHz)."]
    assert family_comparison({"a": {"top": "a", "fmax_mhz": 1.0}}) == [
        "No top has been placed and routed on both families yet."]


VERILOG = """module sub(a, b);
  input [3:0] a;
endmodule
module dut(clk, rst, a, y, v);
  input clk;
  input rst;
  input [11:4] a;
  output [2:0] y;
  output v;
endmodule
"""


def test_harness_connects_every_port():
    assert verilog_ports(VERILOG, "dut") == [("input", "clk", 1), ("input", "rst", 1),
                                             ("input", "a", 8), ("output", "y", 3),
                                             ("output", "v", 1)]
    h = harness_verilog(VERILOG, "dut")
    assert "reg [7:0] si;" in h and "reg [3:0] so;" in h
    assert "dut dut(.clk(clk), .rst(rst), .a(si[7:0]), .y(o[2:0]), .v(o[3:3]));" in h


def test_unreadable_nextpnr_report_is_one_error_line(tmp_path, monkeypatch):
    """A tool that exits 0 without writing its report gives one SynthError line, no traceback."""
    import pytest

    from gateware import synth
    (tmp_path / "dut.v").write_text(VERILOG)
    monkeypatch.setattr(synth, "_run", lambda *args, **kwargs: None)     # tools "succeed"
    monkeypatch.setattr(synth, "_tool", lambda name: name)
    with pytest.raises(synth.SynthError) as exc:
        synth._run_family("dut", synth.FAMILIES["ecp5"], tmp_path, "0" * 64, "dut.v")
    msg = str(exc.value)
    assert "\n" not in msg and msg.startswith("dut (ECP5): nextpnr report nextpnr_ecp5.json "
                                              "unreadable: FileNotFoundError")
