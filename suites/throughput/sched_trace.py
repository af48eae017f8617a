"""Who takes a polling thread's core (issue 44): the kernel's sched_switch and irq events on
the pollers' cores for a few seconds of a trial, and every interval a poller was off its core,
with what ran in its place.

    flock /tmp/ofbench-bench.lock .venv/bin/python -m suites.throughput.sched_trace \\
        --delay 20 --seconds 30 --out /tmp/sched.txt &   # beside a repeatability bench

tracefs is mounted at /sys/kernel/tracing for the trace when it is not (and unmounted after);
the events are switched off and the buffer cleared at exit, whatever happens; a trace killed
by SIGKILL leaves a state file (/run/ofbench/sched_trace.json) from which the next trace, or
``--cleanup``, puts the box back. The poller of a
CPU is the thread that ran longest on it in the trace (a busy-polling worker runs ~97 %).
Besides off-core intervals (sched_switch), the longest hard-IRQ and softirq runs on each CPU
are reported: those take the core without a switch.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import re
import subprocess
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

TRACEFS = Path("/sys/kernel/tracing")
EVENTS = ("sched/sched_switch", "sched/sched_wakeup", "irq/irq_handler_entry", "irq/irq_handler_exit",
          "irq/softirq_entry", "irq/softirq_exit")
LINE_RE = re.compile(r"^\s*(?P<task>.+?)-(?P<pid>\d+)\s+(?:\(\s*[-\d]+\)\s+)?\[(?P<cpu>\d+)\]\s+"
                     r"(?:\S+\s+)?(?P<ts>\d+\.\d+):\s+(?P<event>\w+):\s*(?P<rest>.*)$")
SWITCH_RE = re.compile(r"prev_comm=(?P<pc>.*?) prev_pid=(?P<pp>\d+) prev_prio=\d+ prev_state=(?P<ps>\S+) ==> "
                       r"next_comm=(?P<nc>.*?) next_pid=(?P<np>\d+) next_prio=\d+")


@dataclass
class OffCore:
    """One interval the poller was off its CPU: from its switch-out to its switch-in."""
    cpu: int
    start: float
    length_s: float
    prev_state: str                                          # R: preempted; S/D: it slept
    ran: dict = field(default_factory=dict)                  # "comm-pid" -> seconds


def parse(lines) -> list[tuple[float, int, str, str]]:
    """(ts, cpu, event, rest) of every trace line (pure); headers and odd lines skipped."""
    out = []
    for line in lines:
        m = LINE_RE.match(line)
        if m:
            out.append((float(m["ts"]), int(m["cpu"]), m["event"], m["rest"]))
    return out


def run_times(events) -> dict[int, dict[str, float]]:
    """{cpu: {"comm-pid": seconds on it}} from sched_switch (pure)."""
    last: dict[int, tuple[float, str]] = {}
    out: dict[int, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for ts, cpu, ev, rest in events:
        if ev != "sched_switch":
            continue
        m = SWITCH_RE.search(rest)
        if not m:
            continue
        if cpu in last:
            out[cpu][last[cpu][1]] += ts - last[cpu][0]
        last[cpu] = (ts, f"{m['nc']}-{m['np']}")
    return {c: dict(v) for c, v in out.items()}


def poller_of(times: dict[str, float]) -> str | None:
    return max(times, key=times.get) if times else None


def off_core(events, cpu: int, poller: str) -> list[OffCore]:
    """Every interval ``poller`` ("comm-pid") was switched out of ``cpu``, with what ran (pure)."""
    out: list[OffCore] = []
    cur: OffCore | None = None
    running, since = None, None
    for ts, c, ev, rest in events:
        if c != cpu or ev != "sched_switch":
            continue
        m = SWITCH_RE.search(rest)
        if not m:
            continue
        prev, nxt = f"{m['pc']}-{m['pp']}", f"{m['nc']}-{m['np']}"
        if cur is not None and running is not None and since is not None:
            cur.ran[running] = cur.ran.get(running, 0.0) + ts - since
        if prev == poller:
            cur = OffCore(cpu, ts, 0.0, m["ps"])
        if nxt == poller and cur is not None:
            cur.length_s = ts - cur.start
            out.append(cur)
            cur = None
        running, since = nxt, ts
    return out


def irq_runs(events, cpu: int) -> list[tuple[float, str, float]]:
    """(length s, what, start) of every hard-IRQ and softirq run on ``cpu`` (pure)."""
    out, open_ = [], {}
    for ts, c, ev, rest in events:
        if c != cpu:
            continue
        if ev in ("irq_handler_entry", "softirq_entry"):
            what = rest.split("name=")[-1] if ev == "irq_handler_entry" else rest
            open_[ev.split("_")[0]] = (ts, what)
        elif ev in ("irq_handler_exit", "softirq_exit"):
            k = "irq" if ev == "irq_handler_exit" else "softirq"
            if k in open_:
                t0, what = open_.pop(k)
                out.append((ts - t0, f"{k} {what.strip()}", t0))
    return out


def summary(events, min_gap_s: float = 1e-3, top: int = 15) -> str:
    """A text report per CPU: its poller, its off-core intervals >= ``min_gap_s`` with what ran
    in them, the share of those intervals by intruder, the longest IRQ runs (pure)."""
    lines = []
    times = run_times(events)
    span = (events[-1][0] - events[0][0]) if events else 0.0
    for cpu in sorted(times):
        poller = poller_of(times[cpu])
        total = sum(times[cpu].values())
        lines.append(f"CPU {cpu}: {span:.1f} s traced; poller {poller} "
                     f"({times[cpu][poller] / total * 100 if total else 0:.1f} % of switch-accounted time)")
        offs = off_core(events, cpu, poller)
        long_ = [o for o in offs if o.length_s >= min_gap_s]
        buckets = defaultdict(int)
        for o in offs:
            b = 0.001
            while o.length_s >= b * 2 and b < 1.0:
                b *= 2
            if o.length_s >= 0.001:
                buckets[b] += 1
        lines.append(f"  off-core intervals: {len(offs)}; >= {min_gap_s * 1e3:.1f} ms: {len(long_)}; "
                     f"by length (ms, from): " + ", ".join(f"{b * 1e3:.0f}: {n}" for b, n in sorted(buckets.items())))
        intruders: dict[str, float] = defaultdict(float)
        counts: dict[str, int] = defaultdict(int)
        for o in long_:
            for who, s in o.ran.items():
                intruders[who] += s
                counts[who] += 1
        lines.append("  who ran in them (total ms, intervals): " + ", ".join(
            f"{w} {s * 1e3:.1f} ({counts[w]})" for w, s in sorted(intruders.items(), key=lambda x: -x[1])[:top]))
        states = defaultdict(int)
        for o in long_:
            states[o.prev_state] += 1
        lines.append(f"  poller's state when switched out (long ones): {dict(states)}")
        for o in sorted(long_, key=lambda o: -o.length_s)[:top]:
            ran = ", ".join(f"{w} {s * 1e3:.2f}" for w, s in sorted(o.ran.items(), key=lambda x: -x[1])[:5])
            lines.append(f"    at {o.start:.6f}: {o.length_s * 1e3:.2f} ms off (state {o.prev_state}): {ran}")
        irqs = sorted(irq_runs(events, cpu), reverse=True)[:5]
        lines.append("  longest irq runs (ms): " + ", ".join(f"{w} {s * 1e3:.3f}" for s, w, _ in irqs))
    return "\n".join(lines)


# ---- the box: tracefs on, events on, buffer read, everything off again ----------------------------
def _write(path: Path, value: str) -> None:
    with open(path, "w") as f:
        f.write(value)


# What a trace changed on the box, written before the change: a trace killed by SIGKILL leaves
# it, and the next trace (or `--cleanup`) puts the box back from it once its owner is dead.
STATE_FILE = Path("/run/ofbench/sched_trace.json")


def _restore(tracefs: Path, state: dict) -> None:
    """Events off, the saved mask and buffer size back, the buffer cleared, tracefs unmounted
    when the trace mounted it (every step tried, whatever fails)."""
    with contextlib.suppress(OSError):
        _write(tracefs / "tracing_on", "0")
    for ev in EVENTS:
        with contextlib.suppress(OSError):
            _write(tracefs / "events" / ev / "enable", "0")
    for n, v in (state.get("saved") or {}).items():
        with contextlib.suppress(OSError):
            _write(tracefs / n, v)
    with contextlib.suppress(OSError):
        _write(tracefs / "trace", "")
    if state.get("mounted"):
        subprocess.run(["umount", str(tracefs)], check=False)


def cleanup_stale(state_file: Path = STATE_FILE, tracefs: Path = TRACEFS, alive=None) -> bool:
    """Put back what a dead trace left (its state file names it); True when it did. A live
    trace's file is left alone."""
    import json
    from drivers.supervisor import proc_start_time
    try:
        state = json.loads(state_file.read_text())
    except (OSError, ValueError):
        return False
    is_alive = alive or (lambda pid, st: proc_start_time(pid) == st)
    if is_alive(state.get("pid"), state.get("start_time")):
        return False
    _restore(tracefs, state)
    state_file.unlink(missing_ok=True)
    return True


