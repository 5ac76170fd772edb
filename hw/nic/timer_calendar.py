"""Timer service: a calendar of one-cycle slots, each a linked list of any number of entries.

The exact contract (insert rule, pop rule and order, latencies, parking, statistics) is the
docstring of :mod:`sim.models.timer_calendar`; this component matches
:class:`~sim.models.timer_calendar.TimerCalendarModel` on every output, every cycle.  Unlike
:class:`hw.nic.timer_wheel.TimerWheel` (one entry per slot, so an insert searches for the
first free slot over a 2048-word summary), an insert here goes INTO its target slot: no
search, no decision, no capacity rule and nothing that can overflow.

The user guarantees that an entry id {flow, gen} is in the calendar at most once at a time
(from its insert to the cycle it is taken from ``pop``); the flow engine does (a flow's
entries carry distinct generations).

Parameters: :class:`~hw.nic.timer_calendar_config.TimerCalendarConfig` (S slots, horizon H,
B-bit bitmap words, flow/gen widths, W = ``time_width``).

Ports
- ``now`` (in, W): the free-running cycle counter (0 in the first cycle after reset, +1 per
  cycle).
- ``ins`` (stream in, always ready): {flow, gen, deadline}; one insert per cycle.
- ``pop`` (stream out): {flow, gen, slot}; the payload is held while ``valid & ~ready``.
- ``occupancy``, ``max_occupancy`` (``bits_for(2**id_bits)``), ``max_lateness`` (log2 S bits,
  saturating).  No overflow ports: nothing can overflow.

Latency and throughput: one insert per cycle; an insert accepted at ``now == n`` pops at
``n + 10`` (:data:`~hw.nic.timer_calendar_config.INSERT_LATENCY`) at the earliest, at its
deadline if later; consecutive slots pop one per cycle; the entries of one slot one per 3
cycles (LIFO), see the model.

Storage (block RAM, every read with latency 2, :class:`hw.lib.bram.Bram`)
- Head RAM: S words {id, more} ("more": the slot held entries before this one).  Port A does
  a fetch-and-replace (``read_a``): the insert writes {e, more} at its slot and gets the old
  head back two cycles later; port B is the pop side's read of an issued slot.
- Link RAM: 2**id_bits words {next id, next's more}: an insert of e writes link[e] <- the
  old head.  Port B is the pop side's chase.
- Bitmap: S/B words of B bits, twice (both written by the insert, the cursor's copy a cycle
  later from the registered write; one read port for the insert's read-modify-write, one
  for the cursor's look-ahead), with per-word ``nz``
  flip-flops ("0 means empty whatever the RAM holds": no clearing sweep).

Insert pipeline (n: the cycle the insert is accepted)
- n, n + 1: the target (the wheel's rule: max with n + 10, parking at n + H, or at the
  cursor's word end + H when it lags): the deadline's compares into registers at n, the
  selects at n + 1.
- n + 2: bitmap read of the target's word, and its ``nz`` (a multiplexer per group of words
  into registers, then one over the groups at n + 3).
- n + 4: read-modify-write: the word (``nz``-masked, the writes of n + 2 and n + 3 forwarded
  from the a1/a2 registers, the hits compared a cycle ahead) ORed with the target's bit,
  written back, the old word registered.  The bit goes straight into the cursor's registers
  (its word or a look-ahead word, wherever it lands after this cycle's leave), so the
  cursor sees it from n + 5; it reaches ``nz`` a cycle later (a1).
- n + 5: head RAM fetch-and-replace: head[T] <- {e, more}, "more" = the old word's bit.
- n + 8: link RAM write: link[e] <- the old head (arrived at n + 7, registered).

Cursor (the wheel's, without its summary): its word's bits in a register (pops clear them
there only), up to 5 following words in registers (a queue filled by one bitmap read per
cycle, 3 cycles in flight: the RAM's latency 2, then the raw word registered; its ``nz``
(a three-stage multiplexer) and the writes it missed ORed in from registers).  The
lowest set bit due by ``now + 5`` is issued per cycle; the cursor moves one word per cycle
through empty words; its leave clears ``nz`` a cycle later (from registers).  The leave is
one LUT from registers: "the word is empty / has one bit" (cur_z, cur_o), "its last slot is
due" and the due offsets are registers computed a cycle ahead for both outcomes of the
leave.  No insert lands in a word being left or a slot already issued: a
target is >= n + 10 and is seen by the cursor from n + 5, which issues slots due by now + 5.

Pop side: issued slot (register) -> head read -> 2 cycles -> the head {id, more},
registered (the head RAM's bank multiplexer and the route from the block-RAM columns are a
cycle of their own) -> into the pop buffer (2 entries), or into the head queue (5 entries:
the heads of 4 cycles of issues) while a list is being chased;
an entry with "more" issues the link read of its id the cycle after it enters the buffer
(the address from a register), whose result (3 cycles after the entry) is the next entry
of the list (held in a register if the buffer is full).
Every decision is from registers (levels, valid bits): ``pop.ready`` drains the buffer and
reaches neither the cursor nor the chase in the same cycle.
"""

