"""pytest runners: build the LDCP transport tops (``ldcp_tx``, ``ldcp_rx``) and run the cocotb
testbench on each: a long seeded random run through lossy, marking channels with back-pressure
(2,500 packets + ACKs, 100,000 under ``CC_LONG=1``; ``CC_LDCP_EVENTS`` overrides) and the
directed scenarios.
"""

from __future__ import annotations

import pytest

from cocotb_tests.infra.build import build_top, run_cocotb, run_length
from gateware.tops import TOPS

TB = "cocotb_tests.ldcp_transport_tb"
#: packets + ACKs of the random run: 2,500 in ``make test`` (the sender's run is about 45 s of
#: CPU, most of it the Python testbench), 100,000 under ``CC_LONG=1``; ``CC_LDCP_EVENTS`` wins
EVENTS = run_length(2_500, 100_000, "CC_LDCP_EVENTS")


def build(name: str):
    return build_top(name, TOPS[name].build())


@pytest.mark.cocotb
@pytest.mark.parametrize("top,side", [("ldcp_tx", "tx"), ("ldcp_rx", "rx")])
def test_ldcp_transport(top, side):
    env = {"CC_CONFIG": TOPS[top].config.to_json(), "CC_EVENTS": EVENTS}
    run_cocotb(build(top), TB, [f"random_{side}", f"directed_{side}"], env=env, tag=side)
