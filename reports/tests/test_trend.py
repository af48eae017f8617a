"""Trend statistics and the direction table (pure; the InfluxDB part is in test_influx.py)."""
from __future__ import annotations

import datetime as dt
import json

import pytest

from reports.results import load_results
from reports.tests.sample import make_sample_run
from reports.trend import (DIRECTION_OVERRIDES, SeriesKey, evaluate, history_query, judge,
                           median_mad, metric_direction, noise_band, record_keys,
                           write_trend_page)

DIRECTIONS = [
    # higher is better: rates, ok flags, NDR/PDR-derived ratios
    ("rx_mpps", 1), ("tx_mpps", 1), ("ndr_mpps", 1), ("pdr_mpps", 1), ("lookup_mlps", 1),
    ("goodput_mbps", 1), ("rate_gbps", 1), ("ok", 1), ("passed", 1), ("cache_hit_ratio", 1),
    ("ndr_vs_peer_ratio", 1), ("tx_mpps_vs_testpmd_ratio", 1), ("cases_passed", 1),
    # lower is better: times, latency, loss, errors
    ("latency_p99_us", -1), ("latency_p50_ns", -1), ("high_ms", -1), ("setup_s", -1),
    ("delay_error_us", -1), ("lost_pkts", -1), ("loss_ratio", -1), ("ping_loss_pct", -1),
    ("latency_vs_peer_ratio", -1), ("p99_us_vs_peer_ratio", -1), ("rx_errors", -1),
    ("cases_failed", -1), ("cycles_per_pkt", -1), ("jitter_us", -1), ("unsent_pkts", -1),
    # a latency measured in Mpps-land is still latency: rule 1 wins over units
    ("latency_at_mpps", -1),
    # no direction: counts and configuration echoes are not judged
    ("tx_pkts", 0), ("rx_pkts", 0), ("flows", 0), ("trials", 0), ("frame_size_b", 0),
]


@pytest.mark.parametrize("metric,direction", DIRECTIONS, ids=[m for m, _ in DIRECTIONS])
def test_direction_table(metric, direction):
    assert metric_direction(metric) == direction


def test_direction_override_wins(monkeypatch):
    monkeypatch.setitem(DIRECTION_OVERRIDES, "tx_pkts", 1)
    assert metric_direction("tx_pkts") == 1


def test_median_and_mad():
    assert median_mad([1, 2, 3, 4, 100]) == (3, 1)
    assert median_mad([5.0]) == (5.0, 0.0)
    with pytest.raises(ValueError):
        median_mad([])


def test_noise_band_has_a_relative_floor():
    assert noise_band(10.0, 0.0) == pytest.approx(0.2)          # 2 % of the median
    assert noise_band(10.0, 1.0, k=3) == pytest.approx(3 * 1.4826)
    assert noise_band(0.0, 0.0) > 0


HIST = [10.0, 10.2, 9.9, 10.1, 9.8, 10.0, 10.3]


@pytest.mark.parametrize("value,direction,verdict", [
    (10.1, 1, "ok"), (9.2, 1, "regression"), (11.0, 1, "progression"),
    (11.0, -1, "regression"), (9.2, -1, "progression"), (12.0, 0, "untracked"),
    (None, 1, "not_measured"),
])
def test_judge_verdicts(value, direction, verdict):
    assert judge(value, HIST, direction).verdict == verdict


def test_one_outlier_night_does_not_widen_the_band():
    j = judge(9.2, HIST + [50.0], 1)
    assert j.verdict == "regression" and j.median == pytest.approx(10.05)


def test_judge_needs_history():
    j = judge(1.0, [10.0, 10.0], 1)
    assert j.verdict == "new" and j.n_history == 2


def test_bool_metric_flip_is_a_regression():
    assert judge(False, [True] * 5, metric_direction("ok")).verdict == "regression"
    assert judge(True, [True] * 5, metric_direction("ok")).verdict == "ok"


