"""Configuration of the generic bucketed hash table (:mod:`hw.switch.hash_table`) used by L3QCN.

One frozen, validated :class:`HashTableConfig` gives the RTL (:class:`HashTable`), the golden
model (:class:`sim.models.hash_table.HashTableModel`) and the tests.  Two presets give the two
tables of L3QCN (``docs/l3qcn.md``):

- :meth:`HashTableConfig.cnp_qp`: (destination IPv4, destination QP) -> source QP, at the
  congestion point, for switch-built RoCEv2 CNPs;
- :meth:`HashTableConfig.flow_id`: IPv4 5-tuple -> (source MAC, CN-TAG flow ID, VLAN ID), at the
  ingress ToR, for turning private CNMs into standard CNMs.

Organisation: 2-left hashing.  The ``buckets`` buckets of ``ways`` entries are split into two
halves (sides 0 and 1) of ``buckets / 2``; a key may live in bucket ``h0(key)`` of side 0 or
``h1(key)`` of side 1.  Each hash is a CRC of the key: index = key(x) mod P(x) over GF(2),
with P a primitive polynomial of degree ``index_width`` (one per side, chosen by ``hash_seed``);
each index bit is the parity of the key ANDed with a fixed mask (an XOR tree).  Being a CRC,
it maps any ``index_width`` consecutive key bits one to one, so keys that differ in one field
(consecutive QPs, addresses or ports) spread evenly over the buckets, where a random linear
(H3) hash loses a rank, and a bucket's share, about half the time.  A new key goes to the
candidate bucket with more free ways (side 0 on a tie), in its lowest free way; it is refused
(FULL) only when both candidates are full.  With 4 ways this first happens at ~69 % of the
capacity for random keys (~25 % with a single hash; ``docs/l3qcn.md``).  One block RAM per
(side, way), ``buckets / 2`` deep, ``1 + key_width + value_width`` bits wide (valid, full key,
value): a key is found by comparing the full stored keys of its ``2 ways`` candidate entries,
so a lookup never returns another key's value.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from ..params import BlockConfig, ConfigError, check_int

__all__ = ["HashTableConfig", "primitive_polynomials"]


@lru_cache(maxsize=32)
def primitive_polynomials(degree: int) -> tuple[int, ...]:
    """Primitive polynomials over GF(2) of ``degree`` (bit i = coefficient of x^i), ascending:
    those in which x has order 2**degree - 1."""
    order = (1 << degree) - 1
    factors, n, f = set(), order, 2
    while f * f <= n:
        while n % f == 0:
            factors.add(f)
            n //= f
        f += 1
    if n > 1:
        factors.add(n)

    def x_pow(e: int, poly: int) -> int:           # x**e mod poly
        result, base = 1, 2 if degree > 1 else 1
        while e:
            if e & 1:
                result = _mulmod(result, base, poly, degree)
            base = _mulmod(base, base, poly, degree)
            e >>= 1
        return result

    return tuple(p for p in range((1 << degree) | 1, 1 << (degree + 1), 2)
                 if x_pow(order, p) == 1 and all(x_pow(order // q, p) != 1 for q in factors))


def _mulmod(a: int, b: int, poly: int, degree: int) -> int:
    r = 0
    while b:
        if b & 1:
            r ^= a
        b >>= 1
        a <<= 1
        if (a >> degree) & 1:
            a ^= poly
    return r


@lru_cache(maxsize=64)
def _crc_masks(seed: int, key_width: int, index_width: int) -> tuple[tuple[int, ...], ...]:
    """Per side, per index bit: the key bits whose parity it is (column j = x^j mod P)."""
    polys = primitive_polynomials(index_width)
    sides = []
    for side in (0, 1):
        poly = polys[(seed + side) % len(polys)]
        masks, col = [0] * index_width, 1
        for j in range(key_width):
            for i in range(index_width):
                masks[i] |= ((col >> i) & 1) << j
            col <<= 1
            if (col >> index_width) & 1:
                col ^= poly
        sides.append(tuple(masks))
    return tuple(sides)


@dataclass(frozen=True)
class HashTableConfig(BlockConfig):
    """2-left bucketed hash table configuration.

    ``key_width``, ``value_width``: bits of a key and of its value.
    ``tag_width``: bits of an opaque tag carried from a command to its result (>= 1).
    ``buckets``: number of buckets, both sides together, a power of two (4..65536).
    ``ways``: entries per bucket (1..16); capacity ``buckets * ways``.
    ``hash_seed``: picks the two hashes' polynomials (side s: the primitive polynomials of
    degree ``index_width``, ascending, at index ``(hash_seed + s) mod count``).
    ``counter_width``: bits of the saturating statistics counters."""

    key_width: int = 56
    value_width: int = 24
    tag_width: int = 1
    buckets: int = 256
    ways: int = 4
    hash_seed: int = 0
    counter_width: int = 32

    def __post_init__(self):
        check_int(self, "key_width", self.key_width, 1, 512)
        check_int(self, "value_width", self.value_width, 1, 512)
        check_int(self, "tag_width", self.tag_width, 1, 512)
        if (isinstance(self.buckets, bool) or not isinstance(self.buckets, int)
                or not 4 <= self.buckets <= 1 << 16 or self.buckets & (self.buckets - 1)):
            raise ConfigError(self, "buckets", self.buckets, "a power of two 4..65536")
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


    @property
    def capacity(self) -> int:
        return self.buckets * self.ways

    @property
    def side_buckets(self) -> int:
        """Buckets per side (the depth of each block RAM)."""
        return self.buckets // 2

    @property
    def index_width(self) -> int:
        return (self.side_buckets - 1).bit_length()

    @property
    def entry_width(self) -> int:
        return 1 + self.key_width + self.value_width

    def hash_masks(self, side: int) -> tuple[int, ...]:
        """Masks of ``side``'s hash, one per index bit: bit i of the index is
        ``parity(key & masks[i])``."""
        return _crc_masks(self.hash_seed, self.key_width, self.index_width)[side]

    def buckets_of(self, key: int) -> tuple[int, int]:
        """The key's candidate bucket on side 0 and on side 1."""
        return tuple(sum(((key & m).bit_count() & 1) << i
                         for i, m in enumerate(self.hash_masks(side))) for side in (0, 1))

