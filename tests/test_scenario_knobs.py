"""Every knob a user would sweep is reachable from a scenario (TOML and ``run --param``), a swept
knob moves the outcome the expected way (QCN's R_AI; the switches' LFSR seed), and the
topology's ``base_rtt`` gives the link delay and the printed RTT/BDP of every path, the
expected values worked out by hand below."""

from __future__ import annotations

import json
import textwrap

import pytest

from sim.__main__ import main
from sim.scenario import config, runner
from sim.scenario.fields import ScenarioError

# --------------------------------------------------------------------------------------------
# Every knob of issue #15's list, by the key that sets it
# --------------------------------------------------------------------------------------------

BASE = {"name": "k", "duration_us": 100, "algorithms": ["dctcp"],
        "topology": {"kind": "dumbbell", "senders": 2},
        "workload": [{"name": "long", "kind": "long"}]}

#: (what the issue calls it, key path, a value other than the default, the field and its value)
KNOBS = [
    # DCQCN: g, alpha/increase/decrease timers, byte counter, F, R_AI, R_HAI, rates, switches
    ("DCQCN g", "algo.dcqcn.dce_tcp_g", 1000, "dce_tcp_g", 1000),
    ("DCQCN alpha timer", "algo.dcqcn.dce_tcp_rtt", 2, "dce_tcp_rtt", 2.0),
    ("DCQCN increase timer", "algo.dcqcn.rpg_time_reset", 55, "rpg_time_reset", 55.0),
    ("DCQCN decrease timer", "algo.dcqcn.rate_reduce_monitor_period", 8,
     "rate_reduce_monitor_period", 8.0),
    ("DCQCN byte counter", "algo.dcqcn.rpg_byte_reset", 65536, "rpg_byte_reset", 65536),
    ("DCQCN F", "algo.dcqcn.rpg_threshold", 3, "rpg_threshold", 3),
    ("DCQCN R_AI", "algo.dcqcn.rpg_ai_rate", 40, "rpg_ai_rate", 40),
    ("DCQCN R_HAI", "algo.dcqcn.rpg_hai_rate", 400, "rpg_hai_rate", 400),
    ("DCQCN min rate", "algo.dcqcn.rpg_min_rate", 100, "rpg_min_rate", 100),
    ("DCQCN max rate", "algo.dcqcn.rpg_max_rate", 50000, "rpg_max_rate", 50000),
    ("DCQCN initial rate", "algo.dcqcn.rate_to_set_on_first_cnp", 20000,
     "rate_to_set_on_first_cnp", 20000),
    ("DCQCN initial alpha", "algo.dcqcn.initial_alpha_value", 512, "initial_alpha_value", 512),
    ("DCQCN profile", "algo.dcqcn.profile", "connectx", "profile", "connectx"),
    ("DCQCN alpha mode", "algo.dcqcn.alpha_mode", "on_cnp", "alpha_mode", "on_cnp"),
    ("DCQCN cut mode", "algo.dcqcn.cut_mode", "every_cnp", "cut_mode", "every_cnp"),
    ("DCQCN increase rule", "algo.dcqcn.increase_rule", "ns3", "increase_rule", "ns3"),
    ("DCQCN HAI step", "algo.dcqcn.hai_step", "linear1", "hai_step", "linear1"),
    ("DCQCN clamp rule", "algo.dcqcn.clamp_rule", "always", "clamp_rule", "always"),
    ("DCQCN alpha before cut", "algo.dcqcn.alpha_before_cut", True, "alpha_before_cut", True),
    ("DCQCN BC reload", "algo.dcqcn.bc_reload_on_clamp_only", True, "bc_reload_on_clamp_only",
     True),
    ("DCQCN halve in hyper", "algo.dcqcn.halve_in_hyper", True, "halve_in_hyper", True),
    ("DCQCN rt guard", "algo.dcqcn.rt_guard", True, "rt_guard", True),
    # QCN: CP Q_eq, w, sample base, jitter; RP Gd, BC limit, timer, R_AI, R_HAI, F, min rate
    ("QCN Q_eq", "algo.qcn.q_eq_kb", 50, "q_eq_bytes", 50_000),
    ("QCN w", "algo.qcn.w", 4, "w", 4),
    ("QCN sample base", "algo.qcn.sample_base_kb", 76.8, "sample_base_bytes", 76_800),
    ("QCN CP jitter", "algo.qcn.cp_jitter", 0, "cp_jitter", 0.0),
    ("QCN Gd", "algo.qcn.gd", 8, "gd", 8),
    ("QCN min decrease factor", "algo.qcn.min_dec_fac", 0.25, "min_dec_fac", 0.25),
    ("QCN BC limit", "algo.qcn.byte_reset", 100_000, "byte_reset", 100_000),
    ("QCN timer", "algo.qcn.time_reset_ms", 1, "time_reset_us", 1000.0),
    ("QCN R_AI", "algo.qcn.ai_rate_mbps", 100, "ai_rate_mbps", 100.0),
    ("QCN R_HAI", "algo.qcn.hai_rate_gbps", 1, "hai_rate_mbps", 1000.0),
    ("QCN F", "algo.qcn.threshold", 3, "threshold", 3),
    ("QCN min rate", "algo.qcn.min_rate_mbps", 100, "min_rate_mbps", 100.0),
    ("QCN TR guard", "algo.qcn.tr_guard", False, "tr_guard", False),
    ("QCN RP jitter", "algo.qcn.rp_jitter", 0.15, "rp_jitter", 0.15),
    # LDCP: alpha, beta, gamma, IW, the transport's BDP, K
    ("LDCP alpha", "algo.ldcp.alpha", 0.5, "alpha", 0.5),
    ("LDCP beta", "algo.ldcp.beta", 0.25, "beta", 0.25),
    ("LDCP gamma", "algo.ldcp.gamma", 0.25, "gamma", 0.25),
    ("LDCP IW", "algo.ldcp.iw", 20, "iw", 20),
    ("LDCP BDP", "algo.ldcp.bdp", 40, "bdp", 40.0),
    ("LDCP ACK delay", "algo.ldcp.ack_delay_us", 1, "ack_delay_ns", 1000),
    ("LDCP K", "algo.ldcp.k_kb", 150, "k_bytes", 150_000),
    # DCTCP: g, K, initial window, ACK policy, min RTO
    ("DCTCP g", "algo.dctcp.shift_g", 5, "shift_g", 5),
    ("DCTCP K", "algo.dctcp.k_kb", 30, "k_bytes", 30_000),
    ("DCTCP IW", "algo.dctcp.init_cwnd", 4, "init_cwnd", 4),
    ("DCTCP ACK policy", "algo.dctcp.ack_every", 2, "ack_every", 2),
    ("DCTCP min RTO", "algo.dctcp.min_rto_ms", 200, "min_rto_ns", 200_000_000),
]


