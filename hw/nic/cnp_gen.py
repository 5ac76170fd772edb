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
from ..lib.checksum import ones_sum
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
    leave, and the beat(s) holding the ICRC wait for it.  A new request is accepted the cycle
    after the last beat (``CnpGenConfig.cycles_per_cnp``): IPv4 with Ethernet + VLAN at 8 bytes
    per beat sends one CNP every 18 cycles (last beat 17 cycles after the request), IPv6 at 16
    bytes per beat one every 24.
    """

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

        # ---- stage 0: accept a request, with its IPv4 header checksum (RFC 1071) ------------
        if cfg.ip_version == 4:
            hdr = pack_fields(IPV4_HEADER, cnp_header_fields(
                cfg, regs, self.request.payload, 0, masked=False)[0])
            new_cksum = ~ones_sum([hdr[16 * k:16 * (k + 1)] for k in range(10)])
        with m.If(req_accept):
            m.d.sync += [req.eq(self.request.payload), busy.eq(1), beat.eq(0), crc_idx.eq(0),
                         crc_done.eq(0)]
            if cfg.ip_version == 4:
                m.d.sync += cksum.eq(new_cksum)

        # ---- stage 1: the ICRC, 4 bytes per cycle ----------------------------------------------
        crc_in = [Const(0xFF, 8)] * 8 + self._ip_udp_bth(req, regs, cksum, masked=True)
        crc_flat = Cat(*crc_in)
        # amaranth.lib.crc, CRC-32 of Ethernet: one 32-bit word (wire byte i in bits [8i, 8i+8))
        # per cycle, word k of the masked ICRC input at crc_idx == k
        m.submodules.icrc = icrc_gen = icrc_processor(32)
        m.d.comb += [icrc_gen.start.eq(req_accept), icrc_gen.valid.eq(busy & ~crc_done)]
        with m.Switch(crc_idx):
            for k in range(crc_words):
                with m.Case(k) if k < crc_words - 1 else m.Default():
                    m.d.comb += icrc_gen.data.eq(crc_flat[32 * k:32 * (k + 1)])
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
            self.frame.valid.eq(busy & ((beat < first_icrc_beat) | crc_done)),
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
