"""Mutation testing of the RTL in ``hw/``: does the test suite notice a one-line bug?

``python -m tools.mutate [--block NAME ...] [--max N]`` (``make mutate``) parses the Python
source of each block with :mod:`ast`, makes one-line mutants and runs the block's fast tests
against each, one at a time, in a private copy of the working tree (every tracked and every
untracked, not ignored file, as ``git ls-files -co --exclude-standard`` lists them, copied to
``build/mutate/tree``; the working tree itself is never written).  The mutants are made from
the working-tree source and applied to that copy, so uncommitted edits and uncommitted tests
are what is mutated and run.  Mutants:

* ``cmp``: a comparison's boundary moved (``<`` <-> ``<=``, ``>`` <-> ``>=``) or inverted
  (``==`` <-> ``!=``);
* ``const``: an integer constant that is an operand of a comparison or of ``+``/``-`` made
  one larger and one smaller;
* ``sat``: a saturation dropped: ``umin(a, b)``/``umax(a, b)``/``min``/``max`` -> ``a``,
  ``saturating_inc(x)`` -> ``x + 1``, a clamp ``Mux(a <op> b, bound, x)`` -> ``x``.

A mutant is *killed* when a test fails (or elaboration raises, or the run times out) and
*survives* when all pass.  The report (``build/mutate/report.md``) lists the kill rate per
block and every survivor with its line; survivors known to be equivalent (the mutated code
computes the same function) are listed in :data:`EQUIVALENT` with the reason and counted
apart.  The target is no surviving non-equivalent mutant.
"""

from __future__ import annotations

import argparse
import ast
import os
import random
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "build" / "mutate"

#: block -> (its RTL sources, its fast Amaranth-simulation tests)
BLOCKS: dict[str, tuple[list[str], list[str]]] = {
    "cnp_gen": (["hw/nic/cnp_gen.py", "hw/lib/checksum.py"], ["tests/test_cnp.py"]),
    "rate_limiter": (["hw/nic/rate_limiter.py"],
                     ["tests/test_rate_limiter.py", "tests/test_rate_limiter_edges.py"]),
    "dcqcn_rp": (["hw/nic/dcqcn_rp.py"],
                 ["tests/test_dcqcn_rp_sim.py",
                  "tests/test_runtime_registers.py::test_dcqcn_rp_random_register_settings",
                  "tests/test_runtime_registers.py::test_dcqcn_rp_periodic_cut_with_the_cnp_alpha",
                  "tests/test_runtime_registers.py::test_dcqcn_rp_hyper_increase_at_the_top_stage",
                  "tests/test_runtime_registers.py::test_dcqcn_rp_holdoff_edge",
                  "tests/test_runtime_registers.py::test_dcqcn_rp_ns3_select_with_both_stages_at_f",
                  "tests/test_runtime_registers.py::test_dcqcn_rp_hyper_product_at_its_full_width",
                  # (the update's pipelined form, the engine's, is built in this file too)
                  "tests/test_dcqcn_pipe.py"]),
    "dcqcn_np": (["hw/nic/dcqcn_np.py"], ["tests/test_dcqcn_np.py"]),
    "qcn_rp": (["hw/nic/qcn_rp.py"],
               ["tests/test_qcn_rp.py",
                "tests/test_runtime_registers.py::test_qcn_rp_random_register_settings"]),
    "ldcp_window": (["hw/nic/ldcp_window.py"],
                    ["tests/test_ldcp_window_rtl.py", "tests/test_ldcp_window_boundaries.py"]),
    "ldcp_transport": (["hw/nic/ldcp_transport.py"], ["tests/test_ldcp_transport_rtl.py"]),
    "marker": (["hw/switch/marker.py"], ["tests/test_marker_rtl.py",
                                         "tests/test_marker_boundaries.py"]),
    "hash_table": (["hw/switch/hash_table.py"], ["tests/test_hash_table.py"]),
    "qcn_cp": (["hw/switch/qcn_cp.py"],
               ["tests/test_qcn_cp.py", "tests/test_qcn_cp_boundaries.py"]),
    "cnm_gen": (["hw/switch/cnm_gen.py"], ["tests/test_cnm.py"]),
    "l3qcn": (["hw/switch/l3qcn.py"], ["tests/test_l3qcn.py", "tests/test_l3qcn_boundaries.py"]),
    "timer_wheel": (["hw/nic/timer_wheel.py"], ["tests/test_timer_wheel.py"]),
    "flow_engine": (["hw/nic/flow_engine.py", "hw/nic/flow_datapath.py"],
                    ["tests/test_flow_engine.py"]),
    "dcqcn_engine": (["hw/nic/dcqcn_engine.py"],
                     ["tests/test_dcqcn_engine.py", "tests/test_flow_engine_algos.py"]),
    "qcn_engine": (["hw/nic/qcn_engine.py"],
                   ["tests/test_qcn_engine.py", "tests/test_flow_engine_algos.py"]),
    # the register forwarding and the counters in the Amaranth simulator, the frame path on
    # Verilator (a build per mutant: about 20 s)
    "cnp_notify": (["hw/nic/cnp_notify.py"],
                   ["tests/test_cnp_notify.py",
                    "tests/test_block_registers.py::test_read_back[cnp_notify]",
                    "cocotb_tests/test_axis.py::test_cnp_notify"]),
    "timely_engine": (["hw/nic/timely_engine.py"], ["tests/test_timely_engine.py",
                                                     "tests/test_timely_engine_edges.py"]),
    "swift_engine": (["hw/nic/swift_engine.py"], ["tests/test_swift_engine.py",
                                                   "tests/test_swift_engine_edges.py"]),
    "ldcp_engine": (["hw/nic/ldcp_engine.py"],
                    ["tests/test_ldcp_engine.py",
                     "tests/test_ldcp_engine_edges.py",
                     "tests/test_ldcp_rx_engine_edges.py::test_ack_delay_register_range"]),
    "ldcp_tx_engine": (["hw/nic/ldcp_tx_engine.py"], ["tests/test_ldcp_tx_engine.py"]),
    "ldcp_rx_engine": (["hw/nic/ldcp_rx_engine.py"],
                       ["tests/test_ldcp_rx_engine.py", "tests/test_ldcp_rx_engine_edges.py"]),
    # the pacer: the update alone at its corners (every build), the directed engine runs and
    # one random engine run per build (test_pacer.py's wheel-wrap, back-pressure and
    # model-only runs are left out: 90 s more a surviving mutant)
    "pacer": (["hw/nic/pacer.py"],
              [f"tests/test_pacer.py::{t}" for t in (
                  "test_ival_init_reset_fits_its_register",
                  "test_update_corners_against_model", "test_byte_update_corners_against_model",
                  "test_report_on_a_written_waiting_unarmed_flow", "test_byte_mode_directed",
                  "test_work_conserving_packets", "test_work_conserving_bytes",
                  "test_burst_cap", "test_rate_change_while_queued",
                  "test_all_flows_due_in_one_slot", "test_random_bytes_and_burst")]
              + ["tests/test_pacer_regs.py::test_top_against_model"]),
    "pipemul": (["hw/lib/pipemul.py"], ["tests/test_pipemul.py"]),
    "csr": (["hw/lib/csr.py"], ["tests/test_csr.py", "tests/test_block_registers.py",
                             "tests/test_register_export.py"]),
    # the engines' register wrapper (global words, per-flow windows, wide fields' words),
    # through its read-back tests on the DCQCN and QCN engines and the windows' tests
    "engine_regs": (["hw/nic/engine_regs.py"],
                    ["tests/test_engine_registers.py", "tests/test_engine_window.py",
                     "tests/test_engine_wide_window.py", "tests/test_register_export.py"]),
    # no Amaranth-simulation test: the cocotb test (a Verilator build per mutant, minutes)
    "axi_lite": (["hw/lib/axi_lite.py"], ["cocotb_tests/test_axi_lite.py"]),
}

#: Equivalent mutants: (file, the stripped source line, mutation) -> why no test can kill it.
#: why a mutant in ``dcqcn_rp``'s branches for an elaboration-time constant is equivalent
_DCQCN_FIXED = (
    "the branch for a register given as an elaboration-time constant (``_fixed``); every build "
    "passes run-time registers (the single flow's CsrBank, the engine's registered copy), so "
    "the other branch is elaborated and this one never is")

#: why a delay one edge shorter in ``qcn_cp`` is equivalent
_QCN_CP_HELD = (
    "one sample is in flight at a time and frames wait meanwhile: stage 1's registers hold "
    "from the sample's accepting edge to its decision, so every register after them computes "
    "the same value again at each edge once the sample's value has reached it; a delay one "
    "edge shorter reads its source one edge later, when it already holds the sample's value")

#: why the width of ``ldcp_window``'s sub-1 sum ``sub = c + n_unmarked * gamma`` (W + 1 bits,
#: carried through stages 5..11) may be one bit narrower or wider
_LDCP_SUB = (
    "sub is read (sub_cap, sub_one, the CROSS/GAMMA result) only when the window after the "
    "marked part is below 1.0 (s12 above = 0; else a RECIP arm is selected): then sub < 2**16 + "
    "(2**NW - 1) * (2**17 - 1) < 2**27 (NW = event_n_width <= 9, m <= 32), so W = 32 bits hold "
    "it and bit 32 is always 0; when the window is >= 1.0 its value is unused")

