"""Leases on lab places through labgrid's coordinator (profile ``lab.coordinator``).

A lab profile is a labgrid *place* (``lab.place``, default the profile's name) whose tags come
from the profile (:func:`place_tags`). A run that names a coordinator, or asks for a pool
(``--dut=pool:<tag filter>``), takes its place before it touches a host:

  1. places still held by dead runs of this machine are released (:func:`release_dead_leases`;
     labgrid has no lease expiry, so the next run or ``make clean-stale`` does it);
  2. a reservation goes into the coordinator's queue with a tag filter (``name=<place>`` for one
     place, the pool's tags for any of them) and a priority (``--lab-priority``; labgrid's
     scheduler serves the highest first, then the oldest), waits up to ``--lab-wait`` seconds,
     and once allocated the place is acquired;
  3. the run holds it for the whole session and re-checks before each measurement that it still
     does (:meth:`Lease.check`: a sync round trip with the coordinator, about a millisecond);
  4. it is released on every exit path: the harness releases it at the end (also after a
     failure, Ctrl-C, SIGTERM); if the run dies, its agent sees the end of its input and
     releases; if both die (SIGKILL of the group), the next run's cleanup does.

The holder of a place is labgrid's session name ``<host>/<user>-<run id>``: who holds a place
names the run. labgrid's client is asyncio + grpc and lives in a venv of its own
(``.venv-labgrid``, requirements-labgrid.lock): this module talks to
:mod:`drivers.lab.lease_agent` running there, in JSON lines over a pipe.

Each run that leases writes ``<state root>/leases/<run id>.json`` (its pid, the agent's, the
coordinator, the holder name) before it asks for anything, and removes it after the release.
"""
from __future__ import annotations

import getpass
import json
import os
import re
import select
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from drivers.lab.base import LabError
from drivers.supervisor import proc_start_time

AGENT = Path(__file__).with_name("lease_agent.py")
DEFAULT_PORT = 20408      # labgrid's
TAG_KEY = re.compile(r"^[a-z][a-z0-9_]+$")
TAG_VAL = re.compile(r"^[a-z0-9][a-z0-9_.-]*$")


class LeaseError(LabError):
    """A place that cannot be had or was lost; the message names the profile key or place."""


def labgrid_venv() -> Path:
    from paths import REPO
    return Path(os.environ.get("OFBENCH_LABGRID_VENV") or REPO / ".venv-labgrid")


def labgrid_bin(name: str) -> Path:
    p = labgrid_venv() / "bin" / name
    if not p.exists():
        raise LeaseError(f"{p} missing: labgrid lives in .venv-labgrid (requirements-labgrid."
                         f"lock), which `make setup` creates")
    return p


def leases_dir() -> Path:
    """``<state root>/leases`` (env OFBENCH_LEASE_DIR elsewhere: tests keep theirs private
    without moving the state root, whose cleanup must see every run of this box)."""
    # drivers.lab.cleanup's STATE_ROOT, read the same way (cleanup imports this module)
    root = os.environ.get("OFBENCH_STATE_ROOT", "/run/ofbench")
    return Path(os.environ.get("OFBENCH_LEASE_DIR") or Path(root) / "leases")


def holder_user(run_id: str) -> str:
    return f"{getpass.getuser()}-{run_id}"


def parse_filter(spec: str, where: str = "--dut=pool:") -> dict[str, str]:
    """'pool=emu,nic=memif' -> {'pool': 'emu', 'nic': 'memif'} (pure; errors name ``where``)."""
    out: dict[str, str] = {}
    for part in (p.strip() for p in spec.split(",")):
        if not part:
            continue
        k, sep, v = part.partition("=")
        if not sep or not TAG_KEY.match(k) or not TAG_VAL.match(v):
            raise LeaseError(f"{where}{spec}: {part!r} is not a tag filter <key>=<value> (key "
                             f"[a-z][a-z0-9_]+, value [a-z0-9][a-z0-9_.-]*)")
        out[k] = v
    if not out:
        raise LeaseError(f"{where}{spec}: an empty tag filter (write e.g. pool:pool=emu)")
    return out


