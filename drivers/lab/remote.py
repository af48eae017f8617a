"""A lab of hosts reached over SSH (profile ``lab.kind: remote``: dut/profiles/lab1.yaml, or the
emulated dut/profiles/lab-emu.yaml that CI runs).

Each role in ``lab.hosts`` (switch, controller, generator, ...) is a :class:`RemoteHost`: one
paramiko connection (key-based; host keys checked against ``lab.known_hosts`` or the system's
known hosts, never accepted blindly). Opening the lab, before any traffic:

  1. every host is reached (TCP, then SSH authentication); a failure stops the run with one
     message naming the profile file and the key (``lab.hosts.switch``, ``...key_file``);
  2. what the host is gets read (cores, hugepages) and the profile checked against it (a core
     list the host lacks, a PCI address not present): errors name the profile key;
  3. leftovers of this machine's dead runs on the host are removed (processes, DPDK runtime
     folders, hugepage files, state), ``drivers.lab.hostside.CLEAN``;
  4. the ofbench tree is synced to the host's ``workdir`` (rsync over ssh, with the venv) and
     the C parts a role runs are built there, for that host's CPU (``-march=native`` is never
     copied between hosts).

Processes are started detached in their own session, recorded in the host's run folder
(``<state_dir>/<run-id>/<role>/pids.jsonl``, pid + kernel start time), stopped in every exit
path (TERM to the group, then KILL), and their logs copied into the test's result folder.

Only what a profile names is ever contacted.
"""
from __future__ import annotations

import contextlib
import json
import os
import shlex
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from drivers.lab.base import LabError, check_name, parse_cores
from drivers.lab import hostside  # noqa: E402
from drivers.supervisor import await_ready, proc_start_time
from redact import redact_text

# What a role builds on its host (ninja targets of the meson project): the switch role, and the
# generator role by its kind.
ROLE_TARGETS = {"switch": ["dut/switch/ofswitch", "dut/classifier/cls-bench",
                           "dut/switch/bench/feed_ceiling", "drivers/probes/memchase"],
                "softgen": ["drivers/softgen/softgen"],
                # TRex's bind shim (drivers/trex/bindshim.c): TRex listens on the lab address only
                "trex": ["drivers/trex/libofb_trex_bind.so"]}
# The snippets of drivers.lab.hostside run with the host's system Python (Debian: python3).
HOST_PYTHON = "/usr/bin/python3"
# rsync --delete only goes into a workdir that carries this file (written on the first sync
# into an empty or missing folder): a profile's typo (workdir: /opt) stops the run instead of
# emptying a folder of the host's. Excluded from the sync, so --delete keeps it.
WORKDIR_MARKER = ".ofbench-workdir"
SYNC_EXCLUDES = ["/.git", "/build", "/tools", "/reports/run-*", "/reports/latest",
                 "/reports/spool", "/traces/out", "__pycache__", "/.venv", "/.venv-labgrid",
                 "/.venv-faucet", f"/{WORKDIR_MARKER}"]


# An emulated lab's hosts keep their trees in this box's cache (dut/profiles/lab-emu*.yaml);
# a tree synced there before the marker existed is adopted once (emulated labs only).
EMULATED_WORKDIR_CACHE = "/var/cache/ofbench/lab-emu/"


def workdir_action(state: dict, key: str, workdir: str, adopt_tree: bool = False) -> str:
    """What to do before rsync --delete into a host's workdir, from the host's answer to
    hostside.WORKDIR (pure): "sync" (it carries ofbench's marker), "mark" (missing or empty:
    the marker is written first), "adopt" (``adopt_tree``: an emulated lab's cache folder that
    holds an ofbench tree and venv synced before the marker existed), or LabError naming the
    profile key (``key``: ``<profile>: lab.hosts.<role>.workdir``) for anything else."""
    if state.get("exists") and not state.get("is_dir"):
        raise LabError(f"{key}: {workdir} exists on the host and is not a folder; give a "
                       f"folder of ofbench's own")
    if state.get("marker"):
        return "sync"
    entries = state.get("entries") or []
    if not state.get("exists") or not entries:
        return "mark"
    if adopt_tree and state.get("ofbench_tree"):
        return "adopt"
    shown = ", ".join(entries[:5]) + (", ..." if state.get("count", len(entries)) > 5 else "")
    raise LabError(f"{key}: {workdir} is not empty and has no ofbench marker ({WORKDIR_MARKER});"
                   f" rsync --delete would remove what it holds ({shown}). Give an empty or new "
                   f"folder, or, if it is an ofbench tree synced before the marker existed, "
                   f"create the marker there: touch {shlex.quote(workdir + '/' + WORKDIR_MARKER)}")