#: the LDCP window's stage lines whose only mutated constant is sub's W + 1
_LDCP_SUB_LINES = (
    "s5 = stage(5, c=W, e=4, idx=RECIP_INDEX_BITS, f=RECIP_INTERP_BITS, sub=W + 1,",
    "s6 = stage(6, c=W, e=4, rom=RECIP_WORD, f=RECIP_INTERP_BITS, sub=W + 1,",
    "r_top=1, sub=W + 1, dec=LdcpDecRule, nua=prod_w, **ev)")

#: ldcp_window lines with two mutated constants (each key is shared by two mutants)
_LDCP_STAGE7 = "s7 = stage(7, c=W, e=4, t=RECIP_BITS + 1, tf=RECIP_INTERP_BITS, sub=W + 1,"
_LDCP_STAGE8 = ("s8 = stage(8, c=W, e=4, r=RECIP_BITS + 1, sub=W + 1, dec=LdcpDecRule, "
                "nua=prod_w, **ev)")
_LDCP_STAGE10 = ("s10 = stage(10, c=W, e=4, prod=prod_w + RECIP_BITS + 1, sub=W + 1, "
                 "dec=LdcpDecRule, **ev)")
_LDCP_STAGE11 = ("s11 = stage(11, c=W, room=signed(W + 2), inc=prod_w + 1, sub=W + 1, "
                 "dec=LdcpDecRule,")
_LDCP_T_R_WIDER = (
    "the table value t = T[i] <= 2**18 and the interpolated r = t - tf in [2**17, 2**18] "
    "(asserted by the model's reciprocal) fit RECIP_BITS + 1 = 19 bits: a 20th bit is always 0 "
    "(the narrower t/r, '1 -> 0' of this line, is killed: T[0] = 2**18)")

