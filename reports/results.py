"""Result records: validate against reports/schema/result-v<N>.json, append to results.jsonl.

A record is one JSON object per line in reports/<run-id>/results.jsonl:

    {"schema_version": 2, "suite": "throughput", "name": "ndr_64b_1flows",
     "metrics": {"ndr_mpps": 3.2, "latency_p99_us": 41.0},
     "params": {"frame_size_b": 64, "flows": 1},
     "provenance": {"git_sha": ..., "git_dirty": ..., "dut_switch_kind": "ovs", "dut_build": ...,
                    "generator": "softgen", "generator_version": ..., "profile": "local",
                    "port_kind": "memif", "host": ..., "start_time": ..., "end_time": ...},
     "run_id": "run-20240501T020304Z-1a2b"}

Optionally "distributions": {"latency_us": {"kind": "quantiles", ...}}, the shape of a measured
distribution in a few dozen numbers beside the metrics (distributions/), and (since
version 2) "search": a throughput search's RFC 9971 goal results (drivers/trafficgen/mlr.py).

Versions: records are written as SCHEMA_VERSION (2); a record is validated against the schema of
its own schema_version, so the runs written as version 1 stay readable (v2 = v1 + `search`).

Invariants:
- every line of results.jsonl is a complete record that passed the schema; a record that fails
  validation raises ResultRecordError (a ValueError naming the offending key) and nothing of it
  is written;
- metric values are numbers, bools or null: never NaN or infinity (JSON has no such values);
- times are RFC 3339 UTC with a Z suffix and microseconds (the Influx exporter uses end_time as
  the point time, so a retried export overwrites instead of duplicating).

Concurrency: one ResultWriter per run, shared by the pytest process; `write` holds a lock and
appends one line with a single write(2) on an O_APPEND descriptor.
"""
from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
import os
import platform
import re
import secrets
import socket
import subprocess
import threading
from pathlib import Path
from typing import Any, Iterable, Mapping

import jsonschema

from paths import build_dir

SCHEMA_VERSION = 2
READABLE_VERSIONS = (1, 2)
SCHEMA_DIR = Path(__file__).resolve().parent / "schema"
SCHEMA_PATH = SCHEMA_DIR / f"result-v{SCHEMA_VERSION}.json"
RESULTS_FILE = "results.jsonl"
RUN_ID_PREFIX = "run-"
# Exactly the names new_run_id makes: what prune_run_dirs may delete, nothing else.
RUN_ID_RE = re.compile(r"run-[0-9]{8}T[0-9]{6}Z-[0-9a-f]{4}", re.ASCII)
LATEST_LINK = "latest"

# Provenance keys the schema requires; collect_provenance fills the host/git/build ones, the
# harness the DUT/generator/profile ones, `write` the times.
REQUIRED_PROVENANCE = ("git_sha", "git_dirty", "dut_switch_kind", "dut_build", "generator",
                       "generator_version", "profile", "port_kind", "host", "start_time",
                       "end_time")


class ResultRecordError(ValueError):
    """A record does not match the result schema; the message names every offending key."""


# ---- time -----------------------------------------------------------------------------------

def utc_rfc3339(when: dt.datetime | float | None = None) -> str:
    """RFC 3339 UTC with microseconds and a Z, e.g. 2024-05-01T02:03:04.123456Z.

    `when` is an aware datetime, a POSIX timestamp in seconds, or None for now."""
    if when is None:
        when = dt.datetime.now(dt.timezone.utc)
    elif isinstance(when, (int, float)):
        when = dt.datetime.fromtimestamp(when, dt.timezone.utc)
    elif when.tzinfo is None:
        raise ValueError(f"naive datetime {when!r}: give a timezone-aware one (UTC)")
    return when.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_rfc3339(text: str) -> dt.datetime:
    """Inverse of utc_rfc3339 (also accepts fewer fraction digits / none)."""
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


# ---- run directories ------------------------------------------------------------------------

def new_run_id(now: dt.datetime, rand_hex: str | None = None) -> str:
    """run-YYYYmmddTHHMMSSZ-<4 hex>; `rand_hex` is for tests."""
    suffix = rand_hex if rand_hex is not None else secrets.token_hex(2)
    return f"{RUN_ID_PREFIX}{now.astimezone(dt.timezone.utc):%Y%m%dT%H%M%SZ}-{suffix}"


def create_run_dir(reports_root: Path, now: dt.datetime | None = None) -> Path:
    """Make reports_root/<new run id>/ and point reports_root/latest at it."""
    now = now or dt.datetime.now(dt.timezone.utc)
    reports_root = Path(reports_root)
    reports_root.mkdir(parents=True, exist_ok=True)
    while True:
        run_dir = reports_root / new_run_id(now)
        try:
            run_dir.mkdir()
            break
        except FileExistsError:  # same second and same 4 hex: draw again
            continue
    update_latest_link(reports_root, run_dir)
    return run_dir