from __future__ import annotations

from amaranth import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import Out

from ..lib.arith import umax
from ..lib.bram import Bram
from .timer_calendar_config import (
    HEAD_QUEUE,
    INSERT_LATENCY,
    LOOKAHEAD,
    LOOKAHEAD_WORDS,
    POP_BUFFER,
    TimerCalendarConfig,
)
from .timer_wheel import timer_service_members

__all__ = ["TimerCalendar", "TimerCalendarConfig", "INSERT_LATENCY"]


def _le(a, b, width):
    """Wrap-safe a <= b on ``width``-bit stamps."""
    return ~(b - a)[width - 1]


def _count3(m, x, width):
    """(zero, one, two): ``x`` has 0, 1 or 2 set bits (a tree of counts saturating at 3)."""
    nodes = [Cat(x[i], Const(0, 1)) for i in range(width)]
    while len(nodes) > 1:
        nxt = []
        for i in range(0, len(nodes), 2):
            sm = Signal(3, name="")
            c = Signal(2, name="")
            m.d.comb += [sm.eq(nodes[i] + nodes[i + 1]), c.eq(Mux(sm[2], 3, sm[:2]))]
            nxt.append(c)
        nodes = nxt
    z, o, t = Signal(name=""), Signal(name=""), Signal(name="")
    m.d.comb += [z.eq(nodes[0] == 0), o.eq(nodes[0] == 1), t.eq(nodes[0] == 2)]
    return z, o, t


def _first_set(m, x, width):
    """(any, index) of the lowest set bit of ``x``: a balanced tree."""
    nodes = [(x[i], Const(0, 0)) for i in range(width)]
    while len(nodes) > 1:
        nxt = []
        for i in range(0, len(nodes), 2):
            (la, li), (ra, ri) = nodes[i], nodes[i + 1]
            idx = Cat(Mux(la, li, ri), ~la) if len(li) else ~la
            a = Signal(name="")
            s = Signal(len(idx), name="")
            m.d.comb += [a.eq(la | ra), s.eq(idx)]
            nxt.append((a, s))
        nodes = nxt
    return nodes[0]


