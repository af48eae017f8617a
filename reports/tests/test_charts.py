"""Charts a suite declares as data (suites/<suite>/report.yaml, charts:): ours beside the
peers per workload, error bars from repetitions."""
from __future__ import annotations

from pathlib import Path

import pytest

from distributions import (KEY_RE, histogram_from_samples, quantiles_from_histogram,
                           quantiles_from_samples)
from reports.charts import (chart_data, distribution_series, draw_cdf, draw_grouped_bars,
                            draw_histogram, load_suite_charts)
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
    kinds = set()
    for s in suites:
        for c in load_suite_charts(s):
            kinds.add(c["kind"])
            if c["kind"] == "bars":
                assert c["metrics"] and c["x"] in ("record", "metric")
            else:
                assert c["distributions"] and len(c["labels"]) == len(c["distributions"])
                assert all(KEY_RE.match(d) for d in c["distributions"]), c
    assert kinds == {"bars", "cdf", "histogram"}


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


# ---- cdf and histogram kinds ------------------------------------------------------------------

def _dist_run(tmp_path):
    """Synthetic records with distributions: latency per switch and workload (one repeated),
    WAN delays per method and app."""
    import random
    rnd = random.Random(7)
    w = ResultWriter(tmp_path / "run", BASE_PROVENANCE)
    for kind, base in (("ofbench", 5.0), ("ovs", 20.0)):
        for flows in (1, 1000):
            for _rep in range(2 if kind == "ofbench" and flows == 1 else 1):
                lat = [base * (1 + flows / 5000) + rnd.expovariate(1 / base) for _ in range(500)]
                w.write("throughput", f"ndr_64b_{flows}flows", {"ndr_mpps": 1.0}, {},
                        {"dut_switch_kind": kind},
                        distributions={"latency_at_50pct_of_pdr_us":
                                       quantiles_from_samples(lat)})
    w.write("throughput", "ndr_64b_1flows_loopback", {"ndr_mpps": 3.0})   # no distribution
    for method, shift in (("all_on_path2", 25.0), ("paper_greedy", 15.0), ("best", 12.0)):
        dists, metrics = {}, {}
        for app in (3, 5):
            d = [shift + rnd.expovariate(1 / 4.0) for _ in range(300)] + [500.0]
            dists[f"app{app}_delay_ms"] = histogram_from_samples(d, 5.0)
            metrics[f"app{app}_mean_ms"] = sum(d) / len(d)
        w.write("wan", method, metrics, {}, {"dut_switch_kind": "ofbench"},
                distributions=dists)
    w.write("wan", "summary", {"deadlines_met": 4})
    return tmp_path / "run"


CDF = {"kind": "cdf", "title": "latency at 50 % of PDR", "records": ["ndr_*flows"],
       "distributions": ["latency_at_50pct_of_pdr_us"], "labels": ["50 %"], "xlabel": "us",
       "ylabel": "", "log": True, "reference": {"latency_at_50pct_of_pdr_us":
                                                 [{"at": 10.0, "label": "goal", "series": None}]}}
HIST = {"kind": "histogram", "title": "app3 and app5", "records": ["*"],
        "distributions": ["app3_delay_ms", "app5_delay_ms"], "labels": ["app3", "app5"],
        "xlabel": "", "ylabel": "%", "y": "percent", "xmax": 100, "log": False,
        "means": {"app3_delay_ms": "app3_mean_ms"},
        "reference": {"app3_delay_ms": [{"at": 27.4, "label": "doc", "series": "all_on_path2"}]}}


def test_cdf_one_line_per_switch_and_workload(tmp_path):
    records = load_results(_dist_run(tmp_path))
    series = distribution_series(records, CDF)
    assert [s["label"] for s in series] == ["ndr_64b_1flows [ofbench]", "ndr_64b_1000flows [ofbench]",
                                            "ndr_64b_1flows [ovs]", "ndr_64b_1000flows [ovs]"]
    rep = series[0]
    assert rep["reps"] == 2 and rep["dist"]["samples"] == 1000   # pointwise median of two
    assert all(s["dist"]["kind"] == "quantiles" for s in series)
    png = draw_cdf(records, CDF, tmp_path / "cdf.png")
    assert png and png.stat().st_size > 5000
    assert draw_cdf(records, {**CDF, "records": ["nothing*"]}, tmp_path / "n.png") is None


def test_histogram_panels_per_app_with_document_references(tmp_path):
    records = load_results(_dist_run(tmp_path))
    series = distribution_series(records, HIST)
    assert [(s["label"], s["distribution"]) for s in series][:2] == [
        ("all_on_path2", "app3_delay_ms"), ("all_on_path2", "app5_delay_ms")]
    assert len(series) == 6   # 3 methods x 2 apps; the summary has none
    a3 = series[0]
    assert a3["dist"]["bin_width"] == 5.0 and a3["dist"]["samples"] == 301
    base = next(r for r in records if r["name"] == "all_on_path2")
    assert a3["mean"] == pytest.approx(base["metrics"]["app3_mean_ms"])
    assert series[1]["mean"] is None   # no `means:` metric declared for app5
    png = draw_histogram(records, HIST, tmp_path / "h.png")
    assert png and png.stat().st_size > 5000


