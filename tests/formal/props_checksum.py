"""Formal properties of the Internet checksum (:mod:`hw.lib.checksum`), of the CNP
generator's IPv4 header checksum (:mod:`hw.nic.cnp_gen`) and of the L3QCN private CNM
generator's IPv4 header checksum (:class:`hw.switch.l3qcn.PrivateCnmGen`, end to end, on the
bytes of its output stream).  (The 802.1Qau CNM of :mod:`hw.switch.cnm_gen` is an L2
frame: it has no checksum field; its FCS is left to the MAC.)

The reference is the arithmetic definition, not the RTL's fold: the ones'-complement sum of
words whose plain sum is ``S`` is 0 when ``S == 0`` and else the value in ``[1, 0xFFFF]``
congruent to ``S`` modulo ``0xFFFF`` (each end-around carry adds ``2**16 - 1 = 0 (mod
0xFFFF)`` back); a header whose checksum field is right sums (with the field) to ``0xFFFF``,
i.e. to a non-zero multiple of ``0xFFFF`` before folding.
"""

from __future__ import annotations

from amaranth.hdl import Assert, Assume, Cat, Const, Cover, Module, Mux, ResetSignal, Signal, Value
from amaranth.hdl._ast import AnyConst, AnySeq

from hw.lib.checksum import be_words, ones_sum
from hw.nic.cnp_config import CnpGenConfig
from hw.nic.cnp_gen import CnpGenerator
from hw.switch.l3qcn import PrivateCnmGen
from hw.switch.l3qcn_config import PrivateCnmConfig

from .runner import Property

__all__ = ["PROPERTIES"]


