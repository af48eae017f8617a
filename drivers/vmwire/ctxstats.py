"""Host cost of moving packets: context switches and CPU time, per packet.

RISE 4.0 watched ``vmstat``'s context switches (e1000: ~10000/s under iperf; vhost-user:
~3000/s). We read the same kernel counters, twice, around a measurement:

* system-wide: ``ctxt`` and the ``cpu`` jiffies of /proc/stat (noisy on a shared box: other
  users' work counts too);
* per process (all threads): ``voluntary_ctxt_switches`` + ``nonvoluntary_ctxt_switches`` of
  /proc/<pid>/task/*/status and utime+stime of /proc/<pid>/stat, for the processes that carry
  the packets (guests, switch). This is what the vmwire experiment compares.

Pure: the parsers and :func:`cost_per_packet`; thin: :func:`sample`.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def parse_proc_stat(text: str) -> tuple[int, int, int]:
    """(ctxt, busy_jiffies, total_jiffies) from /proc/stat (busy includes steal)."""
    ctxt = busy = total = 0
    for line in text.splitlines():
        parts = line.split()
        if not parts:
            continue
        if parts[0] == "ctxt":
            ctxt = int(parts[1])
        elif parts[0] == "cpu":
            vals = [int(v) for v in parts[1:]]
            total = sum(vals[:8])          # user nice system idle iowait irq softirq steal
            idle = vals[3] + (vals[4] if len(vals) > 4 else 0)
            busy = total - idle
    return ctxt, busy, total


def parse_proc_stat_steal(text: str) -> int:
    """Steal jiffies (the hypervisor ran something else on this VM's vCPUs) from /proc/stat."""
    for line in text.splitlines():
        parts = line.split()
        if parts and parts[0] == "cpu":
            return int(parts[8]) if len(parts) > 8 else 0
    return 0


def parse_status_ctxt(text: str) -> int:
    """voluntary + nonvoluntary context switches from a /proc/<pid>[/task/<tid>]/status."""
    n = 0
    for line in text.splitlines():
        if line.startswith(("voluntary_ctxt_switches:", "nonvoluntary_ctxt_switches:")):
            n += int(line.split()[1])
    return n


def parse_stat_cpu_ticks(text: str) -> int:
    """utime + stime (clock ticks, all threads) from /proc/<pid>/stat."""
    fields = text.rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


@dataclass
class Sample:
    system_ctxt: int
    system_busy_jiffies: int
    procs_ctxt: dict[int, int] = field(default_factory=dict)
    procs_cpu_ticks: dict[int, int] = field(default_factory=dict)
    system_steal_jiffies: int = 0


def _proc_ctxt(pid: int) -> int | None:
    total, found = 0, False
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return None
    for t in tasks:
        try:
            total += parse_status_ctxt((t / "status").read_text())
            found = True
        except OSError:  # a thread ended between listing and reading
            pass
    return total if found else None


def sample(pids: list[int]) -> Sample:
    text = Path("/proc/stat").read_text()
    ctxt, busy, _ = parse_proc_stat(text)
    s = Sample(ctxt, busy, system_steal_jiffies=parse_proc_stat_steal(text))
    for pid in pids:
        c = _proc_ctxt(pid)
        try:
            ticks = parse_stat_cpu_ticks(Path(f"/proc/{pid}/stat").read_text())
        except OSError:
            ticks = None
        if c is not None and ticks is not None:
            s.procs_ctxt[pid], s.procs_cpu_ticks[pid] = c, ticks
    return s


def cost_per_packet(before: Sample, after: Sample, packets: int, seconds: float,
                    clk_tck: int = CLK_TCK) -> dict:
    """Flat metrics for a result record. Processes missing from either sample are left out
    (a process that ended mid-run has no final counter). ``host_other_cpu_s`` is the CPU time
    of everything else on the box (other processes, interrupts) and ``host_steal_s`` what the
    hypervisor took from this VM's vCPUs, both over the window: a trial that moved with either
    large was disturbed, not slow by itself."""
    pids = set(before.procs_ctxt) & set(after.procs_ctxt)
    proc_ctxt = sum(after.procs_ctxt[p] - before.procs_ctxt[p] for p in pids)
    proc_ticks = sum(after.procs_cpu_ticks[p] - before.procs_cpu_ticks[p] for p in pids)
    sys_ctxt = after.system_ctxt - before.system_ctxt
    steal = after.system_steal_jiffies - before.system_steal_jiffies
    others = after.system_busy_jiffies - before.system_busy_jiffies - steal - proc_ticks
    kpkt = packets / 1000.0 if packets > 0 else float("nan")
    return {
        "packets": packets,
        "seconds": round(seconds, 3),
        "proc_ctx_switches": proc_ctxt,
        "proc_ctx_per_s": round(proc_ctxt / seconds, 1) if seconds > 0 else None,
        "proc_ctx_per_kpkt": round(proc_ctxt / kpkt, 4) if packets > 0 else None,
        "host_ctx_per_s": round(sys_ctxt / seconds, 1) if seconds > 0 else None,
        "host_ctx_per_kpkt": round(sys_ctxt / kpkt, 4) if packets > 0 else None,
        "proc_cpu_s": round(proc_ticks / clk_tck, 3),
        "proc_cpu_us_per_pkt": round(proc_ticks / clk_tck * 1e6 / packets, 4)
        if packets > 0 else None,
        "host_other_cpu_s": round(max(others, 0) / clk_tck, 3),
        "host_steal_s": round(steal / clk_tck, 3),
    }


def median_trial(trials: list[dict], key: str) -> dict:
    """The trial whose ``key`` is the median (the lower middle one for an even count), with
    ``<key>_trials``: every trial's value in run order. A whole trial, not a per-metric median,
    so its rate and its context switches come from the same measurement."""
    if not trials:
        raise ValueError("median_trial: no trials")
    ranked = sorted(trials, key=lambda t: t[key])
    chosen = dict(ranked[(len(ranked) - 1) // 2])
    chosen[f"{key}_trials"] = [t[key] for t in trials]
    return chosen


def other_load(m: dict) -> float:
    """Cores' worth of CPU that other work (processes outside the measurement, the
    hypervisor's steal) took on average over a window measured by :func:`cost_per_packet`."""
    seconds = m.get("seconds") or 0
    if seconds <= 0:
        return 0.0
    return ((m.get("host_other_cpu_s") or 0) + (m.get("host_steal_s") or 0)) / seconds


def is_disturbed(m: dict, limit: float) -> bool:
    """A window in which other work took more than ``limit`` of a core on average: its rate
    says how busy the box was, not what the measured path can do."""
    return other_load(m) > limit
