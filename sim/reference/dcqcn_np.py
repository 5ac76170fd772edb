"""Reference of the DCQCN notification point's CNP pacing, written straight from the two rules
(the DCQCN paper, Zhu et al., SIGCOMM 2015: CNP generation) with absolute timestamps (ideal
timers), not
countdowns, and sharing no code with the golden model (:mod:`sim.models.dcqcn_np`).

Pipeline convention shared with the RTL: a CNP decided in cycle t leaves in cycle t + 1 (or
later, behind lower-numbered flows: one CNP per cycle); the sink is always ready here.
"""

from __future__ import annotations

from hw.nic.dcqcn_np_config import DcqcnNpConfig

__all__ = ["reference_cnp_times"]


def reference_cnp_times(cfg: DcqcnNpConfig, marks: list[tuple[int, int]], horizon: int):
    """CNP send cycles straight from the rules, with absolute timestamps, always-ready sink,
    one CNP per cycle, lowest flow first.  ``marks``: (cycle, flow) of CE-marked packets."""
    n = cfg.n_cycles
    by_cycle: dict[int, list[int]] = {}
    for c, f in marks:
        by_cycle.setdefault(c, []).append(f)
    last_sent = {}                 # flow -> cycle of its last CNP
    want = set()                   # flows with a CNP due
    marked_since = set()           # paper: marked inside the window; periodic: in the interval
    sent = []
    for now in range(horizon):
        # the CNP offered now was decided in earlier cycles
        if want:
            f = min(want)
            want.discard(f)
            sent.append((now, f))
            last_sent[f] = now
            marked_since.discard(f) if cfg.rule == "paper" else None
        # a flow wanted in cycle t is sent in t + 1 (or later, behind lower flows)
        if cfg.rule == "paper":
            for f in list(marked_since):
                if now + 1 == last_sent[f] + n:
                    want.add(f)
                    marked_since.discard(f)
        elif (now + 1) % n == 0:                # CNPs leave at multiples of N
            want |= marked_since
            marked_since = set()
        for f in by_cycle.get(now, []):
            if cfg.rule == "paper":
                if f in want:
                    continue
                if f in last_sent and now + 1 < last_sent[f] + n:   # too early to send
                    marked_since.add(f)
                else:
                    want.add(f)
            else:
                marked_since.add(f)
    return sent
