"""Configuration of the LDCP transport: the sender (fast start, LSN window, go-back-N, RTO) and
the receiver (expected LSN, per-packet or delayed ACKs, NAK).

One frozen, validated :class:`LdcpTransportConfig` in user units configures the RTL
(:mod:`hw.nic.ldcp_transport`), the golden models (:mod:`sim.models.ldcp_transport`), the Verilog
export and the tests.  It contains the window engine's :class:`LdcpWindowConfig` (PAWA
parameters, ``m``, MTU, base RTT, clock), so the transport and its window engine can never
disagree.  The conversion to hardware units happens once, in
:meth:`LdcpTransportConfig.registers`.

Formats (``docs/ldcp-transport.md``):

``lsn``
    Byte sequence number, ``lsn_width`` bits (8..48), counted from 0 at the first byte of the
    message.  A message holds at most ``2**lsn_width - 1`` bytes; longer messages are rejected
    (:class:`hw.params.ConfigError` from the models; the RTL's length field cannot hold them),
    so the LSN never wraps.
``iw``
    Initial window in packets, 16 bits (1..65535).
``cw_bdp``
    Window loaded at the second fast-start exit, UQ16.16 packets (the BDP).
``rto``
    Retransmission timeout in cycles, 32 bits.
``ack_delay``
    Receiver's delayed-ACK flush time in cycles, 24 bits.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field

from ..lib.csr import Register, RegisterMap
from ..params import (
    BlockConfig,
    ConfigError,
    bits_for,
    check_int,
    check_real,
    check_time_us,
    us_to_cycles,
)
from .ldcp_window_config import MTU_WIDTH, ONE, LdcpWindowConfig

__all__ = ["LdcpTransportConfig", "LdcpTransportRegisters", "LdcpTransportReg", "IW_WIDTH",
           "RTO_WIDTH", "ACK_DELAY_WIDTH", "SETTLE_CYCLES", "TX_CSR_ADDR_WIDTH"]

#: Width of the IW register and of the fast-start packet counters.
IW_WIDTH = 16
#: Width of the retransmission-timeout register and counter (cycles).
RTO_WIDTH = 32
#: Width of the receiver's delayed-ACK timer (cycles).
ACK_DELAY_WIDTH = 24
#: Cycles from the edge at which the window engine takes a window load to the first cycle at
#: which its send gate shows the loaded window (apply, product, ceiling: three edges).  The
#: sender releases nothing in the stable stage during them.
SETTLE_CYCLES = 3
#: word address width of the sender's register port: registers at 0..2, the identification
#: header (hw/lib/csr.py) at 0x10..0x13
TX_CSR_ADDR_WIDTH = 5
#: block type in the sender's header ID register
BLOCK_TYPE = "LDTX"


class LdcpTransportReg(enum.IntEnum):
    """Register map of the sender (word addresses, 32-bit data).  A write is accepted only while
    no message is active (between flows) and applies from the next message on.  Raw hardware
    values; only the reset values are validated by :class:`LdcpTransportConfig`."""
    IW = 0      #: initial window, packets (16 bits); IW_BYTES = IW * MTU is derived on write
    CW_BDP = 1  #: window loaded at the second fast-start exit, UQ16.16 (the BDP)
    RTO = 2     #: retransmission timeout, cycles (32 bits), 0 means 2**32


_LINE_MIN, _LINE_MAX = 0.1, 1600.0


@dataclass(frozen=True)
class LdcpTransportRegisters:
    """Hardware values derived from a :class:`LdcpTransportConfig`."""
    mtu: int          # bytes
    iw: int           # packets
    iw_bytes: int     # iw * mtu
    cw_bdp: int       # UQ16.16
    rto: int          # cycles
    m: int            # delayed-ACK limit, packets
    ack_delay: int    # cycles


@dataclass(frozen=True)
class LdcpTransportConfig(BlockConfig):
    """LDCP transport (draft-dai-tsvwg-pfc-free-congestion-control-00 §2.3 and §3).

    ``window``
        The window engine's configuration (alpha, beta, gamma, ``m``, cw_max, base RTT, clock,
        MTU).  ``m`` is also the receiver's delayed-ACK limit (``m = 1``: one ACK per packet).
    ``line_rate_gbps``
        Line rate, 0.1..1600 Gb/s; with the RTT and the MTU it gives the BDP.
    ``iw``
        Initial window in packets, 1..65535; ``None`` (default) is the BDP.
    ``bdp``
        The window after the second fast-start exit (all IW packets acknowledged), packets,
        1..``cw_max``; ``None`` (default) is ``ceil(line_rate * rtt / (8 * mtu))`` capped at
        ``cw_max``.
    ``rto_us``
        Retransmission timeout, restarted on every cumulative-ACK progress; ``None`` (default)
        is 8 base RTTs.  1..2**32 - 1 cycles.
    ``ack_delay_us``
        Receiver: the longest an unmarked in-order packet waits for a delayed ACK (the flush
        timer; only with ``m > 1``); ``None`` (default) is a quarter of the base RTT.
        1..2**24 - 1 cycles.
    ``lsn_width``
        Width of the LSN and of the message length, 8..48 bits (default 32: messages up to
        4 GiB - 1).
    """

    window: LdcpWindowConfig = field(default_factory=lambda: LdcpWindowConfig(m=1))
    line_rate_gbps: float = 100.0
    iw: int | None = None
    bdp: float | None = None
    rto_us: float | None = None
    ack_delay_us: float | None = None
    lsn_width: int = 32

    def __post_init__(self):
        if not isinstance(self.window, LdcpWindowConfig):
            raise ConfigError(self, "window", self.window, "a LdcpWindowConfig")
        check_real(self, "line_rate_gbps", self.line_rate_gbps, _LINE_MIN, _LINE_MAX)
        if self.iw is not None:
            check_int(self, "iw", self.iw, 1, (1 << IW_WIDTH) - 1)
        if self.bdp is not None:
            check_real(self, "bdp", self.bdp, 1.0, self.window.cw_max)
        check_int(self, "lsn_width", self.lsn_width, 8, 48)
        w = self.window
        # None: the default derived from the RTT (checked all the same: a long RTT can make it
        # overflow its counter)
        check_time_us(self, "rto_us", self.rto_us_eff, w.clk_hz, 1, (1 << 32) - 1)
        check_time_us(self, "ack_delay_us", self.ack_delay_us_eff, w.clk_hz, 1,
                      (1 << ACK_DELAY_WIDTH) - 1)
        if self.iw_eff * w.mtu > self.max_message:
            raise ConfigError(self, "iw", self.iw,
                              f"iw * mtu <= 2**lsn_width - 1 (= {self.max_message})")


    # -- derived values -------------------------------------------------------------------
    @property
    def bdp_packets(self) -> int:
        """``ceil(line_rate * rtt / (8 * mtu))``, at least 1 and at most ``cw_max``."""
        w = self.window
        bdp = math.ceil(self.line_rate_gbps * 1e9 * w.rtt_us * 1e-6 / (8 * w.mtu) - 1e-9)
        return max(1, min(bdp, int(w.cw_max), (1 << IW_WIDTH) - 1))

    @property
    def iw_eff(self) -> int:
        return self.bdp_packets if self.iw is None else self.iw

    @property
    def rto_us_eff(self) -> float:
        return 8 * self.window.rtt_us if self.rto_us is None else self.rto_us

    @property
    def ack_delay_us_eff(self) -> float:
        return self.window.rtt_us / 4 if self.ack_delay_us is None else self.ack_delay_us

    @property
    def max_message(self) -> int:
        """Longest message in bytes (``2**lsn_width - 1``)."""
        return (1 << self.lsn_width) - 1

    @property
    def len_width(self) -> int:
        """Width of a packet's length field (holds the largest MTU)."""
        return MTU_WIDTH

    @property
    def n_width(self) -> int:
        """Width of an ACK's packet count (holds ``m``)."""
        return bits_for(self.window.m)

    # -- the single user-unit -> hardware conversion -------------------------------------------
    def register_map(self, name: str = "ldcp_tx") -> RegisterMap:
        """The sender's register map (addresses of :class:`LdcpTransportReg`) with this
        configuration's reset values: the one declaration the RTL, the model, the docs and
        SystemRDL use."""
        r = self.registers()
        regs = (
            Register.single("IW", IW_WIDTH, r.iw, desc="initial window, packets",
                            addr=LdcpTransportReg.IW),
            Register.single("CW_BDP", 32, r.cw_bdp, desc="window loaded at the second "
                            "fast-start exit, UQ16.16 packets", addr=LdcpTransportReg.CW_BDP),
            Register.single("RTO", RTO_WIDTH, r.rto % (1 << RTO_WIDTH),
                            desc="retransmission timeout, cycles (0: 2**32)",
                            addr=LdcpTransportReg.RTO),
        )
        return RegisterMap(name, regs, BLOCK_TYPE, version=(1, 0),
                           desc="LDCP sender (one flow); writes apply between messages")

    def registers(self) -> LdcpTransportRegisters:
        w = self.window
        bdp = self.bdp_packets if self.bdp is None else self.bdp
        iw = self.iw_eff
        return LdcpTransportRegisters(
            mtu=w.mtu, iw=iw, iw_bytes=iw * w.mtu,
            cw_bdp=min(round(bdp * ONE), int(w.cw_max * ONE)),
            rto=us_to_cycles(self.rto_us_eff, w.clk_hz), m=w.m,
            ack_delay=us_to_cycles(self.ack_delay_us_eff, w.clk_hz))

