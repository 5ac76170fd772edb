"""RoCEv2 CNP frame generator: one request (flow addresses + the sender's QP) in, the CNP frame
out as a byte stream, with the IPv4 header checksum and the ICRC computed in hardware.

See ``docs/dcqcn.md`` ("CNP generator") and :mod:`sim.models.cnp` (the byte-exact model).
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Module, Mux, Signal, Value
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ..layouts import (
    BTH_HEADER,
    ETH_HEADER,
    IPV4_HEADER,
    IPV6_HEADER,
    UDP_HEADER,
    VLAN_TAG,
    byte_beat_layout,
    cnp_request_layout,
    csr_write_layout,
)
from ..lib.crc import icrc_processor
from ..lib.csr import CsrBank
from ..lib.frame import be_bytes, pack_fields
from .cnp_config import (
    CNP_PAYLOAD_BYTES,
    CSR_ADDR_WIDTH,
    CSR_DATA_WIDTH,
    CnpGenConfig,
    CnpReg,
    cnp_header_fields,
)

__all__ = ["CnpGenerator"]

class CnpGenerator(wiring.Component):
    """RoCEv2 CNP frame generator.

    Parameters
    ----------
    config : CnpGenConfig
        IP version, L2 header, beat width, and the reset values of the registers.

    Ports
    -----
    request : In(stream(cnp_request_layout))
        One CNP to send: DestQP (the QP at the flow's sender), source and destination IP (the
        CNP's: the receiver's and the sender's), UDP source port, IPv4 identification or IPv6
        flow label, and (with an L2 header) the MAC addresses.
    frame : Out(stream(byte_beat_layout(data_bytes)))
        The frame, ``data_bytes`` bytes per beat, wire byte i of a beat in ``data[8i:8i+8]``;
        ``keep`` marks valid bytes (low ones) and ``last`` the final beat.  No FCS (the MAC
        appends it).
    csr_w : In(stream(csr_write_layout(5, 32)))
        Register writes (:class:`CnpReg`), taken only between frames (a write has priority
        over a waiting request, so that the request uses the new value).
    csr_raddr : In(5), csr_rdata : Out(32)
        Register reads, data one cycle after the address; the identification header (block
        type ``CNPG``) at words 0x10..0x13, unmapped words read 0.

    Latency and throughput
    ----------------------
    The first beat is valid the cycle after the request is accepted; the ICRC is computed 4
    bytes per cycle (``crc_bytes / 4`` cycles: 16 for IPv4, 21 for IPv6) while the first beats
    leave, and the beat(s) holding the ICRC wait for it; the beat holding the IPv4 checksum
    leaves at the earliest ``CKSUM_STAGES + 1`` cycles after the request (its pipeline).  A new
    request is accepted the cycle after the last beat (``CnpGenConfig.cycles_per_cnp``): IPv4
    with Ethernet + VLAN at 8 bytes per beat sends one CNP every 18 cycles (last beat 17 cycles
    after the request), IPv6 at 16 bytes per beat one every 24.
    """

    #: Pipeline stages of the IPv4 header checksum after the request register.
    CKSUM_STAGES = 4

    def __init__(self, config: CnpGenConfig):
        if not isinstance(config, CnpGenConfig):
            raise TypeError(f"CnpGenerator needs a CnpGenConfig, not {config!r}")
        self.config = config
        super().__init__({
            "request": In(stream.Signature(cnp_request_layout(config))),
            "frame": Out(stream.Signature(byte_beat_layout(config.data_bytes))),
            "csr_w": In(stream.Signature(csr_write_layout(CSR_ADDR_WIDTH, CSR_DATA_WIDTH))),
            "csr_raddr": In(CSR_ADDR_WIDTH),
            "csr_rdata": Out(CSR_DATA_WIDTH),
        })

    def _ip_udp_bth(self, req, regs, cksum, masked: bool) -> list[Value]:
        cfg = self.config
        ip, udp, bth = cnp_header_fields(cfg, regs, req, cksum, masked)
        ip_layout = IPV4_HEADER if cfg.ip_version == 4 else IPV6_HEADER
        return (be_bytes(pack_fields(ip_layout, ip), ip_layout.size // 8)
                + be_bytes(pack_fields(UDP_HEADER, udp), 8)
                + be_bytes(pack_fields(BTH_HEADER, bth), 12)
                + [Const(0, 8)] * CNP_PAYLOAD_BYTES)

    def elaborate(self, platform):
        m = Module()
        cfg = self.config
        W = cfg.data_bytes
        L = cfg.frame_bytes
        ethertype = 0x0800 if cfg.ip_version == 4 else 0x86DD

        # ---- registers (reset values from the configuration) -------------------------------
        # (declared once in CnpGenConfig.register_map)
        bank = CsrBank(cfg.register_map())
        regs = {reg: bank[reg.name] for reg in CnpReg}

        # ---- state --------------------------------------------------------------------------
        busy = Signal()
        req = Signal(cnp_request_layout(cfg))
        cksum = Signal(16)                          # IPv4 header checksum of the request
        crc_words = cfg.crc_bytes // 4
        crc_idx = Signal(range(crc_words))
        crc_done = Signal()
        beat = Signal(range(cfg.beats))

        # ---- handshake conditions -----------------------------------------------------------
        m.d.comb += [
            self.request.ready.eq(~busy & ~self.csr_w.valid),
        ]
        req_accept = self.request.valid & self.request.ready
        beat_done = self.frame.valid & self.frame.ready
        last_beat = beat == cfg.beats - 1

        # ---- accept a request ---------------------------------------------------------------
        with m.If(req_accept):
            m.d.sync += [req.eq(self.request.payload), busy.eq(1), beat.eq(0), crc_idx.eq(0),
                         crc_done.eq(0)]

        # ---- the IPv4 header checksum (RFC 1071), pipelined from the held request -----------
        # A single-cycle sum was a chain of ten carry chains.  Here each stage has at most one
        # carry chain: (A) five pair sums; (B) a carry-save step on three of them (one LUT
        # level) beside the sum of the other two; (C) a carry-save step and one sum, the plain
        # total; (D) the end-around fold, total[:16] + total[16:] and the same + 1 computed in
        # parallel and selected by the carry (= folding twice).  The stages run freely on
        # ``req`` (stable while busy); ``ck_ok`` rises CKSUM_STAGES edges after the request's,
        # and the beat holding the checksum waits for it (in every configuration the ICRC's 16
        # words take longer, so the frame's last beat is never later).
        ck_ok = Const(1)                            # (IPv6: no header checksum)
        if cfg.ip_version == 4:
            ck_ok = Signal()
            hdr = pack_fields(IPV4_HEADER, cnp_header_fields(cfg, regs, req, 0,
                                                             masked=False)[0])
            words = [hdr[16 * k:16 * (k + 1)] for k in range(10)]

            def csa(x, y, z):                # x + y + z == sum + carry, in one LUT level
                return x ^ y ^ z, Cat(Const(0, 1), (x & y) | (x & z) | (y & z))

            ck_a = [Signal(17, name=f"ck_a{i}") for i in range(5)]
            ck_bs, ck_bc, ck_bz = Signal(17), Signal(18), Signal(18)
            ck_s = Signal(20)
            m.d.sync += [ck_a[i].eq(words[2 * i] + words[2 * i + 1]) for i in range(5)]
            bs, bc = csa(ck_a[0], ck_a[1], ck_a[2])
            m.d.sync += [ck_bs.eq(bs), ck_bc.eq(bc), ck_bz.eq(ck_a[3] + ck_a[4])]
            cs, cc = csa(ck_bs, ck_bc, ck_bz)
            m.d.sync += ck_s.eq(cs + cc)
            lo, hi = ck_s[:16], ck_s[16:]
            fold = lo + hi
            m.d.sync += cksum.eq(~Mux(fold[16], (lo + (hi + 1))[:16], fold[:16]))
            ck_pipe = Signal(self.CKSUM_STAGES)
            m.d.sync += ck_pipe.eq(Cat(req_accept, ck_pipe[:-1]))
            m.d.sync += ck_ok.eq((ck_ok | ck_pipe[-1]) & ~req_accept)
        ck_beat = (cfg.l2_bytes + 10) // W         # the beat holding the IPv4 checksum

        # ---- the ICRC, 4 bytes per cycle ----------------------------------------------------
        # The word the CRC takes is a register, loaded one cycle ahead (word 0, all ones, at
        # the request's edge), so that the word select and the CRC's XOR network are in
        # different cycles.
        crc_in = [Const(0xFF, 8)] * 8 + self._ip_udp_bth(req, regs, cksum, masked=True)
        crc_flat = Cat(*crc_in)
        # amaranth.lib.crc, CRC-32 of Ethernet: one 32-bit word (wire byte i in bits [8i, 8i+8))
        # per cycle, word k of the masked ICRC input at crc_idx == k
        m.submodules.icrc = icrc_gen = icrc_processor(32)
        # the CRC's input word is a register loaded one cycle ahead (driven here, not through an
        # alias wire); the last index's load is never used (crc_done), hence the Default
        crc_word = icrc_gen.data
        m.d.comb += [icrc_gen.start.eq(req_accept), icrc_gen.valid.eq(busy & ~crc_done)]
        with m.If(req_accept):
            m.d.sync += crc_word.eq(0xFFFFFFFF)     # word 0: the first 4 bytes of ones
        with m.Elif(busy & ~crc_done):
            with m.Switch(crc_idx):
                for k in range(crc_words - 1):
                    with (m.Case(k) if k < crc_words - 2 else m.Default()):
                        m.d.sync += crc_word.eq(crc_flat[32 * (k + 1):32 * (k + 2)])
        with m.If(busy & ~crc_done):
            m.d.sync += crc_idx.eq(crc_idx + 1)
            with m.If(crc_idx == crc_words - 1):
                m.d.sync += crc_done.eq(1)

        # ---- output beats ---------------------------------------------------------------------
        l2 = []
        if cfg.l2 == "eth":
            l2 = be_bytes(pack_fields(ETH_HEADER, dict(dst=req.dst_mac, src=req.src_mac,
                                                       ethertype=ethertype)), 14)
        elif cfg.l2 == "eth_vlan":
            l2 = be_bytes(pack_fields(ETH_HEADER, dict(dst=req.dst_mac, src=req.src_mac,
                                                       ethertype=0x8100)), 14)
            l2 += be_bytes(pack_fields(VLAN_TAG, dict(pcp=regs[CnpReg.CNP_802P_PRIO], dei=0,
                                                      vid=regs[CnpReg.VLAN_ID],
                                                      ethertype=ethertype)), 4)
        icrc = icrc_gen.crc                          # final value; sent LSB first
        frame = l2 + self._ip_udp_bth(req, regs, cksum, masked=False) + \
            [icrc[8 * i:8 * i + 8] for i in range(4)]
        frame += [Const(0, 8)] * (cfg.beats * W - L)
        first_icrc_beat = (L - 4) // W
        tail_keep = (1 << (L - (cfg.beats - 1) * W)) - 1
        out = self.frame.payload
        m.d.comb += [
            self.frame.valid.eq(busy & ((beat < first_icrc_beat) | crc_done)
                                & ((beat < ck_beat) | ck_ok)),
            out.keep.eq(Mux(last_beat, tail_keep, (1 << W) - 1)),
            out.last.eq(last_beat),
        ]
        frame_flat = Cat(*frame)
        with m.Switch(beat):
            for k in range(cfg.beats):
                with m.Case(k) if k < cfg.beats - 1 else m.Default():
                    m.d.comb += out.data.eq(frame_flat[8 * W * k:8 * W * (k + 1)])
        with m.If(beat_done):
            m.d.sync += beat.eq(beat + 1)
            with m.If(last_beat):
                m.d.sync += busy.eq(0)

        # ---- register writes (between frames) -------------------------------------------------
        bank.build(m, self.csr_w, self.csr_raddr, self.csr_rdata, idle=~busy)
        return m
