"""Float reference of the WRED/ECN marking probability (LDCP draft §2.1, HPCC ns-3 switch).

Written straight from the equations, in floating point, with no code shared with the bit-exact
model: it is the yardstick the model's integer decision rule is measured against.
"""

from __future__ import annotations


def marking_probability(q: float, k_min: float, k_max: float, p_max: float,
                        compare: str = "ge", profile: str = "ldcp") -> float:
    """Probability that an ECN-capable packet arriving at queue ``q`` is CE-marked.

    LDCP draft (``compare="ge"``)::

        q <  K_min            p = 0
        K_min <= q < K_max    p = (q - K_min) / (K_max - K_min) * P_max
        q >= K_max            p = 1

    HPCC ns-3 switch (``compare="gt"``): ``q > K_max`` gives 1, ``q > K_min`` the ramp, else 0.
    DCTCP is a step at ``K = K_max``.
    """
    if compare == "ge":
        above_max, above_min = q >= k_max, q >= k_min
    else:
        above_max, above_min = q > k_max, q > k_min
    if profile == "dctcp":
        return 1.0 if above_max else 0.0
    if above_max:
        return 1.0
    if above_min:
        return (q - k_min) / (k_max - k_min) * p_max
    return 0.0


def not_ect_dropped(q: float, k: float, compare: str = "ge", profile: str = "ldcp") -> bool:
    """LDCP eq. (3): an ECN-incapable packet is dropped when ``q >= K`` (only in the LDCP
    profile; the strict convention uses ``q > K``)."""
    if profile != "ldcp":
        return False
    return q >= k if compare == "ge" else q > k
