"""Layouts of LDCP: the window engine (:mod:`hw.nic.ldcp_window`) and the transport's sender
and receiver (:mod:`hw.nic.ldcp_transport`)."""

from amaranth.lib import data, enum

__all__ = ["LdcpDecRule", "LdcpIncRule", "ldcp_ack_layout", "ldcp_event_layout",
           "ldcp_update_layout", "ldcp_params_layout",
           "LdcpTxStage", "LdcpTxLoad", "ldcp_tx_state_layout", "ldcp_tx_start_layout",
           "ldcp_tx_packet_layout", "ldcp_rx_packet_layout", "ldcp_tack_layout",
           "ldcp_rx_deliver_layout", "ldcp_rx_state_layout"]


class LdcpDecRule(enum.Enum, shape=3):
    """Which rule the marked part of an LDCP window update applied (docs/ldcp-window.md)."""
    NONE = 0         #: no marked packets in the event
    LINEAR = 1       #: cw >= 1: cw - n*beta, result still >= 1
    CROSS = 2        #: cw >= 1: cw - n*beta landed in [gamma, 1): crossed into the sub-1 regime
    CROSS_FLOOR = 3  #: cw >= 1: cw - n*beta < gamma: clamped to the floor gamma
    HALVE = 4        #: cw < 1: cw * eta**n, above the floor
    HALVE_FLOOR = 5  #: cw < 1: cw * eta**n <= gamma: the floor gamma


class LdcpIncRule(enum.Enum, shape=3):
    """Which rule the unmarked part of an LDCP window update applied."""
    NONE = 0         #: no unmarked packets in the event
    RECIP = 1        #: cw >= 1: cw + n*alpha/cw, below the cap
    RECIP_CAP = 2    #: cw >= 1: cw + n*alpha/cw >= cw_max: the cap
    GAMMA = 3        #: cw < 1: cw + n*gamma, still < 1
    CROSS = 4        #: cw < 1: cw + n*gamma >= 1: crossed into the window regime (below the cap)
    CROSS_CAP = 5    #: cw < 1: cw + n*gamma >= cw_max: crossed and capped


def ldcp_ack_layout(cfg) -> data.StructLayout:
    """One ACK of the flow: the ECN-Echo bit and the number of packets it confirms (1..m)."""
    return data.StructLayout({"ece": 1, "n": cfg.n_width})


def ldcp_event_layout(cfg) -> data.StructLayout:
    """One update of the window datapath: the flow's window and a (coalesced) event, applied as
    ``n_marked`` packets confirmed with ECE, then ``n_unmarked`` packets without."""
    return data.StructLayout({
        "cw": 32,                          # UQ16.16 packets
        "n_marked": cfg.event_n_width,
        "n_unmarked": cfg.event_n_width,
    })


def ldcp_update_layout(cfg) -> data.StructLayout:
    """The datapath's answer: the new window, the event it applied and the rules it took."""
    return data.StructLayout({
        "cw": 32,                          # UQ16.16 packets, new window
        "n_marked": cfg.event_n_width,
        "n_unmarked": cfg.event_n_width,
        "dec": LdcpDecRule,
        "inc": LdcpIncRule,
    })


def ldcp_params_layout() -> data.StructLayout:
    """Run-time parameters of the window datapath (hardware units, see LdcpWindowRegisters)."""
    return data.StructLayout({
        "alpha": 17,    # UQ1.16
        "beta": 17,     # UQ1.16
        "gamma": 17,    # UQ1.16
        "cw_max": 32,   # UQ16.16
    })



class LdcpTxStage(enum.Enum, shape=1):
    """Stage of an LDCP sender's message (docs/ldcp-transport.md)."""
    FAST = 0     #: fast start: window IW, Not-ECT packets until the first ACK
    STABLE = 1   #: stable stage: the window engine's gate (PAWA), every packet ECT


class LdcpTxLoad(enum.Enum, shape=2):
    """Which window the sender loads into the window engine (a pending load)."""
    ACKED = 0    #: exit 1 (loss in fast start): the packets acknowledged in fast start
    BDP = 1      #: exit 2 (all IW packets acknowledged): the CW_BDP register
    MIN1 = 2     #: retransmission timeout in the stable stage: min(cw, 1)


def ldcp_tx_state_layout(cfg) -> data.StructLayout:
    """The whole state of an LDCP sender (its ``state`` port), compared every cycle by the
    testbench, and the pulses of the last edge."""
    w = cfg.lsn_width
    return data.StructLayout({
        "active": 1, "done": 1, "stage": LdcpTxStage, "first_ack": 1,
        "load_pending": 1, "load_kind": LdcpTxLoad, "settle": 2,
        "msg_len": w, "nxt": w, "una": w, "snd_max": w,
        "new_cnt": 16, "fs_acked": 16, "rto_cnt": 32,
        "ev_rto": 1, "ev_bad_ack": 1, "ev_exit": 2,   # pulses: the last edge's events
    })


def ldcp_tx_start_layout(cfg) -> data.StructLayout:
    """A message to send (``cfg``: LdcpTransportConfig): its length in bytes (0 is done at once)."""
    return data.StructLayout({"length": cfg.lsn_width})


def ldcp_tx_packet_layout(cfg) -> data.StructLayout:
    """A packet released by the LDCP sender: its first byte's LSN, its length (MTU except the
    last of the message), ECN-capable (ECT) or not (Not-ECT, fast start), a retransmission,
    and the last packet of the message."""
    return data.StructLayout({"lsn": cfg.lsn_width, "length": cfg.len_width, "ect": 1,
                              "retx": 1, "last": 1})


def ldcp_rx_packet_layout(cfg) -> data.StructLayout:
    """A data packet reaching the LDCP receiver: LSN, length, CE mark, last of the message."""
    return data.StructLayout({"lsn": cfg.lsn_width, "length": cfg.len_width, "ce": 1,
                              "last": 1})


def ldcp_tack_layout(cfg) -> data.StructLayout:
    """An LDCP transport ACK: the cumulative LSN (next byte expected), the ECN-Echo bit, the
    packets it newly confirms ``n`` (0..m; 0 for a duplicate ACK), and NAK (a gap was seen at
    ``lsn``: go back N)."""
    return data.StructLayout({"lsn": cfg.lsn_width, "ece": 1, "n": cfg.n_width, "nak": 1})


def ldcp_rx_deliver_layout(cfg) -> data.StructLayout:
    """Bytes the LDCP receiver accepted in order (handed to the application)."""
    return data.StructLayout({"lsn": cfg.lsn_width, "length": cfg.len_width, "last": 1})


def ldcp_rx_state_layout(cfg) -> data.StructLayout:
    """The whole state of an LDCP receiver (its ``state`` port)."""
    return data.StructLayout({
        "expected": cfg.lsn_width, "pending": cfg.n_width, "nak_sent": 1, "age": 24,
        "ev_bad": 1,                                   # pulse: a malformed packet was dropped
    })