EQUIVALENT: dict[tuple[str, str, str], str] = {
    ("hw/lib/pipemul.py", "terms, level = nxt, level + 1", "1 -> 2"):
        "level is only compared with 0 (the loop runs at least once) and used in register "
        "names: counting by 2 builds the same registers under other names",
    ("hw/switch/marker.py",
     "s0_delta = Signal(signed(cfg.len_width + 1))       # +length (enqueue), -length (dequeue)",
     "1 -> 2"):
        "a signed register one bit wider than needed holds the same values (+/- length); "
        "every use sign-extends it",
    ("hw/nic/cnp_notify.py", "new_len = Mux(length > 0xFFFF - DB, 0xFFFF, length + nvalid)",
     "> -> >="):
        "AXI-Stream: only a frame's last beat may have fewer than DB bytes, so the length "
        "before a beat is a multiple of DB (8) and never equals 0xFFFF - DB (65527)",
    ("hw/nic/cnp_notify.py", "new_len = Mux(length > 0xFFFF - DB, 0xFFFF, length + nvalid)",
     "65535 -> 65534"):
        "the bound moves from 65527 to 65526; the length before a beat is a multiple of DB "
        "(8), so 'length > 65527' and 'length > 65526' are the same test (65528 and up)",
    ("hw/nic/cnp_notify.py",
     "sel_w = (waddr < end) if base == 0 else (waddr >= base) & (waddr < end)", "0 -> 1"):
        "the sub-blocks sit at bases 0 and 6, never 1: base 0 then takes the general form "
        "(waddr >= 0) & (waddr < end), the same set of addresses",
    ("hw/nic/cnp_notify.py",
     "m.d.sync += sel_r.eq((raddr < end) if base == 0 else (raddr >= base) & (raddr < end))",
     "0 -> 1"):
        "the sub-blocks sit at bases 0 and 6, never 1: base 0 then takes the general form "
        "(raddr >= 0) & (raddr < end), the same set of addresses",
    ("hw/nic/cnp_notify.py",
     "m.d.sync += sel_r.eq((raddr < end) if base == 0 else (raddr >= base) & (raddr < end))",
     "< -> <="):
        "two mutants share this key: the NP window's (its end is the first counter, whose "
        "read then returns the NP's word) is KILLED by the counter read-back of "
        "cnp_notify_tb.directed; the CNP generator's (raddr <= 6) is equivalent: word 6 is "
        "the NP's register, and the NP's select is the outer one of the read multiplexer",
    ("hw/nic/cnp_notify.py", "m.d.sync += counter.eq(Mux(counter > top - n, top, counter + n))",
     "> -> >="):
        "at counter == top - n both arms are top",
    ("hw/nic/cnp_notify.py",
     "sel_w = (waddr < end) if base == 0 else (waddr >= base) & (waddr < end)", "< -> <="):
        "the word at `end` is then also written into the sub-block (the CNP generator or the "
        "NP) at its address `end - base` = its last register + 1, which maps to nothing there "
        "(below its identification header, which is read-only anyway), so it changes no "
        "register; the word's own target still gets it (the read-back test writes every "
        "register of the map and reads every word back)",
    ("hw/nic/ldcp_transport.py",
     "m.d.comb += load_value.eq(Mux(eng.cw < ONE, eng.cw, ONE))", "< -> <="):
        "at cw == ONE both arms are ONE: min(cw, 1) either way",
    ("hw/nic/ldcp_transport.py",
     "passed = progress & Mux(pkt_t, sent_len < a.lsn, st.nxt < a.lsn)", "< -> <="):
        "when the ACK's LSN equals the nxt the sender would take anyway (sent_len, or nxt), "
        "the go-back candidate (una_new = that LSN, + mtu, 'is the last') is the same triple "
        "as the advance or hold candidate (nxt_mtu = nxt + mtu and is_last = nxt + mtu >= "
        "msg_len hold in every reachable state)",
    ("hw/nic/rate_limiter.py",
     "send_ok = self.send.valid & (self.send.payload.flow < cfg.flows)", "< -> <="):
        "send_ok is only used ANDed with flow == i for i < flows (send_i, and new_inc only "
        "through send_i): flow == flows matches no i either way",
    ("hw/nic/rate_limiter.py",
     "rate_ok = self.rate.valid & (self.rate.payload.flow < cfg.flows)", "< -> <="):
        "rate_ok is only used ANDed with flow == i for i < flows: flow == flows matches no i",
    ("hw/nic/rate_limiter.py",
     "clamped = Mux(new_rate < min_rate, min_rate, Mux(new_rate > max_rate, max_rate, "
     "new_rate))", "< -> <="):
        "at new_rate == min_rate both arms are min_rate",
    ("hw/nic/rate_limiter.py",
     "clamped = Mux(new_rate < min_rate, min_rate, Mux(new_rate > max_rate, max_rate, "
     "new_rate))", "> -> >="):
        "at new_rate == max_rate both arms are max_rate",
    ("hw/nic/rate_limiter.py",
     "m.d.comb += base.eq(Mux(paid < floor, floor, paid))", "< -> <="):
        "at paid == floor both arms are floor",
    ("hw/nic/rate_limiter.py",
     "m.d.sync += credit[i].eq(Mux(earned <= cap, earned, Mux(base > cap, base, cap)))",
     "<= -> <"):
        "at earned == cap the other arm is max(base, cap) = cap = earned (base <= earned: "
        "inc >= 0)",
    ("hw/nic/rate_limiter.py",
     "m.d.sync += credit[i].eq(Mux(earned <= cap, earned, Mux(base > cap, base, cap)))",
     "> -> >="):
        "at base == cap both arms are cap",
    ("hw/switch/cnm_gen.py", "carried = Mux(r.msdu_len > MB, MB, r.msdu_len)", "> -> >="):
        "at msdu_len == MB both arms are MB",
    ("hw/switch/cnm_gen.py",
     "length = Mux(carried < MIN_FRAME_BYTES - CNM_HEADER_BYTES, MIN_FRAME_BYTES,", "< -> <="):
        "at carried == MIN_FRAME_BYTES - CNM_HEADER_BYTES the other arm, CNM_HEADER_BYTES + "
        "carried, is MIN_FRAME_BYTES",
    ("hw/nic/ldcp_engine.py",
     "return max(self.engine.time_width + FRAC_BITS, RTT_WIDTH + FRAC_BITS + 1) + 2",
     "2 -> 1"):
        "with M = max(W + 16, 41): |(dl - t) c| <= 2**(W-1) (2**16 - 1) < 2**(M-1), ovr < 2**16 "
        "and P < 2**40 <= 2**(M-1), so need, need + P and need - 1 lie in (-2**M, 2**M): M + 1 "
        "signed bits hold them, the + 2 keeps one spare bit",
    ("hw/nic/swift_engine.py",
     "if h == 1:              # two bits: the position is a_hi (no select of empty positions)",
     "1 -> 0"):
        "h is never 0 (n >= 2), so the mutant sends h == 1 to the general form, whose select "
        "is of two empty positions: Cat(Mux(a_hi, <0 bits>, <0 bits>), a_hi) is a_hi",
    **{("hw/nic/swift_engine.py", "v.hs = red(v.hs, D + HOP_BITS + 2)", desc):
       "hop_scale x hops < 2**(D + HOP_BITS): rows kept modulo any width >= D + HOP_BITS "
       "sum to the same value" for desc in ("2 -> 3", "2 -> 1")},
    # the delays' differences against their targets: only bits 0 ... D are read (d[D], the
    # sign; d[:D], the numerator), and those are the difference mod 2**(D + 1) whatever width
    # >= D + 1 the operands are extended to and the slice keeps; both operands are D bits,
    # so fit(x, D) is x itself.  (The slice's 1 -> 0 leaves no bit D: an elaboration error,
    # killed.)
    **{("hw/nic/swift_engine.py", line, desc):
       "bits 0 ... D of the difference (the only ones read: the sign d[D] and d[:D]) are "
       "(delay - target) mod 2**(D + 1) for any operand and slice width >= D + 1, and "
       "fit(x, D) of a D-bit delay or target is x: the same bits"
       for line in ("v.fd = (fit(v.fab, D + 1) - fit(v.target, D + 1))[:D + 1]",
                    "v.ed = (fit(v.ep, D + 1) - fit(r.endpoint_target, D + 1))[:D + 1]")
       for desc in ("1 -> 2", "1 -> 0")},
    ("hw/nic/swift_engine.py",
     "TW = D + HOP_BITS + 2            # base + hops x h + fs before the saturation", "2 -> 1"):
        "base_target < 2**D, the flow-scaling term < 2**D and hop_scale x hops < 2**(D + 8): "
        "the sum is below 2**(D + 9), so D + HOP_BITS + 1 bits hold it before the saturation",
    ("hw/nic/swift_engine.py",
     "TW = D + HOP_BITS + 2            # base + hops x h + fs before the saturation", "2 -> 3"):
        "one bit wider than a width that already holds the sum (see 2 -> 1): the rows and "
        "the sum only gain a zero top bit, and the saturation tests every bit from D up",
    **{("hw/nic/swift_engine.py",
        "v.thr = (ONE16 - fit(r.mdf_floor, FRAC16 + 3)).as_signed()     # max_mdf, signed",
        desc):
       "mdf_floor is a 17-bit register (FRAC16 + 1): fit to 18, 19 or 20 bits is the "
       "register itself, and 2**16 - mdf_floor the same signed number"
       for desc in ("3 -> 2", "3 -> 4")},
    **{("hw/nic/swift_engine.py", line, "1 -> 2"):
       "beta x ratio < 2**17 x 2**16 = 2**33 and non-negative: its rows are exact in 33 bits "
       "(a compressor keeps the sum, every row stays below it), so 34 only adds a zero bit, "
       "and p = the sum >> 16 is the same number"
       for line in ('setattr(v, k + "_bw", red(mul_rows(r.beta, ratio, 2 * FRAC16 + 1),',
                    "2 * FRAC16 + 1, 3))",
                    'setattr(v, k + "_bw", red(getattr(v, k + "_bw"), 2 * FRAC16 + 1))',
                    'setattr(v, k + "_p", reduce_rows(getattr(v, k + "_bw"), 2 * FRAC16 + 1)'
                    '[FRAC16:])')},
    **{("hw/nic/swift_engine.py", line, "1 -> 0"):
       "rows beta << j (beta < 2**17, j <= 15: ratio is 16 bits) have their highest bits at "
       "16 ... 31, and the first call's three compressor levels (triples in order, the rest "
       "passed on) form none above 31: level 1 (16,17,18) ... (28,29,30) -> 18/18 ... 30/30, "
       "31 passed; level 2 (18,18,21) -> 21/19, (21,24,24) -> 24/25, (27,27,30) -> 30/28, 30 "
       "and 31 passed; level 3 (21,19,24) -> 24/22, (25,30,28) -> 30/29, 30 and 31 passed: so "
       "32 bits (mul_rows' width or that call's) hold every row exactly (the next call's "
       "level makes bit 32, at 33 bits)"
       for line in ('setattr(v, k + "_bw", red(mul_rows(r.beta, ratio, 2 * FRAC16 + 1),',
                    "2 * FRAC16 + 1, 3))")},
    ("hw/nic/swift_engine.py", "MW = CW_BITS + FRAC16 + 1", "1 -> 2"):
        "w x f < 2**32 x 2**17 = 2**49 and non-negative (f is 17 bits): the rows are exact in "
        "49 bits, so 50 only adds a zero bit and the cut window (the sum >> 16) is the same",
    # The marker: widths one bit wider than the values they hold, reset values overwritten
    # before any descriptor reads them, and an elaboration-time check
    ("hw/switch/marker.py", "SW = signed(max(W, cfg.len_width) + 2)", "2 -> 3"):
        "the limits one bit wider: every limit (2**occ_width - (2**len_width - 1) - 2**occ_width "
        "... 2**(occ_width + 1)) already fits; the clamp tests the sign of the expression and "
        "keeps LW low bits of a non-negative value, NEVER = 2**occ_width fits either way: the "
        "same compares",
    ("hw/switch/marker.py", "sc_delta_sum = Signal(signed(cfg.len_width + 2))", "2 -> 3"):
        "the sum of two signed lengths (|each| < 2**len_width) fits len_width + 2 signed bits; "
        "one more is a copy of the sign, and every use sign-extends it",
    ("hw/switch/marker.py",
     "t = Signal(W + 1, name=name, init=getattr(reset, name) + reset.compare)", "1 -> 2"):
        "K + compare <= 2**occ_width - 1 + 1 fits W + 1 bits, so W + 2 holds the same value; "
        "(the line's other 1 is no mutant here: only the width's)",
    **{("hw/switch/marker.py", line, desc):
       "the width (W + 2 bits for a value <= 2**W, buf_max + 1 or shared_buffer + 1) holds the "
       "same value; the reset value (+0, +2) is overwritten at the first clock edge by the "
       "register's next value (buf_max + 1 from the register file, whose reset is the same "
       "configuration value), and no descriptor reads it in the first cycle after a reset: "
       "the reset sweep holds desc.ready low for max(queues, 1) >= 1 cycles "
       "(tests/test_marker_boundaries.py::test_reset_sweep_clears_every_queue counts them)"
       for line in ("th_buf = Signal(W + 1, init=reset.buf_max + 1)",
                    "th_pool = Signal(W + 1, init=reset.shared_buffer + 1)")
       for desc in ("1 -> 0", "1 -> 2")},
    **{("hw/switch/marker.py",
        "return Mux(v.as_signed() < 0, 0, v.as_unsigned()[:LW])", desc):
       "the clamp of a limit at 0: the two forms differ only at v = 0, where the clamp's 0 "
       "and v's own low bits are both 0"
       for desc in ("< -> <=", "0 -> 1")},
    **{("hw/switch/marker.py",
        "assert product_levels(D + 1, self.MUL_FAN_IN) <= self.MUL_STAGES", desc):
       "an elaboration-time check, not hardware: product_levels(draw_bits + k, 2) <= 5 for "
       "every legal draw_bits (4 ... 24) and k = 0, 1, 2 (26 terms: 13, 7, 4, 2, 1), so it "
       "never fires and the Verilog is the same"
       for desc in ("1 -> 0", "1 -> 2")},
    ("hw/nic/dcqcn_np.py",
     "ce = self.event.valid & self.event.payload.ce & (self.event.payload.flow < F)", "< -> <="):
        "ce is only read as ce & (flow == i) for i < F, so a flow of F (or above) sets nothing "
        "with either bound: the range check itself is redundant, its boundary unobservable",
    **{("hw/switch/hash_table.py",
        "if 2 * W <= 8:      # truth tables of the 2 x ways free bits: LUTs, no carry chains",
        desc):
       "an elaboration-time choice between two forms of the same five compares of the two "
       "sides' free-way counts (truth tables indexed by the 2W free bits, or the popcounts "
       "compared): both apply the same lambdas to the same counts, so moving the bound only "
       "builds the other form at W = 4 (2W is even: <= 9 is <= 8); the tests build ways 1, "
       "2 and 4, and with the bound moved the ways-4 build takes the popcount form and passes"
       for desc in ("<= -> <", "8 -> 7", "8 -> 9")},
    # The two products of TIMELY's first stage, reduced over two compressor levels: a bound
    # on each row's highest set bit (a 3:2 compressor's sum: the highest of its inputs'; its
    # carry: the second highest + 1, a majority needs two set bits) through compress()'s
    # grouping (triples in order, the rest passed on) shows no bit at or above width - 1 is
    # ever formed, so one bit fewer (in mul_rows or in the reduction) truncates nothing and
    # one more adds only zeros: the same rows either way.
    **{("hw/nic/timely_engine.py",
        "v.ser = red(mul_rows(r.ser_per_byte, cn.seg_bytes, 32 + SEG_BITS), 32 + SEG_BITS, 2)",
        desc):
       "rows a << j (a = ser_per_byte < 2**32, j <= 16): highest bits 31 ... 47; level 1: "
       "(31,32,33) ... (43,44,45) -> sum/carry 33/33 ... 45/45, rows 46 and 47 passed; "
       "level 2: (33,33,36) -> 36/34, (36,39,39) -> 39/40, (42,42,45) -> 45/43, (45,46,47) "
       "-> 47/47: no bit above 47, so 48 bits (32 -> 31, either width) hold every row "
       "exactly, and 50 (32 -> 33) only add zeros"
       for desc in ("32 -> 31", "32 -> 33")},
    **{("hw/nic/timely_engine.py",
        "v.dn = red(mul_rows(r.delta, r.hai_mult, RW + 8), RW + 8, 2)", desc):
       "rows delta << j (delta < 2**RW = 2**27, j <= 7): highest bits 26 ... 33; level 1: "
       "(26,27,28) -> 28/28, (29,30,31) -> 31/31, rows 32 and 33 passed; level 2: "
       "(28,28,31) -> 31/29, (31,32,33) -> 33/33: no bit above 33, so RW + 7 = 34 bits "
       "(8 -> 7, either width) hold every row exactly, and RW + 9 only adds zeros"
       for desc in ("8 -> 7", "8 -> 9")},
    ("hw/nic/timely_engine.py", "XW = RT + DIFF_FRAC + 2 + FRAC16 + 2", "2 -> 1"):
        "the EWMA's rows sum to alpha nd + (2**16 - alpha) rd with |nd|, |rd| <= 2**32 and "
        "alpha < 2**17: below 2**49 + 2**48 < 2**50 in magnitude, so XW - 1 = 51 signed bits "
        "hold it (and ew = that >> 16 fits the 35 bits kept)",
    ("hw/nic/timely_engine.py", "GW = DW + 32 + 1", "32 -> 33"):
        "|rtt_diff x inv_min_rtt| <= 2**(DW-1) (2**32 - 1) < 2**(DW+31) fits DW + 32 signed "
        "bits: one more bit (and the two-stage sum's split moved with it) gives the same g0",
    ("hw/nic/timely_engine.py",
     "v.f = Mux(~v.high & (f < 0), 0, f)[:FW_ - FRAC16 + 2].as_signed()", "0 -> 1"):
        "f < 0 -> f < 1 differs only at f == 0, where both arms of the select are 0",
    # The LDCP sender: clamps and minima whose two arms agree at the boundary, and an
    # elaboration-time guard
    **{("hw/nic/ldcp_tx_engine.py",
        "return Mux(v < regs.gamma, regs.gamma, Mux(v > regs.cw_max, regs.cw_max, v))", desc):
       "the clamp at v == gamma (v == cw_max) selects the bound, which is v: the same value"
       for desc in ("< -> <=", "> -> >=")},
    ("hw/nic/ldcp_tx_engine.py",
     "rto_load = Mux(fast0, s.fs_acked << FRAC_BITS, Mux(cw0 < ONE, cw0, ONE))", "< -> <="):
        "min(cw, 1) at cw0 == ONE: both arms are ONE",
    ("hw/nic/ldcp_tx_engine.py",
     'fs_new = wire("fs_new", Mux(fs_sum > _SAT16, _SAT16, fs_sum), IW_WIDTH)', "> -> >="):
        "the saturation at fs_sum == 2**16 - 1: both arms are 2**16 - 1",
    ("hw/nic/ldcp_tx_engine.py", "passed = Mux(progress, nxt1 < a.lsn, 0)", "< -> <="):
        "passed only selects nxt = una2 instead of nxt1; with progress, una2 = a.lsn, so at "
        "nxt1 == a.lsn both are the same LSN",
    ("hw/nic/ldcp_tx_engine.py", "length = Mux(remaining > mtu, mtu, remaining)", "> -> >="):
        "min(remaining, MTU) at remaining == MTU: both arms are MTU",
    **{("hw/nic/ldcp_tx_engine.py", "assert WIN + 2 <= L", desc):
       "an elaboration-time check, no hardware: L = WIN + 1 + ceil((W - 3) / div_steps) "
       "with W >= 12 and div_steps <= 8 (both checked by the configuration), so the "
       "division takes at least 2 cycles and WIN + 3 <= L in every legal build: the weaker "
       "and the stronger forms pass alike and the Verilog is the same"
       for desc in ("2 -> 1", "2 -> 3", "<= -> <")},
    ("hw/nic/timely_engine.py", "DW = RT + DIFF_FRAC + 1", "1 -> 2"):
        "every value kept in DW bits already fits them: rtt_diff (a stored field of "
        "RT + DIFF_FRAC + 1 signed bits, or the clamp's result within +-diff_max) and "
        "e = new_diff - rtt_diff, |e| < 2**(RT + 8) + 2**(RT + 8) = 2**(DW) fits DW + 1; one "
        "bit more sign-extends the same values (and widens the gradient's rows, GW, which "
        "hold the product already: see GW's entry)",
    ("hw/nic/timely_engine.py", "v.ser = red(v.ser, 32 + SEG_BITS)", "32 -> 33"):
        "the rows of ser_per_byte x seg_bytes are non-negative and sum to less than "
        "2**32 x 2**17 = 2**(32 + SEG_BITS); a compressor keeps the sum, so every row stays "
        "below it and a wider width only adds zero bits",
    ("hw/nic/timely_engine.py", "v.ser = reduce_rows(v.ser, 32 + SEG_BITS)[SER_FRAC:]",
     "32 -> 33"):
        "the sum ser_per_byte x seg_bytes < 2**(32 + SEG_BITS): summed mod one more bit it is "
        "the same number, and the extra top bit (0) disappears in fit(v.ser, TS_BITS + 2)",
    ("hw/nic/timely_engine.py", "v.dn = reduce_rows(v.dn, RW + 8)", "8 -> 9"):
        "the sum delta x hai_mult < 2**(RW + 8): summed mod one more bit it is the same "
        "number (the extra top bit is 0), and it is only added to the rate and saturated",
    **{("hw/nic/timely_engine.py", "neg, over = v.d < 0, v.d[RT:TS_BITS + 1] != 0", desc):
       "differs only at d == 0, which gives RTT 0 either way (the clamp's 0, or d's low bits)"
       for desc in ("< -> <=", "0 -> 1")},
    **{("hw/nic/timely_engine.py", line, desc):
       "the clamp at ew == +-diff_max selects +-diff_max, which is ew: the same value"
       for line, desc in (("v.ew_hi = v.ew > diff_max", "> -> >="),
                          ("v.ew_lo = v.ew < -diff_max", "< -> <="))},
    ("hw/nic/timely_engine.py",
     "v.f = Mux(~v.high & (f < 0), 0, f)[:FW_ - FRAC16 + 2].as_signed()", "< -> <="):
        "differs only at f == 0, where both arms of the select are 0",
    ("hw/nic/timely_engine.py", "v.below = x < r.min_rate", "< -> <="):
        "at x == min_rate: with max_rate >= min_rate both forms give min_rate (x itself, or "
        "lo_val = min_rate); with max_rate < min_rate x is above max_rate, and both give "
        "max_rate (the above arm, or lo_val = max_rate)",
    ("hw/nic/timely_engine.py", "v.above = x > r.max_rate", "> -> >="):
        "at x == max_rate the above arm is max_rate, which is x (and below, checked first, "
        "is the same in both forms)",
    ("hw/nic/timely_engine.py", "v.dn = red(v.dn, RW + 8)", "8 -> 9"):
        "the rows of delta x hai_mult are non-negative and sum to less than 2**27 x 2**8 = "
        "2**(RW + 8); a compressor keeps the sum, so every row stays below 2**(RW + 8) and "
        "a wider width only adds zero bits",
    # TIMELY's stage widths one bit wider or narrower (eleventh session), each from a bound on
    # the values the stage holds (RT = rtt_width, RW = rate_width; the non-negative products'
    # rows stay below their sum, a compressor keeps the sum: rows exact in any width above it)
    **{("hw/nic/timely_engine.py", "v.d = (fit(v.elapsed, TS_BITS + 2) - fit(v.ser, "
        "TS_BITS + 2))[:TS_BITS + 2].as_signed()", desc):
       "elapsed < 2**32 and ser = ser_per_byte x seg_bytes >> 24 < 2**(32 + 17 - 24) = 2**25, "
       "so d is in (-2**25, 2**32) and fits 33 signed bits: any of the three widths at 33 or "
       "35 gives the same d, and the over-range test reads bits RT ... 32, d's own bits in "
       "every form (bit 32 is 0 for every d >= 0)"
       for desc in ("2 -> 1", "2 -> 3")},
    **{("hw/nic/timely_engine.py", "PW = PW1 + RW + 1", desc):
       "P = app_k x cycles x rate < 2**(PW1 + RW) (app_k < 2**28, cycles < 2**RT, rate < "
       "2**RW), so its rows are exact in PW1 + RW bits or more; the compare's width AW = "
       "max(PW, 72) + 1 still holds app_bytes 2**40 - P as a signed number (|P| < 2**PW, "
       "app_bytes 2**40 < 2**72): the same sign"
       for desc in ("1 -> 0", "1 -> 2")},
    ("hw/nic/timely_engine.py", "v.dn = red(v.dn, RW + 8)", "8 -> 7"):
        "one bit narrower the compressors can drop a carry into bit 34 (delta = 3 x 2**25, "
        "hai_mult = 192 loses 2**34), but the increase is only added to the rate and clamped "
        "to max_rate < 2**27, so only a product in [2**34, 2**34 + 2**27) could show it: "
        "python -m tools.timely_hai_rows runs every pair of that window (92,246,711) bit for "
        "bit, none differs",
    ("hw/nic/timely_engine.py", "XW = RT + DIFF_FRAC + 2 + FRAC16 + 2", "2 -> 3"):
        "one bit wider than a width that already holds the EWMA's sum (see 2 -> 1): the same "
        "value sign-extended, and ew = that >> 16 the same signed number",
    ("hw/nic/timely_engine.py", "AW = max(PW, APP_BITS + APP_FRAC) + 1", "1 -> 2"):
        "app_bytes 2**40 - P already fits max(PW, 72) + 1 signed bits: one more bit "
        "sign-extends the same difference (the compare reads its sign)",
    **{("hw/nic/timely_engine.py", "GW = DW + 32 + 1", desc):
       "|rtt_diff x inv_min_rtt| <= 2**(DW - 1) (2**32 - 1) < 2**(DW + 31): the product fits "
       "DW + 32 signed bits, and the rows' sum mod 2**GW is the product for any GW >= DW + "
       "32, so g0 (its bits from GSHIFT, signed) is the same number"
       for desc in ("32 -> 31", "1 -> 0", "1 -> 2")},
    **{("hw/nic/timely_engine.py", "FW_ = FRAC16 + 1 + GRAD_FRAC + 5", desc):
       "x (2**16 - q <= 2**16, or the saturated gradient < 2**20) times beta (< 2**17) is "
       "below 2**37, so the rows are exact in 37 bits or more; the values FW_ sizes after "
       "it hold in one bit less: p = that >> 16 < 2**21, f = 2**16 - p in (-2**21, 2**16] "
       "(22 signed bits), rate x f below 2**48 in magnitude (MW - 1 = 50 signed bits), the "
       "rate before the clamp below 2**32 in magnitude (36 signed bits): every value the same"
       for desc in ("1 -> 0", "1 -> 2", "5 -> 4", "5 -> 6")},
    **{("hw/nic/timely_engine.py", "f = (ONE16 - fit(v.p, FW_ - FRAC16 + 1)).as_signed()",
        desc):
       "p = beta x x >> 16 < 2**21 (see FW_): fit to 22, 23 or 24 bits is p itself"
       for desc in ("1 -> 0", "1 -> 2")},
    **{("hw/nic/timely_engine.py", "MW = RW + FW_ - FRAC16 + 3", desc):
       "|rate x f| < 2**RW x 2**21 = 2**48 (f in (-2**21, 2**16], see FW_): it fits MW - 1 "
       "= 51 signed bits, so the rows' sum mod 2**MW is the product either way, and "
       "(rate x f) >> 16, below 2**32 in magnitude, fits the MW - 16 signed bits kept"
       for desc in ("3 -> 2", "3 -> 4")},
    **{("hw/nic/timely_engine.py", "v.x = fit(rate, MW - FRAC16 + 1).as_signed()", desc):
       "the rate before the clamp is the old rate or rate + increase (< 2**28) or (rate x "
       "f) >> 16 (below 2**32 in magnitude, see MW): 36 signed bits hold each, so 36, 37 "
       "or 38 bits give the same number to the clamp's compares"
       for desc in ("1 -> 0", "1 -> 2")},
    ("hw/nic/timely_engine.py", "v.g_over = g0 > GRAD_MAX", "> -> >="):
        "at g0 == GRAD_MAX both arms of the select are GRAD_MAX: 2**20 - 1 fits g0's "
        "GRAD_FRAC + 4 = 20 kept bits",
    # -- dcqcn_rp (the update shared by the single flow and the engine) ----------------------
    **{("hw/nic/dcqcn_rp.py", "if sign < 0:", desc):
       "sign is +1 or -1 (the two product lists): < 0, <= 0 and < 1 pick the same lists"
       for desc in ("< -> <=", "0 -> 1")},
    ("hw/nic/dcqcn_rp.py", "AW = ALPHA_FRAC + 1", "1 -> 2"):
        "alpha is at most 2**25 - 1 (the state field), (1 - g) alpha below that, (1 - g) "
        "alpha + g saturated to 2**24 before it is truncated, and alpha * 1024 + 1023 - "
        "alpha * g below 2**35 (g <= 1024): one more bit holds the same values",
    **{("hw/nic/dcqcn_rp.py", "c.mdf = p.reduce(p.msum(RW + MDF_FRAC + 2, values=[(1 << "
        "MDF_FRAC) - 1],", desc):
       "Rc * min_dec_fac + 2**16 - 1 < 2**RW * 2**16 (the factor read as at most 1.0): RW + "
       "16 bits hold the sum, so + 1, + 2 and + 3 give the same bits from 16 up"
       for desc in ("2 -> 1", "2 -> 3")},
    ("hw/nic/dcqcn_rp.py", "c.fe = F + (1 if rule == INC_HPCC else 0) if _fixed(rule) else "
     "F + (rule == INC_HPCC)", "== -> !="): _DCQCN_FIXED,
    ("hw/nic/dcqcn_rp.py", "cls = ns3_phase() if rule == INC_NS3 else counted_phase(c.fe)",
     "== -> !="): _DCQCN_FIXED,
    **{("hw/nic/dcqcn_rp.py", "c.hi, c.lo = (umax(c.ts, c.bs), umin(c.ts, c.bs)) if byte_on "
        "else (c.ts, c.ts)", desc): _DCQCN_FIXED
       for desc in ("umax(a, b) -> a", "umin(a, b) -> a")},
    **{("hw/nic/dcqcn_rp.py", "mult = mult[:8] if _fixed(F) and F >= 1 else umin(mult, "
        "STAGE_MAX)[:8]", desc): _DCQCN_FIXED
       for desc in (">= -> >", "1 -> 0", "1 -> 2")},
    ("hw/nic/dcqcn_rp.py", "c.hai = p.msum(len(Value.cast(r.hai_rate)) + 8, products=[(r.hai_rate, "
     "mult)])", "8 -> 9"):
        "mult is at most 255 (8 bits): R_HAI * mult fits the register's width + 8 bits; one "
        "more holds the same value",
    ("hw/nic/dcqcn_rp.py", "mult = Mux(c.excess > 0, c.excess, 0)", "> -> >="):
        "at excess == 0 both arms are 0",
    ("hw/nic/dcqcn_rp.py", "c.keep = c.dec < c.room         # the cut leaves more than the "
     "floor", "< -> <="):
        "at Rc alpha == (Rc - floor) << gd_shift the kept branch gives Rc - ((Rc - floor) << "
        "gd) >> gd = the floor, the other branch the floor itself",
    ("hw/nic/dcqcn_rp.py", "c.avg_above_min, c.avg_below_max = c.rt_inc > c.avg_lo, "
     "c.rt_inc < c.avg_hi", "> -> >="):
        "at Rt + Rc = 2 min_rate + 1 the average (Rt + Rc) >> 1 is min_rate: above-min "
        "selects it (or max_rate past it), not-above selects min(min_rate, max_rate): the same",
    ("hw/nic/dcqcn_rp.py", "c.avg_above_min, c.avg_below_max = c.rt_inc > c.avg_lo, "
     "c.rt_inc < c.avg_hi", "< -> <="):
        "at Rt + Rc = 2 max_rate the average is max_rate, which both arms give",
    ("hw/nic/dcqcn_rp.py", "Mux(_const(r.min_rate) < r.max_rate, r.min_rate, r.max_rate))",
     "< -> <="):
        "at min_rate == max_rate both arms are the same value",
    # -- qcn_cp: widths one bit wider than their values, bounds where both arms agree, and
    # delays one edge shorter (_QCN_CP_HELD)
    **{("hw/switch/qcn_cp.py",
        "return Mux(x > 32767, 32767, Mux(x < -32768, -32768, x))[:16]", desc): why
       for desc, why in (
           ("> -> >=", "at x == 32767 both arms are 32767"),
           ("32767 -> 32766", "x > 32766 differs from x > 32767 only at x == 32767, where "
                              "the bound it selects is x itself"),
           ("< -> <=", "at x == -32768 both arms are -32768"))},
    ("hw/switch/qcn_cp.py", "rem_m1 = Signal(signed(W + 2), init=cfg.sample_table[0] - 1)",
     "2 -> 3"):
        "between frames the counter holds a reload (lo - 1 + jitter, in [-1, 2**(W + 1) - 3] "
        "for any register values) or what is left of one: W + 2 signed bits hold it; the "
        "difference a sampled frame also loads is replaced by the reload before the next "
        "frame is taken (frames wait while a sample is in flight)",
    ("hw/switch/qcn_cp.py", "fbm1 = Signal(signed(FBW + 1))                       # Fb_max - 1",
     "1 -> 2"):
        "Fb_max - 1 is in [-1, 2**FBW - 2]: FBW + 1 signed bits hold it",
    ("hw/switch/qcn_cp.py",
     "xmax = Signal(signed(FBW + QNTZ_BITS + 1))           # 63 Fb_max + Fb_max - 1",
     "1 -> 0"):
        "x keeps xmax's low FBW + 6 bits, the same in either width; its sign bit (s6_neg) "
        "is read only when s > Fb_max, and s = Q_off + w Q_delta < 16 * 2**W = 2**(FBW - 1) "
        "(FBW = W + 5, w <= 15), so there Fb_max < 2**(FBW - 1) and (Fb_max << 6) - 1 fits "
        "FBW + 6 signed bits",
    ("hw/switch/qcn_cp.py",
     "xmax = Signal(signed(FBW + QNTZ_BITS + 1))           # 63 Fb_max + Fb_max - 1",
     "1 -> 2"):
        "(Fb_max << 6) - 1 is in [-1, 2**(FBW + 6) - 2]: FBW + 7 signed bits hold it",
    ("hw/switch/qcn_cp.py",
     "neg_mult = Signal(signed(cfg.mult_width + 1))        # -M (the product of x = -1)",
     "1 -> 2"):
        "-M is in [-(2**mult_width - 1), 0]: mult_width + 1 signed bits hold it",
    ("hw/switch/qcn_cp.py", "diff = Signal(signed(max(W + 1, cfg.len_width) + 1))", "1 -> 2"):
        "the counter (in [-1, 2**(W + 1) - 3]) minus a length (below 2**len_width) is in "
        "[-2**len_width, 2**(W + 1)): max(W + 1, len_width) + 1 signed bits hold it, a wider "
        "difference has the same sign and low bits",
    **{("hw/switch/qcn_cp.py", f"{name} = Signal(signed(W + 1))", "1 -> 2"):
       "qlen - Q_eq and qlen - Q_old are in (-2**W, 2**W): W + 1 signed bits hold them"
       for name in ("s1_off", "s1_delta")},
    ("hw/switch/qcn_cp.py", "s5_sat.eq(s4_s > reg.fb_max),", "> -> >="):
        "at s == Fb_max, 63 s + Fb_max - 1 is the saturated value 63 Fb_max + Fb_max - 1; "
        "s6_neg (xmax's sign) is set only with Fb_max = 0 = s, where s > 0 fails and the "
        "product is discarded",
    ("hw/switch/qcn_cp.py", "s_t = Signal(QNTZ_BITS + 7)", "7 -> 8"):
        "the second shift step reads s_t's bits K[:3] ... K[:3] + 5 (at most bit 12): a 14th "
        "bit is never read",
    ("hw/switch/qcn_cp.py", "lo_m1 = Signal(signed(W + 1))", "1 -> 2"):
        "lo - 1 is in [-1, 2**W - 2]: W + 1 signed bits hold it",
    **{("hw/switch/qcn_cp.py", line, desc): _QCN_CP_HELD for line, desc in (
        ('m.d.sync += s_qntz.eq(Mux(delay(s5_pos, lat + 2, "pos"), (s_t >> K[:3])[:QNTZ_BITS], '
         '0))', "2 -> 1"),
        ('lo_d = delay(lo_m1, jlat - 1, "lo")', "1 -> 2"),
        ('qntz_d = delay(s_qntz, 1 + jlat, "qntz")', "1 -> 0"),
        ("to_last = len(stages) - 5", "5 -> 6"))},
    # ---- ldcp_window (hw/nic/ldcp_window.py) ----
    **{("hw/nic/ldcp_window.py",
        "s2 = stage(2, cw=W, cwg=signed(W + 2), cw1=signed(W + 2), h=FRAC_BITS, m_none=1,",
        desc): "cwg = cw - gamma and cw1 = cw - ONE (cw 32-bit unsigned, gamma < 2**17) lie in "
       "[-(2**17 - 1), 2**32 - 1]: signed(W + 1) = signed(33) holds them, and a wider signed "
       "register holds the same values; both are only compared with nmb (two mutants each key)"
       for desc in ("2 -> 1", "2 -> 3")},
    **{("hw/nic/ldcp_window.py", line, desc): _LDCP_SUB
       for line in _LDCP_SUB_LINES for desc in ("1 -> 0", "1 -> 2")},
    **{("hw/nic/ldcp_window.py", line, "1 -> 0"): _LDCP_SUB + " (the narrower t/r of this "
       "line, also '1 -> 0', is killed: T[0] = 2**18 needs 19 bits)"
       for line in (_LDCP_STAGE7, _LDCP_STAGE8)},
    **{("hw/nic/ldcp_window.py", line, "1 -> 2"): _LDCP_T_R_WIDER + "; sub: " + _LDCP_SUB
       for line in (_LDCP_STAGE7, _LDCP_STAGE8)},
    **{("hw/nic/ldcp_window.py", _LDCP_STAGE10, desc):
       "prod = nua * r with nua < 2**prod_w and r <= 2**18, so prod < 2**(prod_w + 18): "
       "prod_w + RECIP_BITS bits already hold it (the + 1 is spare, and + 2 holds the same); "
       "sub: " + _LDCP_SUB for desc in ("1 -> 0", "1 -> 2")},
    **{("hw/nic/ldcp_window.py", _LDCP_STAGE11, desc):
       "room = cw_max - c with both 32-bit unsigned lies in [-(2**32 - 1), 2**32 - 1]: "
       "signed(W + 1) holds it, a wider signed register the same values"
       for desc in ("2 -> 1", "2 -> 3")},
    **{("hw/nic/ldcp_window.py", _LDCP_STAGE11, desc):
       "inc = prod >> (e + 18) with prod < 2**(prod_w + 18) (see s10) is < 2**prod_w: "
       "prod_w bits hold it (the + 1 is spare); sub: " + _LDCP_SUB
       for desc in ("1 -> 0", "1 -> 2")},
    ("hw/nic/ldcp_window.py",
     's2["h"].eq(s1["cw"][:FRAC_BITS] >> Mux(nm1 > FRAC_BITS, FRAC_BITS, nm1)[:5]),',
     "> -> >="):
        "at nm == FRAC_BITS (16) both arms are 16",
    ("hw/nic/ldcp_window.py", "with m.If(~wide | (ipart == 0)):", "0 -> 1"):
        "ipart == 1 with wide: the loop sets e = 0 (bit 0 is the leading one) as the If does; "
        "ipart == 0 with wide (the selected window below 1.0): e then keeps an old value, but e "
        "only scales the reciprocal increase, whose result is selected only for a window >= "
        "1.0 (s12 above), i.e. ipart != 0",
    ("hw/nic/ldcp_window.py", '"gate_lo": Out(18 + MTU_WIDTH, init=gate_init["gate_lo"]),',
     "18 -> 19"):
        "gate_lo = cw[:18] * mtu < 2**18 * 2**14 = 2**32: a 33rd bit of the port is always 0 "
        "(the narrower port, 18 -> 17, is killed by test_gate_low_product_at_its_full_width)",
    ("hw/nic/ldcp_window.py",
     '"gate_hi": Out(CW_WIDTH - 18 + MTU_WIDTH, init=gate_init["gate_hi"]),', "18 -> 17"):
        "gate_hi = cw[18:] * mtu < 2**14 * 2**14 = 2**28: a 29th bit of the port is always 0 "
        "(the narrower port, 18 -> 19, is killed by test_gate_high_product_at_the_largest_window)",
    **{("hw/nic/ldcp_window.py",
        'win_bytes = Signal(CW_WIDTH + MTU_WIDTH - FRAC_BITS + 1, init=init["win_bytes"])',
        desc): "win_bytes = ceil(cw * mtu / 2**16) <= ((2**32 - 1) * (2**14 - 1) + 2**16 - 1) "
       ">> 16 = 2**30 - 2**16 < 2**30: 30 bits (the + 1 is spare) hold it, 32 the same values"
       for desc in ("1 -> 0", "1 -> 2")},
    ("hw/nic/ldcp_window.py",
     "n_ack = Mux(self.ack.payload.n > cfg.m, cfg.m, self.ack.payload.n)[:cfg.n_width]",
     "> -> >="):
        "at n == m both arms are m",
    ("hw/nic/ldcp_window.py",
     "m.d.sync += [csr_q_lo.eq(wdata < params.gamma), csr_q_hi.eq(wdata > params.cw_max)]",
     "< -> <="):
        "a window write of exactly gamma: the clamp Mux(q_lo, gamma, ...) loads gamma = wdata "
        "either way",
    ("hw/nic/ldcp_window.py",
     "m.d.sync += [csr_q_lo.eq(wdata < params.gamma), csr_q_hi.eq(wdata > params.cw_max)]",
     "> -> >="):
        "a window write of exactly cw_max: Mux(q_hi, cw_max, wdata) loads cw_max = wdata "
        "either way (q_lo, tested first, is the same in both)",
}

