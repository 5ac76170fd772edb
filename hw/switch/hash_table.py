"""Generic bucketed hash table in block RAM, one command per clock (the two L3QCN tables).

See ``docs/l3qcn.md`` ("Tables"), :mod:`hw.switch.hash_table_config` for the organisation and
:mod:`sim.models.hash_table` for the bit-exact model.
"""

from __future__ import annotations

from functools import reduce

from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ..layouts import HtOp, HtStatus, ht_command_layout, ht_entry_layout, ht_result_layout
from ..lib.arith import popcount
from ..lib.bram import Bram
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
    One block RAM per (side, way), ``buckets / 2`` deep, ``1 + key + value`` bits (valid, key,
    value), a :class:`hw.lib.bram.Bram` (read latency 2; on the ECP5 the DP16KD's own output
    register), nothing but a register before its address or write inputs and nothing but one
    LUT before a register after its output.  Seven edges from a command to its result, the
    six stages moving together:

    0. the accepting edge registers the command and its candidate indexes ``h0(key)``,
       ``h1(key)`` (the H3 XOR trees);
    1. the next edge copies the indexes into the read address of the ``2 ways`` RAMs (a
       register fed by a register: the route to block RAMs across the chip has no logic);
    2. the next edge reads the candidate entries into the RAMs' read registers;
    3. the edge after it brings them to the RAMs' output registers;
    4. the stored keys are compared with the command's ``CHUNK`` (2) bits at a time, each
       compare registered, beside the entries' valid bits and values;
    5. the AND of each way's compares (hit per way), registered;
    6. the decision (status; for a new key the candidate with more free ways, side 0 on a
       tie, and its lowest free way) registers the result and the write record (ways,
       entry); the record is written to the block RAMs at the following edge.  The side
       with more free ways after the command ahead's change is one of three registered-input
       comparisons of the free counts (unchanged, one more or one fewer on a side) picked by
       that command's registered flags, so the loop from one decision to the next is a
       select, not a count.

    Forwarding: a command reads the RAMs before the writes of the 5 commands ahead of it
    have reached them (the command 5 ahead is written at the very edge of the read, which the
    block RAM leaves undefined).  Their write records (the last two kept: ways written per
    side, index, entry) are laid over its entries, each where it is known, as masks beside
    the words (per way: overwritten / valid / this key; the value of the latest write of this
    key): the writes of the commands 5 and 4 ahead while the RAMs read, of the command 3
    ahead with the key compares, of the command 2 ahead with their AND; the later write of a
    way wins, and a way overwritten with the command's own key has the value of the latest
    write of that key (a key is stored at most once).  At the decision, the command 1 ahead:
    the ways it freed (a REMOVE) or filled (an insert) in this command's buckets are
    registered with its decision (``f_clr``, ``f_set``) and correct the free ways; if it had
    the same key, where that key is after it (present, way, value, registered with its
    decision) replaces the compare, and a command of another key changes no hit (it writes a
    free way or its own key's way).  "Same bucket" (index) and "same key" flags are computed
    from registers before they are used, the keys byte by byte one stage and the AND of the
    bytes the next; what the decision writes is decoded from the op a stage ahead.

    After reset, ``cmd.ready`` stays low for ``buckets / 2`` cycles while every bucket is
    cleared through the write record (block RAM contents are not reset by ``rst``).

    Latency and throughput
    ----------------------
    One command per clock with no bubble, whatever the keys; its result is valid
    ``LATENCY`` = 7 edges after the command is accepted (2 before the pipelining, 6 before
    stage 0), in order.
    ``result`` back-pressure stalls the whole pipeline (``cmd.ready`` low) one cycle late: a
    result decided while ``result`` is held waits in a skid register, and the pipeline (every
    stage, every block RAM's read enable) stands while it is full, so that its enable is a
    flip-flop, never ``result.ready``'s route (each block RAM keeps its own copy,
    :class:`hw.lib.bram.Bram`'s ``r_en_next``); ``cmd.ready`` is then a function of flip-flops
    only.  With ``result.ready`` high nothing changes: one result per clock.  ``occupancy``
    counts the write being made; ``lookups``, ``misses`` and ``full`` count a result the
    cycle after it appears on ``result``.
    """

    #: clock cycles from a command's handshake on ``cmd`` to its result's on ``result`` (with
    #: ``result.ready`` high): the accepting edge (stage 0), 5 more stages, the result register
    LATENCY = 7
    #: key bits compared per LUT right after the block RAM's output register (2 + 2 bits: one
    #: LUT4), each compare registered; their AND is the next stage
    CHUNK = 2

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

        # ---- the block RAMs: one per (side, way), read latency 2 (hw.lib.bram.Bram: on the
        # ECP5 the DP16KD's own output register), all of a side read at one address ---------
        clearing = Signal(init=1)                      # clearing all buckets after reset
        # ``clearing``'s value in the next cycle (a register, ending a cycle earlier): the
        # sweep's write enables are registered with the decision's (``we_hit``, ``s5_hit``)
        sweep = Signal(init=1)
        clear_idx = Signal(IW)
        out = self.result
        # the pipeline moves unless a result waits in the skid register behind ``out``: the
        # enable of every stage and block RAM is a flip-flop, not ``result.ready``'s route
        skid_valid = Signal()
        advance = Signal()
        advance_next = Signal()                        # its value in the next cycle
        m.d.comb += [advance.eq(~skid_valid),
                     self.cmd.ready.eq(~skid_valid & ~clearing)]
        accept = self.cmd.valid & self.cmd.ready
        # stage 1's indexes: the RAMs' read address (a register; the read moves on ``advance``)
        raddr = [Signal(IW, name=f"s1_index{side}") for side in SIDES]
        # each block RAM registers ``advance_next`` itself (on the ECP5 a flip-flop beside
        # every DP16KD): its read enable is ``advance``
        rams = [[Bram(entry, cfg.side_buckets, name=f"side{side}_way{w}", r_addr=raddr[side],
                      r_en_next=advance_next) for w in range(W)] for side in SIDES]

        # ---- stage registers: the command in stage k (0..5) and its two bucket indexes (data
        # registers without reset: a reset would put a LUT between a block RAM and its register).
        # Stage 0 holds the command as accepted and its hashed indexes: the hash (XOR trees of
        # the command port, whose driver is the user's) ends at a register of its own, and the
        # read address register is loaded from it alone (the address register sits by the
        # block RAMs, which span the chip).  Stage 0 comes before the read, so a command's
        # read is as many edges before its decision as without it: no more writes in flight.
        S = 5                                          # the decision stage
        valid = [Signal(name=f"s{k}_valid") for k in range(S + 1)]
        cmd = [Signal(cmd_layout, name=f"s{k}_cmd", reset_less=True) for k in range(S + 1)]
        index = [[Signal(IW, name=f"s0_index{side}") for side in SIDES], raddr]
        index += [[Signal(IW, name=f"s{k}_index{side}") for side in SIDES]
                  for k in range(2, S + 1)]
        with m.If(advance):
            m.d.sync += [valid[0].eq(accept), cmd[0].eq(self.cmd.payload)]
            for k in range(1, S + 1):
                m.d.sync += [valid[k].eq(valid[k - 1]), cmd[k].eq(cmd[k - 1])]
            for side in SIDES:
                m.d.sync += index[0][side].eq(h3_hash(cfg, self.cmd.payload.key, side))
                for k in range(1, S + 1):
                    m.d.sync += index[k][side].eq(index[k - 1][side])

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

        # ---- forwarding flags, registered one stage before their use: the command d slots
        # ahead writes the same bucket (``near``) / has the same key (``same``)
        def flags(k, d):
            return ([Signal(name=f"s{k}_near{d}_{side}") for side in SIDES],
                    Signal(name=f"s{k}_same{d}"))
        near5, same5 = flags(2, 5)
        near4, same4 = flags(2, 4)
        near3, same3 = flags(3, 3)
        near2, same2 = flags(4, 2)
        # the command ahead (deciding when this one enters stage 5) is live and of the same key
        same1 = Signal(name="s5_same1")
        # which ways the decision writes, by op, decoded a stage ahead: the hit way (REMOVE,
        # LEARN) or the new one (ADD, LEARN); ``f_*`` for the next command's free ways (the
        # way a REMOVE frees, the way an insert fills), only on a side where it has the same
        # bucket, so that the decision's loop through the free ways starts and ends at
        # registers
        w_hit_ok, w_ins_ok = Signal(name="s5_w_hit_ok"), Signal(name="s5_w_ins_ok")
        # the same flags ANDed with ``advance`` (registered from ``advance_next``), and
        # ``we_hit`` forced during the reset sweep (with every way's ``s5_hit``): the ways
        # written are then the block RAMs' write enables themselves, no LUT after them on the
        # decision's path; the flags above hold the stage-5 command's through a stall
        we_hit, we_ins = Signal(name="s5_we_hit", init=1), Signal(name="s5_we_ins")
        f_rem_ok = [Signal(name=f"s5_f_rem_ok{side}") for side in SIDES]
        f_ins_ok = [Signal(name=f"s5_f_ins_ok{side}") for side in SIDES]
        with m.If(advance):
            for side in SIDES:
                m.d.sync += [near5[side].eq(index[1][side] == h1["index"][side]),
                             near4[side].eq(index[1][side] == index[5][side]),
                             near3[side].eq(index[2][side] == index[5][side]),
                             near2[side].eq(index[3][side] == index[5][side]),
                             ]
        with m.If(advance):
            op4 = cmd[4].op
            hit_ok = valid[4] & ((op4 == HtOp.REMOVE) | (op4 == HtOp.LEARN))
            ins_ok = valid[4] & ((op4 == HtOp.ADD) | (op4 == HtOp.LEARN))
            m.d.sync += [w_hit_ok.eq(hit_ok), w_ins_ok.eq(ins_ok)]
        m.d.sync += [we_hit.eq((Mux(advance, hit_ok, w_hit_ok) & advance_next) | sweep),
                     we_ins.eq(Mux(advance, ins_ok, w_ins_ok) & advance_next)]
        with m.If(advance):
            for side in SIDES:
                behind = index[3][side] == index[4][side]
                m.d.sync += [f_rem_ok[side].eq(valid[4] & (op4 == HtOp.REMOVE) & behind),
                             f_ins_ok[side].eq(ins_ok & behind)]
        # key equality in two steps: per byte (registered), then the AND of the bytes, so a
        # wide compare is two short trees (the pair keeps its distance as it moves on)
        def bytes_equal(a, b):
            return Cat(*[a[i:i + 8] == b[i:i + 8] for i in range(0, cfg.key_width, 8)])
        nb = -(-cfg.key_width // 8)
        eq5, eq4 = Signal(nb, name="s1_eq5"), Signal(nb, name="s1_eq4")
        eq3, eq2 = Signal(nb, name="s2_eq3"), Signal(nb, name="s3_eq2")
        eq1 = Signal(nb, name="s4_eq1")
        with m.If(advance):
            key = cmd[0].key
            m.d.sync += [eq5.eq(bytes_equal(key, cmd[5].key)), eq4.eq(bytes_equal(key, cmd[4].key)),
                         eq3.eq(bytes_equal(cmd[1].key, cmd[4].key)),
                         eq2.eq(bytes_equal(cmd[2].key, cmd[4].key)),
                         eq1.eq(bytes_equal(cmd[3].key, cmd[4].key))]
            m.d.sync += [same5.eq(eq5.all()), same4.eq(eq4.all()), same3.eq(eq3.all()),
                         same2.eq(eq2.all()), same1.eq(eq1.all() & valid[5])]

        # ---- stage 2 -> 3 (the block RAMs reading): the overlay of the writes by the commands
        # 5 and 4 ahead (h2, h1: the read met h2's write at the same edge, missed h1's).
        # Per way: overwritten (ov), by a valid entry (ovv), of this command's key (ovh); the
        # value of the latest write of this key (skv): a way overwritten with this key holds it.
        def overlay(k):
            return ([Signal(W, name=f"s{k}_ov{side}") for side in SIDES],
                    [Signal(W, name=f"s{k}_ovv{side}") for side in SIDES],
                    [Signal(W, name=f"s{k}_ovh{side}") for side in SIDES],
                    Signal(VW, name=f"s{k}_skv", reset_less=True))
        ov3, ovv3, ovh3, skv3 = overlay(3)
        with m.If(advance):
            for side in SIDES:
                sel1 = Mux(near4[side], h1["we"][side], 0)
                sel2 = Mux(near5[side], h2["we"][side], 0)
                m.d.sync += [
                    ov3[side].eq(sel1 | sel2),
                    ovv3[side].eq(Mux(h1["valid"], sel1, 0) | Mux(h2["valid"], sel2 & ~sel1, 0)),
                    ovh3[side].eq(Mux(h1["valid"] & same4, sel1, 0)
                                  | Mux(h2["valid"] & same5, sel2 & ~sel1, 0)),
                ]
            m.d.sync += skv3.eq(Mux(same4 & any_we(h1), h1["value"], h2["value"]))

        # a later write of a way replaces the overlay: h1 is the write by the command
        # ``d`` ahead (``near``/``same`` its flags) at the stage that calls this
        def merge(near, same, ov, ovv, ovh, side):
            sel = Mux(near[side], h1["we"][side], 0)
            return (sel | ov[side], Mux(h1["valid"], sel, 0) | (ovv[side] & ~sel),
                    Mux(h1["valid"] & same, sel, 0) | (ovh[side] & ~sel))

        # ---- stage 3 -> 4: the words leave the block RAMs' output registers: nothing but the
        # key compares of ``CHUNK`` bits (one LUT each) before a register; the write by the
        # command 3 ahead (h1) joins the overlay
        ch = self.CHUNK
        nc = -(-cfg.key_width // ch)
        ov4, ovv4, ovh4, skv4 = overlay(4)
        s4_eq = [[Signal(nc, name=f"s4_eq{side}_{w}") for w in range(W)] for side in SIDES]
        s4_valid = [Signal(W, name=f"s4_evalid{side}") for side in SIDES]
        s4_raw = [[Signal(VW, name=f"s4_raw{side}_{w}", reset_less=True) for w in range(W)]
                  for side in SIDES]
        with m.If(advance):
            for side in SIDES:
                o, o_valid, o_hit = merge(near3, same3, ov3, ovv3, ovh3, side)
                m.d.sync += [ov4[side].eq(o), ovv4[side].eq(o_valid), ovh4[side].eq(o_hit)]
                for w in range(W):
                    e, k3 = rams[side][w].r_data, cmd[3].key
                    m.d.sync += [
                        s4_eq[side][w].eq(Cat(*[e.key[i:i + ch] == k3[i:i + ch]
                                                for i in range(0, cfg.key_width, ch)])),
                        s4_valid[side][w].eq(e.valid),
                        s4_raw[side][w].eq(e.value),
                    ]
            m.d.sync += skv4.eq(Mux(same3 & any_we(h1), h1["value"], skv3))

        # ---- stage 4 -> 5: the AND of the key compares; the write by the command 2 ahead (h1)
        # (all ways during the reset sweep: the sweep writes them through ``we_hit``)
        s5_hit = [Signal(W, name=f"s5_hit{side}", init=(1 << W) - 1) for side in SIDES]
        s5_used = [Signal(W, name=f"s5_used{side}") for side in SIDES]
        s5_ov = [Signal(W, name=f"s5_ov{side}") for side in SIDES]     # value: skv, not raw
        s5_raw = [[Signal(VW, name=f"s5_raw{side}_{w}", reset_less=True) for w in range(W)]
                  for side in SIDES]
        s5_skv = Signal(VW, name="s5_skv", reset_less=True)
        with m.If(advance):
            for side in SIDES:
                o, o_valid, o_hit = merge(near2, same2, ov4, ovv4, ovh4, side)
                for w in range(W):
                    found = s4_valid[side][w] & s4_eq[side][w].all()
                    m.d.sync += [
                        s5_hit[side][w].eq(Mux(o[w], o_hit[w], found) | sweep),
                        s5_used[side][w].eq(Mux(o[w], o_valid[w], s4_valid[side][w])),
                        s5_raw[side][w].eq(s4_raw[side][w]),
                    ]
                m.d.sync += s5_ov[side].eq(o)
            m.d.sync += s5_skv.eq(Mux(same2 & any_we(h1), h1["value"], skv4))

        # ---- stage 5: the write by the command 1 ahead (h1), then pick a side and a way -------
        # Its key (``kin``) says where this command's key is if the command ahead had the same
        # key: present or not, which way, which value after it (registered with its decision).
        # A command of another key changes no hit (it writes a free way or its own key's way),
        # only the free ways.
        k_present = Signal()
        k_way = [Signal(W, name=f"k_way{side}") for side in SIDES]
        # its key's value after it: its own (``k_new``) or the one it found (``k_old``), each
        # valid under a flag (0 if the key is absent after it), so that no wide mux waits for
        # ``present``
        k_new, k_old = Signal(name="k_new"), Signal(name="k_old")
        k_new_value = Signal(VW, name="k_new_value", reset_less=True)
        k_old_value = Signal(VW, name="k_old_value", reset_less=True)
        # the command ahead's change to this command's buckets: the way it freed (a REMOVE) or
        # filled (an insert), one-hot, at most one of them on one side (``f_clr``, ``f_set``);
        # and the same change as flags for the free-way counts, so that the side with more free
        # ways is a select among three comparisons made from registers (``f_more``: it filled
        # a way on side 0 or freed one on side 1, the difference of the counts grew by one;
        # ``f_less``: the reverse; ``f_fill`` / ``f_free``: it filled / freed a way)
        f_clr = [Signal(W, name=f"f_clr{side}") for side in SIDES]
        f_set = [Signal(W, name=f"f_set{side}") for side in SIDES]
        f_more, f_less = Signal(name="f_more"), Signal(name="f_less")
        f_fill, f_free = Signal(name="f_fill"), Signal(name="f_free")
        kin = same1
        hits, vals = [], []
        for side in SIDES:
            hit = Signal(W, name=f"hit{side}")
            m.d.comb += hit.eq(Mux(kin, k_way[side], s5_hit[side]))
            hits.append(hit)
            vals.append([Mux(s5_ov[side][w], s5_skv, s5_raw[side][w]) for w in range(W)])
        s5 = cmd[5]
        present = Signal()
        m.d.comb += present.eq(Mux(kin, k_present, s5_hit[0].any() | s5_hit[1].any()))
        # the value found (0 if absent: no hit, or the flags of the command ahead)
        old_value = Signal(VW)
        m.d.comb += old_value.eq(Mux(
            kin, Mux(k_new, k_new_value, 0) | Mux(k_old, k_old_value, 0),
            reduce(lambda a, b: a | b, [Mux(s5_hit[side][w], vals[side][w], 0)
                                        for side in SIDES for w in range(W)])))
        # The free ways before the command ahead's change (registers) and after it.  The
        # command ahead saw these very buckets (the same writes before it), so the way it
        # filled was free here and the way it freed was used: its change moves one count by
        # one, and the side with more free ways after it (side 0 on a tie) is one of three
        # comparisons of the counts before it, picked by the registered flags.
        free0 = [~s5_used[side] for side in SIDES]
        free = [(free0[side] & ~f_set[side]) | f_clr[side] for side in SIDES]
        more_1 = Signal(name="more_1")                 # n1 > n0
        more_0 = Signal(name="more_0")                 # n1 >= n0 (n1 > n0 - 1)
        more_2 = Signal(name="more_2")                 # n1 >= n0 + 2 (n1 - 1 > n0)
        room_1, room_2 = Signal(name="room_1"), Signal(name="room_2")  # >= 1, >= 2 free
        if 2 * W <= 8:      # truth tables of the 2 x ways free bits: LUTs, no carry chains
            def table(f):
                return Array(Const(f(bin(i & ((1 << W) - 1)).count("1"), bin(i >> W).count("1")))
                             for i in range(1 << (2 * W)))[Cat(free0[0], free0[1])]
        else:
            n0, n1 = popcount(free0[0]), popcount(free0[1])

            def table(f):
                return f(n0, n1)
        m.d.comb += [more_1.eq(table(lambda a, b: b > a)), more_0.eq(table(lambda a, b: b >= a)),
                     more_2.eq(table(lambda a, b: b >= a + 2)),
                     room_1.eq(table(lambda a, b: a + b >= 1)),
                     room_2.eq(table(lambda a, b: a + b >= 2))]
        new_side = Signal()                            # more free ways on side 1 (0 on a tie)
        m.d.comb += new_side.eq(Mux(f_more, more_0, Mux(f_less, more_2, more_1)))
        room = Signal()
        m.d.comb += room.eq(f_free | Mux(f_fill, room_2, room_1))
        lowest = [Cat(*[free[side][w] & ~free[side][:w].any() for w in range(W)])
                  for side in SIDES]                   # the lowest free way, one-hot

        is_remove, is_lookup = s5.op == HtOp.REMOVE, s5.op == HtOp.LOOKUP
        is_add, is_learn = s5.op == HtOp.ADD, s5.op == HtOp.LEARN
        status = Signal(HtStatus)
        with m.Switch(s5.op):
            with m.Case(HtOp.LOOKUP, HtOp.REMOVE):
                m.d.comb += status.eq(Mux(present, HtStatus.OK, HtStatus.NOT_FOUND))
            with m.Case(HtOp.ADD, HtOp.LEARN):
                with m.If(present):
                    m.d.comb += status.eq(Mux(is_add, HtStatus.DUPLICATE, HtStatus.REFRESHED))
                with m.Elif(room):
                    m.d.comb += status.eq(HtStatus.OK)
                with m.Else():
                    m.d.comb += status.eq(HtStatus.FULL)
        # the way written (one-hot): the key's way (REMOVE, LEARN of a present key; none if
        # absent), else the new key's (ADD, LEARN of an absent key; none if both are full:
        # then the chosen side has no free way)
        on_side = [new_side if side else ~new_side for side in SIDES]
        insert = [Mux(on_side[side], lowest[side], 0) for side in SIDES]

        def ways(side, hit_ok, ins_ok):
            return Mux(hit_ok, hits[side], 0) | Mux(ins_ok & ~present, insert[side], 0)
        write = [ways(side, we_hit, we_ins) for side in SIDES]    # 0 unless ``advance``
        # this command's change to the next command's buckets (see ``f_set`` above)
        filled = [f_ins_ok[side] & ~present & room & on_side[side] for side in SIDES]
        freed = [f_rem_ok[side] & hits[side].any() for side in SIDES]

        complete = valid[5] & advance                  # stage 5's command finishes this edge
        m.d.sync += h1_pending.eq(advance)
        with m.If(advance):
            m.d.sync += [h1["we"][side].eq(write[side]) for side in SIDES]
            m.d.sync += [f_clr[side].eq(Mux(f_rem_ok[side], hits[side], 0)) for side in SIDES]
            m.d.sync += [f_set[side].eq(Mux(f_ins_ok[side] & ~present, insert[side], 0))
                         for side in SIDES]
            m.d.sync += [f_more.eq(filled[0] | freed[1]), f_less.eq(filled[1] | freed[0]),
                         f_fill.eq(filled[0] | filled[1]), f_free.eq(freed[0] | freed[1])]
            # a written entry is valid unless removed: by op alone (no write, no matter)
            m.d.sync += [h1["valid"].eq(is_add | is_learn), h1["key"].eq(s5.key),
                         h1["value"].eq(s5.value)]
            m.d.sync += [h1["index"][side].eq(index[5][side]) for side in SIDES]
            m.d.sync += [h2["we"][side].eq(h1["we"][side]) for side in SIDES]
            # where this command's key is after it (for the next command, if of the same key)
            m.d.sync += [k_present.eq(~is_remove & (present | (~is_lookup & room))),
                         k_new.eq((is_learn & (present | room)) | (is_add & ~present & room)),
                         k_old.eq((is_lookup | is_add) & present),
                         k_new_value.eq(s5.value), k_old_value.eq(old_value)]
            m.d.sync += [k_way[side].eq(ways(side, ~is_remove, is_add | is_learn))
                         for side in SIDES]
            m.d.sync += [h2["valid"].eq(h1["valid"]), h2["value"].eq(h1["value"])]
            # the reset sweep: every way of bucket clear_idx (``write``: all ways), invalid
            with m.If(clearing):
                m.d.sync += [h1["valid"].eq(0)]
                m.d.sync += [h1["index"][side].eq(clear_idx) for side in SIDES]

        # ---- the block RAM writes: h1 at the edge after its decision (the reset sweep goes
        # through h1 too), straight from flip-flops: the write address and data reach every
        # block RAM of a side, no logic may sit in that route
        ram_we = [Signal(W, name=f"ram_we{side}") for side in SIDES]   # h1's ways, once
        for side in SIDES:
            m.d.sync += ram_we[side].eq(write[side])
            for w in range(W):
                # the record's registers are the write port itself (wired through the Bram's
                # own port signals they would be left as unused aliases in the Verilog)
                ram = rams[side][w]
                ram.w_addr = h1["index"][side]
                ram.w_data = Cat(h1["valid"], h1["key"], h1["value"])
                ram.w_en = ram_we[side][w]
                ram.build(m, platform)

        # ---- synchronous updates ---------------------------------------------------------------
        with m.If(clearing):
            m.d.sync += clear_idx.eq(clear_idx + 1)
        m.d.sync += clearing.eq(sweep)
        with m.If(clear_idx == cfg.side_buckets - 2):   # (clearing's last cycle: the next index)
            m.d.sync += sweep.eq(0)
        # the result: into ``out`` if it is free this edge, else into the skid register, which
        # stops the pipeline from the next cycle on until ``out`` takes it (one result per
        # clock while ``result.ready`` stays high; the skid fills only when it drops)
        result = Signal(ht_result_layout(cfg))
        m.d.comb += [result.op.eq(s5.op), result.status.eq(status), result.key.eq(s5.key),
                     result.value.eq(old_value), result.tag.eq(s5.tag)]
        skid = Signal(ht_result_layout(cfg), name="skid", reset_less=True)
        out_free = ~out.valid | out.ready
        m.d.comb += advance_next.eq(~Mux(skid_valid, ~out.ready, valid[5] & ~out_free))
        with m.If(out.ready):
            m.d.sync += out.valid.eq(0)
        counted = Signal()                             # ``out`` holds a new result
        m.d.sync += counted.eq(Mux(skid_valid, out.ready, complete & out_free))
        with m.If(skid_valid):
            with m.If(out.ready):
                m.d.sync += [out.valid.eq(1), out.payload.eq(skid), skid_valid.eq(0)]
        with m.Elif(complete):
            with m.If(out_free):
                m.d.sync += [out.valid.eq(1), out.payload.eq(result)]
            with m.Else():
                m.d.sync += [skid.eq(result), skid_valid.eq(1)]
        # occupancy: the entries in the block RAMs (``occ``) and the record being written (its
        # +1 / -1 registered with it, so that no counter's enable waits for the decision)
        occ = Signal(range(cfg.capacity + 1))
        occ_inc, occ_dec = Signal(), Signal()
        with m.If(advance):
            m.d.sync += [occ_inc.eq(valid[5] & (is_add | is_learn) & ~present & room),
                         occ_dec.eq(valid[5] & is_remove & present)]
        n = len(occ)                                   # (never wraps: 0..capacity)
        m.d.comb += self.occupancy.eq(Mux(h1_pending & occ_inc, (occ + 1)[:n],
                                          Mux(h1_pending & occ_dec, (occ - 1)[:n], occ)))
        with m.If(h1_pending):                         # the write lands
            m.d.sync += occ.eq(self.occupancy)
        # the statistics count the registered result, the cycle after it (off the decision);
        # saturating, with the "all ones" state a register (no compare before the increment)
        res = out.payload
        events = [(self.lookups, res.op == HtOp.LOOKUP),
                  (self.misses, (res.op == HtOp.LOOKUP) & (res.status == HtStatus.NOT_FOUND)),
                  (self.full, res.status == HtStatus.FULL)]
        for counter, event in events:
            at_max = Signal(name=f"{counter.name}_at_max")
            with m.If(counted & event & ~at_max):
                m.d.sync += [counter.eq(counter + 1),
                             at_max.eq(counter == (1 << len(counter)) - 2)]
        # for the formal harness: the write not yet in the block RAMs
        self._pending = (h1_pending, h1)
        self._advance = advance
        return m