@pytest.mark.parametrize("what,key,value,field,expect", KNOBS, ids=[k[0] for k in KNOBS])
def test_every_knob_of_the_issue_is_a_scenario_key(what, key, value, field, expect, tmp_path):
    """Set in the file (TOML) and with ``run --param`` (the same override path as sweep)."""
    algo = key.split(".")[1]
    default = getattr(config.from_dict(BASE).params[algo], field)
    assert default != expect, f"{what}: pick a value other than the default"
    path = tmp_path / "k.toml"
    path.write_text(textwrap.dedent(f"""
        duration_us = 100
        algorithms = ["dctcp"]
        [topology]
        kind = "dumbbell"
        senders = 2
        [{key.rsplit('.', 1)[0]}]
        {key.rsplit('.', 1)[1]} = {json.dumps(value)}
        [[workload]]
        name = "long"
        kind = "long"
    """))
    assert getattr(config.load(str(path)).params[algo], field) == expect
    scn = config.load(str(path), {key: config.parse_value(json.dumps(value))})
    assert getattr(scn.params[algo], field) == expect


def test_lfsr_seed_is_a_switch_key():
    scn = config.from_dict({**BASE, "switch": {"lfsr_seed": 12}})
    assert scn.switch.lfsr_seed == 12
    assert config.from_dict(BASE).switch.lfsr_seed is None


