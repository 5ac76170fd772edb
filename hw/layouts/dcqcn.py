"""Layouts of DCQCN: the reaction point (:mod:`hw.nic.dcqcn_rp`), the notification point
(:mod:`hw.nic.dcqcn_np`) and the CNP generator's request (:mod:`hw.nic.cnp_gen`)."""

from amaranth.lib import data, enum

__all__ = ["RpEventKind", "RpMode", "rp_event_layout", "rp_state_layout", "np_event_layout",
           "np_cnp_layout", "cnp_request_layout"]


class RpEventKind(enum.Enum, shape=1):
    """An event of the DCQCN reaction point (time passing is the clock itself)."""
    CNP = 0   #: a CNP arrived for the flow
    TX = 1    #: the flow sent ``bytes`` bytes


class RpMode(enum.Enum, shape=2):
    """The rate-increase phase of the last increase event (reset to FR by a cut)."""
    FR = 0    #: fast recovery
    AI = 1    #: additive increase
    HAI = 2   #: hyper increase


def rp_event_layout(cfg) -> data.StructLayout:
    return data.StructLayout({"kind": RpEventKind, "bytes": cfg.byte_width})


def rp_state_layout(cfg) -> data.StructLayout:
    """Per-flow state of the DCQCN reaction point (docs/dcqcn.md, "State")."""
    return data.StructLayout({
        "rc": cfg.rate_width,          # current rate, UQ.10 Mb/s
        "rt": cfg.rate_width,          # target rate, UQ.10 Mb/s
        "alpha": 25,                   # UQ1.24
        "t_stage": 8,                  # timer stage (saturates at 255)
        "b_stage": 8,                  # byte-counter stage (saturates at 255)
        "mode": RpMode,
        "t_cnt": cfg.timer_width,      # rate-increase timer: cycles left (0 = stopped)
        "a_cnt": cfg.timer_width,      # alpha timer: cycles left (0 = stopped)
        "d_cnt": cfg.timer_width,      # cut monitor / holdoff timer: cycles left (0 = stopped)
        "bc": cfg.byte_width,          # byte counter: bytes left before the next byte event
        "active": 1,                   # a CNP has been received (timers run)
        "alpha_flag": 1,               # periodic alpha: a CNP arrived in this alpha period
        "dec_flag": 1,                 # periodic check: a CNP arrived since the last check
    })



def np_event_layout(cfg) -> data.StructLayout:
    """A received RoCEv2 data packet of flow (QP) ``flow``; ``ce``: its IP ECN field was CE."""
    return data.StructLayout({"flow": cfg.flow_width, "ce": 1})


def np_cnp_layout(cfg) -> data.StructLayout:
    """Send a CNP for flow ``flow`` (to the QP at its sender)."""
    return data.StructLayout({"flow": cfg.flow_width})



def cnp_request_layout(cfg) -> data.StructLayout:
    """One CNP to send: the flow's addresses (as the CNP carries them) and the sender's QP."""
    ip = 32 if cfg.ip_version == 4 else 128
    fields = {"dqpn": 24, "src_ip": ip, "dst_ip": ip, "udp_sport": 16}
    fields["ip_id" if cfg.ip_version == 4 else "flow_label"] = 16 if cfg.ip_version == 4 else 20
    if cfg.l2 != "none":
        fields.update({"dst_mac": 48, "src_mac": 48})
    return data.StructLayout(fields)