def _tag_value(v: str) -> str:
    return re.sub(r"[^a-z0-9_.-]+", "_", str(v).lower()).strip("_") or "none"


def place_tags(profile) -> dict[str, str]:
    """The tags a profile's place carries (pure): the profile (so a pool's place says which
    profile to run), the testbed type, the switch, generator and NIC kinds, one ``f_<feature>``
    per feature, and the profile's own ``lab.tags`` (e.g. ``pool``) last."""
    data = profile.data
    lab = data["lab"]
    ports = list((data["switch"].get("ports") or {}).values()) + \
        list((data["generator"].get("ports") or {}).values())
    nics = sorted({"pci" if p.get("pci") else
                   _tag_value(re.sub(r"^net_|\d+$", "", (p.get("devargs") or "none").split(",")[0]))
                   for p in ports}) or ["none"]
    tags = {"profile": _tag_value(profile.name),
            "testbed": _tag_value(lab.get("testbed") or
                                  ("emulated" if lab.get("emulated") else lab["kind"])),
            "switch": _tag_value(data["switch"]["kind"]),
            "generator": _tag_value(data["generator"]["kind"]),
            "nic": "_".join(nics)}
    tags.update({f"f_{f}": "yes" for f in sorted(profile.features)})
    tags.update({k: _tag_value(v) for k, v in (lab.get("tags") or {}).items()})
    return tags


def coordinator_address(addr: str) -> str:
    return addr if ":" in addr.rsplit("]", 1)[-1] else f"{addr}:{DEFAULT_PORT}"


def check_coordinator_reachable(addr: str, where: str, timeout_s: float = 3.0) -> None:
    host, _, port = coordinator_address(addr).rpartition(":")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s):
            return
    except (OSError, ValueError) as e:
        raise LeaseError(f"{where}: coordinator {addr} unreachable "
                         f"({getattr(e, 'strerror', None) or e}); start labgrid-coordinator "
                         f"there or fix the address") from None


class Agent:
    """One drivers/lab/lease_agent.py process (one labgrid client session)."""

    def __init__(self, coordinator: str, *, user: str | None = None, log: Path | None = None,
                 where: str = "lab.coordinator", timeout_s: float = 10.0):
        self.coordinator = coordinator_address(coordinator)
        self.where = where
        env = dict(os.environ)
        env.pop("LG_COORDINATOR", None)
        if user:
            env["LG_USERNAME"] = user
        py = labgrid_bin("python")
        check_coordinator_reachable(self.coordinator, where)
        err = open(log, "ab") if log else subprocess.DEVNULL
        try:
            self.proc = subprocess.Popen(
                [str(py), str(AGENT), "--coordinator", self.coordinator, "--connect-timeout",
                 str(timeout_s)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
                env=env, start_new_session=True, text=True, bufsize=1)
        finally:
            if log:
                err.close()
        self.start_time = proc_start_time(self.proc.pid)
        hello = self._read(timeout_s + 20)
        if not hello.get("ok"):
            self.close()
            raise LeaseError(f"{where}: coordinator {hello.get('error')}")
        self.name = hello["name"]

    @property
    def pid(self) -> int:
        return self.proc.pid

    def _read(self, timeout_s: float) -> dict:
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout_s)
        line = self.proc.stdout.readline() if ready else ""
        if not line:
            alive = self.proc.poll() is None
            raise LeaseError(f"{self.where}: the labgrid agent for {self.coordinator} "
                             f"{'did not answer in %.0f s' % timeout_s if alive else 'exited'}")
        return json.loads(line)

    def call(self, op: str, timeout_s: float = 30.0, **kw) -> dict:
        if self.proc.poll() is not None:
            raise LeaseError(f"{self.where}: the labgrid agent for {self.coordinator} exited "
                             f"({self.proc.returncode})")
        self.proc.stdin.write(json.dumps({"op": op, **kw}) + "\n")
        self.proc.stdin.flush()
        return self._read(timeout_s)

    def ok(self, op: str, timeout_s: float = 30.0, **kw) -> dict:
        out = self.call(op, timeout_s, **kw)
        if not out.get("ok"):
            raise LeaseError(f"{self.where}: {op} on {self.coordinator}: {out.get('error')}")
        return out

    def close(self, timeout_s: float = 10.0) -> None:
        """End of input: the agent releases what it still holds and exits."""
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
            try:
                self.proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)
        for f in (self.proc.stdin, self.proc.stdout):
            try:
                f.close()
            except (OSError, ValueError):
                pass