@pytest.mark.parametrize("table,key,expect", [
    # an unknown key names every valid key of its table, in one line
    ({"algo": {"qcn": {"r_ai": 5}}}, "algo.qcn.r_ai = 5: unknown key; allowed keys: q_eq_{",
     ("ai_rate_{bps|mbps|gbps}", "threshold", "sample_base_{bytes|kb|mb}", "rp_jitter")),
    ({"switch": {"lfsr": 5}}, "switch.lfsr = 5: unknown key; allowed keys: ", ("lfsr_seed",)),
    ({"lfsr_seed": 5}, "lfsr_seed = 5: unknown key; allowed keys: name, ",
     ("seed", "replications", "topology", "switch", "algo", "workload")),
    ({"algo": {"ldcp": {"BDP": 5}}}, "algo.ldcp.BDP = 5: unknown key; allowed keys: ",
     ("bdp", "ack_delay_{ps|ns|us|ms}", "iw")),
    ({"topology": {"kind": "chain", "rtt_us": 5}}, "topology.rtt_us = 5: unknown key",
     ("base_rtt_{ps|ns|us|ms}", "hop_delay_{ps|ns|us|ms}")),
    # a bad value names the scenario's key and its own range
    ({"algo": {"qcn": {"cp_jitter": 0.7}}}, "algo.qcn.cp_jitter = 0.7: QcnParams.cp_jitter = "
     "0.7 is out of range: allowed 0.0 <= cp_jitter <= 0.5", ()),
    ({"algo": {"qcn": {"q_eq_kb": 0}}}, "algo.qcn.q_eq_kb = 0: QcnParams.q_eq_bytes = 0", ()),
    ({"algo": {"qcn": {"threshold": 0}}}, "algo.qcn.threshold = 0: QcnParams.threshold = 0", ()),
    ({"algo": {"qcn": {"tr_guard": 1}}}, "algo.qcn.tr_guard = 1: expected true or false", ()),
    ({"algo": {"ldcp": {"bdp": 0.5}}}, "algo.ldcp.bdp = 0.5: LdcpParams.bdp = 0.5", ()),
    ({"switch": {"lfsr_seed": -1}}, "switch.lfsr_seed = -1: SwitchConfig.lfsr_seed = -1", ()),
])
def test_bad_knobs_are_one_line_naming_the_key(table, key, expect):
    raw = {**BASE, **table}
    if "topology" in table:
        raw["topology"] = {**table["topology"]}
    with pytest.raises(ScenarioError) as e:
        config.from_dict(raw, "<s>")
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith("<s>: ") and key in msg, msg
    for name in expect:
        assert name in msg, (name, msg)


# --------------------------------------------------------------------------------------------
# A swept knob moves the outcome: QCN's R_AI
# --------------------------------------------------------------------------------------------

QCN_TWO_FLOWS = """
    name = "qcn_knob"
    duration_us = 1000
    sample_us = 5
    algorithms = ["qcn"]

    [topology]
    kind = "dumbbell"
    senders = 2
    rate_gbps = 100
    delay_us = 1

    [[workload]]
    name = "long"
    kind = "long"
"""