def test_change_pct_and_stats_are_reported():
    j = judge(8.0, [10.0] * 5, 1)
    assert j.change_pct == pytest.approx(-20.0) and j.mad == 0 and j.n_history == 5


def _records(tmp_path):
    make_sample_run(tmp_path)
    return load_results(tmp_path)


def test_evaluate_keys_include_switch_kind_and_sorts_regressions_first(tmp_path):
    records = _records(tmp_path)
    rec = next(r for r in records if r["name"] == "ndr_64b_1flows"
               and r["provenance"]["dut_switch_kind"] == "ofbench")
    key = dict(record_keys(rec))
    k = next(k for k in key if k.metric == "ndr_mpps")
    assert k == SeriesKey("throughput", "ndr_64b_1flows", "local", "ofbench", "softgen",
                          "memif", "ndr_mpps")
    history = {k: [(f"2024-04-{d:02d}T02:00:00.000000Z", 20.0) for d in range(1, 8)]}
    rows = evaluate(records, history, detector="mad")
    assert rows[0].key == k and rows[0].judgement.verdict == "regression"
    assert sum(r.judgement.verdict == "regression" for r in rows) == 1
    # the same name on the other switch kind has no history: not compared with ofbench's
    other = [r for r in rows if r.key == SeriesKey("throughput", "ndr_64b_1flows", "local",
                                                   "ovs", "softgen", "memif", "ndr_mpps")]
    assert other[0].judgement.verdict == "new"


def test_trend_page_and_json(tmp_path):
    records = _records(tmp_path)
    k = SeriesKey("softgen", "tx_64b_1core_memif", "local", "ovs", "softgen", "memif", "tx_mpps")
    start = dt.datetime(2024, 4, 1, tzinfo=dt.timezone.utc)
    history = {k: [((start + dt.timedelta(days=d)).strftime("%Y-%m-%dT%H:%M:%S.%fZ"), 9.0 + 0.1 * (d % 2))
                   for d in range(10)]}
    rows = evaluate(records, history, detector="mad")
    page = write_trend_page(tmp_path, rows, settings={"last_n": 20})
    text = page.read_text()
    assert "tx_64b_1core_memif" in text and "progression" in text
    assert 'src="plots/trend-' in text and "<script" not in text
    data = json.loads((tmp_path / "trend.json").read_text())
    assert data["counts"]["progression"] == 1
    assert len(list((tmp_path / "plots").glob("trend-*.png"))) >= 1


def test_history_query_escapes_strings():
    q = history_query('ofb"/autogen', 'su"ite', "pro\\file", "2024-05-01T00:00:00Z", 5)
    assert 'bucket: "ofb\\"/autogen"' in q and 'r._measurement == "su\\"ite"' in q
    assert 'r.profile == "pro\\\\file"' in q and "tail(n: 5)" in q
    assert "stop: 2024-05-01T00:00:00Z" in q
    assert "start: 2023-03-28T00:00:00.000000Z" in q  # 400 days of history by default


def test_metric_without_direction_is_never_new_or_judged():
    assert judge(5, [], 0).verdict == "untracked"
    assert judge(500, [5, 5, 5, 5], 0).verdict == "untracked"


# ---- jumpavg: segments, commit range, testbed ------------------------------------------------

def test_jumpavg_groups_a_step_into_segments_with_size_and_direction():
    from reports.trend import group_series
    xs = [10.0, 10.1, 9.9, 10.0, 10.05, 9.95, 10.0, 9.0, 9.05, 8.95]
    segs = group_series(xs, direction=+1)
    assert [(g.start, g.end) for g in segs] == [(0, 7), (7, 10)]
    assert segs[0].verdict == "first" and segs[1].verdict == "regression"
    assert segs[1].change_pct == pytest.approx(-10.0, abs=0.5)
    assert group_series(xs, direction=-1)[1].verdict == "progression"
    # a real but tiny step (below the 2 % floor) is not a verdict
    tiny = [10.0] * 6 + [10.1] * 6
    assert all(g.verdict in ("first", "ok") for g in group_series(tiny, +1))


