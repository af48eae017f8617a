"""A throwaway repository for `reports bisect` (issue 40 goal): the source repository's HEAD
with 8 commits on top, 7 harmless (a comment line in dut/switch/src) and one (the
``planted``-th, default 5) that adds a fixed delay per non-empty rx burst in the switch's
worker loop (``rte_delay_us_block(DELAY_US)`` before process_burst in datapath.c).

The repository is a ``git clone --shared`` of the source in a directory the caller names (a
temp dir): it borrows the source's objects read-only, is never pushed, and nothing is committed
to the source. Reproducible:

    python -m reports.tests.bisect_fixture DEST [--planted 5] [--delay-us 20]

prints ``good=SHA bad=SHA planted=SHA``; then, for the real measurement (builds 5 commits):

    flock /tmp/ofbench-bench.lock python -m reports bisect --repo DEST --good SHA --bad SHA \\
        --metric switch/pipeline_64b_100k_flows/ofbench_mpps --trials 3 ...
"""
from __future__ import annotations

import argparse
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DATAPATH = "dut/switch/src/datapath.c"
HOOK = "\t\t\tif (n)\n\t\t\t\tprocess_burst(w, pidx, pkts, n, c);\n"
HARMLESS = ["dut/switch/src/datapath.c", "dut/switch/src/main.c", "dut/switch/src/agent.c",
            "dut/switch/src/flowkey.c", "dut/switch/src/datapath.c", "dut/switch/src/main.c",
            "dut/switch/src/agent.c"]


@dataclass
class Fixture:
    path: Path
    good: str            # the base (the source's HEAD)
    shas: list[str]      # the 8 commits on top, in order
    planted: str         # the one that adds the delay

    @property
    def bad(self) -> str:
        return self.shas[-1]


def _git(repo: Path, *args: str) -> str:
    r = subprocess.run(["git", "-C", str(repo), "-c", "user.email=bisect@fixture",
                        "-c", "user.name=bisect fixture", "-c", "commit.gpgsign=false", *args],
                       capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(f"git {' '.join(args)}: {r.stderr.strip()}")
    return r.stdout.strip()


def plant(text: str, delay_us: int) -> str:
    if HOOK not in text:
        raise RuntimeError(f"{DATAPATH}: the worker loop's burst hook is not where expected")
    slow = (f"\t\t\tif (n) {{\n\t\t\t\trte_delay_us_block({delay_us}); /* planted slowdown */\n"
            f"\t\t\t\tprocess_burst(w, pidx, pkts, n, c);\n\t\t\t}}\n")
    return text.replace(HOOK, slow, 1)


def make(dest: Path, source: Path = REPO, planted: int = 5, delay_us: int = 20) -> Fixture:
    """Clone `source`'s HEAD into the new directory `dest` and add the 8 commits."""
    if not 1 <= planted <= 8:
        raise ValueError(f"--planted: 1..8, got {planted}")
    dest = Path(dest)
    if dest.exists() and any(dest.iterdir()):
        raise FileExistsError(f"{dest}: not empty (the fixture makes its own directory)")
    r = subprocess.run(["git", "clone", "-q", "--shared", "--no-checkout", str(source), str(dest)],
                       capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(f"git clone {source}: {r.stderr.strip()}")
    _git(dest, "remote", "remove", "origin")           # nowhere to push to
    _git(dest, "checkout", "-q", "-b", "bisect-fixture")
    good = _git(dest, "rev-parse", "HEAD")
    shas, planted_sha = [], ""
    for i in range(1, 9):
        if i == planted:
            f = dest / DATAPATH
            f.write_text(plant(f.read_text(), delay_us))
            msg = f"switch: wait {delay_us} us per rx burst (planted slowdown)"
            _git(dest, "add", DATAPATH)
        else:
            rel = HARMLESS[(i - 1) % len(HARMLESS)]
            f = dest / rel
            f.write_text(f.read_text() + f"/* bisect fixture: harmless change {i} */\n")
            msg = f"switch: harmless comment {i} in {Path(rel).name}"
            _git(dest, "add", rel)
        _git(dest, "commit", "-q", "-m", msg)
        shas.append(_git(dest, "rev-parse", "HEAD"))
        if i == planted:
            planted_sha = shas[-1]
    return Fixture(dest, good, shas, planted_sha)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m reports.tests.bisect_fixture")
    p.add_argument("dest")
    p.add_argument("--source", default=str(REPO))
    p.add_argument("--planted", type=int, default=5)
    p.add_argument("--delay-us", type=int, default=20)
    a = p.parse_args(argv)
    fx = make(Path(a.dest), Path(a.source), a.planted, a.delay_us)
    print(f"good={fx.good} bad={fx.bad} planted={fx.planted}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
