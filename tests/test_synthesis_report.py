"""docs/synthesis.json covers every exported top, and the synthesis harness for the Nexus wires
every port (fast: no synthesis is run)."""

import json
from pathlib import Path

from gateware.synth import TARGET_MHZ, harness_verilog, render_markdown, verilog_ports
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