# ---- pacer (hw/nic/pacer.py) ----
EQUIVALENT.update({
    ("hw/nic/pacer.py", "TW = max(BW, cfg.count_width) + 1", "max(a, b) -> a"):
        "PacerConfig requires count_width <= backlog_width: max(BW, count_width) is BW in "
        "every build",
    ("hw/nic/pacer.py", "TW = max(BW, cfg.count_width) + 1", "1 -> 2"):
        "the backlog's sums are below 2**(BW + 1) (tot0 = backlog + n, tot1 = backlog + n - 1 "
        "where it is read: backlog + n >= 1): TW = BW + 1 bits hold them, one more bit holds "
        "the same values (over0/over1 test the bits from BW up)",
    ("hw/nic/pacer.py", "nz1=Mux(is_tx, tot1 != 0, s.backlog != 1),", "!= -> =="):
        "nz1 is read only through bl2_nz = Mux(g1, nz1, nz0), and bl2_nz only ANDed with ~g1 "
        "(step 3's grant g2, g2_if_tb): never read (dead logic the synthesis removes; left)",
    **{("hw/nic/pacer.py", "nz1=Mux(is_tx, tot1 != 0, s.backlog != 1),", desc):
       "nz1 is read only through bl2_nz = Mux(g1, nz1, nz0), and bl2_nz only ANDed with ~g1: "
       "never read" for desc in ("1 -> 0", "1 -> 2", "0 -> 1")},
    # the CN candidate's 3:2 row on kept wires (the three-cycle update) or by compress (the
    # others): the same two rows, bit for bit; only the mapping differs
    **{("hw/nic/pacer.py", "if cfg.update_cycles == 3:", desc):
       "both arms make the same 3:2 rows of next + new + ~ival (kept wires, or compress): the "
       "update's values are the same in every build, only the netlist's mapping differs"
       for desc in ("== -> !=", "3 -> 2", "3 -> 4")},
})

