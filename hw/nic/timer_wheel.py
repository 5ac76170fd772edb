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
is poppable (``pop.valid``) from ``now == n + 4`` (``INSERT_LATENCY``): insert stage (target),
search stage (bitmap reads, next non-full words), decision stage (bitmap and slot RAM write),
pop stage (slot RAM read into the output register).

Structure
- Slot RAM: S x (flow + gen), written by the decision stage, read by the pop stage.
- Bitmap RAM: S/B words of B bits, one write port (decision stage) and four read ports (the
  target word and the next two non-full words for the search stage, the word after the
  cursor's for the cursor), so the memory is replicated four times in block RAM.
- Per word, two flip-flops: ``nz`` (the RAM word is valid; 0 means "empty whatever the RAM
  holds", so reset needs no clearing sweep and the cursor empties a word by clearing one bit)
  and ``full`` (all B slots taken), the summary the search stage scans.
- The summary is two-level: the S/B words form G groups of K words (K = 2**ceil(log2(S/B)/2),
  :func:`summary_group_words`: K = 64, G = 32 at the default 2048 words), each group's ``nz``
  and ``full`` flags one K-bit register, and a G-bit second level "the group has a non-full
  word" (an OR of each group's K ``~full`` bits).  The search for the next two non-full words
  after the target word w0 (in group g0, cyclically, w0 itself last) takes, in this order:
  the non-full words above w0 in g0 (a first-two priority encoder over K bits), then the
  first two groups after g0 (cyclically) with a non-full word (a first-two encoder over the
  G second-level bits), the first two non-full words of the first such group and the first
  of the second one (a G:1 multiplexer of K-bit group words, encoders over K bits), then the
  words at or below w0 in g0; the first two of that sequence are the candidates.  Updates
  are one-hot writes into at most two group registers per cycle (the cursor's leave and the
  decision).  The flags themselves stay 2 x S/B flip-flops (with a one-LUT update each),
  but the logic around them is O(G + K) statements of K or G bits, and every encoder node is
  a named signal (an expression used twice would be emitted twice: nested trees of plain
  expressions grow exponentially in the Verilog), so the exported Verilog is dominated by the
  memories' initializers (S + S/B lines).
- The cursor owns its word: its bits live in a register (pops clear them there; an insert
  into that word sets its bit there and in RAM).  The RAM copy keeps the popped bits until the
  cursor leaves the word (the word is then empty and ``nz`` is cleared), but those bits are at
  times <= now + 1, below every insert's target (>= now + 2), so the search, which only looks
  at or after its target, reads the RAM copy for the cursor's word too.  The cursor reads the
  next word every cycle, so it moves one word (B slots) per cycle through empty words.

Hazards, all forwarded (never stalled): the decision stage forwards its own previous write
(consecutive inserts into one word); pops clear bits only in the cursor's register (no RAM
write, so pops and inserts never compete for the write port); the search stage's "next
non-full word" may be filled by the decision one cycle ahead of it, hence the second
candidate (``nz`` of the two candidates is read in the decision stage, off the search's
path: see the comment there); the cursor's freshly read word takes the decision stage's
write of the cycle before.  No insert lands in a word the cursor is leaving (its last slot
is <= now + 1).
"""

from __future__ import annotations

from amaranth import Array, Cat, Const, Module, Mux, Signal
from amaranth.lib import data, memory, stream, wiring
from amaranth.lib.wiring import In, Out

from ..lib.arith import saturating_inc, umax
from .timer_wheel_config import INSERT_LATENCY, TimerWheelConfig

__all__ = ["TimerWheel", "TimerWheelConfig", "summary_group_words", "INSERT_LATENCY",
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


def _first_two(m, bits: list, name: str):
    """(any, index1, two, index2): the lowest and second lowest set bits of ``bits``."""
    leaves = _sig(m, Cat(*bits), f"{name}_in")
    nodes = [(leaves[i], Const(0, 0), Const(0, 1), Const(0, 0)) for i in range(len(bits))]
    level = 0
    while len(nodes) > 1:
        nxt = []
        for i in range(0, len(nodes), 2):
            lt, rt = nodes[i], nodes[i + 1]
            # a node: indices gain a bit (0: from the left half, 1: from the right one)
            lt = (lt[0], Cat(lt[1], Const(0, 1)), lt[2], Cat(lt[3], Const(0, 1)))
            rt = (rt[0], Cat(rt[1], Const(1, 1)), rt[2], Cat(rt[3], Const(1, 1)))
            nxt.append(_merge(m, lt, rt, f"{name}_l{level}n{i // 2}"))
        nodes = nxt
        level += 1
    return nodes[0]


def _merge(m, l, r, name):
    """Two (any, index1, two, index2) candidate sets, ``l`` before ``r`` in the search order:
    the first two of their concatenation (a node of :func:`_first_two`)."""
    la, li, l2, lj = l
    ra, ri, r2, rj = r
    return (_sig(m, la | ra, f"{name}_any"), _sig(m, Mux(la, li, ri), f"{name}_i1"),
            _sig(m, l2 | (la & ra) | r2, f"{name}_two"),
            _sig(m, Mux(l2, lj, Mux(la, ri, rj)), f"{name}_i2"))


def _lt(x, c):
    """``x < c`` for a constant ``c``; a constant where the compare is (no constant
    compares in the Verilog)."""
    return Const(0, 1) if c <= 0 else Const(1, 1) if c >= 1 << len(x) else x < c


def _gt(x, c):
    """``x > c`` for a constant ``c`` (see :func:`_lt`)."""
    return Const(0, 1) if c >= (1 << len(x)) - 1 else Const(1, 1) if c < 0 else x > c


def _with_hi(cand, hi):
    """A candidate set of indices within a group, extended by the group number ``hi``."""
    a, i1, two, i2 = cand
    return (a, Cat(i1, hi), two, Cat(i2, hi))


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


class TimerWheel(wiring.Component):
    """``group_words`` (K, see :func:`summary_group_words`) only changes the structure of
    the summary, never the behaviour."""

    def __init__(self, config: TimerWheelConfig, *, group_words: int | None = None):
        self.config = c = config
        self.group_words = summary_group_words(c.n_words, group_words)
        ins = data.StructLayout({"flow": c.flow_bits, "gen": c.gen_bits,
                                 "deadline": c.time_width})
        pop = data.StructLayout({"flow": c.flow_bits, "gen": c.gen_bits, "slot": c.slot_bits})
        super().__init__({
            "now": In(c.time_width),
            "ins": In(stream.Signature(ins)),
            "pop": Out(stream.Signature(pop)),
            "occupancy": Out(c.occ_width),
            "max_occupancy": Out(c.occ_width),
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
        m.submodules.slot_ram = slot_ram = memory.Memory(
            shape=c.entry_bits, depth=S, init=[])
        m.submodules.bitmap = bitmap = memory.Memory(shape=B, depth=NW, init=[])
        s_wr = slot_ram.write_port()
        s_rd = slot_ram.read_port()
        b_wr = bitmap.write_port()
        b_rd0, b_rd1, b_rd2, b_rdc = (bitmap.read_port() for _ in range(4))
        # summary, two levels: G groups of K words; per word nz (valid in RAM, else empty)
        # and full (all B slots taken), one K-bit register per group and flag; per group the
        # second level "has a non-full word" (combinational, an OR of K bits)
        K = self.group_words
        lk = K.bit_length() - 1
        G = NW // K
        nzw = [Signal(K, name=f"nz_g{g}") for g in range(G)]
        fullw = [Signal(K, name=f"full_g{g}") for g in range(G)]
        nz = Cat(*nzw)              # flat views (bit w = word w), read at single bits only
        gnf = Signal(G, name="")    # group g has a non-full word (anonymous: an alias)
        m.d.comb += gnf.eq(Cat(*[~fw != 0 for fw in fullw]))

        # -- cursor state ------------------------------------------------------------------
        wbt = Signal(W)             # time of the cursor word's first slot
        cw = wbt[ws:sb]
        cur_bits = Signal(B)        # the cursor word's bits (when not freshly loaded)
        loaded = Signal()           # the cursor moved last cycle: bits come from the RAM read
        nz_cur = Signal()           # nz of the word read for the cursor, sampled with the read

        # decision stage of the previous cycle (forwarding source)
        a_valid = Signal()
        a_word = Signal(wib)
        a_data = Signal(B)
        a_full = Signal()

        # -- pop stage (cursor) ------------------------------------------------------------
        bits_eff = Signal(B)
        with m.If(loaded):
            m.d.comb += bits_eff.eq(Mux(a_valid & (a_word == cw), a_data,
                                        Mux(nz_cur, b_rdc.data, 0)))
        with m.Else():
            m.d.comb += bits_eff.eq(cur_bits)
        p_any, p_off = _first_set(m, [bits_eff[i] for i in range(B)], "pop_ffs")
        p_off_s = Signal(ws, name="")
        m.d.comb += p_off_s.eq(p_off)
        # the cursor's lag: never negative (the cursor stays at or before now + 1), so the
        # compares are unsigned and exact for any lag below 2**W - B
        lag1 = Signal(W, name="")
        m.d.comb += lag1.eq(now + 1 - wbt)
        due = p_off_s <= lag1
        advance = ~self.pop.valid | self.pop.ready
        issue = Signal()
        m.d.comb += issue.eq(p_any & due & advance)
        pop_slot_next = Signal(sb, name="")
        m.d.comb += pop_slot_next.eq(Cat(p_off_s, cw))
        bits_after = Signal(B, name="")
        m.d.comb += bits_after.eq(bits_eff & ~Mux(issue, Const(1, B) << p_off_s, 0))
        leave = Signal()
        m.d.comb += leave.eq((bits_after == 0) & (lag1 >= B - 1))

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

        # the cursor reads the word after its own every cycle: if it leaves now, that word is
        # its word next cycle
        cw1 = Signal(wib, name="")
        m.d.comb += [cw1.eq(cw + 1), b_rdc.addr.eq(cw1)]
        m.d.sync += nz_cur.eq(nz.bit_select(cw1, 1))

        # -- insert stage: target ----------------------------------------------------------
        s1_valid = Signal()
        s1_flow = Signal(c.flow_bits)
        s1_gen = Signal(c.gen_bits)
        s1_target = Signal(W)
        dl = self.ins.payload.deadline
        earliest = Signal(W, name="")
        m.d.comb += earliest.eq(now + INSERT_LATENCY)
        t0 = Signal(W)
        m.d.comb += t0.eq(Mux(_le(dl, earliest, W), earliest, dl))
        park = Signal(W, name="")
        m.d.comb += park.eq(Mux(lag1 <= B, now, wbt + (B - 1)) + c.horizon)
        # min(t0, park) by distance from the cursor (alias-free however far the cursor lags)
        t0_rel = Signal(W, name="")
        park_rel = Signal(W, name="")
        m.d.comb += [t0_rel.eq(t0 - wbt), park_rel.eq(park - wbt)]
        m.d.comb += self.ins.ready.eq(1)
        m.d.sync += [
            s1_valid.eq(self.ins.valid),
            s1_flow.eq(self.ins.payload.flow),
            s1_gen.eq(self.ins.payload.gen),
            s1_target.eq(Mux(t0_rel <= park_rel, t0, park)),
        ]

        # -- search stage: target word, next two non-full words, room ------------------------
        w0 = s1_target[ws:sb]
        # the next two non-full words in cyclic order from w0 + 1 (w0 itself last), searched
        # hierarchically: (a) the words above w0 in its group g0, (x) the first group after
        # g0 (cyclically) with a non-full word, (y) the second such group (its first non-full
        # word), (c) the words of g0 at or below w0
        i0 = w0[:lk]
        fw_arr = Array(fullw)
        if G > 1:
            g0 = w0[lk:]
            nf0 = Signal(K)
            m.d.comb += nf0.eq(~fw_arr[g0])
        else:
            g0 = Const(0, 0)
            nf0 = ~fullw[0]
        sa = _with_hi(_first_two(m, [nf0[i] & _lt(i0, i) for i in range(K)], "srch_a"), g0)
        sc = _with_hi(_first_two(m, [nf0[i] & ~_lt(i0, i) for i in range(K)], "srch_c"), g0)
        if G > 1:
            gh = _first_two(m, [gnf[g] & _lt(g0, g) for g in range(G)], "srch_gh")
            gl = _first_two(m, [gnf[g] & _gt(g0, g) for g in range(G)], "srch_gl")
            ga_ok, ga, gb_ok, gb = _merge(m, gh, gl, "srch_g")
            nfa = Signal(K)
            nfb = Signal(K)
            m.d.comb += [nfa.eq(~fw_arr[ga]), nfb.eq(~fw_arr[gb])]
            xa, xi1, x2, xi2 = _with_hi(_first_two(m, [nfa[i] for i in range(K)], "srch_x"), ga)
            sx = (ga_ok & xa, xi1, ga_ok & x2, xi2)
            ya, yi = _first_set(m, [nfb[i] for i in range(K)], "srch_y")
            sy = (gb_ok & ya, Cat(yi, gb), Const(0, 1), Cat(yi, gb))
            e1_ok_v, e1_v, e2_ok_v, e2_v = _merge(
                m, _merge(m, _merge(m, sa, sx, "srch_ax"), sy, "srch_axy"), sc, "srch_e")
        else:
            e1_ok_v, e1_v, e2_ok_v, e2_v = _merge(m, sa, sc, "srch_e")
        e1 = Signal(wib)
        e2 = Signal(wib)
        e1_ok = Signal()
        e2_ok = Signal()
        m.d.comb += [e1_ok.eq(e1_ok_v), e1.eq(e1_v), e2_ok.eq(e2_ok_v), e2.eq(e2_v)]
        m.d.comb += [b_rd0.addr.eq(w0), b_rd1.addr.eq(e1), b_rd2.addr.eq(e2)]

        s2_valid = Signal()
        s2_flow = Signal(c.flow_bits)
        s2_gen = Signal(c.gen_bits)
        s2_tslot = Signal(sb)
        s2_w0 = Signal(wib)
        s2_off = Signal(ws)
        s2_e1 = Signal(wib)
        s2_e2 = Signal(wib)
        s2_e1_ok = Signal()
        s2_e2_ok = Signal()
        s2_nz0 = Signal()
        s2_room = Signal(sb + 1)
        def nz_at(w):
            return nz.bit_select(w, 1)

        m.d.sync += [
            s2_valid.eq(s1_valid),
            s2_flow.eq(s1_flow),
            s2_gen.eq(s1_gen),
            s2_tslot.eq(s1_target[:sb]),
            s2_w0.eq(w0),
            s2_off.eq(s1_target[:ws]),
            s2_e1.eq(e1),
            s2_e2.eq(e2),
            s2_e1_ok.eq(e1_ok),
            s2_e2_ok.eq(e2_ok),
            s2_nz0.eq(nz_at(w0)),
            s2_room.eq(S - (s1_target - wbt)[:sb]),
        ]

        # -- decision stage ------------------------------------------------------------------
        def fwd(word, rd, nzbit):
            return Mux(a_valid & (a_word == word), a_data, Mux(nzbit, rd, 0))

        # the RAM copy of the cursor's word still has the bits popped from it, but only at
        # times <= now + 1, below every target (>= now + 2): the search never sees them
        # nz of e1 and e2 is read here, a cycle after the search (off the search's path): the
        # only changes of nz in between are the last decision (its word is forwarded from
        # a_data, nz unused) and the cursor's leave of its word, which is never w0 (w0 is at
        # least a word ahead of the cursor) and is e1/e2 only when the search wrapped around
        # the whole window, where any slot found lies beyond the room (an overflow either way)
        c0 = Signal(B)
        m.d.comb += c0.eq(fwd(s2_w0, b_rd0.data, s2_nz0))
        free0 = Signal(B)
        m.d.comb += free0.eq(~c0 & (Const(ones, B) << s2_off)[:B])
        f0_any, f0 = _first_set(m, [free0[i] for i in range(B)], "dec_f0")
        use2 = Signal()
        m.d.comb += use2.eq(a_valid & a_full & (a_word == s2_e1))
        e = Signal(wib)
        e_ok = Signal()
        ce = Signal(B)
        m.d.comb += [
            e.eq(Mux(use2, s2_e2, s2_e1)),
            e_ok.eq(Mux(use2, s2_e2_ok, s2_e1_ok)),
            ce.eq(Mux(use2, fwd(s2_e2, b_rd2.data, nz_at(s2_e2)),
                      fwd(s2_e1, b_rd1.data, nz_at(s2_e1)))),
        ]
        fe_any, fe = _first_set(m, [~ce[i] for i in range(B)], "dec_fe")
        d_word = Signal(wib)
        d_bit = Signal(ws)
        d_old = Signal(B)
        found = Signal()
        m.d.comb += [
            found.eq(f0_any | (e_ok & fe_any)),
            d_word.eq(Mux(f0_any, s2_w0, e)),
            d_bit.eq(Mux(f0_any, f0, fe)),
            d_old.eq(Mux(f0_any, c0, ce)),
        ]
        d_slot = Signal(sb, name="")
        m.d.comb += d_slot.eq(Cat(d_bit, d_word))
        d_disp = Signal(sb, name="")
        m.d.comb += d_disp.eq(d_slot - s2_tslot)
        commit = Signal()
        ovf = Signal()
        m.d.comb += [
            commit.eq(s2_valid & found & (d_disp < s2_room)),
            ovf.eq(s2_valid & ~commit),
        ]
        d_new = Signal(B, name="")
        m.d.comb += d_new.eq(d_old | (Const(1, B) << d_bit))
        d_full = Signal()
        m.d.comb += d_full.eq(d_new == ones)
        m.d.comb += [
            b_wr.addr.eq(d_word), b_wr.data.eq(d_new), b_wr.en.eq(commit),
            s_wr.addr.eq(d_slot), s_wr.data.eq(Cat(s2_flow, s2_gen)), s_wr.en.eq(commit),
        ]
        m.d.sync += [a_valid.eq(commit), a_word.eq(d_word), a_data.eq(d_new),
                     a_full.eq(d_full)]

        # -- cursor and summary updates (the cursor's clear first: the decision never writes
        # the word the cursor leaves) ------------------------------------------------------------
        ins_cw = commit & (d_word == cw)
        m.d.sync += loaded.eq(leave)
        with m.If(leave):
            m.d.sync += wbt.eq(wbt + B)
        with m.Else():
            m.d.sync += cur_bits.eq(bits_after | Mux(ins_cw, Const(1, B) << d_bit, 0))
        # summary: the leave clears the cursor's word, the decision sets its word (never the
        # same word); one-hot masks within the group, a group-select compare per group
        clr_oh = Signal(K, name="")
        set_oh = Signal(K, name="")
        m.d.comb += [clr_oh.eq(Mux(leave, Const(1, K) << cw[:lk], 0)),
                     set_oh.eq(Mux(commit, Const(1, K) << d_word[:lk], 0))]
        for g in range(G):
            clr = Mux(cw[lk:] == g, clr_oh, 0) if G > 1 else clr_oh
            st = Mux(d_word[lk:] == g, set_oh, 0) if G > 1 else set_oh
            m.d.sync += [nzw[g].eq(nzw[g] & ~clr | st),
                         fullw[g].eq(fullw[g] & ~clr & ~st | Mux(d_full, st, 0))]

        # -- statistics ----------------------------------------------------------------------
        occ = self.occupancy
        m.d.sync += [
            occ.eq(occ + commit - issue),
            self.max_occupancy.eq(umax(self.max_occupancy, occ)),
        ]
        disp_r = Signal(sb)
        ovf_r = Signal()
        m.d.sync += [
            disp_r.eq(Mux(commit, d_disp, 0)),
            self.max_displacement.eq(umax(self.max_displacement, disp_r)),
            ovf_r.eq(ovf),
        ]
        with m.If(ovf_r):
            m.d.sync += [self.overflow.eq(1),
                         self.overflow_count.eq(saturating_inc(self.overflow_count))]
        return m
