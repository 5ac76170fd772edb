"""Exhaustive check behind one equivalent mutant of ``tools/mutate.py``: TIMELY's HAI increase
``delta x hai_mult`` with its second compressor call one bit narrower (``red(v.dn, RW + 7)``
instead of ``RW + 8`` in ``hw/nic/timely_engine.py``, RW = 27).

The RTL forms the product's 8 rows (``delta << j`` where bit j of ``hai_mult`` is set), two
levels of 3:2 compressors at 35 bits, up to three more at W bits, and sums the two rows left
mod 2**35.  At W = 34 a carry into bit 34 is dropped where W = 35 keeps it.  The increase is
only added to the rate (< 2**27) and clamped to ``max_rate`` (< 2**27), so a dropped 2**34
changes the result only if the product lies in ``[2**34, 2**34 + 2**27)``: below 2**34 no row
holds bit 34 (the rows are non-negative and sum to the product), above the window both sums
exceed every ``max_rate``.  This script runs the rows bit for bit over every ``(delta,
hai_mult)`` of that window (about 92 million pairs, numpy, under a minute) and prints how many
differ; 0 makes the mutant equivalent.  (Outside the window it does differ: for example delta
= 3 x 2**25, hai_mult = 192 loses 2**34 of 9 x 2**31, and the clamp hides it.)

Run: ``python -m tools.timely_hai_rows``.
"""

from __future__ import annotations

import numpy as np

LEVEL_ONE = 2                   # stage 1: red(mul_rows(...), RW + 8, 2)
LEVEL_TWO = 3                   # stage 2: red(v.dn, W), Stages.reduce's default
M35 = np.uint64((1 << 35) - 1)


def _compress(rows: list, levels: int, mask) -> list:
    """hw.lib.csa.compress: triples in order, sum then carry, the rest passed on."""
    rows = [r & mask for r in rows]
    for _ in range(levels):
        if len(rows) <= 2:
            break
        full = len(rows) // 3 * 3
        nxt = []
        for j in range(0, full, 3):
            a, b, c = rows[j:j + 3]
            nxt += [(a ^ b ^ c) & mask, (((a & b) | (a & c) | (b & c)) << np.uint64(1)) & mask]
        rows = nxt + rows[full:]
    return rows


def increase(delta, hai: int, width: int):
    rows = [(delta << np.uint64(j)) & M35 if hai >> j & 1 else np.zeros_like(delta)
            for j in range(8)]
    rows = _compress(rows, LEVEL_ONE, M35)
    rows = _compress(rows, LEVEL_TWO, np.uint64((1 << width) - 1))
    return sum(rows[1:], rows[0]) & M35


def main() -> int:
    lo_w, hi_w = 1 << 34, (1 << 34) + (1 << 27)
    checked = differ = 0
    for hai in range(1, 256):
        d0 = -(-lo_w // hai)
        d1 = min(1 << 27, -(-hi_w // hai))
        if d0 >= d1:
            continue
        delta = np.arange(d0, d1, dtype=np.uint64)
        exact = increase(delta, hai, 35)
        assert (exact == delta * np.uint64(hai)).all()
        differ += int((increase(delta, hai, 34) != exact).sum())
        checked += len(delta)
    # the example outside the window, as a check that the narrow form is emulated
    d = np.array([3 << 25], dtype=np.uint64)
    assert int(increase(d, 192, 35)[0]) - int(increase(d, 192, 34)[0]) == 1 << 34
    print(f"{checked} pairs with the product in [2**34, 2**34 + 2**27): {differ} differ")
    return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main())