# ---- csr (hw/lib/csr.py): widths of power-of-two spans, text layout, zero-width parts ----
EQUIVALENT.update({
    ("hw/lib/csr.py", 'object.__setattr__(self, "addr_width", (words - 1).bit_length())',
     "1 -> 2"):
        "words is a power of two of at least 32 (the header at word 16 or above, 4 words): "
        "words - 1 and words - 2 have the same bit length",
    ("hw/lib/csr.py", 'object.__setattr__(self, "addr_width", (spans[-1][1] - 1).bit_length())',
     "1 -> 2"):
        "the last part ends at base + words, base a multiple of words >= 32: a multiple of "
        "32, so end - 1 and end - 2 have the same bit length",
    **{("hw/lib/csr.py", "lines += reg_text(r, indent + 4) + [", desc):
       "the indentation of the per-flow registers in the generated SystemRDL text: "
       "whitespace the compiler ignores (the compiled map is the same)"
       for desc in ("4 -> 3", "4 -> 5")},
    ("hw/lib/csr.py", "if len(word) <= aw:", "<= -> <"):
        "at len(word) == aw the other arm gives word[:aw] (the word) and word[aw:] (no bits) "
        "== base >> aw, 1 for the only window that fills the port (at base 0)",
    ("hw/lib/csr.py", "if f.offset > pos:", "> -> >="):
        "at f.offset == pos the mutant pads with Const(0, 0): zero bits, the same Cat",
    ("hw/lib/csr.py", "parts.append(v[:f.width] if len(v) >= f.width", ">= -> >"):
        "at len(v) == f.width the other arm is Cat(v, Const(0, 0)): v itself",
    **{("hw/lib/csr.py", "hi_ok = Const(1, 1) if hi == (1 << f.width) - 1 else v <= hi", desc):
       "the upper bound a field's width implies is not compared (fewer LUTs); compared "
       "anyway it is v <= 2**width - 1, always 1: the same value"
       for desc in ("1 -> 0", "1 -> 2")},
    ("hw/lib/csr.py", "fbits = max(1, (regmap.flows - 1).bit_length())", "1 -> 0"):
        "one more bit in the flow-number signals when flows is a power of two: the strobes "
        "and the read's window check compare the address's whole flow field with flows, not "
        "these signals, and a flow below flows has the same low bits",
})

