"""Remove what killed runs left behind: processes, network namespaces, hugepage files, sockets
and OVS databases. Called at the start of every run and by ``make clean-stale``.

A run keeps its state in ``<STATE_ROOT>/<run-id>/`` (owner.json, pids.jsonl, netns.list and
its sockets/OVS dbs), its local InfluxDB server in ``<STATE_ROOT>/<run-id>.influxd/``. A run is *stale* when its owner process is gone (pid dead or recycled,
checked with the kernel start time). Live runs (another pytest on this box) are left alone.
Names are recognisable: namespaces ``ofb-<short>-<tag>``, DPDK file prefixes ``ofb<short>``,
where <short> is the run id's last 4 hex digits.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from drivers.lab.base import HUGE_DIR
from drivers.supervisor import proc_start_time
from paths import SYSTEM_STATE, state_root

# The system's state root. Fixed, never taken from the environment: it is consulted by every
# cleanup, whatever root that cleanup was given (OFBENCH_STATE_ROOT, a test's private root), so
# that no cleanup takes the namespaces and DPDK folders of the runs living here for orphans.
SYSTEM_STATE_ROOT = SYSTEM_STATE
# Where this process keeps its own runs' state (a test or a second checkout may move it).
STATE_ROOT = state_root()
# DPDK keeps a runtime folder per file prefix (config, fbarray, mp socket) after its process
# exits, unless run --in-memory: a run removes its own, cleanup those of dead runs.
DPDK_RUNTIME_DIR = Path(os.environ.get("OFBENCH_DPDK_RUNTIME_DIR", "/var/run/dpdk"))
NETNS_RE = re.compile(r"^ofb-([0-9a-f]{4})-")
# Exactly a run id (reports.results.new_run_id), or the folder of a run's local InfluxDB server
# (<run id>.influxd, reports/influxd.py): only such folders are runs of ours. Group 1: short.
RUN_DIR_RE = re.compile(r"^run-[0-9]{8}T[0-9]{6}Z-([0-9a-f]{4})(?:\.influxd)?$", re.ASCII)
RUN_ID_RE = re.compile(r"^run-[0-9]{8}T[0-9]{6}Z-[0-9a-f]{4}$", re.ASCII)


def check_run_id(run_id: str) -> str:
    """A lab's run id must be one cleanup recognises (else a live run's namespaces would look
    like orphans to every other cleanup, and a dead one's state would never be removed)."""
    if not isinstance(run_id, str) or not RUN_ID_RE.match(run_id):
        raise ValueError(f"run id {run_id!r} is not of the form run-YYYYmmddTHHMMSSZ-<4 hex>")
    return run_id
DPDK_PREFIX_RE = re.compile(r"^ofb([0-9a-f]{4})")
# Tools run outside a lab (unit tests, cls-bench) name their prefix ofb-<tool>-...-<pid>.
DPDK_PID_PREFIX_RE = re.compile(r"^ofb-[a-z]+-(?:.*-)?(\d+)$")