def update_latest_link(reports_root: Path, run_dir: Path) -> Path:
    """Atomically (rename over) make reports_root/latest -> <run dir name> (relative link)."""
    link = Path(reports_root) / LATEST_LINK
    tmp = Path(reports_root) / f".{LATEST_LINK}.{os.getpid()}.tmp"
    if tmp.is_symlink() or tmp.exists():
        tmp.unlink()
    os.symlink(Path(run_dir).name, tmp)
    os.replace(tmp, link)
    return link


def prune_run_dirs(reports_root: Path, keep: int = 50) -> list[Path]:
    """Delete all but the newest `keep` run dirs (by run id, i.e. start time); never the one
    reports/latest points at. Returns what was deleted. For labs whose disk fills up.

    Only folders whose name is exactly a run id (``run-YYYYmmddTHHMMSSZ-<4 hex>``, what
    new_run_id makes) count and are deleted: a ``run-notes`` or ``run-2024-backup`` folder a
    person keeps in --reports-dir is neither counted nor touched."""
    import shutil
    reports_root = Path(reports_root)
    runs = sorted(p for p in reports_root.glob(f"{RUN_ID_PREFIX}*")
                  if RUN_ID_RE.fullmatch(p.name) and p.is_dir() and not p.is_symlink())
    latest = reports_root / LATEST_LINK
    protected = latest.resolve() if latest.is_symlink() else None
    doomed = [p for p in runs[:max(0, len(runs) - keep)] if p.resolve() != protected]
    for p in doomed:
        shutil.rmtree(p, ignore_errors=True)
    return doomed


# ---- provenance ------------------------------------------------------------------------------

def _git(repo_root: Path, *args: str) -> str | None:
    try:
        out = subprocess.run(["git", "-C", str(repo_root), *args], capture_output=True,
                             text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def file_build_id(path: Path) -> str:
    """'sha256:<first 16 hex>' of a binary, or 'none' when it does not exist."""
    path = Path(path)
    if not path.is_file():
        return "none"
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return "sha256:" + digest.hexdigest()[:16]


def collect_provenance(repo_root: Path, switch_binary: str = "dut/switch/ofswitch") -> dict:
    """Host-side provenance shared by every record of a run.

    git_sha is 'none' in a repo without commits (or outside git); git_dirty counts tracked
    modified files and untracked files that are not ignored. dut_build hashes
    <build dir>/<switch_binary> ('none' until the switch is built)."""
    repo_root = Path(repo_root)
    sha = _git(repo_root, "rev-parse", "--verify", "-q", "HEAD") or "none"
    status = _git(repo_root, "status", "--porcelain")
    return {
        "git_sha": sha,
        "git_dirty": bool(status) if status is not None else True,
        "dut_build": file_build_id(build_dir(repo_root) / switch_binary),
        "host": socket.gethostname() or "unknown",
        "kernel": platform.release(),
        "python": platform.python_version(),
    }


# ---- validation ------------------------------------------------------------------------------

_validators: dict[int, jsonschema.protocols.Validator] = {}


def schema_path(version: int = SCHEMA_VERSION) -> Path:
    return SCHEMA_DIR / f"result-v{version}.json"


def schema(version: int = SCHEMA_VERSION) -> dict:
    return json.loads(schema_path(version).read_text())


def _record_version(record) -> int:
    """The schema a record is checked against: its own readable schema_version, else the
    current one (whose `const` then names the problem)."""
    v = record.get("schema_version") if isinstance(record, Mapping) else None
    return v if isinstance(v, int) and not isinstance(v, bool) and v in READABLE_VERSIONS \
        else SCHEMA_VERSION


def _get_validator(version: int = SCHEMA_VERSION):
    if version not in _validators:
        s = schema(version)
        cls = jsonschema.validators.validator_for(s)
        cls.check_schema(s)
        _validators[version] = cls(s)
    return _validators[version]


def _key_path(path: Iterable[Any]) -> str:
    parts = [str(p) for p in path]
    return ".".join(parts) if parts else "<record>"


def _non_finite(record: Mapping, prefix: str = "") -> list[str]:
    """Paths of NaN/inf floats anywhere in the record (the schema cannot see them)."""
    bad = []
    items = record.items() if isinstance(record, Mapping) else enumerate(record)
    for key, value in items:
        path = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, float) and not math.isfinite(value):
            bad.append(f"{path}: {value!r} is not allowed (JSON has no NaN/inf; use null for "
                       "'not measured')")
        elif isinstance(value, (Mapping, list, tuple)):
            bad.extend(_non_finite(value, path))
    return bad


