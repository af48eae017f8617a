"""Issue 38's spool goal: 1000 records exported by child processes that are interrupted at
random points (SIGINT, i.e. Ctrl-C, often inside a send; SIGKILL, maybe inside a spool write),
with torn writes in the spool and InfluxDB going away and coming back; after a final replay
every record is in the real InfluxDB exactly once.

"Exactly once" is counted by InfluxDB's own point identity: a record is one point (measurement
= suite, tags, time = its end time), and writing the same point again overwrites it. The spool
is at-least-once by design (a batch in flight when a send is interrupted is spooled too, and a
record whose export a SIGKILL cut short is exported again by the "next run"), so duplicates
collapse in the database; what the test proves is that no record handed to the exporter is
lost, that nothing else arrives, and that each record is one point with its own values.

Which records a child was handed, and which the parent must hand again (as a re-run would):
- a record whose export() returned (the child logs "done") is the spool's or InfluxDB's;
- a record whose export() a Ctrl-C interrupted inside a send or a spool write (the traceback
  says so; the child logs "handed") must be kept by the spool: never handed again;
- anything else (SIGKILL, a Ctrl-C outside a send) is handed again; re-sending is harmless.

Seed: OFBENCH_SPOOL_SEED (printed on failure) replays a run's choices.
"""
from __future__ import annotations

import datetime as dt
import json
import os
import random
import signal
import subprocess
import sys
import time
import warnings

import pytest

from reports.influx import InfluxExporter, InfluxSpoolWarning
from reports.influxd import LocalInfluxd
from reports.results import ResultWriter
from reports.tests.sample import BASE_PROVENANCE, provenance_at
from paths import REPO

N = 1000
T0 = dt.datetime(2024, 6, 1, 0, 0, tzinfo=dt.timezone.utc)

CHILD = r"""
import json, sys, traceback
from reports.influx import InfluxExporter
spool, url, bucket, recfile, indices, logfile, batch = sys.argv[1:8]
recs = [json.loads(line) for line in open(recfile)]
log = open(logfile, "a", buffering=1)
exp = InfluxExporter(url, bucket=bucket, spool_dir=spool, timeout_ms=3000, retry_after_s=0.02)
print("go", flush=True)
i = None
try:
    indices = json.loads(indices)
    for start in range(0, len(indices), int(batch)):
        part = indices[start:start + int(batch)]
        i = part[0]
        exp.export([recs[j] for j in part])
        log.write("".join(f"done {j}\n" for j in part))
    log.write("finished\n")
except KeyboardInterrupt as e:
    where = {f.name for f in traceback.extract_tb(e.__traceback__)}
    if where & {"_send", "_send_isolating_rejects", "_replay_locked", "_spool"}:
        log.write(f"handed {i}\n")   # batch 1 in the chaos rounds: i is the record in flight
    else:
        log.write(f"elsewhere {i} {sorted(where)}\n")
    sys.exit(130)
"""


@pytest.fixture
def influxd(tmp_path):
    srv = LocalInfluxd(data_dir=tmp_path / "influxdb", flux_enabled=False, db="chaos")
    srv.start()
    try:
        yield srv
    finally:
        srv.kill()


