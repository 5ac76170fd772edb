"""DCQCN notification point: per-QP CNP pacing (the paper's rule or the periodic check).

See ``docs/dcqcn.md`` ("Notification point") and :mod:`sim.models.dcqcn_np` (golden model).
"""

from __future__ import annotations

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ..layouts import np_cnp_layout, np_event_layout
from ..lib.csr import CsrBank
from ..lib.csr_port import csr_ports
from .dcqcn_np_config import DcqcnNpConfig

__all__ = ["DcqcnNp"]


class DcqcnNp(wiring.Component):
    """Per-flow CNP pacing for ``flows`` QPs held in registers.

    Ports
    -----
    event : In(stream(np_event_layout))
        Received data packets: flow number and whether the IP ECN field was CE.  Always ready
        (one packet per clock); flows >= ``flows`` and packets without CE are ignored.
    cnp : Out(stream(np_cnp_layout))
        CNPs to send (to the CNP generator, through the flow's address table), lowest flow
        number first when several are due.  A CNP counts as sent when the sink takes it.
    csr_w : In(stream(csr_write_layout)), csr_raddr : In(5), csr_rdata : Out(32)
        The register port (:meth:`DcqcnNpConfig.register_map`: N in cycles, the ID header).
        Always ready; a write is applied at the edge that takes it: a flow's window already
        running keeps counting, the new N is used from its next reload (periodic: from the
        end of the running period).

    Latency and throughput
    ----------------------
    A marked packet that triggers a CNP at once is offered on ``cnp`` the cycle after it is
    accepted; one packet per clock in, one CNP per clock out.  Timers are per-flow countdowns
    (paper rule) or one global countdown (periodic rule), exact to the cycle.
    """

    def __init__(self, config: DcqcnNpConfig):
        if not isinstance(config, DcqcnNpConfig):
            raise TypeError(f"DcqcnNp needs a DcqcnNpConfig, not {config!r}")
        self.config = config
        super().__init__({
            "event": In(stream.Signature(np_event_layout(config))),
            "cnp": Out(stream.Signature(np_cnp_layout(config))),
            **csr_ports(config.register_map()),
        })

    def elaborate(self, platform):
        m = Module()
        cfg = self.config
        F = cfg.flows
        paper = cfg.rule == "paper"
        # ---- run-time register: N (declared once in DcqcnNpConfig.register_map) -------------
        bank = CsrBank(cfg.register_map())
        N = bank["MIN_TIME_BETWEEN_CNPS"]
        hold_reload = Mux(N == 0, 0, N - 1)            # (an expression: no unused wire)

        # ---- state --------------------------------------------------------------------------
        due = Signal(F)                        # a CNP is due for the flow (waiting for the sink)
        if paper:
            hold = [Signal(cfg.timer_width, name=f"hold{i}") for i in range(F)]
            pending = Signal(F)                # marked inside the window
        else:
            marked = Signal(F)
            tick = Signal(cfg.timer_width, init=cfg.n_cycles)

        # ---- handshake and output: lowest due flow ----------------------------------------------
        m.d.comb += self.event.ready.eq(1)
        m.d.comb += self.cnp.valid.eq(due != 0)
        for i in reversed(range(F)):
            with m.If(due[i]):
                m.d.comb += self.cnp.payload.flow.eq(i)
        sent = self.cnp.valid & self.cnp.ready
        ce = self.event.valid & self.event.payload.ce & (self.event.payload.flow < F)
        ev_flow = self.event.payload.flow

        # ---- per-flow update: timers, then the send, then the event ---------------------------
        for i in range(F):
            send_i = sent & (self.cnp.payload.flow == i)
            ce_i = ce & (ev_flow == i)
            if paper:
                # after the timer and the send (the event is applied on top, below)
                expire_due = (hold[i] == 1) & pending[i]
                due_mid = ~send_i & (due[i] | expire_due)
                hold_mid = Signal(cfg.timer_width, name=f"hold{i}_mid")
                with m.If(send_i):
                    m.d.comb += hold_mid.eq(hold_reload)
                with m.Elif(hold[i] != 0):
                    m.d.comb += hold_mid.eq(hold[i] - 1)
                pend_mid = pending[i] & ~expire_due & ~send_i
                take = ce_i & ~due_mid
                m.d.sync += [
                    hold[i].eq(hold_mid),
                    due[i].eq(due_mid | (take & (hold_mid == 0))),
                    pending[i].eq(pend_mid | (take & (hold_mid != 0))),
                ]
            else:
                check = (tick == 1) & marked[i]
                m.d.sync += [
                    due[i].eq((due[i] & ~send_i) | check),
                    marked[i].eq((marked[i] & ~check) | ce_i),
                ]
        if not paper:
            with m.If(tick == 1):
                m.d.sync += tick.eq(N)
            with m.Else():
                m.d.sync += tick.eq(tick - 1)
        bank.build(m, self.csr_w, self.csr_raddr, self.csr_rdata)
        return m
