"""An emulated lab of separate hosts on this box (profile ``lab.emulated: true``, e.g.
dut/profiles/lab-emu.yaml), reached only over SSH like a real one.

What the profile says is built, nothing more:

  * each host of ``lab.hosts`` is a network namespace ``ofb-<short>-<role>`` with its address on
    ``eth0`` and its own sshd (Debian's openssh-server, a config of our own: key login only,
    the sftp subsystem, its host key generated per run);
  * the hosts share one Ethernet segment: a bridge inside the namespace ``ofb-<short>-net``;
    this machine (the controlling side) joins it through one veth with the segment's ``.1``
    address, so the only route it gains is to the lab's own /24 inside our namespaces;
  * the user key and the known_hosts file are generated per run inside the run's own state
    folder (``<state root>/<run-id>/id_ed25519``, ``.../known_hosts``), which the SSH lab then
    uses (``EmulatedLab.key_file`` / ``.known_hosts``). A ``key_file`` or ``lab.known_hosts``
    the profile names is never written nor deleted: a profile copied from a hardware lab keeps
    that lab's key (``~/.ssh/ofbench_lab``) intact. The folders of the links' unix sockets are
    created, and only sockets in them are ever removed;
  * ``conformance.links`` are veth pairs from the tester host's namespace to the switch
    host's (the three cables os-ken's switch test tool needs).

The hosts share this box's file system and CPUs: links between them are memif / vhost-user
sockets under the paths the profile gives (a real lab has cables there instead).

Only one emulated lab of a segment runs at a time (a lock file ``emulated-<segment>.lock`` in
the state root, beside the run folders); a run killed
with SIGKILL is removed by the next run's cleanup (its namespaces and sshd processes are
recorded in ``/run/ofbench/<run-id>/``, like every local run's).
"""
from __future__ import annotations

import contextlib
import fcntl
import ipaddress
import os
import re
import shutil
import socket
import stat
import subprocess
from pathlib import Path

from drivers.lab.base import LabError
from drivers.lab.cleanup import (STATE_ROOT, check_run_id, delete_netns, remove_dpdk_runtime,
                                 remove_hugepage_files, write_owner)
from drivers.supervisor import Supervisor, proc_start_time

SSHD = "/usr/sbin/sshd"


def _run(argv, check=True, timeout=30.0):
    cp = subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=timeout)
    if check and cp.returncode != 0:
        raise LabError(f"emulated lab: `{' '.join(map(str, argv))}` failed ({cp.returncode}): "
                       f"{(cp.stderr or cp.stdout).strip()}")
    return cp


def sshd_config(address: str, port: int, host_key: Path, authorized: Path, pid_file: Path) -> str:
    """The sshd_config of one emulated host (pure)."""
    return "\n".join([
        f"Port {port}", f"ListenAddress {address}", f"HostKey {host_key}",
        f"AuthorizedKeysFile {authorized}", f"PidFile {pid_file}", "StrictModes no",
        "PermitRootLogin prohibit-password", "PubkeyAuthentication yes",
        "PasswordAuthentication no", "KbdInteractiveAuthentication no", "UsePAM no",
        "Subsystem sftp internal-sftp", "PrintMotd no", "UseDNS no", "LogLevel INFO",
        "MaxSessions 64", "MaxStartups 64:30:128", ""])


def clean_shell_argv(argv: list[str], state_dir: Path, home: Path | None = None) -> list[str]:
    """``argv`` in a private mount namespace where the user's shell start-up files read as
    empty, so an emulated host's sessions start clean, as on a fresh lab host (pure).

    sshd runs every command through the user's login shell, and Debian's bash reads
    ~/.bashrc for commands from sshd: this box's root runs ``pyenv init`` there (350 ms a
    command), and a shell killed during its ``pyenv rehash`` leaves a lock that makes every
    later shell wait 60 s. The mount is private (unshare's default), the box's own files and
    shells are untouched."""
    home = home or Path(os.path.expanduser("~"))
    empty = state_dir / "empty-rc"
    binds = " && ".join(f"{{ [ ! -e {home / rc} ] || mount --bind {empty} {home / rc}; }}"
                        for rc in (".bashrc", ".profile", ".bash_profile"))
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c",
            f": > {empty} && {binds} && exec \"$@\"", "sh", *[str(a) for a in argv]]