@dataclass
class Lease:
    """A place this run holds. ``check()`` before each measurement; ``release()`` at the end."""
    agent: Agent
    coordinator: str
    place: str
    token: str
    tags: dict
    holder: str
    pool: str = ""
    waited_s: float = 0.0
    acquired_at: float = 0.0
    record: Path | None = None
    released_at: float | None = None
    checks: int = 0
    extra_checks: list = field(default_factory=list)   # more guards (the testbed lock)

    def check(self) -> None:
        """Raise LeaseError naming the holder if the place is no longer this run's."""
        if self.released_at is not None:
            raise LeaseError(f"place {self.place!r}: this run released it already")
        try:
            out = self.agent.ok("check", timeout_s=15, place=self.place)
        except LeaseError as e:
            raise LeaseError(f"place {self.place!r}: cannot confirm this run still holds it "
                             f"({e})") from None
        self.checks += 1
        if not out["held"]:
            who = out.get("holder")
            raise LeaseError(
                f"place {self.place!r} on {self.coordinator} was taken from this run "
                + (f"(deleted on the coordinator)" if out.get("deleted") else
                   f"(now held by {who})" if who else "(released by someone else)")
                + "; stopping before the next measurement")
        for fn in self.extra_checks:
            fn()

    def note_testbed(self, testbed_id: str) -> str | None:
        """Keep the testbed id on the place (its ``testbed_id`` tag); returns the id the place
        had before when it differs (the testbed changed: a new series, not a regression)."""
        was = self.tags.get("testbed_id")
        if was != testbed_id:
            self.agent.ok("set_tags", place=self.place, tags={"testbed_id": testbed_id})
            self.tags["testbed_id"] = testbed_id
        return was if was and was != testbed_id else None

    def release(self) -> None:
        if self.released_at is not None:
            return
        try:
            out = self.agent.ok("release", place=self.place, token=self.token)
            self.released_at = out.get("released_at", time.time())
        except LeaseError:
            self.released_at = time.time()   # the agent releases on its way out below
        finally:
            self.agent.close()
            if self.record is not None:
                self.record.unlink(missing_ok=True)

    def summary(self) -> dict:
        return {"place": self.place, "pool": self.pool, "coordinator": self.coordinator,
                "lease_holder": self.holder, "lease_waited_s": self.waited_s}


def write_record(run_id: str, coordinator: str, holder: str, agent_pid: int | None) -> Path:
    d = leases_dir()
    d.mkdir(parents=True, exist_ok=True)
    path = d / f"{run_id}.json"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({
        "run_id": run_id, "pid": os.getpid(), "start_time": proc_start_time(os.getpid()),
        "coordinator": coordinator, "holder": holder, "agent_pid": agent_pid,
        "agent_start_time": proc_start_time(agent_pid) if agent_pid else None}))
    os.replace(tmp, path)
    return path


