"""Result records: schema validation, writing, reading, run dirs, provenance."""
from __future__ import annotations

import datetime as dt
import json
import os
import re
import subprocess

import pytest

from reports.results import (ResultRecordError, ResultWriter, collect_provenance,
                             create_run_dir, file_build_id, load_results, new_run_id,
                             parse_rfc3339, schema, utc_rfc3339, validation_errors)
from reports.tests.sample import BASE_PROVENANCE, make_sample_run

T0 = dt.datetime(2024, 5, 1, 2, 3, 4, 123456, tzinfo=dt.timezone.utc)


@pytest.fixture
def writer(tmp_path):
    return ResultWriter(tmp_path / "run-20240501T020304Z-00ff", BASE_PROVENANCE)


def test_schema_is_valid_draft_2020_12():
    import jsonschema
    s = schema()
    assert s["$schema"].endswith("2020-12/schema")
    jsonschema.Draft202012Validator.check_schema(s)


def test_write_appends_one_valid_line_per_record(writer):
    rec = writer.write("throughput", "ndr_64b_1flows", {"ndr_mpps": 3.2, "ok": True, "x_us": None},
                       {"frame_size_b": 64, "sizes": [64, 128], "peer": {"kind": "ovs"}},
                       {"start_time": utc_rfc3339(T0), "end_time": utc_rfc3339(T0)})
    writer.write("throughput", "ndr_64b_2flows", {"ndr_mpps": 3.1})
    lines = writer.path.read_text().splitlines()
    assert len(lines) == 2
    first = json.loads(lines[0])
    assert first == rec
    assert first["schema_version"] == 2
    assert first["run_id"] == "run-20240501T020304Z-00ff"
    assert first["provenance"]["profile"] == "local"
    assert first["provenance"]["end_time"] == "2024-05-01T02:03:04.123456Z"
    # defaults: end_time = now, start_time = end_time
    second = json.loads(lines[1])["provenance"]
    assert second["start_time"] == second["end_time"]
    assert load_results(writer.run_dir, validate=True) == [first, json.loads(lines[1])]


BAD_RECORDS = [
    # (what to change, key that must be named in the error)
    ({"metrics": {"rx_mpps": "fast"}}, "metrics.rx_mpps"),
    ({"metrics": {"nested": {"a": 1}}}, "metrics.nested"),
    ({"metrics": {"rx_mpps": float("nan")}}, "metrics.rx_mpps"),
    ({"metrics": {"rx_mpps": float("inf")}}, "metrics.rx_mpps"),
    ({"metrics": {"Rx Mpps": 1.0}}, "metrics.Rx Mpps"),
    ({"metrics": [1, 2]}, "metrics"),
    ({"params": {"deep": {"a": {"b": 1}}}}, "params.deep"),
    ({"suite": "Bad Suite"}, "suite"),
    ({"name": ""}, "name"),
    ({"provenance": {"start_time": "yesterday"}}, "provenance.start_time"),
    ({"provenance": {"end_time": "2024-05-01T02:03:04+02:00"}}, "provenance.end_time"),
    ({"provenance": {"git_dirty": "no"}}, "provenance.git_dirty"),
    ({"provenance": {"git_sha": "not-a-sha"}}, "provenance.git_sha"),
    ({"provenance": {"profile": {"name": "x"}}}, "provenance.profile"),
    ({"target_misses": [{"metric": "ndr_mpps", "op": "~", "target": 1}]}, "target_misses.0.op"),
    ({"surprise": 1}, "surprise"),
]


@pytest.mark.parametrize("change,key", BAD_RECORDS, ids=[k for _, k in BAD_RECORDS])
def test_bad_record_names_the_key_and_writes_nothing(writer, change, key):
    args = {"suite": "smoke", "name": "ping", "metrics": {"ok": True}, "params": {},
            "provenance": {}}
    extra = {}
    for k, v in change.items():
        if k == "provenance":
            args["provenance"] = v
        elif k in args:
            args[k] = v
        else:
            extra[k] = v
    with pytest.raises(ResultRecordError) as err:
        writer.write(**args, **extra)
    assert key in str(err.value)
    assert "smoke/" in str(err.value) or "Bad Suite" in str(err.value)
    assert not writer.path.exists()


