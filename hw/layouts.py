"""Layouts and enumerations shared by the RTL, the golden models and the testbenches.

Descriptors, decisions and control words are packed and unpacked through these layouts
(``layout.const({...}).as_bits()`` / ``layout.from_bits(int)``), never with hand-written shifts.
Layouts whose field widths depend on a block's configuration are built by a function of that
configuration.

(No ``from __future__ import annotations`` here: ``data.Struct`` reads its annotations as
shapes, not strings.)
"""


from amaranth.hdl import Shape
from amaranth.lib import data, enum

__all__ = [
    "Ecn", "QueueOp", "Profile", "Compare", "SamplePoint", "DropReason",
    "MarkerCtrl", "marker_descriptor_layout", "marker_decision_layout", "csr_write_layout",
    "RpEventKind", "RpMode", "rp_event_layout", "rp_state_layout",
    "ETH_HEADER", "VLAN_TAG", "IPV4_HEADER", "IPV6_HEADER", "UDP_HEADER", "BTH_HEADER",
    "cnp_request_layout", "byte_beat_layout", "np_event_layout", "np_cnp_layout",
    "rl_rate_layout", "rl_send_layout", "bits_for_flows",
]


class Ecn(enum.Enum, shape=2):
    """IP ECN codepoint (RFC 3168)."""
    NOT_ECT = 0b00
    ECT1 = 0b01
    ECT0 = 0b10
    CE = 0b11


class QueueOp(enum.Enum, shape=1):
    """What a queue descriptor reports: a packet entering or leaving the egress queue."""
    ENQUEUE = 0
    DEQUEUE = 1


class Profile(enum.Enum, shape=2):
    """Marker profile (switch.md §1)."""
    LDCP = 0    #: RED ramp for ECN-capable packets, Not-ECT dropped at q >= K
    DCQCN = 1   #: RED ramp for ECN-capable packets, Not-ECT forwarded
    DCTCP = 2   #: step marking at K (= k_max), Not-ECT forwarded


class Compare(enum.Enum, shape=1):
    """Threshold comparison convention."""
    GE = 0  #: LDCP draft: ramp K_min <= q < K_max, mark all at q >= K_max, drop Not-ECT at q >= K
    GT = 1  #: HPCC ns-3 switch: ramp K_min < q <= K_max, mark all at q > K_max, drop at q > K


class SamplePoint(enum.Enum, shape=1):
    """Where the queue is sampled for the ECN marking decision."""
    ENQUEUE = 0  #: the queue the arriving packet finds (before it is added)
    DEQUEUE = 1  #: the queue after removing the departing packet (HPCC ns-3)


class DropReason(enum.Enum, shape=3):
    """Why a descriptor was not accepted.  The last two flag malformed descriptors."""
    NONE = 0
    NOT_ECT_AT_K = 1   #: ECN-incapable packet at q >= K (LDCP fast-start policy)
    QUEUE_FULL = 2     #: q + length > buf_max for the packet's queue
    POOL_FULL = 3      #: shared occupancy + length > shared_buffer
    BAD_QUEUE = 4      #: port or priority outside the configured range (nothing changed)
    UNDERFLOW = 5      #: dequeue of more bytes than the queue holds (nothing changed)


class MarkerCtrl(data.Struct):
    """The marker's CTRL register.  Plain codes rather than enums, because software may write
    any bit pattern: profile code 3 is reserved and behaves as DCQCN (neither the LDCP drop
    rule nor the DCTCP step applies)."""
    profile: 2     # Profile code
    compare: 1     # Compare code
    sample_at: 1   # SamplePoint code


def marker_descriptor_layout(cfg) -> data.StructLayout:
    """One queue event: a packet enqueued to, or dequeued from, queue (port, prio)."""
    return data.StructLayout({
        "op": QueueOp,
        "port": cfg.port_width,
        "prio": cfg.prio_width,
        "length": cfg.len_width,
        "ecn": Ecn,
    })


