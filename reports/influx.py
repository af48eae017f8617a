"""Export result records to InfluxDB, spooling to disk whenever it cannot take them.

Goal: nothing lost, nothing duplicated, and a run never fails because InfluxDB is away.

- One record -> one point: measurement = suite; tags = name, profile, dut_switch_kind,
  generator, port_kind, git_sha, and testbed_id, pool, place where the run has them (from
  provenance); fields = metrics (numbers as float so a
  metric never changes field type, bools as bool, null skipped) plus the string field run_id;
  time = provenance end_time in ns. Re-sending a record therefore overwrites the same point:
  a retried write is idempotent, which is what makes "replay until acknowledged" safe.
- `export(records)` first replays the spool, then writes; when InfluxDB is unreachable or answers
  with anything but success or "bad data", the records are appended to the destination's spool
  <spool_dir>/influx-spool-<destination key>.jsonl (one record per line, fsync'ed) with a
  warning that names the file. Order is kept: while the spool is not empty, new records go
  behind it. Records not acknowledged are spooled in a `finally`: a Ctrl-C (or any exception)
  during a send keeps them (SIGINT/SIGTERM are held off while the spool is written).
- One spool per destination: the key is a hash of the URL without its credentials (scheme,
  host, port, path) and the bucket, so records spooled for the nightly's server are never
  replayed into a developer's `--influx-url=local`. A server whose URL changes from run to
  run (the local influxd takes a free port each time) is named by a stable `destination`
  instead (the harness passes "local"), so its spool is replayed by the next local run. No credential is in the file's name or
  content; <spool>.dest.json beside it says, for a person, where it goes (URL without
  credentials, bucket). A pre-destination `influx-spool.jsonl` is left alone (its destination
  is unknown) with a warning.
- An append always starts on a fresh line: a torn last line (a writer killed mid-write) is
  ended first, so it cannot swallow the next record (it becomes one corrupt line, or a whole
  record again when only its newline was missing).
- After a failure, `export` spools directly (no network) for retry_after_s seconds, so a dead
  server costs one timeout per outage, not one per record; the warning comes once per outage.
- `replay_spool()` sends the spool in batches and removes a batch from the file (atomic
  rewrite: tmp + fsync + rename) only after InfluxDB acknowledged it.
- Records InfluxDB refuses as bad data (HTTP 400, e.g. a field type conflict) would block the
  spool forever; they go to <spool_dir>/influx-rejected.jsonl with the server's reason, and a
  warning. Lines of the spool that are not JSON (a torn write after a power cut) go to
  <spool_dir>/influx-corrupt.jsonl once: the spool is rewritten without them at once, so they
  are not warned about again on every export.

Concurrency: every spool access holds an exclusive flock on <spool_dir>/.influx-spool.lock,
so two processes exporting to the same spool dir serialise. One InfluxExporter per thread.

InfluxDB 1.8 conventions: token "-" (or "user:pass"), org "-", bucket "<db>/autogen".
"""
from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import fcntl
import hashlib
import json
import logging
import os
import signal
import threading
import time
import urllib.parse
import warnings
from pathlib import Path
from typing import Iterable, Iterator, Mapping, Sequence

log = logging.getLogger("ofbench.reports.influx")

LEGACY_SPOOL_FILE = "influx-spool.jsonl"   # before spools were per destination: never replayed
REJECTED_FILE = "influx-rejected.jsonl"
CORRUPT_FILE = "influx-corrupt.jsonl"
LOCK_FILE = ".influx-spool.lock"
TAG_KEYS = ("profile", "dut_switch_kind", "generator", "port_kind", "git_sha",  # + name
            "testbed_id", "pool", "place")   # the testbed (drivers/lab/fingerprint.py, lease.py)
BATCH_RECORDS = 1000
DEFAULT_TIMEOUT_MS = 5000
# After InfluxDB was unreachable, exports spool without trying the network for this long, so a
# run against a black-holed server does not pay a connect timeout per record.
DEFAULT_RETRY_AFTER_S = 30.0


class InfluxSpoolWarning(UserWarning):
    """Records were spooled (or rejected) instead of reaching InfluxDB."""


class InfluxUnavailable(Exception):
    """InfluxDB could not take the write now; retry later (spool)."""


class InfluxRejected(Exception):
    """InfluxDB refused the data itself; retrying will not help."""


# ---- pure conversion -------------------------------------------------------------------------