@contextlib.contextmanager
def tracing(cpus: str = "3", buffer_kb: int = 32768, tracefs: Path = TRACEFS, state_file: Path = STATE_FILE,
            mount=None):
    """tracefs (mounted for the trace if it is not), the events on for the CPUs of hex mask
    ``cpus``; at exit the events off, the mask and buffer size back, and tracefs unmounted
    when this mounted it. The state is in ``state_file`` for the whole trace (SIGKILL: the
    next trace's cleanup_stale restores it)."""
    import json
    from drivers.supervisor import proc_start_time
    cleanup_stale(state_file, tracefs)
    mounted = False
    if not (tracefs / "trace").exists():
        (mount or (lambda p: subprocess.run(["mount", "-t", "tracefs", "nodev", str(p)], check=True)))(tracefs)
        mounted = True
    saved = {n: (tracefs / n).read_text().strip().split()[0] for n in ("tracing_cpumask", "buffer_size_kb")}
    state = {"pid": os.getpid(), "start_time": proc_start_time(os.getpid()), "mounted": mounted, "saved": saved}
    state_file.parent.mkdir(parents=True, exist_ok=True)
    state_file.write_text(json.dumps(state))
    try:
        _write(tracefs / "tracing_on", "0")
        _write(tracefs / "trace", "")
        _write(tracefs / "tracing_cpumask", cpus)
        _write(tracefs / "buffer_size_kb", str(buffer_kb))
        for ev in EVENTS:
            _write(tracefs / "events" / ev / "enable", "1")
        yield tracefs
    finally:
        _restore(tracefs, state)
        state_file.unlink(missing_ok=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--delay", type=float, default=0.0, help="seconds to wait before tracing")
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--cpus", default="3", help="hex CPU mask to trace (default 3: CPUs 0 and 1)")
    ap.add_argument("--out", type=Path, help="write the raw trace here")
    ap.add_argument("--min-gap-ms", type=float, default=1.0)
    ap.add_argument("--cleanup", action="store_true", help="only put back what a killed trace left")
    a = ap.parse_args(argv)
    if a.cleanup:
        print("restored" if cleanup_stale() else "nothing to restore")
        return 0
    time.sleep(a.delay)
    with tracing(a.cpus) as tfs:
        _write(tfs / "tracing_on", "1")
        time.sleep(a.seconds)
        _write(tfs / "tracing_on", "0")
        text = (tfs / "trace").read_text(errors="replace")
    if a.out:
        a.out.write_text(text)
    print(summary(parse(text.splitlines()), a.min_gap_ms / 1e3))
    return 0


if __name__ == "__main__":
    sys.exit(main())
