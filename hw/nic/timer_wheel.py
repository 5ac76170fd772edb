"""Timer service: a timing wheel of one-cycle slots with an occupancy bitmap in block RAM.

The exact contract (insert rule, pop rule, latencies, catch-up, parking, statistics) is the
docstring of :mod:`sim.models.timer_wheel`; this component matches
:class:`~sim.models.timer_wheel.TimerWheelModel` on every output, every cycle.

Parameters: :class:`~hw.nic.timer_wheel_config.TimerWheelConfig` (S slots, horizon H, B-bit
bitmap words, flow/gen widths, W = ``time_width``).

Ports
- ``now`` (in, W): the engine's free-running cycle counter (0 in the first cycle after reset).
- ``ins`` (stream in, always ready): {flow, gen, deadline}; one insert per cycle.
- ``pop`` (stream out): {flow, gen, slot}; the payload is held while ``valid & ~ready``.
- ``occupancy``, ``max_occupancy`` (``bits_for(S)``), ``max_displacement`` (log2 S),
  ``overflow`` (sticky), ``overflow_count`` (16 bits, saturating).

Latency and throughput: one insert and one pop per cycle; an insert accepted at ``now == n``
is poppable (``pop.valid``) from ``now == n + L`` (``config.insert_latency``, L = 4 by default:
insert stage (target), search stage (bitmap reads, next non-full words), decision stage (bitmap
and slot RAM write), pop stage (slot RAM read into the output register); L = 5 adds a read
stage between the search and the decision that registers the bitmap RAM's outputs; L = 6 is
L = 5 with the pop buffer: the slot RAM is a :class:`hw.lib.bram.Bram` (read latency 2, the
DP16KD's output register on the ECP5), the cursor issues the slots due by ``now + 2`` into
it, and its data goes to ``pop`` directly or through a 3-entry buffer; the cursor issues
only while the buffer has room for everything in flight, a decision from registers, so
``pop.ready`` no longer reaches the cursor in the cycle it is given).

Structure
- Slot RAM: S x (flow + gen), written by the decision stage, read by the pop stage.
- Bitmap RAM: S/B words of B bits, one write port (decision stage) and NC + 2 read ports (the
  target word, the NC candidate words, the cursor's look-ahead; NC = L - 2), so the memory is
  replicated NC + 2 times in block RAM.
- Per word, two flip-flops: ``nz`` (the RAM word is valid; 0 means "empty whatever the RAM
  holds", so reset needs no clearing sweep and the cursor empties a word by clearing one bit)
  and ``full`` (all B slots taken), the summary the search stage scans.
- The summary is two-level: the S/B words form G groups of K words (K = 2**ceil(log2(S/B)/2),
  :func:`summary_group_words`: K = 64, G = 32 at the default 2048 words), each group's ``nz``
  and ``full`` flags one K-bit register, and a G-bit second level "the group has a non-full
  word" (from the registered group lists, see below).  The search for the next NC non-full words
  after the target word w0 (in group g0, cyclically, w0 itself last) takes, in this order:
  the non-full words above w0 in g0 (a first-NC priority encoder over K bits), then the
  first NC groups after g0 (cyclically) with a non-full word (a first-NC encoder over the G
  second-level bits; the j-th of them contributes its first NC - j non-full words: a G:1
  multiplexer of the groups' lists, each group's first NC + 1 non-full words encoded a cycle
  ahead into registers, the cursor's group a second time with its word non-full, selected
  if the cursor left it, less the word the last decision filled), then the words at or
  below w0 in g0; the first NC of that sequence are the candidates.  g0's own flags are
  registered by the insert stage (the target is known there) and corrected by the cursor's
  leave of that cycle and the last decision, as the lists are.  NC is one more than the
  decisions that can fill a candidate between the search and the decision (one at L = 4,
  two at L = 5): the decision takes the first candidate that is still non-full.  Updates
  are one-hot writes into at most two group registers per cycle (the cursor's leave and the
  decision).  A decision reaches the flags one cycle after it is made (from registers: its
  word's one-hot and "it filled the word", decoded before them), so the flags' update is not
  on the decision's path; until then every reader ORs the last decision in (the search's
  view of ``full``: one LUT per flag; ``nz`` where it is sampled), so what the search sees
  is exactly what it saw with the update in the decision's cycle: same candidates, same
  cycle behaviour.  The cursor's leave reaches them one cycle late too (from registers:
  ``leave_r``, the cursor's last word, its group and word one-hot), and every reader clears
  that word until then (the search's view of ``full``, ``nz`` where it is sampled, the
  search's own group, the group lists), so ``leave`` reaches only the cursor's own
  registers; the flags take the leave's clear before the decision's set, as they did.  When
  the cursor leaves the word of the last cycle's decision (its one slot issued at once), the
  leave's clear wins: the word is empty.  The flags themselves
  stay 2 x S/B flip-flops (with a one-LUT update each),
  but the logic around them is O(G + K) statements of K or G bits, and every encoder node is
  a named signal (an expression used twice would be emitted twice: nested trees of plain
  expressions grow exponentially in the Verilog), so the exported Verilog is dominated by the
  memories' initializers (S + S/B lines).
- The cursor owns its word: its bits live in a register (pops clear them there; an insert
  into that word sets its bit there and in RAM).  The RAM copy keeps the popped bits until the
  cursor leaves the word (the word is then empty and ``nz`` is cleared), but those bits are at
  times <= now + 1, below every insert's target (>= now + 2), so the search, which only looks
  at or after its target, reads the RAM copy for the cursor's word too.  The next two words
  are registers too (``p1``, ``p2``) and the RAM read issued every cycle returns the third
  (the one the cursor will need in p2 if it leaves), so no bitmap read feeds the cursor's
  one-cycle loop; the cursor moves one word (B slots) per cycle through empty words.  Which
  offsets are due is a prefix mask computed from the cursor's lag (a register),
  and the popped bit is cleared with ``x & (x - 1)`` (a carry chain), so the loop is: the
  cursor's bits -> "any due bit" and the lowest set bit -> the next bits and the leave.

Hazards, all forwarded (never stalled): the decision stage forwards its own previous write
(consecutive inserts into one word; at L = 5 the read stage forwards the decision made while
it reads, the decision stage the one made a cycle before); pops clear bits only in the
cursor's register (no RAM write, so pops and inserts never compete for the write port); the
search stage's candidates may be filled by the decisions between the search and the decision,
hence NC candidates (``nz`` of the candidates is read a cycle after the search, off the
search's path: see the comment there); the cursor's words (its own and the two look-ahead
registers) take the last decision (``a_*``) where they are used; so do the ``nz`` / ``full``
flags (updated one cycle after the decision, see Structure).  No insert lands in a word
the cursor is leaving (its last slot is <= now + 1).
"""