def marker_decision_layout(cfg) -> data.StructLayout:
    """The marker's answer to one descriptor (same order as the descriptors)."""
    return data.StructLayout({
        "op": QueueOp,
        "port": cfg.port_width,
        "prio": cfg.prio_width,
        "length": cfg.len_width,
        "drop": 1,              # 1: the packet is not admitted / the descriptor was rejected
        "reason": DropReason,
        "ecn": Ecn,             # the packet's ECN field after this block
        "marked": 1,            # 1: this block changed ECT to CE
        "qlen": cfg.occ_width,  # queue bytes the decision was taken on
    })


def csr_write_layout(addr_width: int, data_width: int = 32) -> data.StructLayout:
    """A register write: address (word index) and data."""
    return data.StructLayout({"addr": addr_width, "data": data_width})


class LayoutCodec:
    """Fast packing and unpacking of a flat ``StructLayout``, derived from the layout itself.

    ``layout.const({...}).as_bits()`` is the reference (and is what the tests compare this
    against), but it costs ~100 µs per call and silently truncates values that do not fit a
    field.  The codec reads each field's offset, width and enum type from the layout once, then
    packs in a few µs and raises :class:`ValueError` naming the field when a value is out of
    range; ``unpack`` returns a dict of ints and enum members.
    """

    def __init__(self, layout: data.StructLayout):
        self.layout = layout
        self.fields = []
        for name, field in layout:
            shape = field.shape
            enum_type = shape if isinstance(shape, type) and issubclass(shape, enum.Enum) else None
            self.fields.append((name, field.offset, Shape.cast(shape).width, enum_type))
        self.size = layout.size

    def pack(self, values: dict) -> int:
        bits = 0
        for name, offset, width, enum_type in self.fields:
            value = values.get(name, 0)
            if enum_type is not None and isinstance(value, enum_type):
                value = value.value
            value = int(value)
            if not 0 <= value < (1 << width):
                raise ValueError(f"field {name!r} = {value} does not fit {width} bits")
            bits |= value << offset
        return bits

    def unpack(self, bits: int) -> dict:
        out = {}
        for name, offset, width, enum_type in self.fields:
            value = (bits >> offset) & ((1 << width) - 1)
            out[name] = enum_type(value) if enum_type is not None else value
        return out


# ---- DCQCN reaction point (hw/nic/dcqcn_rp.py) -------------------------------------------------

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


# ------------------------------------------------------------------------------------------------
# LDCP window engine (hw/nic/ldcp_window.py)
# ------------------------------------------------------------------------------------------------
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


__all__ += ["LdcpDecRule", "LdcpIncRule", "ldcp_ack_layout", "ldcp_event_layout",
            "ldcp_update_layout", "ldcp_params_layout"]


# ---- Packet headers (hw/nic/cnp_gen.py, sim/models/cnp.py) ------------------------------------
#
# Byte-order convention: a header layout is the header read as ONE BIG-ENDIAN INTEGER.  Wire
# byte 0 is the most significant byte of ``layout.const({...}).as_bits()``, so
# ``bits.to_bytes(layout.size // 8, "big")`` gives the bytes in wire order.  Because Amaranth
# layouts place their first field at the least significant bits, the fields below are declared
# from the LAST bit on the wire to the first; each field then holds its natural (network-order)
# value, bit fields included (IPv4 byte 0: ``version`` is the high nibble, ``ihl`` the low one).
# Streams of bytes (the CNP generator's output) carry wire byte i in bits [8i, 8i+8) of a beat.

