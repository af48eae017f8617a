"""How long this box takes a busy poller off its core (issue 44): an idle ofswitch polling two
net_ring ports on one core for a while, and its worker's loop-gap histogram (the stats
socket's gap_hist, dut/switch/src/ofswitch.h OFS_RIG_BUCKETS) over that time.

    flock /tmp/ofbench-bench.lock .venv/bin/python -m suites.throughput.gap_probe \
        [--core 0] [--nice -20] [--seconds 10]

Prints one line per non-empty bucket: [from, to) ms and how many passes took that long. The
switch, its socket and its DPDK runtime folder are removed in every exit path.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from drivers.trafficgen.rig import hist_delta
from dut.switch.launcher import read_stats
from paths import build_dir


def buckets_ms(before: dict, after: dict) -> list[tuple[float, float, int]]:
    """[(from_ms, to_ms, passes)] of the non-empty buckets between two stats reads (pure)."""
    hz = float(after["tsc_hz"])
    w0, w1 = before["workers"][0], after["workers"][0]
    floor = float(w1["gap_floor_cycles"])
    return [(floor * 2 ** i / hz * 1e3, floor * 2 ** (i + 1) / hz * 1e3, n)
            for i, n in enumerate(hist_delta(w0["gap_hist"], w1["gap_hist"])) if n]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--core", type=int, default=0)
    ap.add_argument("--nice", type=int, default=0)
    ap.add_argument("--seconds", type=float, default=10.0)
    a = ap.parse_args(argv)
    build = build_dir()
    prefix = f"ofb-gapprobe-{os.getpid()}"
    tmp = Path(tempfile.mkdtemp(prefix="ofb-gapprobe-"))
    sock = tmp / "stats"
    argv_sw = ["nice", "-n", str(a.nice), str(build / "dut/switch/ofswitch"), "-l", str(a.core), "--no-huge",
               "-m", "256", "--no-pci", "--file-prefix", prefix, "--log-level", "lib.eal:error",
               "--vdev", "net_ring0", "--vdev", "net_ring1", "--", "--dpid", "0x99",
               "--controller", "tcp:127.0.0.1:1", "--port", "1=net_ring0", "--port", "2=net_ring1",
               "--workers", "1", "--stats-sock", str(sock), "--idle-sleep-us", "0"]
    proc = subprocess.Popen(argv_sw, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 20
        while read_stats(sock, 0.5) is None:
            if proc.poll() is not None or time.monotonic() > deadline:
                print(f"ofswitch did not start (exit {proc.poll()})", file=sys.stderr)
                return 1
            time.sleep(0.1)
        time.sleep(1.0)
        before = read_stats(sock)
        time.sleep(a.seconds)
        after = read_stats(sock)
        print(f"core {a.core}, nice {a.nice}, {a.seconds:g} s: loop passes longer than the floor")
        for lo, hi, n in buckets_ms(before, after):
            print(f"  [{lo:8.2f}, {hi:8.2f}) ms: {n}")
        return 0
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        shutil.rmtree(Path("/var/run/dpdk") / prefix, ignore_errors=True)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
