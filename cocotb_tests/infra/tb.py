"""Clock, reset, seeds and wait helpers shared by every testbench."""

from __future__ import annotations

import os
import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, ReadOnly, RisingEdge
from cocotb.utils import get_sim_time

CLOCK_PERIOD_NS = 4  # 250 MHz, the project's default clk_hz


def test_seed(default: int) -> int:
    """The seed of a random test: ``CC_SEED`` from the environment, else ``default``.
    Printed by the caller so that every run can be reproduced."""
    return int(os.environ.get("CC_SEED", default))


def env_seed(default: int) -> int:
    """The seed of a random test run by a pytest runner: ``CC_SEED``, else the runner's
    ``CC_DEFAULT_SEED`` (one per parametrisation), else ``default``."""
    return test_seed(int(os.environ.get("CC_DEFAULT_SEED", default)))


def env_config(config_class, var: str = "CC_CONFIG"):
    """The block's configuration, passed by the pytest runner as JSON in ``var``."""
    return config_class.from_json(os.environ[var])


def env_count(var: str, default: int) -> int:
    """An event count set by the runner (``CC_EVENTS``, ``CC_FRAMES``, ...), else ``default``."""
    return int(os.environ.get(var, default))


class TBBase:
    """Starts the clock, and resets the design (synchronous, active high)."""

    def __init__(self, dut, seed: int):
        self.dut = dut
        self.log = dut._log
        self.seed = seed
        self.rng = random.Random(seed)
        self.log.info("seed = %d (reproduce with CC_SEED=%d)", seed, seed)
        cocotb.start_soon(Clock(dut.clk, CLOCK_PERIOD_NS, unit="ns").start())

    @staticmethod
    def cycle() -> int:
        """The current clock cycle (edges since time 0).  Called right after a rising edge (as
        the stream callbacks are), it numbers that edge."""
        return int(get_sim_time(unit="ns")) // CLOCK_PERIOD_NS

    async def reset(self, cycles: int = 2):
        self.dut.rst.value = 1
        await ClockCycles(self.dut.clk, cycles)
        self.dut.rst.value = 0
        await RisingEdge(self.dut.clk)

    async def wait_until(self, condition, timeout_cycles: int, what: str):
        """Wait (checking after each edge) until ``condition()`` holds, or fail."""
        for _ in range(timeout_cycles):
            await ReadOnly()
            if condition():
                return
            await RisingEdge(self.dut.clk)
        raise AssertionError(f"timeout after {timeout_cycles} cycles waiting for {what}")
