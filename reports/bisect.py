"""Name the first commit that made a metric worse: build and measure the commits in between.

    python -m reports bisect --metric SUITE/NAME/METRIC --good SHA --bad SHA
                             [--trials 3] [--dut local] [--pytest NODE ...] [--work DIR]
                             [--repo DIR] [--targets NINJA_TARGET ...] [--lock FILE]
                             [--pytest-opt OPT ...] [--stop-after SECONDS]

Each probed commit is checked out into one git worktree under --work (made by this command
and removed by it, on every exit path; one build folder for every commit, so ninja rebuilds only
what a checkout changed), its C parts built there with meson/ninja, and
the suite's tests (--pytest node ids, default suites/SUITE) run --trials times against --dut
with OFBENCH_BUILD_DIR pointing at that build; the metric's value of record NAME is read from
each run's results.jsonl. Good and bad are measured first: bad must be worse than good by
reports.compare's verdict (jumpavg's grouping of the two sides' repetitions, >= 2 % apart) or
the range is refused. Then a binary search: a commit whose values are worse than good's is bad.
The answer is the first bad commit, with every probe's values.

With --work DIR each commit's values go to DIR/bisect-state.json as soon as they are measured:
the same command run again resumes (nothing measured twice), and --stop-after SECONDS starts no
new commit after that long (exit 3), so a long bisect runs in steps.

reports/ imports nothing of suites/dut/drivers: the commits are built and measured by
subprocesses (git, meson, ninja, pytest), as a person would.
"""
from __future__ import annotations

import dataclasses
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Sequence

from reports.compare import jumpavg_verdict
from reports.metrics import metric_direction

REPO = Path(__file__).resolve().parent.parent


class BisectError(ValueError):
    """A bisect that cannot answer; the message names the option or the commit."""


@dataclasses.dataclass
class Probe:
    sha: str
    values: list[float]
    verdict: str          # good | bad (against good's values) | reference


@dataclasses.dataclass
class BisectResult:
    first_bad: str
    probes: list[Probe]

    def summary(self, metric: str) -> str:
        lines = [f"first bad commit for {metric}: {self.first_bad}"]
        for p in self.probes:
            vals = ", ".join(f"{v:.4g}" for v in p.values)
            lines.append(f"  {p.sha[:12]} {p.verdict:9} [{vals}]")
        return "\n".join(lines)


def parse_metric(text: str) -> tuple[str, str, str]:
    parts = text.split("/")
    if len(parts) != 3 or not all(parts):
        raise BisectError(f"--metric: expected SUITE/NAME/METRIC, got {text!r}")
    return parts[0], parts[1], parts[2]


def first_bad(shas: Sequence[str], measure: Callable[[str], list[float]], direction: int
              ) -> BisectResult:
    """shas: good first, bad last, in history order. measure(sha) -> repeated values."""
    if len(shas) < 2:
        raise BisectError("--good/--bad: the range holds fewer than two commits")
    if direction == 0:
        raise BisectError("--metric: the metric has no better direction (reports/metrics.py)")
    good = measure(shas[0])
    bad = measure(shas[-1])
    probes = [Probe(shas[0], good, "reference"), Probe(shas[-1], bad, "bad")]
    verdict, change = jumpavg_verdict(good, bad, direction)
    if verdict != "worse":
        pct = "n/a" if change is None else f"{change:+.1f} %"
        raise BisectError(f"--good/--bad: good {shas[0][:12]} is not better than bad "
                          f"{shas[-1][:12]} ({verdict}, {pct}): nothing to bisect")
    lo, hi = 0, len(shas) - 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        vals = measure(shas[mid])
        worse = jumpavg_verdict(good, vals, direction)[0] == "worse"
        probes.append(Probe(shas[mid], vals, "bad" if worse else "good"))
        if worse:
            hi = mid
        else:
            lo = mid
    return BisectResult(shas[hi], probes)


def _run(argv: list[str], cwd: Path, env: dict | None = None, log: Path | None = None) -> int:
    """argv in a session of its own; on any exit of ours before it ends (Ctrl-C, SIGTERM: see
    main) its whole process group is interrupted, then killed, so no trial outlives bisect."""
    with open(log, "ab") if log else open(os.devnull, "wb") as out:
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            return proc.wait()
        except BaseException:
            for sig, wait in ((signal.SIGINT, 30), (signal.SIGKILL, 5)):
                try:
                    os.killpg(proc.pid, sig)
                    proc.wait(wait)
                    break
                except (ProcessLookupError, subprocess.TimeoutExpired):
                    continue
            raise