def test_qcn_ai_rate_from_the_command_line_speeds_recovery(tmp_path, capsys):
    """Two QCN flows cut by the congestion point recover at R_AI per increase step (active
    increase): R_AI = 2 Gb/s brings them back to the link rate much sooner than 50 Mb/s, so the
    link is busier over the run."""
    path = tmp_path / "q.toml"
    path.write_text(textwrap.dedent(QCN_TWO_FLOWS))
    util = {}
    for ai in (50, 2000):
        out_dir = tmp_path / f"ai{ai}"
        assert main(["run", str(path), "--out", str(out_dir), "--quiet", "--no-plots",
                     "--param", f"algo.qcn.ai_rate_mbps={ai}"]) == 0
        summary = json.loads((out_dir / "qcn_knob" / "summary.json").read_text())
        assert summary["scenario"]["file"]["algo"]["qcn"]["ai_rate_mbps"] == ai
        util[ai] = summary["runs"]["qcn"]["metrics"]["headline"]["utilization"]
    capsys.readouterr()
    assert util[2000] > util[50] + 0.05, util


def test_qcn_set_point_sets_the_queue():
    """The congestion point's feedback is zero at Q_eq: the standing queue follows the set
    point (measured 45 KB at p99 with Q_eq = 10 KB, 244 KB with 100 KB)."""
    raw = {"name": "q", "duration_us": 1000, "sample_us": 5, "algorithms": ["qcn"],
           "topology": {"kind": "dumbbell", "senders": 2, "rate_gbps": 100, "delay_us": 1},
           "workload": [{"name": "long", "kind": "long"}]}
    peak = {}
    for q_eq in (10, 100):
        scn = config.from_dict({**raw, "algo": {"qcn": {"q_eq_kb": q_eq}}})
        (series,) = runner.run(scn, "qcn").result.queue_series.values()
        peak[q_eq] = max(series)
    assert peak[10] < 100_000 < peak[100], peak


# --------------------------------------------------------------------------------------------
# The switches' LFSR seed
# --------------------------------------------------------------------------------------------

RED_INCAST = {
    "name": "red", "seed": 3, "duration_us": 120, "sample_us": 5, "algorithms": ["dcqcn"],
    "topology": {"kind": "dumbbell", "senders": 8, "rate_gbps": 100, "delay_us": 1},
    "switch": {"queue_kb": 400, "buffer_kb": 800},
    # RED marking with p_max 1 from 5 KB: every mark is a draw of the marker's LFSR
    "algo": {"dcqcn": {"kmin_kb": 5, "kmax_kb": 200, "pmax": 1.0}},
    "workload": [{"name": "burst", "kind": "incast", "size_kb": 100}],
}


def red_run(lfsr_seed=None, seed=3):
    raw = {**RED_INCAST, "seed": seed,
           "switch": {**RED_INCAST["switch"],
                      **({} if lfsr_seed is None else {"lfsr_seed": lfsr_seed})}}
    return runner.run(config.from_dict(raw), "dcqcn").result


def test_lfsr_seed_moves_the_marks_and_reproduces_a_run():
    """The same LFSR seed gives the same run event for event; another one other marks (and so
    other CNPs and finish times) with the same flows; ``lfsr_seed`` equal to the run's seed is
    the default (the switches' seeds are drawn from it)."""
    a, b, c = red_run(11), red_run(11), red_run(12)
    assert a.counters["marks"] > 100
    assert a == b
    assert [(f.src, f.dst, f.size_bytes, f.start_ps) for f in a.flows] == \
        [(f.src, f.dst, f.size_bytes, f.start_ps) for f in c.flows]
    assert a.counters["marks"] != c.counters["marks"] or a.queue_series != c.queue_series
    assert [f.finish_ps for f in a.flows] != [f.finish_ps for f in c.flows]
    assert red_run(None, seed=3) == red_run(3, seed=3)