def stop_script(pid: int, start_time: int | None, timeout_s: float) -> str:
    """The shell that stops process group ``pid`` on a host: TERM, wait up to ``timeout_s``,
    then KILL; each signal only while ``/proc/<pid>`` still has the kernel start time recorded
    at start (a pid reused by another process is never signalled; an unknown start time signals
    nothing) (pure)."""
    pid, ticks = int(pid), int(timeout_s * 10)
    if start_time is None:
        return "true"
    same = (f"[ \"$(sed 's/.*) //' /proc/{pid}/stat 2>/dev/null | cut -d' ' -f20)\" = "
            f"{shlex.quote(str(int(start_time)))} ]")
    return (f"if {same}; then kill -TERM -{pid} 2>/dev/null; i=0; "
            f"while grep -qs '^State:[[:space:]]*[^ZX]' /proc/{pid}/status && [ $i -lt {ticks} ]; "
            f"do sleep 0.1; i=$((i+1)); done; {same} && kill -KILL -{pid} 2>/dev/null; fi; true")


def check_reachable(role: str, host: dict, where: str, timeout_s: float = 5.0) -> None:
    addr, port = host["address"], host.get("ssh_port", 22)
    try:
        with socket.create_connection((addr, port), timeout=timeout_s):
            return
    except OSError as e:
        raise LabError(f"{where}: lab.hosts.{role}: {addr}:{port} unreachable over SSH "
                       f"({e.strerror or e}); check the address, the cabling and that sshd "
                       f"runs") from None


def local_trex_source() -> Path | None:
    """The TRex archive this machine builds from (scripts/build_trex.sh --source: env
    OFBENCH_TREX_SRC, else the vendored tarball); None when it would clone the official
    repository or build from a directory, which a lab host then fetches on its own."""
    from paths import REPO
    cp = subprocess.run(["bash", str(REPO / "scripts" / "build_trex.sh"), "--source"],
                        capture_output=True, text=True)
    kind, _, path = cp.stdout.strip().partition(" ")
    return Path(path) if cp.returncode == 0 and kind == "tarball" else None


