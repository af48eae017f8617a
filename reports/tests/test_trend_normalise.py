"""A DUT rate judged against the same night's rig probe (the feed's ceiling): a host that gets
faster or slower is absorbed, a real step of the DUT is still found, a missing probe is said."""
import json
import random

import pytest

from reports.__main__ import main
from reports.trend import (SeriesKey, divisor, normalised, normaliser_for, normaliser_label,
                           record_keys, rig_metric_names, write_trend_page)
from reports.trend import evaluate as trend_evaluate
from reports.trend_eval import (Series, attach_normalisers, evaluate, load_history, load_probes,
                                save_history, series_from_runs, verdict)

REC = "switch/pipeline_64b_100k_flows [ofbench, drivers/replay+net_pcap, ring/pcap/null]"
RIG = ["feed_replay_ceiling_mpps", "feed_replay_ceiling_best_mpps", "host_mem_latency_1mib_ns"]


def test_the_normaliser_is_the_ceiling_of_the_feed_the_metric_names():
    assert normaliser_for("ofbench_mpps", RIG, "ceiling") == (("feed_replay_ceiling_mpps",), "")
    assert normaliser_for("ofbench_replay_best_mpps", RIG, "rig-index") == (
        ("feed_replay_ceiling_best_mpps", "feed_replay_ceiling_mpps"), "")
    assert normaliser_for("ofbench_replay_mpps_per_cpu", RIG, "ceiling")[0] == \
        ("feed_replay_ceiling_mpps",)
    assert normaliser_for("ofbench_mpps", RIG, "none") == ((), "")
    assert normaliser_for("ofbench_cache_hit_ratio", RIG, "ceiling") == ((), "not a rate")
    assert normaliser_for("feed_replay_ceiling_mpps", RIG, "ceiling") == ((), "a rig probe")
    assert normaliser_for("ofbench_mpps", ["host_mem_latency_1mib_ns"], "ceiling") == \
        ((), "no feed ceiling in the record")
    two = ["feed_replay_ceiling_mpps", "feed_veth_ceiling_mpps", "feed_replay_copy_ceiling_mpps"]
    assert normaliser_for("ovs_veth_mpps", two, "ceiling")[0] == ("feed_veth_ceiling_mpps",)
    assert normaliser_for("ofbench_replay_copy_mpps", two, "ceiling")[0] == \
        ("feed_replay_copy_ceiling_mpps",)            # the longest feed the metric names
    assert normaliser_for("ofbench_mpps", two, "ceiling") == \
        ((), "3 feeds' ceilings, none named in the metric")
    with pytest.raises(ValueError, match=r"^--normalise: expected one of none, ceiling, "
                                         r"rig-index, got 'feed'"):
        normaliser_for("ofbench_mpps", RIG, "feed")
    assert normaliser_label(("a",)) == "a" and normaliser_label(("a", "b")) == "geomean(a, b)"
    assert divisor([4.0, 9.0]) == pytest.approx(6.0) and divisor([4.0, None]) is None
    assert divisor([0.0]) is None
    rec = {"metrics": {"a_mpps": 1, "b": 2}, "params": {"series_kind": {"b": "rig"}},
           "provenance": {"dut_switch_kind": "ofbench"}}
    assert rig_metric_names(rec) == {"b"}
    assert rig_metric_names({**rec, "provenance": {"dut_switch_kind": "none"}}) == {"a_mpps", "b"}


def nights(n=48, drift_at=24, drift=0.06, step_at=None, step=0.10, noise=0.008, seed=11):
    """A DUT rate and its feed's ceiling on one host: both move with the host's speed (x (1 +
    drift) from night drift_at), each with its own noise; the DUT alone steps at step_at."""
    rnd = random.Random(seed)
    dut, ceil = [], []
    for i in range(n):
        host = 1 + (drift if i >= drift_at else 0.0)
        dut.append(30.0 * host * (1 - (step if step_at is not None and i >= step_at else 0))
                   * (1 + rnd.gauss(0, noise)))
        ceil.append(125.0 * host * (1 + rnd.gauss(0, noise)))
    return [Series(f"{REC} ofbench_mpps", 1, dut, None, "dut_rate"),
            Series(f"{REC} feed_replay_ceiling_mpps", 1, ceil, None, "rig")]


