"""Formal properties of the 2-left bucketed hash table (:mod:`hw.switch.hash_table`), the
L3QCN tables' core, in a tiny configuration (4-bit keys, 2 buckets per side, 2 ways: 8
entries; every key has two candidate buckets, so a table of 4 entries can already be full for
a key).

The harness adds an asynchronous read port to each of the table's block RAMs (one per side
and way) for every bucket and lays the table's pending write over it (a decision is written to
the RAM at the edge after it), so the properties speak of the table's real contents; the
environment is any command stream (any op, key, value, tag), any back-pressure on
``result``, from the reset state.  The harness mirrors the table's skid register (a result
decided while ``result`` is held waits behind it; the pipeline stands meanwhile), so the
FULL and placement checks compare with the entries before the edge that decided the result.
Asserted every cycle:

* **lookup**: for a symbolic key ``K`` (any key, fixed per trace) a shadow entry (present,
  value) follows the results of ``K``'s own commands only; every result for ``K`` agrees with
  it: a LOOKUP finds ``K`` exactly when the shadow holds it and returns the shadow's value
  (so never another key's value, whatever the other keys did), ADD of a present key is a
  DUPLICATE, LEARN of a present key is REFRESHED, REMOVE finds it, and an absent key's result
  carries value 0;
* **occupancy**: once the reset sweep is over, ``occupancy`` equals the number of valid ways
  in the RAMs; every valid entry sits in one of its key's two candidate buckets and no key is
  stored twice;
* **full**: a FULL result comes only when both candidate buckets were full and the key
  absent, and the edge that produced it changed no entry and not the occupancy;
* **placement**: a new key goes into the candidate bucket with more free ways (side 0 on a
  tie), in its lowest free way (the 2-left policy the table's load figures rest on).

Bounded (BMC): the reset sweep, then enough commands to fill both candidate buckets of a key
and refuse it (the covers show it), at the 7-edge latency (``HashTable.LATENCY``): depth 15
= the 2-cycle sweep, 6 back-to-back commands (the last one 5 behind the first, the longest
forwarding distance) and the last one's result (3.5 minutes on a loaded machine).
"""

from __future__ import annotations

from amaranth.hdl import Assert, Assume, Cat, Const, Cover, Module, Mux, ResetSignal, Signal
from amaranth.hdl._ast import AnyConst, AnySeq
from amaranth.hdl._mem import MemoryInstance

from hw.layouts import HtOp, HtStatus, ht_command_layout, ht_entry_layout
from hw.lib.arith import popcount
from hw.switch.hash_table import HashTable, h3_hash
from hw.switch.hash_table_config import HashTableConfig

from .runner import Property

__all__ = ["PROPERTIES", "TINY"]

TINY = HashTableConfig(key_width=4, value_width=2, tag_width=1, buckets=4, ways=2,
                       counter_width=8)


