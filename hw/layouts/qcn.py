"""Layouts of QCN (IEEE 802.1Qau): the congestion point (:mod:`hw.switch.qcn_cp`), the reaction
point (:mod:`hw.nic.qcn_rp`) and the CNM generator's request (:mod:`hw.switch.cnm_gen`)."""

from amaranth.lib import data, enum

__all__ = ["qcn_cp_frame_layout", "qcn_cp_decision_layout", "QcnRpEventKind",
           "qcn_rp_event_layout", "qcn_rp_state_layout", "cnm_request_layout"]


def qcn_cp_frame_layout(cfg) -> data.StructLayout:
    """A frame arriving at the CP's queue: the queue depth it finds (bytes) and its length."""
    return data.StructLayout({"qlen": cfg.occ_width, "length": cfg.len_width})


def qcn_cp_decision_layout(cfg) -> data.StructLayout:
    """One decision per frame: sampled or not; for a sampled frame with Fb < 0, ``cnm`` and the
    CNM fields (qntzFb; QOffset and QDelta in 64-byte units, int16 two's complement)."""
    return data.StructLayout({"sampled": 1, "cnm": 1, "qntz_fb": 6, "q_off": 16, "q_delta": 16})


class QcnRpEventKind(enum.Enum, shape=1):
    """An event of the QCN reaction point (time passing is the clock itself)."""
    CNM = 0   #: a CNM arrived with quantized feedback ``fb``
    TX = 1    #: the rate limiter sent ``bytes`` bytes


def qcn_rp_event_layout(cfg) -> data.StructLayout:
    return data.StructLayout({"kind": QcnRpEventKind, "fb": 6, "bytes": cfg.byte_width})


def qcn_rp_state_layout(cfg) -> data.StructLayout:
    """State of one QCN rate limiter (docs/qcn.md, "Reaction point")."""
    return data.StructLayout({
        "cr": cfg.rate_width,          # current rate, UQ.10 Mb/s
        "tr": cfg.rate_width,          # target rate, UQ.10 Mb/s
        "bc": cfg.byte_width,          # byte counter: bytes left before the next byte cycle
        "b_stage": 8,                  # ByteStage (saturates at 255)
        "t_cnt": cfg.timer_width,      # timer: cycles left (runs once active)
        "t_stage": 8,                  # TimeStage (saturates at 255)
        "active": 1,                   # a CNM has been received: counters run
        "fresh": 1,                    # no increase since the last cut (TR > 10 CR guard)
    })



def cnm_request_layout(cfg) -> data.StructLayout:
    """One CNM to send: the sampled frame's addressing, the CP's feedback and the first
    ``cfg.msdu_bytes`` bytes of the sampled MSDU (wire byte i in ``msdu[8i:8i+8]``)."""
    fields = {
        "dst_mac": 48,        # the sampled frame's source MAC
        "vid": 12,            # the sampled frame's VLAN ID
        "rpid": 16,           # the sampled frame's CN-TAG flow ID
        "cpid_low": 16,       # port/priority part of the CPID (the CP's MAC is a register)
        "qntz_fb": 6,
        "q_off": 16,          # int16, 64-byte units
        "q_delta": 16,        # int16, 64-byte units
        "enc_prio": 3,        # the sampled frame's priority
        "enc_dst": 48,        # the sampled frame's destination MAC
        "msdu_len": 16,       # the sampled frame's MSDU length
        "msdu": 8 * cfg.msdu_bytes,
    }
    if cfg.cpid_from_request:
        fields["cpid_high"] = 48   # upper 6 bytes of the CPID (a remote CP's MAC, L3QCN ToR)
    return data.StructLayout(fields)