@pytest.mark.parametrize("drift", [0.06, -0.06], ids=["faster", "slower"])
def test_a_host_speed_drift_is_absorbed_and_a_dut_step_still_found(drift):
    raw = nights(drift=drift)
    norm, notes = attach_normalisers(raw, "ceiling")
    assert notes == [f"{REC} ofbench_mpps: / feed_replay_ceiling_mpps"]
    assert norm[0].normaliser == "feed_replay_ceiling_mpps" and norm[1].divs is None
    # raw: the host's step reads as the DUT's (a progression or a false regression) on the
    # drift's night; divided by the same night's ceiling the DUT did nothing
    flagged_raw = [t for t in range(10, 48)
                   if verdict("auto", raw[0].values[:t], raw[0].values[t], 1) != "ok"]
    flagged = [t for t in range(10, 48)
               if verdict("auto", raw[0].values[:t], raw[0].values[t], 1, norm[0].divs) != "ok"]
    assert 24 in flagged_raw and flagged == []
    ev_raw, ev = evaluate(raw[:1], (10,), 10, 1), evaluate(norm[:1], (10,), 10, 1)
    assert ev_raw.false_alarms["auto"] >= 1 and ev.false_alarms["auto"] == 0
    s10 = next(s for s in ev.steps if s.detector == "auto")
    assert s10.within_2_rate >= 0.95
    # a real 10 % step of the DUT after the host's drift: found on its own night, normalised
    stepped = attach_normalisers(nights(drift=drift, step_at=36), "ceiling")[0][0]
    found = [t for t in range(10, 48) if verdict("auto", stepped.values[:t], stepped.values[t],
                                                 1, stepped.divs) == "regression"]
    assert found and 36 <= found[0] <= 37


def test_the_step_goes_into_the_dut_rate_never_into_the_probe():
    """trend-eval injects x (1 - s) into the DUT's raw values and divides by the night's own
    probe: a normalised series finds the same share of steps as its ratio would."""
    raw = nights(drift=0.0)
    norm = attach_normalisers(raw, "ceiling")[0]
    ratio = Series("ratio", 1, [v / d for v, d in zip(raw[0].values, norm[0].divs)])
    a, b = evaluate(norm[:1], (5, 10), 5, 3), evaluate([ratio], (5, 10), 5, 3)
    assert [(s.detector, s.detected, s.within_2) for s in a.steps] == \
        [(s.detector, s.detected, s.within_2) for s in b.steps]
    assert norm[1].values == raw[1].values              # the probe itself is left as measured


def test_a_missing_probe_is_judged_raw_and_said_so():
    v, hist, keep, note = normalised(30.0, None, [29.0, 30.0], [120.0, 121.0], "feed_x")
    assert (v, hist, keep) == (30.0, [29.0, 30.0], [0, 1])
    assert note == "feed_x missing tonight: judged raw"
    v, hist, keep, note = normalised(30.0, 120.0, [29.0, 30.0, 31.0], [116.0, None, 124.0], "f")
    assert v == 0.25 and hist == [0.25, 0.25] and keep == [0, 2]
    assert note == "/ f; 1 history night(s) without it left out"
    assert normalised([30.0, 60.0], 120.0, [[12.0]], [120.0], "f")[:2] == ([0.25, 0.5], [[0.1]])
    raw = nights(n=30, drift=0.0)
    gaps = {raw[1].label: [None if i in (12, 20) else v for i, v in enumerate(raw[1].values)]}
    norm, notes = attach_normalisers(raw[:1], "ceiling", gaps)
    assert notes == [f"{REC} ofbench_mpps: / feed_replay_ceiling_mpps; probe missing on "
                     "night(s) 13, 21: those nights judged raw against the raw history, left "
                     "out of later nights' history"]
    assert norm[0].divs[12] is None and norm[0].divs[11] == pytest.approx(raw[1].values[11])
    # night 13 without its probe: the same verdict as the raw series gets, never a ratio
    xs = raw[0].values
    assert verdict("auto", xs[:12], xs[12], 1, norm[0].divs) == verdict("auto", xs[:12], xs[12], 1)
    assert norm[0].normaliser == "feed_replay_ceiling_mpps"
    assert attach_normalisers(raw[:1], "ceiling")[1] == []     # no probe at all: nothing said


