"""Charts a suite declares as data (suites/<suite>/report.yaml, charts:): ours beside the
peers per workload, error bars from repetitions."""
from __future__ import annotations

from pathlib import Path

import pytest

from reports.charts import chart_data, draw_grouped_bars, load_suite_charts
from reports.goals import GoalError, SUITES_DIR
from reports.html import render_run_index
from reports.results import ResultWriter, load_results
from reports.tests.sample import BASE_PROVENANCE


def _decl(tmp_path: Path, suite: str, text: str) -> Path:
    d = tmp_path / "suites" / suite
    d.mkdir(parents=True, exist_ok=True)
    (d / "report.yaml").write_text(text)
    return tmp_path / "suites"


def test_every_suite_declaration_in_the_repo_loads():
    suites = [p.parent.name for p in SUITES_DIR.glob("*/report.yaml")]
    assert {"classifier", "conformance", "controller", "vmwire"} <= set(suites)
    for s in suites:
        for c in load_suite_charts(s):
            assert c["metrics"] and c["x"] in ("record", "metric")


def test_a_bad_chart_names_file_and_key(tmp_path):
    suites = _decl(tmp_path, "x", "charts:\n  - {x: record, series: metric}\n")
    with pytest.raises(GoalError, match=r"x/report.yaml:2: charts\[0\].metrics: required key is missing \(or give metric\)"):
        load_suite_charts("x", suites)
    _decl(tmp_path, "x", "charts:\n  - {metric: a, colour: red}\n")
    with pytest.raises(GoalError, match="unknown key"):
        load_suite_charts("x", suites)


def _run(tmp_path):
    w = ResultWriter(tmp_path / "run", BASE_PROVENANCE)
    for kind, base in (("ofbench", 10.0), ("ovs-dpdk", 5.0)):
        for rep in (0.9, 1.0, 1.2):
            w.write("switch", "pipeline_64b", {"mpps": base * rep, "ok": 991}, {},
                    {"dut_switch_kind": kind})
        w.write("switch", "pipeline_1500b", {"mpps": base / 4, "ok": 991}, {},
                {"dut_switch_kind": kind})
    return tmp_path / "run"


def test_ours_beside_peers_per_workload_with_spread(tmp_path):
    records = load_results(_run(tmp_path))
    chart = {"records": "pipeline_*", "x": "record", "series": "switch", "metrics": ["mpps"],
             "labels": ["mpps"], "title": "t", "ylabel": "", "log": False}
    xs, series, values = chart_data(records, chart)
    assert xs == ["pipeline_64b", "pipeline_1500b"] and series == ["ofbench", "ovs-dpdk"]
    sp = values[("pipeline_64b", "ofbench")]
    assert (sp.median, sp.lo, sp.hi, sp.n) == (10.0, 9.0, 12.0, 3)
    assert values[("pipeline_1500b", "ovs-dpdk")].n == 1
    png = draw_grouped_bars(records, chart, tmp_path / "c.png")
    assert png and png.stat().st_size > 5000
    assert draw_grouped_bars(records, {**chart, "records": "nothing*"}, tmp_path / "n.png") \
        is None


def test_a_declared_chart_replaces_the_first_metric_chart(tmp_path, monkeypatch):
    run = _run(tmp_path)
    suites = _decl(tmp_path, "switch", """
charts:
  - {title: "rate per workload", records: "*", x: record, series: switch, metric: mpps}
""")
    monkeypatch.setattr("reports.charts.SUITES_DIR", suites)
    import reports.charts
    monkeypatch.setattr(reports.charts.load_suite_charts, "__defaults__", (suites,))
    text = render_run_index(run).read_text()
    assert "rate per workload (declared in suites/switch/report.yaml" in text
    assert "per record</figcaption>" not in text
    assert list((run / "plots").glob("switch-chart0-*.png"))
