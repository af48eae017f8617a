"""A real lab reached over SSH (profile ``lab.kind: remote``, e.g. dut/profiles/lab1.yaml).

Each role in ``lab.hosts`` (switch, controller, trex, ...) is a host we reach with SSH
(paramiko, key-based). Before anything starts, every host is checked for reachability, and an
unreachable one stops the run with an error naming the profile key, address and cause. Remote
processes are started detached in their own session (``setsid``), recorded, stopped in every
exit path, and their logs are fetched into the run's folder.

Only what a profile names is ever contacted; tests use loopback addresses.
"""
from __future__ import annotations

import shlex
import socket
from dataclasses import dataclass
from pathlib import Path

from drivers.lab.local import LabError


@dataclass
class RemoteProcess:
    name: str
    role: str
    pid: int
    log_path: str


def check_reachable(role: str, host: dict, where: str, timeout_s: float = 5.0) -> None:
    addr, port = host["address"], host.get("ssh_port", 22)
    try:
        with socket.create_connection((addr, port), timeout=timeout_s):
            return
    except OSError as e:
        raise LabError(f"{where}: lab.hosts.{role}: {addr}:{port} unreachable over SSH "
                       f"({e.strerror or e}); check the address, the cabling and that sshd "
                       f"runs") from None


class RemoteLab:
    kind = "remote"

    def __init__(self, profile, run_id: str, run_dir: Path, connect_timeout_s: float = 5.0):
        self.profile, self.run_id, self.run_dir = profile, run_id, Path(run_dir)
        self.hosts: dict = profile.data["lab"].get("hosts", {})
        self.state_dir = f"{profile.data['lab'].get('state_dir', '/run/ofbench')}/{run_id}"
        self.warnings: list[str] = []
        self._clients: dict = {}
        self.procs: list[RemoteProcess] = []
        where = profile.path.name
        for role, host in self.hosts.items():
            check_reachable(role, host, where, connect_timeout_s)

    def client(self, role: str):
        if role not in self.hosts:
            raise LabError(f"{self.profile.path.name}: no host with role {role!r} in lab.hosts "
                           f"(known: {', '.join(self.hosts)})")
        if role not in self._clients:
            import paramiko
            h = self.hosts[role]
            c = paramiko.SSHClient()
            c.set_missing_host_key_policy(paramiko.RejectPolicy())
            c.load_system_host_keys()
            c.connect(h["address"], port=h.get("ssh_port", 22), username=h.get("user", "root"),
                      key_filename=str(Path(h["key_file"]).expanduser())
                      if h.get("key_file") else None, timeout=10)
            self._clients[role] = c
        return self._clients[role]

    def exec(self, role: str, argv: list[str], timeout: float = 60.0) -> str:
        cmd = " ".join(shlex.quote(str(a)) for a in argv)
        _, out, err = self.client(role).exec_command(cmd, timeout=timeout)
        rc = out.channel.recv_exit_status()
        text = out.read().decode(errors="replace")
        if rc != 0:
            raise LabError(f"{role}: `{cmd}` failed ({rc}): {err.read().decode().strip()}")
        return text

    def start(self, role: str, name: str, argv: list[str]) -> RemoteProcess:
        log = f"{self.state_dir}/{name}.log"
        cmd = " ".join(shlex.quote(str(a)) for a in argv)
        pid = int(self.exec(role, ["sh", "-c", f"mkdir -p {shlex.quote(self.state_dir)} && "
                                               f"setsid sh -c {shlex.quote('exec ' + cmd)} "
                                               f"> {shlex.quote(log)} 2>&1 < /dev/null & "
                                               f"echo $!"]).strip())
        proc = RemoteProcess(name, role, pid, log)
        self.procs.append(proc)
        return proc

    def stop(self, proc: RemoteProcess) -> None:
        try:
            self.exec(proc.role, ["sh", "-c", f"kill -TERM -{proc.pid} 2>/dev/null; sleep 2; "
                                              f"kill -KILL -{proc.pid} 2>/dev/null; true"])
            dest = self.run_dir / "logs" / proc.role
            dest.mkdir(parents=True, exist_ok=True)
            self.client(proc.role).open_sftp().get(proc.log_path, str(dest / f"{proc.name}.log"))
        except Exception as e:  # keep stopping the others
            self.warnings.append(f"stopping {proc.name} on {proc.role}: {e}")
        if proc in self.procs:
            self.procs.remove(proc)

    def close(self) -> None:
        for p in reversed(list(self.procs)):
            self.stop(p)
        for c in self._clients.values():
            c.close()
        self._clients.clear()