def _prov(i):
    return {"end_time": f"2026-11-{i + 1:02d}T02:00:00.000000Z", "git_sha": f"{i:02d}" + "a" * 38,
            "dut_switch_kind": "ofbench", "generator": "drivers/replay+net_pcap",
            "port_kind": "ring/pcap/null", "profile": "local"}


def test_the_nightly_divides_by_the_records_own_probe_and_the_page_names_it(tmp_path):
    """trend --normalise ceiling: tonight's rate and its history divided by the same night's
    ceiling (the history's probe points paired by time); the host got 6 % faster tonight
    (rate and ceiling alike): raw a progression, normalised ok; the row and the page name
    the probe."""
    marks = {"series_kind": {"feed_replay_ceiling_mpps": "rig", "host_mem_latency_1mib_ns": "rig"}}
    rnd = random.Random(2)
    hist_vals = [(30.0 * (1 + rnd.gauss(0, 0.005)), 125.0 * (1 + rnd.gauss(0, 0.005)))
                 for _ in range(20)]
    rec = {"suite": "switch", "name": "pipeline_64b_100k_flows", "params": marks,
           "metrics": {"ofbench_mpps": 31.8, "feed_replay_ceiling_mpps": 132.5,
                       "ofbench_cache_hit_ratio": 1.0, "host_mem_latency_1mib_ns": 7.0},
           "provenance": {**_prov(25), "end_time": "2026-11-26T02:00:00Z"}}
    keys = {k.metric: k for k, _ in record_keys(rec)}
    history = {keys["ofbench_mpps"]: [(_prov(i)["end_time"], d)
                                      for i, (d, _) in enumerate(hist_vals)],
               keys["feed_replay_ceiling_mpps"]: [(_prov(i)["end_time"], c)
                                                  for i, (_, c) in enumerate(hist_vals) if i != 4],
               keys["ofbench_cache_hit_ratio"]: [(_prov(i)["end_time"], 1.0) for i in range(20)]}
    commits = {keys["ofbench_mpps"]: [_prov(i)["git_sha"] for i in range(20)]}
    raw = {r.key.metric: r for r in trend_evaluate([rec], history, detector="auto",
                                                    commits=commits, normalise="none")}
    rows = {r.key.metric: r for r in trend_evaluate([rec], history, detector="auto",
                                                     commits=commits, normalise="ceiling")}
    assert raw["ofbench_mpps"].judgement.verdict == "progression"
    r = rows["ofbench_mpps"]
    assert r.judgement.verdict == "ok" and r.normaliser == "feed_replay_ceiling_mpps"
    assert r.raw_value == 31.8 and r.judgement.value == pytest.approx(31.8 / 132.5)
    assert r.note == "/ feed_replay_ceiling_mpps; 1 history night(s) without it left out"
    assert len(r.history) == 19 and r.history[0][1] == pytest.approx(hist_vals[0][0] / hist_vals[0][1])
    assert rows["ofbench_cache_hit_ratio"].normaliser == ""        # not a rate
    assert rows["feed_replay_ceiling_mpps"].normaliser == ""       # the probe itself
    # a real 10 % drop of the DUT on a host 6 % faster: still a regression once normalised
    slow = {**rec, "metrics": {**rec["metrics"], "ofbench_mpps": 31.8 * 0.9}}
    r = next(x for x in trend_evaluate([slow], history, detector="auto", commits=commits,
                                       normalise="ceiling") if x.key.metric == "ofbench_mpps")
    assert r.judgement.verdict == "regression" and r.commits == "19aaaaaaaaaa..25aaaaaaaaaa"
    # tonight without its probe: judged raw, said so
    gone = {**rec, "metrics": {k: v for k, v in rec["metrics"].items()
                               if k != "feed_replay_ceiling_mpps"}}
    r = next(x for x in trend_evaluate([gone], history, normalise="ceiling")
             if x.key.metric == "ofbench_mpps")
    assert r.note == "feed_replay_ceiling_mpps missing tonight: judged raw"
    assert r.judgement.value == 31.8 and r.judgement.verdict == "progression"
    page = write_trend_page(tmp_path, list(rows.values()), settings={"detector": "auto",
                                                                      "normalise": "ceiling"})
    text = page.read_text()
    assert "normalised by" in text and "/ feed_replay_ceiling_mpps" in text
    assert "divided by the same night&#x27;s rig probes (ceiling" in text or \
        "divided by the same night's rig probes (ceiling" in text
    data = json.loads((tmp_path / "trend.json").read_text())
    row = next(x for x in data["rows"] if x["metric"] == "ofbench_mpps")
    assert row["normaliser"] == "feed_replay_ceiling_mpps" and row["raw_value"] == 31.8
    with pytest.raises(ValueError, match="--normalise: expected one of"):
        trend_evaluate([rec], history, normalise="ratio")


