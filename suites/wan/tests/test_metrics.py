"""The WAN suite's record shaping (suites/wan/metrics.py): per-app metrics and the summary."""
import pytest

from dut.wan.config import load_scenario
from suites.wan.metrics import method_metrics, model_errors, summary

pytestmark = pytest.mark.quick


def test_report_summary_reductions_and_model_error():
    apps = load_scenario("traces/wan/doc002.yaml").apps
    def rows(app, delays):
        return [{"app": app, "delay_ms": d} for d in delays]
    sent = [{"app": a.name} for a in apps for _ in range(2)]
    base = method_metrics(sum((rows(a.name, [40, 40]) for a in apps), []), sent, apps,
                          {"paper": {a.name: 20 for a in apps}, "queueing": {a.name: 44 for a in apps}})
    ours = method_metrics(sum((rows(a.name, [10, 10]) for a in apps), []), sent, apps,
                          {"paper": {a.name: 5 for a in apps}, "queueing": {a.name: 11 for a in apps}})
    m, p = summary({"all_on_path2": base, "best": ours}, apps, "all_on_path2", "best")
    assert m["app3_reduction_pct"] == 75.0 and m["app5_reduction_pct"] == 75.0
    assert m["deadlines_met"] == 5
    assert m["queueing_model_error_pct"] == pytest.approx(10.0) and m["paper_model_error_pct"] == 50.0
    assert m["model_error_pct"] == pytest.approx(10.0) and p["best_model"] == "queueing"
    # No data -> None (JSON null), never NaN.
    empty = method_metrics([], [{"app": "app1"}], apps[:1], {})
    assert empty["app1_mean_ms"] is None and empty["app1_lost"] == 1
    assert model_errors({"x": empty}, 1, "paper") == []