def test_jumpavg_judge_flags_a_young_worse_segment_and_names_the_commit_range(tmp_path):
    from reports.trend import judge_jumpavg
    hist = [10.0, 10.1, 9.9, 10.0, 10.05, 9.95, 10.0, 9.02]
    j, segs = judge_jumpavg(8.98, hist, +1)
    assert j.verdict == "regression" and j.median == pytest.approx(10.0, abs=0.05)
    assert j.change_pct == pytest.approx(-10, abs=0.6)
    # an old step (more than RECENT_DEFAULT runs ago) is history, not tonight's verdict
    j, _ = judge_jumpavg(9.0, hist[:7] + [9.0] * 6, +1)
    assert j.verdict == "ok"
    # one noisy night on a noisy series is not a change
    rnd = __import__("random").Random(2)
    noisy = [10 + rnd.gauss(0, 1) for _ in range(25)]
    assert judge_jumpavg(8.5, noisy, +1)[0].verdict == "ok"
    assert judge_jumpavg(1.0, [1.0], +1)[0].verdict == "new"

    records = _records(tmp_path)
    rec = next(r for r in records if r["name"] == "ndr_64b_1flows"
               and r["provenance"]["dut_switch_kind"] == "ofbench")
    k = next(k for k, _ in record_keys(rec) if k.metric == "ndr_mpps")
    value = rec["metrics"]["ndr_mpps"]
    hist_pts = [(f"2024-04-{d:02d}T02:00:00.000000Z", value * 1.25 * (1 + 0.002 * (d % 3)))
                for d in range(1, 11)]
    shas = [f"{d:02d}" + "a" * 38 for d in range(1, 11)]
    rows = evaluate([rec], {k: hist_pts}, commits={k: shas}, detector="jumpavg")
    row = next(r for r in rows if r.key == k)
    assert row.judgement.verdict == "regression"
    assert row.commits == f"{shas[-1][:12]}..{rec['provenance']['git_sha'][:12]}"
    assert [(g.start, g.end) for g in row.segments] == [(0, 10), (10, 11)]
    page = write_trend_page(tmp_path, rows, settings={"detector": "jumpavg"})
    assert "consistent segments" in page.read_text()
    data = json.loads((tmp_path / "trend.json").read_text())
    assert any(r["segments"] and r["commits"] for r in data["rows"])
    # the MAD rule decides; jumpavg's segments are drawn
    mad = evaluate([rec], {k: hist_pts}, detector="mad")
    mrow = next(r for r in mad if r.key == k)
    assert mrow.judgement.verdict == "regression" and mrow.judgement.mad is not None
    assert [(g.start, g.end) for g in mrow.segments] == [(0, 10), (10, 11)] and not mrow.commits
    with pytest.raises(ValueError, match="^--detector: expected one of jumpavg, mad"):
        evaluate([rec], {}, detector="cusum")


def test_testbed_id_splits_series_and_falls_back_to_older_history(tmp_path):
    records = _records(tmp_path)
    rec = next(r for r in records if r["name"] == "ndr_64b_1flows"
               and r["provenance"]["dut_switch_kind"] == "ofbench")
    rec = {**rec, "provenance": {**rec["provenance"], "testbed_id": "bed-7"}}
    k = next(k for k, _ in record_keys(rec) if k.metric == "ndr_mpps")
    assert k.testbed_id == "bed-7" and "bed-7" in k.label()
    hist = [(f"2024-04-{d:02d}T02:00:00.000000Z", 20.0) for d in range(1, 8)]
    rows = evaluate([rec], {k.without_testbed(): hist})
    assert next(r for r in rows if r.key == k).judgement.n_history == 7


# ---- csit: jumpavg over each run's trials, a minimum step, a confirmation run ----------------