def _read_json(path: Path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def write_owner(state_dir: Path, record: dict) -> Path:
    """Write ``<state_dir>/owner.json`` atomically (tmp + fsync + rename): a reader sees no
    record or a whole one, never a torn one, whenever this process dies."""
    path = Path(state_dir) / "owner.json"
    tmp = path.with_name(f".owner.json.{os.getpid()}.tmp")
    with open(tmp, "w") as f:
        f.write(json.dumps(record))
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    return path


def owner_state(state_dir: Path) -> str:
    """'alive', 'dead', 'missing' (no owner.json) or 'unreadable' (not a JSON object with an
    integer pid: not a record we wrote, since we write it atomically, so someone else's)."""
    path = state_dir / "owner.json"
    if not path.exists():
        return "missing"
    owner = _read_json(path)
    if not isinstance(owner, dict) or not isinstance(owner.get("pid"), int) \
            or isinstance(owner.get("pid"), bool):
        return "unreadable"
    return "alive" if proc_start_time(owner["pid"]) == owner.get("start_time") else "dead"


def owner_alive(state_dir: Path) -> bool:
    return owner_state(state_dir) == "alive"


def list_netns() -> list[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def delete_netns(name: str) -> None:
    # Kill anything still running inside it first, or the namespace lingers.
    pids = subprocess.run(["ip", "netns", "pids", name], capture_output=True, text=True).stdout
    for pid in pids.split():
        try:
            os.kill(int(pid), signal.SIGKILL)
        except (ProcessLookupError, ValueError):
            pass
    subprocess.run(["ip", "netns", "delete", name], capture_output=True)


def kill_recorded(state_dir: Path) -> list[str]:
    killed = []
    try:
        lines = (state_dir / "pids.jsonl").read_text().splitlines()
    except OSError:
        return killed
    for line in lines:
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if rec.get("start_time") is None or proc_start_time(rec["pid"]) != rec["start_time"]:
            continue  # gone, or the pid now belongs to someone else
        for kill in (os.killpg, os.kill):
            try:
                kill(rec["pid"], signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        killed.append(f"{rec['name']}({rec['pid']})")
    return killed


def remove_hugepage_files(short: str) -> int:
    n = 0
    if HUGE_DIR.is_dir():
        for f in HUGE_DIR.glob(f"ofb{short}*"):
            try:
                f.unlink()
                n += 1
            except OSError:
                pass
    return n


def dpdk_runtime_in_use(d: Path) -> bool:
    """True while a DPDK primary process holds the folder: EAL keeps an fcntl write lock on
    its ``config`` file for its whole life (a folder of a --no-shconf process has none)."""
    import fcntl
    try:
        fd = os.open(d / "config", os.O_RDWR)
    except OSError:
        return False
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fcntl.lockf(fd, fcntl.LOCK_UN)
        return False
    except OSError:
        return True
    finally:
        os.close(fd)


def remove_dpdk_runtime(short: str, runtime_dir: Path | None = None, wait_s: float = 0.0) -> int:
    """Remove the DPDK runtime folders of run ``short`` (file prefixes ``ofb<short>...``),
    never one a live DPDK process still holds. ``wait_s``: how long to wait for a holder that
    was just killed to be gone (a process tearing down a large hugepage mapping keeps its lock
    for a while after SIGKILL)."""
    root = runtime_dir or DPDK_RUNTIME_DIR
    n = 0
    if root.is_dir():
        deadline = time.monotonic() + wait_s
        for d in root.glob(f"ofb{short}*"):
            while dpdk_runtime_in_use(d) and time.monotonic() < deadline:
                time.sleep(0.05)
            if dpdk_runtime_in_use(d):
                continue
            shutil.rmtree(d, ignore_errors=True)
            n += 1
    return n


def remove_run_state(state_dir: Path, short: str) -> list[str]:
    """Tear down one run's leftovers. Returns a description of what was removed."""
    removed = [f"process {p}" for p in kill_recorded(state_dir)]
    names = set()
    try:
        names |= set((state_dir / "netns.list").read_text().split())
    except OSError:
        pass
    names |= {n for n in list_netns() if n.startswith(f"ofb-{short}-")}
    for ns in sorted(names):
        delete_netns(ns)
        removed.append(f"netns {ns}")
    n = remove_hugepage_files(short)
    if n:
        removed.append(f"{n} hugepage files")
    n = remove_dpdk_runtime(short, wait_s=10.0)  # its processes were killed just above
    if n:
        removed.append(f"{n} DPDK runtime folders")
    shutil.rmtree(state_dir, ignore_errors=True)
    return removed


def _recent(d: Path, seconds: float = 60.0) -> bool:
    try:
        return time.time() - d.stat().st_mtime < seconds
    except OSError:
        return False


def cleanup_stale(state_root: Path = STATE_ROOT, log=print) -> list[str]:
    removed: list[str] = []
    if state_root.is_dir():
        for d in sorted(state_root.iterdir()):
            # Only run folders: others here (an emulated lab's lock and link sockets,
            # /run/ofbench/lab-emu/) belong to whoever holds them, not to a dead run.
            m = RUN_DIR_RE.match(d.name)
            if not d.is_dir() or not m:
                continue
            short = m.group(1)
            # A run writes owner.json right after creating its folder: a young folder without
            # it is being born, not dead. An owner record that cannot be read was not written
            # by us (we write it atomically): someone else's, never cleaned.
            state = owner_state(d)
            if state == "unreadable":
                log(f"[cleanup] {d}: owner.json unreadable; not ours to judge, left alone")
                continue
            if state == "alive" or (state == "missing" and _recent(d)):
                continue
            what = remove_run_state(d, short)
            if what:
                log(f"[cleanup] stale run {d.name}: removed {', '.join(what)}")
            removed += what
    # Namespaces whose run left no state folder at all (it is removed only after them). Folders
    # of this root and of the default one count: a test may use a private root, and must never
    # take other live runs' namespaces for orphans.
    known_shorts = set()
    for root in {Path(state_root), SYSTEM_STATE_ROOT}:
        if root.is_dir():
            known_shorts |= {m.group(1) for d in root.iterdir()
                             if d.is_dir() and (m := RUN_DIR_RE.match(d.name))}
    for ns in list_netns():
        m = NETNS_RE.match(ns)
        if m and m.group(1) not in known_shorts:
            delete_netns(ns)
            log(f"[cleanup] orphan netns {ns} removed")
            removed.append(f"netns {ns}")
    if DPDK_RUNTIME_DIR.is_dir():
        orphans = {m.group(1) for d in DPDK_RUNTIME_DIR.iterdir()
                   if (m := DPDK_PREFIX_RE.match(d.name)) and m.group(1) not in known_shorts}
        for short in sorted(orphans):
            n = remove_dpdk_runtime(short)
            if n:
                log(f"[cleanup] {n} orphan DPDK runtime folder(s) of run {short} removed")
                removed.append(f"{n} DPDK runtime folders")
        for d in DPDK_RUNTIME_DIR.iterdir():
            m = DPDK_PID_PREFIX_RE.match(d.name)
            if m and proc_start_time(int(m.group(1))) is None and not dpdk_runtime_in_use(d):
                shutil.rmtree(d, ignore_errors=True)
                removed.append(f"DPDK runtime folder {d.name}")
    # lab places (labgrid's coordinator) still held by dead runs of this machine
    from drivers.lab.lease import release_dead_leases
    removed += release_dead_leases(log=log)
    return removed


if __name__ == "__main__":
    what = cleanup_stale()
    print(f"[cleanup] {len(what)} leftovers removed" if what else "[cleanup] nothing to remove")
    sys.exit(0)
