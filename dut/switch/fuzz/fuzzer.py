"""Run the switch's libFuzzer harnesses (README "Fuzzing") and read what they did: fuzz_agent
(fuzz_agent.c: the agent's messages), fuzz_conn (fuzz_conn.c: agent_conn.c's framing,
sessions and sending) and fuzz_datapath (fuzz_datapath.c: frames through the pipeline in
ASan-tracked buffers).

    python -m dut.switch.fuzz.fuzzer short      # every target briefly (60 + 40 + 20 s), `make test`
    python -m dut.switch.fuzz.fuzzer long       # each target 1 h (OFBENCH_FUZZ_SECONDS), nightly
    python -m dut.switch.fuzz.fuzzer replay     # every seed and reproducer once (all lookups)
    python -m dut.switch.fuzz.fuzzer coverage [DIR...]  # source line/branch coverage of inputs

A run starts from the target's committed seeds (corpus/, corpus_conn/, corpus_datapath/) and
reproducers (regress/, regress_conn/, regress_datapath/); the inputs it finds go to a scratch
folder (the short run's, deleted after) or, for the long run, to a corpus cache outside the
repo (/var/cache/ofbench/fuzz-agent/, fuzz-agent-conn/ and fuzz-agent-datapath/, kept between
nightly runs so they build up; the committed seeds are never rewritten). One process (no
-jobs/-fork: the box is shared), under ``nice``. A finding is an artifact file
(crash-/leak-/timeout-/oom-...) in
the run's artifact folder; the run fails on the first one (libFuzzer stops there) and the
report names the file to copy into regress/ once the bug is fixed.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from dut.switch import launcher
from dut.switch.launcher import LOOKUPS  # the switch's lookup names (fuzzer.LOOKUPS for tests)
from paths import REPO

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "corpus"
REGRESS = HERE / "regress"
CACHE = Path(os.environ.get("OFBENCH_FUZZ_CACHE") or "/var/cache/ofbench/fuzz-agent")
SHORT_S = 60
LONG_S = 3600
# Inputs up to two largest messages: a 65535-byte message and what follows it (issue 37: the
# stall needed a 65528-byte FLOW_MOD then a request; 8 KiB could not say it).
MAX_LEN = 131072


@dataclass(frozen=True)
class Target:
    name: str
    corpus: Path
    regress: Path
    short_s: float
    cache: Path
    lookups: tuple[str, ...]


TARGETS = {
    "fuzz_agent": Target("fuzz_agent", CORPUS, REGRESS, SHORT_S, CACHE, LOOKUPS),
    # the connection layer does not depend on the lookup backend: one replay
    "fuzz_conn": Target("fuzz_conn", HERE / "corpus_conn", HERE / "regress_conn", 40,
                        Path(f"{CACHE}-conn"), ("tuple",)),
    # frames (0..9216 bytes, several per input) through the pipeline over a fixed flow set
    # (fuzz_datapath.c; seeds written by datapath_seeds.py); every lookup backend
    "fuzz_datapath": Target("fuzz_datapath", HERE / "corpus_datapath",
                            HERE / "regress_datapath", 20, Path(f"{CACHE}-datapath"), LOOKUPS),
}
ASAN_OPTIONS = "abort_on_error=1:detect_leaks=1:symbolize=1:handle_abort=1"
UBSAN_OPTIONS = "print_stacktrace=1:halt_on_error=1"


def binary(target: str = "fuzz_agent") -> Path:
    return launcher.san_build_dir() / "dut" / "switch" / target


def env(lookup: str = "tuple") -> dict:
    e = dict(os.environ)
    e.setdefault("ASAN_OPTIONS", ASAN_OPTIONS)
    e.setdefault("UBSAN_OPTIONS", UBSAN_OPTIONS)
    sym = shutil.which("llvm-symbolizer-14") or "/usr/lib/llvm-14/bin/llvm-symbolizer"
    if Path(sym).exists():
        e.setdefault("ASAN_SYMBOLIZER_PATH", sym)
    e["OFS_FUZZ_LOOKUP"] = lookup
    return e


@dataclass
class FuzzRun:
    seconds: float
    lookup: str
    rc: int
    target: str = "fuzz_agent"
    execs: int = 0
    execs_per_s: int = 0
    cov_edges: int = 0          # libFuzzer "cov:" at the end: edges (inline 8-bit counters) hit
    features: int = 0           # libFuzzer "ft:"
    corpus_units: int = 0
    new_units: int = 0
    peak_rss_mb: int = 0
    findings: list[Path] = field(default_factory=list)
    reports: list[str] = field(default_factory=list)
    log_tail: str = ""

    @property
    def clean(self) -> bool:
        return self.rc == 0 and not self.findings and not self.reports

    def summary(self) -> str:
        s = (f"{self.target} ({self.lookup}): {self.execs} execs in {self.seconds:.0f} s "
             f"({self.execs_per_s}/s), cov {self.cov_edges} edges, ft {self.features}, "
             f"corpus {self.corpus_units} units (+{self.new_units}), rss {self.peak_rss_mb} MB")
        if not self.clean:
            s += f"; FINDINGS {[str(p) for p in self.findings]} rc {self.rc}"
        return s


def parse(log: str, run: FuzzRun) -> FuzzRun:
    """Fill run's figures from libFuzzer's output (-print_final_stats=1)."""
    def stat(name):
        m = re.search(rf"stat::{name}:\s+(\d+)", log)
        return int(m.group(1)) if m else 0
    run.execs = stat("number_of_executed_units")
    run.execs_per_s = stat("average_exec_per_sec")
    run.new_units = stat("new_units_added")
    run.peak_rss_mb = stat("peak_rss_mb")
    last = [ln for ln in log.splitlines() if re.match(r"#\d+\s+(DONE|INITED|pulse|NEW|REDUCE)", ln)]
    if last:
        m = re.search(r"cov: (\d+) ft: (\d+) corp: (\d+)", last[-1])
        if m:
            run.cov_edges, run.features, run.corpus_units = map(int, m.groups())
    run.reports = launcher.sanitizer_reports(log)
    run.log_tail = log[-6000:]
    return run


def fuzz(seconds: float, workdir: Path, artifacts: Path, lookup: str = "tuple",
         extra: list[str] | None = None, target: str = "fuzz_agent") -> FuzzRun:
    """One libFuzzer run of ``target`` for ``seconds`` from its seeds and reproducers; new
    inputs go to ``workdir``, findings to ``artifacts``."""
    t = TARGETS[target]
    exe = binary(target)
    if not exe.exists():
        raise FileNotFoundError(f"{exe} is not built: run scripts/build_san.sh")
    workdir.mkdir(parents=True, exist_ok=True)
    artifacts.mkdir(parents=True, exist_ok=True)
    argv = ["nice", "-n", "10", str(exe), f"-max_total_time={int(seconds)}",
            "-print_final_stats=1", "-timeout=20", "-rss_limit_mb=2560", f"-max_len={MAX_LEN}",
            f"-artifact_prefix={artifacts}/", *(extra or []),
            str(workdir), str(t.corpus), str(t.regress)]
    t0 = time.monotonic()
    cp = subprocess.run(argv, capture_output=True, text=True, errors="replace", env=env(lookup),
                        timeout=seconds + 600)
    run = FuzzRun(time.monotonic() - t0, lookup, cp.returncode, target)
    parse(cp.stdout + cp.stderr, run)
    run.findings = sorted(p for p in artifacts.iterdir() if p.is_file())
    return run


def replay(files: list[Path], lookup: str = "tuple", target: str = "fuzz_agent") -> FuzzRun:
    """Every file once (libFuzzer runs inputs given as files and exits)."""
    exe = binary(target)
    if not exe.exists():
        raise FileNotFoundError(f"{exe} is not built: run scripts/build_san.sh")
    with tempfile.TemporaryDirectory(prefix="ofb-fuzz-replay-") as tmp:
        lst = Path(tmp) / "inputs"
        # many files: pass folders with -runs=0 (run the initial corpus, then stop)
        lst.mkdir()
        for i, f in enumerate(files):
            shutil.copyfile(f, lst / f"{i:05d}-{f.name}")
        argv = [str(exe), "-runs=0", "-print_final_stats=1", f"-max_len={MAX_LEN}", str(lst)]
        t0 = time.monotonic()
        cp = subprocess.run(argv, capture_output=True, text=True, errors="replace",
                            env=env(lookup), timeout=900, cwd=tmp)
        run = FuzzRun(time.monotonic() - t0, lookup, cp.returncode, target)
        parse(cp.stdout + cp.stderr, run)
        run.findings = sorted(p for p in Path(tmp).iterdir()
                              if p.is_file() and p.name.split("-")[0] in
                              ("crash", "leak", "timeout", "oom", "slow"))
        return run


# The targets whose C sources the coverage build compiles: the harness (every switch source
# it links) and the classifier library it links.
COVERAGE_TARGETS = ("fuzz_agent", "ofbcls")


def coverage_sources(build: Path | None = None) -> list[Path]:
    """The C sources of COVERAGE_TARGETS as meson lists them in the sanitizer build
    (meson-info/intro-targets.json), so the coverage build follows every source file the
    harness gains (a hand-kept list missed the agent's split and failed to link)."""
    info = (build or launcher.san_build_dir()) / "meson-info" / "intro-targets.json"
    if not info.exists():
        raise FileNotFoundError(f"{info} is missing: run scripts/build_san.sh")
    out: list[Path] = []
    found: set[str] = set()
    for t in json.loads(info.read_text()):
        if t["name"] not in COVERAGE_TARGETS:
            continue
        for group in t.get("target_sources", []):
            for src in group.get("sources", []):
                if src.endswith(".c"):
                    found.add(t["name"])
                    if Path(src) not in out:
                        out.append(Path(src))
    missing = [n for n in COVERAGE_TARGETS if n not in found]
    if missing:
        raise ValueError(f"{info}: no C sources for target(s) {', '.join(missing)}")
    return out


def coverage(dirs: list[Path], lookup: str = "tuple") -> str:
    """llvm-cov's per-file report (regions, functions, lines, branches) of running the inputs
    in ``dirs`` once. The fuzzer's own counters include the sanitizers' check branches, so its
    coverage is measured on a separate build of the same sources with clang's source-based
    coverage and no sanitizer (one clang command, in a scratch folder)."""
    repo = REPO
    sources = [str(p) for p in coverage_sources()]
    with tempfile.TemporaryDirectory(prefix="ofb-fuzz-cov-") as tmp:
        exe, raw, prof = Path(tmp) / "fuzz_cov", Path(tmp) / "cov.profraw", Path(tmp) / "cov.prof"
        dpdk = subprocess.run(["pkg-config", "--cflags", "--libs", "libdpdk"], capture_output=True,
                              text=True, check=True).stdout.split()
        cflags = [a for a in dpdk if not a.startswith("-l")]
        libs = [a for a in dpdk if a.startswith("-l")]
        subprocess.run(["nice", "-n", "10", "clang-14", "-O1", "-g", "-march=native", "-msse4.2",
                        "-fno-strict-aliasing", "-fsanitize=fuzzer", "-fprofile-instr-generate",
                        "-fcoverage-mapping", "-DOFS_HAVE_CLASSIFIER", "-w",
                        f"-I{repo / 'dut/classifier'}", *cflags,
                        *sources, "-o", str(exe), *libs,
                        "-lpthread", "-lm"], check=True, capture_output=True, text=True)
        e = env(lookup)
        e["LLVM_PROFILE_FILE"] = str(raw)
        subprocess.run([str(exe), "-runs=0", f"-max_len={MAX_LEN}", *map(str, dirs)], env=e,
                       capture_output=True, text=True, errors="replace", timeout=1800, check=True)
        subprocess.run(["llvm-profdata-14", "merge", "-o", str(prof), str(raw)], check=True)
        cp = subprocess.run(["llvm-cov-14", "report", str(exe), f"-instr-profile={prof}",
                             *sources],
                            capture_output=True, text=True, check=True)
        return cp.stdout


def seed_files(target: str = "fuzz_agent") -> list[Path]:
    t = TARGETS[target]
    return sorted(t.corpus.glob("*.bin")) + sorted(p for p in t.regress.iterdir() if p.is_file())


def main(argv: list[str]) -> int:
    mode = argv[1] if len(argv) > 1 else "short"
    if mode == "replay":
        ok = True
        for name, t in TARGETS.items():
            for lk in t.lookups:
                r = replay(seed_files(name), lk, name)
                print(r.summary())
                ok &= r.clean
                if not r.clean:
                    print(r.log_tail)
        return 0 if ok else 1
    if mode == "coverage":
        dirs = [Path(d) for d in argv[2:]] or [CORPUS, REGRESS]
        print(coverage(dirs))
        return 0
    if mode not in ("short", "long"):
        print(f"usage: {argv[0]} short|long|replay|coverage [DIR...]", file=sys.stderr)
        return 2
    rc = 0
    for name, t in TARGETS.items():   # one after the other: the box is shared
        rc |= run_target(mode, t)
    return rc


def run_target(mode: str, t: Target) -> int:
    """One target's short or long run; 0 clean, 1 findings (kept and named)."""
    seconds = float(os.environ.get("OFBENCH_FUZZ_SECONDS") or (t.short_s if mode == "short"
                                                                else LONG_S))
    artifacts = Path(tempfile.mkdtemp(prefix=f"ofb-{t.name}-artifacts-"))
    if mode == "long":
        work, keep = t.cache, True
    else:
        work, keep = Path(tempfile.mkdtemp(prefix=f"ofb-{t.name}-work-")), False
    try:
        r = fuzz(seconds, work, artifacts, target=t.name)
    finally:
        if not keep:
            shutil.rmtree(work, ignore_errors=True)
    print(r.summary())
    if r.clean:
        shutil.rmtree(artifacts, ignore_errors=True)
        if keep and t.name == "fuzz_agent":  # what its corpus covers now (informational)
            try:
                print(coverage([work, t.corpus, t.regress]))
            except (subprocess.SubprocessError, OSError) as e:
                print(f"coverage report not made: {e}")
        return 0
    print(r.log_tail)
    print(f"findings kept in {artifacts}: fix, then copy each into {t.regress}/")
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
