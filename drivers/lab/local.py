"""The local software lab: the topology a profile describes, built on this box with run-unique
names, plus the supervisor that runs every process of the run.

Names: a run id ``run-YYYYmmddTHHMMSSZ-<4 hex>``; its last 4 hex digits (``short``) make every
name unique and recognisable: namespaces ``ofb-<short>-<tag>``, interfaces ``o<short><tag>``
(<= 15 chars, the kernel's limit), DPDK file prefixes ``ofb<short><name>``. State (sockets, OVS
dbs, pid records) lives in ``/run/ofbench/<run-id>/`` so :mod:`drivers.lab.cleanup` can remove
the leftovers of a run killed with SIGKILL.

Concurrency: one LocalLab per pytest session, used from the session's thread only.
"""
from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import socket
import subprocess
from pathlib import Path

from drivers.lab.base import LabError, check_name  # LabError re-exported: callers import it here
from drivers.lab.base import free_hugepage_mb, hugepages_usable
from drivers.lab.cleanup import (HUGE_DIR, STATE_ROOT, delete_netns, remove_dpdk_runtime,
                                 check_run_id, remove_hugepage_files, write_owner)
from drivers.supervisor import Supervisor, proc_start_time
from redact import redact_command, redact_text


def run(argv: list[str], *, check: bool = True, timeout: float = 30.0,
        input: str | None = None) -> subprocess.CompletedProcess:
    cp = subprocess.run([str(a) for a in argv], capture_output=True, text=True,
                        timeout=timeout, input=input)
    if check and cp.returncode != 0:
        raise LabError(f"`{redact_command(argv)}` failed ({cp.returncode}): "
                       f"{redact_text((cp.stderr or cp.stdout).strip())}")
    return cp


