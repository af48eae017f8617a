"""Completion-time bookkeeping of document 000 (pure functions + a small thread-safe log).

The document's metric, per class: time from the *receipt of the trace's first Packet-In* to the
*sending of that class's 500th Packet-Out*, both timestamped inside the controller.

The apps write one CSV line per handled packet to ``completion_log``::

    ip_id,class,t_in_ns,t_out_ns,matches

``t_in_ns`` is taken when the app's Packet-In handler starts, ``t_out_ns`` right after
``send_msg`` of the Packet-Out returns. Clock: ``time.time_ns()`` (CLOCK_REALTIME) so the
receiver's kernel timestamps (SO_TIMESTAMPNS, also realtime) are on the same clock for the
cross-check; a run lasts seconds, so clock steps are not a practical concern.

The suite reads the lines a repetition added and calls :func:`completion_ms`.
"""
from __future__ import annotations

import collections
import threading
from dataclasses import dataclass
from typing import Iterable

from dut.controller.classify import CLASSES

HEADER = "ip_id,class,t_in_ns,t_out_ns,matches"


@dataclass(frozen=True)
class PacketRecord:
    ip_id: int
    klass: str
    t_in_ns: int
    t_out_ns: int
    matches: int

    def line(self) -> str:
        return f"{self.ip_id},{self.klass},{self.t_in_ns},{self.t_out_ns},{self.matches}"


def parse_line(line: str) -> PacketRecord:
    ip_id, klass, t_in, t_out, matches = line.strip().split(",")
    if klass not in CLASSES:
        raise ValueError(f"bad class {klass!r} in completion log line {line!r}")
    return PacketRecord(int(ip_id), klass, int(t_in), int(t_out), int(matches))


def parse_lines(lines: Iterable[str]) -> list[PacketRecord]:
    return [parse_line(ln) for ln in lines if ln.strip() and not ln.startswith("ip_id")]


@dataclass(frozen=True)
class Completion:
    """Per class: ms from the first Packet-In to the Nth Packet-Out (None if fewer than N)."""

    ms: dict[str, float | None]
    counts: dict[str, int]
    t0_ns: int | None


def completion_ms(records: Iterable[PacketRecord], per_class: int = 500) -> Completion:
    """The document's metric from one repetition's records.

    t0 is the earliest ``t_in_ns`` of all records (the receipt of the first Packet-In); a class's
    time is its ``per_class``-th Packet-Out in sending order. A class with fewer records (lost
    Packet-Ins) gets None, and ``counts`` says how many there were.
    """
    recs = list(records)
    if not recs:
        return Completion({k: None for k in CLASSES}, {k: 0 for k in CLASSES}, None)
    t0 = min(r.t_in_ns for r in recs)
    ms: dict[str, float | None] = {}
    counts: dict[str, int] = {}
    for k in CLASSES:
        outs = sorted(r.t_out_ns for r in recs if r.klass == k)
        counts[k] = len(outs)
        ms[k] = (outs[per_class - 1] - t0) / 1e6 if len(outs) >= per_class else None
    return Completion(ms, counts, t0)


def intake_ms(records: Iterable[PacketRecord]) -> float | None:
    """ms from the first to the last Packet-In reaching the app's handler (``t_in_ns``): how
    long the controller took to take in the whole burst. None for no records."""
    t_in = [r.t_in_ns for r in records]
    return (max(t_in) - min(t_in)) / 1e6 if t_in else None


def arrival_ms(arrivals_ns: dict[str, list[int]], t0_ns: int, per_class: int = 500
               ) -> dict[str, float | None]:
    """Cross-check: ms from t0 to the arrival of each class's ``per_class``-th packet at the
    receiver (arrival timestamps per class, any order)."""
    out: dict[str, float | None] = {}
    for k in CLASSES:
        ts = sorted(arrivals_ns.get(k, []))
        out[k] = (ts[per_class - 1] - t0_ns) / 1e6 if len(ts) >= per_class else None
    return out


def ratio(value: float | None, baseline: float | None) -> float | None:
    if value is None or not baseline:
        return None
    return value / baseline


class CompletionLog:
    """Append-only CSV of PacketRecords; ``write`` is safe from any number of threads.

    Lines are kept in memory (a deque: append and popleft are atomic) and written by a flusher
    thread every ``flush_s`` (and at ``close``). Why not a line-buffered file: a write() per
    packet releases the GIL on the thread that handles the packet, and in the prioritised app
    (``worker_mode: threads``) 9 workers wait for it, so every packet became a GIL hand-over to
    another thread on the other core (a cold cache for the interpreter). The suite tails the
    file and waits for the lines, so ``flush_s`` only delays when it sees them.
    """

    FLUSH_S = 0.02

    def __init__(self, path: str | None, flush_s: float = FLUSH_S):
        self._lock = threading.Lock()  # the file: the flusher and close
        self._lines: collections.deque[str] = collections.deque()
        self._f = None
        self._flush_s = flush_s
        self._stop = threading.Event()
        self._flusher = None
        if path:
            self._f = open(path, "a")
            if self._f.tell() == 0:
                self._f.write(HEADER + "\n")
                self._f.flush()
            self._flusher = threading.Thread(target=self._flush_loop, name="ofb-log-flush",
                                             daemon=True)
            self._flusher.start()

    def write(self, rec: PacketRecord) -> None:
        if self._f is not None:
            self._lines.append(rec.line())

    def _flush_loop(self) -> None:
        while not self._stop.wait(self._flush_s):
            self.flush()

    def flush(self) -> None:
        """Write every line written so far to the file."""
        with self._lock:
            if self._f is None or not self._lines:
                return
            out = []
            try:
                while True:
                    out.append(self._lines.popleft())
            except IndexError:
                pass
            self._f.write("\n".join(out) + "\n")
            self._f.flush()

    def close(self) -> None:
        self._stop.set()
        if self._flusher is not None and self._flusher is not threading.current_thread():
            self._flusher.join()
        self.flush()
        with self._lock:
            if self._f is not None:
                self._f.close()
                self._f = None
