"""The NIC notification path: received RoCEv2 packets in (AXI-Stream), CNPs out (AXI-Stream).

parse (Ethernet [+ VLAN] + IPv4 + UDP 4791 + BTH) -> per-QP table check -> DCQCN notification
point (CNP pacing per QP, :class:`hw.nic.dcqcn_np.DcqcnNp`) -> per-QP table read (the CNP's
addresses) -> RoCEv2 CNP generator (:class:`hw.nic.cnp_gen.CnpGenerator`).

See ``docs/integration.md`` ("The NIC notification path").
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from ..layouts import BTH_HEADER, IPV4_HEADER, UDP_HEADER, csr_write_layout
from ..lib.arith import saturating_inc
from ..lib.axis import axis_from_stream, axis_members
from ..lib.checksum import be_words, ones_sum
from ..lib.csr import CsrBank
from ..lib.frame import from_be
from .cnp_config import CNP_OPCODE, ROCEV2_PORT
from .cnp_gen import CnpGenerator
from .cnp_notify_config import CAPTURE_BYTES, COUNTERS, NP_BASE, CnpNotifyConfig
from .dcqcn_np import DcqcnNp

__all__ = ["CnpNotify"]

#: shortest RoCEv2 datagram after the IPv4 header: UDP 8 + BTH 12 + ICRC 4
_MIN_UDP = 8 + 12 + 4


class CnpNotify(wiring.Component):
    """NIC notification path (DCQCN NP side) with AXI-Stream frame ports.

    Parameters
    ----------
    config : CnpNotifyConfig

    Ports
    -----
    s_axis_tdata/tkeep/tvalid/tready/tlast/tuser : AXI-Stream slave, ``data_bytes`` bytes
        Received Ethernet frames without FCS (a MAC's RX stream).  ``tready`` is always 1:
        the parser takes one beat per clock and never holds a frame.  ``tuser[0]`` on the
        ``tlast`` beat: bad frame (dropped, counted malformed).
    m_axis_tdata/tkeep/tvalid/tready/tlast/tuser : AXI-Stream master
        The CNPs (:class:`CnpGenerator`, IPv4, ``l2`` of the configuration), ``tuser`` 0.
        ``tready`` back-pressure delays the CNPs (the NP counts a CNP as sent when the
        generator takes it).
    csr_w, csr_raddr, csr_rdata : the register port (``CnpNotifyConfig.register_map``)
        Words 0-5 are the CNP generator's registers: a write to them waits until the generator
        is between frames.  The per-QP table is written and read through the per-flow windows.
    cnps, ce, malformed, other, unknown_qp : Out(counter_width)
        The saturating counters (also registers ``CNT_*``).

    Classification of a received frame (after its last beat)
    --------------------------------------------------------
    * malformed (dropped): ``tuser`` bad frame; shorter than 60 bytes; an IPv4 ethertype
      (after at most one 802.1Q tag) with version != 4, IHL != 5, a wrong header checksum, a
      fragment (MF or offset), or a total length beyond the frame or below 20 + 24; a RoCEv2
      datagram whose UDP length is not total length - 20.
    * other (ignored): not IPv4, not UDP, not to port 4791, or a CNP (BTH opcode 0x81).
    * RoCEv2: the table entry at ``DestQP mod flows`` must be valid and hold that QP, else
      unknown QP (ignored).  A known QP's packet goes to the NP with its CE bit (ECN = 3);
      the NP decides whether a CNP is due (packets without CE change nothing).
    * The ICRC is not checked (the transport does).

    CNP fields: DestQP ``DEST_QP``, source/destination IP ``SRC_IP``/``DEST_IP``, MACs
    ``SRC_MAC``/``DEST_MAC``, UDP source port ``UDP_SPORT`` of the flow's entry; IPv4
    identification 0 (DF set); DSCP, ECN, TTL, P_Key, VLAN from the generator's registers.
    To change an entry, clear ``QP.valid`` first, write the other words, then set it.

    Latency and throughput
    ----------------------
    One beat per clock in, at any frame length (the decision on a frame overlaps the capture of
    the next).  A CE packet whose last beat is on ``s_axis`` in cycle c: parsed in c+1, checked
    against the table and given to the NP in c+2, the NP's CNP in c+3, the table read in c+4
    (the generator's request), the CNP's first beat on ``m_axis`` in c+5 and its last (74
    bytes with Ethernet: 10 beats of 8, the last one waiting for the ICRC) in c+22 with an
    always-ready sink.  Several CNPs due: one per ``CnpGenConfig.cycles_per_cnp`` cycles (19;
    the next request waits in the table stage while the generator sends).  Both measured by
    the cocotb test.
    """

    def __init__(self, config: CnpNotifyConfig):
        if not isinstance(config, CnpNotifyConfig):
            raise TypeError(f"CnpNotify needs a CnpNotifyConfig, not {config!r}")
        self.config = config
        self.regmap = config.register_map()
        cw, db = config.counter_width, config.data_bytes
        super().__init__({
            **axis_members("s_axis", db, master=False),
            **axis_members("m_axis", db, master=True),
            "csr_w": In(stream.Signature(csr_write_layout(self.regmap.addr_width, 32))),
            "csr_raddr": In(self.regmap.addr_width),
            "csr_rdata": Out(32),
            "cnps": Out(cw), "ce": Out(cw), "malformed": Out(cw), "other": Out(cw),
            "unknown_qp": Out(cw),
        })

    def elaborate(self, platform):
        m = Module()
        cfg = self.config
        DB, CAP, F, IW = cfg.data_bytes, CAPTURE_BYTES, cfg.flows, cfg.index_width
        nbeats = -(-CAP // DB)
        m.submodules.np = np = DcqcnNp(cfg.np)
        m.submodules.cnp = gen = CnpGenerator(cfg.cnp)
        axis_from_stream(m, self, "m_axis", gen.frame)

        # ---- the per-QP table: a memory per field of the per-flow registers ---------------------
        # (exact widths: the tag check reads QP and valid, the CNP every field but the QP)
        fields = {f.name: (reg, f) for reg in self.regmap.flow_registers for f in reg.fields}
        mem = {}
        for name, (_, f) in fields.items():
            mem[name] = m.submodules[f"table_{name}"] = Memory(shape=f.width, depth=F, init=[])
        wr = {n: mem[n].write_port() for n in fields}
        rd_tag = {n: mem[n].read_port() for n in ("qpn", "valid")}
        rd_cnp = {n: mem[n].read_port() for n in fields if n != "qpn"}
        rd_csr = {n: mem[n].read_port() for n in fields}

        # ---- capture: the first CAP bytes of a frame, its length, its bad-frame bit ----------
        s_data, s_keep = self.s_axis_tdata, self.s_axis_tkeep
        s_last, s_bad = self.s_axis_tlast, self.s_axis_tuser[0]
        m.d.comb += self.s_axis_tready.eq(1)
        beat_in = self.s_axis_tvalid          # (tready is always 1)
        buf = Signal(8 * DB * nbeats)
        beat_idx = Signal(range(nbeats + 1))
        length = Signal(16)
        nvalid = sum(s_keep[i] for i in range(DB))        # keep: contiguous low bytes
        new_len = Mux(length > 0xFFFF - DB, 0xFFFF, length + nvalid)
        a_valid = Signal()                    # stage A: the frame captured, decide now
        a_len = Signal(16)
        a_bad = Signal()
        m.d.sync += a_valid.eq(beat_in & s_last)
        with m.If(beat_in):
            for k in range(nbeats):        # beats beyond the capture are only counted
                with m.If(beat_idx == k):
                    m.d.sync += buf[8 * DB * k:8 * DB * (k + 1)].eq(s_data)
            m.d.sync += [beat_idx.eq(Mux(beat_idx == nbeats, nbeats, beat_idx + 1)),
                         length.eq(new_len)]
            with m.If(s_last):
                # the next frame's beats may arrive on the next edge: stage A reads buf in the
                # cycle before they overwrite it
                m.d.sync += [beat_idx.eq(0), length.eq(0), a_len.eq(new_len), a_bad.eq(s_bad)]

        # ---- stage A: parse and classify (registered) ----------------------------------------
        byte = [buf[8 * i:8 * i + 8] for i in range(CAP)]
        vlan = Cat(byte[13], byte[12]) == 0x8100
        ethertype = Mux(vlan, Cat(byte[17], byte[16]), Cat(byte[13], byte[12]))
        hdr = [Mux(vlan, byte[18 + i], byte[14 + i]) for i in range(40)]
        l2_len = Mux(vlan, 18, 14)
        ip = from_be(IPV4_HEADER, hdr[:20])
        udp = from_be(UDP_HEADER, hdr[20:28])
        bth = from_be(BTH_HEADER, hdr[28:40])
        ip_sum_ok = ones_sum(be_words(hdr[:20])) == 0xFFFF
        is_ip = ethertype == 0x0800
        ip_bad = ((ip.version != 4) | (ip.ihl != 5) | ~ip_sum_ok | ip.flags[0]
                  | (ip.frag_offset != 0) | (ip.total_length + l2_len > a_len)
                  | (ip.total_length < 20 + _MIN_UDP))
        roce = (ip.protocol == 17) & (udp.dport == ROCEV2_PORT) & (bth.opcode != CNP_OPCODE)
        malformed = a_bad | (a_len < 60) | (is_ip & ip_bad) | (
            is_ip & roce & (udp.length != ip.total_length - 20))
        b_valid, b_roce, b_ce = Signal(), Signal(), Signal()
        b_qpn = Signal(24)
        index = bth.dqpn[:IW] if IW else Const(0, 1)
        m.d.comb += [p.addr.eq(index) for p in rd_tag.values()]
        m.d.sync += b_valid.eq(a_valid)
        with m.If(a_valid):
            m.d.sync += [b_roce.eq(~malformed & is_ip & roce), b_ce.eq(ip.ecn == 3),
                         b_qpn.eq(bth.dqpn)]
        _count(m, self.malformed, a_valid & malformed)
        _count(m, self.other, a_valid & ~malformed & ~(is_ip & roce))

        # ---- stage B: the table's check, the NP event ----------------------------------------
        known = rd_tag["valid"].data & (rd_tag["qpn"].data == b_qpn)
        m.d.comb += [np.event.valid.eq(b_valid & b_roce & known),
                     np.event.payload.flow.eq(b_qpn[:IW] if IW else 0),
                     np.event.payload.ce.eq(b_ce)]
        # (DcqcnNp takes an event every cycle: event.ready is 1)
        _count(m, self.ce, b_valid & b_roce & known & b_ce)
        unknown = b_valid & b_roce & ~known

        # ---- the NP's CNPs: read the flow's entry, then the generator's request --------------
        pend = Signal()
        take = np.cnp.valid & np.cnp.ready
        m.d.comb += np.cnp.ready.eq(~pend)
        for p in rd_cnp.values():
            m.d.comb += [p.addr.eq(np.cnp.payload.flow), p.en.eq(take)]
        with m.If(take):
            m.d.sync += pend.eq(1)
        r = gen.request.payload
        e = {n: p.data for n, p in rd_cnp.items()}
        e_valid = e["valid"]
        m.d.comb += [
            gen.request.valid.eq(pend & e_valid),
            r.dqpn.eq(e["dest_qp"]), r.src_ip.eq(e["src_ip"]), r.dst_ip.eq(e["dest_ip"]),
            r.udp_sport.eq(e["udp_sport"]), r.ip_id.eq(0),
            r.dst_mac.eq(Cat(e["dest_mac_lo"], e["dest_mac_hi"])),
            r.src_mac.eq(Cat(e["src_mac_lo"], e["src_mac_hi"])),
        ]
        with m.If(pend & (gen.request.ready | ~e_valid)):
            m.d.sync += pend.eq(0)
        _count(m, self.cnps, gen.request.valid & gen.request.ready)
        _count_any(m, self.unknown_qp, unknown, pend & ~e_valid)

        # ---- registers -------------------------------------------------------------------------
        # the generator's and the NP's registers live in those blocks: their words are
        # forwarded (a write waits until the block takes it); the bank holds the rest (the same
        # addresses without the forwarded words)
        bank = CsrBank(cfg.register_map(forwarded=False))
        for (name, _), port in zip(COUNTERS.items(), (self.cnps, self.ce, self.malformed,
                                                     self.other, self.unknown_qp), strict=True):
            bank.source(name, port)
        subs = [(gen, 0, cfg.cnp.register_map().registers)]
        if "csr_w" in np.signature.members:
            subs.append((np, NP_BASE, cfg.np_registers()))
        waddr, raddr = self.csr_w.payload.addr, self.csr_raddr
        idle = Const(1, 1)
        bank_rdata = Signal(32)
        rdata = bank_rdata
        for block, base, regs in subs:
            end = base + max(r.addr for r in regs) + 1
            aw = len(block.csr_raddr)
            sel_w = (waddr < end) if base == 0 else (waddr >= base) & (waddr < end)
            sel_r = Signal(name=f"csr_rsel_{base}")
            m.d.sync += sel_r.eq((raddr < end) if base == 0 else (raddr >= base) & (raddr < end))
            m.d.comb += [block.csr_w.valid.eq(self.csr_w.valid & sel_w),
                         block.csr_w.payload.addr.eq((waddr - base)[:aw]),
                         block.csr_w.payload.data.eq(self.csr_w.payload.data),
                         block.csr_raddr.eq((raddr - base)[:aw])]
            idle = Mux(sel_w, block.csr_w.ready, idle)
            rdata = Mux(sel_r, block.csr_rdata, rdata)
        bank.build(m, self.csr_w, raddr, bank_rdata, idle=idle)
        m.d.comb += self.csr_rdata.eq(rdata)
        # table writes: each field from its bits of the word
        for name, (reg, f) in fields.items():
            m.d.comb += [wr[name].addr.eq(bank.flow_wflow),
                         wr[name].data.eq(bank.wdata[f.offset:f.offset + f.width]),
                         wr[name].en.eq(bank.flow_wstb[reg.name])]
        # read-back: the memories' words one cycle after the address, the register chosen then
        rindex_q = Signal.like(bank.flow_rindex)
        m.d.sync += rindex_q.eq(bank.flow_rindex)
        for p in rd_csr.values():
            m.d.comb += p.addr.eq(bank.flow_rflow)
        with m.Switch(rindex_q):
            for reg in self.regmap.flow_registers:
                with m.Case(reg.addr):
                    word = Const(0, 32)
                    for f in reg.fields:
                        word = word | (rd_csr[f.name].data.as_unsigned() << f.offset)
                    m.d.comb += bank.flow_rdata.eq(word)
            with m.Default():
                m.d.comb += bank.flow_rdata.eq(0)
        return m


def _count(m: Module, counter: Signal, cond) -> None:
    with m.If(cond):
        m.d.sync += counter.eq(saturating_inc(counter))


def _count_any(m: Module, counter: Signal, a, b) -> None:
    """Count up to two events in one cycle (saturating)."""
    n = a + b
    top = (1 << len(counter)) - 1
    m.d.sync += counter.eq(Mux(counter > top - n, top, counter + n))