class LocalListener:
    """A TCP listener on this box's loopback: ``address``, ``port``, ``accept(timeout_s)``."""
    address = "127.0.0.1"

    def __init__(self):
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((self.address, 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]

    def accept(self, timeout_s: float = 60.0) -> socket.socket:
        self.sock.settimeout(timeout_s)
        try:
            conn, _ = self.sock.accept()
        except socket.timeout:
            raise TimeoutError(f"nothing connected to 127.0.0.1:{self.port} in "
                               f"{timeout_s:.0f} s") from None
        conn.settimeout(None)
        return conn

    def close(self) -> None:
        self.sock.close()


class LocalLab:
    kind = "local"

    def __init__(self, profile, run_id: str, run_dir: Path):
        self.profile = profile
        self.run_id = check_run_id(run_id)
        self.short = run_id[-4:]
        self.run_dir = Path(run_dir)
        self.state_dir = STATE_ROOT / run_id
        self.state_dir.mkdir(parents=True, exist_ok=True)
        write_owner(self.state_dir, {"pid": os.getpid(),
                                     "start_time": proc_start_time(os.getpid()), "run_id": run_id})
        self.supervisor = Supervisor(self.state_dir, self.run_dir / "logs")
        self.namespaces: list[str] = []
        self.use_hugepages = "hugepages" in profile.features and hugepages_usable()
        self.warnings: list[str] = []
        if "hugepages" in profile.features and not self.use_hugepages:
            self.warnings.append("hugepages unusable (none free or no hugetlbfs mount at "
                                 f"{HUGE_DIR}); DPDK processes run with --no-huge (slower)")
        self._core_cycle = itertools.cycle(range(os.cpu_count() or 1))

    # ---- names ------------------------------------------------------------------------------
    def ns_name(self, tag: str) -> str:
        return f"ofb-{self.short}-{tag}"

    def ifname(self, tag: str) -> str:
        name = f"o{self.short}{tag}"
        if len(name) > 15:
            raise LabError(f"interface name {name!r} is longer than 15 characters; shorten {tag!r}")
        return name

    def file_prefix(self, name: str) -> str:
        return f"ofb{self.short}{check_name(name, 'DPDK file prefix')}"

    def sock_path(self, name: str) -> Path:
        return self.state_dir / name

    # ---- topology ---------------------------------------------------------------------------
    def add_netns(self, tag: str) -> str:
        ns = self.ns_name(tag)
        # Record first: if we die right after `ip netns add`, cleanup still finds it.
        with open(self.state_dir / "netns.list", "a") as f:
            f.write(ns + "\n")
        run(["ip", "netns", "add", ns])
        self.namespaces.append(ns)
        run(["ip", "-n", ns, "link", "set", "lo", "up"])
        return ns

    def del_netns(self, ns: str) -> None:
        delete_netns(ns)
        if ns in self.namespaces:
            self.namespaces.remove(ns)

    def add_veth(self, ns_a: str, if_a: str, ns_b: str, if_b: str, *, mtu: int | None = None,
                 up: bool = True) -> None:
        """A veth pair with one end in each namespace (both ends are in our namespaces)."""
        run(["ip", "link", "add", if_a, "netns", ns_a, "type", "veth", "peer", "name", if_b,
             "netns", ns_b])
        for ns, ifn in ((ns_a, if_a), (ns_b, if_b)):
            if mtu:
                run(["ip", "-n", ns, "link", "set", ifn, "mtu", str(mtu)])
            # Offloads make af_packet see oversized/unchecksummed frames; switches want real ones.
            run(["ip", "netns", "exec", ns, "ethtool", "-K", ifn, "tx", "off", "rx", "off",
                 "tso", "off", "gso", "off", "gro", "off"], check=False)
            # VLAN tags must stay in the frame as sent (802.1ad stays 802.1ad).
            run(["ip", "netns", "exec", ns, "ethtool", "-K", ifn, "rxvlan", "off", "txvlan",
                 "off", "rx-vlan-stag-hw-parse", "off", "tx-vlan-stag-hw-insert", "off"],
                check=False)
            if up:
                run(["ip", "-n", ns, "link", "set", ifn, "up"])

    def add_host(self, tag: str, ifname: str, ip_cidr: str, mac: str | None = None) -> None:
        """Configure an address (and MAC) on an interface in namespace ``tag``'s ns."""
        ns = self.ns_name(tag)
        if mac:
            run(["ip", "-n", ns, "link", "set", ifname, "address", mac])
        run(["ip", "-n", ns, "addr", "add", ip_cidr, "dev", ifname])
        run(["ip", "-n", ns, "link", "set", ifname, "up"])

    def netns_exec(self, ns: str, argv: list[str], *, check: bool = True,
                   timeout: float = 30.0) -> subprocess.CompletedProcess:
        return run(["ip", "netns", "exec", ns, *argv], check=check, timeout=timeout)

    # ---- DPDK -------------------------------------------------------------------------------
    def next_core(self) -> int:
        return next(self._core_cycle)

    def eal_args(self, name: str, *, mem_mb: int = 256, lcores: str | None = None,
                 in_memory: bool = False, no_pci: bool = True) -> list[str]:
        """EAL arguments for one DPDK process of this run: unique file prefix, hugepages from
        our hugetlbfs mount (unlinked at once so nothing leaks), or --no-huge if unusable.
        ``in_memory`` is for virtio_user clients, which cannot map unlinked hugepages."""
        args = ["-l", lcores if lcores is not None else str(self.next_core()),
                "--file-prefix", self.file_prefix(name), "--log-level", "lib.eal:error"]
        if no_pci:
            args.append("--no-pci")
        if not self.use_hugepages:
            return args + ["--no-huge", "-m", str(mem_mb)]
        if free_hugepage_mb() < mem_mb:
            # Other DPDK processes on the box hold the pages: slower beats failing to start.
            self.warnings.append(f"{name}: only {free_hugepage_mb()} MB of hugepages free, "
                                 f"{mem_mb} MB wanted; running it with --no-huge")
            return args + ["--no-huge", "-m", str(mem_mb)]
        if in_memory:
            return args + ["-m", str(mem_mb), "--in-memory", "--single-file-segments"]
        return args + ["-m", str(mem_mb), "--huge-dir", str(HUGE_DIR), "--huge-unlink"]

    # ---- the Lab protocol ---------------------------------------------------------------------
    def host(self, role: str) -> "LocalLab":
        """Every role of a local lab is this box (the LocalLab serves as its own host)."""
        return self

    role = "local"
    address = "127.0.0.1"

    @property
    def workdir(self) -> Path:
        from paths import REPO
        return REPO

    def run(self, argv: list[str], *, check: bool = True, timeout: float = 30.0,
            input: str | None = None) -> subprocess.CompletedProcess:
        return run(argv, check=check, timeout=timeout, input=input)

    @property
    def python(self) -> str:
        import sys
        return sys.executable

    @staticmethod
    def build_path(rel: str) -> Path:
        """A file of the meson build (OFBENCH_BUILD_DIR or <repo>/build) on this box."""
        from paths import build_dir
        return build_dir() / rel

    @staticmethod
    def connect_unix(path: str | Path, timeout_s: float = 10.0) -> socket.socket:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(timeout_s)
        try:
            s.connect(str(path))
        except OSError:
            s.close()
            raise
        return s

    @classmethod
    def unix_listening(cls, path: str | Path) -> bool:
        try:
            cls.connect_unix(path, 0.5).close()
            return True
        except OSError:
            return False

    def write_text(self, path: str | Path, text: str) -> None:
        Path(path).write_text(text)

    def exists(self, path: str | Path) -> bool:
        return Path(path).exists()

    def start(self, name: str, argv: list[str], **kw):
        return self.supervisor.start(name, argv, **kw)

    def stop(self, proc, timeout_s: float = 5.0):
        return self.supervisor.stop(proc, timeout_s)

    def put(self, local: Path, remote: Path) -> None:
        if Path(local).resolve() != Path(remote).resolve():
            shutil.copy2(local, remote)

    get = put

    @contextlib.contextmanager
    def test_logs(self, folder: Path):
        """Processes started inside log into ``folder`` (a test's result folder)."""
        old = self.supervisor.log_dir
        self.supervisor.log_dir = Path(folder)
        try:
            yield
        finally:
            self.supervisor.log_dir = old

    # ---- misc -------------------------------------------------------------------------------
    @staticmethod
    def listen_here() -> "LocalListener":
        """A TCP listener on 127.0.0.1 (RemoteHost.listen_here's local twin)."""
        return LocalListener()

    @staticmethod
    def free_tcp_port(host: str = "127.0.0.1") -> int:
        with socket.socket() as s:
            s.bind((host, 0))
            return s.getsockname()[1]

    def close(self) -> None:
        """Stop every process, delete every namespace and file of this run. Idempotent."""
        self.supervisor.stop_all()
        for ns in list(self.namespaces):
            self.del_netns(ns)
        remove_hugepage_files(self.short)
        remove_dpdk_runtime(self.short)
        shutil.rmtree(self.state_dir, ignore_errors=True)