def segment_of(hosts: dict, where: str) -> ipaddress.IPv4Network:
    """The /24 all hosts share, whose .1 is this machine's side (pure; errors name keys)."""
    nets = set()
    for role, h in hosts.items():
        try:
            addr = ipaddress.IPv4Address(h["address"])
        except ValueError:
            raise LabError(f"{where}: lab.hosts.{role}.address: {h['address']!r} is not an IPv4 "
                           f"address (an emulated host needs one)") from None
        net = ipaddress.IPv4Network(f"{addr}/24", strict=False)
        if addr == net.network_address + 1:
            raise LabError(f"{where}: lab.hosts.{role}.address: {addr} is the segment's .1, "
                           f"which the controlling side takes")
        nets.add(net)
    if len(nets) != 1:
        raise LabError(f"{where}: lab.hosts: an emulated lab's hosts share one /24 (got "
                       f"{', '.join(map(str, sorted(nets)))})")
    (net,) = nets
    if not net.subnet_of(ipaddress.IPv4Network("198.18.0.0/15")):
        raise LabError(f"{where}: lab.hosts: emulated hosts take addresses from 198.18.0.0/15 "
                       f"(the benchmarking range), not {net}")
    return net


class EmulatedLab:
    def __init__(self, profile, run_id: str, state_root: Path | None = None):
        self.profile, self.run_id = profile, check_run_id(run_id)
        self.short = run_id[-4:]
        self.where = profile.path.name
        lab = profile.data["lab"]
        self.hosts: dict = lab.get("hosts") or {}
        self.state_root = Path(state_root or STATE_ROOT)
        self.state_dir = self.state_root / run_id
        # This run's own key and host keys; never a path the profile names (see module doc).
        self.key_file = self.state_dir / "id_ed25519"
        self.known_hosts = self.state_dir / "known_hosts"
        self.namespaces: list[str] = []
        self.sup: Supervisor | None = None
        self._lock = None
        self.net = segment_of(self.hosts, self.where)

    # ---- up -----------------------------------------------------------------------------------
    def up(self) -> "EmulatedLab":
        try:
            self._up()
        except BaseException:
            self.down()
            raise
        return self

    def _up(self) -> None:
        if not Path(SSHD).exists():
            raise LabError(f"{self.where}: lab.emulated: {SSHD} missing (apt-get install "
                           f"openssh-server; `make setup` does)")
        self.state_root.mkdir(parents=True, exist_ok=True)
        lock = self.state_root / f"emulated-{self.net.network_address}.lock"
        self._lock = open(lock, "w")
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            self._lock.close()
            self._lock = None
            raise LabError(f"{self.where}: lab.hosts: the emulated lab on {self.net} is in use "
                           f"by another run on this box (lock {lock})") from None
        self.state_dir.mkdir(parents=True, exist_ok=True)
        key_file = self.key_file
        write_owner(self.state_dir, {"pid": os.getpid(), "start_time": proc_start_time(os.getpid()),
                                     "run_id": self.run_id, "emulated_lab": self.profile.name})
        self.sup = Supervisor(self.state_dir, self.state_dir / "emulation-logs")
        # Keys of this run, in its own state folder: the user key and one host key per host.
        _run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"ofbench-{self.run_id}",
              "-f", key_file])
        authorized = self.state_dir / "authorized_keys"
        shutil.copy(Path(f"{key_file}.pub"), authorized)
        known_lines = []
        # The lab's segment: a bridge in the net namespace, this side joins it with .1.
        netns = self._add_ns("net")
        _run(["ip", "-n", netns, "link", "add", "br0", "type", "bridge"])
        _run(["ip", "-n", netns, "link", "set", "br0", "up"])
        mgmt = f"o{self.short}mg"
        _run(["ip", "link", "add", mgmt, "type", "veth", "peer", "name", "up0", "netns", netns])
        _run(["ip", "-n", netns, "link", "set", "up0", "master", "br0", "up"])
        _run(["ip", "addr", "add", f"{self.net.network_address + 1}/24", "dev", mgmt])
        _run(["ip", "link", "set", mgmt, "up"])
        Path("/run/sshd").mkdir(exist_ok=True)
        for i, (role, h) in enumerate(sorted(self.hosts.items())):
            ns = self._add_ns(role)
            _run(["ip", "link", "add", "eth0", "netns", ns, "type", "veth", "peer", "name",
                  f"h{i}", "netns", netns])
            _run(["ip", "-n", netns, "link", "set", f"h{i}", "master", "br0", "up"])
            _run(["ip", "-n", ns, "addr", "add", f"{h['address']}/24", "dev", "eth0"])
            _run(["ip", "-n", ns, "link", "set", "eth0", "up"])
            host_key = self.state_dir / f"{role}.hostkey"
            _run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"{role}", "-f", host_key])
            port = int(h.get("ssh_port", 22))
            cfg = self.state_dir / f"{role}.sshd_config"
            cfg.write_text(sshd_config(h["address"], port, host_key, authorized,
                                       self.state_dir / f"{role}.sshd.pid"))
            pub = Path(f"{host_key}.pub").read_text().split()
            addr = h["address"]
            known_lines.append(f"{addr if port == 22 else f'[{addr}]:{port}'} {pub[0]} {pub[1]}")
            self.sup.start(f"sshd-{role}", clean_shell_argv([SSHD, "-D", "-e", "-f", cfg],
                                                            self.state_dir), netns=ns,
                           ready=lambda a=addr, p=port: _accepts(a, p), ready_timeout_s=15)
        self._cable_conformance()
        self.known_hosts.write_text("\n".join(known_lines) + "\n")
        for d in self._socket_dirs():
            d.mkdir(parents=True, exist_ok=True)
            _remove_sockets(d)

    def _cable_conformance(self) -> None:
        """The conformance cables (profile ``conformance.links``): a veth pair per link from
        the tester host's namespace to the switch host's, as a real lab has three cables."""
        conf = self.profile.data.get("conformance")
        if not conf:
            return
        tester = self.namespace(conf["tester_host"])
        switch = self.namespace(self.profile.data["switch"].get("host") or "switch")
        for link in conf["links"]:
            _run(["ip", "link", "add", link["tester"], "netns", tester, "type", "veth",
                  "peer", "name", link["switch"], "netns", switch])
            for ns, ifname in ((tester, link["tester"]), (switch, link["switch"])):
                _run(["ip", "-n", ns, "link", "set", ifname, "up"])

    def _add_ns(self, tag: str) -> str:
        ns = f"ofb-{self.short}-{tag}"
        with open(self.state_dir / "netns.list", "a") as f:
            f.write(ns + "\n")
        _run(["ip", "netns", "add", ns])
        self.namespaces.append(ns)
        _run(["ip", "-n", ns, "link", "set", "lo", "up"])
        return ns

    def _socket_dirs(self) -> set[Path]:
        out = set()
        for section in ("switch", "generator"):
            for port in ((self.profile.data.get(section) or {}).get("ports") or {}).values():
                m = re.search(r"(?:socket|path|iface)=([^,]+)", port.get("devargs", ""))
                if m and m.group(1).startswith("/"):
                    out.add(Path(m.group(1)).parent)
        return out

    def namespace(self, role: str) -> str:
        return f"ofb-{self.short}-{role}"

    # ---- down ---------------------------------------------------------------------------------
    def down(self) -> None:
        if self.sup is not None:
            self.sup.stop_all()
        for ns in reversed(self.namespaces):
            delete_netns(ns)
        self.namespaces.clear()
        remove_hugepage_files(self.short)
        remove_dpdk_runtime(self.short)
        # this run's keys and known_hosts are in its state folder and go with it
        shutil.rmtree(self.state_dir, ignore_errors=True)
        if self._lock is not None:
            # the link sockets of this run go too (the lock file, empty, stays)
            for d in self._socket_dirs():
                _remove_sockets(d)
            self._lock.close()
            self._lock = None


def _remove_sockets(d: Path) -> None:
    """Remove the unix sockets ``*.sock`` in ``d`` (a link folder the profile names); a file
    of another kind there is not ours and stays."""
    for p in d.glob("*.sock"):
        with contextlib.suppress(OSError):
            if stat.S_ISSOCK(p.lstat().st_mode):
                p.unlink()


def _accepts(addr: str, port: int) -> bool:
    try:
        with socket.create_connection((addr, port), timeout=0.5):
            return True
    except OSError:
        return False
