"""`python -m reports compare RUN_A RUN_B`: metrics that moved beyond their noise band, by the
nightly trend's rule, across commits and across labs."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from reports.__main__ import main
from reports.compare import compare_records, compare_runs, write_compare_page
from reports.results import ResultWriter
from reports.tests.sample import BASE_PROVENANCE
from reports.trend import judge

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def _run(path: Path, records: list[tuple], **prov) -> Path:
    w = ResultWriter(path, {**BASE_PROVENANCE, **prov})
    for suite, name, metrics, over in records:
        w.write(suite, name, metrics, {}, over)
    return path


def _rows(a, b):
    from reports.results import load_results
    return {(r.name, r.switch, r.metric): r for r in compare_records(load_results(a),
                                                                     load_results(b))}


def test_direction_and_noise_band_from_repetitions(tmp_path):
    kind = {"dut_switch_kind": "ofbench"}
    a = _run(tmp_path / "a", [("throughput", "ndr", {"ndr_mpps": v, "latency_p99_us": 40.0,
                                                     "tx_pkts": 1000}, kind)
                              for v in (5.0, 5.5, 4.6, 5.2, 4.9)])
    b = _run(tmp_path / "b", [("throughput", "ndr", {"ndr_mpps": v, "latency_p99_us": 60.0,
                                                     "tx_pkts": 2000}, kind)
                              for v in (5.3, 4.8, 5.4)])
    rows = _rows(a, b)
    ndr = rows[("ndr", "ofbench", "ndr_mpps")]
    # a 5 % move inside a ±10 % spread of repetitions is noise, not a change
    assert ndr.verdict == "same" and ndr.a["n"] == 5 and ndr.b["n"] == 3
    assert rows[("ndr", "ofbench", "latency_p99_us")].verdict == "worse"
    assert rows[("ndr", "ofbench", "tx_pkts")].verdict == "changed"   # no better direction


def test_the_band_is_the_trends_rule(tmp_path):
    """compare and the nightly trend share reports.trend.judge: same values, same verdict."""
    a = _run(tmp_path / "a", [("s", "r", {"rx_mpps": v}, {}) for v in (10.0, 10.4, 9.8)])
    b = _run(tmp_path / "b", [("s", "r", {"rx_mpps": 8.0}, {})])
    row = _rows(a, b)[("r", "ovs", "rx_mpps")]
    j = judge(8.0, [10.0, 10.4, 9.8], 1, min_history=1)
    assert (row.verdict, row.band) == ("worse", j.band) and j.verdict == "regression"


def test_across_labs_pairs_the_same_switch_measured_by_another_generator(tmp_path):
    a = _run(tmp_path / "a", [("throughput", "links_ndr_64b_1flows", {"ndr_mpps": v},
                               {"dut_switch_kind": "ofbench", "generator": "softgen"})
                              for v in (0.097, 0.095, 0.099)], profile="lab-emu")
    b = _run(tmp_path / "b", [("throughput", "links_ndr_64b_1flows", {"ndr_mpps": v},
                               {"dut_switch_kind": "ofbench", "generator": "trex"})
                              for v in (0.047, 0.049, 0.046)]
             + [("smoke", "ping", {"ok": True}, {})], profile="lab-emu-trex")
    cmp = compare_runs(a, b)
    row = next(r for r in cmp.rows if r.metric == "ndr_mpps")
    assert row.verdict == "worse" and row.context == "generator softgen → trex"
    assert [r.verdict for r in cmp.rows if r.name == "ping"] == ["only_b"]
    assert cmp.exit_code == 1
    page = write_compare_page(cmp, tmp_path / "cmp.html").read_text()
    assert "generator softgen → trex" in page and "▼ worse" in page
    assert json.loads((tmp_path / "cmp.json").read_text())["counts"]["worse"] == 1


def test_cli_on_two_real_runs(tmp_path, capsys):
    a = FIXTURES / "run-20261123T231957Z-c1a5"
    b = FIXTURES / "run-20261123T234941Z-3d9b"
    out = tmp_path / "compare.html"
    code = main(["compare", str(a), str(b), "--out", str(out)])
    text = capsys.readouterr().out
    assert code in (0, 1) and out.is_file()
    assert "A run-20261123T231957Z-c1a5 (profile local" in text
    data = json.loads(out.with_suffix(".json").read_text())
    # the quick run A has suites B did not run: listed once per record, not per metric
    only_a = [r for r in data["rows"] if r["verdict"] == "only_a"]
    assert only_a and all(r["suite"] in ("classifier", "controller", "smoke", "throughput")
                          for r in only_a)
    assert code == (1 if data["counts"]["worse"] else 0)


def test_cli_names_a_folder_that_is_not_a_run(tmp_path, capsys):
    assert main(["compare", str(tmp_path), str(tmp_path)]) == 2
    assert "no results.jsonl" in capsys.readouterr().err


def test_one_value_each_side_is_said_to_be_unknown_noise(tmp_path):
    """Not one value against another: a 10 % move with one value a side has no verdict."""
    a = _run(tmp_path / "a", [("s", "r", {"rx_mpps": 10.0}, {})])
    b = _run(tmp_path / "b", [("s", "r", {"rx_mpps": 9.0}, {})])
    cmp = compare_runs(a, b)
    assert cmp.one_value_moves() == 1 and cmp.rows[0].verdict == "unsure"
    assert cmp.exit_code == 0
    assert "noise itself is unknown" in cmp.summary()


def test_repeated_trials_get_jumpavgs_verdict(tmp_path):
    """>= 3 repetitions a side: jumpavg groups A and B; a 10 % move well outside a 1 % spread is
    worse, the same move inside a 15 % spread is within noise, a 1 % real step is below the floor."""
    def runs(a_vals, b_vals, metric="rx_mpps"):
        a = _run(tmp_path / f"a{len(list(tmp_path.iterdir()))}", [("s", "r", {metric: v}, {})
                                                                   for v in a_vals])
        b = _run(tmp_path / f"b{len(list(tmp_path.iterdir()))}", [("s", "r", {metric: v}, {})
                                                                   for v in b_vals])
        return compare_runs(a, b).rows[0]
    row = runs([10.0, 10.1, 9.9, 10.05], [9.0, 9.1, 8.95])
    assert (row.verdict, row.method) == ("worse", "jumpavg")
    assert row.change_pct == pytest.approx(-9.75, abs=0.5)
    assert runs([10.0, 10.1, 9.9], [11.0, 11.1, 10.9]).verdict == "better"
    assert runs([10.0, 8.5, 11.5, 9.0, 11.0], [9.0, 10.4, 8.2]).verdict == "same"
    assert runs([10.0, 10.01, 9.99, 10.0], [10.1, 10.11, 10.09]).verdict == "same"
    assert runs([40.0, 41.0, 40.5], [60.0, 61.0, 59.0], "latency_p99_us").verdict == "worse"


def test_jumpavg_verdict_direct():
    from reports.compare import jumpavg_verdict
    assert jumpavg_verdict([1.0, 1.01, 0.99], [1.0, 0.99, 1.01], 1)[0] == "same"
    assert jumpavg_verdict([1.0, 1.01, 0.99], [2.0, 2.02, 1.98], 0)[0] == "changed"
    assert jumpavg_verdict([-1.0, -1.01, -0.99], [-2.0, -2.02, -1.98], 1)[0] == "worse"


def test_in_record_repetitions_are_centred_on_the_stated_figure(tmp_path):
    """A record stating a mean with its repetitions in params: an unchanged mean is no move,
    whatever the repetitions' median."""
    reps = {"high_ratio_reps": [0.46, 2.15, 0.39]}
    for d in ("a", "b"):
        w = ResultWriter(tmp_path / d, BASE_PROVENANCE)
        w.write("controller", "fifo", {"high_ratio": 1.0}, reps, {})
    row = _rows(tmp_path / "a", tmp_path / "b")[("fifo", "ovs", "high_ratio")]
    assert row.verdict == "same" and row.change_pct == 0.0
    assert row.direction == -1   # lower completion time against FIFO is better