def fold_reference(total, max_total: int | None = None):
    """The ones'-complement sum of words whose plain sum is ``total`` (the definition):
    ``(total - 1) % 0xFFFF + 1``, 0 for 0.  With ``max_total`` (a bound of ``total``) the same
    as ``total - q * 0xFFFF``, ``q`` the number of multiples ``k * 0xFFFF`` (``k >= 1``) below
    ``total``: one comparison per multiple instead of a divider, which is much faster for the
    solver on ten words (``checksum.ones_sum_10``: 7 s instead of 115 s on the loaded machine)
    and slower on two partial sums with 28 multiples (``checksum.ones_sum_partials``)."""
    if max_total is None:
        return Mux(total == 0, 0, (total - 1) % 0xFFFF + 1)
    total = Value.cast(total)
    q = sum(total > k * 0xFFFF for k in range(1, max_total // 0xFFFF + 1))
    return Mux(total == 0, 0, total - q * 0xFFFF)


def _ones_sum_plain(n: int):
    def build():
        m = Module()
        words = [AnyConst(16) for _ in range(n)]
        got = Signal(16)
        m.d.comb += got.eq(ones_sum(words))
        m.d.comb += Assert(got == fold_reference(sum(words), 0xFFFF * n))
        # the end-around carry arises, twice when n > 1, and the zero/0xFFFF edges exist
        total = Signal(range(0xFFFF * n + 1))
        m.d.comb += total.eq(sum(words))
        m.d.comb += [Cover(total == 0xFFFF), Cover(total == 0x10000), Cover(got == 0xFFFF)]
        if n > 1:
            m.d.comb += Cover(total == 0xFFFF * n)
        return m
    return build


def _ones_sum_partials(bounds: tuple[int, ...]):
    """``ones_sum(partials, sum(bounds))``, partials being plain sums bounded by ``bounds``
    (the L3QCN generator's two-stage checksum)."""
    def build():
        m = Module()
        parts = []
        for i, b in enumerate(bounds):
            p = Signal(range(b + 1), name=f"p{i}")
            m.d.comb += [p.eq(AnyConst(len(p))), Assume(p <= b)]
            parts.append(p)
        got = Signal(16)
        m.d.comb += got.eq(ones_sum(parts, sum(bounds)))
        m.d.comb += Assert(got == fold_reference(sum(parts)))
        m.d.comb += [Cover(sum(parts) == sum(bounds)), Cover(got == 0xFFFF)]
        return m
    return build


def _cnp_header_checksum(cfg: CnpGenConfig):
    """Every CNP the generator emits, reassembled from its output beats (any requests, any
    register writes at any time, any back-pressure, resets at any time): its IPv4 header's ten
    words, the checksum field included, have the ones'-complement sum 0xFFFF.  End to end, so
    it covers the generator's pipelined checksum (``CnpGenerator.CKSUM_STAGES``) and the beat
    that waits for it, not a re-statement of the arithmetic."""
    def build():
        m = Module()
        m.submodules.dut = dut = CnpGenerator(cfg)
        req, beat, w = dut.request, dut.frame, dut.csr_w
        m.d.comb += [req.valid.eq(AnySeq(1)),
                     req.payload.eq(AnySeq(len(req.payload.as_value()))),
                     w.valid.eq(AnySeq(1)), w.payload.eq(AnySeq(len(w.payload.as_value()))),
                     beat.ready.eq(AnySeq(1))]
        # the header's last byte is in beat ``last``: the claim is made when that beat is taken
        # (the checksum beat waits for the pipelined sum; the ICRC's later beats do not matter)
        DB, lo = cfg.data_bytes, cfg.l2_bytes
        last = (lo + 19) // DB
        got = [Signal(8 * DB, name=f"beat{k}") for k in range(last)]
        count = Signal(range(last + 2))
        take = beat.valid & beat.ready
        with m.If(take):
            with m.If(beat.payload.last):
                m.d.sync += count.eq(0)
            with m.Elif(count <= last):
                m.d.sync += count.eq(count + 1)
            for k in range(last):
                with m.If(count == k):
                    m.d.sync += got[k].eq(beat.payload.data)
        frame = Cat(*got, beat.payload.data)
        byte = [frame[8 * i:8 * i + 8] for i in range((last + 1) * DB)]
        ip = be_words(byte[lo:lo + 20])
        done = take & (count == last)
        _, _, ip_fold, stmts = end_around_fold(sum(ip), 21)
        m.d.comb += stmts
        with m.If(done):
            m.d.comb += Assert(ip_fold == 0xFFFF)
        m.d.comb += [Cover(done), Cover(done & (ip[5] == 0))]
        return m
    return build


def end_around_fold(total, width: int):
    """Fold a plain sum of at most ``2**width - 1`` into 16 bits by end-around carries (two
    folds suffice below ``2**32``; a zero sum stays 0, a non-zero multiple of 0xFFFF gives
    0xFFFF): the textbook evaluation, cheaper for the solver than the ``%`` of
    :func:`fold_reference`, to which it is equal (both are the ones'-complement sum)."""
    assert width <= 32
    t = Signal(width, name="total")
    t1, t2 = Signal(18, name="fold1"), Signal(17, name="fold2")
    return t, t1, t2, [t.eq(total), t1.eq(t[:16] + t[16:]), t2.eq(t1[:16] + t1[16:])]


def _private_cnm_ip_checksum(cfg: PrivateCnmConfig):
    """Every packet the private CNM generator emits, reassembled from its output beats (any
    requests, any back-pressure, resets at any time): its IPv4 header's ten words, the
    checksum field included, have the ones'-complement sum 0xFFFF.  (The same claim for the
    UDP checksum, over the pseudo-header and the 52-byte datagram, 26 words, did not finish
    within 5 minutes at the first packet; the UDP checksum is checked by simulation against
    scapy.)"""
    def build():
        m = Module()
        m.submodules.dut = dut = PrivateCnmGen(cfg)
        req, beat = dut.request, dut.packet
        m.d.comb += [req.valid.eq(AnySeq(1)),
                     req.payload.eq(AnySeq(len(req.payload.as_value()))),
                     beat.ready.eq(AnySeq(1))]
        DB, n = cfg.data_bytes, cfg.packet_bytes
        nbeats = -(-n // DB)
        got = [Signal(8 * DB, name=f"beat{k}") for k in range(nbeats - 1)]
        count = Signal(range(nbeats + 1))
        take = beat.valid & beat.ready
        with m.If(take):
            m.d.sync += count.eq(Mux(beat.payload.last, 0, count + 1))
            for k in range(nbeats - 1):
                with m.If(count == k):
                    m.d.sync += got[k].eq(beat.payload.data)
        frame = Cat(*got, beat.payload.data)
        byte = [frame[8 * i:8 * i + 8] for i in range(n)]
        # the header's words as they are on the wire; the sum of the nine other words (as the
        # generator sums them) plus the checksum field
        ip = be_words(byte[:20])
        done = take & beat.payload.last
        _, _, ip_fold, stmts = end_around_fold(sum(w for k, w in enumerate(ip) if k != 5)
                                               + ip[5], 21)
        m.d.comb += stmts
        with m.If(done):
            m.d.comb += [Assert(count == nbeats - 1), Assert(ip_fold == 0xFFFF)]
        # the edge: the checksum field 0 (the other words' sum is 0xFFFF)
        m.d.comb += [Cover(done), Cover(done & (ip[5] == 0))]
        return m
    return build


def _private_cnm_udp_checksum(cfg: PrivateCnmConfig, fixed_timing: bool = False):
    """Every private CNM the generator emits, reassembled from its output beats (any
    requests, any back-pressure; no reset after the initial one): the UDP checksum verifies:
    the pseudo-header (the packet's own IPv4 source and destination, protocol and UDP length
    fields) and the whole datagram, the checksum field included, have the ones'-complement
    sum 0xFFFF (RFC 768; a computed 0 is sent as 0xFFFF, which also sums to 0xFFFF).

    How it is made tractable: the plain sum of the 26 words is taken in the grouping the
    generator uses (the pseudo-header and the datagram's words in wire order, the checksum
    word as 0, two halves of 13 words, each a left-to-right chain, then the checksum word
    added).  Ones'-complement addition is associative and commutative, so any grouping is
    the standard's sum; this one is an adder tree of the same shape as the generator's over
    words that are equal bit for bit (the output bytes are the request's fields), so the
    solver matches the two trees node by node instead of proving the equivalence of two
    differently shaped 26-input adders (what did not finish).  The folding is the textbook
    end-around carry; ``checksum.ones_sum_*`` prove that equal to the definition."""
    def build():
        m = Module()
        m.submodules.dut = dut = PrivateCnmGen(cfg)
        req, beat = dut.request, dut.packet
        if fixed_timing:
            # one request, any contents, offered from reset on; no back-pressure
            sent = Signal()
            with m.If(req.valid & req.ready):
                m.d.sync += sent.eq(1)
            m.d.comb += [req.valid.eq(~sent),
                         req.payload.eq(AnyConst(len(req.payload.as_value()))),
                         beat.ready.eq(1)]
        else:
            m.d.comb += [req.valid.eq(AnySeq(1)),
                         req.payload.eq(AnySeq(len(req.payload.as_value()))),
                         beat.ready.eq(AnySeq(1))]
        m.d.comb += Assume(~ResetSignal())
        DB, n = cfg.data_bytes, cfg.packet_bytes
        nbeats = -(-n // DB)
        got = [Signal(8 * DB, name=f"beat{k}") for k in range(nbeats - 1)]
        count = Signal(range(nbeats + 1))
        take = beat.valid & beat.ready
        with m.If(take):
            m.d.sync += count.eq(Mux(beat.payload.last, 0, count + 1))
            for k in range(nbeats - 1):
                with m.If(count == k):
                    m.d.sync += got[k].eq(beat.payload.data)
        frame = Cat(*got, beat.payload.data)
        byte = [frame[8 * i:8 * i + 8] for i in range(n)]
        # pseudo-header from the packet itself: source, destination, zero + protocol, length
        pseudo = be_words(byte[12:20] + [Const(0, 8), byte[9]] + byte[24:26])
        dgram = be_words(byte[20:n])
        ck = dgram[3]
        words = pseudo + dgram[:3] + [Const(0, 16)] + dgram[4:]
        half = len(words) // 2
        # each half a plain sum in a register-width signal of the generator's bound (the
        # same adder widths after Yosys's width reduction)
        h = [Signal(range(0xFFFF * len(g) + 1), name=f"half{i}")
             for i, g in enumerate((words[:half], words[half:]))]
        m.d.comb += [h[0].eq(sum(words[:half])), h[1].eq(sum(words[half:]))]
        plain = h[0] + h[1] + ck
        _, _, fold, stmts = end_around_fold(plain, 21)
        m.d.comb += stmts
        done = take & beat.payload.last
        with m.If(done):
            m.d.comb += [Assert(count == nbeats - 1), Assert(fold == 0xFFFF)]
        m.d.comb += [Cover(done), Cover(done & (ck == 0xFFFF))]
        return m
    return build


#: an IPv4 CNP without L2 header in 16-byte beats; the bound covers the first CNP after a reset
#: (request, the checksum's CKSUM_STAGES, its beat), with any register writes before it; a
#: deeper bound (a second CNP) did not finish in 5 minutes
CNP_V4 = CnpGenConfig(ip_version=4, l2="none", data_bytes=16)
CNP_DEPTH = 8     # the first CNP's header beat is taken at step 6 at the earliest (the cover)

#: 60-byte packets (no sampled bytes) in 4 beats of 16 bytes
PRIVATE_CNM = PrivateCnmConfig(sample_bytes=0, data_bytes=16)

PROPERTIES = [
    Property("checksum.ones_sum_10", "ones_sum of 10 words (an IPv4 header) equals the "
             "ones'-complement sum, every input", _ones_sum_plain(10), mode="prove", depth=1,
             cover_depth=1),
    Property("checksum.ones_sum_2", "ones_sum of 2 words (one end-around carry)",
             _ones_sum_plain(2), mode="prove", depth=1, cover_depth=1, quick=True),
    Property("checksum.ones_sum_partials", "ones_sum of two bounded partial sums (the L3QCN "
             "UDP checksum's two halves) equals the definition",
             _ones_sum_partials((0xFFFF * 14, 0xFFFF * 14)), mode="prove", depth=1,
             cover_depth=1, quick=True),
    Property("cnp_gen.ipv4_header_checksum", "every CNP on the generator's output (any "
             "request, register writes, back-pressure, resets): its IPv4 header sums to "
             "0xFFFF", _cnp_header_checksum(CNP_V4), mode="bmc", depth=CNP_DEPTH,
             # 52 s on a quiet machine, almost all of it the last step (the adder trees'
             # equivalence); over 300 s when the machine's load is above 10
             cover_depth=CNP_DEPTH, timeout=600, cost_s=110),
    Property("l3qcn.private_cnm_ip_checksum", "every private CNM on the generator's output "
             "(any request, back-pressure, resets): its IPv4 header sums to 0xFFFF",
             # the first CNM's last beat is at step 13 since the generator's pipeline grew
             # (27 Nov 2026; step 7 before): + 2 cycles of back-pressure or a later request
             _private_cnm_ip_checksum(PRIVATE_CNM), mode="bmc", depth=16, cover_depth=16,
             timeout=300),
]
