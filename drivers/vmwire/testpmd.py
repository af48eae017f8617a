"""DPDK virtio_user guests: ``dpdk-testpmd`` attached to the switch's vhost-user sockets.

A "virtio_user guest" is what a VM's DPDK application looks like to the switch (the same
vhost-user protocol, shared memory, no interrupts) without a VM's cost: it is what makes
rates measurable on this box. testpmd runs interactively with its stdin on a pipe, so the
test can send commands (``start``, ``show port stats all``) and read the replies from the
process log.

Pure: :func:`parse_port_stats`, :func:`parse_rx_empty_burst_share`, :func:`pmd_argv`. Thin: :class:`PmdGuest`.
Ports are numbered in ``--vdev`` order (DPDK probes virtual devices in argument order).
"""
from __future__ import annotations

import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

TESTPMD = shutil.which("dpdk-testpmd") or "/usr/bin/dpdk-testpmd"
FWD_MODES = ("io", "txonly", "rxonly", "macswap")
_BLOCK_RE = re.compile(r"#+ NIC statistics for port (\d+)\s+#+(.*?)#{20,}", re.S)


def virtio_user_vdev(index: int, sock: str | Path, *, server: bool, mac: str | None = None,
                     queue_size: int = 256) -> str:
    """``server=True`` when the switch is the vhost-user client (OVS dpdkvhostuserclient)."""
    v = f"net_virtio_user{index},path={sock},queues=1,queue_size={queue_size}," \
        f"server={1 if server else 0}"
    return v + (f",mac={mac}" if mac else "")


def pmd_argv(eal: list[str], vdevs: list[str], *, fwd: str, cpu: int,
                 total_mbufs: int = 8192, extra: list[str] | None = None) -> list[str]:
    """testpmd with one forwarding lcore; main and forwarding lcore share ``cpu`` (the main
    lcore only reads commands) so one guest costs one core at most."""
    if fwd not in FWD_MODES:
        raise ValueError(f"testpmd forward mode {fwd!r}: expected one of {FWD_MODES}")
    eal = _drop_opt(eal, "-l")
    # stdout is the supervisor's log file: line-buffer it, or replies to commands sit in
    # testpmd's stdio buffer and never reach the log.
    argv = ["stdbuf", "-oL", "-eL", TESTPMD, "--lcores", f"0@{cpu},1@{cpu}", *eal]
    for v in vdevs:
        argv += ["--vdev", v]
    return argv + ["--", "-i", f"--total-num-mbufs={total_mbufs}", f"--forward-mode={fwd}",
                   "--nb-cores=1", *(extra or [])]


def parse_port_stats(text: str) -> dict[int, dict[str, int]]:
    """The last ``show port stats`` block per port: rx_packets, rx_missed, tx_packets, ..."""
    out: dict[int, dict[str, int]] = {}
    for m in _BLOCK_RE.finditer(text):
        port, body = int(m.group(1)), m.group(2)
        vals = {}
        for key, name in (("RX-packets", "rx_packets"), ("RX-missed", "rx_missed"),
                          ("RX-bytes", "rx_bytes"), ("RX-errors", "rx_errors"),
                          ("RX-nombuf", "rx_nombuf"), ("TX-packets", "tx_packets"),
                          ("TX-errors", "tx_errors"), ("TX-bytes", "tx_bytes")):
            mm = re.search(rf"{key}:\s+(\d+)", body)
            if mm:
                vals[name] = int(mm.group(1))
        out[port] = vals
    return out


_FWD_STATS = "Forward statistics for port 0"
_RX_BURSTS_RE = re.compile(r"RX-bursts : (\d+) \[(\d+)% of 0 pkts")


def parse_rx_empty_burst_share(text: str) -> float | None:
    """Share of the guest's RX polls that found nothing, from the forward statistics testpmd
    prints at ``stop`` with ``--record-burst-stats`` (the last stop's block; testpmd always
    lists the 0-packet bursts first, as a whole percent), weighted by each port's poll count.
    Near 1: the guest waited for the switch, so the switch set the loop's rate. None without
    burst statistics."""
    i = text.rfind(_FWD_STATS)
    if i < 0:
        return None
    polls = empty = 0.0
    for m in _RX_BURSTS_RE.finditer(text, i):
        n = int(m.group(1))
        polls += n
        empty += n * int(m.group(2)) / 100
    return round(empty / polls, 3) if polls else None


def _drop_opt(args: list[str], opt: str) -> list[str]:
    out, skip = [], False
    for a in args:
        if skip:
            skip = False
        elif a == opt:
            skip = True
        else:
            out.append(a)
    return out


@dataclass
class PmdGuest:
    """A running testpmd under the lab supervisor (commands through its stdin)."""
    proc: object
    nports: int

    @classmethod
    def start(cls, lab, name: str, vdevs: list[str], *, fwd: str, cpu: int,
              netns: str | None = None, mem_mb: int = 64, extra: list[str] | None = None,
              ready_timeout_s: float = 30.0) -> "PmdGuest":
        eal = lab.eal_args(name, mem_mb=mem_mb, in_memory=True)
        argv = pmd_argv(eal, vdevs, fwd=fwd, cpu=cpu, extra=extra)
        holder = {}

        def ready() -> bool:
            p = holder.get("p")
            return p is not None and "testpmd>" in p.log_path.read_text(errors="replace")

        # The supervisor waits for readiness inside start(); the log path is known only after
        # Popen, so the probe reads it through the process list.
        def probe() -> bool:
            procs = [p for p in lab.supervisor.procs if p.name == name]
            if procs:
                holder["p"] = procs[-1]
            return ready()

        proc = lab.supervisor.start(name, argv, netns=netns, stdin=subprocess.PIPE,
                                    ready=probe, ready_timeout_s=ready_timeout_s)
        return cls(proc, len(vdevs))

    def cmd(self, line: str) -> None:
        self.proc.popen.stdin.write((line + "\n").encode())
        self.proc.popen.stdin.flush()

    def log(self) -> str:
        return self.proc.log_path.read_text(errors="replace")

    def rx_empty_burst_share(self, timeout_s: float = 3.0) -> float | None:
        """After ``stop`` of a guest started with ``--record-burst-stats``: its RX polls'
        empty share (parse_rx_empty_burst_share), waiting for testpmd to print it."""
        deadline = time.monotonic() + timeout_s
        while True:
            got = parse_rx_empty_burst_share(self.log())
            if got is not None or time.monotonic() > deadline:
                return got
            time.sleep(0.05)

    def port_stats(self, timeout_s: float = 5.0) -> dict[int, dict[str, int]]:
        """Send ``show port stats all`` and return the fresh counters of every port."""
        before = len(self.log())
        self.cmd("show port stats all")
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            text = self.log()[before:]
            stats = parse_port_stats(text)
            if len(stats) >= self.nports:
                return stats
            time.sleep(0.05)
        raise TimeoutError(f"testpmd {self.proc.name}: no port stats within {timeout_s} s; "
                           f"log {self.proc.log_path}")

    def link_up(self, port: int) -> bool:
        """True once the port's link is up (for virtio_user: the vhost-user peer connected)."""
        before = len(self.log())
        self.cmd(f"show port summary {port}")
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            text = self.log()[before:]
            m = re.search(rf"^\s*{port}\s+\S+\s+\S+\s+\S+\s+(up|down)", text, re.M)
            if m:
                return m.group(1) == "up"
            time.sleep(0.05)
        return False
