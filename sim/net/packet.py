"""The simulator's packet: one object per frame on a link, with the fields the engines read.

Sizes are bytes on the wire.  ``seq`` is the transport's sequence number: a packet number for
DCTCP, DCQCN and QCN flows, a byte LSN for LDCP (whose model counts bytes).  Control frames
(ACK, NAK, CNP, CNM) travel in the control priority, PFC PAUSE frames in the MAC-control one,
which no pause and no congestion point ever holds back.
"""

from __future__ import annotations

from dataclasses import dataclass

from hw.layouts import Ecn

DATA, ACK, NAK, CNP, CNM, PAUSE = range(6)
KIND_NAMES = ("DATA", "ACK", "NAK", "CNP", "CNM", "PAUSE")
PRIO_DATA, PRIO_CONTROL, PRIO_MAC = 0, 1, 2
CONTROL_BYTES = 64          #: ACK / NAK / CNP / CNM / PAUSE frames on the wire


@dataclass(slots=True)
class Packet:
    kind: int
    flow: int
    src: int                 # host ids
    dst: int
    seq: int                 # DATA: sequence; ACK: cumulative acknowledged; NAK: expected
    size: int                # bytes on the wire
    ecn: Ecn = Ecn.NOT_ECT
    prio: int = PRIO_DATA
    ece: bool = False        # ACK: ECN echo
    count: int = 1           # ACK: packets covered; CNM: quantized feedback; PAUSE: unused
    retx: bool = False       # DATA: a retransmission
    last: bool = False       # DATA: last packet of the message
    payload: int = 0         # DATA: payload bytes (LDCP's LSN advances by this)
    pause_ps: int = 0        # PAUSE: pause time (0 = resume)
    ingress: int = -1        # switch-local: the port it arrived on (PFC accounting)
    by_switch: bool = False  # CNP: built by a switch (L3QCN), not by the receiver
    sent_ps: int = 0         # DATA: when the sender released it (CNP/CNM latency statistics)


def control(kind: int, flow: int, src: int, dst: int, seq: int = 0, **kw) -> Packet:
    """A control frame (ACK, NAK, CNP, CNM) in the control priority."""
    return Packet(kind, flow, src, dst, seq, CONTROL_BYTES, Ecn.NOT_ECT, PRIO_CONTROL, **kw)