def test_interrupted_exports_lose_and_duplicate_nothing(tmp_path, influxd):
    seed = int(os.environ.get("OFBENCH_SPOOL_SEED", time.time_ns() % 2 ** 32))
    rng = random.Random(seed)
    w = ResultWriter(tmp_path / "run-20240601T000000Z-c4a0", BASE_PROVENANCE)
    recs = [w.write("smoke", f"rec{i}", {"rx_mpps": float(i), "ok": i % 2 == 0}, {"i": i},
                    provenance_at(T0 + dt.timedelta(seconds=i))) for i in range(N)]
    recfile = tmp_path / "records.jsonl"
    recfile.write_text("".join(json.dumps(r) + "\n" for r in recs))
    spool = tmp_path / "spool"
    settings = influxd.client_settings()
    spool_path = InfluxExporter(**settings, spool_dir=spool).spool_path
    env = {**os.environ, "PYTHONPATH": str(REPO)}

    remaining = list(range(N))      # not yet handed to an exporter for good
    stats = {"sigint": 0, "sigint_in_send": 0, "sigkill": 0, "torn": 0, "down": 0, "rounds": 0}
    # the first rounds make sure every kind of trouble happens; then chance decides
    script = [("up", "sigint", False), ("up", "sigkill", False), ("down", "finish", True),
              ("down", "sigkill", True), ("up", "sigint", False), ("down", "sigint", True)]
    rounds = 30     # of chaos (one record per export, as the harness exports); then the rest
    while remaining:
        r = stats["rounds"]
        stats["rounds"] += 1
        if r < len(script):
            server, action, torn = script[r]
        elif r < rounds:
            server, action, torn = (rng.choice(["up", "up", "down"]),
                                    rng.choice(["finish", "sigint", "sigint", "sigkill"]),
                                    rng.random() < 0.3)
        else:   # the next run: exports everything not handed yet, uninterrupted
            server, action, torn = "up", "finish", False
        if server == "up":
            influxd.start()     # no-op when running
        else:
            influxd.kill()
            stats["down"] += 1
        if torn:  # a writer died mid-line: part of a record not handed yet, or all but "\n"
            line = json.dumps(recs[rng.choice(remaining)])
            with open(spool_path, "a") as f:
                f.write(line[:rng.randrange(1, len(line) + 1)])
            stats["torn"] += 1
        chunk = remaining[:rng.randint(20, 60)] if r < rounds else remaining
        log = tmp_path / f"child-{r}.log"
        child = subprocess.Popen([sys.executable, "-c", CHILD, str(spool), settings["url"],
                                  settings["bucket"], str(recfile), json.dumps(chunk), str(log),
                                  "1" if r < rounds else "200"],
                                 stdout=subprocess.PIPE, text=True, env=env, cwd=REPO)
        try:
            assert child.stdout.readline().strip() == "go"
            if action != "finish":
                time.sleep(rng.uniform(0, 0.2 if server == "up" else 0.05))
                child.send_signal(signal.SIGINT if action == "sigint" else signal.SIGKILL)
                stats[action] += 1
            child.wait(30)
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
        lines = log.read_text().splitlines() if log.exists() else []
        handed = {int(x.split()[1]) for x in lines if x.startswith(("done ", "handed "))}
        stats["sigint_in_send"] += sum(x.startswith("handed ") for x in lines)
        remaining = [i for i in remaining if i not in handed]

    influxd.start()
    final = InfluxExporter(**settings, spool_dir=spool)
    with warnings.catch_warnings():   # the torn lines moved aside are said once, here or before
        warnings.simplefilter("ignore", InfluxSpoolWarning)
        res = final.replay_spool()
    assert res.error is None, (seed, res.error)
    assert final.spooled_count() == 0
    assert not (spool / "influx-rejected.jsonl").exists()
    assert stats["sigint_in_send"] >= 1 and stats["sigkill"] >= 2 and stats["torn"] >= 2, stats

    body = influxd.query('SELECT "rx_mpps", "run_id" FROM "smoke" GROUP BY "name"', db="chaos")
    points: dict[str, list] = {}
    for series in body["results"][0].get("series", []):
        points.setdefault(series["tags"]["name"], []).extend(series["values"])
    missing = sorted(set(f"rec{i}" for i in range(N)) - set(points), key=lambda n: int(n[3:]))
    assert not missing, f"seed {seed}: {len(missing)} records lost, e.g. {missing[:5]}; {stats}"
    assert len(points) == N, f"seed {seed}: unexpected points {sorted(set(points) - {f'rec{i}' for i in range(N)})[:5]}"
    for name, rows in points.items():
        assert len(rows) == 1, f"seed {seed}: {name} is {len(rows)} points"
        assert rows[0][1] == float(name[3:]) and rows[0][2] == "run-20240601T000000Z-c4a0"
    count = influxd.query('SELECT count("rx_mpps") FROM "smoke"', db="chaos")
    assert count["results"][0]["series"][0]["values"][0][1] == N
    print(f"seed {seed}: {stats}")