from __future__ import annotations

from amaranth import Array, Cat, Const, Module, Mux, Signal
from amaranth.lib import data, memory, stream, wiring
from amaranth.lib.wiring import In, Out

from ..lib.arith import saturating_inc, umax
from ..lib.bram import Bram
from .timer_wheel_config import INSERT_LATENCY, POP_BUFFER, TimerWheelConfig

__all__ = ["TimerWheel", "TimerWheelConfig", "summary_group_words", "timer_service_members",
           "INSERT_LATENCY",
           "OVF_COUNT_WIDTH"]

OVF_COUNT_WIDTH = 16


def _sig(m, value, name):
    """``value`` as a combinational signal.  Every node of the search trees below is one: a
    node's inputs are used more than once, and an expression (not a signal) used twice is
    emitted twice in the Verilog, so nested trees of plain expressions grow exponentially
    with their depth.  The signals are anonymous (``$N`` in the Verilog, removed when a node
    folds to a constant or an alias); ``name`` documents the node in the source only."""
    if len(value) == 0:
        return value
    sig = Signal(len(value), name="")
    m.d.comb += sig.eq(value)
    return sig


def _first_set(m, bits: list, name: str):
    """(any, index) of the lowest set bit of ``bits`` (a list of 1-bit values), as a balanced
    tree whose index grows one bit per level."""
    leaves = _sig(m, Cat(*bits), f"{name}_in")
    nodes = [(leaves[i], Const(0, 0)) for i in range(len(bits))]
    level = 0
    while len(nodes) > 1:
        nxt = []
        for i in range(0, len(nodes), 2):
            (la, li), (ra, ri) = nodes[i], nodes[i + 1]
            n = f"{name}_l{level}n{i // 2}"
            idx = Cat(Mux(la, li, ri), ~la) if len(li) else ~la
            nxt.append((_sig(m, la | ra, f"{n}_any"), _sig(m, idx, f"{n}_i")))
        nodes = nxt
        level += 1
    return nodes[0]


def _one_clear(m, x, name: str):
    """``x`` has exactly one clear bit: a balanced tree of (any, several) over ``~x``."""
    nodes = [(~x[i], Const(0, 1)) for i in range(len(x))]
    level = 0
    while len(nodes) > 1:
        nxt = []
        for i in range(0, len(nodes) - 1, 2):
            (la, lm), (ra, rm) = nodes[i], nodes[i + 1]
            n = f"{name}_l{level}n{i // 2}"
            nxt.append((_sig(m, la | ra, f"{n}_any"), _sig(m, lm | rm | (la & ra), f"{n}_m")))
        if len(nodes) % 2:
            nxt.append(nodes[-1])
        nodes = nxt
        level += 1
    any_, many = nodes[0]
    return _sig(m, any_ & ~many, f"{name}_one")


def _first_n(m, bits: list, n: int, name: str):
    """The n lowest set bits of ``bits``: a list of n (ok, index), ok monotone (ok of the
    k-th implies ok of the (k-1)-th); a balanced tree of :func:`_merge_n`."""
    leaves = _sig(m, Cat(*bits), f"{name}_in")
    nodes = [[(leaves[i], Const(0, 0))] + [(Const(0, 1), Const(0, 0))] * (n - 1)
             for i in range(len(bits))]
    level = 0
    while len(nodes) > 1:
        nxt = []
        for i in range(0, len(nodes), 2):
            lt = [(ok, Cat(ix, Const(0, 1))) for ok, ix in nodes[i]]
            rt = [(ok, Cat(ix, Const(1, 1))) for ok, ix in nodes[i + 1]]
            nxt.append(_merge_n(m, lt, rt, f"{name}_l{level}n{i // 2}"))
        nodes = nxt
        level += 1
    return nodes[0]


def _merge_n(m, l, r, name):
    """Two candidate lists (n (ok, index) each, ok monotone), ``l`` before ``r`` in the search
    order: the first n of their concatenation.  If ``l`` has j < k + 1 candidates, the k-th
    of the result is ``r``'s (k - j)-th."""
    out = []
    for k in range(len(l)):
        ok, ix = r[k]
        for j in range(k):
            ok = Mux(l[j][0], r[k - 1 - j][0], ok)
            ix = Mux(l[j][0], r[k - 1 - j][1], ix)
        ok = Mux(l[k][0], 1, ok)
        ix = Mux(l[k][0], l[k][1], ix)
        out.append((_sig(m, ok, f"{name}_ok{k}"), _sig(m, ix, f"{name}_i{k}")))
    return out


def _lt(x, c):
    """``x < c`` for a constant ``c``; a constant where the compare is (no constant
    compares in the Verilog)."""
    return Const(0, 1) if c <= 0 else Const(1, 1) if c >= 1 << len(x) else x < c


def _gt(x, c):
    """``x > c`` for a constant ``c`` (see :func:`_lt`)."""
    return Const(0, 1) if c >= (1 << len(x)) - 1 else Const(1, 1) if c < 0 else x > c


def _with_hi(cands, hi):
    """A candidate list of indices within a group, extended by the group number ``hi``."""
    return [(ok, Cat(ix, hi)) for ok, ix in cands]


def _le(a, b, width):
    """Wrap-safe a <= b on ``width``-bit stamps."""
    return ~(b - a)[width - 1]