def acquire(coordinator: str, run_id: str, *, place: str | None = None,
            pool: dict | None = None, prio: float = 0.0, wait_s: float = 600.0,
            where: str = "lab.coordinator", log: Path | None = None, progress=None) -> Lease:
    """Take ``place`` (or any place of ``pool``) for run ``run_id``; LeaseError if it cannot be
    had (unreachable coordinator, unknown place, empty pool, nothing free in ``wait_s``)."""
    progress = progress or (lambda m: None)
    release_dead_leases(log=progress)
    user = holder_user(run_id)
    host = os.environ.get("LG_HOSTNAME", socket.gethostname())
    holder = f"{host}/{user}"
    record = write_record(run_id, coordinator_address(coordinator), holder, None)
    agent = None
    try:
        agent = Agent(coordinator, user=user, log=log, where=where)
        write_record(run_id, agent.coordinator, holder, agent.pid)
        places = agent.ok("places")["places"]
        if place is not None:
            if place not in places:
                known = ", ".join(sorted(places)) or "none"
                raise LeaseError(f"{where}: no place {place!r} on coordinator "
                                 f"{agent.coordinator} (known: {known}); register it: "
                                 f"python -m drivers.lab.lease register <profile>")
            flt = {"name": place}
        else:
            flt = dict(pool or {})
            members = [n for n, p in places.items()
                       if all({**p["tags"], "name": n}.get(k) == v for k, v in flt.items())]
            if not members:
                raise LeaseError(f"{where}: pool {_fmt(flt)} is empty on coordinator "
                                 f"{agent.coordinator}: no place has these tags (places: "
                                 + (", ".join(f"{n} [{_fmt(p['tags'])}]"
                                              for n, p in sorted(places.items())) or "none")
                                 + ")")
        busy = {n: p["acquired"] for n, p in places.items() if p["acquired"]
                and all({**p["tags"], "name": n}.get(k) == v for k, v in flt.items())}
        if busy:
            progress(f"waiting up to {wait_s:.0f} s for {_fmt(flt)} (held: "
                     f"{', '.join(f'{n} by {h}' for n, h in sorted(busy.items()))})")
        out = agent.call("reserve", timeout_s=wait_s + 60, filter=flt, prio=prio, wait_s=wait_s)
        if not out.get("ok"):
            held = ", ".join(f"{n} by {h}" for n, h in sorted((out.get("holders") or {}).items()))
            raise LeaseError(f"{where}: {out.get('error')}"
                             + (f" (held: {held})" if held else "")
                             + "; raise --lab-wait or try later")
        lease = Lease(agent, agent.coordinator, out["place"], out["token"], out["tags"],
                      out["holder"], pool=_fmt(pool) if pool else "",
                      waited_s=out["waited_s"], acquired_at=out["acquired_at"], record=record)
        progress(f"holding place {lease.place} on {lease.coordinator} as {lease.holder} "
                 f"(waited {lease.waited_s:.1f} s)")
        return lease
    except BaseException:
        if agent is not None:
            agent.close()
        record.unlink(missing_ok=True)
        raise


def _fmt(flt: dict) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(flt.items()))


