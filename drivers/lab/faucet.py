"""FAUCET (faucet.nz), a third-party OpenFlow 1.3 controller, as a lab process.

FAUCET 1.10.12 pins ``os_ken==3.1.0`` (ofbench's own venv has os-ken 4.2.2), so it lives in a
venv of its own, ``.venv-faucet``, made by ``scripts/setup.sh`` from
``requirements-faucet.lock`` (env ``OFBENCH_FAUCET_VENV`` points elsewhere). It is started by
:func:`drivers.lab.switches.start_faucet`, beside our own os-ken apps, under the supervisor.

What FAUCET is told, all through its environment (it reads no secrets):
  * ``FAUCET_CONFIG`` (its YAML), ``FAUCET_LOG``, ``FAUCET_EXCEPTION_LOG`` (files in the test's
    log folder), ``FAUCET_PROMETHEUS_ADDR=127.0.0.1`` and a free ``FAUCET_PROMETHEUS_PORT``;
  * os-ken's ``--ofp-listen-host 127.0.0.1 --ofp-tcp-listen-port N`` (the ``--ryu-*`` options
    of FAUCET's own launcher).

Pure parts (the counters read from its log, the config check's message) have unit tests in
tests/test_faucet.py.
"""
from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from drivers.lab.base import LabError

FAUCET_VERSION = "1.10.12"


class FaucetError(LabError):
    """FAUCET is missing, refused its config, or did not come up; the message says which."""


def faucet_venv() -> Path:
    from paths import REPO
    return Path(os.environ.get("OFBENCH_FAUCET_VENV") or REPO / ".venv-faucet")


def faucet_available() -> str | None:
    """None if FAUCET can run on this box, else why not (for a skip)."""
    exe = faucet_venv() / "bin" / "faucet"
    if not exe.exists():
        return (f"FAUCET not installed ({exe} missing): scripts/setup.sh makes .venv-faucet "
                f"from requirements-faucet.lock")
    return None


def check_config(path: str | Path, *more: str | Path, timeout_s: float = 60.0) -> None:
    """Run FAUCET's own ``check_faucet_config`` on ``path`` (and ``more`` files, in one run);
    FaucetError naming the file(s) and FAUCET's reason if FAUCET refuses one (the same parser
    FAUCET itself runs at start)."""
    exe = faucet_venv() / "bin" / "check_faucet_config"
    if not exe.exists():
        raise FaucetError(faucet_available() or f"{exe} missing")
    files = [str(p) for p in (path, *more)]
    r = subprocess.run([str(exe), *files], capture_output=True, text=True, timeout=timeout_s)
    if r.returncode != 0:
        raise FaucetError(f"{', '.join(files)}: FAUCET refuses this config: "
                          f"{config_reason(r.stdout + chr(10) + r.stderr)}")


def config_reason(text: str) -> str:
    """What check_faucet_config says is wrong: the message of its InvalidConfigError, else
    its last line that is not a warning or a traceback."""
    m = re.search(r"""InvalidConfigError\((['"])(.*?)\1\)""", text)
    if m:
        return m.group(2)
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for ln in reversed(lines):
        if not re.search(r"Warning|^import |^Traceback|^File |^If you|^framework|^https?:", ln):
            return ln[:400]
    return lines[-1][:400] if lines else "(no output)"


# FAUCET's log lines (faucet/valve.py): one per OFPT_ERROR the switch sent it (errors it
# expects from redundant controllers are not logged), one per (re)connection and one per
# disconnection of the datapath, and one per config (re)load applied.
_OFERROR_RE = re.compile(r"OFError type: (\S+) code: (\S+)")
_CONNECT_RE = re.compile(r"Cold start configuring DP")
_DISCONNECT_RE = re.compile(r"datapath down")
_RELOAD_RE = re.compile(r"Reconfiguring existing datapath")
_PORT_RE = re.compile(r"status change: Port (\d+) up status (True|False)")


@dataclass
class FaucetCounters:
    ofp_errors: int = 0
    connects: int = 0
    disconnects: int = 0
    errors: list[str] = field(default_factory=list)
    reloads: int = 0   # config reloads applied to the running datapath
    port_changes: list[tuple[int, bool]] = field(default_factory=list)  # (port, up) in order

    def plus(self, other: "FaucetCounters") -> "FaucetCounters":
        return FaucetCounters(self.ofp_errors + other.ofp_errors,
                              self.connects + other.connects,
                              self.disconnects + other.disconnects,
                              self.errors + other.errors, self.reloads + other.reloads,
                              self.port_changes + other.port_changes)


