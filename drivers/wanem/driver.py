"""Python driver of the user-space WAN emulator (build/drivers/wanem/wanem).

Pure parts (argv building, stats parsing) are functions; the process and its control socket
are thin wrappers.  The emulator runs inside a network namespace (`ip netns exec`) that holds
the in/out interfaces of its paths; its control socket is a filesystem AF_UNIX socket, which
works across namespaces.
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path as FsPath

from paths import build_dir


def binary() -> FsPath:
    return build_dir() / "drivers" / "wanem" / "wanem"


@dataclass(frozen=True)
class PathSpec:
    name: str
    in_if: str
    out_if: str
    rate_mbps: float
    delay_ms: float
    loss_pct: float = 0.0

    def arg(self) -> str:
        for field, v in (("name", self.name), ("in_if", self.in_if), ("out_if", self.out_if)):
            if not v or ":" in v:
                raise ValueError(f"wanem path {self.name!r}: {field} must be non-empty without ':'")
        if not self.rate_mbps > 0:
            raise ValueError(f"wanem path {self.name}: rate_mbps must be > 0, got {self.rate_mbps}")
        return f"{self.name}:{self.in_if}:{self.out_if}:{self.rate_mbps:g}:{self.delay_ms:g}:{self.loss_pct:g}"


def wanem_argv(paths: list[PathSpec], ctl_path: str | None = None, stats_path: str | None = None,
               rt_prio: int = 10, spin_us: float = 60, slots: int = 32768,
               max_backlog_ms: float = 500, wire_overhead_bytes: int = 24, exe: str | None = None) -> list[str]:
    argv = [exe or str(binary())]
    for p in paths:
        argv += ["--path", p.arg()]
    if ctl_path:
        argv += ["--ctl", ctl_path]
    if stats_path:
        argv += ["--stats", stats_path]
    argv += ["--rt-prio", str(rt_prio), "--spin-us", f"{spin_us:g}", "--slots", str(slots),
             "--max-backlog-ms", f"{max_backlog_ms:g}", "--wire-overhead", str(wire_overhead_bytes)]
    return argv


def accuracy_metrics(stats: dict) -> dict[str, float]:
    """Flat result metrics (suite=wan, name=wanem_accuracy) from the emulator's stats JSON."""
    out: dict[str, float] = {}
    for i, p in enumerate(stats.get("paths", []), start=1):
        out[f"path{i}_delay_err_mean_us"] = p["delay_err_mean_us"]
        out[f"path{i}_delay_err_p99_us"] = p["delay_err_p99_us"]
        out[f"path{i}_delay_err_max_us"] = p["delay_err_max_us"]
        out[f"path{i}_rate_mbps"] = p["rate_mbps"]
        out[f"path{i}_rate_set_mbps"] = p["rate_mbps_set"]
        out[f"path{i}_tx_frames"] = p["tx_frames"]
        out[f"path{i}_drops"] = p["drop_queue"] + p["drop_slots"] + p["tx_errors"]
    return out


class WanemControl:
    """Client of the emulator's AF_UNIX datagram control socket."""

    def __init__(self, ctl_path: str, timeout_s: float = 2.0):
        self.ctl_path = ctl_path
        self.timeout_s = timeout_s

    def _ask(self, cmd: str) -> str:
        with tempfile.TemporaryDirectory(prefix="ofb-wanem-cli-") as d:
            me = os.path.join(d, "c.sock")
            s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            try:
                s.bind(me)
                s.settimeout(self.timeout_s)
                s.sendto(cmd.encode(), self.ctl_path)
                return s.recv(65536).decode()
            finally:
                s.close()

    def stats(self) -> dict:
        return json.loads(self._ask("stats"))

    def reset(self) -> None:
        self._check(self._ask("reset"))

    def set(self, path: str, rate_mbps: float | None = None, delay_ms: float | None = None,
            loss_pct: float | None = None) -> None:
        kv = [f"{k}={v:g}" for k, v in (("rate_mbps", rate_mbps), ("delay_ms", delay_ms),
                                          ("loss_pct", loss_pct)) if v is not None]
        self._check(self._ask(f"set {path} " + " ".join(kv)))

    @staticmethod
    def _check(reply: str) -> None:
        if reply != "ok":
            raise RuntimeError(f"wanem: {reply}")

    def wait_ready(self, timeout_s: float = 10.0) -> None:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                self.stats()
                return
            except (OSError, ValueError):
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)


class Wanem:
    """Runs the emulator in a netns without the lab supervisor (tests, standalone use).

    Use as a context manager; stop() sends SIGTERM, waits, and returns the final stats.
    """

    def __init__(self, paths: list[PathSpec], netns: str | None, workdir: str, **kw):
        self.ctl_path = os.path.join(workdir, "wanem.ctl")
        self.stats_path = os.path.join(workdir, "wanem-stats.json")
        self.log_path = os.path.join(workdir, "wanem.log")
        self.argv = wanem_argv(paths, self.ctl_path, self.stats_path, **kw)
        if netns:
            self.argv = ["ip", "netns", "exec", netns, *self.argv]
        self.proc: subprocess.Popen | None = None
        self.ctl = WanemControl(self.ctl_path)

    def start(self) -> "Wanem":
        if not binary().exists() and self.argv[0] == str(binary()):
            raise FileNotFoundError(f"{binary()} not built (ninja -C {build_dir()})")
        self._log = open(self.log_path, "w")
        self.proc = subprocess.Popen(self.argv, stdout=self._log, stderr=subprocess.STDOUT)
        try:
            self.ctl.wait_ready()
        except Exception:
            self.stop()
            raise RuntimeError(f"wanem did not start: {open(self.log_path).read()}")
        return self

    def stop(self) -> dict:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if getattr(self, "_log", None):
            self._log.close()
        try:
            return json.loads(FsPath(self.stats_path).read_text())
        except (OSError, ValueError):
            return {}

    def __enter__(self) -> "Wanem":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.final_stats = self.stop()