def commit_range(good: str, bad: str, repo: Path = REPO) -> list[str]:
    def rev(x: str, opt: str) -> str:
        r = subprocess.run(["git", "-C", str(repo), "rev-parse", "--verify", "-q", f"{x}^{{commit}}"],
                           capture_output=True, text=True)
        if r.returncode:
            raise BisectError(f"{opt}: {x!r} is not a commit of {repo}")
        return r.stdout.strip()
    g, b = rev(good, "--good"), rev(bad, "--bad")
    r = subprocess.run(["git", "-C", str(repo), "rev-list", "--reverse", "--ancestry-path",
                        f"{g}..{b}"], capture_output=True, text=True)
    between = r.stdout.split()
    if r.returncode or not between:
        raise BisectError(f"--good/--bad: {bad!r} does not descend from {good!r}")
    return [g] + between


class BisectPaused(Exception):
    """--stop-after ran out before the search ended; the state file holds what was measured."""


class CommitMeasurer:
    """Checks a commit out in the one worktree this bisect made, builds it there (one build
    folder for every commit: ninja rebuilds what the checkout changed, not the whole tree) and
    runs the tests --trials times.

    With a state file (``WORK/bisect-state.json`` when --work is given) every commit's values
    are written as soon as they are measured and read back on the next call with the same
    metric, trials, lab and tests: a bisect cut short (--stop-after, Ctrl-C, a lost lock) is
    resumed by running the same command again, and commits already measured are not built or
    measured twice."""

    def __init__(self, suite: str, name: str, metric: str, trials: int, dut: str,
                 pytest_args: Sequence[str], work: Path, repo: Path = REPO,
                 progress: Callable[[str], None] = print, targets: Sequence[str] = (),
                 lock: str | None = None, pytest_opts: Sequence[str] = (),
                 state: Path | None = None, stop_after_s: float | None = None):
        self.lock = lock
        self.pytest_opts = list(pytest_opts)
        self.suite, self.name, self.metric, self.trials = suite, name, metric, trials
        self.targets = list(targets)
        self.dut, self.pytest_args, self.repo, self.progress = dut, list(pytest_args), repo, progress
        self.work = Path(work)
        self.made: list[Path] = []
        self.tree = self.work / "bisect-tree"
        self.state = Path(state) if state else None
        self.stop_after_s = stop_after_s
        self.t0 = time.monotonic()
        self.seconds: dict[str, float] = {}
        self.measured: dict[str, list[float]] = self._load_state()

    def settings(self) -> dict:
        """What a stored value was measured with; another setting measures afresh."""
        return {"suite": self.suite, "name": self.name, "metric": self.metric,
                "trials": self.trials, "dut": self.dut,
                "pytest": self.pytest_args or [f"suites/{self.suite}"],
                "pytest_opts": self.pytest_opts, "repo": str(self.repo)}

    def _load_state(self) -> dict[str, list[float]]:
        if not self.state or not self.state.exists():
            return {}
        try:
            st = json.loads(self.state.read_text())
        except ValueError as e:
            raise BisectError(f"--work: {self.state}: not a bisect state file ({e})") from e
        if st.get("settings") != self.settings():
            self.progress(f"bisect: {self.state} was measured with other settings; measuring afresh")
            return {}
        self.seconds = {sha: float(t) for sha, t in (st.get("seconds") or {}).items()}
        return {sha: [float(v) for v in vals] for sha, vals in (st.get("values") or {}).items()}

    def _save_state(self) -> None:
        if not self.state:
            return
        tmp = self.state.with_suffix(".tmp")
        tmp.write_text(json.dumps({"settings": self.settings(), "values": self.measured,
                                   "seconds": self.seconds}, indent=1))
        tmp.replace(self.state)

    def __call__(self, sha: str) -> list[float]:
        if sha in self.measured:
            self.progress(f"bisect: {sha[:12]} measured before (state file): {self.measured[sha]}")
            return self.measured[sha]
        if self.stop_after_s is not None and time.monotonic() - self.t0 >= self.stop_after_s:
            raise BisectPaused(sha)
        t0 = time.monotonic()
        self.work.mkdir(parents=True, exist_ok=True)
        tree = self.tree
        log = self.work / f"bisect-{sha[:12]}.log"
        if tree not in self.made:
            if tree.exists():     # a worktree of an earlier call that was killed: git's own
                _run(["git", "-C", str(self.repo), "worktree", "remove", "--force", str(tree)],
                     self.repo, log=log)
                _run(["git", "-C", str(self.repo), "worktree", "prune"], self.repo, log=log)
            if _run(["git", "-C", str(self.repo), "worktree", "add", "--detach", str(tree), sha],
                    self.repo, log=log):
                raise BisectError(f"commit {sha[:12]}: git worktree add failed (see {log})")
            self.made.append(tree)
            # what setup made outside git (tools/: trex, guest image, influxd; the venvs a
            # remote lab syncs to its hosts and the lease agent runs in) is not in a commit
            for name in ("tools", ".venv", ".venv-labgrid", ".venv-faucet"):
                src = next((t for t in (self.repo / name, REPO / name) if t.is_dir()), None)
                if src is not None and not (tree / name).exists():
                    (tree / name).symlink_to(src.resolve())
        elif _run(["git", "-C", str(tree), "checkout", "-q", "--detach", "--force", sha],
                  tree, log=log):
            raise BisectError(f"commit {sha[:12]}: git checkout failed (see {log})")
        build = tree / "build"
        self.progress(f"bisect: building {sha[:12]}")
        setup, ninja = self.build_argvs(build)
        if (not (build / "build.ninja").exists() and _run(setup, tree, log=log)) or \
                _run(ninja, tree, log=log):
            raise BisectError(f"--good/--bad: commit {sha[:12]} does not build (see {log})")
        env = {**os.environ, "OFBENCH_BUILD_DIR": str(build)}
        venv = (self.repo / ".venv" / "bin" / "python") if self.repo == REPO else \
            Path("/nonexistent")   # another repository (a fixture): this interpreter
        python = str(venv) if venv.exists() else sys.executable
        values = []
        for i in range(self.trials):
            runs = self.work / f"runs-{sha[:12]}-{i}"
            shutil.rmtree(runs, ignore_errors=True)    # a trial cut short before: this bisect's
            argv = self.trial_argv(python, runs)
            self.progress(f"bisect: {sha[:12]} trial {i + 1}/{self.trials}")
            _run(argv, tree, env=env, log=log)
            got = self._values(runs)
            self.progress(f"bisect: {sha[:12]} trial {i + 1}: {got}")
            values += got
        if not values:
            raise BisectError(f"commit {sha[:12]}: no record {self.suite}/{self.name} with "
                              f"{self.metric} (see {log})")
        self.measured[sha] = values
        self.seconds[sha] = round(time.monotonic() - t0, 1)
        self._save_state()
        return values

    def build_argvs(self, build: Path) -> tuple[list[str], list[str]]:
        """meson setup and ninja; with --lock under its shared side (builds of several
        people may run together, a measurement holds them off), niced."""
        setup = ["meson", "setup", str(build)]
        ninja = ["nice", "-n", "10", "ninja", "-C", str(build), *self.targets]
        if self.lock:
            setup = ["flock", "-s", self.lock, *setup]
            ninja = ["flock", "-s", self.lock, *ninja]
        return setup, ninja

    def trial_argv(self, python: str, runs: Path) -> list[str]:
        """One trial: pytest on the lab (--pytest-opt options before the node ids); with
        --lock under its exclusive side (the box quiet while it measures)."""
        argv = [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--dut={self.dut}",
                "--reports-dir", str(runs), *self.pytest_opts,
                *(self.pytest_args or [f"suites/{self.suite}"])]
        return ["flock", self.lock, *argv] if self.lock else argv

    def _values(self, runs: Path) -> list[float]:
        out = []
        for f in sorted(runs.glob("run-*/results.jsonl")):
            for line in f.read_text().splitlines():
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue
                v = (rec.get("metrics") or {}).get(self.metric)
                if rec.get("suite") == self.suite and rec.get("name") == self.name and \
                        isinstance(v, (int, float)) and not isinstance(v, bool):
                    out.append(float(v))
        return out

    def cleanup(self) -> None:
        """Remove the worktrees this measurer made (nothing else)."""
        for tree in self.made:
            _run(["git", "-C", str(self.repo), "worktree", "remove", "--force", str(tree)],
                 self.repo)
        self.made.clear()


