"""Compact distributions in a record (distributions/, result-v1.json
`distributions`): built from samples or a generator's histogram, validated, and ignored by
everything that judges metrics (compare, trend, Influx)."""
from __future__ import annotations

import pytest

from distributions import (QUANTILE_POINTS, cdf_points, histogram_bins, histogram_from_samples,
                           quantiles_from_histogram, quantiles_from_samples)
from reports.results import ResultRecordError, ResultWriter, load_results
from reports.tests.sample import BASE_PROVENANCE


def test_quantiles_from_samples_are_exact_at_the_ends():
    q = quantiles_from_samples([float(x) for x in range(1, 101)])
    assert q["kind"] == "quantiles" and q["samples"] == 100 and q["at"] == list(QUANTILE_POINTS)
    v = dict(zip(q["at"], q["values"]))
    assert v[0.0] == 1 and v[1.0] == 100 and v[0.5] == 50.5 and v[0.99] == pytest.approx(99.01)
    assert quantiles_from_samples([]) is None and quantiles_from_samples([None]) is None


def test_quantiles_from_a_latency_histogram_interpolate_inside_buckets():
    # softgen/TRex shape: [(low_us, high_us, count)]
    buckets = [(1.0, 2.0, 50), (2.0, 4.0, 40), (10.0, 20.0, 10)]
    q = quantiles_from_histogram(buckets, lo=1.2, hi=15.0)
    v = dict(zip(q["at"], q["values"]))
    assert v[0.0] == 1.2 and v[1.0] == 15.0          # the exact min and max
    assert v[0.5] == 2.0                              # the 50th of 100 is the first bucket's end
    assert v[0.7] == pytest.approx(3.0)               # half way through the second bucket
    assert 10.0 <= v[0.95] <= 15.0
    assert q["values"] == sorted(q["values"]) and q["samples"] == 100
    assert quantiles_from_histogram([(1.0, 2.0, 0)]) is None


def test_histogram_fixed_edges_trimmed_and_capped():
    h = histogram_from_samples([12.0, 13.0, 17.5, 27.0, 1000.0], 5.0, max_bins=4)
    assert (h["first_edge"], h["counts"], h["above"], h["samples"]) == (10.0, [2, 1, 0, 1], 1, 5)
    edges, counts, above = histogram_bins(h)
    assert edges == [10.0, 15.0, 20.0, 25.0] and above == 1
    xs, ys = cdf_points(h)
    assert xs[0] == 10.0 and ys[-1] == pytest.approx(0.8)   # one sample beyond the last bin
    with pytest.raises(ValueError, match="bin_width"):
        histogram_from_samples([1.0], 0)


def _w(tmp_path):
    return ResultWriter(tmp_path, BASE_PROVENANCE)


def test_a_record_carries_distributions_keyed_with_their_unit(tmp_path):
    w = _w(tmp_path)
    d = {"latency_us": quantiles_from_samples([1.0, 2.0, 3.0]),
         "app3_delay_ms": histogram_from_samples([12.0, 18.0], 5.0)}
    w.write("throughput", "lat", {"latency_p50_us": 2.0}, distributions=d)
    (rec,) = load_results(tmp_path, validate=True)
    assert rec["distributions"] == d and rec["metrics"] == {"latency_p50_us": 2.0}
    with pytest.raises(ResultRecordError, match=r"distributions.latency: bad key name"):
        w.write("throughput", "lat", {}, distributions={"latency": d["latency_us"]})
    bad = {**d["app3_delay_ms"], "samples": 3}
    with pytest.raises(ResultRecordError, match=r"counts \+ above = 2, samples = 3"):
        w.write("wan", "best", {}, distributions={"app3_delay_ms": bad})
    with pytest.raises(ResultRecordError, match=r"'at' and 'values' must not fall"):
        w.write("wan", "best", {}, distributions={"x_ms": {"kind": "quantiles", "at": [0, 1],
                                                         "values": [2, 1], "samples": 2}})
    with pytest.raises(ResultRecordError, match=r"distributions.x_ms"):
        w.write("wan", "best", {}, distributions={"x_ms": {"kind": "quantiles", "at": [0, 1]}})
    assert len(load_results(tmp_path)) == 1    # nothing of a rejected record was written


def test_compare_trend_and_influx_judge_metrics_never_bins(tmp_path):
    from reports.compare import compare_runs
    from reports.influx import record_to_point_parts
    from reports.trend import record_keys
    a, b = tmp_path / "run-20240101T000000Z-aaaa", tmp_path / "run-20240102T000000Z-bbbb"
    for run, shift in ((a, 0.0), (b, 50.0)):
        w = ResultWriter(run, BASE_PROVENANCE)
        rec = w.write("wan", "best", {"app3_mean_ms": 12.0},
                      distributions={"app3_delay_ms": histogram_from_samples(
                          [10.0 + shift, 12.0 + shift, 14.0], 5.0)})
    out = compare_runs(a, b)   # the delays moved by 50 ms, the mean metric did not
    assert [(r.metric, r.verdict) for r in out.rows] == [("app3_mean_ms", "same")]
    assert [k.metric for k, _ in record_keys(rec)] == ["app3_mean_ms"]
    assert set(record_to_point_parts(rec)[2]) == {"app3_mean_ms", "run_id"}


def test_hdrh_holds_the_whole_histogram_and_feeds_percentiles_and_cdfs():
    """Issue 40 part 7: a generator's latency buckets as HdrHistogram (V2 encoding, as NFVbench
    records it); p50 ... p99.99 and the CDF read from it; repetitions add up; a v2 record takes
    it, a corrupt one is named."""
    from distributions import (cdf_points, hdrh_from_buckets, hdrh_metrics, hdrh_percentiles,
                               problems)
    from reports.charts import _merge
    buckets = [(1.0, 1.1, 9000), (2.0, 2.2, 900), (50.0, 52.0, 99), (4000.0, 4096.0, 1)]
    d = hdrh_from_buckets(buckets)
    assert d["kind"] == "hdrh" and d["samples"] == 10_000 and d["encoded"].startswith("HIST")
    p = hdrh_percentiles(d)
    assert p[50.0] == pytest.approx(1.1, rel=1e-3) and p[99.0] == pytest.approx(2.2, rel=1e-3)
    assert p[99.9] == pytest.approx(52.0, rel=1e-3) and p[99.99] == pytest.approx(52.0, rel=1e-3)
    m = hdrh_metrics(d, "_at_50pct")
    assert set(m) == {f"latency_p{x}_us_at_50pct" for x in ("50", "90", "99", "99_9", "99_99")}
    xs, ys = cdf_points(d)
    assert ys[0] == 0.0 and ys[-1] == 1.0 and xs == sorted(xs) and ys == sorted(ys)
    assert xs[-1] == pytest.approx(4096, rel=1e-3)
    both = _merge([d, d])
    assert both["samples"] == 20_000 and hdrh_percentiles(both)[50.0] == p[50.0]
    assert problems({"latency_us": d}) == []
    assert problems({"latency_us": {**d, "samples": 3}}) == [
        "distributions.latency_us: the histogram holds 10000 values, samples = 3"]
    assert problems({"latency_us": {**d, "encoded": "HISTnotbase64"}}) == [
        "distributions.latency_us.encoded: not an HdrHistogram V2 encoding"]
    assert hdrh_from_buckets([]) is None