def test_lfsr_seed_seeds_the_switches_only():
    """Markers and QCN congestion points take their seeds from ``lfsr_seed`` as they would from
    a run of that seed; ECMP and the reaction points keep the run's seed."""
    from sim.net.algorithms import QcnParams
    from sim.net.network import FlowSpec, Network, SwitchConfig
    from sim.net.topology import leaf_spine

    def seeds(seed, lfsr_seed=None):
        net = Network("qcn", QcnParams(), SwitchConfig(lfsr_seed=lfsr_seed), seed=seed)
        topo = leaf_spine(net, leaves=2, spines=2, hosts_per_leaf=2)
        hosts = topo.groups["all"]
        net.add_flow(FlowSpec(0, hosts[0], hosts[-1], 1000))
        return ([sw.marker.lfsr_state for sw in net.switches],
                [p.cp.lfsr for sw in net.switches for p in sw.ports],
                net.sender(0).rp.lfsr, net.ecmp_hash(0, False, 0))

    run1, run9, run1_lfsr9 = seeds(1), seeds(9), seeds(1, 9)
    assert run1_lfsr9[:2] == run9[:2] != run1[:2]
    assert run1_lfsr9[2:] == run1[2:] != run9[2:]


# --------------------------------------------------------------------------------------------
# base_rtt: the link delay, and the RTT and BDP printed for every path
# --------------------------------------------------------------------------------------------


def topology(**table):
    one = [{"name": "one", "kind": "long", "src": "all[0]", "dst": "all[1]"}]
    return config.from_dict({**BASE, "topology": table, "workload": one}).topology


def test_base_rtt_gives_the_link_delay():
    # dumbbell: sender -> switch -> receiver, 2 links, 4 crossings a round trip: 8 / 4 = 2 us
    assert topology(kind="dumbbell", base_rtt_us=8).delay_ps == 2_000_000
    # chain of 3 switches: 4 links, 8 crossings: 1 us; of 4 switches with hop_delay 0.5 us:
    # the 3 inter-switch links take 2 x 1.5 us, the host links share 8 - 3 = 5 us: 1.25 us
    assert topology(kind="chain", switches=3, base_rtt_us=8).delay_ps == 1_000_000
    t = topology(kind="chain", switches=4, base_rtt_us=8, hop_delay_ns=500)
    assert (t.delay_ps, t.hop_delay_ps) == (1_250_000, 500_000)
    # leaf-spine: leaf -> spine -> leaf, 4 links: 8 / 8 = 1 us; one leaf: 2 links, 2 us
    assert topology(kind="leaf_spine", base_rtt_us=8).delay_ps == 1_000_000
    assert topology(kind="leaf_spine", leaves=1, base_rtt_us=8).delay_ps == 2_000_000
    # rounded to the picosecond: 10 us / 12 crossings (chain of 5) = 833,333.3 ps
    assert topology(kind="chain", switches=5, base_rtt_us=10).delay_ps == 833_333
    # both, agreeing; neither: 1 us
    assert topology(kind="dumbbell", base_rtt_us=8, delay_us=2).delay_ps == 2_000_000
    assert topology(kind="dumbbell").delay_ps == 1_000_000


@pytest.mark.parametrize("table,expect", [
    ({"kind": "dumbbell", "base_rtt_us": 8, "delay_us": 1},
     "topology.base_rtt_us = 8: base_rtt (8 us) and delay (1 us) disagree: this base RTT over "
     "the 4 link crossings of a round trip on the longest path is a delay of 2 us; give one of "
     "them"),
    ({"kind": "chain", "switches": 4, "base_rtt_us": 2, "hop_delay_us": 0.5},
     "topology.base_rtt_us = 2: base_rtt (2 us) is shorter than the round trip of the 3 "
     "inter-switch link(s) of hop_delay alone (3 us)"),
    ({"kind": "leaf_spine", "base_rtt_us": 0},
     "topology.base_rtt_us = 0: LeafSpineTopology.base_rtt_ps = 0 is out of range"),
])
def test_base_rtt_errors(table, expect):
    one = [{"name": "one", "kind": "long", "src": "all[0]", "dst": "all[1]"}]
    with pytest.raises(ScenarioError) as e:
        config.from_dict({**BASE, "topology": table, "workload": one}, "<s>")
    assert str(e.value).startswith(f"<s>: {expect}"), str(e.value)


