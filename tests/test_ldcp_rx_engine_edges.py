"""Edge cases of the multi-flow LDCP receiver (hw/nic/ldcp_rx_engine.py) that the random vectors
of tests/test_ldcp_rx_engine.py reach only by chance: the ack_delay register at 0 (the flush
deadline is one cycle after the packet, never the same cycle) and at 1 (the same deadline)."""

from __future__ import annotations

import random

import pytest

from hw.nic.ldcp_rx_engine import LdcpRxDatapath
from sim.models.ldcp_engine import LdcpRxDatapathModel
from tests import ldcp_engine_harness as harness
from tests.test_flow_engine import SEED
from tests.test_ldcp_rx_engine import Rx, _rx_vectors, rx_config


@pytest.mark.parametrize("delay", [0, 1])
def test_ack_delay_zero_is_one_cycle(delay):
    """Hand-derived: one packet at t = 100 with m = 4 leaves one pending; the deadline is
    100 + max(ack_delay, 1) = 101 for ack_delay 0 and 1 alike."""
    r = Rx(ack_delay=delay)
    r.pkt(100, 0)
    assert r.s["fl_on"] and r.s["fl_dl"] == 101 and r.last.wake == 101


@pytest.mark.parametrize("delay", [0, 1])
def test_rtl_rx_ack_delay_extremes(delay):
    """The RTL datapath against the model (the model's deadline is an unbounded Python sum,
    masked) with ack_delay at 0 and 1."""
    cfg = rx_config(latency=1)
    dp = LdcpRxDatapath(cfg)
    model = LdcpRxDatapathModel(dp)
    rng = random.Random(f"{SEED}-rx-delay-{delay}")
    print("seed", f"{SEED}-rx-delay-{delay}")
    regs = model.regs_reset()
    regs.update(m=4, ack_delay=delay)
    harness.check_vectors(dp, model, regs, _rx_vectors(cfg, rng, 120))


def test_ack_delay_register_range():
    """The flush time is a wheel deadline: 1 ... 2**(time_width - 2) - 1 cycles, at a 16-bit
    time 16383 accepted (the register holds it), 16384 rejected (one clear ConfigError)."""
    from hw.params import ConfigError
    cfg = rx_config(ack_delay_cycles=16383)
    assert cfg.transport.registers().ack_delay == 16383
    r = Rx(cfg, ack_delay=16383)
    r.pkt(100, 0)
    assert r.s["fl_dl"] == 100 + 16383
    with pytest.raises(ConfigError, match=r"ack_delay.*= 16383 cycles \(the flush"):
        rx_config(ack_delay_cycles=16384)