ETH_HEADER = data.StructLayout({"ethertype": 16, "src": 48, "dst": 48})          # 14 bytes
#: after ETH_HEADER with ethertype = TPID 0x8100: the TCI, then the inner ethertype
VLAN_TAG = data.StructLayout({"ethertype": 16, "vid": 12, "dei": 1, "pcp": 3})   # 4 bytes
IPV4_HEADER = data.StructLayout({
    "dst": 32, "src": 32, "checksum": 16, "protocol": 8, "ttl": 8, "frag_offset": 13,
    "flags": 3, "id": 16, "total_length": 16, "ecn": 2, "dscp": 6, "ihl": 4, "version": 4,
})                                                                               # 20 bytes
IPV6_HEADER = data.StructLayout({
    "dst": 128, "src": 128, "hop_limit": 8, "next_header": 8, "payload_length": 16,
    "flow_label": 20, "ecn": 2, "dscp": 6, "version": 4,
})                                                                               # 40 bytes
UDP_HEADER = data.StructLayout({"checksum": 16, "length": 16, "dport": 16, "sport": 16})
BTH_HEADER = data.StructLayout({
    "psn": 24, "resv7": 7, "ackreq": 1, "dqpn": 24, "resv6": 6, "becn": 1, "fecn": 1,
    "pkey": 16, "tver": 4, "padcnt": 2, "migreq": 1, "se": 1, "opcode": 8,
})                                                                               # 12 bytes


def cnp_request_layout(cfg) -> data.StructLayout:
    """One CNP to send: the flow's addresses (as the CNP carries them) and the sender's QP."""
    ip = 32 if cfg.ip_version == 4 else 128
    fields = {"dqpn": 24, "src_ip": ip, "dst_ip": ip, "udp_sport": 16}
    fields["ip_id" if cfg.ip_version == 4 else "flow_label"] = 16 if cfg.ip_version == 4 else 20
    if cfg.l2 != "none":
        fields.update({"dst_mac": 48, "src_mac": 48})
    return data.StructLayout(fields)


def byte_beat_layout(data_bytes: int) -> data.StructLayout:
    """A beat of a byte stream: wire byte i in ``data[8i:8i+8]``; ``keep`` bit i = byte i
    valid (all ones except possibly on the last beat, whose valid bytes are the low ones)."""
    return data.StructLayout({"data": 8 * data_bytes, "keep": data_bytes, "last": 1})


# ------------------------------------------------------------------------------------------------
# QCN congestion point (hw/switch/qcn_cp.py) and reaction point (hw/nic/qcn_rp.py)
# ------------------------------------------------------------------------------------------------
__all__ += ["qcn_cp_frame_layout", "qcn_cp_decision_layout"]


def qcn_cp_frame_layout(cfg) -> data.StructLayout:
    """A frame arriving at the CP's queue: the queue depth it finds (bytes) and its length."""
    return data.StructLayout({"qlen": cfg.occ_width, "length": cfg.len_width})


def qcn_cp_decision_layout(cfg) -> data.StructLayout:
    """One decision per frame: sampled or not; for a sampled frame with Fb < 0, ``cnm`` and the
    CNM fields (qntzFb; QOffset and QDelta in 64-byte units, int16 two's complement)."""
    return data.StructLayout({"sampled": 1, "cnm": 1, "qntz_fb": 6, "q_off": 16, "q_delta": 16})


__all__ += ["QcnRpEventKind", "qcn_rp_event_layout", "qcn_rp_state_layout"]


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


# ---- QCN CNM frame generator (hw/switch/cnm_gen.py); headers big-endian as above ---------------
__all__ += ["CN_TAG", "CNM_PDU", "cnm_request_layout"]

