"""The scenarios of the RTL-in-the-loop tests (``tests/test_rtl_in_loop*.py``), written once.

Every one is the same shape: a dumbbell of 40 Gb/s links with 1 us of delay into one receiver,
sampled every 2 us, with a few long flows (staggered) and then an incast from the other
senders (:func:`dumbbell`).  :data:`DCQCN` is the DCQCN scenario of ``test_rtl_in_loop.py``,
which the marker test reuses with a queue limit; :func:`load` turns a scenario dict, with
top-level keys replaced, into a :class:`sim.scenario.config.Scenario`.
"""

from __future__ import annotations

from sim.scenario import config

__all__ = ["dumbbell", "load", "DCQCN"]


def dumbbell(name: str, algorithm: str, params: dict, *, senders: int, n_long: int,
             stagger_us: int, incast_kb: int, incast_at_us: int, duration_us: int,
             seed: int = 3, **extra) -> dict:
    """A scenario dict: ``senders`` hosts into one receiver; senders ``0 ... n_long - 1`` send
    long flows ``stagger_us`` apart, the rest an incast of ``incast_kb`` KB each at
    ``incast_at_us``; ``params`` the algorithm's knobs; ``extra``: more top-level keys (a
    ``switch`` section, for instance)."""
    return {
        "name": name, "seed": seed, "duration_us": duration_us, "sample_us": 2,
        "algorithms": [algorithm],
        "topology": {"kind": "dumbbell", "senders": senders, "receivers": 1, "rate_gbps": 40,
                     "delay_us": 1},
        **extra,
        "algo": {algorithm: params},
        "workload": [{"name": "long", "kind": "long", "src": f"senders[0:{n_long}]",
                      "dst": "receivers", "stagger_us": stagger_us},
                     {"name": "incast", "kind": "incast", "src": f"senders[{n_long}:{senders}]",
                      "dst": "receivers", "size_kb": incast_kb, "at_us": incast_at_us}],
    }


def load(raw: dict, default_name: str, **over):
    """The scenario of ``raw`` with the top-level keys ``over`` replaced (``default_name``: as
    :func:`sim.scenario.config.from_dict`'s)."""
    return config.from_dict({**raw, **over}, "<test>", default_name=default_name)


#: 3 long flows (20 us apart) and at 100 us a 3 x 100 KB incast into one 40 Gb/s port: the
#: queue crosses the RED ramp (marking), CNPs cut the rates; short timers (T = K = 4 us at the
#: 250 MHz engine clock, B = 10 KB) so that in 300 us the rate-increase and alpha timers expire
#: hundreds of times and the byte counter too
DCQCN = dumbbell("rtl_diff", "dcqcn",
                 {"profile": "paper", "kmin_bytes": 5000, "kmax_bytes": 60000, "pmax": 0.2,
                  "cnp_interval_ns": 4000, "rpg_time_reset": 4, "dce_tcp_rtt": 4,
                  "rpg_byte_reset": 10000},
                 senders=6, n_long=3, stagger_us=20, incast_kb=100, incast_at_us=100,
                 duration_us=300)
