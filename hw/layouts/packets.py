"""Packet header layouts, declared in wire order through :func:`~hw.layouts.common.wire_header`.

A header layout is the header read as one big-endian integer: ``bits.to_bytes(layout.size //
8, "big")`` gives its bytes in wire order (see :func:`wire_header`).  Streams of bytes (the CNP
and CNM generators' output) carry wire byte i in bits [8i, 8i+8) of a beat.
"""

from .common import wire_header

__all__ = ["ETH_HEADER", "VLAN_TAG", "IPV4_HEADER", "IPV6_HEADER", "UDP_HEADER", "BTH_HEADER",
           "CN_TAG", "CNM_PDU", "PRIVATE_CNM_PDU"]

#: Ethernet II header, 14 bytes
ETH_HEADER = wire_header(("dst", 48), ("src", 48), ("ethertype", 16))
#: after ETH_HEADER with ethertype = TPID 0x8100: the TCI, then the inner ethertype (4 bytes)
VLAN_TAG = wire_header(("pcp", 3), ("dei", 1), ("vid", 12), ("ethertype", 16))
#: IPv4 header without options (RFC 791), 20 bytes
IPV4_HEADER = wire_header(
    ("version", 4), ("ihl", 4), ("dscp", 6), ("ecn", 2), ("total_length", 16), ("id", 16),
    ("flags", 3), ("frag_offset", 13), ("ttl", 8), ("protocol", 8), ("checksum", 16),
    ("src", 32), ("dst", 32))
#: IPv6 fixed header (RFC 8200), 40 bytes
IPV6_HEADER = wire_header(
    ("version", 4), ("dscp", 6), ("ecn", 2), ("flow_label", 20), ("payload_length", 16),
    ("next_header", 8), ("hop_limit", 8), ("src", 128), ("dst", 128))
#: UDP header (RFC 768), 8 bytes
UDP_HEADER = wire_header(("sport", 16), ("dport", 16), ("length", 16), ("checksum", 16))
#: InfiniBand Base Transport Header (IBTA, RoCEv2 annex), 12 bytes
BTH_HEADER = wire_header(
    ("opcode", 8), ("se", 1), ("migreq", 1), ("padcnt", 2), ("tver", 4), ("pkey", 16),
    ("fecn", 1), ("becn", 1), ("resv6", 6), ("dqpn", 24), ("ackreq", 1), ("resv7", 7),
    ("psn", 24))

#: after VLAN_TAG with ethertype = 0x22E9: the CN-TAG's flow ID (RPID), then the inner ethertype
CN_TAG = wire_header(("rpid", 16), ("ethertype", 16))                             # 4 bytes
#: the IEEE 802.1Qau CNM PDU header, 24 bytes; the sampled MSDU bytes follow
CNM_PDU = wire_header(
    ("version", 4), ("resv", 6), ("qntz_fb", 6), ("cpid", 64), ("q_off", 16), ("q_delta", 16),
    ("enc_prio", 3), ("enc_resv", 13), ("enc_dst", 48), ("msdu_len", 16))

#: The project's private CNM PDU (UDP payload of the L3QCN notification, 32 bytes): the 802.1Qau
#: CNM fields plus the congested flow's 5-tuple, because a routed network cannot address the
#: reaction point by MAC; then the sampled packet's first bytes.
PRIVATE_CNM_PDU = wire_header(
    ("version", 4), ("resv0", 4), ("resv1", 2), ("qntz_fb", 6), ("enc_prio", 3), ("resv2", 13),
    ("cpid", 64), ("q_off", 16), ("q_delta", 16), ("src_ip", 32), ("dst_ip", 32),
    ("sport", 16), ("dport", 16), ("protocol", 8), ("resv3", 8), ("msdu_len", 16))
