"""Per-flow rate limiter: token bucket with debt, pacing each flow at its rate (``docs/dcqcn.md``,
"Rate limiter"; golden model :mod:`sim.models.rate_limiter`)."""

from __future__ import annotations

from amaranth.hdl import Module, Mux, Signal, signed
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ..layouts import rl_rate_layout, rl_send_layout
from ..lib.csr import CsrBank
from ..lib.csr_port import csr_ports
from .rate_limiter_config import CONV_FRAC, CREDIT_FRAC, RateLimiterConfig

__all__ = ["RateLimiter"]


class RateLimiter(wiring.Component):
    """Pacing of ``flows`` flows held in registers.

    Ports
    -----
    rate : In(stream(rl_rate_layout))
        A flow's new rate (UQ.10 Mb/s, e.g. the reaction point's ``rc``); clamped to
        [min rate, line rate]; used from the flow's next packet.  Always ready.
    send : In(stream(rl_send_layout))
        The scheduler sent a packet of ``bytes`` bytes for ``flow``.  Always ready.
    eligible : Out(flows)
        Bit f: flow f may send now (its credit is >= 0).
    csr_w : In(stream(csr_write_layout)), csr_raddr : In(5), csr_rdata : Out(32)
        The register port (:meth:`RateLimiterConfig.register_map`: MIN_RATE, MAX_RATE, BURST,
        the ID header).  Always ready; a write is applied at the edge that takes it (the
        clamp applies to the rate writes from the next cycle on; rates already latched are
        kept; a lower BURST caps the credits from the next cycle on).

    Latency and throughput
    ----------------------
    One send and one rate write per clock.  A packet of L bytes sent at cycle t with no credit
    left clears ``eligible`` until cycle ``t + ceil(L * 2**24 / inc)`` (the pacing
    rule ``now + bytes / Rc``, rounded up to a whole cycle).
    """

    def __init__(self, config: RateLimiterConfig):
        if not isinstance(config, RateLimiterConfig):
            raise TypeError(f"RateLimiter needs a RateLimiterConfig, not {config!r}")
        self.config = config
        super().__init__({
            "rate": In(stream.Signature(rl_rate_layout(config))),
            "send": In(stream.Signature(rl_send_layout(config))),
            "eligible": Out(config.flows),
            **csr_ports(config.register_map()),
        })

    def elaborate(self, platform):
        m = Module()
        cfg = self.config
        CW = cfg.credit_width
        floor = -(1 << (CW - 1))
        # ---- run-time registers (declared once in RateLimiterConfig.register_map) -----------
        bank = CsrBank(cfg.register_map())
        min_rate, max_rate = bank["MIN_RATE"], bank["MAX_RATE"]
        cap = bank["BURST"] << CREDIT_FRAC       # (an expression: no unused wire)

        # ---- state ------------------------------------------------------------------------------
        rate = [Signal(cfg.rate_width, name=f"rate{i}", init=cfg.max_rate)
                for i in range(cfg.flows)]
        inc = [Signal(cfg.inc_width, name=f"inc{i}", init=cfg.inc_for(cfg.max_rate))
               for i in range(cfg.flows)]
        credit = [Signal(signed(CW), name=f"credit{i}") for i in range(cfg.flows)]

        # ---- handshake -------------------------------------------------------------------------
        m.d.comb += [self.rate.ready.eq(1), self.send.ready.eq(1)]
        send_ok = self.send.valid & (self.send.payload.flow < cfg.flows)
        rate_ok = self.rate.valid & (self.rate.payload.flow < cfg.flows)

        # ---- the sent flow's rate -> credit per cycle (one shared constant multiply) -----------
        sel_rate = Signal(cfg.rate_width)
        for i in range(cfg.flows):
            with m.If(self.send.payload.flow == i):
                m.d.comb += sel_rate.eq(rate[i])
        new_inc = Signal(cfg.inc_width)
        with m.If(send_ok):     # (a process, not an alias: the product is computed once)
            m.d.comb += new_inc.eq((sel_rate * cfg.conv) >> CONV_FRAC)

        new_rate = self.rate.payload.rate
        clamped = Mux(new_rate < min_rate, min_rate, Mux(new_rate > max_rate, max_rate, new_rate))

        for i in range(cfg.flows):
            m.d.comb += self.eligible[i].eq(credit[i] >= 0)
            send_i = send_ok & (self.send.payload.flow == i)
            paid = credit[i] - (self.send.payload.bytes << CREDIT_FRAC)
            base = Signal(signed(CW), name=f"base{i}")
            with m.If(send_i):
                m.d.comb += base.eq(Mux(paid < floor, floor, paid))
            with m.Else():
                m.d.comb += base.eq(credit[i])
            inc_now = Signal(cfg.inc_width, name=f"inc_now{i}")
            m.d.comb += inc_now.eq(Mux(send_i, new_inc, inc[i]))
            earned = base + inc_now
            m.d.sync += credit[i].eq(Mux(earned <= cap, earned, Mux(base > cap, base, cap)))
            with m.If(send_i):
                m.d.sync += inc[i].eq(new_inc)
            with m.If(rate_ok & (self.rate.payload.flow == i)):
                m.d.sync += rate[i].eq(clamped)
        bank.build(m, self.csr_w, self.csr_raddr, self.csr_rdata)
        return m