def test_repetitions_of_a_histogram_add_up(tmp_path):
    from reports.charts import _merge
    a = histogram_from_samples([1, 2, 7], 5.0)
    b = histogram_from_samples([12, 13], 5.0)
    m = _merge([a, b])
    assert (m["first_edge"], m["counts"], m["samples"]) == (0.0, [2, 1, 2], 5)


def test_a_bad_distribution_chart_names_file_and_key(tmp_path):
    suites = _decl(tmp_path, "x", "charts:\n  - {kind: cdf, records: '*'}\n")
    with pytest.raises(GoalError, match=r"report.yaml:2: charts\[0\].distributions: required key "
                                        r"is missing \(or give distribution\)"):
        load_suite_charts("x", suites)
    _decl(tmp_path, "x", "charts:\n  - {kind: pie, metric: a}\n")
    with pytest.raises(GoalError, match=r"charts\[0\].kind: expected one of bars, cdf, "
                                        r"histogram, got 'pie'"):
        load_suite_charts("x", suites)
    _decl(tmp_path, "x", "charts:\n  - {kind: histogram, distribution: a_ms, x: record}\n")
    with pytest.raises(GoalError, match=r"charts\[0\].x: not a key of a histogram chart"):
        load_suite_charts("x", suites)
    _decl(tmp_path, "x", "charts:\n  - {kind: histogram, distribution: a_ms,\n"
                         "      reference: {b_ms: [{at: 1}]}}\n")
    with pytest.raises(GoalError, match=r"reference.b_ms: not one of"):
        load_suite_charts("x", suites)
    _decl(tmp_path, "x", "charts:\n  - {kind: cdf, distribution: a_ms, reference: [{at: x}]}\n")
    with pytest.raises(GoalError, match=r"reference\[0\]: \{at: <number>"):
        load_suite_charts("x", suites)


def test_a_page_with_both_kinds(tmp_path, monkeypatch):
    run = _dist_run(tmp_path)
    suites = _decl(tmp_path, "throughput", """
charts:
  - kind: cdf
    title: "latency CDF per switch"
    records: "ndr_*flows"
    distribution: latency_at_50pct_of_pdr_us
    log: true
""")
    _decl(tmp_path, "wan", """
charts:
  - kind: histogram
    title: "app delay histograms"
    records: "*"
    distributions: [app3_delay_ms, app5_delay_ms]
    means: {app3_delay_ms: app3_mean_ms}
    reference: [{at: 20, label: F}]
""")
    import reports.charts
    monkeypatch.setattr(reports.charts.load_suite_charts, "__defaults__", (suites,))
    text = render_run_index(run).read_text()
    assert "latency CDF per switch (declared in suites/throughput/report.yaml; cumulative" in text
    assert "app delay histograms (declared in suites/wan/report.yaml; bars:" in text
    assert list((run / "plots").glob("throughput-chart0-*.png"))
    assert list((run / "plots").glob("wan-chart0-*.png"))
    # a distribution is drawn, never a column of the records table
    assert "latency_at_50pct_of_pdr_us</th>" not in text and "app3_delay_ms</th>" not in text


def test_a_real_trex_run_draws_latency_cdfs(tmp_path):
    """TRex v3.08's latency histograms (--dut=local-trex, ofbench over memif) reach the
    throughput suite's declared CDFs through the same distributions field as softgen's."""
    import shutil
    run = tmp_path / "run-20261124T021315Z-ad92"
    shutil.copytree(Path(__file__).parent / "fixtures" / run.name, run)
    records = load_results(run, validate=True)
    assert {r["provenance"]["generator"] for r in records} == {"trex"}
    cdf = next(c for c in load_suite_charts("throughput")
               if c["kind"] == "cdf" and c["distributions"] == ["latency_at_50pct_of_pdr_us"])
    series = distribution_series(records, cdf)
    assert [s["label"] for s in series] == ["ndr_64b_1flows", "ndr_64b_1000flows"]
    assert all(s["dist"]["samples"] > 1000 for s in series)
    text = render_run_index(run).read_text()
    assert "Latency through each switch at 50 % of its PDR rate" in text
    assert list((run / "plots").glob("throughput-chart2-latency-*.png"))


def test_a_real_softgen_beside_trex_run_draws_one_line_per_generator_and_path(tmp_path):
    """suites/softgen vs_trex_64b (one record, every round's histograms pooled per generator
    and path) -> one CDF line each, named by what tells them apart."""
    run = Path(__file__).parent / "fixtures" / "run-20261124T022749Z-a1c5"
    records = load_results(run, validate=True)
    (cdf,) = load_suite_charts("softgen")
    series = distribution_series(records, cdf)
    assert [s["label"] for s in series] == [
        "softgen through switch", "TRex through switch", "softgen memif loop", "TRex memif loop",
        "softgen net_ring loop"]
    assert all(s["dist"]["samples"] >= 40000 for s in series)
    assert draw_cdf(records, cdf, tmp_path / "vs.png")
