"""Float reference of the DCQCN reaction point, written from the reference descriptions.

Written straight from the published descriptions (the DCQCN paper's pseudo-code, the ns3-rdma
``rpr_*`` state
machine and ``AdjustRates``, the HPCC ns-3 "mlx" ``UpdateAlphaMlx`` / ``CheckRateDecreaseMlx`` /
``RateIncEventTimerMlx`` functions, the ConnectX knobs) in floating point, with **ideal timers**:
each timer is an absolute deadline (cycle number), not a counter.  It shares no code with the
bit-exact model (:mod:`sim.models.dcqcn`); it uses the engine's tie rules for events that fall on
the same cycle (``docs/dcqcn.md``, "Same-cycle order"), so that the two can be compared event by
event: integers (stages, phases, the cycle of every cut) must agree exactly, rates and alpha
within the bound derived in the docs.
"""

from __future__ import annotations

import math


class RpReference:
    """One flow. ``run(events)`` takes ``(cycle, event)`` pairs, event ``"cnp"`` or an int
    (bytes sent), in increasing cycle order."""

    def __init__(self, cfg):
        self.cfg = c = cfg
        per_us = c.clk_hz / 1e6
        self.T = round(c.rpg_time_reset * per_us)
        self.K = round(c.dce_tcp_rtt * per_us)
        self.P = round(c.rate_reduce_monitor_period * per_us)
        self.B = c.rpg_byte_reset
        self.F = c.rpg_threshold
        self.max_rate = float(c.rpg_max_rate or c.line_rate_mbps)
        self.min_rate = float(c.rpg_min_rate)
        self.g = (1024 - c.dce_tcp_g) / 1024
        self.rc = self.rt = self.max_rate
        self.alpha = c.initial_alpha_value / 1024
        self.t_stage = self.b_stage = 0
        self.phase = "FR"
        self.byte_left = self.B
        self.t_at = self.a_at = self.d_at = None   # deadlines (absolute cycles)
        self.hold_until = -math.inf                # ConnectX: no new cut before this cycle
        self.started = False
        self.cnp_for_alpha = self.cnp_for_cut = False
        self.cut_cycles: list[int] = []
        self.now = 0

    # -- the reference formulas ------------------------------------------------------------
    def _decrease(self, alpha):
        c = self.cfg
        cut = self.rc * alpha / 2 ** (c.rpg_gd - 10)
        new = self.rc - cut
        return max(new, self.rc * c.rpg_min_dec_fac / 100, self.min_rate)

    def _clamp_target(self):
        rule = self.cfg.clamp_rule
        return (rule == "always" or (rule == "byte_stage" and self.b_stage != 0)
                or (rule == "time_stage" and self.t_stage != 0)
                or (rule == "any_stage" and (self.b_stage or self.t_stage)))

    def _cut(self, alpha):
        """Rate decrease: Rt = Rc (per the clamp rule), Rc = Rc (1 - alpha/2), floors."""
        clamp = self._clamp_target()
        if clamp:
            self.rt = self.rc
        self.rc = self._decrease(alpha)
        self.t_stage = self.b_stage = 0
        self.phase = "FR"
        self.t_at = self.now + self.T
        if self.B and (clamp or not self.cfg.bc_reload_on_clamp_only):
            self.byte_left = self.B
        self.cut_cycles.append(self.now)

    def _increase(self, by_timer, by_bytes):
        c = self.cfg
        before = self.phase
        self.t_stage = min(self.t_stage + by_timer, 255)
        self.b_stage = min(self.b_stage + by_bytes, 255)
        F = self.F
        stages = (self.t_stage, self.b_stage) if self.B else (self.t_stage,)
        if c.increase_rule == "ns3":
            # rpr_fast_* / rpr_active_* / rpr_hyper_* dispatch on the current rpStage
            this = self.t_stage if by_timer else self.b_stage
            sel = "AI" if (self.b_stage < F or self.t_stage < F) else "HAI"
            if before == "FR":
                phase = "FR" if this < F else sel
            elif before == "AI":
                phase = sel if by_timer else "AI"
            else:
                phase = "HAI"
        elif c.increase_rule == "hpcc":
            s = self.t_stage - 1          # mlx compares the stage before counting it
            phase = "FR" if s < F else "AI" if s == F else "HAI"
        else:
            phase = ("FR" if max(stages) < F else "HAI" if min(stages) > F else "AI")
        i = min(stages) - F + (1 if c.hai_step == "linear1" else 0)
        step = {"FR": 0.0, "AI": c.rpg_ai_rate,
                "HAI": c.rpg_hai_rate * (1 if c.hai_step == "const" else max(i, 0))}[phase]
        if c.rt_guard and (self.t_stage == 1 or self.b_stage == 1) and self.rt > 10 * self.rc:
            self.rt = self.rt / 8
        else:
            self.rt = min(self.rt + step, self.max_rate)
        self.rc = min(max((self.rt + self.rc) / 2, self.min_rate), self.max_rate)
        self.phase = phase
        hyper = c.halve_in_hyper and before == "HAI"
        if by_timer:
            self.t_at = self.now + (self.T // 2 if hyper else self.T)
        return hyper

    # -- one cycle with its timers and event ----------------------------------------------------
    def _cycle(self, now, ev):
        c = self.cfg
        self.now = now
        cnp = ev == "cnp"
        first = cnp and not self.started
        a_due, t_due, d_due = self.a_at == now, self.t_at == now, self.d_at == now
        if a_due:
            self.a_at = None
        if t_due:
            self.t_at = None
        if d_due:
            self.d_at = None

        if c.cut_mode == "every_cnp":
            cut = cnp
        elif c.cut_mode == "holdoff":
            cut = cnp and now >= self.hold_until
        else:
            cut = d_due and self.cnp_for_cut
        set_first = first and c.rate_to_set_on_first_cnp != 0
        acts = cut or set_first

        # alpha
        if c.alpha_mode == "on_cnp":
            old = self.alpha
            if cnp:
                self.alpha = (1 - self.g) * self.alpha + self.g
                self.a_at = now + self.K
            elif a_due:
                self.alpha = (1 - self.g) * self.alpha
                self.a_at = now + self.K
            alpha_cut = self.alpha if c.alpha_before_cut else old
        else:
            if a_due:
                self.alpha = (1 - self.g) * self.alpha + self.g * self.cnp_for_alpha
                self.cnp_for_alpha = False
                self.a_at = now + self.K
            alpha_cut = self.alpha

        # byte counter and increase
        by_bytes = False
        if isinstance(ev, int) and self.started and self.B:
            self.byte_left -= ev
            if self.byte_left <= 0:
                by_bytes = True
                hyper = c.halve_in_hyper and self.phase == "HAI"
                self.byte_left = self.B // 2 if hyper else self.B
        if (t_due or by_bytes) and not acts:
            self._increase(t_due, by_bytes)

        if c.cut_mode == "periodic_check" and d_due:
            self.d_at = now + self.P
        if acts:
            if set_first:
                self.rc = self.rt = float(c.rate_to_set_on_first_cnp)
                self.t_stage = self.b_stage = 0
                self.phase = "FR"
                self.t_at = now + self.T
                if self.B:
                    self.byte_left = self.B
            else:
                self._cut(alpha_cut)
            if c.cut_mode == "holdoff":
                self.hold_until = now + self.P
            if c.cut_mode == "periodic_check":
                self.cnp_for_cut = False

        if cnp and c.alpha_mode == "periodic":
            if first:
                self.a_at, self.cnp_for_alpha = now + self.K, False
            else:
                self.cnp_for_alpha = True
        if cnp and c.cut_mode == "periodic_check":
            self.cnp_for_cut = True
            if first:
                self.d_at = now + self.P + 1
        if cnp:
            self.started = True

    def advance_to(self, cycle):
        """Run every timer expiry strictly before ``cycle``."""
        while True:
            due = [t for t in (self.a_at, self.t_at, self.d_at) if t is not None and t < cycle]
            if not due:
                return
            self._cycle(min(due), None)

    def event(self, cycle, ev):
        self.advance_to(cycle)
        self._cycle(cycle, ev)