def test_csit_waits_for_a_confirmation_run_and_ignores_one_odd_night():
    from reports.trend import judge_csit
    hist = [10.0, 10.1, 9.9, 10.0, 10.05, 9.95, 10.0, 10.02]
    # the first night of a 10 % step: not yet (one night may be an odd one)
    assert judge_csit(9.0, hist, +1)[0].verdict == "ok"
    # its second night confirms it: a regression of ~10 % against the segment before
    j, segs = judge_csit(9.02, hist + [9.0], +1)
    assert j.verdict == "regression" and j.change_pct == pytest.approx(-10, abs=0.6)
    assert j.median == pytest.approx(10.0, abs=0.05) and segs[-1].start == len(hist)
    # an odd night followed by a normal one raises nothing on either night
    assert judge_csit(10.0, hist + [8.0], +1)[0].verdict == "ok"
    # a real step below the minimum (3 % < 5 %) is not reported; jumpavg's 2 % floor would
    three = hist + [9.7, 9.7]
    assert judge_csit(9.7, three, +1)[0].verdict == "ok"
    assert judge_csit(9.7, three, +1, min_step=0.02)[0].verdict == "regression"
    assert judge_csit(1.0, [1.0], +1)[0].verdict == "new"
    assert judge_csit(None, hist, +1)[0].verdict == "not_measured"


def test_csit_reads_each_runs_trials_as_its_spread():
    """Each night enters as its 5 trials (one indivisible sample, its spread the trials'); two
    nights 4 % lower are a regression whose value is the last night's median."""
    from reports.trend import judge_csit
    rnd = __import__("random").Random(5)
    trials = [[30.0 * (1 + rnd.gauss(0, 0.002)) for _ in range(5)] for _ in range(12)]
    lower = [[x * 0.96 for x in t] for t in trials[:2]]
    j, segs = judge_csit(lower[1], trials + [lower[0]], +1, min_step=0.03)
    assert j.verdict == "regression" and j.value == pytest.approx(28.8, rel=0.01)
    assert j.change_pct == pytest.approx(-4, abs=0.5)
    # a run with one trial is a plain value; an empty one is no run
    assert judge_csit([30.0], trials, +1)[0].verdict == "ok"
    assert judge_csit([], trials, +1)[0].verdict == "not_measured"


def test_csit_decides_the_nightly_when_asked(tmp_path):
    from reports.trend import DETECTOR_DEFAULT
    from reports.trend import evaluate as trend_evaluate
    records = _records(tmp_path)
    rec = next(r for r in records if r["name"] == "ndr_64b_1flows"
               and r["provenance"]["dut_switch_kind"] == "ofbench")
    key = next(k for k, _ in record_keys(rec) if k.metric == "ndr_mpps")
    value = rec["metrics"]["ndr_mpps"]
    pts = [(f"2024-04-{d:02d}T02:00:00.000000Z", value * 1.25) for d in range(1, 11)] + \
        [("2024-04-11T02:00:00.000000Z", value)]
    rows = trend_evaluate([rec], {key: pts}, detector="csit")
    row = next(r for r in rows if r.key == key)
    assert row.judgement.verdict == "regression" and len(row.segments) == 2
    # one night lower is not yet a verdict
    rows = trend_evaluate([rec], {key: pts[:-1]}, detector="csit")
    assert next(r for r in rows if r.key == key).judgement.verdict == "ok"
    # mad2 likewise waits for a second night
    rows = trend_evaluate([rec], {key: pts[:-1]}, detector="mad2")
    assert next(r for r in rows if r.key == key).judgement.verdict == "ok"
    rows = trend_evaluate([rec], {key: pts}, detector="mad2")
    assert next(r for r in rows if r.key == key).judgement.verdict == "regression"
    # the default, auto, judges a rate by jumpavg: named on its first night, with its segments
    assert DETECTOR_DEFAULT == "auto"
    rows = trend_evaluate([rec], {key: pts[:-1]})
    row = next(r for r in rows if r.key == key)
    assert row.judgement.verdict == "regression" and len(row.segments) == 2


