"""The small dumbbell scenario that the CLI and sweep tests share: four senders on one 10 Gb/s
bottleneck, two long flows and a 10 KB incast at 20 us.  Each test picks its length and
algorithms; the network is the same everywhere, so a change to it shows in all of them."""

from __future__ import annotations

import json
import textwrap


def dumbbell_toml(*, name: str = "tiny", description: str = "two long flows and a small incast",
                  duration_us: int = 50, sample_us: int = 5,
                  algorithms=("dcqcn", "ldcp")) -> str:
    """The scenario file's text (TOML)."""
    return textwrap.dedent(f"""\
        name = "{name}"
        description = "{description}"
        duration_us = {duration_us}
        sample_us = {sample_us}
        algorithms = {json.dumps(list(algorithms))}

        [topology]
        kind = "dumbbell"
        senders = 4
        rate_gbps = 10
        delay_us = 1

        [[workload]]
        name = "long"
        kind = "long"
        src = "senders[0:2]"

        [[workload]]
        name = "burst"
        kind = "incast"
        src = "senders[2:4]"
        size_kb = 10
        at_us = 20
        """)
