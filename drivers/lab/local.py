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

import itertools
import json
import os
import shutil
import socket
import subprocess
from pathlib import Path

from drivers.lab.cleanup import HUGE_DIR, STATE_ROOT, delete_netns, remove_hugepage_files
from drivers.supervisor import Supervisor, proc_start_time


class LabError(RuntimeError):
    """A lab step failed; the message names the command and what it printed."""


def run(argv: list[str], *, check: bool = True, timeout: float = 30.0,
        input: str | None = None) -> subprocess.CompletedProcess:
    cp = subprocess.run([str(a) for a in argv], capture_output=True, text=True,
                        timeout=timeout, input=input)
    if check and cp.returncode != 0:
        raise LabError(f"`{' '.join(map(str, argv))}` failed ({cp.returncode}): "
                       f"{(cp.stderr or cp.stdout).strip()}")
    return cp


def free_hugepage_mb() -> int:
    try:
        return 2 * int(Path("/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages")
                       .read_text())
    except OSError:
        return 0


def hugepages_usable() -> bool:
    try:
        free = int(Path("/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages").read_text())
    except OSError:
        return False
    return free > 0 and os.path.ismount(HUGE_DIR)


class LocalLab:
    kind = "local"

    def __init__(self, profile, run_id: str, run_dir: Path):
        self.profile = profile
        self.run_id = run_id
        self.short = run_id[-4:]
        self.run_dir = Path(run_dir)
        self.state_dir = STATE_ROOT / run_id
        self.state_dir.mkdir(parents=True, exist_ok=True)
        (self.state_dir / "owner.json").write_text(json.dumps(
            {"pid": os.getpid(), "start_time": proc_start_time(os.getpid()), "run_id": run_id}))
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
        return f"ofb{self.short}{name}"

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

    # ---- misc -------------------------------------------------------------------------------
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
        shutil.rmtree(self.state_dir, ignore_errors=True)