# ---- l3qcn (hw/switch/l3qcn.py) ----
_L3QCN_FOLD = (
    "_ones_sum_tree's fold bounds: n words (n >= 10: the IPv4 header 10, the UDP sums 26 + "
    "sample_bytes / 2) give the tree bound n * 0xFFFF, whose first fold bound is max(0xFFFF, "
    "0xFFFF + n - 2) = 0xFFFF + n - 2 >= 0x10007 and second 0xFFFF")
EQUIVALENT.update({
    ("hw/switch/l3qcn.py", "while bound > 0xFFFF:", "65535 -> 65536"):
        _L3QCN_FOLD + ": 'bound > 0x10000' makes the same two folds (0x10000 itself, from "
        "n = 3 words, never occurs)",
    **{("hw/switch/l3qcn.py", "bound = max((bound & 0xFFFF) + hi, 0xFFFF + hi - 1)", desc):
       _L3QCN_FOLD + ": with 0xFFFE + hi - 1 or 0xFFFF + hi - 2 the first fold's bound is "
       "0xFFFF + n - 3 >= 0x10006 (17 bits, as before) and the second's 0xFFFE (16 bits, as "
       "0xFFFF): the same registers, the same two folds"
       for desc in ("65535 -> 65534", "1 -> 2")},
    ("hw/switch/l3qcn.py",
     "gen_base = L3QCN_CP_GEN_BASE if cfg.mode == \"roce\" else L3QCN_CP_PCNM_BASE",
     "== -> !="):
        "L3QCN_CP_GEN_BASE and L3QCN_CP_PCNM_BASE are both 0x30 (the same free window): "
        "either arm gives the same base",
    ("hw/switch/l3qcn.py",
     "length.eq(Mux(length > 0xFFFF - DB, 0xFFFF, length + nvalid))]", "> -> >="):
        "AXI-Stream: only a packet's last beat may have fewer than DB bytes, so the length "
        "before a beat is a multiple of DB (4, 8 or 16) or the saturated 0xFFFF; "
        "0xFFFF - DB is odd, never such a length: '>' and '>=' agree",
    ("hw/switch/l3qcn.py",
     "length.eq(Mux(length > 0xFFFF - DB, 0xFFFF, length + nvalid))]", "65535 -> 65534"):
        "the bound moves from 0xFFFF - DB to 0xFFFE - DB: they differ only at a length of "
        "0xFFFF - DB, odd, never a multiple of DB (the length before a beat: only the last "
        "beat is partial) nor 0xFFFF",
})

