"""pytest runners: the AXI-Stream frame interfaces on Verilator, driven by cocotbext-axi.

One build holds the four AXI-Stream wrapped tops of ``gateware/tops.py`` (CNP, CNM and private
CNM generators, the L3QCN ToR converter) side by side (``cocotb_tests/axis_frames_tb.py``); a
second build is the NIC notification path ``cnp_notify`` (``cocotb_tests/cnp_notify_tb.py``).
``CC_LONG=1``: longer random runs."""

from __future__ import annotations

import pytest
from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import Out

from cocotb_tests.infra.build import build_top, run_cocotb, run_length
from gateware.tops import TOPS

#: prefix in the combined build -> top of gateware/tops.py
FRAME_TOPS = {"cnp": "cnp_gen_axis", "cnm": "cnm_gen_axis", "pcnm": "private_cnm_axis",
              "tor": "l3qcn_tor_axis"}


class FrameTops(wiring.Component):
    """The AXI-Stream frame tops side by side, ports ``<prefix>__<port>`` (one Verilator
    build for all of them)."""

    def __init__(self):
        self.blocks = {p: TOPS[name].build() for p, name in FRAME_TOPS.items()}
        super().__init__({p: Out(b.signature) for p, b in self.blocks.items()})

    def elaborate(self, platform):
        m = Module()
        for p, block in self.blocks.items():
            m.submodules[p] = block
            wiring.connect(m, wiring.flipped(getattr(self, p)), block)
        return m


@pytest.mark.cocotb
def test_axis_frames():
    run_cocotb(build_top("axis_frames", FrameTops()), "cocotb_tests.axis_frames_tb",
               ["generators", "tor_converter"], tag="all",
               env={"CC_FRAMES": run_length(40, 2000, "CC_FRAMES")})


@pytest.mark.cocotb
def test_cnp_notify():
    t = TOPS["cnp_notify"]
    run_cocotb(build_top("cnp_notify", t.build()), "cocotb_tests.cnp_notify_tb",
               ["registers", "directed", "random_traffic"], tag="all",
               env={"CC_CONFIG": t.config.to_json(),
                    "CC_EVENTS": run_length(300, 20000, "CC_EVENTS")})