def summary_group_words(n_words: int, group_words: int | None = None) -> int:
    """Words per group of the two-level summary (K): ``group_words`` if given (a power of two
    dividing ``n_words``, else :class:`ValueError`), by default 2**ceil(log2(n_words) / 2), so
    that the group (K words) and the second level (G = n_words / K groups) are both about
    sqrt(n_words) bits: K = 64, G = 32 at the default 2048 words."""
    if group_words is None:
        return 1 << ((max(1, n_words.bit_length() - 1) + 1) // 2)
    if group_words < 1 or group_words & (group_words - 1) or n_words % group_words:
        raise ValueError(f"group_words={group_words}: a power of two dividing {n_words} "
                         f"(the bitmap words)")
    return group_words


def timer_service_members(c) -> dict:
    """The ports every timer service has (the wheel's and the calendar's, so that the engine
    takes either): ``now``, ``ins`` {flow, gen, deadline}, ``pop`` {flow, gen, slot},
    ``occupancy`` and ``max_occupancy``; each service adds its own statistics."""
    ins = data.StructLayout({"flow": c.flow_bits, "gen": c.gen_bits, "deadline": c.time_width})
    pop = data.StructLayout({"flow": c.flow_bits, "gen": c.gen_bits, "slot": c.slot_bits})
    return {
        "now": In(c.time_width),
        "ins": In(stream.Signature(ins)),
        "pop": Out(stream.Signature(pop)),
        "occupancy": Out(c.occ_width),
        "max_occupancy": Out(c.occ_width),
    }


class TimerWheel(wiring.Component):
    """``group_words`` (K, see :func:`summary_group_words`) only changes the structure of
    the summary, never the behaviour."""

    def __init__(self, config: TimerWheelConfig, *, group_words: int | None = None):
        self.config = c = config
        self.group_words = summary_group_words(c.n_words, group_words)
        super().__init__({
            **timer_service_members(c),
            "max_displacement": Out(c.slot_bits),
            "overflow": Out(1),
            "overflow_count": Out(OVF_COUNT_WIDTH),
        })

    def elaborate(self, platform):
        c = self.config
        m = Module()
        W, B, S, NW = c.time_width, c.word_bits, c.slots, c.n_words
        ws, sb, wib = c.word_shift, c.slot_bits, c.word_index_bits
        ones = (1 << B) - 1
        now = self.now

        # -- storage -----------------------------------------------------------------------
        if c.pop_buffer:
            # read latency 2: the RAM's own output register (DP16KD OUTREG on the ECP5)
            slot_bram = Bram(c.entry_bits, S, name="slot_ram")
            slot_bram.build(m, platform)
        else:
            m.submodules.slot_ram = slot_ram = memory.Memory(
                shape=c.entry_bits, depth=S, init=[])
            s_wr = slot_ram.write_port()
            s_rd = slot_ram.read_port()
        m.submodules.bitmap = bitmap = memory.Memory(shape=B, depth=NW, init=[])
        b_wr = bitmap.write_port()
        NC = c.candidates
        b_rd0 = bitmap.read_port()
        b_rde = [bitmap.read_port() for _ in range(NC)]
        b_rdc = bitmap.read_port()
        # summary, two levels: G groups of K words; per word nz (valid in RAM, else empty)
        # and full (all B slots taken), one K-bit register per group and flag; per group the
        # second level "has a non-full word" (combinational, an OR of K bits).  The flags
        # take a decision one cycle after it (from the a_* registers below), so they lack the
        # last decision: every reader ORs it in (fullw_s, a_at).  They take the cursor's
        # leave one cycle after it too (from registers: leave_r, and the cursor's word of
        # last cycle, its group and its word within the group, one-hot each, decoded from
        # cw without the leave), so ``leave`` reaches no flag and a single register besides
        # the cursor's own: every reader clears the left word (fullw_s, nz_at)
        K = self.group_words
        lk = K.bit_length() - 1
        G = NW // K
        nzw = [Signal(K, name=f"nz_g{g}") for g in range(G)]
        fullw = [Signal(K, name=f"full_g{g}") for g in range(G)]
        nz = Cat(*nzw)              # flat views (bit w = word w), read at single bits only
        lv_w = Signal(wib, name="lv_word")  # the cursor's word of last cycle (left if leave_r)
        lv_hi = Signal(G, name="lv_hi")     # its group, one-hot
        lv_lo = Signal(K, name="lv_lo")     # its word within the group, one-hot
        leave_r = Signal()          # the cursor left last cycle (the read was of cw + 3 then)

        def lv_clr(g):
            """The last leave's clear within group ``g`` (K bits)."""
            return Mux(leave_r & lv_hi[g], lv_lo, 0)

        # -- cursor state ------------------------------------------------------------------
        wbt = Signal(W)             # time of the cursor word's first slot
        cw = wbt[ws:sb]
        cur_bits = Signal(B)        # the cursor word's bits, but the last decision's (a_*)
        # the next three words, so that no bitmap RAM read feeds the cursor's loop: p1 and p2
        # are registers holding words cw + 1 and cw + 2 (every decision up to two cycles ago
        # in them; the last one, a_*, is ORed in where they are used); the RAM read issued
        # last cycle returns word cw + 3 (r_data, valid if r_nz), taken into p2 when the
        # cursor leaves its word.  So the cursor moves one word per cycle with the RAM's
        # output going only into a register.
        p1 = Signal(B)
        p2 = Signal(B)
        nz3 = Signal()              # nz of words cw + 3 and cw + 4, sampled with the read
        nz4 = Signal()

        def nz_at(w):
            """``nz`` of word ``w`` but the last leave's clear (the flags take it a cycle late);
            the last decision is not in it (see a_at)."""
            return nz.bit_select(w, 1) & ~(leave_r & (lv_w == w))

        # decision stage of the previous cycle (forwarding source)
        a_valid = Signal()
        a_word = Signal(wib)
        a_data = Signal(B)
        a_bit = Signal(ws)
        # its summary update, applied at the next clock edge (if a_valid): the decided
        # word's group and word within the group (one-hot each), and "the decision filled
        # its word" (a_full, 0 without a decision); decoded before the registers, so the
        # search's view of the flags (fullw | this decision) costs one LUT per flag
        a_hi = Signal(G)
        a_lo = Signal(K)
        a_full = Signal()

        def a_at(word):
            """The last decision was in ``word`` (``nz`` lacks it until the next edge)."""
            hit = Signal(name="")
            m.d.comb += hit.eq(a_valid & (a_word == word))
            return hit

        def a_oh(word):
            """The last decision's bit, if it was in ``word``."""
            hit = Signal(name="")
            m.d.comb += hit.eq(a_valid & (a_word == word))
            return Mux(hit, Const(1, B) << a_bit, 0)

        # -- pop stage (cursor) ------------------------------------------------------------
        cw1 = Signal(wib, name="")
        cw2 = Signal(wib, name="")
        cw3 = Signal(wib, name="")
        cw4 = Signal(wib, name="")
        m.d.comb += [cw1.eq(cw + 1), cw2.eq(cw + 2), cw3.eq(cw + 3), cw4.eq(cw + 4)]
        bits_eff = Signal(B)
        m.d.comb += bits_eff.eq(cur_bits | a_oh(cw))
        p_any, p_off = _first_set(m, [bits_eff[i] for i in range(B)], "pop_ffs")
        p_off_s = Signal(ws, name="")
        m.d.comb += p_off_s.eq(p_off)
        # the cursor's lag now + LA - wbt: never negative (the cursor stays at or before now
        # + LA, the look-ahead: 1, or 2 with the pop buffer), so the compares are unsigned and
        # exact for any lag below 2**W - B.  A register: now is 0 after reset and moves by 1
        # per cycle (the port's contract), wbt by B when the cursor leaves, so the lag moves by
        # 1 - B x leave (both sums from registers, selected by leave) and the cursor's loop
        # starts at registers, not at a subtraction
        lag1 = Signal(W, init=c.lookahead, name="cur_lag")
        # offsets whose time has come (a prefix mask from registers only, off the loop): the
        # lowest set bit is due iff a set bit is within the mask
        lag_hi = Signal(name="")
        m.d.comb += lag_hi.eq(lag1[ws:] != 0)
        due_mask = Signal(B, name="")
        # (offset 0 is due at any lag: no compare, which would be constant)
        m.d.comb += due_mask.eq(Cat(*[(lag_hi | (lag1[:ws] >= i)) if i else Const(1)
                                      for i in range(B)]))
        if c.pop_buffer:
            # the pop buffer (POP_BUFFER entries, registers) and the pops in flight through the
            # slot RAM (issued one and two cycles ago): the cursor issues only if all of them
            # and this one fit, a decision from registers (pop.ready drains the buffer only)
            pb_lvl = Signal(range(POP_BUFFER + 1))
            iss1, iss2 = Signal(), Signal()
            advance = Signal()
            m.d.comb += advance.eq(pb_lvl + iss1 + iss2 <= POP_BUFFER - 1)
        else:
            advance = ~self.pop.valid | self.pop.ready
        p_due = Signal(name="")
        m.d.comb += p_due.eq((bits_eff & due_mask) != 0)
        issue = Signal()
        m.d.comb += issue.eq(p_due & advance)
        pop_slot_next = Signal(sb, name="")
        m.d.comb += pop_slot_next.eq(Cat(p_off_s, cw))
        # bits_eff without its lowest set bit (the one popped): a carry chain, not a decoder
        low_clr = Signal(B, name="")
        m.d.comb += low_clr.eq(bits_eff & (bits_eff - 1))
        bits_after = Signal(B, name="")
        m.d.comb += bits_after.eq(Mux(issue, low_clr, bits_eff))
        lag_end = Signal(name="")
        m.d.comb += lag_end.eq(lag1 >= B - 1)
        leave = Signal()
        m.d.comb += leave.eq(lag_end & ((bits_eff == 0) | (issue & (low_clr == 0))))

        if c.pop_buffer:
            # issued at c: the slot RAM's data and the slot number arrive at c + 2 (iss2); on
            # pop directly if the buffer is empty, else (or if not taken) into the buffer
            slot1, slot2 = Signal(sb), Signal(sb)
            m.d.comb += [slot_bram.r_addr.eq(pop_slot_next)]
            m.d.sync += [iss1.eq(issue), iss2.eq(iss1), slot1.eq(pop_slot_next),
                         slot2.eq(slot1)]
            ent_lay = self.pop.payload.shape()
            arriving = Signal(ent_lay)
            m.d.comb += [arriving.flow.eq(slot_bram.r_data[:c.flow_bits]),
                         arriving.gen.eq(slot_bram.r_data[c.flow_bits:]),
                         arriving.slot.eq(slot2)]
            pb = [Signal(ent_lay, name=f"pop_buf{i}") for i in range(POP_BUFFER)]
            pb_any = Signal()
            m.d.comb += [pb_any.eq(pb_lvl != 0),
                         self.pop.valid.eq(pb_any | iss2),
                         self.pop.payload.eq(Mux(pb_any, pb[0], arriving))]
            take = Signal()
            m.d.comb += take.eq(self.pop.valid & self.pop.ready)
            pb_rd = Signal()
            pb_wr = Signal()
            m.d.comb += [pb_rd.eq(pb_any & take), pb_wr.eq(iss2 & ~(~pb_any & take))]
            pos = Signal(range(POP_BUFFER + 1))
            m.d.comb += pos.eq(pb_lvl - pb_rd)
            for i in range(POP_BUFFER):
                nxt = pb[i + 1] if i + 1 < POP_BUFFER else pb[i]
                with m.If(pb_wr & (pos == i)):
                    m.d.sync += pb[i].eq(arriving)
                with m.Elif(pb_rd):
                    m.d.sync += pb[i].eq(nxt)
            m.d.sync += pb_lvl.eq(pb_lvl + pb_wr - pb_rd)
        else:
            pop_slot = Signal(sb)
            m.d.comb += [
                s_rd.addr.eq(pop_slot_next),
                s_rd.en.eq(advance),
                self.pop.payload.flow.eq(s_rd.data[:c.flow_bits]),
                self.pop.payload.gen.eq(s_rd.data[c.flow_bits:]),
                self.pop.payload.slot.eq(pop_slot),
            ]
            with m.If(advance):
                m.d.sync += [self.pop.valid.eq(issue), pop_slot.eq(pop_slot_next)]

        # the look-ahead words: the read issued now returns word cw + 3 of next cycle's cursor
        m.d.comb += b_rdc.addr.eq(Mux(leave, cw4, cw3))
        m.d.sync += [nz3.eq(nz_at(cw3) | a_at(cw3)),
                     nz4.eq(nz_at(cw4) | a_at(cw4)), leave_r.eq(leave)]
        # the cursor's word, registered for the flags (which take the leave a cycle late)
        # and every reader; decoded from cw, not gated by leave (leave_r is)
        m.d.sync += [lv_w.eq(cw), lv_lo.eq(Const(1, K) << cw[:lk])]
        m.d.sync += lv_hi.eq(Const(1, G) << cw[lk:] if G > 1 else 1)
        r_nz = Signal(name="")
        m.d.comb += r_nz.eq(Mux(leave_r, nz4, nz3))
        p1_eff = Signal(B, name="")
        p2_eff = Signal(B, name="")
        r_eff = Signal(B, name="")
        m.d.comb += [p1_eff.eq(p1 | a_oh(cw1)), p2_eff.eq(p2 | a_oh(cw2)),
                     r_eff.eq(Mux(r_nz, b_rdc.data, 0) | a_oh(cw3))]

        # -- insert stage: target ----------------------------------------------------------
        s1_valid = Signal()
        s1_flow = Signal(c.flow_bits)
        s1_gen = Signal(c.gen_bits)
        s1_target = Signal(W)
        dl = self.ins.payload.deadline
        earliest = Signal(W, name="")
        m.d.comb += earliest.eq(now + c.insert_latency)
        # t0 = max(dl, earliest); sel_e: "earliest is the larger" (the max's own compare)
        sel_e = Signal(name="")
        m.d.comb += sel_e.eq(_le(dl, earliest, W))
        t0 = Signal(W)
        m.d.comb += t0.eq(Mux(sel_e, earliest, dl))
        # park = (lag1 <= B ? now : wbt + B - 1) + H, the sum of each branch beside the
        # compare (no carry chain after another)
        mw = (1 << W) - 1
        lag_near = Signal(name="")
        park = Signal(W, name="")
        m.d.comb += [lag_near.eq(lag1 <= B),
                     park.eq(Mux(lag_near, now + c.horizon, wbt + (B - 1 + c.horizon)))]
        # min(t0, park) by distance from the cursor (alias-free however far the cursor lags):
        # t0 - wbt <= park - wbt.  Both candidates of the max are compared in parallel with
        # the max's own compare and the result selected by it (the same choice), so no
        # carry chain on the deadline waits for another.  earliest's compare is of lag1
        # only (now - wbt = lag1 - LA mod 2**W, the lag register's invariant): earliest -
        # wbt = lag1 + L - LA against park - wbt = lag1 + H - LA or B - 1 + H, both
        # branches beside lag_near.  The deadline's, (dl - wbt) <= (park - wbt) mod 2**W, is
        # "dl in the cyclic interval [wbt, park]": wbt <= dl <= park if park >= wbt, else
        # dl >= wbt or dl <= park (the interval wraps), two compares on dl side by side.
        e_rel = Signal(W, name="")
        pk_rel_n = Signal(W, name="")
        m.d.comb += [e_rel.eq(lag1 + ((c.insert_latency - c.lookahead) & mw)),
                     pk_rel_n.eq(lag1 + ((c.horizon - c.lookahead) & mw))]
        pick_e = Signal(name="")
        m.d.comb += pick_e.eq(Mux(lag_near, e_rel <= pk_rel_n, e_rel <= ((B - 1 + c.horizon) & mw)))
        park_wraps = Signal(name="")
        dl_ge_w = Signal(name="")
        dl_le_p = Signal(name="")
        pick_dl = Signal(name="")
        m.d.comb += [park_wraps.eq(park < wbt),
                     dl_ge_w.eq(dl >= wbt), dl_le_p.eq(dl <= park),
                     pick_dl.eq(Mux(park_wraps, dl_ge_w | dl_le_p, dl_ge_w & dl_le_p))]
        pick_t0 = Signal(name="")
        m.d.comb += pick_t0.eq(Mux(sel_e, pick_e, pick_dl))
        m.d.comb += self.ins.ready.eq(1)
        m.d.sync += [
            s1_valid.eq(self.ins.valid),
            s1_flow.eq(self.ins.payload.flow),
            s1_gen.eq(self.ins.payload.gen),
            s1_target.eq(Mux(pick_t0, t0, park)),
        ]

        # -- search stage: target word, next NC non-full words, room -----------------------
        w0 = s1_target[ws:sb]
        # the next NC non-full words in cyclic order from w0 + 1 (w0 itself last), searched
        # hierarchically: (a) the words above w0 in its group g0, then the first NC groups
        # after g0 (cyclically) with a non-full word (the j-th one contributes its first
        # NC - j non-full words), then (c) the words of g0 at or below w0
        i0 = w0[:lk]
        # the full flags as the search sees them: the registers without the last leave's
        # word and with the last decision (a_*), which they take only at the next edge
        fullw_s = [_sig(m, (fullw[g] & ~lv_clr(g)) | Mux(a_full & a_hi[g], a_lo, 0),
                        f"full_s{g}") for g in range(G)]
        fw_arr = Array(fullw_s)
        if G > 1:
            g0 = w0[lk:]
            # the target's group's flags, registered by the insert stage (s1_fg: the
            # search's view of them a cycle early, the group multiplexers of both target
            # choices in parallel with their compare), then corrected as the group lists
            # are: the cursor's leave of that cycle clears its word (leave_r, the word's
            # one-hot lv_lo and its group), the last decision (a_*) sets its word if it filled
            # it.  That is this cycle's fullw_s[g0] exactly: fullw took the leave before
            # last and the decision before last at the edge, the last leave is cleared and
            # the last decision ORed in.
            s1_fg = Signal(K, name="s1_fg")
            fg_t0 = Signal(K, name="")
            fg_pk = Signal(K, name="")
            # t0's group's flags as the max's own select of both candidates' (beside it)
            fg_dl = Signal(K, name="")
            fg_e = Signal(K, name="")
            m.d.comb += [fg_dl.eq(fw_arr[dl[ws + lk:sb]]), fg_e.eq(fw_arr[earliest[ws + lk:sb]]),
                         fg_t0.eq(Mux(sel_e, fg_e, fg_dl)), fg_pk.eq(fw_arr[park[ws + lk:sb]])]
            m.d.sync += s1_fg.eq(Mux(pick_t0, fg_t0, fg_pk))
            fg_clr = Signal(name="")
            fg_set = Signal(name="")
            m.d.comb += [fg_clr.eq(leave_r & (lv_w[lk:] == g0)),
                         fg_set.eq(a_full & (a_word[lk:] == g0))]
            nf0 = Signal(K)
            m.d.comb += nf0.eq(~((s1_fg & ~Mux(fg_clr, lv_lo, 0)) | Mux(fg_set, a_lo, 0)))
        else:
            g0 = Const(0, 0)
            nf0 = ~fullw_s[0]
        sa = _with_hi(_first_n(m, [nf0[i] & _lt(i0, i) for i in range(K)], NC, "srch_a"), g0)
        sc = _with_hi(_first_n(m, [nf0[i] & ~_lt(i0, i) for i in range(K)], NC, "srch_c"), g0)
        if G > 1:
            # every group's first NC + 1 non-full words, encoded a cycle ahead, in registers
            # (gl_*): encoded from this cycle's view of the flags (fullw_s), which is the
            # next cycle's view but for the cursor's leave.  The leave's correction is
            # applied a cycle later, as the decision's is: the cursor's group is encoded a
            # second time with its word non-full, into registers of its own (gla_*), and the
            # next cycle's search takes that group's list from gla_* if the cursor left
            # (leave_r and the group's one-hot lv_hi: a 2:1 multiplexer from registers, so
            # `leave` reaches no list register).  The next cycle's search
            # then removes from them the word its last decision (a_*) filled, which was
            # non-full in fullw, so at most one entry goes and NC remain: the same lists as
            # encoded from that cycle's fullw_s, off the search's path (the flags, their
            # encoders, a_hi's fan-out to every flag and the cursor's leave).
            NL = NC + 1
            gregs = [[(Signal(name=f"gl{g}_ok{k}"), Signal(lk, name=f"gl{g}_i{k}"))
                      for k in range(NL)] for g in range(G)]
            aregs = [(Signal(name=f"gla_ok{k}"), Signal(lk, name=f"gla_i{k}"))
                     for k in range(NL)]
            cgc, clo = cw[lk:], cw[:lk]
            xc = Signal(K, name="")
            # the cursor's group's view of full (fullw_s[cgc]), its corrections applied
            # after the G:1 multiplexer of the registers, with compares of the group numbers
            # beside it (not before it on every group's flags)
            xc_clr = Signal(name="")
            xc_set = Signal(name="")
            m.d.comb += [xc_clr.eq(leave_r & (lv_w[lk:] == cgc)),
                         xc_set.eq(a_full & (a_word[lk:] == cgc))]
            m.d.comb += xc.eq((Array(fullw)[cgc] & ~Mux(xc_clr, lv_lo, 0))
                              | Mux(xc_set, a_lo, 0))
            c_oh = Signal(K, name="")
            m.d.comb += c_oh.eq(Const(1, K) << clo)
            alt = _first_n(m, [~xc[i] | c_oh[i] for i in range(K)], NL, "srch_alt")
            for (r_ok, r_ix), (a_ok, a_ix) in zip(aregs, alt, strict=True):
                m.d.sync += [r_ok.eq(a_ok), r_ix.eq(a_ix)]
            for g in range(G):
                lst = _first_n(m, [~fullw_s[g][i] for i in range(K)], NL, f"srch_grp{g}")
                for (r_ok, r_ix), (ok, ix) in zip(gregs[g], lst, strict=True):
                    m.d.sync += [r_ok.eq(ok), r_ix.eq(ix)]
            # this cycle's lists: the registered ones (the cursor's group's second encoding
            # if it left a word last cycle) without the last decision's word, if it filled
            # it (at most one entry removed, the rest move up one); "group g has a non-full
            # word" from the registers: it lost its only one if the decision filled a word
            # of g and the list had one entry (that word).  The compares with the decision's
            # word are made on both sources (the alternative's shared by every group) and
            # selected, in parallel with the leave's selection
            a_gi = a_word[:lk]
            a_hit = [_sig(m, a_ok & (a_ix == a_gi), f"srch_ahit{k}")
                     for k, (a_ok, a_ix) in enumerate(aregs)]
            glists = []
            gnf_b = []
            for g in range(G):
                lv = _sig(m, leave_r & lv_hi[g], f"srch_lv{g}")
                lst = [(_sig(m, Mux(lv, a_ok, r_ok), f"srch_l{g}_ok{k}"),
                        _sig(m, Mux(lv, a_ix, r_ix), f"srch_l{g}_i{k}"))
                       for k, ((r_ok, r_ix), (a_ok, a_ix)) in enumerate(
                           zip(gregs[g], aregs, strict=True))]
                fill = _sig(m, a_full & a_hi[g], f"srch_fill{g}")
                rm = Const(0, 1)
                out = []
                for k in range(NC):
                    ok, ix = lst[k]
                    r_ok, r_ix = gregs[g][k]
                    hit = Mux(lv, a_hit[k], r_ok & (r_ix == a_gi))
                    rm = _sig(m, rm | (fill & hit), f"srch_rm{g}_{k}")
                    out.append((Mux(rm, lst[k + 1][0], ok), Mux(rm, lst[k + 1][1], ix)))
                glists.append(_sig(m, Cat(*[Cat(ok, ix) for ok, ix in out]), f"srch_grp{g}"))
                # (the left word is non-full and stays in the list: the decision of the
                # leave's cycle is never in the word the cursor leaves, so gnf is lv or the
                # registered list's fact, 4 inputs, one LUT as without the leave)
                r_ok0, r_ok1 = gregs[g][0][0], gregs[g][1][0]
                gnf_b.append(lv | (r_ok0 & ~(fill & ~r_ok1)))
            gnf = Signal(G, name="")    # group g has a non-full word (anonymous: an alias)
            m.d.comb += gnf.eq(Cat(*gnf_b))
            gh = _first_n(m, [gnf[g] & _lt(g0, g) for g in range(G)], NC, "srch_gh")
            gl = _first_n(m, [gnf[g] & _gt(g0, g) for g in range(G)], NC, "srch_gl")
            gl_arr = Array(glists)
            parts = [sa]
            for j, (g_ok, g_idx) in enumerate(_merge_n(m, gh, gl, "srch_g")):
                sel = Signal(NC * (lk + 1), name="")
                m.d.comb += sel.eq(gl_arr[g_idx])
                wj = [(g_ok & sel[k * (lk + 1)], Cat(sel[k * (lk + 1) + 1:(k + 1) * (lk + 1)],
                                                     g_idx)) for k in range(NC - j)]
                wj += [(Const(0, 1), Const(0, wib))] * j
                parts.append(wj)
            parts.append(sc)
            # a balanced tree of merges (the merge is associative)
            level = 0
            while len(parts) > 1:
                nxt = [_merge_n(m, parts[i], parts[i + 1], f"srch_t{level}n{i // 2}")
                       for i in range(0, len(parts) - 1, 2)]
                if len(parts) % 2:
                    nxt.append(parts[-1])
                parts = nxt
                level += 1
            seq = parts[0]
        else:
            seq = _merge_n(m, sa, sc, "srch_e")
        e_v = [Signal(wib, name=f"e{k + 1}") for k in range(NC)]
        e_okv = [Signal(name=f"e{k + 1}_ok") for k in range(NC)]
        for k, (ok, ix) in enumerate(seq):
            m.d.comb += [e_okv[k].eq(ok), e_v[k].eq(ix)]
        m.d.comb += b_rd0.addr.eq(w0)
        for k in range(NC):
            m.d.comb += b_rde[k].addr.eq(e_v[k])

        def regs_of(prefix, src=None):
            """The search's results, registered (``src``: the previous stage's registers)."""
            r = {"valid": Signal(name=f"{prefix}_valid"),
                 "flow": Signal(c.flow_bits, name=f"{prefix}_flow"),
                 "gen": Signal(c.gen_bits, name=f"{prefix}_gen"),
                 "tslot": Signal(sb, name=f"{prefix}_tslot"),
                 "w0": Signal(wib, name=f"{prefix}_w0"),
                 "off": Signal(ws, name=f"{prefix}_off"),
                 "room": Signal(sb + 1, name=f"{prefix}_room"),
                 "e": [Signal(wib, name=f"{prefix}_e{k + 1}") for k in range(NC)],
                 "e_ok": [Signal(name=f"{prefix}_e{k + 1}_ok") for k in range(NC)]}
            if src is None:
                m.d.sync += [
                    r["valid"].eq(s1_valid), r["flow"].eq(s1_flow), r["gen"].eq(s1_gen),
                    r["tslot"].eq(s1_target[:sb]), r["w0"].eq(w0), r["off"].eq(s1_target[:ws]),
                    r["room"].eq(S - (s1_target - wbt)[:sb]),
                ]
                m.d.sync += [x.eq(y) for x, y in zip(r["e"], e_v, strict=True)]
                m.d.sync += [x.eq(y) for x, y in zip(r["e_ok"], e_okv, strict=True)]
            else:
                for key in ("valid", "flow", "gen", "tslot", "w0", "off", "room"):
                    m.d.sync += r[key].eq(src[key])
                m.d.sync += [x.eq(y) for x, y in zip(r["e"], src["e"], strict=True)]
                m.d.sync += [x.eq(y) for x, y in zip(r["e_ok"], src["e_ok"], strict=True)]
            return r

        s2 = regs_of("s2")
        s2_nz0 = Signal()
        m.d.sync += s2_nz0.eq(nz_at(w0) | a_at(w0))

        def a_fwd(word, other):
            """``other`` unless the last decision (a_*) wrote ``word``: then its new bits."""
            hit = Signal(name="")
            m.d.comb += hit.eq(a_valid & (a_word == word))
            return Mux(hit, a_data, other)

        # The RAM copy of the cursor's word still has the bits popped from it, but only at
        # times <= now + 1, below every target (>= now + 2): the search never sees them.
        # nz of the candidates is read a cycle after the search (off the search's path): the
        # only changes of nz in between are decisions (their word is forwarded from a_data,
        # nz unused) and the cursor's leave of its word, which is never w0 (the target's slot
        # in w0 is after now + 1 until the decision) and is a candidate only when the search
        # wrapped around the whole window, where any slot found lies beyond the room (an
        # overflow either way).
        if NC == 2:
            # decision stage right after the search: the RAM's outputs feed the decision
            d = s2
            src0 = Signal(B, name="")
            m.d.comb += src0.eq(Mux(s2_nz0, b_rd0.data, 0))
            srce = [Signal(B, name="") for k in range(NC)]
            for k in range(NC):
                m.d.comb += srce[k].eq(Mux(nz_at(d["e"][k]), b_rde[k].data, 0))
        else:
            # read stage: the RAM's outputs go into registers (masked by nz, the decision of
            # the last cycle forwarded: one LUT between the RAM and the flip-flop); the
            # decision stage forwards the decision of the cycle before it.  Two decisions
            # (the read stage's and the decision stage's previous cycle) may fill candidates
            # the search saw non-full, hence NC = 3.
            d = regs_of("s3", s2)
            r0 = Signal(B, name="r0")
            m.d.sync += r0.eq(a_fwd(s2["w0"], Mux(s2_nz0, b_rd0.data, 0)))
            re = [Signal(B, name=f"re{k + 1}") for k in range(NC)]
            for k in range(NC):
                m.d.sync += re[k].eq(a_fwd(s2["e"][k], Mux(nz_at(s2["e"][k]),
                                                            b_rde[k].data, 0)))
            src0, srce = r0, re

        # -- decision stage ------------------------------------------------------------------
        # The words as the decision sees them: the last decision (a_*) forwarded.  Every
        # fact the decision needs of a word (its first free slot, "a free slot within the
        # room", "exactly one free slot") is computed from both sources, the RAM's word and
        # a_data, and selected by the forwarding hit, so the hit's compare runs in parallel
        # with the encoders instead of before them.
        hit0 = a_at(d["w0"])
        hite = [a_at(d["e"][k]) for k in range(NC)]
        c0 = Signal(B)
        m.d.comb += c0.eq(Mux(hit0, a_data, src0))
        ce = [Signal(B, name=f"ce{k + 1}") for k in range(NC)]
        for k in range(NC):
            m.d.comb += ce[k].eq(Mux(hite[k], a_data, srce[k]))
        hmask = Signal(B, name="")      # the slots at or after the target's offset
        m.d.comb += hmask.eq((Const(ones, B) << d["off"])[:B])

        def fact(hit, src, name, fn):
            """``fn`` (a list of values) of the forwarded word: of both sources, selected."""
            x_a, x_r = fn(a_data, f"{name}_a"), fn(src, f"{name}_r")
            return [_sig(m, Mux(hit, xa, xr), f"{name}_{i}")
                    for i, (xa, xr) in enumerate(zip(x_a, x_r, strict=True))]

        def first_free0(x, name):
            return _first_set(m, [~x[i] & hmask[i] for i in range(B)], name)

        def first_free(x, name):
            return _first_set(m, [~x[i] for i in range(B)], name)

        f0_any, f0 = fact(hit0, src0, "dec_f0", first_free0)
        # the first candidate that is still non-full (decisions since the search filled at
        # most NC - 1 of them)
        fes = [fact(hite[k], srce[k], f"dec_fe{k}", first_free) for k in range(NC)]
        # "the word is full after the insert" = it had exactly one free slot, found in
        # parallel with the encoders (not from the new word: off the decision's path)
        def one(x, name):
            return [_one_clear(m, x, name)]

        ones0 = fact(hit0, src0, "dec_one0", one)[0]
        onese = [fact(hite[k], srce[k], f"dec_one{k + 1}", one)[0] for k in range(NC)]
        avail = [Signal(name=f"avail{k + 1}") for k in range(NC)]
        for k in range(NC):
            m.d.comb += avail[k].eq(d["e_ok"][k] & fes[k][0])

        # "displacement < room", with the subtractions made from registers only (in parallel
        # with the bitmap reads): a slot found in word w at bit i has displacement
        # base(w) + i, base(w) = (w * B - target) mod S, so it fits iff i < room - base(w),
        # clamped to 0 ... B (lim).  base(w) + i never wraps mod S: base(w) >= S - B + 1
        # only for w = w0 with i below the target's offset, and such an i is found in w0
        # (f0) or not at all (the same word, the same forwarded bits).
        # "The first free slot is below lim" = "a free slot is below lim": a mask of the
        # slots below lim and an OR over the word, in parallel with the encoder, not a
        # compare after it.  The masks depend on the search's registers only: with the read
        # stage (L >= 5) they are computed there and registered, off the decision's path.
        def lim_masks(r):
            def lim(base):
                diff = Signal(sb + 2, name="")
                m.d.comb += diff.eq(r["room"] - base)
                return Mux(diff[sb + 1], 0, Mux(diff >= B, B, diff[:ws + 1]))

            def below(lm):
                mk = Signal(B, name="")
                m.d.comb += mk.eq(Cat(*[_gt(lm, i) for i in range(B)]))
                return mk

            lim0 = Signal(ws + 1, name="")
            m.d.comb += lim0.eq(lim(Const(0, 1)) + r["off"])   # f0: f0 - off < room
            lims = [Signal(ws + 1, name="") for k in range(NC)]
            for k in range(NC):
                m.d.comb += lims[k].eq(lim((Cat(Const(0, ws), r["e"][k]) - r["tslot"])[:sb]))
            return [below(lim0)] + [below(lm) for lm in lims]

        if NC == 2:
            masks = lim_masks(d)
        else:
            masks = [Signal(B, name=f"s3_lim_mask{k}") for k in range(NC + 1)]
            m.d.sync += [x.eq(y) for x, y in zip(masks, lim_masks(s2), strict=True)]
        mask0 = masks[0]
        fit0 = fact(hit0, src0, "dec_fit0",
                    lambda x, n: [_sig(m, (~x & hmask & mask0) != 0, n)])[0]
        fitse = []
        for k in range(NC):
            mk = masks[k + 1]
            fitse.append(fact(hite[k], srce[k], f"dec_fit{k + 1}",
                              lambda x, n, mk=mk: [_sig(m, (~x & mk) != 0, n)])[0])

        e = Signal(wib)
        ce_sel = Signal(B)
        fe = Signal(ws)
        fe_fits = Signal()
        e_found = Signal()
        # priority: the first available candidate (a chain of Mux from the last one)
        e_n, ce_n, fe_n, fit_n, ok_n = d["e"][NC - 1], ce[NC - 1], fes[NC - 1][1], \
            fitse[NC - 1], avail[NC - 1]
        one_n = onese[NC - 1]
        for k in reversed(range(NC - 1)):
            e_n = Mux(avail[k], d["e"][k], e_n)
            ce_n = Mux(avail[k], ce[k], ce_n)
            one_n = Mux(avail[k], onese[k], one_n)
            fe_n = Mux(avail[k], fes[k][1], fe_n)
            fit_n = Mux(avail[k], fitse[k], fit_n)
            ok_n = avail[k] | ok_n
        m.d.comb += [e.eq(e_n), ce_sel.eq(ce_n), fe.eq(fe_n), fe_fits.eq(fit_n),
                     e_found.eq(ok_n)]
        d_word = Signal(wib)
        d_bit = Signal(ws)
        d_old = Signal(B)
        found = Signal()
        m.d.comb += [
            found.eq(f0_any | e_found),
            d_word.eq(Mux(f0_any, d["w0"], e)),
            d_bit.eq(Mux(f0_any, f0, fe)),
            d_old.eq(Mux(f0_any, c0, ce_sel)),
        ]
        d_slot = Signal(sb, name="")
        m.d.comb += d_slot.eq(Cat(d_bit, d_word))
        fits = Signal(name="")
        m.d.comb += fits.eq(Mux(f0_any, fit0, fe_fits))
        commit = Signal()
        ovf = Signal()
        m.d.comb += [
            commit.eq(d["valid"] & found & fits),
            ovf.eq(d["valid"] & ~commit),
        ]
        d_new = Signal(B, name="")
        m.d.comb += d_new.eq(d_old | (Const(1, B) << d_bit))
        d_full = Signal()
        m.d.comb += d_full.eq(Mux(f0_any, ones0, one_n))
        m.d.comb += [
            b_wr.addr.eq(d_word), b_wr.data.eq(d_new), b_wr.en.eq(commit),
        ]
        if c.pop_buffer:
            m.d.comb += [slot_bram.w_addr.eq(d_slot),
                         slot_bram.w_data.eq(Cat(d["flow"], d["gen"])), slot_bram.w_en.eq(commit)]
        else:
            m.d.comb += [s_wr.addr.eq(d_slot), s_wr.data.eq(Cat(d["flow"], d["gen"])),
                         s_wr.en.eq(commit)]
        m.d.sync += [a_valid.eq(commit), a_word.eq(d_word), a_data.eq(d_new),
                     a_bit.eq(d_bit), a_full.eq(commit & d_full),
                     a_hi.eq(Const(1, G) << d_word[lk:]),
                     a_lo.eq(Const(1, K) << d_word[:lk])]

        # -- cursor and summary updates (the cursor's clear first: the decision never writes
        # the word the cursor leaves) ------------------------------------------------------------
        m.d.sync += lag1.eq(Mux(leave, lag1 + (1 - B), lag1 + 1))
        with m.If(leave):
            m.d.sync += [wbt.eq(wbt + B), cur_bits.eq(p1_eff), p1.eq(p2_eff), p2.eq(r_eff)]
        with m.Else():
            m.d.sync += [cur_bits.eq(bits_after), p1.eq(p1_eff), p2.eq(p2_eff)]
        # summary: the last cycle's leave clears the word the cursor left, the last cycle's
        # decision (a_*) sets its word, both one cycle late (from registers: off the
        # cursor's and the decision's paths; every reader applies both until then).  The
        # leave is applied first, so the flags are what they were with the leave in its own
        # cycle: then a decision at c into the cursor's word, its one slot issued at c + 1
        # as the cursor leaves (the slot is at least now + 2 at the decision, due by the
        # look-ahead at c + 1), is set at the edge after c + 1 and cleared by the leave at
        # the next, and every reader clears it in between (the word is empty: the clear
        # wins).  One-hot masks, decoded before the registers (lv_hi / lv_lo, a_hi / a_lo)
        for g in range(G):
            st = Mux(a_valid & a_hi[g], a_lo, 0)
            m.d.sync += [nzw[g].eq((nzw[g] & ~lv_clr(g)) | st),
                         fullw[g].eq((fullw[g] & ~lv_clr(g)) | Mux(a_full, st, 0))]

        # -- statistics ----------------------------------------------------------------------
        occ = self.occupancy
        # occ + commit - issue with the sums from registers, selected by the late commit and
        # issue (no carry chain after the decision)
        occ_up = Signal.like(occ, name="")
        occ_dn = Signal.like(occ, name="")
        m.d.comb += [occ_up.eq(occ + 1), occ_dn.eq(occ - 1)]
        m.d.sync += [
            occ.eq(Mux(commit, Mux(issue, occ, occ_up), Mux(issue, occ_dn, occ))),
            self.max_occupancy.eq(umax(self.max_occupancy, occ)),
        ]
        # the displacement of the last decision, computed the cycle after it from registers
        # (off the decision's path)
        r_commit = Signal()
        r_slot = Signal(sb)
        r_tslot = Signal(sb)
        ovf_r = Signal()
        m.d.sync += [r_commit.eq(commit), r_slot.eq(d_slot), r_tslot.eq(d["tslot"])]
        disp_r = Signal(sb, name="")
        m.d.comb += disp_r.eq(Mux(r_commit, r_slot - r_tslot, 0))
        m.d.sync += [
            self.max_displacement.eq(umax(self.max_displacement, disp_r)),
            ovf_r.eq(ovf),
        ]
        with m.If(ovf_r):
            m.d.sync += [self.overflow.eq(1),
                         self.overflow_count.eq(saturating_inc(self.overflow_count))]
        return m
