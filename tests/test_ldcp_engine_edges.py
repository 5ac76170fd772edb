"""Configuration edges of the LDCP sender engine (hw/nic/ldcp_engine.py) the datapath tests do
not look at: the per-flow state size the engine reserves (hand-derived from the layout)."""

from __future__ import annotations

import pytest

from hw.nic.ldcp_engine import LdcpEngineConfig
from tests import ldcp_engine_harness as harness
from tests.test_ldcp_engine import window


@pytest.mark.parametrize("time_width, rel_width, bits", [
    (16, 8, 32 + 8 + 1 + 16 + 16),      # wr = {cw 32, rel 8}, on, dl (W), ovr (UQ0.16)
    (14, 16, 32 + 16 + 1 + 14 + 16),
])
def test_state_bits(time_width, rel_width, bits):
    cfg = LdcpEngineConfig(engine=harness.flow_engine(16, time_width, 1024, 4096, 30),
                           window=window(), rel_width=rel_width)
    assert cfg.state_bits() == bits
