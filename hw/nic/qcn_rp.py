"""QCN reaction point (IEEE 802.1Qau rate limiter), one flow held in registers.

See ``docs/qcn.md`` ("Reaction point") for the algorithm and :class:`sim.models.qcn.QcnRpModel`
for the bit-exact golden model the RTL is verified against.
"""

from __future__ import annotations

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ..layouts import QcnRpEventKind, qcn_rp_event_layout, qcn_rp_state_layout
from ..lib.arith import at_most_one, umax, umin
from ..lib.csr import CsrBank
from ..lib.csr_port import csr_ports
from .qcn_rp_config import MDF_FRAC, STAGE_MAX, QcnRpConfig

__all__ = ["QcnRp"]


class QcnRp(wiring.Component):
    """One QCN rate limiter: cut on CNM, byte-counter and timer clocked recovery.

    Parameters
    ----------
    config : QcnRpConfig
        Widths, clock and LFSR (elaboration-time); rates, Gd, MinDecFac, F, byte and timer
        reloads and the guard are run-time registers with this configuration's reset values.

    Ports
    -----
    event : In(stream(qcn_rp_event_layout))
        ``CNM`` with its 6-bit ``fb``, or ``TX`` of ``bytes`` bytes.  ``ready`` is always 1:
        one event per clock.
    state : Out(qcn_rp_state_layout)
        The whole state register (CR, TR, BC, ByteStage, timer, TimeStage, flags).
    rate : Out(rate_width)
        The current rate CR, UQ.10 Mb/s, for the rate limiter.
    csr_w : In(stream(csr_write_layout)), csr_raddr : In(5), csr_rdata : Out(32)
        The register port (:meth:`QcnRpConfig.register_map`, the ID header).  Always ready; a
        write is applied at the edge that takes it and used from the next cycle (counters
        already running keep their values).

    Latency and throughput
    ----------------------
    One event per clock; the state after an event is visible one edge after its transfer.
    The timer runs every cycle once a CNM has been received.  At most one rate change per
    clock: CNM > byte cycle > timer (a timer expiry that meets a byte cycle fires on the next
    cycle).  The update is a single combinational step (multiply CR x fb, compare, average).
    """

    def __init__(self, config: QcnRpConfig):
        if not isinstance(config, QcnRpConfig):
            raise TypeError(f"QcnRp needs a QcnRpConfig, not {config!r}")
        self.config = config
        super().__init__({
            "event": In(stream.Signature(qcn_rp_event_layout(config))),
            "state": Out(qcn_rp_state_layout(config),
                         init={"cr": config.registers().line_rate,
                               "tr": config.registers().line_rate}),
            "rate": Out(config.rate_width),
            **csr_ports(config.register_map()),
        })

    def elaborate(self, platform):
        m = Module()
        cfg = self.config
        # run-time registers (declared once in QcnRpConfig.register_map)
        bank = CsrBank(cfg.register_map())
        reg = cfg.registers_from({r.name: bank[r.name] for r in bank.map.registers})
        D = cfg.draw_bits
        RW = cfg.rate_width
        F = reg.threshold

        st = self.state                  # the state register is the output port itself
        lfsr = Signal(cfg.lfsr.width, init=cfg.lfsr.seed)
        m.d.comb += [self.rate.eq(st.cr), self.event.ready.eq(1)]

        ev = self.event.payload
        valid = self.event.valid
        is_cnm = valid & (ev.kind == QcnRpEventKind.CNM)
        is_tx = valid & (ev.kind == QcnRpEventKind.TX)
        byte_cycle = is_tx & st.active & (ev.bytes >= st.bc)
        # (t_cnt <= 1: a period written 0 expires as 1 does, as in the model)
        timer_cycle = st.active & (st.t_cnt[1:] == 0) & ~is_cnm & ~byte_cycle

        lfsr_next = cfg.lfsr.next_state(lfsr, D)
        r = lfsr_next[:D]
        reload_event = is_cnm | byte_cycle | timer_cycle
        with m.If(reload_event):
            m.d.sync += lfsr.eq(lfsr_next)

        def reload(lo, span, half):
            return Mux(half, lo[1] + ((span[1] * r) >> D), lo[0] + ((span[0] * r) >> D))

        # ---- stages after this cycle's byte / timer cycle --------------------------------------
        b_stage = Mux(byte_cycle & (st.b_stage != STAGE_MAX), st.b_stage + 1, st.b_stage)[:8]
        t_stage = Mux(timer_cycle & (st.t_stage != STAGE_MAX), st.t_stage + 1, st.t_stage)[:8]

        # ---- increase ---------------------------------------------------------------------------
        guard = st.fresh & reg.tr_guard & (st.tr > st.cr * 10)
        tr0 = Mux(guard, st.tr >> 3, st.tr)
        both_hi = (b_stage > F) & (t_stage > F)
        any_hi = (b_stage > F) | (t_stage > F)
        i = (umin(b_stage, t_stage) - F)[:8]
        step = Mux(both_hi, i * reg.hai_rate, Mux(any_hi, reg.ai_rate, 0))
        tr_inc = umin(tr0 + step, reg.line_rate)[:RW]
        cr_inc = umin((st.cr + tr_inc) >> 1, reg.line_rate)[:RW]

        # ---- cut --------------------------------------------------------------------------------
        cut = st.cr - ((st.cr * ev.fb) >> reg.gd_shift)
        # (a factor above 1.0 reads as 1.0: the floor never exceeds Cr)
        floor = umax((st.cr * at_most_one(reg.min_dec_fac, MDF_FRAC)) >> MDF_FRAC, reg.min_rate)
        cr_cut = umax(cut, floor)[:RW]

        with m.If(is_cnm):
            m.d.sync += [
                st.tr.eq(st.cr), st.cr.eq(cr_cut), st.b_stage.eq(0), st.t_stage.eq(0),
                st.bc.eq(reload(reg.byte_lo, reg.byte_span, 0)),
                st.t_cnt.eq(reload(reg.time_lo, reg.time_span, 0)),
                st.active.eq(1), st.fresh.eq(1),
            ]
        with m.Elif(byte_cycle | timer_cycle):
            m.d.sync += [st.tr.eq(tr_inc), st.cr.eq(cr_inc), st.fresh.eq(0),
                         st.b_stage.eq(b_stage), st.t_stage.eq(t_stage)]
            with m.If(byte_cycle):
                m.d.sync += st.bc.eq(reload(reg.byte_lo, reg.byte_span, b_stage >= F))
                with m.If(st.t_cnt > 1):
                    m.d.sync += st.t_cnt.eq(st.t_cnt - 1)
            with m.Else():
                m.d.sync += st.t_cnt.eq(reload(reg.time_lo, reg.time_span, t_stage >= F))
                with m.If(is_tx):
                    m.d.sync += st.bc.eq(st.bc - ev.bytes)
        with m.Elif(st.active):
            m.d.sync += st.t_cnt.eq(st.t_cnt - 1)     # t_cnt > 1 here (else a timer cycle)
            with m.If(is_tx):
                m.d.sync += st.bc.eq(st.bc - ev.bytes)
        bank.build(m, self.csr_w, self.csr_raddr, self.csr_rdata)
        self.csr_bank = bank        # (the register storage, for formal harnesses)
        return m
