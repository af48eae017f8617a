"""The lock on the testbed itself: a second guard behind the coordinator's lease, for runs that
bypass the coordinator (a profile without ``lab.coordinator``, a copy of the profile, another
checkout).

One file on the lab's switch host (or its first host), in the lab's state root:
``<state_dir>/testbed-<address>.lock`` (the address keeps emulated labs on one box apart; a
real host has one address per testbed), JSON with the owner (this machine's name and boot),
the run id and pid, and a heartbeat (the file's modification time, renewed at every check).

  * ``take`` (:data:`SNIPPET`, under an flock of ``<lock>.guard`` so two takers cannot both
    win): created if absent; ours already: kept; another run's: refused, naming it, unless that
    run is a dead run of this machine (the controlling side checks its pid), a run whose state
    folder on the host is gone (the host's stale-run cleanup removed it: its owner is dead), or
    its heartbeat is older than ``stale_s`` (a lost machine) -- then replaced, and said so;
  * ``check`` before each measurement: the file still names this run (one shell line over the
    open SSH connection, which also renews the heartbeat); anything else stops the run naming
    the file's owner;
  * ``release`` at the lab's close: removed if it is still ours (the empty ``.guard`` file
    stays: removing it would let two takers lock different files).
"""
from __future__ import annotations

import json
import os
import shlex
from pathlib import Path

from drivers.lab.base import LabError
from drivers.supervisor import proc_start_time

STALE_S = 24 * 3600   # a heartbeat this old is a machine that is gone

SNIPPET = r"""
import fcntl, json, os, sys, time
path, action, me = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
force = sys.argv[4] if len(sys.argv) > 4 else ""
stale_s = float(sys.argv[5]) if len(sys.argv) > 5 else 86400.0
os.makedirs(os.path.dirname(path), exist_ok=True)
guard = open(path + ".guard", "a")
fcntl.flock(guard, fcntl.LOCK_EX)
def read():
    try:
        st = os.stat(path)
        return json.load(open(path)), time.time() - st.st_mtime
    except FileNotFoundError:
        return None, None
    except ValueError:
        return {"run_id": "?", "controller": "?"}, time.time() - os.stat(path).st_mtime
def write():
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        json.dump(dict(me, taken_at=time.time()), f)
    os.replace(tmp, path)
cur, age = read()
if action == "take":
    if cur is None or cur.get("run_id") == me["run_id"]:
        write(); print(json.dumps({"taken": True}))
    elif (force and cur.get("run_id") == force or age > stale_s
          or not os.path.isdir(os.path.join(os.path.dirname(path), str(cur.get("run_id")),
                                            str(cur.get("role", ""))))):
        # a dead run of the controlling machine, a lost machine, or a run whose state folder
        # on this host is gone (removed by the host's stale-run cleanup: its owner is dead)
        write(); print(json.dumps({"taken": True, "replaced": cur, "age_s": age}))
    else:
        print(json.dumps({"taken": False, "owner": cur, "age_s": age}))
elif action == "release":
    if cur is not None and cur.get("run_id") == me["run_id"]:
        os.unlink(path)
    print(json.dumps({"released": True}))
"""


def lock_path(state_root: str | Path, address: str) -> Path:
    return Path(state_root) / f"testbed-{address.replace(':', '_').replace('/', '_')}.lock"


def describe(owner: dict | None, age_s: float | None) -> str:
    if not owner:
        return "nobody"
    age = f", heartbeat {age_s:.0f} s ago" if age_s is not None else ""
    return (f"run {owner.get('run_id')} (pid {owner.get('pid')} on {owner.get('controller')}"
            f"{age})")


class TestbedLock:
    __test__ = False   # not a pytest test class
    """The lock of one lab, held through ``host`` (a RemoteHost: ``run``, ``python_snippet``)."""

    def __init__(self, host, state_root: str | Path, run_id: str, controller: str,
                 where: str, stale_s: float = STALE_S):
        self.host, self.run_id, self.controller, self.where = host, run_id, controller, where
        self.path = lock_path(state_root, host.address)
        self.stale_s = stale_s
        self.me = {"controller": controller, "run_id": run_id, "role": host.role,
                   "pid": os.getpid(),
                   "start_time": proc_start_time(os.getpid())}
        self.held = False
        self.notes: list[str] = []

    def _snippet(self, action: str, force: str = "") -> dict:
        out = self.host.python_snippet(SNIPPET, str(self.path), action, json.dumps(self.me),
                                       force, str(self.stale_s))
        return json.loads(out)

    def take(self) -> None:
        out = self._snippet("take")
        if not out["taken"]:
            owner = out.get("owner") or {}
            dead_here = (owner.get("controller") == self.controller and owner.get("pid")
                         and proc_start_time(int(owner["pid"])) != owner.get("start_time"))
            if dead_here:
                out = self._snippet("take", force=str(owner.get("run_id")))
            if not out["taken"]:
                raise LabError(
                    f"{self.where}: the testbed is locked by {describe(owner, out.get('age_s'))}"
                    f" ({self.host.role}:{self.path}); a run that bypassed the lab coordinator "
                    f"(lab.coordinator)? Wait for it, or remove the file if that run is gone")
        if out.get("replaced"):
            self.notes.append(f"testbed lock {self.path} on {self.host.role} taken over from "
                              f"{describe(out['replaced'], out.get('age_s'))}")
        self.held = True

    def check(self) -> None:
        """Cheap: one shell line over the open connection; renews the heartbeat (mtime)."""
        if not self.held:
            return
        p = shlex.quote(str(self.path))
        cp = self.host.run(f"grep -qF {shlex.quote(json.dumps(self.run_id))} {p} && touch {p}"
                           f" || cat {p}", check=False, timeout=15)
        if cp.returncode == 0 and not cp.stdout.strip():
            return
        try:
            owner = json.loads(cp.stdout)
        except ValueError:
            owner = None
        self.held = False
        raise LabError(f"{self.where}: the testbed lock {self.path} on {self.host.role} is no "
                       f"longer this run's: "
                       + (f"now held by {describe(owner, None)}" if owner else "removed"))

    def release(self) -> None:
        if self.held:
            self.held = False
            try:
                self._snippet("release")
            except Exception as e:  # noqa: BLE001  (the lab's close goes on)
                self.notes.append(f"testbed lock {self.path}: not released ({e})")