def test_paths_print_rtt_and_bdp_by_hand():
    """Dumbbell at 100 Gb/s, base_rtt 8 us, MTU 1000 B.  Propagation 8 us.  Store-and-forward:
    a 1000 B packet is 80 ns at 100 Gb/s, at each of 2 hops out; a 64 B ACK 5.12 ns at each of
    2 hops back: 170.24 ns.  RTT 8.17024 us; BDP 100e9 x 8.17024e-6 / 8 = 102,128 B.  256
    senders: one line."""
    scn = config.from_dict({**BASE, "topology": {"kind": "dumbbell", "senders": 256,
                                                 "base_rtt_us": 8}})
    (g,) = runner.paths(scn)
    assert (g.flows, g.links, g.propagation_ps, g.base_rtt_ps) == (256, 2, 8_000_000, 8_170_240)
    assert g.pairs == (("senders", "receivers"),) and g.bdp_bytes == pytest.approx(102_128)
    header, line = runner.path_lines([g])
    assert "propagation out and back + store-and-forward of a 1000 B packet per hop out" in header
    assert line == ("  senders -> receivers (256 flows, 2 links): RTT 8.170 us (8.000 "
                    "propagation + 0.170 store-and-forward), BDP 102,128 B = 102.1 packets at "
                    "100 Gb/s")


def test_paths_slowest_link_and_two_path_lengths():
    """Receivers at 25 Gb/s: out 80 + 320 ns, back (an ACK at 25 then 100 Gb/s) 20.48 + 5.12
    ns: 425.6 ns; RTT 4.4256 us at delay 1 us; BDP at 25 Gb/s 13,830 B.  Leaf-spine, two
    leaves, 1 us links, 100 Gb/s: inter-leaf 4 links, 8 us + 4 x 85.12 ns = 8.34048 us, BDP
    104,256 B; in-leaf 2 links, 4.17024 us, 52,128 B."""
    scn = config.from_dict({**BASE, "topology": {"kind": "dumbbell", "senders": 3,
                                                 "receiver_rate_gbps": 25}})
    (g,) = runner.paths(scn)
    assert (g.base_rtt_ps, g.rate_bps) == (4_425_600, 25 * 10**9)
    assert round(g.bdp_bytes) == 13_830
    scn = config.from_dict({**BASE, "topology": {"kind": "leaf_spine", "leaves": 2,
                                                 "hosts_per_leaf": 2},
                            "workload": [{"name": "x", "kind": "long", "src": "leaf0[0:2]",
                                          "dst": "leaf1[0]"},
                                         {"name": "y", "kind": "long", "src": "leaf1[1]",
                                          "dst": "leaf1[0]"}]})
    inter, intra = runner.paths(scn)
    assert (inter.flows, inter.links, inter.base_rtt_ps, round(inter.bdp_bytes)) == \
        (2, 4, 8_340_480, 104_256)
    assert inter.pairs == (("leaf0", "leaf1"),)
    assert (intra.flows, intra.links, intra.base_rtt_ps, round(intra.bdp_bytes)) == \
        (1, 2, 4_170_240, 52_128)


def test_run_prints_the_paths_before_simulating(tmp_path, capsys, monkeypatch):
    path = tmp_path / "p.toml"
    path.write_text(textwrap.dedent(QCN_TWO_FLOWS).replace("delay_us = 1", "base_rtt_us = 8"))

    def stop(*args, **kwargs):
        raise KeyboardInterrupt
    monkeypatch.setattr(runner, "run", stop)
    assert main(["run", str(path), "--out", str(tmp_path / "o"), "--quiet"]) == 130
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("paths (base RTT = propagation")
    assert out[1].startswith("  senders -> receivers (2 flows, 2 links): RTT 8.170 us")