def test_missing_provenance_keys_are_each_named(tmp_path):
    w = ResultWriter(tmp_path, {"git_sha": "none"})
    with pytest.raises(ResultRecordError) as err:
        w.write("smoke", "ping", {"ok": True})
    for key in ("git_dirty", "dut_switch_kind", "dut_build", "generator", "generator_version",
                "profile", "port_kind", "host"):
        assert f"provenance.{key}: required key is missing" in str(err.value)
    assert not (tmp_path / "results.jsonl").exists()


def test_missing_top_level_key_is_named():
    problems = validation_errors({"schema_version": 1, "suite": "a", "name": "b",
                                  "metrics": {}, "provenance": {}})
    assert "params: required key is missing" in problems


def test_load_results_names_file_and_line_of_a_corrupt_line(tmp_path):
    make_sample_run(tmp_path)
    with open(tmp_path / "results.jsonl", "a") as f:
        f.write('{"suite": "torn\n')
    n = len((tmp_path / "results.jsonl").read_text().splitlines())
    with pytest.raises(ValueError, match=rf"results.jsonl:{n}: not a JSON record"):
        load_results(tmp_path)


def test_load_results_of_empty_run_is_empty(tmp_path):
    assert load_results(tmp_path) == []


def test_times_are_rfc3339_utc_and_round_trip():
    text = utc_rfc3339(T0)
    assert text == "2024-05-01T02:03:04.123456Z"
    assert parse_rfc3339(text) == T0
    assert utc_rfc3339(T0.astimezone(dt.timezone(dt.timedelta(hours=2)))) == text
    with pytest.raises(ValueError):
        utc_rfc3339(dt.datetime(2024, 1, 1))  # naive


def test_run_ids_and_latest_link(tmp_path):
    assert new_run_id(T0, "beef") == "run-20240501T020304Z-beef"
    assert re.fullmatch(r"run-\d{8}T\d{6}Z-[0-9a-f]{4}", new_run_id(T0))
    a = create_run_dir(tmp_path, T0)
    b = create_run_dir(tmp_path, T0)
    assert a != b and a.is_dir() and b.is_dir()
    latest = tmp_path / "latest"
    assert latest.is_symlink() and os.readlink(latest) == b.name  # relative: survives a move
    assert latest.resolve() == b.resolve()
    assert not list(tmp_path.glob(".latest*"))


def test_collect_provenance_in_a_git_repo(tmp_path, monkeypatch):
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q"], check=True)
    (repo / "f").write_text("1")
    subprocess.run([*git, "add", "f"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "x"], check=True)
    build = tmp_path / "build"
    (build / "dut" / "switch").mkdir(parents=True)
    (build / "dut" / "switch" / "ofswitch").write_bytes(b"binary")
    monkeypatch.setenv("OFBENCH_BUILD_DIR", str(build))
    prov = collect_provenance(repo)
    sha = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True).stdout
    assert prov["git_sha"] == sha.strip()
    assert prov["git_dirty"] is False
    assert prov["dut_build"] == file_build_id(build / "dut" / "switch" / "ofswitch")
    assert prov["dut_build"].startswith("sha256:") and prov["host"]
    (repo / "f").write_text("2")
    assert collect_provenance(repo)["git_dirty"] is True


def test_collect_provenance_outside_git_and_without_build(tmp_path, monkeypatch):
    monkeypatch.setenv("OFBENCH_BUILD_DIR", str(tmp_path / "nobuild"))
    prov = collect_provenance(tmp_path)
    assert prov["git_sha"] == "none" and prov["dut_build"] == "none"
    # and such provenance is still a valid record
    w = ResultWriter(tmp_path / "r", {**BASE_PROVENANCE, **prov})
    w.write("smoke", "ping", {"ok": True})


def test_target_misses_in_the_harness_format_are_accepted(writer):
    """dut/profiles/targets.py writes {metric, target: '>= 14.0', value, off_by, message}."""
    miss = {"metric": "ndr_mpps", "target": ">= 14.0", "value": 3.2, "off_by": -10.8,
            "message": "ndr_mpps = 3.2, target >= 14.0: off by -10.8 (-77.1%)"}
    not_measured = {"metric": "latency_p99_us", "target": "<= 50", "value": None,
                    "message": "latency_p99_us: target <= 50, not measured"}
    rec = writer.write("throughput", "ndr_64b_1flows", {"ndr_mpps": 3.2},
                       target_misses=[miss, not_measured], test_id="suites/x.py::test_y")
    assert rec["target_misses"][0] == miss and rec["test_id"] == "suites/x.py::test_y"


