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
from .hash_table_config import HashTableConfig

__all__ = ["HashTable", "h3_hash", "saturating_inc"]


def h3_hash(cfg: HashTableConfig, key):
    """The bucket index of ``key``: bit i is the parity of ``key & masks[i]`` (XOR trees)."""
    bits = []
    for mask in cfg.hash_masks():
        taps = [key[j] for j in range(cfg.key_width) if (mask >> j) & 1]
        bits.append(reduce(lambda a, b: a ^ b, taps) if taps else Const(0, 1))
    return Cat(*bits)


def saturating_inc(counter: Signal):
    """``counter + 1``, holding at all ones."""
    return counter + (counter != (1 << len(counter)) - 1)


class HashTable(wiring.Component):
    """Bucketed hash table: ``buckets`` x ``ways`` entries, full keys stored and compared.

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
        Saturating counters: lookups, lookups not found, ADD/LEARN rejected for a full bucket.

    Organisation
    ------------
    One memory per way (``buckets`` deep, ``1 + key + value`` bits: valid, key, value), read by
    the bucket index ``h3(key)``.  Stage 0 (the accepting edge) presents the index to all ways'
    synchronous read ports; stage 1 compares the ``ways`` stored keys with the command's key,
    picks the matching way or the lowest free one, writes that way and registers the result.
    Each read port is transparent to its way's write port, so a command right behind one that
    writes the same bucket sees the write (no hazard, no bubble).

    After reset, ``cmd.ready`` stays low for ``buckets`` cycles while every bucket is cleared
    (block RAM contents are not reset by ``rst``).

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
        entry = ht_entry_layout(cfg)

        # ---- submodules: one block RAM per way ---------------------------------------------
        rports, wports = [], []
        for w in range(cfg.ways):
            mem = memory.Memory(shape=entry, depth=cfg.buckets, init=[])
            m.submodules[f"way{w}"] = mem
            wp = mem.write_port()
            rports.append(mem.read_port(transparent_for=(wp,)))
            wports.append(wp)

        # ---- state -------------------------------------------------------------------------
        clearing = Signal(init=1)                      # clearing all buckets after reset
        clear_idx = Signal(cfg.index_width)
        s1_valid = Signal()
        s1 = Signal(ht_command_layout(cfg))
        s1_index = Signal(cfg.index_width)
        out = self.result

        # ---- handshake conditions ----------------------------------------------------------
        advance = ~out.valid | out.ready               # stage 1 may hand its result on
        m.d.comb += self.cmd.ready.eq(advance & ~clearing)
        accept = self.cmd.valid & self.cmd.ready
        index = h3_hash(cfg, self.cmd.payload.key)
        for rp in rports:
            m.d.comb += [rp.addr.eq(index), rp.en.eq(advance)]

        # ---- stage 1: compare the bucket's keys, pick a way ----------------------------------
        ways = [rp.data for rp in rports]
        hits = Cat(*[e.valid & (e.key == s1.key) for e in ways])
        free = Cat(*[~e.valid for e in ways])
        present = hits.any()
        old_value = Signal(cfg.value_width)
        for w in reversed(range(cfg.ways)):
            with m.If(hits[w]):
                m.d.comb += old_value.eq(ways[w].value)
        first_free = free & (~free + 1)                # one-hot lowest free way

        status = Signal(HtStatus)
        write = Signal(cfg.ways)                       # one-hot way to write
        write_valid = Signal()
        with m.Switch(s1.op):
            with m.Case(HtOp.LOOKUP):
                m.d.comb += status.eq(Mux(present, HtStatus.OK, HtStatus.NOT_FOUND))
            with m.Case(HtOp.REMOVE):
                m.d.comb += [status.eq(Mux(present, HtStatus.OK, HtStatus.NOT_FOUND)),
                             write.eq(hits), write_valid.eq(0)]
            with m.Case(HtOp.ADD, HtOp.LEARN):
                with m.If(present):
                    with m.If(s1.op == HtOp.ADD):
                        m.d.comb += status.eq(HtStatus.DUPLICATE)
                    with m.Else():
                        m.d.comb += [status.eq(HtStatus.REFRESHED), write.eq(hits),
                                     write_valid.eq(1)]
                with m.Elif(free.any()):
                    m.d.comb += [status.eq(HtStatus.OK), write.eq(first_free),
                                 write_valid.eq(1)]
                with m.Else():
                    m.d.comb += status.eq(HtStatus.FULL)

        complete = s1_valid & advance                  # stage 1's command finishes this edge
        new_entry = entry.const({"valid": 0, "key": 0, "value": 0}).as_value()
        for w, wp in enumerate(wports):
            m.d.comb += [
                wp.addr.eq(Mux(clearing, clear_idx, s1_index)),
                wp.data.eq(Mux(clearing, new_entry, Cat(write_valid, s1.key, s1.value))),
                wp.en.eq(clearing | (complete & write[w])),
            ]

        # ---- synchronous updates ---------------------------------------------------------------
        with m.If(clearing):
            m.d.sync += clear_idx.eq(clear_idx + 1)
            with m.If(clear_idx == cfg.buckets - 1):
                m.d.sync += clearing.eq(0)
        with m.If(out.ready):
            m.d.sync += out.valid.eq(0)
        with m.If(advance):
            m.d.sync += [s1_valid.eq(accept), s1.eq(self.cmd.payload), s1_index.eq(index)]
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