def test_auto_judges_rates_by_jumpavg_and_latencies_by_mad2(tmp_path):
    """auto: a rate (higher is better) by jumpavg, a latency or time by mad2: one night's
    outlier of a latency raises nothing, the same outlier of a rate is a change-point."""
    from reports.trend import detector_for
    from reports.trend import evaluate as trend_evaluate
    assert detector_for("auto", +1) == "jumpavg" and detector_for("auto", -1) == "mad2"
    assert detector_for("mad", +1) == "mad" and detector_for("csit", -1) == "csit"
    rec = {"suite": "s", "name": "n", "metrics": {"rx_mpps": 8.0, "latency_p99_us": 12.5},
           "provenance": {"end_time": "2024-04-20T02:00:00Z", "git_sha": "f" * 40}}
    days = [f"2024-04-{d:02d}T02:00:00.000000Z" for d in range(1, 16)]
    hist = {}
    for k, v in record_keys(rec):
        hist[k] = [(t, 10.0 * (1 + 0.003 * (i % 3))) for i, t in enumerate(days)]
    rows = {r.key.metric: r for r in trend_evaluate([rec], hist, detector="auto")}
    assert rows["rx_mpps"].judgement.verdict == "regression"      # jumpavg: a new segment
    assert rows["latency_p99_us"].judgement.verdict == "ok"        # mad2: needs a second night
    assert trend_evaluate([rec], hist, detector="mad")[0].judgement.verdict == "regression"


def test_mad2_needs_two_nights_beyond_the_band():
    from reports.trend import judge_confirmed
    hist = [10.0, 10.1, 9.9, 10.0, 10.05, 9.95, 10.0, 10.02]
    assert judge_confirmed(9.0, hist, +1).verdict == "ok"            # first night of a step
    j = judge_confirmed(9.02, hist + [9.0], +1)
    assert j.verdict == "regression" and j.value == 9.02 and j.median == pytest.approx(10.0, abs=0.05)
    assert judge_confirmed(10.0, hist + [8.0], +1).verdict == "ok"   # one odd night
    assert judge_confirmed(11.0, hist + [9.0], +1).verdict == "ok"   # two odd nights, opposite ways
    assert judge_confirmed(11.0, hist + [11.1], +1).verdict == "progression"
    assert judge_confirmed(9.0, [10.0, 10.0], +1).verdict == "new"


def test_jlog_groups_log_values_and_answers_in_the_values_units(tmp_path):
    """jlog: jumpavg on ln(v / min): a latency whose nights scatter by a factor finds a 30 %
    step as a regression (geometric means in the values' units); a series with a value <= 0
    falls back to jumpavg; the nightly trend takes it by name."""
    import random
    from reports.trend import evaluate as trend_evaluate, judge_jumpavg, judge_jumpavg_log
    rnd = random.Random(2)
    hist = [100 * (1 + 0.01 * rnd.gauss(0, 1)) for _ in range(20)] + [130.0, 131.0]
    j, segs = judge_jumpavg_log(129.5, hist, -1)
    assert j.verdict == "regression" and j.median == pytest.approx(100, rel=0.02)
    assert segs[-1].avg == pytest.approx(130.2, rel=0.01) and segs[-1].start == 20
    assert segs[-1].change_pct == pytest.approx(30, abs=2)
    assert judge_jumpavg_log(100.5, hist[:20], -1)[0].verdict == "ok"
    zero = [0.0, 1.0, 2.0, 1.0]
    assert judge_jumpavg_log(1.0, zero, -1)[0].verdict == judge_jumpavg(1.0, zero, -1)[0].verdict
    rec = {"suite": "s", "name": "n", "metrics": {"latency_p99_us": 130.0},
           "provenance": {"end_time": "2024-04-20T02:00:00Z", "git_sha": "f" * 40}}
    days = [f"2024-04-{d:02d}T02:00:00.000000Z" for d in range(1, 23)]
    key = record_keys(rec)[0][0]
    rows = trend_evaluate([rec], {key: list(zip(days, hist))}, detector="jlog")
    assert rows[0].judgement.verdict == "regression" and rows[0].segments