def parse_log(text: str) -> FaucetCounters:
    """FAUCET's log -> its OFPT_ERROR, connection, disconnection and reload counts and the
    port status changes it saw (the switch's PORT_STATUS, or its port description at
    connection)."""
    c = FaucetCounters()
    for line in text.splitlines():
        m = _OFERROR_RE.search(line)
        if m:
            c.ofp_errors += 1
            c.errors.append(f"{m.group(1)}/{m.group(2)}")
        elif _CONNECT_RE.search(line):
            c.connects += 1
        elif _DISCONNECT_RE.search(line):
            c.disconnects += 1
        elif _RELOAD_RE.search(line):
            c.reloads += 1
        elif m := _PORT_RE.search(line):
            c.port_changes.append((int(m.group(1)), m.group(2) == "True"))
    return c


def listening_in_netns_of(pid: int, port: int) -> bool:
    """True if a TCP socket listens on ``port`` in the network namespace of ``pid`` (read
    from /proc/<pid>/net/tcp, which shows that process's namespace: no ``ip netns exec``)."""
    for name in ("tcp", "tcp6"):
        try:
            lines = Path(f"/proc/{pid}/net/{name}").read_text().splitlines()[1:]
        except OSError:
            continue
        for ln in lines:
            f = ln.split()
            if len(f) > 3 and f[3] == "0A" and int(f[1].rsplit(":", 1)[1], 16) == port:
                return True
    return False


@dataclass
class FaucetProcess:
    """A running FAUCET: its supervised process, OpenFlow port, config and log files."""
    lab: object
    name: str
    proc: object
    port: int
    prom_port: int
    config: Path
    log: Path
    exception_log: Path
    netns: str | None
    start_kw: dict = field(default_factory=dict)

    def counters(self) -> FaucetCounters:
        try:
            return parse_log(self.log.read_text(errors="replace"))
        except OSError:
            return FaucetCounters()

    def alive(self) -> bool:
        return self.proc.alive()

    def metrics(self, timeout_s: float = 10.0) -> dict[str, float]:
        """FAUCET's Prometheus exporter (127.0.0.1:prom_port in its namespace), each sample
        summed over its labels, a counter under its name without ``_total``:
        ``{"of_packet_ins": 20013.0, "vlan_hosts_learned": ...}``.
        Parsed by prometheus_client's own parser, from FAUCET's venv (FAUCET depends on it)."""
        code = ("import sys, urllib.request\n"
                "from prometheus_client.parser import text_string_to_metric_families as f\n"
                "t = urllib.request.urlopen(sys.argv[1], timeout=5).read().decode()\n"
                "out = {}\n"
                "for fam in f(t):\n"
                "    for s in fam.samples:\n"
                "        n = s.name[:-6] if s.name.endswith('_total') else s.name\n"
                "        out[n] = out.get(n, 0.0) + s.value\n"
                "import json; print(json.dumps(out))\n")
        argv = [str(faucet_venv() / "bin" / "python"), "-c", code,
                f"http://127.0.0.1:{self.prom_port}/"]
        if self.netns:
            argv = ["ip", "netns", "exec", self.netns, *argv]
        r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s)
        if r.returncode != 0:
            raise FaucetError(f"FAUCET's Prometheus exporter on 127.0.0.1:{self.prom_port}"
                              f" ({self.netns or 'this namespace'}): {r.stderr.strip()[-300:]}")
        import json
        return json.loads(r.stdout)

    def reload(self, new_config: str | None = None) -> None:
        """Write ``new_config`` (checked by FAUCET first) over the config and SIGHUP FAUCET,
        which re-reads it (a warm start where it can)."""
        import signal
        if new_config is not None:
            tmp = self.config.with_suffix(".next.yaml")
            tmp.write_text(new_config)
            check_config(tmp)
            os.replace(tmp, self.config)
        os.kill(self.proc.pid, signal.SIGHUP)

    def stop(self) -> None:
        self.lab.stop(self.proc)

    def exceptions(self) -> str:
        try:
            return self.exception_log.read_text(errors="replace").strip()
        except OSError:
            return ""


# ---- Open vSwitch's test controller (the second third-party controller of suites/interop) ---
def parse_ovs_testcontroller_log(text: str) -> FaucetCounters:
    """ovs-testcontroller's log (``-vvconn:console:dbg``: every OpenFlow message) -> the
    OFPT_ERRORs it received, its connections and disconnections."""
    c = FaucetCounters()
    for line in text.splitlines():
        if "received: OFPT_ERROR" in line:
            c.ofp_errors += 1
            c.errors.append(line.split("received: ", 1)[1][:200])
        elif "sent (Success): OFPT_HELLO" in line or "sent: OFPT_HELLO" in line:
            c.connects += 1
        elif "connection closed" in line or "connection dropped" in line:
            c.disconnects += 1
    return c
