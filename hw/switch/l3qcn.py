"""L3QCN hardware (draft-yu-tsvwg-l3qcn-00, ``docs/l3qcn.md``): the private CNM generator, the
congestion point's notifier (switch-built RoCEv2 CNP or private CNM) and the ingress ToR's
private-CNM-to-CNM converter.  Bit-exact models: :mod:`sim.models.l3qcn`.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Module, Mux, Signal, Value
from amaranth.lib import data, enum, stream, wiring
from amaranth.lib.wiring import In, Out

from ..layouts import (
    CNP_LOOKUP_TAG,
    CNP_QP_KEY,
    FIVE_TUPLE,
    FLOW_ID_VALUE,
    IPV4_HEADER,
    PRIVATE_CNM_PDU,
    UDP_HEADER,
    HtOp,
    HtStatus,
    byte_beat_layout,
    ht_command_layout,
    ht_result_layout,
    l3qcn_frame_layout,
    private_cnm_request_layout,
    tor_learn_layout,
)
from ..lib.arith import saturating_inc
from ..lib.checksum import be_words
from ..lib.csr import CsrBank, RegisterMap
from ..lib.csr_port import csr_ports
from ..lib.frame import be_bytes, from_be, pack_fields, shift_out
from ..nic.cnp_gen import CnpGenerator
from .cnm_gen import CnmGenerator
from .hash_table import HashTable
from .l3qcn_config import (
    L3QCN_CP_GEN_BASE,
    L3QCN_CP_PCNM_BASE,
    L3QCN_CP_WINDOW,
    L3QCN_TOR_GEN_BASE,
    PRIVATE_CNM_PDU_BYTES,
    PRIVATE_CNM_VERSION,
    L3qcnCpConfig,
    L3qcnTorConfig,
    PrivateCnmConfig,
)
from .qcn_cp import QcnCp

__all__ = ["PrivateCnmGen", "L3qcnCp", "L3qcnTor"]


class PrivateCnmGen(wiring.Component):
    """Private CNM generator: one request in, the IPv4/UDP private CNM out as a byte stream.

    Parameters
    ----------
    config : PrivateCnmConfig

    Ports
    -----
    request : In(stream(private_cnm_request_layout))
        The congested flow's 5-tuple and priority, qntzFb, QOffset, QDelta (int16, 64-byte
        units), the sampled IP packet's length and first ``sample_bytes`` bytes.
    packet : Out(stream(byte_beat_layout(data_bytes)))
        The IPv4 packet (``docs/l3qcn.md``, "Private CNM"): 60 + sample_bytes bytes.
    csr_w : In(stream(csr_write_layout)), csr_raddr : In(5), csr_rdata : Out(32)
        The register port (:meth:`PrivateCnmConfig.register_map`): the header fields (source
        IP, CPID, UDP ports, DSCP, ECN, TTL), reset to the configuration's values, and
        ``WERR``.  A write is applied only while no request is held (between packets: the one
        being sent was loaded whole); requests wait while a write is pending, so the write is
        never starved.  A value outside :data:`~hw.switch.l3qcn_config.PCNM_LEGAL` (a CP
        IP that is not unicast, UDP destination port 0, ECN Not-ECT or CE, TTL 0) is refused:
        the register keeps its value, ``WERR.refused`` is set.

    Latency and throughput
    ----------------------
    Request accepted -> registered; the checksums in a pipeline of two-input adders, one
    carry chain per stage (IPv4 header; UDP pseudo-header and datagram: 6 levels for 34
    words, 2 end-around-carry folds, the complement: 9 levels at the defaults); the edge after
    that, the packet is loaded (at the defaults its first beat is valid from the 10th edge
    after the one that takes the request, and taken on the 11th with ``ready`` high) if the
    previous packet has left.  Then one beat per clock.  The next request is
    taken on the edge that loads the packet, so its checksums are computed while this packet
    is sent: one packet every max(ceil(bytes / data_bytes), levels + 1) cycles (10 at the
    defaults; the one-cycle sums of 17 words had 14 and limited the clock).
    """

    def __init__(self, config: PrivateCnmConfig):
        if not isinstance(config, PrivateCnmConfig):
            raise TypeError(f"PrivateCnmGen needs a PrivateCnmConfig, not {config!r}")
        self.config = config
        super().__init__({
            "request": In(stream.Signature(private_cnm_request_layout(config))),
            "packet": Out(stream.Signature(byte_beat_layout(config.data_bytes))),
            **csr_ports(config.register_map()),
        })

    def _bytes(self, bank, r, ip_cksum, udp_cksum) -> list[Value]:
        cfg = self.config
        S = cfg.sample_bytes
        ip = be_bytes(pack_fields(IPV4_HEADER, dict(
            version=4, ihl=5, dscp=bank["DSCP"], ecn=bank["ECN"],
            total_length=cfg.packet_bytes, id=0, flags=0b010, frag_offset=0, ttl=bank["TTL"],
            protocol=17, checksum=ip_cksum, src=bank["CP_IP"], dst=r.src_ip)), 20)
        udp = be_bytes(pack_fields(UDP_HEADER, dict(
            sport=bank["UDP_SPORT"], dport=bank["UDP_PORT"], length=cfg.udp_length,
            checksum=udp_cksum)), 8)
        pdu = be_bytes(pack_fields(PRIVATE_CNM_PDU, dict(
            version=PRIVATE_CNM_VERSION, resv0=0, resv1=0, qntz_fb=r.qntz_fb,
            enc_prio=r.enc_prio, resv2=0, cpid=Cat(bank["CPID_LO"], bank["CPID_HI"]),
            q_off=r.q_off, q_delta=r.q_delta,
            src_ip=r.src_ip, dst_ip=r.dst_ip, sport=r.sport, dport=r.dport,
            protocol=r.protocol, resv3=0, msdu_len=r.msdu_len)), PRIVATE_CNM_PDU_BYTES)
        # sampled bytes beyond the sampled packet's length are zeros (padding or absent)
        sample = [Mux(r.msdu_len > j, r.sample[8 * j:8 * j + 8], 0) for j in range(S)]
        return ip + udp + pdu + sample

    def elaborate(self, platform):
        m = Module()
        cfg = self.config

        # The request is held in ``req`` until its packet is loaded; the checksum pipeline
        # below runs freely from it (no enables), so ``levels`` edges after ``req`` was written
        # both checksums are final and stay so until the load.
        # The header fields are run-time registers; a write waits until no request is held,
        # so they are stable from the request's capture through the checksums to the load.
        bank = CsrBank(cfg.register_map())
        req = Signal(private_cnm_request_layout(cfg))
        held = Signal()
        ip_cksum, udp_cksum = Signal(16), Signal(16)

        zero_ck = self._bytes(bank, req, Const(0, 16), Const(0, 16))
        pseudo = be_words(be_bytes(Cat(Const(cfg.udp_length, 16), Const(17, 16),
                                     req.src_ip, bank["CP_IP"]), 12))
        ip_sum, ip_levels = _ones_sum_tree(m, be_words(zero_ck[:20]), "ip")
        udp_sum, udp_levels = _ones_sum_tree(m, pseudo + be_words(zero_ck[20:]), "udp")
        udp_ck = ~udp_sum
        m.d.sync += [ip_cksum.eq(~ip_sum), udp_cksum.eq(Mux(udp_ck == 0, 0xFFFF, udp_ck))]
        levels = max(ip_levels, udp_levels) + 1
        wait = Signal(range(levels + 1))

        idle = Signal()
        # ``done``: held and its checksums final (``wait`` reached 0), a register: the compare
        # of ``wait`` in front of the handshake was on the critical path (9.4 ns)
        done = Signal()
        load = done & idle
        m.d.comb += idle.eq(shift_out(m, self.packet, cfg.data_bytes, cfg.packet_bytes, load,
                                      Cat(*self._bytes(bank, req, ip_cksum, udp_cksum)),
                                      cfg.packet_bytes, min_length=cfg.packet_bytes))
        # the next request is taken on the edge that loads this one's packet (none while a
        # register write waits: it goes in once the held request is loaded)
        # ``req`` loads whenever it may take a request (``take``, from registers only), the
        # request or not: the handshake then reaches only ``held`` and ``wait``.  (The
        # handshake into the enables of the whole request register, through ``load``, was the
        # critical path of ``l3qcn_cp_qcn``, 10.3 ns, 8.2 of it routing.)
        take = ~held | load
        m.d.comb += self.request.ready.eq(take & ~self.csr_w.valid)
        with m.If(held & (wait != 0)):
            m.d.sync += [wait.eq(wait - 1), done.eq(wait == 1)]
        with m.If(load):
            m.d.sync += [held.eq(0), done.eq(0)]
        with m.If(take):
            m.d.sync += req.eq(self.request.payload)
        with m.If(self.request.valid & self.request.ready):
            m.d.sync += [held.eq(1), wait.eq(levels), done.eq(0)]
        bank.build(m, self.csr_w, self.csr_raddr, self.csr_rdata, idle=~held)
        return m


def _ones_sum_tree(m: Module, words: list[Value], name: str) -> tuple[Value, int]:
    """:func:`hw.lib.checksum.ones_sum` of 16-bit ``words`` as a free-running pipeline: a tree
    of two-input adders with a register per level, then one register per end-around-carry
    fold (one carry chain per stage).  Returns the folded 16-bit sum and its register
    levels; the same value as ``ones_sum`` (the same total, folded the same way)."""
    vals = [(w, 0xFFFF) for w in words]
    level = 0
    while len(vals) > 1:
        nxt = []
        for i in range(0, len(vals), 2):
            pair = vals[i:i + 2]
            bound = sum(b for _, b in pair)
            r = Signal(range(bound + 1), name=f"{name}_sum{level}_{i // 2}")
            m.d.sync += r.eq(sum(v for v, _ in pair))
            nxt.append((r, bound))
        vals, level = nxt, level + 1
    x, bound = vals[0]
    while bound > 0xFFFF:
        hi = bound >> 16
        bound = max((bound & 0xFFFF) + hi, 0xFFFF + hi - 1)
        r = Signal(range(bound + 1), name=f"{name}_fold{level}")
        m.d.sync += r.eq(x[:16] + x[16:])
        x, level = r, level + 1
    return x[:16], level


class TorState(enum.Enum, shape=3):
    RECEIVE = 0    #: taking the packet's beats
    SUM = 1        #: IPv4 and UDP checksums
    CLASSIFY = 2   #: other / malformed / private CNM
    LOOKUP = 3     #: the 5-tuple's lookup waits for the table
    WAIT = 4       #: waiting for the lookup's result
    HAND = 5       #: the registered result: the CNM request (a hit) handed to the generator


def _count(m: Module, counter: Signal, cond) -> None:
    with m.If(cond):
        m.d.sync += counter.eq(saturating_inc(counter))


class L3qcnCp(wiring.Component):
    """The L3QCN congestion point of one queue: the QCN CP decides which frames are sampled with
    Fb < 0; such a frame becomes a switch-built RoCEv2 CNP (mode ``roce``) or a private CNM
    (mode ``qcn``), an IPv4 packet for the switch's forwarding pipeline.

    Parameters
    ----------
    config : L3qcnCpConfig

    Ports
    -----
    frame : In(stream(l3qcn_frame_layout))
        Every frame entering the queue: the depth it finds and its length (for the QCN CP) and
        its parsed headers: source/destination IP, UDP source port; mode ``roce``: the BTH
        destination QP and ``roce`` (parsed as RoCEv2); mode ``qcn``: destination port,
        protocol, priority, IP total length and the first ``sample_bytes`` bytes.
    packet : Out(stream(byte_beat_layout(data_bytes)))
        The CNP (60 bytes, :class:`CnpGenerator`) or the private CNM (:class:`PrivateCnmGen`).
    table_cmd : In(stream(ht_command_layout)), table_result : Out(stream(ht_result_layout))
        Mode ``roce``: management of the CNP-QP table (ADD / REMOVE / LOOKUP / LEARN of key
        ``CNP_QP_KEY`` -> source QP); the tag is ignored (the result's tag is 0).  The CP's
        own lookups have priority.  Results must be taken (back-pressure stalls the table).
    notifications, no_qp, not_roce : Out(counter_width)
        Saturating counters: packets emitted; mode ``roce``: samples whose (destination IP,
        QP) missed the table (no CNP) and samples of frames not parsed as RoCEv2 (no CNP).
    csr_w : In(stream(csr_write_layout)), csr_raddr : In(7), csr_rdata : Out(32)
        The register port (:meth:`L3qcnCpConfig.register_map`): words below 0x20 are the QCN
        CP's registers (forwarded: its rule, a write waits for no sample in flight); mode
        ``roce``: the CNP-QP table's command registers (a write to ``TBL_CMD`` issues the
        command after the CP's lookups and the ``table_cmd`` port's; the table registers take
        no write while it is in flight) and the CNP generator's (``GEN_*``, forwarded); mode
        ``qcn``: the private CNM generator's header fields and ``WERR`` (``PCNM_*``,
        forwarded: applied between packets, illegal values refused); the counters; the ID
        header.

    Latency and throughput
    ----------------------
    One frame per clock except while a sample is in flight (the QCN CP's
    :meth:`QcnCp.sample_latency` bubbles, 18 at the defaults; then, mode ``roce``, the table
    lookup (7 cycles), the result registered, the hand-over to the generator; mode ``qcn``,
    the request registered in a one-entry slot, then the generator).  The path
    back-pressures rather than drops: a CNP takes 18 cycles, a private CNM 10 at the
    defaults (its checksums overlap the previous packet; the slot takes the next request
    the cycle after the generator took this one), while samples are at least
    ``min(sample_lo)`` bytes (16102 B at the defaults, hundreds of frames) apart.
    """

    def __init__(self, config: L3qcnCpConfig):
        if not isinstance(config, L3qcnCpConfig):
            raise TypeError(f"L3qcnCp needs an L3qcnCpConfig, not {config!r}")
        self.config = config
        cw = config.counter_width
        db = config.private.data_bytes
        ports = {
            "frame": In(stream.Signature(l3qcn_frame_layout(config))),
            "packet": Out(stream.Signature(byte_beat_layout(db))),
            "notifications": Out(cw),
        }
        if config.mode == "roce":
            tcfg = config.table_config()
            ports.update({
                "table_cmd": In(stream.Signature(ht_command_layout(tcfg))),
                "table_result": Out(stream.Signature(ht_result_layout(tcfg))),
                "no_qp": Out(cw), "not_roce": Out(cw),
            })
        ports.update(csr_ports(config.register_map()))
        super().__init__(ports)

    def elaborate(self, platform):
        m = Module()
        cfg = self.config
        m.submodules.cp = cp = QcnCp(cfg.cp)

        # ---- registers: the QCN CP's (forwarded) below L3QCN_CP_WINDOW, then the CP's own ------
        regmap = cfg.register_map()
        cp_aw = cfg.cp.register_map().addr_width
        # the bank of the CP's own registers (the QCN CP's are stored in it): the same map
        # without them, with the same header and size
        own = RegisterMap(regmap.name, tuple(r for r in regmap.registers
                                             if r.addr >= L3QCN_CP_WINDOW
                                             and not r.name.startswith(("GEN_", "PCNM_"))),
                          regmap.block_type, regmap.version, regmap.desc)
        assert own.header_values() == regmap.header_values()
        assert own.addr_width == regmap.addr_width
        bank = CsrBank(own)
        own_w = stream.Signature(self.csr_w.payload.shape()).create()
        own_rdata = Signal(32)
        fwd = self.csr_w.payload.addr < L3QCN_CP_WINDOW
        fwd_q = Signal()
        # the generator's registers, forwarded with the base removed: mode roce the CNP
        # generator's (GEN_*), mode qcn the private CNM generator's (PCNM_*)
        gen_w = stream.Signature(self.csr_w.payload.shape()).create()
        gen_rdata = Signal(32)
        gen_map = cfg.cnp.register_map() if cfg.mode == "roce" else cfg.private.register_map()
        gen_base = L3QCN_CP_GEN_BASE if cfg.mode == "roce" else L3QCN_CP_PCNM_BASE
        gen_words = max(r.addr for r in gen_map.registers) + 1
        in_gen = _in_window(self.csr_w.payload.addr, gen_base, gen_words)
        gen_q = Signal()
        m.d.comb += [
            cp.csr_w.valid.eq(self.csr_w.valid & fwd),
            cp.csr_w.payload.addr.eq(self.csr_w.payload.addr[:cp_aw]),
            cp.csr_w.payload.data.eq(self.csr_w.payload.data),
            gen_w.valid.eq(self.csr_w.valid & in_gen),
            gen_w.payload.addr.eq(self.csr_w.payload.addr - gen_base),
            gen_w.payload.data.eq(self.csr_w.payload.data),
            own_w.valid.eq(self.csr_w.valid & ~fwd & ~in_gen),
            own_w.payload.eq(self.csr_w.payload),
            self.csr_w.ready.eq(Mux(fwd, cp.csr_w.ready, Mux(in_gen, gen_w.ready, own_w.ready))),
            cp.csr_raddr.eq(self.csr_raddr[:cp_aw]),
            self.csr_rdata.eq(Mux(fwd_q, cp.csr_rdata, Mux(gen_q, gen_rdata, own_rdata))),
        ]
        m.d.sync += [fwd_q.eq(self.csr_raddr < L3QCN_CP_WINDOW),
                     gen_q.eq(_in_window(self.csr_raddr, gen_base, gen_words))]
        bank.source("NOTIFICATIONS", self.notifications)

        # the QCN CP holds at most one frame between accepting it and handing its decision on,
        # so one register keeps the headers of the frame the decision is about
        hdr = Signal(l3qcn_frame_layout(cfg))
        m.d.comb += [cp.frame.valid.eq(self.frame.valid),
                     cp.frame.payload.qlen.eq(self.frame.payload.qlen),
                     cp.frame.payload.length.eq(self.frame.payload.length),
                     self.frame.ready.eq(cp.frame.ready)]
        with m.If(self.frame.valid & self.frame.ready):
            m.d.sync += hdr.eq(self.frame.payload)
        dec = cp.decision
        congested = dec.valid & dec.payload.cnm

        if cfg.mode == "qcn":
            m.submodules.gen = gen = PrivateCnmGen(cfg.private)
            wiring.connect(m, wiring.flipped(self.packet), gen.packet)
            # a congested decision's request is registered before the generator, with the
            # headers it is about: the generator's ``request.ready`` reaches only the slot's
            # valid bit (through the CP's decision handshake into ``frame.ready`` and the
            # accept enables it was the critical path, 10.75 ns).  The slot takes a decision
            # only when empty: one cycle more per private CNM, none between samples hundreds
            # of frames apart.  (The generator's request port itself is the register.)
            slot_valid, r = gen.request.valid, gen.request.payload
            with m.If(gen.request.ready):
                m.d.sync += slot_valid.eq(0)
            m.d.comb += dec.ready.eq(~dec.payload.cnm | ~slot_valid)
            with m.If(congested & ~slot_valid):
                m.d.sync += [
                    slot_valid.eq(1),
                    r.src_ip.eq(hdr.src_ip), r.dst_ip.eq(hdr.dst_ip), r.sport.eq(hdr.sport),
                    r.dport.eq(hdr.dport), r.protocol.eq(hdr.protocol),
                    r.qntz_fb.eq(dec.payload.qntz_fb), r.q_off.eq(dec.payload.q_off),
                    r.q_delta.eq(dec.payload.q_delta), r.enc_prio.eq(hdr.prio),
                    r.msdu_len.eq(hdr.ip_len), r.sample.eq(hdr.sample),
                ]
            _connect_generator_regs(m, gen, gen_w, self.csr_raddr, gen_base, gen_rdata)
            _count(m, self.notifications, gen.request.valid & gen.request.ready)
            bank.build(m, own_w, self.csr_raddr, own_rdata)
            return m

        # ---- mode roce: CNP-QP table, then the CNP generator -------------------------------------
        m.submodules.table = table = HashTable(cfg.table_config())
        m.submodules.cnp = cnp = CnpGenerator(cfg.cnp)
        wiring.connect(m, wiring.flipped(self.packet), cnp.frame)
        _connect_generator_regs(m, cnp, gen_w, self.csr_raddr, gen_base, gen_rdata)

        lookup = congested & hdr.roce
        tag = data.View(CNP_LOOKUP_TAG, table.cmd.payload.tag)
        key = data.View(CNP_QP_KEY, table.cmd.payload.key)
        # a register-issued command: queued by the TBL_CMD write, issued after the CP's lookups
        # and the port's commands, its result kept in TBL_STATUS / TBL_RESULT (tag: sport 1,
        # datapath 0; the port's commands carry tag 0)
        queued, inflight = Signal(), Signal()
        tbl_status, tbl_result = Signal(3), Signal(24)
        reg_go = queued & ~lookup & ~self.table_cmd.valid
        with m.If(lookup):
            m.d.comb += [table.cmd.payload.op.eq(HtOp.LOOKUP), key.dst_ip.eq(hdr.dst_ip),
                         key.dqpn.eq(hdr.dqpn), tag.datapath.eq(1), tag.src_ip.eq(hdr.src_ip),
                         tag.sport.eq(hdr.sport)]
        with m.Elif(self.table_cmd.valid):
            m.d.comb += [table.cmd.payload.op.eq(self.table_cmd.payload.op),
                         table.cmd.payload.key.eq(self.table_cmd.payload.key),
                         table.cmd.payload.value.eq(self.table_cmd.payload.value)]
        with m.Else():
            m.d.comb += [table.cmd.payload.op.eq(bank.field("TBL_CMD", "op")),
                         key.dst_ip.eq(bank["TBL_KEY_IP"]), key.dqpn.eq(bank["TBL_KEY_QP"]),
                         table.cmd.payload.value.eq(bank["TBL_VALUE"]), tag.sport.eq(1)]
        m.d.comb += [
            table.cmd.valid.eq(lookup | self.table_cmd.valid | reg_go),
            self.table_cmd.ready.eq(table.cmd.ready & ~lookup),
            dec.ready.eq(~dec.payload.cnm | ~hdr.roce | table.cmd.ready),
        ]
        with m.If(reg_go & table.cmd.ready):
            m.d.sync += [queued.eq(0), inflight.eq(1)]
        _count(m, self.not_roce, congested & ~hdr.roce)

        res = table.result
        rtag = data.View(CNP_LOOKUP_TAG, res.payload.tag)
        rkey = data.View(CNP_QP_KEY, res.payload.key)
        hit = res.payload.status == HtStatus.OK
        # a hit's CNP request is registered before the generator (the table's result straight
        # into the generator, and its ready back into the table, was one long path); the slot
        # takes a result only when empty (a CNP takes 18 cycles: the bubble costs nothing)
        # (the generator's request port itself is the register: a separate signal assigned to
        # it would be an unused alias wire in the Verilog)
        slot_valid, slot = cnp.request.valid, cnp.request.payload
        with m.If(cnp.request.ready):
            m.d.sync += slot_valid.eq(0)
        with m.If(rtag.datapath):
            m.d.comb += res.ready.eq(~hit | ~slot_valid)
            with m.If(res.valid & hit & ~slot_valid):
                m.d.sync += [slot_valid.eq(1), slot.dqpn.eq(res.payload.value),
                             slot.src_ip.eq(rkey.dst_ip), slot.dst_ip.eq(rtag.src_ip),
                             slot.udp_sport.eq(rtag.sport), slot.ip_id.eq(0)]
        with m.Elif(rtag.sport[0]):            # a register-issued command's result
            m.d.comb += res.ready.eq(1)
            with m.If(res.valid):
                m.d.sync += [inflight.eq(0), tbl_status.eq(res.payload.status),
                             tbl_result.eq(res.payload.value)]
        with m.Else():
            m.d.comb += [self.table_result.valid.eq(res.valid),
                         res.ready.eq(self.table_result.ready)]
        m.d.comb += self.table_result.payload.eq(res.payload)
        _count(m, self.no_qp, res.valid & res.ready & rtag.datapath & ~hit)
        _count(m, self.notifications, cnp.request.valid & cnp.request.ready)
        busy = queued | inflight
        bank.source("TBL_STATUS", busy, "busy")
        bank.source("TBL_STATUS", tbl_status, "status")
        bank.source("TBL_RESULT", tbl_result)
        bank.source("NO_QP", self.no_qp)
        bank.source("NOT_ROCE", self.not_roce)
        # (a command, and the registers it uses, wait for the one in flight: the idle rule)
        bank.build(m, own_w, self.csr_raddr, own_rdata, idle=~busy)
        with m.If(bank.wstb["TBL_CMD"]):
            m.d.sync += queued.eq(1)
        return m


class L3qcnTor(wiring.Component):
    """The ingress ToR's L3QCN converter: learns flows from host frames, recognizes private
    CNMs by UDP port, looks their 5-tuple up in the flow-ID mapping table and emits the
    standard 802.1Qau CNM to the host.

    Parameters
    ----------
    config : L3qcnTorConfig

    Ports
    -----
    packet : In(stream(byte_beat_layout(data_bytes)))
        IPv4 packets routed to the ToR's hosts (L2 stripped), wire byte i of a beat in
        ``data[8i:8i+8]``.  Each is classified as in :func:`sim.models.l3qcn.classify`:
        ``other`` (not IPv4 without options + UDP to the private-CNM port ``PCNM_UDP_PORT``,
        the value in force when the packet's first beat was taken: ignored here, counted),
        ``malformed`` (to the port but wrong length, IPv4 or UDP checksum, fragment, UDP
        length or PDU version: dropped, counted) or a private CNM.
    learn : In(stream(tor_learn_layout))
        5-tuple -> (source MAC, CN-TAG flow ID, VLAN ID) of a data frame entering from a host:
        inserted, or the value refreshed.  Lookups have priority on the table.
    cnm : Out(stream(byte_beat_layout(data_bytes)))
        The CNM frame (:class:`CnmGenerator`, CPID taken from the private CNM).
    cnms, other, malformed, misses, full : Out(counter_width)
        Saturating counters: CNMs emitted; packets ignored; packets dropped as malformed;
        private CNMs whose 5-tuple is not in the table (no CNM); learns rejected (full bucket).
    occupancy : Out(range(capacity + 1))
    csr_w : In(stream(csr_write_layout)), csr_raddr : In(6), csr_rdata : Out(32)
        The register port (:meth:`L3qcnTorConfig.register_map`): the flow-ID table's command
        registers (a write to ``TBL_CMD`` issues the command after the private CNMs' lookups
        and the learns; the table registers take no write while it is in flight),
        ``PCNM_UDP_PORT`` (the private CNMs' port, applied from the next packet; 0 is refused:
        the register keeps its value, ``WERR.refused`` is set), the counters, the CNM
        generator's ``GEN_*``, the ID header.

    Latency and throughput
    ----------------------
    Packets are taken one beat per clock; after a packet's last beat the converter spends 2
    cycles classifying a packet that is not for the private-CNM port (the first registers
    the classification).  For the others the IPv4 and UDP checksums come from a
    free-running pipeline of two-input adders over the captured bytes (one carry chain per
    stage: 8 levels for the 34 UDP words at the defaults, then their compares with 0xFFFF
    registered), then 1 cycle classifies, 1 chooses the lookup (into the command register in
    front of the table), the table answers (7 cycles after it took the command), the result
    is registered and 1 cycle hands the CNM request on; ``packet.ready`` is low meanwhile
    (20 cycles per private CNM at the defaults, 2 per other packet, plus any CNM
    back-pressure).  Learns and register commands also pass the command register (one
    command per clock).  (The one-cycle checksum of 34 words, the table's result straight
    into the CNM generator's frame register, the classification straight into the counters
    and the command choice in front of the table's hash limited the clock.)
    """

    def __init__(self, config: L3qcnTorConfig):
        if not isinstance(config, L3qcnTorConfig):
            raise TypeError(f"L3qcnTor needs an L3qcnTorConfig, not {config!r}")
        self.config = config
        cw, db = config.counter_width, config.private.data_bytes
        super().__init__({
            "packet": In(stream.Signature(byte_beat_layout(db))),
            "learn": In(stream.Signature(tor_learn_layout())),
            "cnm": Out(stream.Signature(byte_beat_layout(db))),
            "cnms": Out(cw), "other": Out(cw), "malformed": Out(cw), "misses": Out(cw),
            "full": Out(cw),
            "occupancy": Out(range(config.table_config().capacity + 1)),
            **csr_ports(config.register_map()),
        })

    def elaborate(self, platform):
        m = Module()
        cfg, pcfg = self.config, self.config.private
        DB, CAP = pcfg.data_bytes, cfg.capture_bytes
        nbeats = -(-CAP // DB)
        m.submodules.table = table = HashTable(cfg.table_config())
        m.submodules.gen = gen = CnmGenerator(cfg.cnm_config())
        wiring.connect(m, wiring.flipped(self.cnm), gen.frame)
        m.d.comb += [self.misses.eq(table.misses), self.full.eq(table.full),
                     self.occupancy.eq(table.occupancy)]

        # ---- capture: the first CAP bytes and the length -----------------------------------------
        buf = Signal(8 * DB * nbeats)
        beat_idx = Signal(range(nbeats + 1))
        length = Signal(16)
        rx_busy = Signal()
        m.d.comb += self.packet.ready.eq(~rx_busy)
        beat = self.packet.payload
        nvalid = sum(beat.keep[i] for i in range(DB))     # keep is contiguous low bits
        first = Signal()                  # the packet's first beat is taken (stage B's port)
        m.d.comb += first.eq(self.packet.valid & self.packet.ready & (beat_idx == 0))
        with m.If(self.packet.valid & self.packet.ready):
            for k in range(nbeats):      # beats beyond the capture are only counted
                with m.If(beat_idx == k):
                    m.d.sync += buf[8 * DB * k:8 * DB * (k + 1)].eq(beat.data)
            m.d.sync += [beat_idx.eq(Mux(beat_idx == nbeats, nbeats, beat_idx + 1)),
                         length.eq(Mux(length > 0xFFFF - DB, 0xFFFF, length + nvalid))]
            with m.If(beat.last):
                m.d.sync += rx_busy.eq(1)

        byte = [buf[8 * i:8 * i + 8] for i in range(CAP)]
        ip = from_be(IPV4_HEADER, byte[:20])
        udp = from_be(UDP_HEADER, byte[20:28])
        pdu = from_be(PRIVATE_CNM_PDU, byte[28:28 + PRIVATE_CNM_PDU_BYTES])
        sample = Cat(*byte[28 + PRIVATE_CNM_PDU_BYTES:]) if pcfg.sample_bytes else Const(0, 1)

        # ---- stage A: checksums, a free-running pipeline from the captured bytes (stable from
        # the last beat until the release): final ``sum_levels`` edges after the last beat ---------
        pseudo = be_words(byte[12:20]) + [Const(17, 16), Const(pcfg.udp_length, 16)]
        ip_sum, ip_levels = _ones_sum_tree(m, be_words(byte[:20]), "ip")
        udp_sum, udp_levels = _ones_sum_tree(m, pseudo + be_words(byte[20:]), "udp")
        # the compares with 0xFFFF registered too (one more level): straight into the
        # classification they were on its critical path
        ip_ok, udp_ok = Signal(), Signal()
        m.d.sync += [ip_ok.eq(ip_sum == 0xFFFF), udp_ok.eq(udp_sum == 0xFFFF)]
        sum_levels = max(ip_levels, udp_levels) + 1
        sum_wait = Signal(range(sum_levels + 1))

        # ---- stage B: classification -------------------------------------------------------------
        # (the port, a run-time register, is taken with the packet's first beat: a write while a
        # packet is in the converter applies from the next one, and its classification in states
        # SUM and CLASSIFY cannot disagree)
        # ``other`` and the header part of ``malformed`` are computed in state SUM (from the
        # final bytes and length) and registered; state CLASSIFY uses only registers and the
        # registered checksum compares.  (The classification straight from the captured
        # bytes into the counters' enables and the release was the critical path, 10.0 ns.)
        port = Signal(16, init=pcfg.udp_port)
        other = ((length < 24) | (byte[0] != 0x45) | (byte[9] != 17) | (udp.dport != port))
        bad_header = ((length != CAP) | (ip.total_length != CAP)
                      | ip.flags[0] | (ip.frag_offset != 0) | (udp.length != pcfg.udp_length)
                      | (pdu.version != PRIVATE_CNM_VERSION))
        other_q, bad_header_q, udp_ck_q = Signal(), Signal(), Signal()
        malformed = bad_header_q | ~ip_ok | (udp_ck_q & ~udp_ok)

        flow = Signal(FIVE_TUPLE)
        m.d.comb += [flow.src_ip.eq(pdu.src_ip), flow.dst_ip.eq(pdu.dst_ip),
                     flow.sport.eq(pdu.sport), flow.dport.eq(pdu.dport),
                     flow.protocol.eq(pdu.protocol)]
        issue = Signal()                 # the private CNM's lookup wants the table
        release = Signal()               # the packet is dealt with: take the next one
        learn = self.learn.payload
        # ---- registers: a register-issued command is queued by the TBL_CMD write and goes
        # after the private CNMs' lookups and the learns; its result (tag bit 1) is kept ------
        regmap = cfg.register_map()
        bank = CsrBank(RegisterMap(regmap.name, tuple(r for r in regmap.registers
                                                      if not r.name.startswith("GEN_")),
                                   regmap.block_type, regmap.version, regmap.desc))
        with m.If(first):
            m.d.sync += port.eq(bank["PCNM_UDP_PORT"])
        queued, inflight = Signal(), Signal()
        tbl_status, tbl_result = Signal(3), Signal(FLOW_ID_VALUE)
        reg_go = queued & ~issue & ~self.learn.valid
        # The chosen command is registered in front of the table (the table's command port
        # itself is the register, one cycle more per command): the choice of the command
        # (state -> the key's multiplexer) and the table's hash of the key into its read
        # address in one cycle were the critical path (9.9 ns, mostly routing).  ``take``:
        # the register is free at the next edge.
        nxt = Signal.like(table.cmd.payload, name="cmd_next")
        take = ~table.cmd.valid | table.cmd.ready
        reg_key = data.View(FIVE_TUPLE, nxt.key)
        reg_value = data.View(FLOW_ID_VALUE, nxt.value)
        with m.If(issue):
            m.d.comb += [nxt.op.eq(HtOp.LOOKUP), nxt.key.eq(flow), nxt.tag.eq(1)]
        with m.Elif(self.learn.valid):
            m.d.comb += [nxt.op.eq(HtOp.LEARN), nxt.key.eq(learn.flow),
                         nxt.value.eq(learn.info)]
        with m.Else():
            m.d.comb += [nxt.op.eq(bank.field("TBL_CMD", "op")),
                         reg_key.src_ip.eq(bank["TBL_SRC_IP"]),
                         reg_key.dst_ip.eq(bank["TBL_DST_IP"]),
                         reg_key.sport.eq(bank.field("TBL_PORTS", "sport")),
                         reg_key.dport.eq(bank.field("TBL_PORTS", "dport")),
                         reg_key.protocol.eq(bank["TBL_PROTOCOL"]),
                         reg_value.src_mac.eq(Cat(bank["TBL_MAC_LO"], bank["TBL_MAC_HI"])),
                         reg_value.rpid.eq(bank.field("TBL_FLOW", "rpid")),
                         reg_value.vid.eq(bank.field("TBL_FLOW", "vid")),
                         nxt.tag.eq(0b10)]
        m.d.comb += self.learn.ready.eq(take & ~issue)
        with m.If(table.cmd.ready):
            m.d.sync += table.cmd.valid.eq(0)
        with m.If(take & (issue | self.learn.valid | reg_go)):
            m.d.sync += [table.cmd.valid.eq(1), table.cmd.payload.eq(nxt)]
        with m.If(reg_go & take):
            m.d.sync += [queued.eq(0), inflight.eq(1)]

        # ---- the lookup's result, registered (state HAND): the CNM request -----------------------
        res = table.result
        hit_res = res.payload.status == HtStatus.OK
        is_cnm_lookup = res.payload.tag[0]
        info = Signal(FLOW_ID_VALUE)
        hit = Signal()
        lookup_done = res.valid & is_cnm_lookup          # (taken at once: one lookup in flight)
        with m.If(lookup_done):
            m.d.sync += [info.eq(res.payload.value), hit.eq(hit_res)]
        r = gen.request.payload
        m.d.comb += [
            r.dst_mac.eq(info.src_mac), r.vid.eq(info.vid), r.rpid.eq(info.rpid),
            r.cpid_low.eq(pdu.cpid[:16]), r.cpid_high.eq(pdu.cpid[16:]),
            r.qntz_fb.eq(pdu.qntz_fb), r.q_off.eq(pdu.q_off), r.q_delta.eq(pdu.q_delta),
            r.enc_prio.eq(pdu.enc_prio), r.enc_dst.eq(cfg.tor_mac), r.msdu_len.eq(pdu.msdu_len),
            r.msdu.eq(sample),
            res.ready.eq(1),
        ]
        _count(m, self.cnms, gen.request.valid & gen.request.ready)
        with m.If(res.valid & res.payload.tag[1]):      # (always taken: not a CNM lookup)
            m.d.sync += [inflight.eq(0), tbl_status.eq(res.payload.status),
                         tbl_result.eq(res.payload.value)]
        busy = queued | inflight
        bank.source("TBL_STATUS", busy, "busy")
        bank.source("TBL_STATUS", tbl_status, "status")
        bank.source("RES_MAC_LO", tbl_result.src_mac[:32])
        bank.source("RES_MAC_HI", tbl_result.src_mac[32:])
        bank.source("RES_FLOW", tbl_result.rpid, "rpid")
        bank.source("RES_FLOW", tbl_result.vid, "vid")
        for name in ("cnms", "other", "malformed", "misses", "full", "occupancy"):
            bank.source(name.upper(), getattr(self, name))

        state = Signal(TorState)
        # an if/elif chain rather than a Switch: Yosys drops empty default cases, which
        # Verilator -Wall then reports as incomplete
        with m.If(state == TorState.RECEIVE):
            with m.If(self.packet.valid & self.packet.ready & beat.last):
                m.d.sync += [state.eq(TorState.SUM), sum_wait.eq(sum_levels - 1)]
        with m.Elif(state == TorState.SUM):
            m.d.sync += [other_q.eq(other), bad_header_q.eq(bad_header),
                         udp_ck_q.eq(udp.checksum != 0)]
            # packets not for the private-CNM port need no checksum: classified at once
            with m.If(other | (sum_wait == 0)):
                m.d.sync += state.eq(TorState.CLASSIFY)
            with m.Else():
                m.d.sync += sum_wait.eq(sum_wait - 1)
        with m.Elif(state == TorState.CLASSIFY):
            _count(m, self.other, other_q)
            _count(m, self.malformed, ~other_q & malformed)
            with m.If(other_q | malformed):
                m.d.comb += release.eq(1)
                m.d.sync += state.eq(TorState.RECEIVE)
            with m.Else():
                m.d.sync += state.eq(TorState.LOOKUP)
        with m.Elif(state == TorState.LOOKUP):
            m.d.comb += issue.eq(1)
            with m.If(take):
                m.d.sync += state.eq(TorState.WAIT)
        with m.Elif(state == TorState.WAIT):
            with m.If(lookup_done):
                m.d.sync += state.eq(TorState.HAND)
        with m.Else():               # TorState.HAND: a hit's CNM request is handed on
            m.d.comb += gen.request.valid.eq(hit)
            with m.If(~hit | gen.request.ready):
                m.d.comb += release.eq(1)
                m.d.sync += state.eq(TorState.RECEIVE)
        with m.If(release):
            m.d.sync += [rx_busy.eq(0), beat_idx.eq(0), length.eq(0)]
        # the CNM generator's registers (GEN_*), forwarded with the base removed; the rest to
        # the ToR's own bank (a command, and the registers it uses, wait for the one in flight:
        # the idle rule)
        gen_words = max(r.addr for r in cfg.cnm_config().register_map().registers) + 1
        gen_aw = len(gen.csr_raddr)
        in_gen = _in_window(self.csr_w.payload.addr, L3QCN_TOR_GEN_BASE, gen_words)
        own_w = stream.Signature(self.csr_w.payload.shape()).create()
        own_rdata = Signal(32)
        gen_q = Signal()
        m.d.comb += [
            gen.csr_w.valid.eq(self.csr_w.valid & in_gen),
            gen.csr_w.payload.addr.eq((self.csr_w.payload.addr - L3QCN_TOR_GEN_BASE)[:gen_aw]),
            gen.csr_w.payload.data.eq(self.csr_w.payload.data),
            own_w.valid.eq(self.csr_w.valid & ~in_gen),
            own_w.payload.eq(self.csr_w.payload),
            self.csr_w.ready.eq(Mux(in_gen, gen.csr_w.ready, own_w.ready)),
            gen.csr_raddr.eq((self.csr_raddr - L3QCN_TOR_GEN_BASE)[:gen_aw]),
            self.csr_rdata.eq(Mux(gen_q, gen.csr_rdata, own_rdata)),
        ]
        m.d.sync += gen_q.eq(_in_window(self.csr_raddr, L3QCN_TOR_GEN_BASE, gen_words))
        bank.build(m, own_w, self.csr_raddr, own_rdata, idle=~busy)
        with m.If(bank.wstb["TBL_CMD"]):
            m.d.sync += queued.eq(1)
        return m


def _connect_generator_regs(m: Module, gen, gen_w, raddr: Value, base: int,
                            rdata: Signal) -> None:
    """A generator's register port behind its window at ``base`` of the CP's map: the writes
    of ``gen_w`` (already rebased) and the read address with the base removed."""
    aw = len(gen.csr_raddr)
    m.d.comb += [gen.csr_w.valid.eq(gen_w.valid), gen_w.ready.eq(gen.csr_w.ready),
                 gen.csr_w.payload.addr.eq(gen_w.payload.addr[:aw]),
                 gen.csr_w.payload.data.eq(gen_w.payload.data),
                 gen.csr_raddr.eq((raddr - base)[:aw]),
                 rdata.eq(gen.csr_rdata)]


def _in_window(addr: Value, base: int, words: int) -> Value:
    """``base <= addr < base + words`` (a forwarded generator's register window)."""
    if not words:
        return Const(0, 1)
    return (addr >= base) & (addr < base + words)
