"""Generic bucketed hash table in block RAM, one command per clock (the two L3QCN tables).

See ``docs/l3qcn.md`` ("Tables"), :mod:`hw.switch.hash_table_config` for the organisation and
:mod:`sim.models.hash_table` for the bit-exact model.
"""

from __future__ import annotations

from functools import reduce

from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal
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
    value); read ports not transparent, nothing but a register after a block RAM output and
    before its address or write inputs.  Four pipeline stages, all moving together, then the
    result register:

    1. the accepting edge registers the command and its candidate indexes ``h0(key)``,
       ``h1(key)`` (the CRC XOR trees);
    2. the next edge reads the ``2 ways`` candidate entries;
    3. the words are registered as read;
    4. the full stored keys are compared with the command's key; registered per way: hit,
       valid, value;
    5. the decision (status; for a new key the candidate with more free ways, side 0 on a
       tie, and its lowest free way) registers the result and the write record (ways,
       entry); the record is written to the block RAMs at the following edge.

    Forwarding: a command reads the RAMs before the writes of the 4 commands ahead of it
    have reached them.  Their write records (the last two kept: ways written per side, index,
    entry) are laid over its entries, each where it is known: the writes of the commands 4 and
    3 ahead when its words are registered (per way: overwritten / valid / this key, beside
    the raw words), of the command 2 ahead at the compare; the later write of a way wins, and
    a way overwritten with the command's own key has the value of the latest write of that key
    (a key is stored at most once).  At the decision, the command 1 ahead: its write frees or
    fills a way (the free ways are corrected); if it had the same key, where that key is after
    it (present, way, value, registered with its decision) replaces the compare, and a command
    of another key changes no hit (it writes a free way or its own key's way).  "Same bucket"
    (index) and "same key" flags are computed from registers before they are used, the keys
    byte by byte one stage and the AND of the bytes the next.  A read colliding with the write
    of the same word at the same edge (undefined on a block RAM; the memories carry
    ``no_rw_check`` so that Yosys adds no read-first logic after them) is always overridden
    by that write's record.

    After reset, ``cmd.ready`` stays low for ``buckets / 2`` cycles while every bucket is
    cleared (block RAM contents are not reset by ``rst``).

    Latency and throughput
    ----------------------
    One command per clock with no bubble, whatever the keys; its result is valid
    ``LATENCY`` = 5 edges after the command is accepted (2 before the pipelining), in order.
    ``result`` back-pressure stalls the whole pipeline (``cmd.ready`` low).
    """

    #: clock cycles from a command's handshake on ``cmd`` to its result's on ``result`` (with
    #: ``result.ready`` high): the accepting edge, 3 more stages, the result register
    LATENCY = 5

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
        cmd_layout = ht_command_layout(cfg)
        IW, VW = cfg.index_width, cfg.value_width
        SIDES = (0, 1)

        # ---- submodules: one block RAM per (side, way); reads not transparent ----------------
        rports, wports = [], []              # [side][way]
        for side in SIDES:
            rps, wps = [], []
            for w in range(W):
                # a read colliding with a write of the same word is never used (the write's
                # record overrides it): no read-first emulation logic after the block RAM
                mem = memory.Memory(shape=entry, depth=cfg.side_buckets, init=[],
                                    attrs={"no_rw_check": 1})
                m.submodules[f"side{side}_way{w}"] = mem
                wps.append(mem.write_port())
                rps.append(mem.read_port())
            rports.append(rps)
            wports.append(wps)

        # ---- handshake: every stage moves on ``advance`` -------------------------------------
        clearing = Signal(init=1)                      # clearing all buckets after reset
        clear_idx = Signal(IW)
        out = self.result
        advance = Signal()
        m.d.comb += [advance.eq(~out.valid | out.ready),
                     self.cmd.ready.eq(advance & ~clearing)]
        accept = self.cmd.valid & self.cmd.ready

        # ---- stage registers: the command in stage k (1..4) and its two bucket indexes (data
        # registers without reset: a reset would put a LUT between a block RAM and its register)
        valid = [None] + [Signal(name=f"s{k}_valid") for k in range(1, 5)]
        cmd = [None] + [Signal(cmd_layout, name=f"s{k}_cmd", reset_less=True)
                        for k in range(1, 5)]
        # stage 1's indexes are the read ports' address registers themselves
        index = [None, [rports[side][0].addr for side in SIDES]]
        index += [[Signal(IW, name=f"s{k}_index{side}") for side in SIDES] for k in range(2, 5)]
        with m.If(advance):
            m.d.sync += [valid[1].eq(accept), cmd[1].eq(self.cmd.payload)]
            for k in (2, 3, 4):
                m.d.sync += [valid[k].eq(valid[k - 1]), cmd[k].eq(cmd[k - 1])]
            for side in SIDES:
                m.d.sync += [rp.addr.eq(h3_hash(cfg, self.cmd.payload.key, side))
                             for rp in rports[side]]
                for k in (2, 3, 4):
                    m.d.sync += index[k][side].eq(index[k - 1][side])
        for side in SIDES:                             # stage 1 -> 2: read both candidates
            for rp in rports[side]:
                m.d.comb += rp.en.eq(advance)

        # ---- the write records: h1 = the decision of the previous advancing edge, h2 the one
        # before; a record is written to the block RAMs at the clock edge after its decision
        def record(name):
            return {"we": [Signal(W, name=f"{name}_we{side}") for side in SIDES],
                    "valid": Signal(name=f"{name}_valid"),
                    "key": Signal(cfg.key_width, name=f"{name}_key", reset_less=True),
                    "value": Signal(VW, name=f"{name}_value", reset_less=True),
                    "index": [Signal(IW, name=f"{name}_index{side}", reset_less=True)
                              for side in SIDES]}
        h1, h2 = record("h1"), record("h2")
        h1_pending = Signal()                          # h1 not yet in the block RAMs

        def any_we(h):
            return h["we"][0].any() | h["we"][1].any()

        # ---- forwarding flags, registered one stage ahead: the command d slots ahead writes the
        # same bucket (``near``) / has the same key (``same``)
        def flags(k, d):
            return ([Signal(name=f"s{k}_near{d}_{side}") for side in SIDES],
                    Signal(name=f"s{k}_same{d}"))
        near4, same4 = flags(2, 4)
        near3, same3 = flags(2, 3)
        near2, same2 = flags(3, 2)
        near1, same1 = flags(4, 1)
        with m.If(advance):
            for side in SIDES:
                m.d.sync += [near4[side].eq(index[1][side] == h1["index"][side]),
                             near3[side].eq(index[1][side] == index[4][side]),
                             near2[side].eq(index[2][side] == index[4][side]),
                             near1[side].eq(index[3][side] == index[4][side])]
        # key equality in two steps: per byte (registered), then the AND of the bytes, so a
        # wide compare is two short trees (the pair keeps its distance as it moves on)
        def bytes_equal(a, b):
            return Cat(*[a[i:i + 8] == b[i:i + 8] for i in range(0, cfg.key_width, 8)])
        nb = -(-cfg.key_width // 8)
        eq4, eq3 = Signal(nb, name="s1_eq4"), Signal(nb, name="s1_eq3")
        eq2, eq1 = Signal(nb, name="s2_eq2"), Signal(nb, name="s3_eq1")
        with m.If(advance):
            key = self.cmd.payload.key
            m.d.sync += [eq4.eq(bytes_equal(key, cmd[4].key)), eq3.eq(bytes_equal(key, cmd[3].key)),
                         eq2.eq(bytes_equal(cmd[1].key, cmd[3].key)),
                         eq1.eq(bytes_equal(cmd[2].key, cmd[3].key))]
            m.d.sync += [same4.eq(eq4.all()), same3.eq(eq3.all()), same2.eq(eq2.all()),
                         same1.eq(eq1.all())]

        # ---- stage 2 -> 3: the block RAM words as read (no logic after the RAM), and the
        # overlay of the writes by the commands 4 and 3 ahead (h2, h1; the read missed them).
        # Per way: overwritten (ov), by a valid entry (ovv), of this command's key (ovh); the
        # value of the latest write of this key (skv): a way overwritten with this key holds it.
        raw = [[Signal(entry, name=f"s3_raw{side}_{w}", reset_less=True) for w in range(W)]
               for side in SIDES]
        ov = [Signal(W, name=f"s3_ov{side}") for side in SIDES]
        ovv = [Signal(W, name=f"s3_ovv{side}") for side in SIDES]
        ovh = [Signal(W, name=f"s3_ovh{side}") for side in SIDES]
        skv = Signal(VW, name="s3_skv", reset_less=True)
        with m.If(advance):
            for side in SIDES:
                m.d.sync += [raw[side][w].eq(rports[side][w].data) for w in range(W)]
                sel1 = Mux(near3[side], h1["we"][side], 0)
                sel2 = Mux(near4[side], h2["we"][side], 0)
                m.d.sync += [
                    ov[side].eq(sel1 | sel2),
                    ovv[side].eq(Mux(h1["valid"], sel1, 0) | Mux(h2["valid"], sel2 & ~sel1, 0)),
                    ovh[side].eq(Mux(h1["valid"] & same3, sel1, 0)
                                 | Mux(h2["valid"] & same4, sel2 & ~sel1, 0)),
                ]
            m.d.sync += skv.eq(Mux(same3 & any_we(h1), h1["value"], h2["value"]))

        # ---- stage 3 -> 4: compare the full keys; the write by the command 2 ahead (h1) ------
        s4_hit = [Signal(W, name=f"s4_hit{side}") for side in SIDES]
        s4_used = [Signal(W, name=f"s4_used{side}") for side in SIDES]
        s4_ov = [Signal(W, name=f"s4_ov{side}") for side in SIDES]     # value: skv, not raw
        s4_raw = [[Signal(VW, name=f"s4_raw{side}_{w}", reset_less=True) for w in range(W)]
                  for side in SIDES]
        s4_skv = Signal(VW, name="s4_skv", reset_less=True)
        with m.If(advance):
            for side in SIDES:
                sel = Mux(near2[side], h1["we"][side], 0)
                o = sel | ov[side]
                o_valid = Mux(h1["valid"], sel, 0) | (ovv[side] & ~sel)
                o_hit = Mux(h1["valid"] & same2, sel, 0) | (ovh[side] & ~sel)
                for w in range(W):
                    e = raw[side][w]
                    m.d.sync += [
                        s4_hit[side][w].eq(Mux(o[w], o_hit[w], e.valid & (e.key == cmd[3].key))),
                        s4_used[side][w].eq(Mux(o[w], o_valid[w], e.valid)),
                        s4_raw[side][w].eq(e.value),
                    ]
                m.d.sync += s4_ov[side].eq(o)
            m.d.sync += s4_skv.eq(Mux(same2 & any_we(h1), h1["value"], skv))

        # ---- stage 4: the write by the command 1 ahead (h1), then pick a side and a way -------
        # Its key (``kin``) says where this command's key is if the command ahead had the same
        # key: present or not, which way, which value after it (registered with its decision).
        # A command of another key changes no hit (it writes a free way or its own key's way),
        # only the free ways.
        k_live = Signal()                              # the slot ahead held a command
        k_present = Signal()
        k_way = [Signal(W, name=f"k_way{side}") for side in SIDES]
        k_value = Signal(VW, name="k_value", reset_less=True)
        kin = Signal()
        m.d.comb += kin.eq(same1 & k_live)
        hits, used, vals = [], [], []
        for side in SIDES:
            sel = Signal(W, name=f"s4_sel{side}")
            hit = Signal(W, name=f"hit{side}")
            use = Signal(W, name=f"used{side}")
            m.d.comb += [sel.eq(Mux(near1[side], h1["we"][side], 0)),
                         hit.eq(Mux(kin, k_way[side], s4_hit[side])),
                         use.eq(Mux(h1["valid"], sel, 0) | (s4_used[side] & ~sel))]
            hits.append(hit)
            used.append(use)
            vals.append([Mux(s4_ov[side][w], s4_skv, s4_raw[side][w]) for w in range(W)])
        s4 = cmd[4]
        free = [~used[side] for side in SIDES]
        present = Signal()
        m.d.comb += present.eq(Mux(kin, k_present, s4_hit[0].any() | s4_hit[1].any()))
        old_value = Signal(VW)
        m.d.comb += old_value.eq(Mux(kin, k_value, reduce(lambda a, b: a | b, [
            Mux(s4_hit[side][w], vals[side][w], 0) for side in SIDES for w in range(W)])))
        new_side = Signal()                            # more free ways on side 1 (0 on a tie)
        if 2 * W <= 8:      # a truth table of the 2 x ways free bits: LUTs, no carry chains
            table = Array(Const(bin(i >> W).count("1") > bin(i & ((1 << W) - 1)).count("1"))
                          for i in range(1 << (2 * W)))
            m.d.comb += new_side.eq(table[Cat(free[0], free[1])])
        else:
            m.d.comb += new_side.eq(popcount(free[1]) > popcount(free[0]))
        lowest = [Cat(*[free[side][w] & ~free[side][:w].any() for w in range(W)])
                  for side in SIDES]                   # the lowest free way, one-hot
        first_free = Mux(new_side, lowest[1], lowest[0])
        room = free[0].any() | free[1].any()

        status = Signal(HtStatus)
        write = [Signal(W, name=f"write{side}") for side in SIDES]   # one-hot way to write
        write_valid = Signal()
        insert = [Mux(new_side == side, first_free, 0) for side in SIDES]
        with m.Switch(s4.op):
            with m.Case(HtOp.LOOKUP):
                m.d.comb += status.eq(Mux(present, HtStatus.OK, HtStatus.NOT_FOUND))
            with m.Case(HtOp.REMOVE):
                m.d.comb += [status.eq(Mux(present, HtStatus.OK, HtStatus.NOT_FOUND)),
                             write[0].eq(hits[0]), write[1].eq(hits[1]), write_valid.eq(0)]
            with m.Case(HtOp.ADD, HtOp.LEARN):
                with m.If(present):
                    with m.If(s4.op == HtOp.ADD):
                        m.d.comb += status.eq(HtStatus.DUPLICATE)
                    with m.Else():
                        m.d.comb += [status.eq(HtStatus.REFRESHED), write[0].eq(hits[0]),
                                     write[1].eq(hits[1]), write_valid.eq(1)]
                with m.Elif(room):
                    m.d.comb += [status.eq(HtStatus.OK), write[0].eq(insert[0]),
                                 write[1].eq(insert[1]), write_valid.eq(1)]
                with m.Else():
                    m.d.comb += status.eq(HtStatus.FULL)

        complete = valid[4] & advance                  # stage 4's command finishes this edge
        m.d.sync += h1_pending.eq(advance)
        with m.If(advance):
            m.d.sync += [h1["we"][side].eq(Mux(valid[4], write[side], 0)) for side in SIDES]
            m.d.sync += [h1["valid"].eq(write_valid), h1["key"].eq(s4.key),
                         h1["value"].eq(s4.value)]
            m.d.sync += [h1["index"][side].eq(index[4][side]) for side in SIDES]
            m.d.sync += [h2["we"][side].eq(h1["we"][side]) for side in SIDES]
            # where this command's key is after it (for the next command, if of the same key)
            # (by op, so that the wide value mux waits for nothing but ``present``)
            is_remove, is_lookup = s4.op == HtOp.REMOVE, s4.op == HtOp.LOOKUP
            new_value = (s4.op == HtOp.LEARN) | ((s4.op == HtOp.ADD) & ~present)
            m.d.sync += [k_live.eq(valid[4]),
                         k_present.eq(~is_remove & (present | (~is_lookup & room))),
                         k_value.eq(Mux(new_value, s4.value, old_value))]
            m.d.sync += [k_way[side].eq(Mux(is_remove, 0, Mux(present | is_lookup, hits[side],
                                                               insert[side])))
                         for side in SIDES]
            m.d.sync += [h2["valid"].eq(h1["valid"]), h2["value"].eq(h1["value"])]

        # ---- the block RAM writes: the reset sweep, else h1 at the edge after its decision ----
        cleared = entry.const({"valid": 0, "key": 0, "value": 0}).as_value()
        for side in SIDES:
            for w, wp in enumerate(wports[side]):
                m.d.comb += [
                    wp.addr.eq(Mux(clearing, clear_idx, h1["index"][side])),
                    wp.data.eq(Mux(clearing, cleared,
                                   Cat(h1["valid"], h1["key"], h1["value"]))),
                    wp.en.eq(clearing | (h1_pending & h1["we"][side][w])),
                ]

        # ---- synchronous updates ---------------------------------------------------------------
        with m.If(clearing):
            m.d.sync += clear_idx.eq(clear_idx + 1)
            with m.If(clear_idx == cfg.side_buckets - 1):
                m.d.sync += clearing.eq(0)
        with m.If(out.ready):
            m.d.sync += out.valid.eq(0)
        with m.If(complete):
            m.d.sync += [
                out.valid.eq(1),
                out.payload.op.eq(s4.op),
                out.payload.status.eq(status),
                out.payload.key.eq(s4.key),
                out.payload.value.eq(Mux(present, old_value, 0)),
                out.payload.tag.eq(s4.tag),
            ]
            adding = write_valid & ~present
            removing = (s4.op == HtOp.REMOVE) & present
            with m.If(adding):
                m.d.sync += self.occupancy.eq(self.occupancy + 1)
            with m.If(removing):
                m.d.sync += self.occupancy.eq(self.occupancy - 1)
            with m.If(s4.op == HtOp.LOOKUP):
                m.d.sync += self.lookups.eq(saturating_inc(self.lookups))
                with m.If(~present):
                    m.d.sync += self.misses.eq(saturating_inc(self.misses))
            with m.If(status == HtStatus.FULL):
                m.d.sync += self.full.eq(saturating_inc(self.full))
        # for the formal harness: the write not yet in the block RAMs
        self._pending = (h1_pending, h1)
        return m