def test_prune_keeps_the_newest_and_latest(tmp_path):
    from reports.results import prune_run_dirs, update_latest_link
    dirs = [create_run_dir(tmp_path, T0 + dt.timedelta(seconds=i)) for i in range(5)]
    update_latest_link(tmp_path, dirs[0])  # latest may point at an old run: keep it anyway
    gone = prune_run_dirs(tmp_path, keep=2)
    assert sorted(gone) == dirs[1:3]
    assert [d.exists() for d in dirs] == [True, False, False, True, True]


def test_prune_deletes_only_folders_named_like_a_run_id(tmp_path):
    """Issue 38: a folder a person keeps in --reports-dir that merely starts with run- is not a
    run of ours: neither deleted nor counted."""
    from reports.results import prune_run_dirs
    mine = [create_run_dir(tmp_path, T0 + dt.timedelta(seconds=i)) for i in range(3)]
    theirs = ["run-notes", "run-2024-backup", "run-20240501T020304Z-abcd-old",
              "run-20240501T020304Z-ABCD", "run-20240501T020304Z-ab", "run-²0240501T020304Z-abcd"]
    for name in theirs:
        (tmp_path / name).mkdir()
        (tmp_path / name / "keep.txt").write_text("precious")
    gone = prune_run_dirs(tmp_path, keep=1)
    assert sorted(gone) == mine[:2]
    assert [d.exists() for d in mine] == [False, False, True]
    for name in theirs:
        assert (tmp_path / name / "keep.txt").read_text() == "precious", name


def test_version_1_records_stay_readable_and_v2_carries_the_search(tmp_path):
    """schema v2 = v1 + `search` (RFC 9971 goal results); a v1 record validates against v1."""
    for v in (1, 2):
        import jsonschema
        jsonschema.Draft202012Validator.check_schema(schema(v))
    w = ResultWriter(tmp_path, {"git_sha": "abc1234", "git_dirty": False, "dut_switch_kind": "ofbench",
                                "dut_build": "none", "generator": "softgen", "generator_version": "1",
                                "profile": "local", "port_kind": "memif", "host": "h"})
    goal = {"name": "ndr", "goal_loss_ratio": 0.0, "goal_exceed_ratio": 0.5,
            "goal_initial_trial_duration": 0.2, "goal_final_trial_duration": 0.5,
            "goal_duration_sum": 2.0, "goal_width": 0.05, "conditional_throughput_pps": 1.9e6,
            "relevant_lower_bound_pps": 1.9e6, "relevant_upper_bound_pps": 2.0e6,
            "lower_bound_trials": [{"rate_pps": 1.9e6, "duration_s": 0.5, "loss_ratio": 0.0}],
            "upper_bound_trials": []}
    rec = w.write("throughput", "ndr_64b_1flows", {"ndr_mpps": 1.9}, {},
                  search={"method": "mlrsearch", "goals": [goal]})
    assert rec["schema_version"] == 2 and rec["search"]["goals"][0]["name"] == "ndr"
    old = {k: v for k, v in rec.items() if k != "search"}
    old["schema_version"] = 1
    assert validation_errors(old) == []
    assert any(p.startswith("<record>: Additional properties")
               for p in validation_errors({**old, "search": rec["search"]})), "v1 has no search"
    with_log = {**rec, "search": {**rec["search"], "trial_log": [
        {"target": "mlr", "rate_pps": 1.9e6, "duration_s": 0.5, "loss_ratio": 0.0, "reason": "ok",
         "dut": {"cycles_per_packet": 120.5, "cache_hit_ratio": 0.99, "port_1_rx_packets": 950000}}]}}
    assert validation_errors(with_log) == []
    bad_dut = {**with_log, "search": {**with_log["search"], "trial_log": [
        {**with_log["search"]["trial_log"][0], "dut": {"cycles": "many"}}]}}
    assert any(p.startswith("search.trial_log.0.dut.cycles") for p in validation_errors(bad_dut))
    bad = {**rec, "search": {**rec["search"], "goals": [{**goal, "goal_exceed_ratio": 1.0}]}}
    assert any(p.startswith("search.goals.0.goal_exceed_ratio") for p in validation_errors(bad))