def main(args) -> int:
    suite, name, metric = parse_metric(args.metric)
    if args.trials < 2:
        raise BisectError(f"--trials: at least 2 repetitions per commit, got {args.trials}")
    repo = Path(args.repo).resolve() if args.repo else REPO
    if not (repo / ".git").exists():
        raise BisectError(f"--repo: {args.repo} is not a git work tree")
    shas = commit_range(args.good, args.bad, repo)
    own_work = args.work is None
    # every option is checked before the scratch folder is made: an error raised after
    # mkdtemp but outside the try below left an empty ofbench-bisect-* in /tmp behind
    if args.stop_after is not None and (own_work or args.stop_after <= 0):
        raise BisectError("--stop-after: needs --work DIR (where the measured commits are kept "
                          "for the next call) and a number of seconds > 0")
    def _term(signum, _frame):   # SIGTERM: unwind like Ctrl-C so the finally below runs
        raise KeyboardInterrupt(f"signal {signum}")
    signal.signal(signal.SIGTERM, _term)
    work = Path(args.work or tempfile.mkdtemp(prefix="ofbench-bisect-"))
    m = None
    t0 = time.monotonic()
    try:
        work.mkdir(parents=True, exist_ok=True)
        m = CommitMeasurer(suite, name, metric, args.trials, args.dut, args.pytest or [], work,
                           repo=repo, targets=args.targets or (), lock=args.lock,
                           pytest_opts=args.pytest_opt or (),
                           progress=lambda line: print(line, flush=True),
                           state=None if own_work else work / "bisect-state.json",
                           stop_after_s=args.stop_after)
        res = first_bad(shas, m, metric_direction(metric))
    except BisectPaused as e:
        print(f"bisect: paused after {time.monotonic() - t0:.0f} s (--stop-after "
              f"{args.stop_after:g}) before measuring {str(e)[:12]}; "
              f"{len(m.measured)} commits measured so far in {work / 'bisect-state.json'}. "
              f"Run the same command again to go on.")
        return 3
    finally:
        if m is not None:
            m.cleanup()
        if own_work:
            shutil.rmtree(work, ignore_errors=True)
    print(res.summary(args.metric))
    print(f"  {len(res.probes)} commits built and measured, {args.trials} trials each, "
          f"{time.monotonic() - t0:.0f} s this call")
    return 0


