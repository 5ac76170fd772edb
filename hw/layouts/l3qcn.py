"""Layouts of L3QCN: the generic hash table (:mod:`hw.switch.hash_table`), the private CNM, the
congestion point's notifier and the ingress ToR's converter (:mod:`hw.switch.l3qcn`)."""

from amaranth.lib import data, enum

__all__ = ["HtOp", "HtStatus", "ht_command_layout", "ht_result_layout", "ht_entry_layout",
           "CNP_QP_KEY", "FIVE_TUPLE", "FLOW_ID_VALUE", "CNP_LOOKUP_TAG",
           "private_cnm_request_layout", "l3qcn_frame_layout", "tor_learn_layout"]


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


#: tag of the L3QCN CP's CNP-QP table commands (width CNP_TAG_WIDTH): ``datapath`` 1 for the
#: CP's own lookups (0: a management command), and what the CNP needs besides the table's value
CNP_LOOKUP_TAG = data.StructLayout({"datapath": 1, "src_ip": 32, "sport": 16})


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



def tor_learn_layout() -> data.StructLayout:
    """Learn (insert or refresh) one flow at the ingress ToR: the 5-tuple of a host's data
    frame and its source MAC, CN-TAG flow ID and VLAN ID."""
    return data.StructLayout({"flow": FIVE_TUPLE, "info": FLOW_ID_VALUE})

