"""QCN CNM frame generator: an IEEE 802.1Qau CNM as a byte stream.

See ``docs/qcn.md`` ("CNM frame generator") and :mod:`sim.models.cnm` for the byte-exact model.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Module, Mux
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ..layouts import CN_TAG, CNM_PDU, ETH_HEADER, VLAN_TAG, byte_beat_layout, cnm_request_layout
from ..lib.csr import CsrBank
from ..lib.csr_port import csr_ports
from ..lib.frame import be_bytes, pack_fields, shift_out
from .cnm_config import (
    CNM_ETHERTYPE,
    CNM_HEADER_BYTES,
    CNTAG_ETHERTYPE,
    MIN_FRAME_BYTES,
    VLAN_TPID,
    CnmGenConfig,
)

__all__ = ["CnmGenerator"]


class CnmGenerator(wiring.Component):
    """CNM frame generator.

    Parameters
    ----------
    config : CnmGenConfig
        The MSDU bytes carried and the beat width; the reset values of the CP's MAC and the
        CNM priority (run-time registers).

    Ports
    -----
    request : In(stream(cnm_request_layout))
        One CNM to send: the sampled frame's source MAC, VID, CN-TAG flow ID, priority,
        destination MAC, MSDU length and first MSDU bytes; qntzFb, QOffset, QDelta and the
        port/priority part of the CPID.
    frame : Out(stream(byte_beat_layout(data_bytes)))
        The frame without FCS (46 header bytes + min(msdu_len, msdu_bytes) MSDU bytes, zero
        padded to 60 bytes), wire byte i of a beat in ``data[8i:8i+8]``, ``keep`` for the valid
        bytes, ``last`` on the final beat.
    csr_w : In(stream(csr_write_layout)), csr_raddr : In(5), csr_rdata : Out(32)
        The register port (:meth:`CnmGenConfig.register_map`: CP MAC, CNM priority, the ID
        header).

    Latency and throughput
    ----------------------
    The first beat is valid on the edge after the request is accepted; then one beat per
    clock (ceil(length / data_bytes) beats).  The next request is accepted on the edge that
    transfers the last beat, so frames follow back to back.  The frame is assembled in one
    register at acceptance and shifted out (no per-beat multiplexer).  A register write is
    applied at the edge that takes it (always ready); a request accepted at that edge still
    uses the old values.
    """

    def __init__(self, config: CnmGenConfig):
        if not isinstance(config, CnmGenConfig):
            raise TypeError(f"CnmGenerator needs a CnmGenConfig, not {config!r}")
        self.config = config
        super().__init__({
            "request": In(stream.Signature(cnm_request_layout(config))),
            "frame": Out(stream.Signature(byte_beat_layout(config.data_bytes))),
            **csr_ports(config.register_map()),
        })

    def elaborate(self, platform):
        m = Module()
        cfg = self.config
        DB, MB, MAX = cfg.data_bytes, cfg.msdu_bytes, cfg.max_frame
        r = self.request.payload
        # ---- run-time registers (declared once in CnmGenConfig.register_map) ----------------
        bank = CsrBank(cfg.register_map())
        cp_mac = Cat(bank["CP_MAC_LO"], bank["CP_MAC_HI"])

        # ---- the frame bytes of the request (combinational) -------------------------------------
        eth = pack_fields(ETH_HEADER, {"dst": r.dst_mac, "src": cp_mac,
                                       "ethertype": VLAN_TPID})
        vlan = pack_fields(VLAN_TAG, {"pcp": bank["CNM_PCP"], "dei": 0, "vid": r.vid,
                                      "ethertype": CNTAG_ETHERTYPE})
        cntag = pack_fields(CN_TAG, {"rpid": r.rpid, "ethertype": CNM_ETHERTYPE})
        pdu = pack_fields(CNM_PDU, {
            "version": 0, "resv": 0, "qntz_fb": r.qntz_fb,
            "cpid": Cat(r.cpid_low, r.cpid_high if cfg.cpid_from_request
                        else cp_mac), "q_off": r.q_off,
            "q_delta": r.q_delta, "enc_prio": r.enc_prio, "enc_resv": 0, "enc_dst": r.enc_dst,
            "msdu_len": r.msdu_len})
        header = (be_bytes(eth, 14) + be_bytes(vlan, 4) + be_bytes(cntag, 4)
                  + be_bytes(pdu, 24))
        assert len(header) == CNM_HEADER_BYTES
        # sampled bytes beyond msdu_len are replaced by zeros (they are padding or absent)
        msdu = [Mux(r.msdu_len > j, r.msdu[8 * j:8 * j + 8], 0) for j in range(MB)]
        body = header + msdu + [Const(0, 8)] * (MAX - CNM_HEADER_BYTES - MB)
        carried = Mux(r.msdu_len > MB, MB, r.msdu_len)
        length = Mux(carried < MIN_FRAME_BYTES - CNM_HEADER_BYTES, MIN_FRAME_BYTES,
                     CNM_HEADER_BYTES + carried)

        # ---- shift register ---------------------------------------------------------------------
        out = self.frame
        idle = shift_out(m, out, DB, MAX, self.request.valid & self.request.ready, Cat(*body),
                         length, min_length=MIN_FRAME_BYTES)
        m.d.comb += self.request.ready.eq(idle | (out.valid & out.ready & out.payload.last))
        bank.build(m, self.csr_w, self.csr_raddr, self.csr_rdata)
        return m