def controller_id() -> str:
    """Who runs the lab: this machine's name and boot, written into each host's run folder so
    a later run from here knows which leftovers are its own."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        boot = "?"
    return f"{socket.gethostname()}/{boot}"


@dataclass
class RemoteProcess:
    """A process on a lab host; mirrors ManagedProcess (name, pid, log_path, alive, wait)."""
    name: str
    host: "RemoteHost"
    pid: int
    start_time: int | None
    remote_log: str
    local_log: Path
    argv: list[str] = field(default_factory=list)

    @property
    def log_path(self) -> Path:
        """The log, copied from the host now (so readers see what it printed so far)."""
        self.host.fetch_log(self)
        return self.local_log

    def alive(self) -> bool:
        return self.host.alive(self)

    def wait(self, timeout_s: float | None = None) -> int | None:
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while self.alive():
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(self.argv, timeout_s)
            time.sleep(0.1)
        return self.host.exit_code(self)

    def log_tail(self, lines: int = 25) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"


class ForwardedListener:
    """See RemoteHost.listen_here. ``address``/``port`` are what the host's process connects
    to; ``accept(timeout_s)`` returns the next connection (a paramiko channel)."""
    address = "127.0.0.1"

    def __init__(self, transport, role: str):
        import queue
        self.transport, self.role = transport, role
        self._queue: "queue.Queue" = queue.Queue()
        # our own handler: connections to this port only (several listeners share a transport)
        self.port = transport.request_port_forward(
            "127.0.0.1", 0, handler=lambda chan, origin, server: self._queue.put(chan))
        if not self.port:
            raise LabError(f"{role}: the host's sshd refused remote port forwarding "
                           f"(AllowTcpForwarding)")

    def accept(self, timeout_s: float = 60.0):
        import queue
        try:
            return self._queue.get(timeout=timeout_s)
        except queue.Empty:
            raise TimeoutError(f"nothing on {self.role} connected to 127.0.0.1:{self.port} in "
                               f"{timeout_s:.0f} s") from None

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.transport.cancel_port_forward("127.0.0.1", self.port)


class RemoteHost:
    """One lab host over SSH. Not thread-safe: used from the session's thread."""

    def __init__(self, lab: "RemoteLab", role: str, spec: dict):
        self.lab, self.role, self.spec = lab, role, spec
        self.address = spec["address"]
        self.workdir = Path(spec["workdir"])
        self.state_dir = Path(lab.state_root) / lab.run_id / role
        self.python = str(self.workdir / ".venv" / "bin" / "python")
        self.procs: list[RemoteProcess] = []
        self.facts: dict = {}
        self._client = None
        self._sftp = None
        self._core_cycle = None

    # ---- connection -------------------------------------------------------------------------
    def key(self, sub: str = "") -> str:
        return f"{self.lab.where}: lab.hosts.{self.role}{'.' + sub if sub else ''}"

    def connect(self, timeout_s: float = 10.0) -> None:
        import paramiko
        check_reachable(self.role, self.spec, self.lab.where, timeout_s)
        c = paramiko.SSHClient()
        c.set_missing_host_key_policy(paramiko.RejectPolicy())
        known = self.lab.known_hosts
        try:
            if known:
                c.load_host_keys(str(known))
            else:
                c.load_system_host_keys()
        except OSError as e:
            raise LabError(f"{self.lab.where}: lab.known_hosts: cannot read {known}: {e}") from None
        key_file = self.spec.get("key_file")
        try:
            c.connect(self.address, port=self.spec.get("ssh_port", 22),
                      username=self.spec.get("user", "root"),
                      key_filename=str(Path(key_file).expanduser()) if key_file else None,
                      timeout=timeout_s, banner_timeout=timeout_s, auth_timeout=timeout_s,
                      allow_agent=not key_file, look_for_keys=not key_file)
        except paramiko.AuthenticationException as e:
            raise LabError(f"{self.key('key_file')}: SSH authentication as "
                           f"{self.spec.get('user', 'root')}@{self.address} failed ({e}); check "
                           f"the key and the host's authorized_keys") from None
        except paramiko.SSHException as e:
            hint = ("lab.known_hosts" if "not found in known_hosts" in str(e)
                    or "host key" in str(e).lower() else f"lab.hosts.{self.role}")
            raise LabError(f"{self.lab.where}: {hint}: SSH to {self.address} refused: {e}") from None
        except OSError as e:
            raise LabError(f"{self.key()}: SSH to {self.address} failed: {e}") from None
        # Control requests are small request/reply lines (softgen, the switch's stats): with
        # Nagle on, each waited for the previous segment's ACK (6.5 ms a round trip on the
        # emulated lab, 0.3 ms without).
        c.get_transport().sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._client = c

    @property
    def client(self):
        if self._client is None:
            self.connect()
        return self._client

    @property
    def sftp(self):
        if self._sftp is None:
            self._sftp = self.client.open_sftp()
        return self._sftp

    def close(self) -> None:
        for obj in (self._sftp, self._client):
            if obj is not None:
                with contextlib.suppress(Exception):
                    obj.close()
        self._sftp = self._client = None

    # ---- commands ---------------------------------------------------------------------------
    def run(self, argv: list[str] | str, *, check: bool = True, timeout: float = 30.0,
            input: str | None = None) -> subprocess.CompletedProcess:
        """Run a command on the host to completion (a list is quoted; a str is a shell line)."""
        cmd = argv if isinstance(argv, str) else " ".join(shlex.quote(str(a)) for a in argv)
        chan = self.client.get_transport().open_session(timeout=timeout)
        chan.settimeout(timeout)
        chan.exec_command(cmd)
        if input is not None:
            chan.sendall(input.encode())
        chan.shutdown_write()
        out, err = bytearray(), bytearray()
        deadline = time.monotonic() + timeout
        while True:
            while chan.recv_ready():
                out += chan.recv(65536)
            while chan.recv_stderr_ready():
                err += chan.recv_stderr(65536)
            if chan.exit_status_ready() and not chan.recv_ready() and not chan.recv_stderr_ready():
                break
            if time.monotonic() > deadline:
                chan.close()
                raise LabError(f"{self.role} ({self.address}): `{redact_text(cmd)[:200]}` timed "
                               f"out after {timeout:.0f} s")
            time.sleep(0.005)
        rc = chan.recv_exit_status()
        chan.close()
        cp = subprocess.CompletedProcess(cmd, rc, out.decode(errors="replace"),
                                         err.decode(errors="replace"))
        if check and rc != 0:
            raise LabError(f"{self.role} ({self.address}): `{redact_text(cmd)[:200]}` failed "
                           f"({rc}): {redact_text((cp.stderr or cp.stdout).strip()[-2000:])}")
        return cp

    def python_snippet(self, code: str, *args: str, timeout: float = 30.0) -> str:
        """Run a stdlib-only snippet with the host's python3; its stdout."""
        return self.run([HOST_PYTHON, "-c", code, *map(str, args)], timeout=timeout).stdout

    def unix_listening(self, path: str | Path) -> bool:
        """True once something accepts connections on the unix socket ``path`` on the host."""
        return self.run([HOST_PYTHON, "-c", "import socket,sys; s=socket.socket(socket.AF_UNIX);"
                         " s.settimeout(1); s.connect(sys.argv[1])", str(path)],
                        check=False).returncode == 0

    def connect_unix(self, path: str | Path, timeout_s: float = 10.0):
        """A socket-like channel joined to the unix socket ``path`` on the host."""
        chan = self.client.get_transport().open_session(timeout=timeout_s)
        chan.settimeout(timeout_s)
        chan.exec_command(" ".join(shlex.quote(a) for a in
                                   [HOST_PYTHON, "-c", hostside.RELAY, str(path)]))
        return chan

    # ---- files ------------------------------------------------------------------------------
    def listen_here(self) -> "ForwardedListener":
        """A TCP port on the host's loopback whose connections arrive here (SSH remote port
        forwarding, like ``ssh -R``): a process on the host connects to 127.0.0.1:<port> and
        this side accepts a socket-like channel (recv, sendall, shutdown, close). For control
        connections whose latency is not measured (e.g. a benchmark installing flows)."""
        return ForwardedListener(self.client.get_transport(), self.role)

    def put(self, local: Path, remote: Path) -> None:
        self.sftp.put(str(local), str(remote))

    def get(self, remote: Path, local: Path) -> None:
        Path(local).parent.mkdir(parents=True, exist_ok=True)
        self.sftp.get(str(remote), str(local))

    def exists(self, path: str | Path) -> bool:
        try:
            self.sftp.stat(str(path))
            return True
        except OSError:
            return False

    def write_text(self, path: str | Path, text: str) -> None:
        with self.sftp.open(str(path), "w") as f:
            f.write(text)

    def sock_path(self, name: str) -> Path:
        return self.state_dir / name

    def build_path(self, rel: str) -> Path:
        """A file of the host's own build (``workdir/build``)."""
        return self.workdir / "build" / rel

    # ---- processes --------------------------------------------------------------------------
    def start(self, name: str, argv: list[str], *, env: dict | None = None,
              cwd: str | Path | None = None, netns: str | None = None, ready=None,
              ready_timeout_s: float = 30.0, log_name: str | None = None,
              stop_signal: str = "TERM", **_ignored) -> RemoteProcess:
        """Start ``argv`` on the host in its own session; wait until ``ready()`` (a check run
        here, e.g. over ``self.run``) is true. Raises ProcessStartError with the log's tail."""
        check_name(name, "process name")
        if log_name is not None:
            check_name(log_name, "log name")
        if any(p.name == name and p.alive() for p in self.procs):
            raise ValueError(f"a process named {name!r} is already running on {self.role}")
        full = (["ip", "netns", "exec", netns] if netns else []) + [str(a) for a in argv]
        logs = self.state_dir / "logs"
        remote_log = str(logs / f"{log_name or name}.log")
        rc_file = str(self.state_dir / f"{name}.rc")
        envs = [f"{k}={v}" for k, v in (env or {}).items()]
        inner = 'trap "" HUP; "$@"; echo $? > ' + shlex.quote(rc_file)
        cmd = (f"mkdir -p {shlex.quote(str(logs))} && rm -f {shlex.quote(rc_file)} && "
               f"cd {shlex.quote(str(cwd or self.workdir))} || exit 97; "
               f"setsid env {' '.join(shlex.quote(e) for e in envs)} sh -c {shlex.quote(inner)} sh "
               f"{' '.join(shlex.quote(a) for a in full)} > {shlex.quote(remote_log)} 2>&1 "
               f"< /dev/null & pid=$!; "
               f"st=$(sed 's/.*) //' /proc/$pid/stat | cut -d' ' -f20); "
               f"printf '{{\"name\": %s, \"pid\": %s, \"start_time\": %s}}\\n' "
               f"{shlex.quote(json.dumps(name))} \"$pid\" \"${{st:-null}}\" "
               f">> {shlex.quote(str(self.state_dir / 'pids.jsonl'))}; echo $pid $st")
        out = self.run(cmd).stdout.split()
        local_log = Path(self.lab.log_dir) / f"{log_name or name}.log"
        proc = RemoteProcess(name, self, int(out[0]), int(out[1]) if len(out) > 1 else None,
                             remote_log, local_log, full)
        self.procs.append(proc)
        if ready is not None:
            self._await_ready(proc, ready, ready_timeout_s)
        return proc

    def _await_ready(self, proc: RemoteProcess, ready, timeout_s: float) -> None:
        await_ready(proc, ready, timeout_s, exit_code=lambda: self.exit_code(proc),
                    stop=lambda: self.stop(proc), where=f" on {self.role}", max_delay_s=0.5)

    def alive(self, proc: RemoteProcess) -> bool:
        st = self.run(["sh", "-c", f"sed 's/.*) //' /proc/{proc.pid}/stat 2>/dev/null | "
                                   f"cut -d' ' -f1,20"], check=False).stdout.split()
        return len(st) == 2 and st[0] not in ("Z", "X") and \
            (proc.start_time is None or int(st[1]) == proc.start_time)

    def exit_code(self, proc: RemoteProcess) -> int | None:
        out = self.run(["cat", str(self.state_dir / f"{proc.name}.rc")], check=False).stdout
        return int(out) if out.strip().lstrip("-").isdigit() else None

    def fetch_log(self, proc: RemoteProcess) -> None:
        try:
            self.get(proc.remote_log, proc.local_log)
        except OSError:
            pass

    def stop(self, proc: RemoteProcess | str, timeout_s: float = 5.0) -> int | None:
        """TERM to the process group, KILL after ``timeout_s``; the log copied home."""
        if isinstance(proc, str):
            matches = [p for p in self.procs if p.name == proc]
            if not matches:
                return None
            proc = matches[-1]
        with contextlib.suppress(Exception):
            if self.alive(proc):
                self.run(["sh", "-c", stop_script(proc.pid, proc.start_time, timeout_s)],
                         timeout=timeout_s + 10)
        with contextlib.suppress(Exception):
            self.fetch_log(proc)
        if proc in self.procs:
            self.procs.remove(proc)
        with contextlib.suppress(Exception):
            return self.exit_code(proc)
        return None

    def stop_all(self) -> None:
        for p in reversed(list(self.procs)):
            try:
                self.stop(p)
            except Exception as e:  # keep stopping the others
                self.lab.warnings.append(f"stopping {p.name} on {self.role}: {e}")

    # ---- DPDK -------------------------------------------------------------------------------
    def cores(self) -> list[int]:
        return list(self.facts.get("cpus") or [0])

    def next_core(self) -> int:
        if self._core_cycle is None:
            import itertools
            self._core_cycle = itertools.cycle(self.cores())
        return next(self._core_cycle)

    def file_prefix(self, name: str) -> str:
        return f"ofb{self.lab.short}{check_name(name, 'DPDK file prefix')}"

    def eal_args(self, name: str, *, mem_mb: int = 256, lcores: str | None = None,
                 in_memory: bool = False, no_pci: bool = True) -> list[str]:
        """EAL arguments for one DPDK process of this run on this host (see LocalLab)."""
        args = ["-l", lcores if lcores is not None else str(self.next_core()),
                "--file-prefix", self.file_prefix(name), "--log-level", "lib.eal:error"]
        if no_pci:
            args.append("--no-pci")
        huge_mb = 2 * int(self.facts.get("free_hugepages", 0))
        if not (self.facts.get("huge_mounted") and huge_mb >= mem_mb):
            return args + ["--no-huge", "-m", str(mem_mb)]
        if in_memory:
            return args + ["-m", str(mem_mb), "--in-memory", "--single-file-segments"]
        return args + ["-m", str(mem_mb), "--huge-dir", "/dev/hugepages-ofbench", "--huge-unlink"]

    # ---- lifecycle --------------------------------------------------------------------------
    def prepare(self) -> None:
        """Read the host's facts, remove this machine's dead runs, create this run's folder."""
        self.facts = json.loads(self.python_snippet(hostside.FACTS))
        stale = json.loads(self.python_snippet(hostside.STALE, self.lab.state_root, self.role))
        me = controller_id()
        for run in stale:
            if run.get("run_id") == self.lab.run_id:
                continue
            if run.get("unreadable"):
                self.lab.warnings.append(f"{self.role}: run folder {run['dir']}: owner.json "
                                         f"unreadable; left alone")
                continue
            if run.get("controller") not in (None, me):
                self.lab.warnings.append(f"{self.role}: run folder {run['dir']} belongs to "
                                         f"{run.get('controller')}; left alone")
                continue
            if run.get("pid") and proc_start_time(run["pid"]) == run.get("start_time"):
                continue  # a live run of this machine (another pytest here)
            short = Path(run["dir"]).parent.name[-4:]
            done = json.loads(self.python_snippet(hostside.CLEAN, run["dir"], short))
            if done:
                self.lab.warnings.append(f"{self.role}: stale run {Path(run['dir']).parent.name}"
                                         f": removed {', '.join(done)}")
        self.run(["mkdir", "-p", str(self.state_dir / "logs")])
        owner = self.state_dir / "owner.json"   # atomically: a dead run's reader sees it whole
        self.write_text(f"{owner}.tmp", json.dumps(
            {"controller": me, "pid": os.getpid(), "start_time": proc_start_time(os.getpid()),
             "run_id": self.lab.run_id}))
        self.sftp.posix_rename(f"{owner}.tmp", str(owner))

    def cleanup(self) -> None:
        """Everything of this run on the host: processes, DPDK folders, hugepage files, state."""
        self.stop_all()
        with contextlib.suppress(Exception):
            self.python_snippet(hostside.CLEAN, self.state_dir, self.lab.short)

    # ---- deployment -------------------------------------------------------------------------
    def ssh_command(self) -> list[str]:
        """The system ssh with this host's key, port and host-key policy (for rsync)."""
        cmd = ["ssh", "-p", str(self.spec.get("ssh_port", 22)), "-o", "BatchMode=yes",
               "-o", "StrictHostKeyChecking=yes", "-o", "ConnectTimeout=10"]
        if self.spec.get("key_file"):
            cmd += ["-i", str(Path(self.spec["key_file"]).expanduser()), "-o",
                    "IdentitiesOnly=yes"]
        if self.lab.known_hosts:
            cmd += ["-o", f"UserKnownHostsFile={self.lab.known_hosts}"]
        return cmd

    def claim_workdir(self) -> None:
        """Make sure ``workdir`` is ofbench's before anything is deleted there: carries the
        marker, or is missing / empty and gets it now; else LabError naming the profile key."""
        wd = str(self.workdir)
        state = json.loads(self.python_snippet(hostside.WORKDIR, wd, WORKDIR_MARKER))
        adopt = (getattr(self.lab, "emulation", None) is not None
                 and wd.startswith(EMULATED_WORKDIR_CACHE))
        action = workdir_action(state, self.key("workdir"), wd, adopt_tree=adopt)
        if action in ("mark", "adopt"):
            text = (f"ofbench workdir: the ofbench tree is synced here with rsync --delete "
                    f"(drivers/lab/remote.py); marked by {controller_id()} at "
                    f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}\n")
            cp = self.run([HOST_PYTHON, "-c", hostside.WORKDIR, wd, WORKDIR_MARKER, action,
                           text], check=False)
            if cp.returncode != 0:
                raise LabError(f"{self.key('workdir')}: could not mark {wd} as ofbench's: "
                               f"{(cp.stderr or cp.stdout).strip()[-500:]}")

    def sync_tree(self, repo: Path) -> None:
        """rsync the ofbench tree and its venv to ``workdir`` (only what changed moves).

        The tree goes by content (``--checksum``) without its modification times: a file whose
        content changed lands with the time of the copy, so the host's ninja rebuilds what
        depends on it even when this checkout's file is older than the host's last build (a
        tree synced from another checkout or commit would otherwise keep a stale binary)."""
        user = self.spec.get("user", "root")
        dest = f"{user}@{self.address}:{self.workdir}/"
        self.claim_workdir()
        ssh = " ".join(shlex.quote(a) for a in self.ssh_command())
        excludes = sum((["--exclude", e] for e in SYNC_EXCLUDES), [])
        for src, dst in ((f"{repo}/", dest), (f"{Path(repo, '.venv').resolve()}/",
                                              f"{dest}.venv/")):
            venv = dst.endswith(".venv/")
            cp = subprocess.run(["rsync", "-a", "--delete",
                                 *([] if venv else ["--no-times", "--checksum", *excludes]),
                                 "--exclude", "__pycache__", "-e", ssh, src, dst],
                                capture_output=True, text=True, timeout=600)
            if cp.returncode != 0:
                raise LabError(f"{self.key('workdir')}: rsync of {src} to {dst} failed "
                               f"({cp.returncode}): {cp.stderr.strip()[-1500:]}")

    def build(self, targets: list[str], timeout_s: float = 900.0) -> None:
        """Build ``targets`` in ``workdir/build`` on the host, for the host's CPU."""
        wd = shlex.quote(str(self.workdir))
        self.run(f"cd {wd} && {{ test -f build/build.ninja || meson setup build "
                 f"--buildtype=release >/dev/null; }} && ninja -C build "
                 f"{' '.join(shlex.quote(t) for t in targets)}", timeout=timeout_s)


