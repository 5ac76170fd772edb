"""The event engine: integer picoseconds, deterministic order of simultaneous events."""

import pytest

from sim.net.engine import Simulator, serialization_ps


def test_simultaneous_events_run_in_scheduling_order():
    sim, seen = Simulator(), []
    for name in "abc":
        sim.at(100, seen.append, name)
    sim.at(50, seen.append, "first")
    sim.run(100)
    assert seen == ["first", "a", "b", "c"] and sim.now == 100


def test_events_after_the_horizon_wait_and_past_events_are_refused():
    sim, seen = Simulator(), []
    sim.at(10, seen.append, 1)
    sim.at(11, seen.append, 2)
    sim.run(10)
    assert seen == [1]
    with pytest.raises(ValueError, match="in the past"):
        sim.at(5, seen.append, 3)
    sim.run(20)
    assert seen == [1, 2]


def test_serialization_is_exact_integer_picoseconds():
    assert serialization_ps(1500, 10_000_000_000) == 1_200_000      # 1.2 us
    assert serialization_ps(1, 100_000_000_000) == 80                # 80 ps per byte at 100G
    assert serialization_ps(1, 3) == 2_666_666_666_667               # rounded up
