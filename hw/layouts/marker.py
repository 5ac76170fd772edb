"""Layouts and enumerations of the egress congestion point (:mod:`hw.switch.marker`).

(No ``from __future__ import annotations`` here: ``data.Struct`` reads its annotations as
shapes, not strings.)
"""

from amaranth.lib import data, enum

from .common import Ecn

__all__ = ["QueueOp", "Profile", "Compare", "SamplePoint", "DropReason", "MarkerCtrl",
           "marker_descriptor_layout", "marker_decision_layout"]


class QueueOp(enum.Enum, shape=1):
    """What a queue descriptor reports: a packet entering or leaving the egress queue."""
    ENQUEUE = 0
    DEQUEUE = 1


class Profile(enum.Enum, shape=2):
    """Marker profile (docs/switch-marker.md)."""
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