def add_arguments(p) -> None:
    p.add_argument("--metric", required=True, help="SUITE/NAME/METRIC, e.g. switch/pipeline_64b_100k_flows/ofbench_mpps")
    p.add_argument("--good", required=True, help="a commit where the metric was good")
    p.add_argument("--bad", required=True, help="a later commit where it is worse")
    p.add_argument("--trials", type=int, default=3, help="runs per commit (default 3)")
    p.add_argument("--dut", default="local", help="the lab profile (default local)")
    p.add_argument("--pytest", nargs="*", default=None,
                   help="pytest node ids to run (default suites/SUITE)")
    p.add_argument("--work", default=None, help="where the worktrees go (default a temp dir)")
    p.add_argument("--repo", default=None,
                   help="the git repository holding the commits (default this checkout)")
    p.add_argument("--targets", nargs="*", default=None,
                   help="ninja targets to build per commit (default all)")
    p.add_argument("--pytest-opt", action="append", default=None, metavar="OPT",
                   help="an option for every trial's pytest, e.g. --pytest-opt=--lab-coordinator=local "
                        "(repeatable)")
    p.add_argument("--stop-after", type=float, default=None, metavar="SECONDS",
                   help="with --work: start no new commit after SECONDS; exit 3, and the same "
                        "command resumes from WORK/bisect-state.json")
    p.add_argument("--lock", default=None, metavar="FILE",
                   help="hold flock FILE around each trial (e.g. /tmp/ofbench-bench.lock), "
                        "and its shared side around each build")
