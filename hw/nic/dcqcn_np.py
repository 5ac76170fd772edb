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
        if paper:
            # the window's reload, N - 1 (0 for N = 0), and whether it is 0 (N <= 1), kept as
            # registers beside N and loaded from the write that sets N (so they always equal
            # the expressions of N): no carry chain or compare between N and the counters
            n0 = cfg.n_cycles
            hold_reload = Signal(cfg.timer_width, init=max(n0 - 1, 0), name="hold_reload")
            reload_zero = Signal(init=n0 <= 1, name="hold_reload_zero")

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
        ce = self.event.valid & self.event.payload.ce & (self.event.payload.flow < F)
        ev_flow = self.event.payload.flow

        # ---- per-flow update: timers, then the send, then the event ---------------------------
        for i in range(F):
            # the flow sent: it is the lowest due one (the output's priority order, without the
            # encoded flow number: one LUT level from the due bits)
            send_i = self.cnp.ready & due[i] & (due[:i] == 0 if i else 1)
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
                # hold_mid == 0, from the operands of its subtractions (a counter at 0 stays
                # there, one at 1 reaches it), so that the flags wait for no carry chain
                mid_zero = Mux(send_i, reload_zero, hold[i][1:] == 0)
                m.d.sync += [
                    hold[i].eq(hold_mid),
                    due[i].eq(due_mid | (take & mid_zero)),
                    pending[i].eq(pend_mid | (take & ~mid_zero)),
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
        if paper:
            reg = cfg.register_map()["MIN_TIME_BETWEEN_CNPS"]
            n_new = bank.wdata[:reg.width] & reg.write_mask      # N's value after the write
            with m.If(bank.wstb["MIN_TIME_BETWEEN_CNPS"]):
                m.d.sync += [hold_reload.eq(Mux(n_new == 0, 0, n_new - 1)),
                             reload_zero.eq(n_new[1:] == 0)]
        return m
