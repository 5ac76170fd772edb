"""Every entry of ``gateware/tops.py`` elaborates: built from its configuration, converted to
RTLIL (all of Amaranth's elaboration and checks, no Yosys), its port metadata serialisable and
its configuration round-tripping through JSON (the form the cocotb builds receive).  A few tops
of different shapes also go through the whole Verilog conversion (Yosys); the lint of every top
is ``make verilog``.  About 10 CPU seconds."""

from __future__ import annotations

import json

import pytest
from amaranth.back import rtlil, verilog

from gateware.tops import DEFAULT_TOPS, TOPS


@pytest.mark.parametrize("name", DEFAULT_TOPS)
def test_top_elaborates(name):
    top = TOPS[name]
    assert top.name == name and top.description
    assert type(top.config).from_json(top.config.to_json()) == top.config
    component = top.build()
    json.dumps(component.metadata.as_json())
    text = rtlil.convert(component, name=name)
    assert f"module \\{name}\n" in text


#: a flat block, a block with a lib.crc submodule, and a top made of several blocks
@pytest.mark.parametrize("name", ["ldcp_rx", "cnp_gen_ipv4", "l3qcn_cp_qcn"])
def test_top_converts_to_verilog(name):
    text = verilog.convert(TOPS[name].build(), name=name, emit_src=False)
    assert f"module {name}(" in text


@pytest.mark.parametrize("name", [n for n in TOPS if n not in DEFAULT_TOPS])
def test_engine_top_configuration_round_trips(name):
    # (the engine tops are elaborated at small sizes by their own tests: at 1K-4K flows their
    # timer wheel alone takes minutes to elaborate)
    top = TOPS[name]
    assert top.name == name and top.description and not top.default
    assert type(top.config).from_json(top.config.to_json()) == top.config