def release_dead_leases(log=print, root: Path | None = None) -> list[str]:
    """Places held by runs of this machine that are gone: released, their reservations
    cancelled, their agents killed. A coordinator that cannot be reached keeps the record (the
    next cleanup tries again) and says so."""
    d = root or leases_dir()
    done: list[str] = []
    if not d.is_dir():
        return done
    for path in sorted(d.glob("run-*.json")):
        try:
            rec = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if rec.get("pid") and proc_start_time(rec["pid"]) == rec.get("start_time"):
            continue  # a live run
        agent_pid = rec.get("agent_pid")
        if agent_pid and proc_start_time(agent_pid) == rec.get("agent_start_time"):
            try:
                os.killpg(agent_pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        try:
            agent = Agent(rec["coordinator"], where=f"lease of dead run {rec.get('run_id')}")
            try:
                out = agent.ok("release_holder", holder=rec["holder"])
            finally:
                agent.close()
        except LeaseError as e:
            log(f"[cleanup] WARNING: {e}; kept {path} to try again")
            continue
        path.unlink(missing_ok=True)
        what = [f"place {p}" for p in out["released"]] + \
            [f"reservation {t}" for t in out["cancelled"]]
        if what:
            log(f"[cleanup] dead run {rec.get('run_id')} ({rec['holder']}): released "
                f"{', '.join(what)} on {rec['coordinator']}")
        done += what
    return done


class LocalCoordinator:
    """labgrid-coordinator on this box's loopback, under the Supervisor (recorded in the run's
    state folder, stopped in every exit path; a SIGKILLed run's is killed by the next cleanup).
    Its places.yaml lives in ``state_dir`` (the coordinator saves there). Without a
    ``state_dir`` (tests, the benchmark) it makes a run folder of its own in the state root,
    with this process as its owner, so that a killed caller's coordinator is cleaned too, and
    removes it at :meth:`stop`."""

    def __init__(self, state_dir: Path | None, log_dir: Path, port: int = 0):
        from drivers.supervisor import Supervisor
        self.own_dir = state_dir is None
        if self.own_dir:
            import secrets
            root = Path(os.environ.get("OFBENCH_STATE_ROOT", "/run/ofbench"))
            # named like a run folder (reports.results.new_run_id), which cleanup knows
            state_dir = root / time.strftime(f"run-%Y%m%dT%H%M%SZ-{secrets.token_hex(2)}",
                                             time.gmtime())
            write_owner(state_dir, state_dir.name)
        self.state_dir = Path(state_dir)
        self.port = port or _free_port()
        self.address = f"127.0.0.1:{self.port}"
        work = self.state_dir / "coordinator"
        work.mkdir(parents=True, exist_ok=True)
        self.sup = Supervisor(self.state_dir, Path(log_dir))
        self.proc = self.sup.start(
            "labgrid-coordinator", [str(labgrid_bin("labgrid-coordinator")), "-l", self.address],
            cwd=work, ready=lambda: _accepts("127.0.0.1", self.port), ready_timeout_s=30)

    def stop(self) -> None:
        self.sup.stop_all()
        if self.own_dir:
            import shutil
            shutil.rmtree(self.state_dir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _accepts(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


def write_owner(state_dir: Path, run_id: str) -> None:
    """owner.json of a run folder (drivers/lab/cleanup.py: a folder whose owner is gone is a
    dead run's); the labs write the same."""
    state_dir.mkdir(parents=True, exist_ok=True)
    (state_dir / "owner.json").write_text(json.dumps(
        {"pid": os.getpid(), "start_time": proc_start_time(os.getpid()), "run_id": run_id}))


def register(profile, coordinator: str | None = None) -> dict:
    """Create (or update) the profile's place with the tags of :func:`place_tags`."""
    addr = coordinator or profile.data["lab"].get("coordinator")
    if not addr:
        raise LeaseError(f"{profile.path.name}: lab.coordinator: not set (give --coordinator)")
    name = profile.data["lab"].get("place") or profile.name
    agent = Agent(addr, where=f"{profile.path.name}: lab.coordinator")
    try:
        return {"place": name, **agent.ok("register", place=name, tags=place_tags(profile))}
    finally:
        agent.close()


def main(argv: list[str] | None = None) -> int:
    import argparse
    ap = argparse.ArgumentParser(prog="python -m drivers.lab.lease",
                                 description="lab places on labgrid's coordinator")
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("register", help="create/update each profile's place and its tags")
    r.add_argument("profiles", nargs="+")
    r.add_argument("--coordinator", help="HOST:PORT (default: each profile's lab.coordinator)")
    s = sub.add_parser("show", help="the places and who holds them")
    s.add_argument("--coordinator", required=True)
    args = ap.parse_args(argv)
    try:
        if args.cmd == "register":
            from dut.profiles.schema import load_profile
            for p in args.profiles:
                out = register(load_profile(p), args.coordinator)
                print(f"{out['place']}: {'created' if out['created'] else 'updated'}; tags "
                      f"{_fmt(out['tags'])}")
        else:
            agent = Agent(args.coordinator, where="--coordinator")
            try:
                for n, p in sorted(agent.ok("places")["places"].items()):
                    print(f"{n}: {p['acquired'] or 'free'}; tags {_fmt(p['tags'])}")
            finally:
                agent.close()
    except (LabError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