class RemoteLab:
    kind = "remote"

    def __init__(self, profile, run_id: str, run_dir: Path, connect_timeout_s: float = 5.0,
                 deploy: bool = True, progress=None):
        self.profile, self.run_id, self.run_dir = profile, run_id, Path(run_dir)
        self.short = run_id[-4:]
        lab = profile.data["lab"]
        self.where = profile.path.name
        self.state_root = lab.get("state_dir", "/run/ofbench")
        self.known_hosts = lab.get("known_hosts")
        self.warnings: list[str] = []
        self.log_dir = self.run_dir / "logs"
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self._progress = progress or (lambda m: None)
        self.emulation = None
        self.dut_build = "none"   # sha256 of the switch host's own ofswitch, once deployed
        self.trex_runtime: Path | None = None   # TRex's runtime on the generator host
        self.hosts: dict[str, RemoteHost] = {}
        self.testbed_lock = None   # drivers/lab/testbed_lock.py, taken once the hosts are up
        try:
            if lab.get("emulated"):
                from drivers.lab.emulated import EmulatedLab
                self._progress("bringing up the emulated lab (a namespace with sshd per host)")
                self.emulation = EmulatedLab(profile, run_id).up()
                # the emulated lab's own key and host keys (in its run's state folder), never
                # files the profile names
                self.known_hosts = str(self.emulation.known_hosts)
            for role, spec in (lab.get("hosts") or {}).items():
                if self.emulation is not None:
                    spec = {**spec, "key_file": str(self.emulation.key_file)}
                h = RemoteHost(self, role, spec)
                h.connect(connect_timeout_s)
                self.hosts[role] = h
            for h in self.hosts.values():
                h.prepare()
            self._check_profile_against_hosts()
            self._lock_testbed()
            if deploy:
                self.deploy()
        except BaseException:
            self.close()
            raise

    # ---- the Lab protocol -------------------------------------------------------------------
    def host(self, role: str) -> RemoteHost:
        if role not in self.hosts:
            raise LabError(f"{self.where}: lab.hosts: no host with role {role!r} "
                           f"(known: {', '.join(self.hosts)})")
        return self.hosts[role]

    def role_of(self, section: str) -> str:
        """The host role that runs ``section`` (switch, generator, controller)."""
        return self.profile.data.get(section, {}).get("host") or section

    @contextlib.contextmanager
    def test_logs(self, folder: Path):
        old = self.log_dir
        self.log_dir = Path(folder)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        try:
            yield
        finally:
            self.log_dir = old

    # ---- checks and deployment ----------------------------------------------------------------
    def _check_profile_against_hosts(self) -> None:
        data = self.profile.data
        for section in ("switch", "generator"):
            sec = data.get(section) or {}
            role = self.role_of(section)
            if role not in self.hosts:
                if section == "switch" or sec.get("kind") == "softgen":
                    raise LabError(f"{self.where}: {section}.host: {role!r} is not a host in "
                                   f"lab.hosts (known: {', '.join(self.hosts)})")
                continue
            h = self.hosts[role]
            if sec.get("cores"):
                want = parse_cores(sec["cores"])
                missing = sorted(set(want) - set(h.cores()))
                if missing:
                    raise LabError(f"{self.where}: {section}.cores: {sec['cores']!r} names "
                                   f"core(s) {missing} that {role} ({h.address}) does not have "
                                   f"(it has {h.cores()})")
            for pname, port in (sec.get("ports") or {}).items():
                if port.get("pci") and not h.exists(f"/sys/bus/pci/devices/{port['pci']}"):
                    raise LabError(f"{self.where}: {section}.ports.{pname}.pci: "
                                   f"{port['pci']} is not a PCI device on {role} ({h.address})")
        conf = data.get("conformance")
        if conf:
            ends = (("tester", conf["tester_host"]), ("switch", self.role_of("switch")))
            for i, link in enumerate(conf["links"]):
                for end, role in ends:
                    h = self.host(role)
                    if not h.exists(f"/sys/class/net/{link[end]}"):
                        raise LabError(f"{self.where}: conformance.links[{i}].{end}: "
                                       f"{link[end]!r} is not a network interface on {role} "
                                       f"({h.address})")

    def _lock_testbed(self) -> None:
        from drivers.lab.testbed_lock import TestbedLock
        host = self.hosts.get(self.role_of("switch")) or next(iter(self.hosts.values()), None)
        if host is None:
            return
        lock = TestbedLock(host, self.state_root, self.run_id, controller_id(), self.where)
        lock.take()
        self.testbed_lock = lock
        self.warnings += lock.notes

    def deploy(self) -> None:
        from paths import REPO
        for role, h in self.hosts.items():
            self._progress(f"syncing the ofbench tree to {role}:{h.workdir}")
            h.sync_tree(REPO)
            # what the host needs to build and run its role (apt packages, hugepages)
            h.run(f"cd {shlex.quote(str(h.workdir))} && bash scripts/host_setup.sh",
                  timeout=1800)
            h.facts = json.loads(h.python_snippet(hostside.FACTS))  # hugepages may be new
            gen_kind = self.profile.generator["kind"]
            targets = [t for sec, t in (("switch", ROLE_TARGETS["switch"]),
                                        ("generator", ROLE_TARGETS.get(gen_kind, [])))
                       if self.role_of(sec) == role]
            targets = sum(targets, [])
            if targets:
                self._progress(f"building {', '.join(targets)} on {role}")
                h.build(targets)
        gen = self.profile.generator
        if gen["kind"] == "trex" and self.role_of("generator") in self.hosts:
            self.trex_runtime = self._deploy_trex(self.hosts[self.role_of("generator")])
        sw = self.hosts.get(self.role_of("switch"))
        if sw is not None:
            out = sw.run(["sha256sum", str(sw.build_path("dut/switch/ofswitch"))],
                         check=False).stdout.split()
            self.dut_build = f"sha256:{out[0][:16]}" if out else "none"

    def _deploy_trex(self, h: "RemoteHost") -> Path:
        """TRex v3.08 built on the generator host for its CPU (scripts/build_trex.sh: cached
        per source and CPU under /var/cache/ofbench/trex, ~30 CPU-minutes the first time)."""
        wd = shlex.quote(str(h.workdir))
        env = ""
        src = local_trex_source()
        if src is not None:
            # The host builds from the same archive (same source hash, so the same cache key
            # when it is this box); without one here, the host's script clones the pinned tag.
            dest = h.workdir.parent / "trex-src" / src.name
            h.run(["mkdir", "-p", str(dest.parent)])
            try:
                same = h.sftp.stat(str(dest)).st_size == src.stat().st_size
            except OSError:
                same = False
            if not same:
                self._progress(f"copying the TRex source ({src.name}) to {h.role}")
                h.put(src, dest)
            env = f"OFBENCH_TREX_SRC={shlex.quote(str(dest))} "
        script = f"cd {wd} && {env}bash scripts/build_trex.sh"
        located = h.run(f"{script} --locate", check=False)
        if located.returncode != 0:
            self._progress(f"building TRex v3.08 on {h.role} (first time on this host and CPU: "
                           f"~30 CPU-minutes; cached after)")
            h.run(script, timeout=4 * 3600)
            located = h.run(f"{script} --locate", check=False)
        if located.returncode != 0 or not located.stdout.strip():
            raise LabError(f"{self.where}: generator.kind: trex, but TRex could not be built on "
                           f"{h.role} ({h.address}): {(located.stderr or located.stdout).strip()}")
        return Path(located.stdout.strip().splitlines()[-1])

    def close(self) -> None:
        """Stop every process on every host, remove the run's state there; idempotent."""
        if self.testbed_lock is not None:
            self.testbed_lock.release()
            self.testbed_lock = None
        for h in list(self.hosts.values()):
            try:
                h.cleanup()
            except Exception as e:
                self.warnings.append(f"cleaning {h.role}: {e}")
            h.close()
        self.hosts.clear()
        if self.emulation is not None:
            self.emulation.down()
            self.emulation = None