CMP_FLIP = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt,
            ast.Eq: ast.NotEq, ast.NotEq: ast.Eq}
CMP_TEXT = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==",
            ast.NotEq: "!="}
SATURATIONS = {"umin", "umax", "min", "max"}


@dataclass(frozen=True)
class Mutant:
    file: str
    line: int
    kind: str          # cmp / const / sat
    desc: str          # e.g. "< -> <="
    start: int         # character offsets of the replaced span in the file
    end: int
    text: str          # the replacement
    old: str = ""      # the replaced text (checked before the mutant is applied)

    def source_line(self, src: str) -> str:
        return src.splitlines()[self.line - 1].strip()


def _offsets(src: str) -> list[int]:
    starts, pos = [0], 0
    for ln in src.splitlines(keepends=True):
        pos += len(ln)
        starts.append(pos)
    return starts


def _span(node, starts) -> tuple[int, int]:
    return (starts[node.lineno - 1] + node.col_offset,
            starts[node.end_lineno - 1] + node.end_col_offset)


def _in_docstring_or_decl(node, parents) -> bool:
    # skip class-level and module-level code (docstrings, tables): mutate only functions
    p = parents.get(node)
    while p is not None:
        if isinstance(p, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return False
        p = parents.get(p)
    return True


def _index_or_count(node, parents) -> bool:
    """Inside a bit slice or index, or a ``range()`` argument: widths and positions, whose
    off-by-ones break elaboration or shapes rather than behaviour."""
    p, child = parents.get(node), node
    while p is not None and not isinstance(p, (ast.FunctionDef, ast.AsyncFunctionDef)):
        if isinstance(p, ast.Slice) or (isinstance(p, ast.Subscript) and child is p.slice):
            return True
        if isinstance(p, ast.Call) and isinstance(p.func, ast.Name) and p.func.id == "range":
            return True
        p, child = parents.get(p), p
    return False


def mutants_of(path: str, root: Path = ROOT) -> list[Mutant]:
    """The mutants of ``path`` (relative to ``root``: the working tree, or a copy of it)."""
    src = (root / path).read_text()
    tree = ast.parse(src)
    starts = _offsets(src)
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    out: list[Mutant] = []
    for node in ast.walk(tree):
        if _in_docstring_or_decl(node, parents):
            continue
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in CMP_FLIP:
            op = type(node.ops[0])
            a = _span(node.left, starts)[1]
            b = _span(node.comparators[0], starts)[0]
            gap = src[a:b]
            tok = CMP_TEXT[op]
            i = gap.find(tok)
            if i >= 0:
                new = CMP_TEXT[CMP_FLIP[op]]
                out.append(Mutant(path, node.lineno, "cmp", f"{tok} -> {new}", a + i,
                                  a + i + len(tok), new))
        if (isinstance(node, ast.Constant) and type(node.value) is int
                and isinstance(parents.get(node), (ast.Compare, ast.BinOp))
                and not _index_or_count(node, parents)):
            par = parents[node]
            if isinstance(par, ast.BinOp) and not isinstance(par.op, (ast.Add, ast.Sub)):
                continue
            s, e = _span(node, starts)
            for d in (1, -1):
                v = node.value + d
                if v < 0:
                    continue
                out.append(Mutant(path, node.lineno, "const", f"{node.value} -> {v}", s, e,
                                  str(v)))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.args:
            name = node.func.id
            s, e = _span(node, starts)
            first = src[slice(*_span(node.args[0], starts))]
            if name in SATURATIONS and len(node.args) == 2:
                out.append(Mutant(path, node.lineno, "sat", f"{name}(a, b) -> a", s, e,
                                  f"({first})"))
            elif name == "saturating_inc":
                out.append(Mutant(path, node.lineno, "sat", "saturating_inc(x) -> x + 1", s, e,
                                  f"({first} + 1)"))
            elif (name == "Mux" and len(node.args) == 3
                  and isinstance(node.args[0], ast.Compare)):
                # a clamp: Mux(x < lo, lo, x) / Mux(x > hi, hi, x): keep the unclamped value
                other = src[slice(*_span(node.args[2], starts))]
                out.append(Mutant(path, node.lineno, "sat", "Mux(cmp, bound, x) -> x", s, e,
                                  f"({other})"))
    out = [replace(mu, old=src[mu.start:mu.end]) for mu in out]
    out.sort(key=lambda mu: (mu.line, mu.start, mu.desc))
    return out


def apply_mutant(source: str, mu: Mutant) -> str:
    """``source`` with the mutant applied; raises if the span does not hold the text the
    mutant was made from (a copy that differs from the source the mutants were made of)."""
    if source[mu.start:mu.end] != mu.old:
        raise RuntimeError(f"{mu.file}:{mu.line}: expected {mu.old!r} at offset {mu.start}, "
                           f"found {source[mu.start:mu.end]!r}: tree copy out of date")
    return source[:mu.start] + mu.text + source[mu.end:]


def tree_files() -> list[str]:
    """The working tree's files: tracked (as they are now, edits included) and untracked but
    not ignored; tracked files deleted in the working tree are left out."""
    out = subprocess.run(["git", "ls-files", "-z", "-co", "--exclude-standard"], cwd=ROOT,
                         check=True, capture_output=True).stdout.decode()
    return sorted({f for f in out.split("\0") if f and (ROOT / f).is_file()})


def copy_tree(dest: Path) -> int:
    """Copy the working tree (:func:`tree_files`) to ``dest``; returns the number of files.
    The working tree, where others edit, is only read."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    files = tree_files()
    for f in files:
        target = dest / f
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / f, target)
    return len(files)


def _run_tests(tree: Path, tests: list[str], timeout: float) -> tuple[str, float]:
    env = dict(os.environ, PYTHONPATH=str(tree), PYTHONDONTWRITEBYTECODE="1")
    env.pop("CC_LONG", None)
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:xdist", "-p",
           "no:cacheprovider", "--rootdir", str(tree), *tests]
    t0 = time.monotonic()
    try:
        proc = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return "timeout", time.monotonic() - t0
    status = "passed" if proc.returncode == 0 else "failed"
    return status, time.monotonic() - t0


def run_mutant(tree: Path, mu: Mutant, tests: list[str], timeout: float) -> tuple[str, float]:
    """Apply ``mu`` in ``tree``, run ``tests`` there, restore the file: ``("passed" |
    "failed" | "timeout", seconds)``."""
    path = tree / mu.file
    orig = path.read_text()
    path.write_text(apply_mutant(orig, mu))
    try:
        return _run_tests(tree, tests, timeout)
    finally:
        path.write_text(orig)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.mutate", description=__doc__.split("\n")[0])
    ap.add_argument("--block", action="append", choices=sorted(BLOCKS),
                    help="mutate only this block (repeatable); default: all")
    ap.add_argument("--max", type=int, default=0, help="at most N mutants per block (a seeded "
                    "sample; 0 = all)")
    ap.add_argument("--kind", action="append", choices=["cmp", "const", "sat"],
                    help="only these mutation kinds")
    ap.add_argument("--seed", type=int, default=1, help="sampling seed for --max")
    ap.add_argument("--list", action="store_true", help="list the mutants and exit")
    ap.add_argument("--report", default=str(OUT / "report.md"))
    ap.add_argument("--tree", default=str(OUT / "tree"),
                    help="the private copy of the tree the mutants are applied in (give each "
                    "of two runs at once its own)")
    args = ap.parse_args(argv)
    blocks = args.block or sorted(BLOCKS)

    # the copy first, and the mutants made from it: a file edited meanwhile in the working
    # tree cannot shift a mutant's offsets
    tree = Path(args.tree).resolve()
    src_root = ROOT if args.list else tree
    if not args.list:
        n_files = copy_tree(tree)
    plan: dict[str, list[Mutant]] = {}
    for blk in blocks:
        files, _ = BLOCKS[blk]
        muts = [mu for f in files for mu in mutants_of(f, src_root)
                if not args.kind or mu.kind in args.kind]
        if args.max and len(muts) > args.max:
            muts = sorted(random.Random(args.seed).sample(muts, args.max),
                          key=lambda mu: (mu.file, mu.line, mu.start))
        plan[blk] = muts
    if args.list:
        for blk, muts in plan.items():
            for mu in muts:
                src = (ROOT / mu.file).read_text()
                print(f"{blk:<14} {mu.file}:{mu.line:<4} {mu.kind:<5} {mu.desc:<28} "
                      f"{mu.source_line(src)[:60]}")
        return 0

    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, text=True,
                          capture_output=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=normal"],
                           cwd=ROOT, text=True, capture_output=True).stdout.strip()
    lines = ["# Mutation report", "", f"Tree: a copy of the working tree ({n_files} files; "
             f"HEAD {head}{', with uncommitted changes' if dirty else ''}); "
             f"mutants per block: {'all' if not args.max else f'at most {args.max}'}.", "",
             "| block | mutants | killed | equivalent | surviving | kill rate | baseline s |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    detail: list[str] = []
    total_survivors = 0
    for blk, muts in plan.items():
        files, tests = BLOCKS[blk]
        tests = [t for t in tests if (tree / t.split("::")[0]).exists()]
        if not tests:       # pytest with no argument would run the whole suite
            print(f"{blk}: none of its tests exists; skipped", flush=True)
            lines.append(f"| {blk} | - | - | - | - | no tests | 0 |")
            continue
        status, base_s = _run_tests(tree, tests, 900)
        if status != "passed":
            print(f"{blk}: the unmutated tests do not pass ({status}); skipped", flush=True)
            lines.append(f"| {blk} | - | - | - | - | baseline {status} | {base_s:.0f} |")
            continue
        timeout = 3 * base_s + 30
        killed, equivalent, survivors = 0, [], []
        for n, mu in enumerate(muts, 1):
            status, secs = run_mutant(tree, mu, tests, timeout)
            srcline = mu.source_line((tree / mu.file).read_text())
            key = (mu.file, srcline, mu.desc)
            if status == "passed":
                if key in EQUIVALENT:
                    equivalent.append((mu, srcline, EQUIVALENT[key]))
                    verdict = "equivalent"
                else:
                    survivors.append((mu, srcline))
                    verdict = "SURVIVED"
            else:
                killed += 1
                verdict = f"killed ({status})"
            print(f"[{blk} {n}/{len(muts)}] {mu.file}:{mu.line} {mu.kind} {mu.desc}: "
                  f"{verdict} {secs:.0f} s", flush=True)
        live = len(muts) - len(equivalent)
        rate = f"{100 * killed / live:.0f} %" if live else "-"
        lines.append(f"| {blk} | {len(muts)} | {killed} | {len(equivalent)} | "
                     f"{len(survivors)} | {rate} | {base_s:.0f} |")
        total_survivors += len(survivors)
        if survivors or equivalent:
            detail += ["", f"## {blk}", "", f"Tests: {', '.join(tests)}", ""]
        for mu, srcline in survivors:
            detail.append(f"- SURVIVED `{mu.file}:{mu.line}` {mu.kind} `{mu.desc}`: "
                          f"`{srcline}`")
        for mu, srcline, why in equivalent:
            detail.append(f"- equivalent `{mu.file}:{mu.line}` {mu.kind} `{mu.desc}`: "
                          f"`{srcline}` ({why})")
    report = Path(args.report)
    report.parent.mkdir(parents=True, exist_ok=True)
    report.write_text("\n".join(lines + detail) + "\n")
    print(f"report: {report}; {total_survivors} surviving non-equivalent mutant(s)")
    return 1 if total_survivors else 0


if __name__ == "__main__":
    sys.exit(main())
