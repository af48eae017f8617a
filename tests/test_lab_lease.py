"""Lab leases through labgrid's real coordinator on loopback (drivers/lab/lease.py): places
are light (a local profile: nothing but the lease is exercised), runs are real pytest runs of
suites/smoke/test_lab_place.py. Each run's state goes to a private state root."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from drivers.lab import lease as L
from paths import REPO

SMOKE = "suites/smoke/test_lab_place.py"

pytestmark = pytest.mark.skipif(not (L.labgrid_venv() / "bin" / "labgrid-coordinator").exists(),
                                reason=".venv-labgrid missing (make setup creates it)")


@pytest.fixture
def env(tmp_path, monkeypatch):
    # only the lease records are private: the runs' state root stays the box's, so their
    # cleanup sees every other run of this box (a private root would take theirs for orphans)
    leases = tmp_path / "leases"
    monkeypatch.setenv("OFBENCH_LEASE_DIR", str(leases))
    e = dict(os.environ, OFBENCH_LEASE_DIR=str(leases))
    e.pop("LG_COORDINATOR", None)
    return e


@pytest.fixture
def coordinator(tmp_path):
    with L.LocalCoordinator(None, tmp_path / "coord-logs") as c:
        yield c


def profile_file(tmp_path, coordinator: str, place: str) -> Path:
    p = tmp_path / f"{place}.yaml"
    p.write_text(yaml.safe_dump({"schema_version": 1, "lab": {
        "kind": "local", "coordinator": coordinator, "place": place, "tags": {"pool": "t"}},
        "switch": {"kind": "ofbench"}}))
    return p


def register(coordinator, place, **tags):
    agent = L.Agent(coordinator.address)
    try:
        agent.ok("register", place=place, tags={"profile": "local", **tags})
    finally:
        agent.close()


def places(coordinator) -> dict:
    agent = L.Agent(coordinator.address)
    try:
        return agent.ok("places")["places"]
    finally:
        agent.close()


def run(dut, tmp_path, env, *extra, hold_s=0.0, wait=True, name="r"):
    reports = tmp_path / f"reports-{name}"
    argv = [sys.executable, "-m", "pytest", SMOKE, f"--dut={dut}", f"--reports-dir={reports}",
            "-q", "-p", "no:randomly", *extra]
    e = dict(env, OFBENCH_LEASE_HOLD_S=str(hold_s))
    if not wait:
        p = subprocess.Popen(argv, cwd=REPO, env=e, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, start_new_session=True)
        return p, reports
    cp = subprocess.run(argv, cwd=REPO, env=e, capture_output=True, text=True, timeout=180)
    return cp, reports


def wait_for_hold(p, timeout_s=90.0) -> str:
    """Read the run's output until its first test is holding the place (what it said so far)."""
    out, deadline = "", time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        line = p.stdout.readline()
        if not line:
            break
        out += line
        if "smoke: holding place" in line:
            return out
    raise AssertionError(f"the run never held its place:\n{out[-3000:]}")


def records(reports: Path) -> list[dict]:
    (run_dir,) = [p for p in reports.glob("run-*") if p.is_dir()]
    path = run_dir / "results.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def held_record(reports):
    return next(r for r in records(reports) if r["name"] == "lab_place_held")


def test_place_tags_come_from_the_profile():
    from dut.profiles.schema import load_profile
    tags = L.place_tags(load_profile("lab-emu"))
    assert tags["profile"] == "lab-emu" and tags["testbed"] == "emulated"
    assert tags["switch"] == "ofbench" and tags["generator"] == "softgen"
    assert tags["nic"] == "memif" and tags["f_softgen"] == "yes"
    assert L.place_tags(load_profile("lab1"))["nic"] == "pci"


@pytest.mark.parametrize("spec, words", [("", "empty tag filter"), ("pool", "not a tag filter"),
                                         ("Pool=x", "not a tag filter"),
                                         ("pool=a b", "not a tag filter")])
def test_bad_pool_filter(spec, words):
    with pytest.raises(L.LeaseError, match=words):
        L.parse_filter(spec)


def test_run_holds_its_place_and_names_it(coordinator, tmp_path, env):
    register(coordinator, "pa", pool="t")
    cp, reports = run(profile_file(tmp_path, coordinator.address, "pa"), tmp_path, env)
    assert cp.returncode == 0, cp.stdout[-3000:] + cp.stderr[-2000:]
    rec = held_record(reports)
    assert rec["provenance"]["place"] == "pa" and rec["provenance"]["lease_holder"].endswith(
        reports.glob("run-*").__next__().name)
    session = json.loads(next(reports.glob("run-*/session.json")).read_text())
    assert session["lease"]["place"] == "pa"
    assert places(coordinator)["pa"]["acquired"] is None, "released at the end"
    assert not list(Path(env["OFBENCH_LEASE_DIR"]).glob("*.json"))


