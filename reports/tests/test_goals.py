"""Verdicts against goals: profile targets and suite declarations judged on a run's records,
with peers beside ours and repetitions making a result inconclusive."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from reports.goals import (GoalError, declared_goals, evaluate_goals, judge_interval,
                           load_suite_goals, parse_condition, verdict_counts)
from reports.html import render_run_index
from reports.noise import Spread, metric_spread
from reports.results import ResultWriter
from reports.tests.sample import BASE_PROVENANCE, write_session

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def _writer(run_dir: Path) -> ResultWriter:
    return ResultWriter(run_dir, BASE_PROVENANCE)


def _decl(tmp_path: Path, suite: str, text: str) -> Path:
    d = tmp_path / "suites" / suite
    d.mkdir(parents=True, exist_ok=True)
    (d / "report.yaml").write_text(text)
    return tmp_path / "suites"


def _profile(tmp_path: Path, text: str) -> Path:
    d = tmp_path / "profiles"
    d.mkdir(exist_ok=True)
    (d / "local.yaml").write_text(text)
    return d


def _judge(tmp_path, records_dir, suites_dir, profiles_dir=None):
    from reports.results import load_results
    declared = declared_goals(records_dir, "local", suites_dir,
                              profiles_dir or tmp_path / "none", snapshot=False)
    return evaluate_goals(load_results(records_dir), declared)


def test_conditions_parse_and_bad_ones_name_the_place():
    assert parse_condition(">= 20") == (">=", 20.0, None)
    assert parse_condition("<=0.30") == ("<=", 0.30, None)
    assert parse_condition(">= 1.0 x ovs-dpdk") == (">=", 1.0, "ovs-dpdk")
    with pytest.raises(GoalError, match=r"x.yaml: goals\[0\].*'at least 20'"):
        parse_condition("at least 20", "x.yaml: goals[0]")


def test_malformed_declaration_names_file_and_key(tmp_path):
    suites = _decl(tmp_path, "vmwire", "goals:\n  - id: a\n    record: r\n")
    with pytest.raises(GoalError, match=r"vmwire/report.yaml:2: goals\[0\].conditions: required"):
        load_suite_goals(suites)
    _decl(tmp_path, "vmwire", "goals:\n  - id: a\n    record: r\n    conditon: {x: '>= 1'}\n")
    with pytest.raises(GoalError, match="unknown key"):
        load_suite_goals(suites)


def test_the_repos_own_declarations_load():
    goals = load_suite_goals()
    by = {(g["suite"], g["id"]) for g in goals}
    # the goals the issues state, in one data place per suite
    assert ("controller", "beat_document") in by
    assert ("conformance", "of13_full") in by
    assert ("vmwire", "vhost_vs_kernel") in by


def test_interval_verdicts():
    one = Spread(0.28, 0.28, 0.28, 1)
    assert judge_interval(one, "<=", 0.30) == "met"
    assert judge_interval(Spread(0.31, 0.31, 0.31, 1), "<=", 0.30) == "missed"
    assert judge_interval(Spread(0.29, 0.27, 0.34, 5), "<=", 0.30) == "inconclusive"
    assert judge_interval(Spread(0.25, 0.20, 0.29, 5), "<=", 0.30) == "met"
    assert judge_interval(Spread(0.33, 0.31, 0.36, 5), "<=", 0.30) == "missed"
    assert judge_interval(None, "<=", 0.30) == "not measured"


def test_met_missed_peer_ratio_and_not_measured(tmp_path):
    run = tmp_path / "run"
    w = _writer(run)
    for kind, ratio, mbps in (("ofbench", 21.4, 5000.0), ("ovs-dpdk", 28.2, 6000.0)):
        w.write("vmwire", "vhost_vs_kernel", {"throughput_ratio": ratio, "ctx_ratio": 0.2,
                                              "vhost_user_mbps": mbps}, {},
                {"dut_switch_kind": kind})
    suites = _decl(tmp_path, "vmwire", """