class TimerCalendar(wiring.Component):
    def __init__(self, config: TimerCalendarConfig):
        self.config = c = config
        super().__init__({
            **timer_service_members(c),
            "max_lateness": Out(c.slot_bits),
        })

    def elaborate(self, platform):
        c = self.config
        m = Module()
        W, B, S, NW = c.time_width, c.word_bits, c.slots, c.n_words
        ws, sb, wib, ib = c.word_shift, c.slot_bits, c.word_index_bits, c.id_bits
        now = self.now
        mw = (1 << W) - 1
        # one-hot decodes of a word index split in two halves (hi: groups of K words), so a
        # flag's update is a few LUT inputs from registers
        lk = (wib + 1) // 2
        K = 1 << lk
        G = NW // K

        # -- storage -----------------------------------------------------------------------
        # the bitmap twice (both written by the insert's read-modify-write): one read port
        # for the insert, one for the cursor's look-ahead (S/B x B bits each: 4 DP16KD at
        # the default size)
        bm_i = Bram(B, NW, name="bitmap_ins")
        bm_c = Bram(B, NW, name="bitmap_cur")
        head = Bram(ib + 1, S, name="head", read_a=True)
        link = Bram(ib + 1, 1 << ib, name="link")
        nz = Signal(NW)

        # the bitmap's last two writes (a1: last cycle, a2: the cycle before)
        a1_v, a1_w, a1_d, a1_oh = Signal(), Signal(wib), Signal(B), Signal(B)
        a2_v, a2_w, a2_d, a2_oh = Signal(), Signal(wib), Signal(B), Signal(B)
        a1_hi, a1_lo = Signal(G), Signal(K)       # a1's word, one-hot halves (0 if no write)
        m.d.sync += [a2_v.eq(a1_v), a2_w.eq(a1_w), a2_d.eq(a1_d), a2_oh.eq(a1_oh)]

        def hit(v, w_reg, w):
            h = Signal(name="")
            m.d.comb += h.eq(v & (w_reg == w))
            return h

        def nz_at(w, w_next, name):
            """``nz`` of word ``w`` as of this cycle (the last write, a1, which reaches the
            flags at the next edge, included), registered over two cycles: a multiplexer
            per group (by w's low bits) and a1's compare into registers, then one over the
            groups (by ``w_next``'s high bits: w one cycle later).  (No word read here
            is the one the cursor left last cycle, whose clear is late.)"""
            # (groups of 2**(wib // 2) words here: 32:1 then 64:1 at 2048 words, the two
            # multiplexers about equally deep)
            ln = wib // 2
            gn = NW >> ln
            grp = Signal(gn, name=f"{name}_grp")
            m.d.sync += grp.eq(Cat(*[nz[g << ln:(g + 1) << ln].bit_select(w[:ln], 1)
                                     for g in range(gn)]))
            r = Signal(name="")
            a1h = Signal(name=f"{name}_a1")
            m.d.sync += a1h.eq(hit(a1_v, a1_w, w))
            m.d.comb += r.eq(grp.bit_select(w_next[ln:], 1) | a1h)
            return r

        def nz_at3(w, w1, w2, name):
            """``nz`` of word ``w`` as of this cycle, into a register over three cycles (a
            multiplexer per group of words by w's low bits, then per group of those by the
            middle bits of ``w1`` = w a cycle later, then over the rest by ``w2``'s high
            bits): about 16:1, 16:1, 8:1 at 2048 words, so each stage is a few LUTs."""
            l1 = (wib + 2) // 3
            l2 = min(wib, 2 * l1)
            g1 = NW >> l1
            grp1 = Signal(g1, name=f"{name}_g1")
            m.d.sync += grp1.eq(Cat(*[nz[g << l1:(g + 1) << l1].bit_select(w[:l1], 1)
                                      for g in range(g1)]))
            g2 = NW >> l2
            n2 = 1 << (l2 - l1)
            grp2 = Signal(g2, name=f"{name}_g2")
            m.d.sync += grp2.eq(Cat(*[grp1[g * n2:(g + 1) * n2].bit_select(w1[l1:l2], 1)
                                      for g in range(g2)]))
            r = Signal(name=f"{name}_r")
            m.d.sync += r.eq(grp2.bit_select(w2[l2:], 1) if g2 > 1 else grp2[0])
            return r

        # -- cursor state ------------------------------------------------------------------
        wbt = Signal(W)
        cw = wbt[ws:sb]
        lag = Signal(W, init=LOOKAHEAD)       # now + LA - wbt, a register (see the wheel)
        cur = Signal(B)
        C = LOOKAHEAD_WORDS
        lq = [Signal(B, name=f"lq{i}") for i in range(C)]   # words cw + 1 ...
        lq_lvl = Signal(range(C + 1))
        rf1, rf2, rf3 = Signal(), Signal(), Signal()        # look-ahead reads in flight
        rd_ptr = Signal(wib, init=1)                        # the next word to read
        rw1 = Signal(wib)                                   # the word read last cycle
        rw2 = Signal(wib)                                   # and the cycle before
        leave_r = Signal()
        lv_hi, lv_lo = Signal(G), Signal(K)                 # the cursor's word of last cycle

        # -- insert stage: target (the wheel's rule) ---------------------------------------
        # Every term that does not depend on the deadline is a register computed a cycle
        # ahead (``now`` advances by 1 per cycle, the port's contract; the lag by 1 - B x
        # leave): earliest = now + IL, the park point (its branch: "the lag is at most B")
        # and "earliest is before the park point" (the min's compare for that candidate).
        # With the lag below 2**(W-1) (the contract's range), "earliest - wbt <= park - wbt"
        # is "lag <= H + B - 1 - (IL - LA)" whichever park branch applies.
        s1_v, s1_id, s1_t = Signal(), Signal(ib), Signal(W)
        leave = Signal()
        dl = self.ins.payload.deadline
        earliest = Signal(W, init=INSERT_LATENCY)
        park = Signal(W, init=c.horizon & mw)
        pick_e = Signal(init=int(LOOKAHEAD <= c.horizon + B - 1 - (INSERT_LATENCY - LOOKAHEAD)))

        def lag_next_le(k):
            """The next cycle's lag <= k, from this cycle's lag (compares with constants)."""
            return Mux(leave, lag <= k + B - 1, lag <= k - 1)

        near_n = Signal(name="")
        m.d.comb += near_n.eq(lag_next_le(B))
        pa, pb0, pb1 = (Signal(W, name="") for _ in range(3))
        m.d.comb += [pa.eq(now + (1 + c.horizon)), pb0.eq(wbt + (B - 1 + c.horizon)),
                     pb1.eq(wbt + (2 * B - 1 + c.horizon))]
        m.d.sync += [earliest.eq(now + (1 + INSERT_LATENCY)),
                     pick_e.eq(lag_next_le(c.horizon + B - 1 - (INSERT_LATENCY - LOOKAHEAD))),
                     park.eq(Mux(near_n, pa, Mux(leave, pb1, pb0)))]
        # two stages: n, every compare of the deadline (one carry chain each, side by side)
        # into registers with the terms; n + 1, the selects (no carry chain)
        i0_v, i0_id = Signal(), Signal(ib)
        i0_dl, i0_e, i0_p = Signal(W), Signal(W), Signal(W)
        i0_sel_e, i0_pick_e, i0_pw, i0_ge, i0_le = (Signal() for _ in range(5))
        m.d.comb += self.ins.ready.eq(1)
        m.d.sync += [i0_v.eq(self.ins.valid),
                     i0_id.eq(Cat(self.ins.payload.flow, self.ins.payload.gen)),
                     i0_dl.eq(dl), i0_e.eq(earliest), i0_p.eq(park), i0_pick_e.eq(pick_e),
                     i0_sel_e.eq(_le(dl, earliest, W)),     # "earliest is the larger"
                     i0_pw.eq(park < wbt),                  # the window [wbt, park] wraps
                     i0_ge.eq(dl >= wbt), i0_le.eq(dl <= park)]
        pick_dl = Signal(name="")       # dl in the cyclic interval [wbt, park]
        m.d.comb += pick_dl.eq(Mux(i0_pw, i0_ge | i0_le, i0_ge & i0_le))
        pick_t0 = Signal(name="")
        m.d.comb += pick_t0.eq(Mux(i0_sel_e, i0_pick_e, pick_dl))
        m.d.sync += [s1_v.eq(i0_v), s1_id.eq(i0_id),
                     s1_t.eq(Mux(pick_t0, Mux(i0_sel_e, i0_e, i0_dl), i0_p))]

        # -- n + 2: bitmap read of the target's word ---------------------------------------
        s2_v, s2_id, s2_slot = Signal(), Signal(ib), Signal(sb)
        s3_v, s3_id, s3_slot, s3_nz = Signal(), Signal(ib), Signal(sb), Signal()
        m.d.sync += [s2_v.eq(s1_v), s2_id.eq(s1_id), s2_slot.eq(s1_t[:sb]),
                     s3_v.eq(s2_v), s3_id.eq(s2_id), s3_slot.eq(s2_slot),
                     s3_nz.eq(nz_at(s1_t[ws:sb], s2_slot[ws:], "s2_nz"))]

        # -- n + 4: read-modify-write (the writes of the last two cycles forwarded) ---------
        s3_w = s3_slot[ws:]
        m.d.comb += bm_i.r_addr.eq(s1_t[ws:sb])
        # the forwarding hits, compared a cycle ahead (the write of the stage ahead and a1
        # against the stage before's word)
        h1, h2 = Signal(), Signal()
        m.d.sync += [h1.eq(s3_v & (s3_w == s2_slot[ws:])), h2.eq(a1_v & (a1_w == s2_slot[ws:]))]
        old = Signal(B)
        m.d.comb += old.eq(Mux(h1, a1_d, Mux(h2, a2_d, Mux(s3_nz, bm_i.r_data, 0))))
        bit_oh = Signal(B)
        m.d.comb += bit_oh.eq(Const(1, B) << s3_slot[:ws])
        new = Signal(B)
        m.d.comb += new.eq(old | bit_oh)
        # the insert's copy is written now; the cursor's copy a cycle later from the a1
        # registers (the route between the two copies is then a cycle of its own; the
        # look-ahead reads forward the write they miss, arr_a3)
        m.d.comb += [bm_i.w_addr.eq(s3_w), bm_i.w_data.eq(new), bm_i.w_en.eq(s3_v),
                     bm_c.w_addr.eq(a1_w), bm_c.w_data.eq(a1_d), bm_c.w_en.eq(a1_v)]
        # the old word registered; "more" (its bit at the target) is selected from the
        # register by the head's write stage (a 32:1 multiplexer from registers, not after
        # the bitmap RAM's output)
        old_r = Signal(B)
        s4_v, s4_id, s4_slot = Signal(), Signal(ib), Signal(sb)
        m.d.sync += [a1_v.eq(s3_v), a1_w.eq(s3_w), a1_d.eq(new), a1_oh.eq(bit_oh),
                     a1_hi.eq(Mux(s3_v, Const(1, G) << s3_w[lk:], 0)),
                     a1_lo.eq(Const(1, K) << s3_w[:lk]),
                     old_r.eq(old),
                     s4_v.eq(s3_v), s4_id.eq(s3_id), s4_slot.eq(s3_slot)]

        # -- n + 5: head fetch-and-replace; n + 8: link write of the old head ---------------
        more = Signal(name="")
        m.d.comb += more.eq(old_r.bit_select(s4_slot[:ws], 1))
        m.d.comb += [head.w_addr.eq(s4_slot), head.w_data.eq(Cat(s4_id, more)),
                     head.w_en.eq(s4_v)]
        s5_v, s5_id, s6_v, s6_id = Signal(), Signal(ib), Signal(), Signal(ib)
        m.d.sync += [s5_v.eq(s4_v), s5_id.eq(s4_id), s6_v.eq(s5_v), s6_id.eq(s5_id)]
        # n + 8: the old head, registered (the head RAM's port-A bank multiplexer and the
        # route to the link RAM are a cycle of their own), written to link[e]; the chase
        # reads link[e] at issue + 5 >= n + 10
        s7_v, s7_id, s7_old = Signal(), Signal(ib), Signal(ib + 1)
        m.d.sync += [s7_v.eq(s6_v), s7_id.eq(s6_id), s7_old.eq(head.a_data)]
        m.d.comb += [link.w_addr.eq(s7_id), link.w_data.eq(s7_old), link.w_en.eq(s7_v)]

        # nz: the last write sets its word, the cursor's last leave clears its word, both a
        # cycle late from registers (one-hot halves); never the same word (see the module
        # docstring)
        for w in range(NW):
            g, k = w // K, w % K
            m.d.sync += nz[w].eq((nz[w] & ~(leave_r & lv_hi[g] & lv_lo[k]))
                                 | (a1_hi[g] & a1_lo[k]))

        # -- cursor ------------------------------------------------------------------------
        # The write of this cycle (the read-modify-write's bit) goes straight into the
        # cursor's registers (its word and the look-ahead words, wherever it lands after
        # this cycle's leave), so the cursor's loop starts at its registers; a word arriving
        # from the RAM takes the writes it missed (this cycle's, a1's, a2's: arr_*, the
        # compares a cycle ahead from registers where they can be).
        arr_a1, arr_a2, arr_x = Signal(), Signal(), Signal()
        # rel_eq[j]: this cycle's write is in word cw + j, registered a cycle ahead from the
        # stage before (one subtraction, compares with constants, both outcomes of the
        # leave selected by it)
        rel_eq = Signal(C + 2)
        rel2 = Signal(wib, name="")
        m.d.comb += rel2.eq(s2_slot[ws:] - cw)
        for j in range(C + 2):
            m.d.sync += rel_eq[j].eq(s2_v & Mux(leave, rel2 == j + 1, rel2 == j))

        def m_at(j):
            """This cycle's write, if its word is cw + j."""
            return Mux(rel_eq[j], bit_oh, 0)

        arr_m = Signal()
        # arr_a3: the cursor's copy is written a cycle late, so a look-ahead read also misses
        # the write made into it in its own cycle (a1's): its bit, taken at the read, delayed
        # (and that read's nz leaves a1 out: if a1's write is the word's first since the
        # cursor cleared it, the RAM still holds the old lap's bits)
        arr_y, arr_a3 = Signal(B), Signal(B)
        m.d.sync += [arr_y.eq(Mux(a1_v & (a1_w == rd_ptr), a1_oh, 0)), arr_a3.eq(arr_y)]
        m.d.sync += [arr_a1.eq(s3_v & (s3_w == rw1)), arr_x.eq(s3_v & (s3_w == rd_ptr)),
                     arr_a2.eq(arr_x), arr_m.eq(s2_v & (s2_slot[ws:] == rw1))]
        # the word arrives from the RAM at rf2 and is registered raw (d3: the route from the
        # block-RAM column is a cycle of its own); its nz mask and the writes it missed up to
        # then (fw3, from registers) are applied at rf3 (that cycle's write is m_at's, below)
        d3, fw3 = Signal(B), Signal(B)
        # the read's nz (as of its cycle: the last write, a1, is taken by arr_a3) in three
        # stages, ready with the word's raw register
        rnz3 = nz_at3(rd_ptr, rw1, rw2, "rnz")
        m.d.sync += [d3.eq(bm_c.r_data),
                     fw3.eq(Mux(arr_a1, a1_oh, 0) | Mux(arr_a2, a2_oh, 0)
                            | Mux(arr_m, bit_oh, 0) | arr_a3)]
        bits = cur
        p_any, p_off = _first_set(m, bits, B)
        # "the cursor's word is empty / has one bit" as registers (cur_z, cur_o), computed
        # a cycle ahead for both outcomes of the leave (see below), so that the leave is one
        # LUT from registers
        cur_z = Signal(init=1)
        cur_o = Signal()
        # the lag's facts as registers: "its last slot is due" and the due offsets, both
        # computed for both next lags (leave or not) from the lag register, selected by
        # leave
        # (the next lag's low ws bits are lag + 1's whether or not the cursor leaves; its
        # "at least B" and "at least B - 1" are compares of the lag with constants)
        lag_end = Signal(init=int(LOOKAHEAD >= B - 1))
        due_mask = Signal(B, init=(1 << min(B, LOOKAHEAD + 1)) - 1)
        lag_big = Signal(name="")       # lag >= 2B: an OR of its high bits, no carry chain
        m.d.comb += lag_big.eq(lag[ws + 1:] != 0)

        def lag_ge(k):
            """lag >= k for a constant k < 2B: the high bits' OR and a 6-bit compare."""
            return lag_big | (lag[:ws + 1] >= k)

        lo_n = Signal(ws, name="")
        hi_n = Signal(name="")
        m.d.comb += [lo_n.eq(lag[:ws] + 1),
                     hi_n.eq(Mux(leave, lag_ge(2 * B - 1), lag_ge(B - 1)))]
        m.d.sync += [lag_end.eq(Mux(leave, lag_ge(2 * B - 2), lag_ge(B - 2))),
                     due_mask.eq(Cat(*[(hi_n | (lo_n >= i)) if i else Const(1)
                                       for i in range(B)]))]
        iss1_v, iss2_v, iss3_v, iss4_v = Signal(), Signal(), Signal(), Signal()
        iss1_t, iss2_t, iss3_t, iss4_t = Signal(W), Signal(W), Signal(W), Signal(W)
        hq_lvl = Signal(range(HEAD_QUEUE + 1))
        # head queue + heads in flight <= HEAD_QUEUE - 1: a register (its next value from
        # the next queue level, both outcomes of this cycle's issue)
        advance = Signal(init=1)
        issue = Signal()
        m.d.comb += issue.eq(((bits & due_mask) != 0) & advance)
        low_clr = Signal(B, name="")
        m.d.comb += low_clr.eq(bits & (bits - 1))
        bits_after = Signal(B, name="")
        m.d.comb += bits_after.eq(Mux(issue, low_clr, bits))
        # (with lag_end every offset is due, so "the one bit left is issued" is advance)
        m.d.comb += leave.eq(lag_end & (lq_lvl != 0) & (cur_z | (advance & cur_o)))
        m.d.sync += [iss1_v.eq(issue), iss1_t.eq(Cat(p_off, wbt[ws:])),
                     iss2_v.eq(iss1_v), iss2_t.eq(iss1_t), iss3_v.eq(iss2_v), iss3_t.eq(iss2_t),
                     iss4_v.eq(iss3_v), iss4_t.eq(iss3_t)]
        m.d.comb += head.r_addr.eq(iss1_t[:sb])

        # look-ahead words: lq[i] is word cw + 1 + i (i < lq_lvl), the last write ORed in;
        # the read completing now (rf3) is word cw + 1 + lq_lvl
        eff = []
        for i in range(C):
            eff.append(lq[i])
        arr = Signal(B)
        m.d.comb += arr.eq(Mux(rnz3, d3, 0) | fw3)
        src = [Signal(B, name=f"lq_src{i}") for i in range(C + 1)]
        for i in range(C + 1):
            m.d.comb += src[i].eq(Mux(lq_lvl > i, eff[i], arr) if i < C else arr)
        for i in range(C):
            m.d.sync += lq[i].eq(Mux(leave, src[i + 1] | m_at(i + 2), src[i] | m_at(i + 1)))
        rd = Signal()
        m.d.comb += rd.eq(lq_lvl + rf1 + rf2 + rf3 <= C - 1)
        m.d.comb += bm_c.r_addr.eq(rd_ptr)
        m.d.sync += [lq_lvl.eq(lq_lvl + rf3 - leave), rf1.eq(rd), rf2.eq(rf1), rf3.eq(rf2),
                     rw1.eq(rd_ptr), rw2.eq(rw1)]
        with m.If(rd):
            m.d.sync += rd_ptr.eq(rd_ptr + 1)
        m.d.sync += lag.eq(Mux(leave, lag + (1 - B), lag + 1))
        with m.If(leave):
            m.d.sync += [wbt.eq(wbt + B), cur.eq(eff[0] | m_at(1))]
        with m.Else():
            m.d.sync += cur.eq(bits_after | m_at(0))
        # the next word's facts: staying, the word after this cycle's issue (one bit fewer)
        # and this cycle's write if it is a new bit there; leaving, look-ahead word 0 and the
        # write if new there (the write's slot is never the one issued: it is >= now + 5)
        cz, co, ct = _count3(m, cur, B)
        lz, lo, _ = _count3(m, lq[0], B)
        nb0, nb1 = Signal(name=""), Signal(name="")
        m.d.comb += [nb0.eq(rel_eq[0] & ~cur.bit_select(s3_slot[:ws], 1)),
                     nb1.eq(rel_eq[1] & ~lq[0].bit_select(s3_slot[:ws], 1))]
        za, oa = Signal(name=""), Signal(name="")
        m.d.comb += [za.eq(Mux(issue, co, cz)), oa.eq(Mux(issue, ct, co))]
        m.d.sync += [cur_z.eq(Mux(leave, lz & ~nb1, za & ~nb0)),
                     cur_o.eq(Mux(leave, (lo & ~nb1) | (lz & nb1), (oa & ~nb0) | (za & nb0)))]
        m.d.sync += [leave_r.eq(leave), lv_hi.eq(Const(1, G) << cw[lk:]),
                     lv_lo.eq(Const(1, K) << cw[:lk])]

        # -- pop side ----------------------------------------------------------------------
        # sources of the next entry: the held link result, the link result arriving now
        # (lk2), the head queue, the head arrived last cycle (iss4, registered: the head RAM's
        # bank multiplexer and the route from the block-RAM columns are a cycle of their
        # own); one enters the buffer per cycle
        lk1, lk2, lk3 = Signal(), Signal(), Signal()
        hold_v, hold_id, hold_more = Signal(), Signal(ib), Signal()
        chase_t = Signal(W)
        ent = data.StructLayout({"id": ib, "more": 1, "t": W})
        hq = [Signal(ent, name=f"hq{i}") for i in range(HEAD_QUEUE)]
        pb = [Signal(self.pop.payload.shape(), name=f"pb{i}") for i in range(POP_BUFFER)]
        pb_lvl = Signal(range(POP_BUFFER + 1))
        l_id, l_more = link.r_data[:ib], link.r_data[ib]
        h_id, h_more = Signal(ib), Signal()
        m.d.sync += [h_id.eq(head.r_data[:ib]), h_more.eq(head.r_data[ib])]
        # the queue's level also one-hot (hq_oh[i]: level i) and the buffer's room, as
        # registers: the sequencer's decision is a LUT or two from registers
        hq_oh = Signal(HEAD_QUEUE + 1, init=1)
        hq_any = ~hq_oh[0]
        use_hold, use_link, use_hq, use_head = (Signal(name=n) for n in
                                                ("use_hold", "use_link", "use_hq", "use_head"))
        busy = Signal(name="")          # a link read in flight, its result not here yet
        m.d.comb += busy.eq(hold_v | lk1 | lk2 | lk3)
        m.d.comb += [use_hold.eq(hold_v), use_link.eq(~hold_v & lk3),
                     use_hq.eq(~busy & hq_any),
                     use_head.eq(~busy & ~hq_any & iss4_v)]
        c_id, c_more, c_t = Signal(ib), Signal(), Signal(W)
        m.d.comb += [
            c_id.eq(Mux(use_hold, hold_id, Mux(use_link, l_id,
                                               Mux(use_hq, hq[0].id, h_id)))),
            c_more.eq(Mux(use_hold, hold_more, Mux(use_link, l_more,
                                                   Mux(use_hq, hq[0].more, h_more)))),
            c_t.eq(Mux(use_hold | use_link, chase_t, Mux(use_hq, hq[0].t, iss4_t))),
        ]
        room = Signal(init=1)
        push = Signal()
        m.d.comb += push.eq((use_hold | use_link | use_hq | use_head) & room)
        # the link read of an entry with "more" is issued the cycle after it enters, its
        # address from a register: no block-RAM output reaches another RAM's address through
        # logic (the head RAM's bank multiplexer and the source select would be on it)
        lrd = Signal()
        l_addr = Signal(ib)
        m.d.comb += [lrd.eq(push & c_more), link.r_addr.eq(l_addr)]
        m.d.sync += [l_addr.eq(c_id), lk1.eq(lrd), lk2.eq(lk1), lk3.eq(lk2)]
        with m.If(push):
            m.d.sync += chase_t.eq(c_t)
        m.d.sync += [hold_v.eq((use_hold | use_link) & ~room)]
        with m.If(use_link):
            m.d.sync += [hold_id.eq(l_id), hold_more.eq(l_more)]
        # the pop buffer
        take = Signal()
        m.d.comb += [self.pop.valid.eq(pb_lvl != 0), self.pop.payload.eq(pb[0]),
                     take.eq(self.pop.valid & self.pop.ready)]
        newe = Signal(self.pop.payload.shape())
        m.d.comb += [newe.flow.eq(c_id[:c.flow_bits]), newe.gen.eq(c_id[c.flow_bits:]),
                     newe.slot.eq(c_t[:sb])]
        pos = Signal(range(POP_BUFFER + 1))
        m.d.comb += pos.eq(pb_lvl - take)
        for i in range(POP_BUFFER):
            nxt = pb[i + 1] if i + 1 < POP_BUFFER else pb[i]
            with m.If(push & (pos == i)):
                m.d.sync += pb[i].eq(newe)
            with m.Elif(take):
                m.d.sync += pb[i].eq(nxt)
        pb_next = Signal(range(POP_BUFFER + 1), name="")
        m.d.comb += pb_next.eq(pb_lvl + push - take)
        m.d.sync += [pb_lvl.eq(pb_next), room.eq(pb_next < POP_BUFFER)]
        # the head queue: the first leaves when used, the arriving head joins unless used
        hdeq = Signal()
        henq = Signal()
        m.d.comb += [hdeq.eq(use_hq & push), henq.eq(iss4_v & ~(use_head & push))]
        hnew = Signal(ent)
        m.d.comb += [hnew.id.eq(h_id), hnew.more.eq(h_more), hnew.t.eq(iss4_t)]
        hpos_oh = Signal(HEAD_QUEUE + 1, name="")     # hq_lvl - hdeq, one-hot
        m.d.comb += hpos_oh.eq(Mux(hdeq, hq_oh[1:], hq_oh))
        for i in range(HEAD_QUEUE):
            nxt = hq[i + 1] if i + 1 < HEAD_QUEUE else hq[i]
            with m.If(henq & hpos_oh[i]):
                m.d.sync += hq[i].eq(hnew)
            with m.Elif(hdeq):
                m.d.sync += hq[i].eq(nxt)
        hq_next = Signal(range(HEAD_QUEUE + 1), name="")
        m.d.comb += hq_next.eq(hq_lvl + henq - hdeq)
        hq_oh_n = Signal(HEAD_QUEUE + 1, name="")
        m.d.comb += hq_oh_n.eq(Mux(henq & ~hdeq, hq_oh << 1,
                                   Mux(hdeq & ~henq, hq_oh >> 1, hq_oh)))
        m.d.sync += hq_oh.eq(hq_oh_n)

        def fits(extra):
            """next queue level + ``extra`` heads in flight <= HEAD_QUEUE - 1, from the
            one-hot level (no adder)."""
            return Cat(*[hq_oh_n[lv] & (extra <= HEAD_QUEUE - 1 - lv)
                         for lv in range(HEAD_QUEUE)]).any()

        fl = Signal(2, name="")         # heads in flight next cycle besides this issue
        m.d.comb += fl.eq(iss1_v + iss2_v + iss3_v)
        m.d.sync += [hq_lvl.eq(hq_next), advance.eq(Mux(issue, fits(fl + 1), fits(fl)))]

        # -- statistics ----------------------------------------------------------------------
        occ = self.occupancy
        m.d.sync += [occ.eq(occ + self.ins.valid - push),
                     self.max_occupancy.eq(umax(self.max_occupancy, occ))]
        push_r, push_t = Signal(), Signal(W)
        lat = Signal(W, name="")
        lat_r = Signal(sb)
        m.d.sync += [push_r.eq(push), push_t.eq(c_t)]
        m.d.comb += lat.eq(now - push_t)
        m.d.sync += [lat_r.eq(Mux(push_r, Mux(lat >= (1 << sb) - 1, (1 << sb) - 1, lat[:sb]), 0)),
                     self.max_lateness.eq(umax(self.max_lateness, lat_r))]
        for ram in (bm_i, bm_c, head, link):
            ram.build(m, platform)
        return m
