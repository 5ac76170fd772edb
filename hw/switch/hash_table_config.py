"""Configuration of the generic bucketed hash table (:mod:`hw.switch.hash_table`) used by L3QCN.

One frozen, validated :class:`HashTableConfig` gives the RTL (:class:`HashTable`), the golden
model (:class:`sim.models.hash_table.HashTableModel`) and the tests.  Two presets give the two
tables of L3QCN (``docs/l3qcn.md``):

- :meth:`HashTableConfig.cnp_qp`: (destination IPv4, destination QP) -> source QP, at the
  congestion point, for switch-built RoCEv2 CNPs;
- :meth:`HashTableConfig.flow_id`: IPv4 5-tuple -> (source MAC, CN-TAG flow ID, VLAN ID), at the
  ingress ToR, for turning private CNMs into standard CNMs.

Organisation: ``buckets`` buckets of ``ways`` entries; one block RAM per way, ``buckets`` deep,
``1 + key_width + value_width`` bits wide (valid, full key, value).  A key lives in bucket
``h(key)`` where ``h`` is an H3 hash (each index bit the parity of the key ANDed with a fixed
mask, the masks drawn once from ``hash_seed``): a key is found by comparing the full stored keys
of its bucket's ``ways`` entries, so a lookup never returns another key's value.
"""

from __future__ import annotations

import dataclasses
import json
import random
from dataclasses import dataclass
from functools import lru_cache

from ..params import ConfigError, check_int

__all__ = ["HashTableConfig"]


@lru_cache(maxsize=64)
def _h3_masks(seed: int, key_width: int, index_width: int) -> tuple[int, ...]:
    rng = random.Random(seed)
    return tuple(rng.getrandbits(key_width) for _ in range(index_width))


@dataclass(frozen=True)
class HashTableConfig:
    """``key_width``, ``value_width``: bits of a key and of its value.
    ``tag_width``: bits of an opaque tag carried from a command to its result (>= 1).
    ``buckets``: number of buckets, a power of two (2..65536).
    ``ways``: entries per bucket (1..16); capacity ``buckets * ways``.
    ``hash_seed``: seed of the H3 masks (the same seed gives the same hash in RTL and model).
    ``counter_width``: bits of the saturating statistics counters."""

    key_width: int = 56
    value_width: int = 24
    tag_width: int = 1
    buckets: int = 256
    ways: int = 4
    hash_seed: int = 0x13C9
    counter_width: int = 32

    def __post_init__(self):
        check_int(self, "key_width", self.key_width, 1, 512)
        check_int(self, "value_width", self.value_width, 1, 512)
        check_int(self, "tag_width", self.tag_width, 1, 512)
        check_int(self, "buckets", self.buckets, 2, 1 << 16)
        if self.buckets & (self.buckets - 1):
            raise ConfigError(self, "buckets", self.buckets, "a power of two 2..65536")
        check_int(self, "ways", self.ways, 1, 16)
        check_int(self, "hash_seed", self.hash_seed, 0, (1 << 64) - 1)
        check_int(self, "counter_width", self.counter_width, 8, 64)

    @classmethod
    def cnp_qp(cls, buckets: int = 256, ways: int = 4, tag_width: int = 1) -> HashTableConfig:
        """(destination IPv4 32 + destination QP 24) -> source QP 24."""
        return cls(key_width=56, value_width=24, tag_width=tag_width, buckets=buckets,
                   ways=ways)

    @classmethod
    def flow_id(cls, buckets: int = 256, ways: int = 4, tag_width: int = 1) -> HashTableConfig:
        """IPv4 5-tuple 104 -> (source MAC 48, CN-TAG flow ID 16, VLAN ID 12) 76."""
        return cls(key_width=104, value_width=76, tag_width=tag_width, buckets=buckets,
                   ways=ways)

    def replace(self, **changes) -> HashTableConfig:
        return dataclasses.replace(self, **changes)

    @property
    def capacity(self) -> int:
        return self.buckets * self.ways

    @property
    def index_width(self) -> int:
        return (self.buckets - 1).bit_length()

    @property
    def entry_width(self) -> int:
        return 1 + self.key_width + self.value_width

    def hash_masks(self) -> tuple[int, ...]:
        """H3 masks, one per index bit: bit i of the index is ``parity(key & masks[i])``."""
        return _h3_masks(self.hash_seed, self.key_width, self.index_width)

    def bucket_of(self, key: int) -> int:
        return sum(((key & m).bit_count() & 1) << i for i, m in enumerate(self.hash_masks()))

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> HashTableConfig:
        return cls(**json.loads(text))