def validation_errors(record: Mapping) -> list[str]:
    """Every problem of a record as 'key.path: message', sorted; [] when valid."""
    problems = _non_finite(record)
    if isinstance(record, Mapping) and isinstance(record.get("distributions"), Mapping):
        from distributions import problems as distribution_problems
        problems += distribution_problems(record["distributions"])
    for err in _get_validator(_record_version(record)).iter_errors(record):
        where = _key_path(err.absolute_path)
        if err.validator == "required":
            # jsonschema says "'x' is a required property" at the parent: name the key itself
            missing = err.message.split("'")[1] if "'" in err.message else err.message
            where = _key_path([*err.absolute_path, missing])
            problems.append(f"{where}: required key is missing")
        elif err.validator == "additionalProperties" and err.validator_value is False:
            problems.append(f"{where}: {err.message}")
        elif "propertyNames" in err.relative_schema_path:
            # the error sits at the parent object; the offending key is err.instance
            rule = (f"must match {err.validator_value!r}" if err.validator == "pattern"
                    else err.message)
            problems.append(f"{_key_path([*err.absolute_path, err.instance])}: bad key name, "
                            f"{rule}")
        else:
            problems.append(f"{where}: {err.message}")
    return sorted(set(problems))


def validate_record(record: Mapping) -> None:
    problems = validation_errors(record)
    if problems:
        who = f"{record.get('suite', '?')}/{record.get('name', '?')}" \
            if isinstance(record, Mapping) else "?"
        name = schema_path(_record_version(record)).name
        raise ResultRecordError(f"invalid result record {who} (schema {name}):\n  "
                                + "\n  ".join(problems))


# ---- writer and reader -----------------------------------------------------------------------

class ResultWriter:
    """Validates and appends records to <run_dir>/results.jsonl.

    base_provenance: the run's shared provenance (collect_provenance() plus profile,
    dut_switch_kind, generator, ... known at session start); per-record `provenance` overrides it.
    Times: end_time defaults to now; start_time defaults to end_time (pass the test's real start).
    """

    def __init__(self, run_dir: Path, base_provenance: Mapping | None = None,
                 run_id: str | None = None):
        self.run_dir = Path(run_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.path = self.run_dir / RESULTS_FILE
        self.base_provenance = dict(base_provenance or {})
        self.run_id = run_id if run_id is not None else (
            self.run_dir.name if self.run_dir.name.startswith(RUN_ID_PREFIX) else None)
        self._lock = threading.Lock()

    def build(self, suite: str, name: str, metrics: Mapping, params: Mapping | None = None,
              provenance: Mapping | None = None, **extra: Any) -> dict:
        """The record `write` would write (validated), without writing it."""
        prov = {**self.base_provenance, **(provenance or {})}
        prov.setdefault("end_time", utc_rfc3339())
        prov.setdefault("start_time", prov["end_time"])
        record: dict[str, Any] = {
            "schema_version": SCHEMA_VERSION,
            "suite": suite,
            "name": name,
            "metrics": dict(metrics) if isinstance(metrics, Mapping) else metrics,
            "params": dict(params or {}),
            "provenance": prov,
        }
        if self.run_id is not None:
            record["run_id"] = self.run_id
        record.update({k: v for k, v in extra.items() if v is not None})
        validate_record(record)
        return record

    def write(self, suite: str, name: str, metrics: Mapping, params: Mapping | None = None,
              provenance: Mapping | None = None, **extra: Any) -> dict:
        """Validate and append one record; returns it. Extra keys allowed by the schema:
        targets, target_misses, test_id, distributions (distributions/), search
        (drivers/trafficgen/mlr.py's MlrResult.search_record()). Raises
        ResultRecordError, writing nothing."""
        record = self.build(suite, name, metrics, params, provenance, **extra)
        line = (json.dumps(record, allow_nan=False, separators=(",", ":")) + "\n").encode()
        with self._lock:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, line)
            finally:
                os.close(fd)
        return record


def load_results(run_dir: Path, validate: bool = False,
                 errors: list[str] | None = None) -> list[dict]:
    """All records of a run in write order ([] if none). A corrupt line raises ValueError
    naming the file and line number, or, when an `errors` list is given, is skipped and its
    message appended there. validate=True also checks each record against the schema."""
    path = Path(run_dir) / RESULTS_FILE
    if not path.exists():
        return []
    records = []
    with path.open() as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                if not isinstance(record, dict):
                    raise ValueError("not a JSON object")
            except ValueError as e:
                problem = f"{path}:{lineno}: not a JSON record ({e})"
                if errors is None:
                    raise ValueError(problem) from None
                errors.append(problem)
                continue
            if validate:
                try:
                    validate_record(record)
                except ResultRecordError as e:
                    if errors is None:
                        raise ValueError(f"{path}:{lineno}: {e}") from None
                    errors.append(f"{path}:{lineno}: {e}")
                    continue
            records.append(record)
    return records
