"""Process supervisor: starts each lab process, waits until it is ready, keeps its log, and
stops everything on every exit path.

Invariants:
  * Every process runs in its own session (process group), so stopping it also stops what it
    forked (ip netns exec, shells, DPDK helper threads in children).
  * Every started process is recorded in ``<state_dir>/pids.jsonl`` (pid + kernel start time)
    *before* readiness is awaited, so :mod:`drivers.lab.cleanup` can kill it if this Python
    process dies by SIGKILL. The start time guards against killing a recycled pid.
  * ``stop_all`` stops in reverse start order (generators before switches before OVS db).

Logs: each process writes stdout+stderr to ``<log_dir>/<name>.log``; ``log_dir`` is switched per
test by the harness so a test's result folder holds the logs of what it started.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from redact import redact_command


class ProcessStartError(RuntimeError):
    """A supervised process died or did not become ready; carries its log's tail."""


def proc_start_time(pid: int) -> int | None:
    """Kernel start time of ``pid`` (clock ticks since boot), or None if it is gone or a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name may contain spaces and parentheses: split after the last ')'.
    fields = stat.rsplit(")", 1)[1].split()
    if fields[0] in ("Z", "X"):
        return None  # a zombie is dead; only its parent (maybe not us) can reap it
    return int(fields[19])


def tail(path: Path, lines: int = 25) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


@dataclass
class ManagedProcess:
    name: str
    argv: list[str]
    popen: subprocess.Popen
    log_path: Path
    start_time: int | None
    stop_signal: int = signal.SIGTERM
    netns: str | None = None

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def wait(self, timeout_s: float | None = None) -> int:
        return self.popen.wait(timeout=timeout_s)

    def log_tail(self, lines: int = 25) -> str:
        return tail(self.log_path, lines)


@dataclass
class Supervisor:
    state_dir: Path
    log_dir: Path
    procs: list[ManagedProcess] = field(default_factory=list)

    def __post_init__(self):
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self.log_dir.mkdir(parents=True, exist_ok=True)

    # ---- start ----------------------------------------------------------------------------
    def start(self, name: str, argv: list[str], *, env: dict | None = None,
              netns: str | None = None, cwd: str | Path | None = None,
              ready: Callable[[], bool] | None = None, ready_timeout_s: float = 30.0,
              stop_signal: int = signal.SIGTERM, log_name: str | None = None,
              stdin=subprocess.DEVNULL) -> ManagedProcess:
        """Start ``argv`` (inside ``netns`` if given) and wait until ``ready()`` is true.

        Raises ProcessStartError (with the log tail) if it exits or is not ready in time; the
        process is stopped before raising.
        """
        if any(p.name == name and p.alive() for p in self.procs):
            raise ValueError(f"a process named {name!r} is already running")
        full = (["ip", "netns", "exec", netns] if netns else []) + [str(a) for a in argv]
        self.log_dir.mkdir(parents=True, exist_ok=True)
        log_path = self.log_dir / f"{log_name or name}.log"
        log = open(log_path, "ab", buffering=0)
        log.write(f"# {time.strftime('%H:%M:%S')} start: {redact_command(full)}\n".encode())
        penv = dict(os.environ)
        penv.update(env or {})
        popen = subprocess.Popen(full, stdout=log, stderr=subprocess.STDOUT, stdin=stdin,
                                 env=penv, cwd=cwd, start_new_session=True)
        log.close()
        proc = ManagedProcess(name, full, popen, log_path, proc_start_time(popen.pid),
                              stop_signal, netns)
        self.procs.append(proc)
        self._record(proc)
        if ready is not None:
            self._await_ready(proc, ready, ready_timeout_s)
        return proc

    def _record(self, proc: ManagedProcess) -> None:
        with open(self.state_dir / "pids.jsonl", "a") as f:
            f.write(json.dumps({"name": proc.name, "pid": proc.pid,
                                "start_time": proc.start_time}) + "\n")

    def _await_ready(self, proc: ManagedProcess, ready, timeout_s: float) -> None:
        await_ready(proc, ready, timeout_s, exit_code=lambda: proc.popen.returncode,
                    stop=lambda: self.stop(proc), where="")

    # ---- stop -----------------------------------------------------------------------------
    def stop(self, proc: ManagedProcess | str, timeout_s: float = 5.0) -> int | None:
        """Stop one process (and its process group): its stop signal, then SIGKILL."""
        if isinstance(proc, str):
            matches = [p for p in self.procs if p.name == proc]
            if not matches:
                return None
            proc = matches[-1]
        if proc.alive():
            _signal_group(proc.pid, proc.stop_signal)
            _signal_group(proc.pid, signal.SIGCONT)  # a paused group acts on the signal now
            try:
                proc.popen.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                _signal_group(proc.pid, signal.SIGKILL)
                proc.popen.wait(timeout=5)
        # Children that outlived the leader (same group) must go too.
        _signal_group(proc.pid, signal.SIGKILL)
        if proc in self.procs:
            self.procs.remove(proc)
        return proc.popen.returncode

    # ---- pause ----------------------------------------------------------------------------
    def pause(self, proc: ManagedProcess) -> None:
        """SIGSTOP the process and its group: it keeps every socket, shared ring and hugepage
        and takes no CPU until :meth:`resume` (or :meth:`stop`, which resumes it first). Lets
        two busy-polling systems share a core by turns (suites/vmwire's interleaved
        comparison)."""
        if proc.alive():
            _signal_group(proc.pid, signal.SIGSTOP)

    def resume(self, proc: ManagedProcess) -> None:
        """SIGCONT what :meth:`pause` stopped."""
        if proc.alive():
            _signal_group(proc.pid, signal.SIGCONT)

    def stop_all(self, timeout_s: float = 5.0) -> None:
        for proc in reversed(list(self.procs)):
            try:
                self.stop(proc, timeout_s)
            except Exception:  # keep stopping the others whatever happens
                pass


def await_ready(proc, ready: Callable[[], bool], timeout_s: float, *, exit_code, stop,
                where: str = "", max_delay_s: float = 0.25) -> None:
    """Poll ``ready()`` until true; if ``proc`` dies first or ``timeout_s`` passes, ``stop()``
    it and raise ProcessStartError with its log's tail. ``proc`` has name, alive(), log_path
    and log_tail(); probes that raise count as not ready. Shared by the local supervisor and
    the lab hosts over SSH (``where``: " on <host role>")."""
    deadline = time.monotonic() + timeout_s
    delay = 0.02
    while True:
        if not proc.alive():
            rc = exit_code()
            stop()
            raise ProcessStartError(f"{proc.name}{where} exited with code {rc} before it was "
                                    f"ready; log {proc.log_path}:\n{proc.log_tail()}")
        try:
            if ready():
                return
        except Exception:  # readiness probes may fail until the process is up
            pass
        if time.monotonic() > deadline:
            stop()
            raise ProcessStartError(f"{proc.name}{where} not ready after {timeout_s:.0f} s; "
                                    f"log {proc.log_path}:\n{proc.log_tail()}")
        time.sleep(delay)
        delay = min(delay * 1.5, max_delay_s)


def _signal_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass
