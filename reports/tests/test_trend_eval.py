"""trend-eval on a small synthetic history: steps are found, quiet series stay quiet, a short
history is refused naming the option."""
import json
import random

import pytest

from reports.__main__ import main
from reports.trend_eval import (DETECTORS, HistoryError, Series, evaluate, load_history,
                                save_history, series_from_runs)


def synthetic(n_series=6, nights=32, noise=0.01, seed=3):
    rnd = random.Random(seed)
    out = []
    for i in range(n_series):
        direction = 1 if i % 2 == 0 else -1
        base = 5.0 + i
        out.append(Series(f"s{i}", direction, [base * (1 + rnd.gauss(0, noise)) for _ in range(nights)]))
    return out


def test_steps_are_found_and_quiet_series_stay_quiet():
    ev = evaluate(synthetic(), steps_pct=(5, 20), reps=3, seed=1)
    by = {(s.detector, s.step_pct): s for s in ev.steps}
    for d in DETECTORS:
        s20 = by[(d, 20.0)]
        assert s20.injected == 18 and s20.detection_rate == 1.0 and s20.within_2_rate == 1.0
        # a confirmation night; auto: mad2 for the lower-is-better half of the series
        assert s20.median_nights == (2 if d in ("csit", "mad2") else 1) if d != "auto" \
            else 1 <= s20.median_nights <= 2
        assert ev.false_alarms_per_100(d) <= 10.0
    assert ev.series_nights == 6 * (32 - 10) and ev.n_nights == 32
    assert ev.best() in DETECTORS
    d = ev.as_dict()
    assert set(d["false_alarms_per_100_series_nights"]) == set(DETECTORS) and len(d["steps"]) == 2 * len(DETECTORS)
    assert "within 2 nights" in ev.table()


def test_a_step_inside_the_noise_is_rarely_found():
    ev = evaluate(synthetic(noise=0.2), steps_pct=(5,), reps=3, seed=1)
    assert all(s.within_2_rate < 0.9 for s in ev.steps)


def test_history_too_short_names_the_option():
    with pytest.raises(HistoryError, match=r"^--min-nights: history too short to group: 12 runs"):
        evaluate(synthetic(nights=12))
    with pytest.raises(HistoryError, match=r"no tracked series"):
        evaluate([])


def test_history_file_round_trip_and_cli(tmp_path, capsys):
    path = save_history(synthetic(), tmp_path / "h.json", "synthetic")
    assert [s.values for s in load_history(path)] == [s.values for s in synthetic()]
    out = tmp_path / "figures.json"
    assert main(["trend-eval", "--history", str(path), "--steps", "20", "--reps", "1",
                 "--out", str(out)]) == 0
    figures = json.loads(out.read_text())
    assert figures["n_series"] == 6 and figures["best"] in DETECTORS
    assert main(["trend-eval", "--history", str(path), "--min-nights", "40"]) == 2
    assert "--min-nights: history too short" in capsys.readouterr().err


def test_series_from_runs_keeps_tracked_metrics_present_every_night(tmp_path):
    from reports.results import ResultWriter
    prov = {"git_sha": "abc1234", "git_dirty": False, "dut_switch_kind": "none", "dut_build": "none",
            "generator": "softgen", "generator_version": "1", "profile": "local", "port_kind": "ring",
            "host": "h"}
    for night in range(3):
        w = ResultWriter(tmp_path / f"run-2026110{night}T000000Z-000{night}", prov)
        w.write("throughput", "ndr_64b_1flows_loopback",
                {"ndr_mpps": 4.0 + night, "tx_packets": 10, "lost_packets": 0.0,
                 **({"pdr_mpps": 4.0} if night else {})})
    series = series_from_runs(sorted(tmp_path.glob("run-*")))
    assert [s.label.split()[-1] for s in series] == ["ndr_mpps"]   # pdr missing once, 0 and untracked left out
    assert series[0].values == [4.0, 5.0, 6.0] and series[0].direction == 1


def test_series_are_split_by_their_noise():
    from reports.trend_eval import by_noise, noise_of
    quiet, loud = synthetic(2, noise=0.01), synthetic(2, noise=0.5, seed=4)
    assert noise_of(quiet[0]) < 0.05 <= noise_of(loud[0])
    groups = by_noise(quiet + loud)
    assert [len(groups["steady"]), len(groups["noisy"])] == [2, 2]
    assert list(by_noise(quiet)) == ["steady"]