goals:
  - {id: tput, record: vhost_vs_kernel, conditions: {throughput_ratio: ">= 20"}}
  - {id: ctx, record: vhost_vs_kernel, conditions: {throughput_ratio: ">= 20", ctx_ratio: "<= 0.1"}}
  - {id: rel, record: vhost_vs_kernel, conditions: {vhost_user_mbps: ">= 1.0 x ovs-dpdk"}}
  - {id: gone, record: qemu_vhost_user, conditions: {iperf_mbps: ">= 1"}}
""")
    rows = {(r.goal, r.metric): r for r in _judge(tmp_path, run, suites)}
    tput = rows[("tput", "throughput_ratio")]
    assert (tput.verdict, tput.value, tput.switch) == ("met", 21.4, "ofbench")
    assert tput.peers[0]["switch"] == "ovs-dpdk" and tput.peers[0]["value"] == 28.2
    assert tput.peers[0]["ratio"] == pytest.approx(21.4 / 28.2)
    assert tput.evidence == "rec-vmwire-vhost_vs_kernel-ofbench"
    # a goal with one missed condition is missed as a whole
    assert rows[("ctx", "ctx_ratio")].verdict == "missed"
    assert rows[("ctx", "throughput_ratio")].goal_verdict == "missed"
    rel = rows[("rel", "vhost_user_mbps")]
    assert rel.verdict == "missed" and rel.value == pytest.approx(5000 / 6000)
    gone = rows[("gone", "iperf_mbps")]
    assert gone.verdict == "not measured" and "qemu_vhost_user" in gone.note


def test_switch_in_the_record_name_and_profile_targets_shown_once(tmp_path):
    run = tmp_path / "run"
    w = _writer(run)
    w.write("conformance", "of13_ofbench", {"ok": 991}, {}, {"dut_switch_kind": "ofbench"})
    w.write("conformance", "of13_ovs", {"ok": 697}, {}, {"dut_switch_kind": "ovs"})
    suites = _decl(tmp_path, "conformance", """
goals:
  - {id: full, text: "ok >= 981", record: "of13_{switch}", conditions: {ok: ">= 981"}}
""")
    profiles = _profile(tmp_path, "switch: {kind: ofbench}\ntargets:\n  conformance:\n"
                                  "    of13_ofbench: {ok: '>= 981', required_ok: '>= 276'}\n")
    rows = _judge(tmp_path, run, suites, profiles)
    ok_rows = [r for r in rows if r.metric == "ok"]
    assert len(ok_rows) == 1, "the profile's target and the suite's goal are one row"
    r = ok_rows[0]
    assert (r.verdict, r.record, r.peers[0]["switch"], r.peers[0]["value"]) == \
        ("met", "of13_ofbench", "ovs", 697)
    assert "profile local" in r.source
    req = next(r for r in rows if r.metric == "required_ok")
    assert req.verdict == "not measured"


def test_repetitions_make_a_result_inconclusive(tmp_path):
    """Issue 17: a single number hid a 0.27-0.34 range; a spread over the bound is not met."""
    run = tmp_path / "run"
    w = _writer(run)
    for v in (0.27, 0.29, 0.34, 0.28, 0.31):
        w.write("controller", "random_20pat_8thr_naive_proc_strict",
                {"high_ratio": v, "low_ratio": 0.9}, {}, {"dut_switch_kind": "ovs"})
    suites = _decl(tmp_path, "controller", """
goals:
  - id: beat
    record: random_20pat_8thr_naive_proc_strict
    switch: any
    conditions: {high_ratio: "<= 0.30", low_ratio: "<= 1.02"}