def test_two_runs_on_one_place_the_second_waits(coordinator, tmp_path, env):
    register(coordinator, "pa", pool="t")
    prof = profile_file(tmp_path, coordinator.address, "pa")
    p1, rep1 = run(prof, tmp_path, env, hold_s=8, wait=False, name="1")
    said = wait_for_hold(p1)
    cp2, rep2 = run(prof, tmp_path, env, name="2")
    out1, _ = p1.communicate(timeout=120)
    assert p1.returncode == 0, said + out1[-3000:]
    assert cp2.returncode == 0, cp2.stdout[-3000:]
    a, b = held_record(rep1)["metrics"], held_record(rep2)["metrics"]
    assert b["lease_waited_s"] > 1.0, "the second run waited in the queue"
    first_end = json.loads(next(rep1.glob("run-*/session.json")).read_text())
    assert b["lease_acquired_at_s"] >= a["hold_end_s"], "no overlap"
    assert b["lease_acquired_at_s"] - a["hold_end_s"] < 10
    assert first_end["lease"]["place"] == "pa"


def test_two_runs_on_a_pool_of_two_run_at_once(coordinator, tmp_path, env):
    register(coordinator, "pa", pool="t")
    register(coordinator, "pb", pool="t")
    runs = [run("pool:pool=t", tmp_path, env, "--lab-coordinator", coordinator.address,
                hold_s=8, wait=False, name=str(i)) for i in (1, 2)]
    outs = [p.communicate(timeout=120)[0] for p, _ in runs]
    for (p, _), out in zip(runs, outs):
        assert p.returncode == 0, out[-3000:]
    recs = [held_record(rep) for _, rep in runs]
    a, b = (r["metrics"] for r in recs)
    assert max(a["lease_acquired_at_s"], b["lease_acquired_at_s"]) < min(
        a["hold_end_s"], b["hold_end_s"]), "both held a place at the same time"
    assert {r["provenance"]["place"] for r in recs} == {"pa", "pb"}
    assert all(r["provenance"]["pool"] == "pool=t" for r in recs)
    assert all(r["metrics"]["lease_waited_s"] < 2.5 for r in recs), "neither waited"


def test_sigkilled_run_is_released_by_the_next_run(coordinator, tmp_path, env):
    register(coordinator, "pa", pool="t")
    prof = profile_file(tmp_path, coordinator.address, "pa")
    p1, rep1 = run(prof, tmp_path, env, hold_s=60, wait=False, name="1")
    deadline = time.monotonic() + 60
    while places(coordinator)["pa"]["acquired"] is None and time.monotonic() < deadline:
        time.sleep(0.2)
    (rec,) = [json.loads(p.read_text())
              for p in Path(env["OFBENCH_LEASE_DIR"]).glob("*.json")]
    for pid in (rec["agent_pid"], p1.pid):   # the run and its agent, as a SIGKILL of the group
        os.killpg(pid, signal.SIGKILL)
    p1.wait(10)
    assert places(coordinator)["pa"]["acquired"] == rec["holder"], "still held by the dead run"
    cp2, rep2 = run(prof, tmp_path, env, "--lab-wait", "10", name="2")
    assert cp2.returncode == 0, cp2.stdout[-3000:]
    assert f"dead run {rec['run_id']}" in cp2.stdout + cp2.stderr
    assert held_record(rep2)["metrics"]["lease_waited_s"] < 5


def test_place_taken_away_stops_the_run_naming_the_holder(coordinator, tmp_path, env):
    register(coordinator, "pa", pool="t")
    prof = profile_file(tmp_path, coordinator.address, "pa")
    p1, rep1 = run(prof, tmp_path, env, hold_s=4, wait=False, name="1")
    deadline = time.monotonic() + 60
    while places(coordinator)["pa"]["acquired"] is None and time.monotonic() < deadline:
        time.sleep(0.2)
    thief = L.Agent(coordinator.address, user="thief")
    try:
        thief.ok("kick", place="pa")
        thief.ok("acquire", place="pa")
        out, _ = p1.communicate(timeout=120)
    finally:
        thief.close()
    assert p1.returncode == 4, out[-3000:]
    assert "was taken from this run (now held by" in out and "/thief)" in out, out[-3000:]
    assert not any(r["name"] == "lab_place_held" for r in records(rep1)), \
        "no record of a measurement taken after the place was lost"
    print(out[-1500:])


@pytest.mark.parametrize("case", ["coordinator_down", "unknown_place", "empty_pool",
                                  "wait_timeout"])