def _table(cfg: HashTableConfig):
    def build():
        m = Module()
        m.d.comb += Assume(~ResetSignal())      # from the reset state, no reset after it
        dut = HashTable(cfg)
        dut._MustUse__silence = True        # elaborated here, to reach its block RAMs
        inner = dut.elaborate(None)
        m.submodules.dut = inner
        SB, W = cfg.side_buckets, cfg.ways
        # entries[side][bucket][way]: the RAM word, read asynchronously, or the table's pending
        # write (decided at the previous edge, written to the RAM at the next one)
        pending, rec = dut._pending
        entries = []
        for side in (0, 1):
            per_bucket = [[] for _ in range(SB)]
            for w in range(W):
                mem = inner._named_submodules[f"side{side}_way{w}"][0]
                for b in range(SB):
                    word = Signal(ht_entry_layout(cfg), name=f"entry{side}_{b}_{w}")
                    here = pending & rec["we"][side][w] & (rec["index"][side] == b)
                    if isinstance(mem, MemoryInstance):
                        # a hw.lib.bram.Bram's memory cell: add the port to the instance
                        data = Signal(len(word.as_value()), name=f"ram{side}_{b}_{w}")
                        mem.read_port(domain="comb", addr=Const(b, range(SB)), data=data,
                                      en=Const(1), transparent_for=())
                    else:
                        port = mem.read_port(domain="comb")
                        m.d.comb += port.addr.eq(b)
                        data = port.data
                    m.d.comb += word.eq(Mux(here, Cat(rec["valid"], rec["key"], rec["value"]),
                                            data))
                    per_bucket[b].append(word)
            entries.append(per_bucket)
        flat = [(side, b, e) for side in (0, 1) for b in range(SB) for e in entries[side][b]]
        words = Cat(*(e.as_value() for _, _, e in flat))
        valid_bits = Cat(*(e.valid for _, _, e in flat))

        # ---- environment --------------------------------------------------------------------
        cmd, res = dut.cmd.payload, dut.result.payload
        m.d.comb += [dut.cmd.valid.eq(AnySeq(1)), cmd.eq(AnySeq(len(cmd.as_value()))),
                     dut.result.ready.eq(AnySeq(1))]
        # the pipeline moves unless a result waits behind ``result`` (the table's skid
        # register): the table's own enable
        advance = dut._advance
        accept = dut.cmd.valid & dut.cmd.ready
        taken = dut.result.valid & dut.result.ready
        out_free = ~dut.result.valid | dut.result.ready

        # the command of each result (mirror of the pipeline's stages and of the result and
        # skid registers), and for a result that waited in the skid register the entries
        # before the edge that decided it (``skid_words``) and whether ``result`` took it from
        # there at the last edge (``from_skid``)
        depth = HashTable.LATENCY - 1
        h_valid = [Signal(name=f"mirror_valid{k}") for k in range(depth)]
        h_cmd = [Signal(ht_command_layout(cfg), name=f"mirror_cmd{k}") for k in range(depth)]
        o_cmd = Signal(ht_command_layout(cfg))
        s_cmd = Signal(ht_command_layout(cfg))
        skid_words, skid_occ = Signal.like(words), Signal.like(dut.occupancy)
        from_skid = Signal()
        m.d.sync += from_skid.eq(~advance & dut.result.ready)
        with m.If(advance):
            m.d.sync += [h_valid[0].eq(accept), h_cmd[0].eq(cmd)]
            m.d.sync += [h_valid[k].eq(h_valid[k - 1]) for k in range(1, depth)]
            m.d.sync += [h_cmd[k].eq(h_cmd[k - 1]) for k in range(1, depth)]
            with m.If(h_valid[-1]):
                with m.If(out_free):
                    m.d.sync += o_cmd.eq(h_cmd[-1])
                with m.Else():
                    m.d.sync += [s_cmd.eq(h_cmd[-1]), skid_words.eq(words),
                                 skid_occ.eq(dut.occupancy)]
        with m.Elif(dut.result.ready):
            m.d.sync += o_cmd.eq(s_cmd)
        with m.If(dut.result.valid):
            m.d.comb += [Assert(res.key == o_cmd.key), Assert(res.op == o_cmd.op),
                         Assert(res.tag == o_cmd.tag)]

        # ---- lookup: the shadow of one symbolic key ----------------------------------------
        K = Signal(cfg.key_width)
        m.d.comb += K.eq(AnyConst(cfg.key_width))
        present, value = Signal(), Signal(cfg.value_width)
        st = res.status
        with m.If(taken & (res.key == K)):
            with m.If(present):
                m.d.comb += Assert(res.value == value)
            with m.Else():
                m.d.comb += Assert(res.value == 0)
            with m.Switch(res.op):
                with m.Case(HtOp.LOOKUP):
                    m.d.comb += Assert(Mux(present, st == HtStatus.OK,
                                           st == HtStatus.NOT_FOUND))
                with m.Case(HtOp.REMOVE):
                    m.d.comb += Assert(Mux(present, st == HtStatus.OK,
                                           st == HtStatus.NOT_FOUND))
                    m.d.sync += present.eq(0)
                with m.Case(HtOp.ADD):
                    with m.If(present):
                        m.d.comb += Assert(st == HtStatus.DUPLICATE)
                    with m.Else():
                        m.d.comb += Assert((st == HtStatus.OK) | (st == HtStatus.FULL))
                        with m.If(st == HtStatus.OK):
                            m.d.sync += [present.eq(1), value.eq(o_cmd.value)]
                with m.Case(HtOp.LEARN):
                    with m.If(present):
                        m.d.comb += Assert(st == HtStatus.REFRESHED)
                        m.d.sync += value.eq(o_cmd.value)
                    with m.Else():
                        m.d.comb += Assert((st == HtStatus.OK) | (st == HtStatus.FULL))
                        with m.If(st == HtStatus.OK):
                            m.d.sync += [present.eq(1), value.eq(o_cmd.value)]

        # ---- occupancy and placement, after the reset sweep ---------------------------------
        since_reset = Signal(range(SB + 1))
        with m.If(since_reset != SB):
            m.d.sync += since_reset.eq(since_reset + 1)
        swept = since_reset == SB
        with m.If(swept):
            m.d.comb += Assert(dut.occupancy == popcount(valid_bits))
            for i, (side, b, e) in enumerate(flat):
                m.d.comb += Assert(~e.valid | (h3_hash(cfg, e.key, side) == b))
                for _, _, e2 in flat[i + 1:]:
                    m.d.comb += Assert(~(e.valid & e2.valid & (e.key == e2.key)))

        # ---- a FULL result changed nothing --------------------------------------------------
        prev_words, prev_occ = Signal.like(words), Signal.like(dut.occupancy)
        prev_valid, prev_ready = Signal(), Signal()
        m.d.sync += [prev_words.eq(words), prev_occ.eq(dut.occupancy),
                     prev_valid.eq(dut.result.valid), prev_ready.eq(dut.result.ready)]
        new_result = dut.result.valid & (~prev_valid | prev_ready)
        # the entries before the edge that decided the result: the last edge, or the one that
        # put it in the skid register (no entry changes while it waits: the pipeline stands)
        base_words = Mux(from_skid, skid_words, prev_words)
        base_occ = Mux(from_skid, skid_occ, prev_occ)
        # the key's two candidate buckets, as they were before the edge that made the result
        prev_entries = {}
        pos = 0
        for side, b, e in flat:
            n = len(e.as_value())
            prev_entries.setdefault((side, b), []).append(base_words[pos:pos + n])
            pos += n
        # the key's two candidate buckets: valid bits before the edge, the key's entries now
        was_valid, holds_key = [], []
        for side in (0, 1):
            idx = h3_hash(cfg, res.key, side)
            pv = [Signal(name=f"cand{side}_was_valid{w}") for w in range(W)]
            nk = [Signal(name=f"cand{side}_holds_key{w}") for w in range(W)]
            for b in range(SB):
                with m.If(idx == b):
                    m.d.comb += [pv[w].eq(prev_entries[(side, b)][w][0]) for w in range(W)]
                    m.d.comb += [nk[w].eq(entries[side][b][w].valid
                                          & (entries[side][b][w].key == res.key))
                                 for w in range(W)]
            was_valid.append(pv)
            holds_key.append(nk)
        cand_full = [Cat(*pv).all() for pv in was_valid]
        with m.If(new_result & (st == HtStatus.FULL)):
            m.d.comb += [Assert(words == base_words), Assert(dut.occupancy == base_occ),
                         Assert(cand_full[0] & cand_full[1]),
                         Assert((res.op == HtOp.ADD) | (res.op == HtOp.LEARN))]
        # placement: a new key goes to the candidate bucket with more free ways (side 0 on a
        # tie), into its lowest free way
        inserted = new_result & (st == HtStatus.OK) & ((res.op == HtOp.ADD)
                                                       | (res.op == HtOp.LEARN))
        free_n = [sum(~v for v in pv) for pv in was_valid]
        to_side1 = free_n[1] > free_n[0]
        for side in (0, 1):
            for w in range(W):
                lowest = ~was_valid[side][w] & Cat(*was_valid[side][:w], Const(1, 1)).all()
                expect_here = (to_side1 if side else ~to_side1) & lowest
                with m.If(inserted & expect_here):
                    m.d.comb += Assert(holds_key[side][w])

        # ---- covers --------------------------------------------------------------------------
        mine = taken & (res.key == K)
        m.d.comb += [
            Cover(new_result & (st == HtStatus.FULL)),
            Cover(mine & (res.op == HtOp.LOOKUP) & (st == HtStatus.OK)),
            Cover(mine & (res.op == HtOp.LOOKUP) & (st == HtStatus.NOT_FOUND)
                  & (dut.occupancy != 0)),
            Cover(mine & (res.op == HtOp.LEARN) & (st == HtStatus.REFRESHED)),
            Cover(mine & (res.op == HtOp.REMOVE) & (st == HtStatus.OK)),
            Cover(mine & (st == HtStatus.FULL)),
            Cover(swept & (dut.occupancy == 4)),
            Cover(dut.result.valid & ~dut.result.ready & dut.cmd.valid),
            Cover(new_result & from_skid),
        ]
        return m
    return build


PROPERTIES = [
    Property("hash_table.tiny", "2-left table (4-bit keys, 2x2 buckets, 2 ways): lookups "
             "return only the key's own value, occupancy = valid ways, FULL changes nothing",
             _table(TINY), mode="bmc", depth=15, cover_depth=14, timeout=1200,
             extra_script=("prep -top top", "flatten", "memory_map", "opt_clean"),
             cost_s=390),
]
