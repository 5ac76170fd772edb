"""Bit-exact golden model of the generic bucketed hash table (:mod:`hw.switch.hash_table`).

``HashTableModel(cfg).command(op, key, value, tag) -> HtResult``, one command at a time, in
the order the RTL accepts them (the RTL pipelines them, one per clock, with the same outcome).
Rules (``docs/l3qcn.md``, "Tables"):

- the key's candidate buckets are ``cfg.buckets_of(key)``: one per side (2-left, H3 hashes); a
  key is present when one valid way of a candidate holds exactly that key (full-key compare: a
  miss never returns another key's value);
- ADD: present -> DUPLICATE; else OK, into the candidate with more free ways (side 0 on a
  tie), lowest free way; both candidates full -> FULL;
- LEARN: present -> value overwritten, REFRESHED; else as ADD;
- REMOVE: present -> way invalidated, OK; else NOT_FOUND;
- LOOKUP: present -> OK, else NOT_FOUND;
- the result echoes op, key and tag; its value is the entry's value before the command when the
  key was present, else 0;
- counters (saturating at ``2**counter_width - 1``): ``lookups``, ``misses`` (lookups not
  found), ``full`` (ADD/LEARN rejected for a full bucket); ``occupancy`` = valid entries.
"""

from __future__ import annotations

from dataclasses import dataclass

from hw.layouts import HtOp, HtStatus, LayoutCodec, ht_command_layout, ht_result_layout
from hw.switch.hash_table_config import HashTableConfig

__all__ = ["HtResult", "HashTableModel", "HtCodec"]


@dataclass(frozen=True)
class HtResult:
    op: HtOp
    status: HtStatus
    key: int
    value: int = 0
    tag: int = 0


class HtCodec:
    """Commands and results packed through the shared layouts."""

    def __init__(self, cfg: HashTableConfig):
        self.cmd = LayoutCodec(ht_command_layout(cfg))
        self.res = LayoutCodec(ht_result_layout(cfg))

    def pack_command(self, op: HtOp, key: int, value: int = 0, tag: int = 0) -> int:
        return self.cmd.pack({"op": op, "key": key, "value": value, "tag": tag})

    def unpack_result(self, bits: int) -> HtResult:
        return HtResult(**self.res.unpack(bits))


class HashTableModel:
    def __init__(self, cfg: HashTableConfig):
        self.cfg = cfg
        #: sides[s][b][w] = (key, value) or None
        self.sides = [[[None] * cfg.ways for _ in range(cfg.side_buckets)] for _ in (0, 1)]
        self.occupancy = 0
        self.lookups = self.misses = self.full = 0
        self._cmax = (1 << cfg.counter_width) - 1

    def _count(self, name: str) -> None:
        setattr(self, name, min(getattr(self, name) + 1, self._cmax))

    def candidates(self, key: int) -> list[list]:
        return [self.sides[s][b] for s, b in enumerate(self.cfg.buckets_of(key))]

    def find(self, key: int) -> tuple[list, int | None]:
        """The candidate bucket holding ``key`` and its way; else the bucket a new key would go
        to (more free ways, side 0 on a tie) and None."""
        cands = self.candidates(key)
        for bucket in cands:
            for w, entry in enumerate(bucket):
                if entry is not None and entry[0] == key:
                    return bucket, w
        left, right = cands
        return (left if left.count(None) >= right.count(None) else right), None

    def command(self, op: HtOp, key: int, value: int = 0, tag: int = 0) -> HtResult:
        bucket, way = self.find(key)
        old = bucket[way][1] if way is not None else 0
        if op == HtOp.LOOKUP:
            self._count("lookups")
            if way is None:
                self._count("misses")
            status = HtStatus.OK if way is not None else HtStatus.NOT_FOUND
        elif op == HtOp.REMOVE:
            status = HtStatus.NOT_FOUND
            if way is not None:
                bucket[way] = None
                self.occupancy -= 1
                status = HtStatus.OK
        elif way is not None:
            if op == HtOp.ADD:
                status = HtStatus.DUPLICATE
            else:
                bucket[way] = (key, value)
                status = HtStatus.REFRESHED
        elif None in bucket:
            bucket[bucket.index(None)] = (key, value)
            self.occupancy += 1
            status = HtStatus.OK
        else:
            self._count("full")
            status = HtStatus.FULL
        return HtResult(HtOp(op), status, key, old, tag)

    # -- convenience ---------------------------------------------------------------------------
    def lookup(self, key: int) -> int | None:
        r = self.command(HtOp.LOOKUP, key)
        return r.value if r.status == HtStatus.OK else None