def test_night_folders_keep_trials_and_steps_scale_them(tmp_path, capsys):
    """A night folder: a run folder below it and a suite CLI's printed record beside it; the
    trials (params <metric>_reps) are kept, saved with each night's provenance, and csit reads
    them; an injected step scales a night's trials too."""
    from reports.results import ResultWriter
    from reports.trend_eval import scaled
    prov = {"git_sha": "abc1234", "git_dirty": False, "dut_switch_kind": "none", "dut_build": "none",
            "generator": "softgen", "generator_version": "1", "profile": "local", "port_kind": "ring",
            "host": "h"}
    rnd = random.Random(7)
    root = tmp_path / "quiet"
    for night in range(32):
        d = root / f"night-{night:02d}"
        w = ResultWriter(d / "runs" / f"run-202611{night % 28 + 1:02d}T000000Z-00{night:02d}", prov)
        w.write("throughput", "loopback", {"ndr_mpps": 4.0})
        reps = [30 * (1 + rnd.gauss(0, 0.003)) for _ in range(5)]
        (d / "pipeline.json").write_text(json.dumps(
            {"suite": "switch", "name": "pipeline_64b_100k_flows",
             "metrics": {"ofbench_replay_mpps": sorted(reps)[2]},
             "params": {"ofbench_replay_mpps_reps": reps}}))
        (d / "night.json").write_text(json.dumps({"start": f"night {night}", "loadavg_before": "0.1"}))
        (d / "pipeline.log").write_text("not a record")
    hist = tmp_path / "h.json"
    assert main(["trend-eval", "--nights", str(root), "--save-history", str(hist),
                 "--steps", "10", "--reps", "2"]) == 0
    out = capsys.readouterr().out
    assert "with_trials series" in out and "csit" in out
    saved = json.loads(hist.read_text())
    assert [n["start"] for n in saved["nights"][:2]] == ["night 0", "night 1"]
    series = load_history(hist)
    pipe = next(s for s in series if s.label.endswith("ofbench_replay_mpps"))
    assert len(pipe.trials) == 32 and len(pipe.trials[0]) == 5
    assert pipe.runs()[0] == pipe.trials[0]
    assert next(s for s in series if s.label.endswith("ndr_mpps")).trials is None
    assert scaled([1.0, 2.0], 0.9) == [0.9, 1.8] and scaled(2.0, 0.5) == 1.0
    ev = evaluate([pipe], steps_pct=(10,), reps=5, seed=1)
    s10 = next(s for s in ev.steps if s.detector == "csit")
    assert s10.within_2_rate == 1.0 and ev.false_alarms_per_100("csit") == 0.0
    assert main(["trend-eval", "--nights", str(tmp_path / "none")]) == 2
    assert "--nights: no night folders" in capsys.readouterr().err


def test_the_better_detector_pays_fewer_false_alarms_per_step_found():
    from reports.trend_eval import Evaluation, StepResult
    steps = [StepResult("mad", 10.0, 100, 60, 59, []), StepResult("mad2", 10.0, 100, 48, 47, []),
             StepResult("jumpavg", 10.0, 100, 80, 62, []), StepResult("csit", 10.0, 100, 41, 40, [])]
    steps.append(StepResult("auto", 10.0, 100, 45, 44, []))
    ev = Evaluation(steps, {"mad": 16, "mad2": 5, "jumpavg": 35, "csit": 12, "jlog": 30,
                            "auto": 6}, 100, 4, 28)
    assert ev.best() == "mad2"                      # 5 / 47 beats 16 / 59, 12 / 40, 35 / 62
    assert ev.as_dict()["false_alarms_per_10pct_step_found"]["mad2"] == pytest.approx(5 / 47, abs=1e-3)
    # meeting the goal beats any ratio
    steps[2] = StepResult("jumpavg", 10.0, 100, 96, 96, [])
    assert Evaluation(steps, {"mad": 16, "mad2": 5, "jumpavg": 1, "csit": 12, "jlog": 30,
                              "auto": 6}, 100, 4, 28).best() == "jumpavg"


