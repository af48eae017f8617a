"""Benchmark of lab leases (issue 39's goal): many acquisitions by concurrent runs on a pool,
through labgrid's real coordinator on loopback and the same code a run uses
(:func:`drivers.lab.lease.acquire`: its own agent, the coordinator's queue, release).

    python -m drivers.lab.lease_bench --acquisitions 100 --runs 6 --places 2 --hold 0.3

Each acquisition is one "run" (its own run id and holder name); ``--runs`` of them ask at once.
From the runs' own timestamps (taken in their agents right after the coordinator answered):
overlapping holds of one place (must be 0) and, for every run that had to wait, the time from
the release that freed its place to its own acquisition (the goal: every one within 5 s).
Prints one JSON object; exit 1 when a hold overlapped.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path


def analyse(holds: list[dict]) -> dict:
    """holds: {place, acquired_at, released_at, waited_s} per acquisition (pure)."""
    by_place: dict[str, list[dict]] = {}
    for h in holds:
        by_place.setdefault(h["place"], []).append(h)
    overlaps = 0
    delays = []
    for hs in by_place.values():
        hs.sort(key=lambda h: h["acquired_at"])
        for prev, nxt in zip(hs, hs[1:]):
            if nxt["acquired_at"] < prev["released_at"]:
                overlaps += 1
            elif nxt["waited_s"] > 0.05:   # it queued: how soon after the release it started
                delays.append(nxt["acquired_at"] - prev["released_at"])
    return {"acquisitions": len(holds), "places": len(by_place), "overlapping_holds": overlaps,
            "waiters": len(delays),
            "start_after_release_s": {
                "median": round(statistics.median(delays), 3) if delays else None,
                "max": round(max(delays), 3) if delays else None,
                "over_5s": sum(d > 5.0 for d in delays)}}


def _one_run(args) -> dict:
    addr, i, hold_s, wait_s = args
    from drivers.lab.lease import acquire
    run_id = f"run-bench-{os.getpid()}-{i:04d}"
    lease = acquire(addr, run_id, pool={"pool": "bench"}, wait_s=wait_s)
    time.sleep(hold_s)
    acquired_at = lease.acquired_at
    lease.release()
    return {"place": lease.place, "acquired_at": acquired_at, "released_at": lease.released_at,
            "waited_s": lease.waited_s, "run": run_id}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m drivers.lab.lease_bench",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--acquisitions", type=int, default=100)
    ap.add_argument("--runs", type=int, default=6, help="runs asking at once")
    ap.add_argument("--places", type=int, default=2)
    ap.add_argument("--hold", type=float, default=0.3, help="seconds each run holds its place")
    ap.add_argument("--wait", type=float, default=300.0, help="each run's --lab-wait")
    args = ap.parse_args(argv)
    from drivers.lab.lease import Agent, LocalCoordinator
    with tempfile.TemporaryDirectory(prefix="ofb-lease-bench-") as tmp:
        os.environ["OFBENCH_LEASE_DIR"] = str(Path(tmp) / "leases")
        with LocalCoordinator(None, Path(tmp) / "logs") as coord:
            admin = Agent(coord.address)
            try:
                for p in range(args.places):
                    admin.ok("register", place=f"bench{p}", tags={"pool": "bench"})
            finally:
                admin.close()
            t0 = time.time()
            with multiprocessing.get_context("spawn").Pool(args.runs) as pool:
                holds = pool.map(_one_run, [(coord.address, i, args.hold, args.wait)
                                            for i in range(args.acquisitions)], chunksize=1)
            out = analyse(holds)
            out.update(runs_at_once=args.runs, hold_s=args.hold,
                       wall_s=round(time.time() - t0, 1),
                       waited_s_median=round(statistics.median(h["waited_s"] for h in holds), 3))
    print(json.dumps(out))
    return 1 if out["overlapping_holds"] else 0


if __name__ == "__main__":
    sys.exit(main())
