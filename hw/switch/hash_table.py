"""Generic bucketed hash table in block RAM, one command per clock (the two L3QCN tables).

See ``docs/l3qcn.md`` ("Tables"), :mod:`hw.switch.hash_table_config` for the organisation and
:mod:`sim.models.hash_table` for the bit-exact model.
"""

from __future__ import annotations

from functools import reduce

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import memory, stream, wiring
from amaranth.lib.wiring import In, Out

from ..layouts import HtOp, HtStatus, ht_command_layout, ht_entry_layout, ht_result_layout
from ..lib.arith import popcount, saturating_inc
from .hash_table_config import HashTableConfig

__all__ = ["HashTable", "h3_hash"]


def h3_hash(cfg: HashTableConfig, key, side: int):
    """The candidate bucket of ``key`` on ``side``: bit i is the parity of ``key & masks[i]``
    (XOR trees)."""
    bits = []
    for mask in cfg.hash_masks(side):
        taps = [key[j] for j in range(cfg.key_width) if (mask >> j) & 1]
        bits.append(reduce(lambda a, b: a ^ b, taps) if taps else Const(0, 1))
    return Cat(*bits)


class HashTable(wiring.Component):
    """2-left bucketed hash table: ``buckets`` x ``ways`` entries in two sides, full keys stored
    and compared.

    Parameters
    ----------
    config : HashTableConfig
        Key, value and tag widths, buckets, ways, hash seed, counter width.

    Ports
    -----
    cmd : In(stream(ht_command_layout))
        LOOKUP / ADD / REMOVE / LEARN of ``key`` (``value`` for ADD and LEARN), with an opaque
        ``tag`` returned in the result.
    result : Out(stream(ht_result_layout))
        One result per command, in order: op, status, key and tag echoed; the entry's value
        before the command if the key was present, else 0.
    occupancy : Out(range(capacity + 1))
        Valid entries.
    lookups, misses, full : Out(counter_width)
        Saturating counters: lookups, lookups not found, ADD/LEARN refused (both candidate
        buckets full).

    Organisation
    ------------
    One memory per (side, way), ``buckets / 2`` deep, ``1 + key + value`` bits (valid, key,
    value).  Stage 0 (the accepting edge) presents the key's two candidate indexes
    ``h0(key)``, ``h1(key)`` to the synchronous read ports of side 0 and side 1; stage 1
    compares the ``2 ways`` stored keys with the command's key, or for a new key picks the
    candidate with more free ways (side 0 on a tie) and its lowest free way, writes, and
    registers the result.  Each read port is transparent to its memory's write port, so a
    command right behind one that writes the same bucket sees the write (no hazard, no bubble).

    After reset, ``cmd.ready`` stays low for ``buckets / 2`` cycles while every bucket is
    cleared (block RAM contents are not reset by ``rst``).

    Latency and throughput
    ----------------------
    One command per clock; its result is valid 2 edges after the command is accepted (read, then
    compare-and-write).  ``result`` back-pressure stalls the pipeline (``cmd.ready`` low).
    """

    def __init__(self, config: HashTableConfig):
        if not isinstance(config, HashTableConfig):
            raise TypeError(f"HashTable needs a HashTableConfig, not {config!r}")
        self.config = config
        cw = config.counter_width
        super().__init__({
            "cmd": In(stream.Signature(ht_command_layout(config))),
            "result": Out(stream.Signature(ht_result_layout(config))),
            "occupancy": Out(range(config.capacity + 1)),
            "lookups": Out(cw),
            "misses": Out(cw),
            "full": Out(cw),
        })

    def elaborate(self, platform):
        m = Module()
        cfg = self.config
        W = cfg.ways
        entry = ht_entry_layout(cfg)

        # ---- submodules: one block RAM per (side, way) ---------------------------------------
        rports, wports = [], []              # [side][way]
        for side in (0, 1):
            rps, wps = [], []
            for w in range(W):
                mem = memory.Memory(shape=entry, depth=cfg.side_buckets, init=[])
                m.submodules[f"side{side}_way{w}"] = mem
                wp = mem.write_port()
                rps.append(mem.read_port(transparent_for=(wp,)))
                wps.append(wp)
            rports.append(rps)
            wports.append(wps)

        # ---- state -------------------------------------------------------------------------
        clearing = Signal(init=1)                      # clearing all buckets after reset
        clear_idx = Signal(cfg.index_width)
        s1_valid = Signal()
        s1 = Signal(ht_command_layout(cfg))
        s1_index = [Signal(cfg.index_width, name=f"s1_index{side}") for side in (0, 1)]
        out = self.result

        # ---- handshake conditions ----------------------------------------------------------
        advance = ~out.valid | out.ready               # stage 1 may hand its result on
        m.d.comb += self.cmd.ready.eq(advance & ~clearing)
        accept = self.cmd.valid & self.cmd.ready
        index = [h3_hash(cfg, self.cmd.payload.key, side) for side in (0, 1)]
        for side in (0, 1):
            for rp in rports[side]:
                m.d.comb += [rp.addr.eq(index[side]), rp.en.eq(advance)]

        # ---- stage 1: compare the candidates' keys, pick a side and a way -------------------
        ways = [[rp.data for rp in rports[side]] for side in (0, 1)]
        hits = [Cat(*[e.valid & (e.key == s1.key) for e in ways[side]]) for side in (0, 1)]
        free = [Cat(*[~e.valid for e in ways[side]]) for side in (0, 1)]
        present = hits[0].any() | hits[1].any()
        old_value = Signal(cfg.value_width)
        for side in reversed((0, 1)):
            for w in reversed(range(W)):
                with m.If(hits[side][w]):
                    m.d.comb += old_value.eq(ways[side][w].value)
        new_side = popcount(free[1]) > popcount(free[0])    # side 0 on a tie
        first_free = Mux(new_side, free[1] & (~free[1] + 1), free[0] & (~free[0] + 1))
        room = free[0].any() | free[1].any()

        status = Signal(HtStatus)
        write = [Signal(W, name=f"write{side}") for side in (0, 1)]   # one-hot way to write
        write_valid = Signal()
        insert = [Mux(new_side == side, first_free, 0) for side in (0, 1)]
        with m.Switch(s1.op):
            with m.Case(HtOp.LOOKUP):
                m.d.comb += status.eq(Mux(present, HtStatus.OK, HtStatus.NOT_FOUND))
            with m.Case(HtOp.REMOVE):
                m.d.comb += [status.eq(Mux(present, HtStatus.OK, HtStatus.NOT_FOUND)),
                             write[0].eq(hits[0]), write[1].eq(hits[1]), write_valid.eq(0)]
            with m.Case(HtOp.ADD, HtOp.LEARN):
                with m.If(present):
                    with m.If(s1.op == HtOp.ADD):
                        m.d.comb += status.eq(HtStatus.DUPLICATE)
                    with m.Else():
                        m.d.comb += [status.eq(HtStatus.REFRESHED), write[0].eq(hits[0]),
                                     write[1].eq(hits[1]), write_valid.eq(1)]
                with m.Elif(room):
                    m.d.comb += [status.eq(HtStatus.OK), write[0].eq(insert[0]),
                                 write[1].eq(insert[1]), write_valid.eq(1)]
                with m.Else():
                    m.d.comb += status.eq(HtStatus.FULL)

        complete = s1_valid & advance                  # stage 1's command finishes this edge
        cleared = entry.const({"valid": 0, "key": 0, "value": 0}).as_value()
        for side in (0, 1):
            for w, wp in enumerate(wports[side]):
                m.d.comb += [
                    wp.addr.eq(Mux(clearing, clear_idx, s1_index[side])),
                    wp.data.eq(Mux(clearing, cleared, Cat(write_valid, s1.key, s1.value))),
                    wp.en.eq(clearing | (complete & write[side][w])),
                ]

        # ---- synchronous updates ---------------------------------------------------------------
        with m.If(clearing):
            m.d.sync += clear_idx.eq(clear_idx + 1)
            with m.If(clear_idx == cfg.side_buckets - 1):
                m.d.sync += clearing.eq(0)
        with m.If(out.ready):
            m.d.sync += out.valid.eq(0)
        with m.If(advance):
            m.d.sync += [s1_valid.eq(accept), s1.eq(self.cmd.payload),
                         s1_index[0].eq(index[0]), s1_index[1].eq(index[1])]
        with m.If(complete):
            m.d.sync += [
                out.valid.eq(1),
                out.payload.op.eq(s1.op),
                out.payload.status.eq(status),
                out.payload.key.eq(s1.key),
                out.payload.value.eq(Mux(present, old_value, 0)),
                out.payload.tag.eq(s1.tag),
            ]
            adding = write_valid & ~present
            removing = (s1.op == HtOp.REMOVE) & present
            with m.If(adding):
                m.d.sync += self.occupancy.eq(self.occupancy + 1)
            with m.If(removing):
                m.d.sync += self.occupancy.eq(self.occupancy - 1)
            with m.If(s1.op == HtOp.LOOKUP):
                m.d.sync += self.lookups.eq(saturating_inc(self.lookups))
                with m.If(~present):
                    m.d.sync += self.misses.eq(saturating_inc(self.misses))
            with m.If(status == HtStatus.FULL):
                m.d.sync += self.full.eq(saturating_inc(self.full))
        return m