def test_two_real_controller_runs_with_repetitions():
    """Two runs of test_default[random-20pat-aho_corasick-thr1_8-x3] on this box (3
    repetitions per configuration each). The 1-thread config's ratio to FIFO: A 0.39 / 0.47 /
    0.71, B 0.82 / 0.87 / 1.52. The MAD band (A's spread only) called it worse; jumpavg, which
    weighs B's own spread too, finds one population (as Mann-Whitney would: every B above every
    A is p = 0.1 with 3 a side), so the verdict is "within noise", not a regression."""
    cmp = compare_runs(FIXTURES / "run-20261124T000908Z-20d1",
                       FIXTURES / "run-20261124T001521Z-49de")
    rows = {(r.name, r.metric): r for r in cmp.rows}
    moved = rows[("random_20pat_1thr_aho_corasick", "high_ratio")]
    assert moved.method == "jumpavg" and moved.a["n"] == 3 and moved.b["n"] == 3
    assert moved.verdict == "same" and moved.change_pct > 100
    assert judge(moved.b["median"], moved.a["values"], -1, min_history=1).verdict == "regression"
    assert rows[("random_20pat_fifo_aho_corasick", "high_ratio")].verdict == "same"
    assert not any(r.metric.endswith("_stdev") for r in cmp.rows)
