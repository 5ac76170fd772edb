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
candidate; the cursor's freshly read word takes the decision stage's write of the cycle
before.  No insert lands in a word the cursor is leaving (its last slot is <= now + 1).
"""

from __future__ import annotations

from amaranth import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, memory, stream, wiring
from amaranth.lib.wiring import In, Out

from ..lib.arith import saturating_inc, umax
from .timer_wheel_config import INSERT_LATENCY, TimerWheelConfig

__all__ = ["TimerWheel", "TimerWheelConfig", "INSERT_LATENCY", "OVF_COUNT_WIDTH"]

OVF_COUNT_WIDTH = 16


def _first_set(bits: list):
    """(any, index) of the lowest set bit of ``bits`` (a list of 1-bit values), as a balanced
    tree whose index grows one bit per level."""
    nodes = [(b, Const(0, 0)) for b in bits]
    while len(nodes) > 1:
        nxt = []
        for i in range(0, len(nodes), 2):
            (la, li), (ra, ri) = nodes[i], nodes[i + 1]
            nxt.append((la | ra, Cat(Mux(la, li, ri), ~la)))
        nodes = nxt
    return nodes[0]


def _first_two(bits: list):
    """(any, index1, two, index2): the lowest and second lowest set bits of ``bits``."""
    nodes = [(b, Const(0, 0), Const(0, 1), Const(0, 0)) for b in bits]
    while len(nodes) > 1:
        nxt = []
        for i in range(0, len(nodes), 2):
            (la, li, l2, lj), (ra, ri, r2, rj) = nodes[i], nodes[i + 1]
            i1 = Cat(Mux(la, li, ri), ~la)
            # second: the left's second, else (left has one) the right's first, else its second
            i2 = Mux(l2, Cat(lj, Const(0, 1)), Mux(la, Cat(ri, Const(1, 1)), Cat(rj, Const(1, 1))))
            nxt.append((la | ra, i1, l2 | (la & ra) | r2, i2))
        nodes = nxt
    return nodes[0]


def _le(a, b, width):
    """Wrap-safe a <= b on ``width``-bit stamps."""
    return ~(b - a)[width - 1]


class TimerWheel(wiring.Component):
    def __init__(self, config: TimerWheelConfig):
        self.config = c = config
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
        nz = Signal(NW)             # word valid in RAM (else empty)
        full = Signal(NW)           # word has all B slots taken

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
        p_any, p_off = _first_set([bits_eff[i] for i in range(B)])
        p_off_s = Signal(ws)
        m.d.comb += p_off_s.eq(p_off)
        # the cursor's lag: never negative (the cursor stays at or before now + 1), so the
        # compares are unsigned and exact for any lag below 2**W - B
        lag1 = Signal(W)
        m.d.comb += lag1.eq(now + 1 - wbt)
        due = p_off_s <= lag1
        advance = ~self.pop.valid | self.pop.ready
        issue = Signal()
        m.d.comb += issue.eq(p_any & due & advance)
        pop_slot_next = Signal(sb)
        m.d.comb += pop_slot_next.eq(Cat(p_off_s, cw))
        bits_after = Signal(B)
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
        cw1 = Signal(wib)
        m.d.comb += [cw1.eq(cw + 1), b_rdc.addr.eq(cw1)]
        m.d.sync += nz_cur.eq(nz.bit_select(cw1, 1))

        # -- insert stage: target ----------------------------------------------------------
        s1_valid = Signal()
        s1_flow = Signal(c.flow_bits)
        s1_gen = Signal(c.gen_bits)
        s1_target = Signal(W)
        dl = self.ins.payload.deadline
        earliest = Signal(W)
        m.d.comb += earliest.eq(now + INSERT_LATENCY)
        t0 = Signal(W)
        m.d.comb += t0.eq(Mux(_le(dl, earliest, W), earliest, dl))
        park = Signal(W)
        m.d.comb += park.eq(Mux(lag1 <= B, now, wbt + (B - 1)) + c.horizon)
        # min(t0, park) by distance from the cursor (alias-free however far the cursor lags)
        t0_rel = Signal(W)
        park_rel = Signal(W)
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
        nf = [~full[i] for i in range(NW)]
        idx = range(NW)
        # cyclic order from w0 + 1: the words above w0, then those at or below it
        hi = [nf[i] & (w0 < i) for i in idx]
        lo = [nf[i] & (w0 >= i) for i in idx]
        h_any, h_i1, h_two, h_i2 = _first_two(hi)
        l_any, l_i1, l_two, l_i2 = _first_two(lo)
        e1 = Signal(wib)
        e2 = Signal(wib)
        e1_ok = Signal()
        e2_ok = Signal()
        m.d.comb += [
            e1_ok.eq(h_any | l_any),
            e1.eq(Mux(h_any, h_i1, l_i1)),
            e2_ok.eq(h_two | (h_any & l_any) | l_two),
            e2.eq(Mux(h_two, h_i2, Mux(h_any, l_i1, l_i2))),
        ]
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
        s2_nz = Signal(3)
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
            s2_nz.eq(Cat(nz_at(w0), nz_at(e1), nz_at(e2))),
            s2_room.eq(S - (s1_target - wbt)[:sb]),
        ]

        # -- decision stage ------------------------------------------------------------------
        def fwd(word, rd, nzbit):
            return Mux(a_valid & (a_word == word), a_data, Mux(nzbit, rd, 0))

        # the RAM copy of the cursor's word still has the bits popped from it, but only at
        # times <= now + 1, below every target (>= now + 2): the search never sees them
        c0 = Signal(B)
        m.d.comb += c0.eq(fwd(s2_w0, b_rd0.data, s2_nz[0]))
        free0 = Signal(B)
        m.d.comb += free0.eq(~c0 & (Const(ones, B) << s2_off)[:B])
        f0_any, f0 = _first_set([free0[i] for i in range(B)])
        use2 = Signal()
        m.d.comb += use2.eq(a_valid & a_full & (a_word == s2_e1))
        e = Signal(wib)
        e_ok = Signal()
        ce = Signal(B)
        m.d.comb += [
            e.eq(Mux(use2, s2_e2, s2_e1)),
            e_ok.eq(Mux(use2, s2_e2_ok, s2_e1_ok)),
            ce.eq(Mux(use2, fwd(s2_e2, b_rd2.data, s2_nz[2]),
                      fwd(s2_e1, b_rd1.data, s2_nz[1]))),
        ]
        fe_any, fe = _first_set([~ce[i] for i in range(B)])
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
        d_slot = Signal(sb)
        m.d.comb += d_slot.eq(Cat(d_bit, d_word))
        d_disp = Signal(sb)
        m.d.comb += d_disp.eq(d_slot - s2_tslot)
        commit = Signal()
        ovf = Signal()
        m.d.comb += [
            commit.eq(s2_valid & found & (d_disp < s2_room)),
            ovf.eq(s2_valid & ~commit),
        ]
        d_new = Signal(B)
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
            m.d.sync += [wbt.eq(wbt + B), nz.bit_select(cw, 1).eq(0),
                         full.bit_select(cw, 1).eq(0)]
        with m.Else():
            m.d.sync += cur_bits.eq(bits_after | Mux(ins_cw, Const(1, B) << d_bit, 0))
        with m.If(commit):
            m.d.sync += [nz.bit_select(d_word, 1).eq(1), full.bit_select(d_word, 1).eq(d_full)]

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