""")
    rows = {r.metric: r for r in _judge(tmp_path, run, suites)}
    hi = rows["high_ratio"]
    assert hi.verdict == "inconclusive" and hi.goal_verdict == "inconclusive"
    assert (hi.spread["median"], hi.spread["min"], hi.spread["max"], hi.spread["n"]) == \
        (0.29, 0.27, 0.34, 5)
    assert "straddles" in hi.note
    assert rows["low_ratio"].verdict == "met"
    assert verdict_counts(list(rows.values())) == {"missed": 0, "not measured": 0,
                                                   "inconclusive": 1, "met": 0}


def test_in_record_repetitions_params_lists_and_stdev():
    rec = {"metrics": {"rx_mbps": 1200.0}, "params": {"rx_mbps_trials": [1100.0, 1200.0, 1500.0]}}
    sp = metric_spread([rec], "rx_mbps")
    assert (sp.median, sp.lo, sp.hi, sp.n, sp.kind) == (1200.0, 1100.0, 1500.0, 3, "values")
    rec = {"metrics": {"high_ms": 100.0, "high_ms_stdev": 5.0, "reps": 5}, "params": {}}
    sp = metric_spread([rec], "high_ms")
    assert (sp.lo, sp.hi, sp.kind) == (95.0, 105.0, "stdev")
    rec = {"metrics": {"high_ms": 100.0, "high_ms_stdev": 0.0}, "params": {"reps": 1}}
    assert not metric_spread([rec], "high_ms").repeated


def test_index_opens_with_the_verdicts_and_writes_verdicts_json(tmp_path):
    run = tmp_path / "run"
    w = _writer(run)
    w.write("vmwire", "vhost_vs_kernel", {"throughput_ratio": 15.7, "ctx_ratio": 0.05},
            {}, {"dut_switch_kind": "ofbench"})
    write_session(run)
    text = render_run_index(run).read_text()
    assert text.index('id="verdicts"') < text.index('id="suite-vmwire"')
    assert 'href="#rec-vmwire-vhost_vs_kernel-ofbench"' in text
    assert 'id="rec-vmwire-vhost_vs_kernel-ofbench"' in text
    data = json.loads((run / "verdicts.json").read_text())
    v = next(r for r in data["verdicts"] if r["metric"] == "throughput_ratio")
    assert (v["verdict"], v["value"], v["target"]) == ("missed", 15.7, ">= 20")
    assert data["counts"]["missed"] >= 1
    # the declarations are snapshotted: a re-render judges against the same goals
    snap = json.loads((run / "goals.json").read_text())
    assert any(g["id"] == "vhost_vs_kernel" for g in snap["goals"])


def test_a_real_run_is_judged(tmp_path):
    import shutil
    run = tmp_path / "run-20261123T231957Z-c1a5"
    shutil.copytree(FIXTURES / run.name, run)
    render_run_index(run)
    data = json.loads((run / "verdicts.json").read_text())
    met = {(r["suite"], r["goal"]) for r in data["verdicts"] if r["verdict"] == "met"}
    assert ("conformance", "of13_required") in met
    assert ("vmwire", "tenants_isolated") in met


def test_a_profile_given_by_path_is_judged_from_the_records_misses(tmp_path):
    """The profile file is not in dut/profiles (given by path): its targets are known where
    the harness wrote a miss, and the page says so."""
    run = tmp_path / "run"
    w = _writer(run)
    w.write("throughput", "ndr_64b_1flows", {"ndr_mpps": 3.1}, {},
            {"dut_switch_kind": "ofbench", "profile": "mylab"},
            target_misses=[{"metric": "ndr_mpps", "target": ">= 14.0", "value": 3.1,
                            "message": "ndr_mpps = 3.1, target >= 14.0"}])
    write_session(run, profile="mylab")
    text = render_run_index(run).read_text()
    assert "profile mylab not found" in text
    data = json.loads((run / "verdicts.json").read_text())
    row = next(r for r in data["verdicts"] if r["metric"] == "ndr_mpps")
    assert (row["verdict"], row["target"], row["value"]) == ("missed", ">= 14.0", 3.1)