def test_bad_input_one_clear_message_nothing_held(coordinator, tmp_path, env, case):
    register(coordinator, "pa", pool="t")
    extra = []
    if case == "coordinator_down":
        dut, words = profile_file(tmp_path, f"127.0.0.1:{L._free_port()}", "pa"), \
            "lab.coordinator (127.0.0.1:"
    elif case == "unknown_place":
        dut, words = profile_file(tmp_path, coordinator.address, "nosuch"), \
            "no place 'nosuch' on coordinator"
    elif case == "empty_pool":
        dut, words = "pool:pool=none", "pool pool=none is empty"
        extra = ["--lab-coordinator", coordinator.address]
    else:
        holder = L.Agent(coordinator.address, user="other")
        holder.ok("acquire", place="pa")
        dut, words = profile_file(tmp_path, coordinator.address, "pa"), "came free in 1 s"
        extra = ["--lab-wait", "1"]
    try:
        cp, reports = run(dut, tmp_path, env, *extra)
    finally:
        if case == "wait_timeout":
            holder.close()
    assert cp.returncode == 4, cp.stdout[-3000:] + cp.stderr[-3000:]
    assert words in cp.stdout + cp.stderr, cp.stdout[-3000:] + cp.stderr[-3000:]
    if case == "wait_timeout":
        assert "held: pa by" in cp.stdout + cp.stderr
    if case != "coordinator_down":
        assert all(p["acquired"] is None and p["reservation"] is None
                   for p in places(coordinator).values())
    assert not list(Path(env["OFBENCH_LEASE_DIR"]).glob("*.json"))


def test_local_coordinator_is_the_runs_own_and_stops_with_it(tmp_path, env):
    """--lab-coordinator=local (what `make test` gives lab-emu): a coordinator on loopback for
    this run alone, the profile's place registered, held, released, the coordinator stopped."""
    prof = tmp_path / "solo.yaml"
    prof.write_text(yaml.safe_dump({"schema_version": 1, "lab": {"kind": "local"},
                                    "switch": {"kind": "ofbench"}}))
    cp, reports = run(prof, tmp_path, env, "--lab-coordinator", "local")
    assert cp.returncode == 0, cp.stdout[-3000:] + cp.stderr[-2000:]
    assert held_record(reports)["provenance"]["place"] == "solo"
    lease = json.loads(next(reports.glob("run-*/session.json")).read_text())["lease"]
    host, _, port = lease["coordinator"].rpartition(":")
    assert not L._accepts(host, int(port)), "the run's coordinator is gone with it"


def test_pool_needs_a_shared_coordinator(tmp_path, env):
    cp, _ = run("pool:pool=t", tmp_path, env, "--lab-coordinator", "local")
    assert cp.returncode == 4 and "shared coordinator" in cp.stdout + cp.stderr
    cp, _ = run("pool:pool=t", tmp_path, env)
    assert cp.returncode == 4 and "--lab-coordinator HOST:PORT" in cp.stdout + cp.stderr


def test_bench_analysis_finds_overlaps_and_waiter_delays():
    from drivers.lab.lease_bench import analyse
    holds = [{"place": "a", "acquired_at": 0.0, "released_at": 1.0, "waited_s": 0.0},
             {"place": "a", "acquired_at": 1.2, "released_at": 2.0, "waited_s": 1.1},
             {"place": "a", "acquired_at": 1.9, "released_at": 3.0, "waited_s": 1.8},
             {"place": "b", "acquired_at": 0.0, "released_at": 9.0, "waited_s": 0.0},
             {"place": "b", "acquired_at": 15.0, "released_at": 16.0, "waited_s": 14.9}]
    out = analyse(holds)
    assert out["overlapping_holds"] == 1 and out["waiters"] == 2
    assert out["start_after_release_s"]["over_5s"] == 1


def test_bench_small(tmp_path):
    """The benchmark's own path, small: 6 contended acquisitions, no overlap."""
    from drivers.lab.lease_bench import main
    assert main(["--acquisitions", "6", "--runs", "3", "--places", "2", "--hold", "0.2"]) == 0


def test_a_changed_testbed_on_a_place_is_reported_as_such(coordinator, tmp_path, env):
    register(coordinator, "pa", pool="t", testbed_id="000000000000")
    prof = profile_file(tmp_path, coordinator.address, "pa")
    cp, reports = run(prof, tmp_path, env, name="1")
    assert cp.returncode == 0, cp.stdout[-3000:]
    assert "testbed of place pa changed: id 000000000000 ->" in cp.stdout
    session = json.loads(next(reports.glob("run-*/session.json")).read_text())
    new = session["testbed"]["testbed_id"]
    assert session["testbed"]["changed_from"] == "000000000000"
    assert places(coordinator)["pa"]["tags"]["testbed_id"] == new
    assert held_record(reports)["provenance"]["testbed_id"] == new
    cp, _ = run(prof, tmp_path, env, name="2")
    assert cp.returncode == 0 and "testbed of place" not in cp.stdout