def test_night_folders_keep_a_probes_gaps_and_trend_eval_says_them(tmp_path, capsys):
    root = tmp_path / "nights"
    raw = nights(n=32, drift=0.05, drift_at=20)
    for i in range(32):
        d = root / f"night-{i:02d}"
        d.mkdir(parents=True)
        m = {"ofbench_mpps": raw[0].values[i], "ofbench_cache_hit_ratio": 1.0}
        if i != 25:
            m["feed_replay_ceiling_mpps"] = raw[1].values[i]
        (d / "pipeline.json").write_text(json.dumps(
            {"suite": "switch", "name": "pipeline_64b_100k_flows", "metrics": m,
             "params": {"series_kind": {"feed_replay_ceiling_mpps": "rig"}},
             "provenance": {"dut_switch_kind": "ofbench", "generator": "drivers/replay+net_pcap",
                            "port_kind": "ring/pcap/null"}}))
    probes: dict = {}
    series = series_from_runs(sorted(root.iterdir()), probes)
    assert [s.label.split()[-1] for s in series] == ["ofbench_cache_hit_ratio", "ofbench_mpps"]
    assert list(probes) == [f"{REC} feed_replay_ceiling_mpps"] and probes[f"{REC} feed_replay_ceiling_mpps"][25] is None
    hist = tmp_path / "h.json"
    out = tmp_path / "f.json"
    assert main(["trend-eval", "--nights", str(root), "--save-history", str(hist), "--steps",
                 "10", "--reps", "3", "--normalise", "ceiling", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "normalise: ceiling" in text and "probe missing on night(s) 26" in text
    assert "DUT rates with a rig probe (1: ofbench_mpps), raw and normalised" in text
    assert load_probes(hist) == probes and len(load_history(hist)) == 2
    fig = json.loads(out.read_text())
    assert fig["normalise"] == "ceiling" and set(fig["by_normaliser"]) == {"none", "ceiling",
                                                                            "rig-index"}
    assert fig["normalisers"] == {f"{REC} ofbench_mpps": "feed_replay_ceiling_mpps"}
    # the host's 5 % drift is a false alarm raw, none once divided by the ceiling
    fa = {h: fig["by_normaliser"][h]["false_alarms_per_100_series_nights"]["auto"]
          for h in ("none", "ceiling")}
    assert fa["none"] > 0 and fa["ceiling"] == 0
    # from the saved file: the same gaps
    assert main(["trend-eval", "--history", str(hist), "--steps", "10", "--reps", "1",
                 "--normalise", "ceiling"]) == 0
    assert "probe missing on night(s) 26" in capsys.readouterr().out


def test_the_nightly_normalises_by_default():
    """make nightly's trend (the harness calls run_trend with its defaults) judges a DUT rate
    divided by its feed's ceiling; --normalise none judges it raw."""
    import inspect

    from reports.trend import NORMALISE_DEFAULT, run_trend
    assert NORMALISE_DEFAULT == "ceiling"
    assert inspect.signature(run_trend).parameters["normalise"].default == "ceiling"
    assert inspect.signature(trend_evaluate).parameters["normalise"].default == "ceiling"
    rec = {"suite": "switch", "name": "p", "provenance": _prov(3),
           "params": {"series_kind": {"feed_replay_ceiling_mpps": "rig"}},
           "metrics": {"ofbench_mpps": 30.0, "feed_replay_ceiling_mpps": 125.0}}
    rows = {r.key.metric: r for r in trend_evaluate([rec], {})}
    assert rows["ofbench_mpps"].normaliser == "feed_replay_ceiling_mpps"
    assert {r.key.metric: r for r in trend_evaluate([rec], {}, normalise="none")}[
        "ofbench_mpps"].normaliser == ""