def rfc3339_to_ns(text: str) -> int:
    """'2024-05-01T02:03:04.123456789Z' -> ns since the epoch, exact (no float rounding)."""
    if not text.endswith("Z"):
        raise ValueError(f"time {text!r} is not RFC 3339 UTC with a Z suffix")
    main, _, frac = text[:-1].partition(".")
    if frac and not (frac.isascii() and frac.isdigit()):
        raise ValueError(f"time {text!r}: bad fraction")
    base = dt.datetime.strptime(main, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=dt.timezone.utc)
    seconds = int((base - dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)).total_seconds())
    return seconds * 1_000_000_000 + int((frac + "000000000")[:9] if frac else 0)


def record_to_point_parts(record: Mapping) -> tuple[str, dict, dict, int]:
    """(measurement, tags, fields, time_ns) of a result record; see the module docstring."""
    prov = record.get("provenance", {})
    tags = {"name": str(record["name"])}
    for key in TAG_KEYS:
        value = prov.get(key)
        if value not in (None, ""):
            tags[key] = str(value)
    fields: dict[str, float | bool | str] = {}
    for key, value in record.get("metrics", {}).items():
        if value is None:
            continue
        fields[key] = value if isinstance(value, bool) else float(value)
    # always one field, so a record whose metrics are all null is still a (visible) point
    fields["run_id"] = str(record.get("run_id") or "unknown")
    return str(record["suite"]), tags, fields, rfc3339_to_ns(prov["end_time"])


def check_url(url: str) -> str | None:
    """Why `url` cannot be an InfluxDB address, or None when it looks usable.
    Checked before any connection so a typo never triggers a DNS lookup or a hang."""
    try:
        parts = urllib.parse.urlsplit(url)
        parts.port  # noqa: B018 - raises on a bad port
    except ValueError as e:
        return f"unparsable URL {url!r}: {e}"
    if parts.scheme not in ("http", "https"):
        return f"URL {url!r} must start with http:// or https://"
    if not parts.hostname:
        return f"URL {url!r} has no host"
    return None


def public_url(url: str) -> str:
    """`url` without credentials, query or fragment (what may be logged, shown or stored):
    'http://u:p@h:8086/x?p=1' -> 'http://h:8086/x'."""
    try:
        parts = urllib.parse.urlsplit(url)
        host = parts.hostname or ""
        if ":" in host:
            host = f"[{host}]"
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "<unparsable URL>"
    return urllib.parse.urlunsplit((parts.scheme, host + port, parts.path.rstrip("/"), "", ""))


def destination_key(url: str, bucket: str) -> str:
    """A file-name-safe key of one destination (URL without credentials + bucket)."""
    ident = json.dumps([public_url(url).lower(), bucket])
    return hashlib.sha256(ident.encode()).hexdigest()[:16]


# ---- spool file ------------------------------------------------------------------------------