def test_series_kinds_come_from_the_records_and_reach_from_the_noise(capsys, tmp_path):
    """rig: a record whose dut_switch_kind is "none" (the generator measuring itself); the
    rest is the DUT's, by direction; a record without the field counts as the DUT's. A series
    is within reach of the goal when its nights' sigma <= 3.2 % and <= 5 % of them are 10 %
    off; trend-eval prints every detector side by side per kind."""
    from reports.trend_eval import (REACH_SIGMA, by_kind, outlier_share, series_kind,
                                    side_by_side, trials_vs_nights, within_reach)
    assert series_kind("none", +1) == "rig" and series_kind("ofbench", +1) == "dut_rate"
    assert series_kind("ofbench", -1) == "dut_latency" and series_kind("", -1) == "dut_latency"
    assert Series("throughput/loop [none, softgen, ring] latency_p50_us", -1, [1.0]).kind == "rig"
    assert Series("switch/pipe [, , ] ofbench_mpps", 1, [1.0]).kind == "dut_rate"
    assert Series("x/y [ovs, softgen, memif, 405bf] p99_us", -1, [1.0]).kind == "dut_latency"
    assert 0.031 < REACH_SIGMA < 0.033
    rnd = random.Random(5)
    steady = Series("a/b [ofbench, g, p] rx_mpps", 1, [30 * (1 + rnd.gauss(0, 0.01)) for _ in range(32)])
    grid = Series("a/b [none, g, p] latency_p50_us", -1, [0.041] * 26 + [0.051] * 6)
    tails = Series("a/b [none, g, p] latency_p99_us", -1, [100 * 10 ** rnd.uniform(0, 2) for _ in range(32)])
    assert within_reach(steady) and not within_reach(tails)
    assert outlier_share(grid) == 6 / 32 and not within_reach(grid)   # MAD 0, yet 24 % jumps
    assert set(by_kind([steady, grid, tails])) == {"dut_rate", "rig"}
    ev = {"dut_rate": evaluate([steady], (10,), 3, 1), "rig": evaluate([grid, tails], (10,), 3, 1)}
    table = side_by_side(ev, {"dut_rate": [steady], "rig": [grid, tails]})
    assert "dut_rate" in table and "auto" in table and table.count("\n") == 4
    trials = Series("a/b [ofbench, g, p] rx_mpps", 1, steady.values,
                    [[v * 0.99, v, v * 1.01] for v in steady.values])
    within, nights = trials_vs_nights(trials)
    assert within == pytest.approx(0.01, rel=0.01) and 0.005 < nights < 0.02
    assert trials_vs_nights(steady) is None
    path = save_history([steady, grid, tails, trials], tmp_path / "h.json", "synthetic")
    out = tmp_path / "f.json"
    assert main(["trend-eval", "--history", str(path), "--steps", "10", "--reps", "2",
                 "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "by kind (rig: what the records mark rig" in text and "trials vs nights" in text
    fig = json.loads(out.read_text())
    assert set(fig["by_kind"]) == {"dut_rate", "rig", "within_reach"}
    assert fig["by_kind"]["rig"]["nights_10pct_off_pct"]["a/b [none, g, p] latency_p50_us"] == 18.8


def test_a_record_marks_its_rig_bound_metrics_and_the_history_keeps_the_kind(tmp_path, capsys):
    """A pipeline record holds the switch's rates beside the rig's own probes (memory latency,
    the feed's ceiling): params series_kind {metric: "rig"} sets those apart by what they are;
    the kind is saved with the history and read back; a mark that is no kind is refused."""
    from reports.trend_eval import record_kind
    rec = {"suite": "switch", "name": "pipe", "metrics": {},
           "params": {"series_kind": {"host_mem_latency_1mib_ns": "rig",
                                      "feed_replay_ceiling_mpps": "rig", "ofbench_install_s": "dut"}},
           "provenance": {"dut_switch_kind": "ofbench"}}
    assert record_kind(rec, "host_mem_latency_1mib_ns") == "rig"
    assert record_kind(rec, "feed_replay_ceiling_mpps") == "rig"
    assert record_kind(rec, "ofbench_mpps") == "dut_rate"
    assert record_kind(rec, "ofbench_install_s") == "dut_latency"
    assert record_kind({**rec, "params": {"series_kind": "rig"}}, "ofbench_mpps") == "rig"
    assert record_kind({"provenance": {"dut_switch_kind": "none"}}, "ndr_mpps") == "rig"
    with pytest.raises(HistoryError, match=r"night-3: switch/pipe params.series_kind\[ofbench_mpps\]"):
        record_kind({**rec, "params": {"series_kind": {"ofbench_mpps": "rigg"}}}, "ofbench_mpps",
                    "night-3")
    root = tmp_path / "nights"
    for night in range(12):
        d = root / f"night-{night:02d}"
        d.mkdir(parents=True)
        (d / "pipeline.json").write_text(json.dumps(
            {**rec, "metrics": {"ofbench_mpps": 30.0 + night % 2, "host_mem_latency_1mib_ns": 7.0,
                                "feed_replay_ceiling_mpps": 120.0, "ofbench_install_s": 0.3}}))
    series = series_from_runs(sorted(root.iterdir()))
    kinds = {s.label.split()[-1]: s.kind for s in series}
    assert kinds == {"ofbench_mpps": "dut_rate", "host_mem_latency_1mib_ns": "rig",
                     "feed_replay_ceiling_mpps": "rig", "ofbench_install_s": "dut_latency"}
    path = save_history(series, tmp_path / "h.json", "synthetic")
    assert {s.label.split()[-1]: s.kind for s in load_history(path)} == kinds
    bad = json.loads(path.read_text())
    bad["series"][0]["series_kind"] = "dut"
    path.write_text(json.dumps(bad))
    assert main(["trend-eval", "--history", str(path), "--min-nights", "12"]) == 2
    assert "series_kind expected one of dut_rate, dut_latency, rig, got 'dut'" in capsys.readouterr().err