#: after VLAN_TAG with ethertype = 0x22E9: the CN-TAG's flow ID (RPID), then the inner ethertype
CN_TAG = data.StructLayout({"ethertype": 16, "rpid": 16})                          # 4 bytes
#: the 802.1Qau CNM PDU header (packets.md), 24 bytes; the sampled MSDU bytes follow
CNM_PDU = data.StructLayout({
    "msdu_len": 16, "enc_dst": 48, "enc_resv": 13, "enc_prio": 3, "q_delta": 16, "q_off": 16,
    "cpid": 64, "qntz_fb": 6, "resv": 6, "version": 4,
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


# ---- DCQCN notification point (hw/nic/dcqcn_np.py) ---------------------------------------------

def np_event_layout(cfg) -> data.StructLayout:
    """A received RoCEv2 data packet of flow (QP) ``flow``; ``ce``: its IP ECN field was CE."""
    return data.StructLayout({"flow": cfg.flow_width, "ce": 1})


def np_cnp_layout(cfg) -> data.StructLayout:
    """Send a CNP for flow ``flow`` (to the QP at its sender)."""
    return data.StructLayout({"flow": cfg.flow_width})


# ---- Per-flow rate limiter (hw/nic/rate_limiter.py) ----------------------------------------------

def rl_rate_layout(cfg) -> data.StructLayout:
    """Set a flow's rate (the reaction point's Rc, UQ.10 Mb/s)."""
    return data.StructLayout({"flow": bits_for_flows(cfg), "rate": cfg.rate_width})


def rl_send_layout(cfg) -> data.StructLayout:
    """The flow sent a packet of ``bytes`` bytes."""
    return data.StructLayout({"flow": bits_for_flows(cfg), "bytes": cfg.len_width})


def bits_for_flows(cfg) -> int:
    return max(1, (cfg.flows - 1).bit_length())


# ------------------------------------------------------------------------------------------------
# L3QCN (docs/l3qcn.md): generic hash table (hw/switch/hash_table.py), private CNM
# (hw/switch/l3qcn.py), the congestion point's notifier and the ingress ToR's converter.
# ------------------------------------------------------------------------------------------------
__all__ += ["HtOp", "HtStatus", "ht_command_layout", "ht_result_layout", "ht_entry_layout",
            "CNP_QP_KEY", "FIVE_TUPLE", "FLOW_ID_VALUE", "PRIVATE_CNM_PDU",
            "private_cnm_request_layout", "l3qcn_frame_layout"]


class HtOp(enum.Enum, shape=2):
    """A hash-table command."""
    LOOKUP = 0   #: read the key's value
    ADD = 1      #: insert a new key (DUPLICATE if present, FULL if its bucket is full)
    REMOVE = 2   #: delete the key (NOT_FOUND if absent)
    LEARN = 3    #: insert, or overwrite the value of a present key (REFRESHED)


class HtStatus(enum.Enum, shape=3):
    """The outcome of a hash-table command."""
    OK = 0          #: lookup hit, key added, key removed, key learnt (new)
    NOT_FOUND = 1   #: lookup miss, remove of an absent key
    FULL = 2        #: add / learn of a new key into a full bucket (nothing written)
    DUPLICATE = 3   #: add of a present key (nothing written)
    REFRESHED = 4   #: learn of a present key: value overwritten


def ht_command_layout(cfg) -> data.StructLayout:
    return data.StructLayout({"op": HtOp, "key": cfg.key_width, "value": cfg.value_width,
                              "tag": cfg.tag_width})


def ht_result_layout(cfg) -> data.StructLayout:
    """The command's op, key and tag echoed; ``value``: the entry's value BEFORE the command
    when the key was present, else 0."""
    return data.StructLayout({"op": HtOp, "status": HtStatus, "key": cfg.key_width,
                              "value": cfg.value_width, "tag": cfg.tag_width})


def ht_entry_layout(cfg) -> data.StructLayout:
    """One way of a bucket in block RAM."""
    return data.StructLayout({"valid": 1, "key": cfg.key_width, "value": cfg.value_width})


#: key of the CNP-QP table (an integer, not wire bytes): destination QP in the low 24 bits
CNP_QP_KEY = data.StructLayout({"dqpn": 24, "dst_ip": 32})
#: key of the flow-ID mapping table: the IPv4 5-tuple
FIVE_TUPLE = data.StructLayout({"protocol": 8, "dport": 16, "sport": 16, "dst_ip": 32,
                                "src_ip": 32})
#: value of the flow-ID mapping table
FLOW_ID_VALUE = data.StructLayout({"vid": 12, "rpid": 16, "src_mac": 48})

#: The project's private CNM PDU (UDP payload, 32 bytes, big-endian like the headers above:
#: declared from the last wire bit).  Wire order: version 4 | resv 4 | resv 2 | qntzFb 6 |
#: encapsulated priority 3 | resv 13 | CPID 64 | QOffset 16 | QDelta 16 | flow source IP 32 |
#: flow destination IP 32 | flow source port 16 | flow destination port 16 | flow protocol 8 |
#: resv 8 | encapsulated MSDU length 16; then the sampled packet's first bytes.
PRIVATE_CNM_PDU = data.StructLayout({
    "msdu_len": 16, "resv3": 8, "protocol": 8, "dport": 16, "sport": 16, "dst_ip": 32,
    "src_ip": 32, "q_delta": 16, "q_off": 16, "cpid": 64, "resv2": 13, "enc_prio": 3,
    "qntz_fb": 6, "resv1": 2, "resv0": 4, "version": 4,
})


def private_cnm_request_layout(cfg) -> data.StructLayout:
    """One private CNM to build (``cfg``: PrivateCnmConfig): the congested flow's 5-tuple and
    priority, the CP's feedback, the sampled IP packet's length and first bytes."""
    return data.StructLayout({
        "src_ip": 32, "dst_ip": 32, "sport": 16, "dport": 16, "protocol": 8,
        "qntz_fb": 6, "q_off": 16, "q_delta": 16, "enc_prio": 3, "msdu_len": 16,
        "sample": max(1, 8 * cfg.sample_bytes),
    })


def l3qcn_frame_layout(cfg) -> data.StructLayout:
    """A frame entering the L3QCN congestion point's queue (``cfg``: L3qcnCpConfig): what the
    QCN CP needs (queue depth found, length) and the parsed headers the notification needs."""
    fields = {"qlen": cfg.cp.occ_width, "length": cfg.cp.len_width, "src_ip": 32, "dst_ip": 32,
              "sport": 16}
    if cfg.mode == "roce":
        fields.update({"dqpn": 24, "roce": 1})     # roce: parsed as RoCEv2 (UDP 4791 + BTH)
    else:
        fields.update({"dport": 16, "protocol": 8, "prio": 3, "ip_len": 16,
                       "sample": max(1, 8 * cfg.private.sample_bytes)})
    return data.StructLayout(fields)


# ------------------------------------------------------------------------------------------------
# LDCP transport (hw/nic/ldcp_transport.py, sim/models/ldcp_transport.py)
# ------------------------------------------------------------------------------------------------
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


__all__ += ["LdcpTxStage", "LdcpTxLoad", "ldcp_tx_state_layout", "ldcp_tx_start_layout",
            "ldcp_tx_packet_layout", "ldcp_rx_packet_layout", "ldcp_tack_layout",
            "ldcp_rx_deliver_layout", "ldcp_rx_state_layout"]

#: tag of the L3QCN CP's CNP-QP table commands (width CNP_TAG_WIDTH): ``datapath`` 1 for the
#: CP's own lookups (0: a management command), and what the CNP needs besides the table's value
CNP_LOOKUP_TAG = data.StructLayout({"datapath": 1, "src_ip": 32, "sport": 16})


def tor_learn_layout() -> data.StructLayout:
    """Learn (insert or refresh) one flow at the ingress ToR: the 5-tuple of a host's data
    frame and its source MAC, CN-TAG flow ID and VLAN ID."""
    return data.StructLayout({"flow": FIVE_TUPLE, "info": FLOW_ID_VALUE})


__all__ += ["CNP_LOOKUP_TAG", "tor_learn_layout"]