@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """Hold SIGINT/SIGTERM off (delivered right after) while the spool is written, so a second
    Ctrl-C cannot cut the record that the first one is being saved for. Main thread only (where
    Python runs signal handlers); elsewhere a no-op."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)

def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _append_jsonl(path: Path, objs: Iterable[Mapping]) -> int:
    """Append one line per object, starting on a fresh line: a torn last line (no newline, a
    writer killed mid-write) is ended first so it cannot swallow the first new record."""
    lines = [json.dumps(o, separators=(",", ":"), allow_nan=False) + "\n" for o in objs]
    if not lines:
        return 0
    data = "".join(lines)
    with open(path, "a+b") as f:
        if f.seek(0, os.SEEK_END) > 0:
            f.seek(-1, os.SEEK_END)
            if f.read(1) != b"\n":
                data = "\n" + data
        f.write(data.encode("utf-8"))   # O_APPEND: at the end whatever the position
        f.flush()
        os.fsync(f.fileno())
    return len(lines)


def _rewrite_jsonl(path: Path, objs: Sequence[Mapping]) -> None:
    """Replace `path` by exactly `objs` (deleted when empty), crash-safe."""
    if not objs:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        _fsync_dir(path.parent)
        return
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        for o in objs:
            f.write(json.dumps(o, separators=(",", ":"), allow_nan=False) + "\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    _fsync_dir(path.parent)


@dataclasses.dataclass
class ExportResult:
    sent: int = 0          # new records acknowledged by InfluxDB
    replayed: int = 0      # spooled records acknowledged by InfluxDB
    spooled: int = 0       # new records put in the spool
    rejected: int = 0      # records InfluxDB refused as bad data (kept in the rejected file)
    spool_path: Path | None = None
    error: str | None = None


class InfluxExporter:
    """Writes records to one InfluxDB bucket; spools what it cannot write. See module doc."""

    def __init__(self, url: str, token: str = "-", org: str = "-", bucket: str = "ofbench/autogen",
                 spool_dir: Path = Path("reports/spool"), timeout_ms: int = DEFAULT_TIMEOUT_MS,
                 retry_after_s: float = DEFAULT_RETRY_AFTER_S, clock=time.monotonic,
                 destination: str | None = None):
        self.url, self.token, self.org, self.bucket = url, token, org, bucket
        self.public_url = public_url(url)   # for messages: never credentials
        self.spool_dir = Path(spool_dir)
        self.spool_dir.mkdir(parents=True, exist_ok=True)
        # a stable name for a server whose URL changes (see the module doc), else its URL
        self.destination = destination
        key = destination_key(destination if destination else url, bucket)
        self.spool_path = self.spool_dir / f"influx-spool-{key}.jsonl"
        self._dest_path = self.spool_dir / f"influx-spool-{key}.dest.json"
        self.rejected_path = self.spool_dir / REJECTED_FILE
        self.corrupt_path = self.spool_dir / CORRUPT_FILE
        self.timeout_ms = timeout_ms
        self.retry_after_s = retry_after_s
        self._clock = clock
        self._down_until: float | None = None   # clock() before which we do not try
        self._down_reason: str | None = None
        self._warned_outage = False
        self._client = None
        self._write_api = None
        legacy = self.spool_dir / LEGACY_SPOOL_FILE
        if legacy.exists():
            log.warning("%s holds records of an older ofbench whose destination is unknown: "
                        "not replayed anywhere. To send them to %s (bucket %s), append it to %s",
                        legacy, self.public_url, self.bucket, self.spool_path)

    # ---- client ----
    def _api(self):
        if self._write_api is None:
            problem = check_url(self.url)
            if problem:
                raise InfluxUnavailable(problem.replace(self.url, self.public_url))
            from influxdb_client import InfluxDBClient
            from influxdb_client.client.write_api import SYNCHRONOUS
            # No retries in the client: a failed write is spooled and retried next time.
            self._client = InfluxDBClient(url=self.url, token=self.token, org=self.org,
                                          timeout=self.timeout_ms, retries=False)
            self._write_api = self._client.write_api(write_options=SYNCHRONOUS)
        return self._write_api

    def close(self) -> None:
        if self._client is not None:
            with contextlib.suppress(Exception):
                self._write_api.close()
                self._client.close()
        self._client = self._write_api = None

    def __enter__(self) -> "InfluxExporter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _send(self, records: Sequence[Mapping]) -> None:
        """Write records; raises InfluxUnavailable or InfluxRejected."""
        from influxdb_client import Point, WritePrecision
        from influxdb_client.rest import ApiException
        points = []
        for rec in records:
            measurement, tags, fields, t_ns = record_to_point_parts(rec)
            p = Point(measurement)
            for k, v in tags.items():
                p = p.tag(k, v)
            for k, v in fields.items():
                p = p.field(k, v)
            points.append(p.time(t_ns, WritePrecision.NS))
        try:
            api = self._api()
            api.write(bucket=self.bucket, org=self.org, record=points,
                      write_precision=WritePrecision.NS)
        except InfluxUnavailable as e:
            self._mark_down(str(e))
            raise
        except ApiException as e:
            reason = (f"HTTP {e.status} from {self.public_url}: "
                      f"{(e.body or e.reason or '')!s}")[:500]
            if e.status == 400:
                raise InfluxRejected(reason) from None
            self._mark_down(reason)
            raise InfluxUnavailable(reason) from None
        except Exception as e:  # connection refused, timeout, DNS, TLS, ... -> retry later
            self.close()  # a fresh connection next time
            reason = f"{type(e).__name__}: {e}".replace(self.url, self.public_url)[:500]
            self._mark_down(reason)
            raise InfluxUnavailable(reason) from None
        self._down_until = self._down_reason = None
        self._warned_outage = False

    def _mark_down(self, reason: str) -> None:
        self._down_until = self._clock() + self.retry_after_s
        self._down_reason = reason

    def backing_off(self) -> bool:
        """True while a recent failure says not to try the network yet."""
        return self._down_until is not None and self._clock() < self._down_until

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        with open(self.spool_dir / LOCK_FILE, "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _read_spool(self) -> list[dict]:
        try:
            lines = self.spool_path.read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            return []
        records, corrupt = [], []
        for line in lines:
            if not line.strip():
                continue
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                corrupt.append({"line": line})
        if corrupt:  # moved once: the spool is rewritten without them right away
            _append_jsonl(self.corrupt_path, corrupt)
            _rewrite_jsonl(self.spool_path, records)
            self._warn(f"{len(corrupt)} unreadable spool line(s) moved to {self.corrupt_path}")
        return records

    def _spool(self, records: Sequence[Mapping]) -> int:
        """Append to this destination's spool (signals held off); say where it goes."""
        with _signals_held():
            if not self._dest_path.exists():
                tmp = self._dest_path.with_name(self._dest_path.name + ".tmp")
                dest = {"url": self.public_url, "bucket": self.bucket}
                if self.destination:
                    dest["destination"] = self.destination
                tmp.write_text(json.dumps(dest) + "\n")
                os.replace(tmp, self._dest_path)
            return _append_jsonl(self.spool_path, records)

    def _warn(self, message: str) -> None:
        log.warning(message)
        warnings.warn(message, InfluxSpoolWarning, stacklevel=3)

    def _reject(self, records: Sequence[Mapping], reason: str) -> None:
        _append_jsonl(self.rejected_path, ({"reason": reason, "record": r} for r in records))
        self._warn(f"InfluxDB refused {len(records)} record(s) as bad data ({reason}); kept in "
                   f"{self.rejected_path}, not retried")

    # ---- public ----
    def spooled_count(self) -> int:
        with self._locked():
            return len(self._read_spool())

    def _send_isolating_rejects(self, batch: Sequence[Mapping], result: ExportResult) -> int:
        """Send a batch; if InfluxDB refuses it as bad data, send its records one by one so
        only the bad ones are rejected (re-sending the good ones is idempotent). Returns how
        many were acknowledged; raises InfluxUnavailable."""
        try:
            self._send(batch)
            return len(batch)
        except InfluxRejected as e:
            if len(batch) == 1:
                self._reject(batch, str(e))
                result.rejected += 1
                return 0
        return sum(self._send_isolating_rejects([rec], result) for rec in batch)

    def _replay_locked(self, result: ExportResult) -> None:
        pending = self._read_spool()
        while pending:
            batch = pending[:BATCH_RECORDS]
            try:
                result.replayed += self._send_isolating_rejects(batch, result)
            except InfluxUnavailable as e:
                result.error = str(e)
                return
            pending = pending[len(batch):]
            _rewrite_jsonl(self.spool_path, pending)

    def replay_spool(self, respect_backoff: bool = False) -> ExportResult:
        """Send spooled records oldest first; remove each batch only once acknowledged.
        Stops at the first batch InfluxDB cannot take (the rest stays, in order). Called
        explicitly it always tries; export() respects the back-off after a failure."""
        result = ExportResult(spool_path=self.spool_path)
        if respect_backoff and self.backing_off():
            result.error = f"still backing off after: {self._down_reason}"
            return result
        with self._locked():
            self._replay_locked(result)
        if result.replayed:
            log.info("replayed %d spooled record(s) to %s", result.replayed, self.public_url)
        return result

    def export(self, records: Iterable[Mapping]) -> ExportResult:
        """Replay the spool, then write `records`; spool them if InfluxDB cannot take them.
        Never raises for InfluxDB trouble (a run must not fail on it); see ExportResult."""
        records = list(records)
        for rec in records:  # a bad record is our bug: fail loudly, before anything is sent
            record_to_point_parts(rec)
        result = ExportResult(spool_path=self.spool_path)
        with self._locked():  # one lock for replay + write: order stays oldest first
            pending = records   # not yet acknowledged: spooled in the finally, whatever happens
            try:
                if self.backing_off():
                    result.error = f"still backing off after: {self._down_reason}"
                else:
                    self._replay_locked(result)
                if result.error is None:
                    for start in range(0, len(records), BATCH_RECORDS):
                        batch = records[start:start + BATCH_RECORDS]
                        try:
                            result.sent += self._send_isolating_rejects(batch, result)
                        except InfluxUnavailable as e:
                            result.error = str(e)
                            break
                        pending = records[start + len(batch):]
            finally:
                # a batch in flight when interrupted may have arrived too: re-sending it later
                # overwrites the same points (see the module doc), so spooling it is safe
                if pending:
                    result.spooled = self._spool(pending)
            if not pending:
                return result
        if result.replayed:
            log.info("replayed %d spooled record(s) to %s", result.replayed, self.public_url)
        message = (f"InfluxDB at {self.public_url} unavailable ({result.error}); {result.spooled} "
                   f"record(s) spooled to {self.spool_path}, replayed on the next export")
        if self._warned_outage:  # once per outage is enough on the terminal
            log.info(message)
        else:
            self._warned_outage = True
            self._warn(message)
        return result
