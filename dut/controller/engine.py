"""The packet-handling engines behind the two os-ken apps (no os-ken import here).

  FifoEngine      the conventional Ryu controller of document 000: the thread that delivers
                  the Packet-In does everything in arrival order (parse, search, Packet-Out).
  PriorityEngine  the document's proposal: the delivering thread only parses and classifies
                  (classify.py) and enqueues in one of two queues (TwoClassQueue); a pool
                  started once at construction (1 low worker + N high workers) searches and
                  sends.

The engines take a ``send(data, in_port)`` callable that emits the Packet-Out and a ``clock``
returning ns (default ``time.time_ns``), so tests drive them with fakes.

Concurrency: ``handle()`` is called by one thread (os-ken's event loop of the app). ``send`` is
called from the worker threads concurrently (the app serialises it with a lock). ``stop()``
is called once, from any thread, and joins the workers.

Worker modes (config ``worker_mode``):
  threads    the document's design. With the pure-Python ``naive`` matcher the search holds the
             GIL, so the N+1 workers time-share one core (the GIL is handed over every 5 ms
             switch interval): the high class gets ~N/(N+1) of the CPU, which is where the
             document's 0.58x comes from. With a GIL-releasing matcher (``naive_c``,
             ``aho_corasick``) the searches of different workers really run in parallel.
  processes  each worker thread hands its search to its own search process
             (search_worker.py) and waits for the count with the GIL released, so even the
             pure-Python search runs on every core. ``high_worker_nice`` / ``low_worker_nice``
             set the OS priority of the high / low workers' processes (search_worker.set_nice:
             the process and its autogroup), e.g. -10 so that the high searches win the cores
             from everything else on the box while high packets wait.

Queue policy (config ``strict_priority``):
  false  the document's design: the two queues are served independently, so the low worker
         competes for the CPU with the high workers all the time (with 8 high search
         processes on 2 cores it got its 1/9 share: 48-75 low packets before the 500th high).
  true   strict priority: the low worker takes a low packet only while the high queue is
         empty (a packet it already took is finished, nothing is preempted). Work-conserving:
         when no high packet waits, low runs at once.
"""
from __future__ import annotations

import collections
import struct
import subprocess
import sys
import threading
import time
from typing import Callable

from dut.controller.classify import HIGH, LOW, parse_frame, precedence_class
from dut.controller.config import ControllerConfig
from dut.controller.matching import make_matcher
from dut.controller.timing import CompletionLog, PacketRecord
from paths import REPO

SendFn = Callable[[bytes, int], None]
_STOP = object()


class SearchProcess:
    """One search process speaking a length-prefixed protocol on its stdin/stdout.

    Request: u32 length + payload bytes. Reply: u64 match count. Used by one thread only.
    The process runs in a session of its own and ends at EOF on its stdin.
    """

    def __init__(self, matcher: str, patterns: tuple[bytes, ...], nice: int = 0):
        argv = [sys.executable, "-m", "dut.controller.search_worker", "--matcher", matcher,
                "--patterns-hex", ",".join(p.hex() for p in patterns), "--nice", str(nice)]
        # Own session, hence own scheduler autogroup (Debian kernels group CFS by session):
        # inside the controller's session all 1+N search processes would share one group's
        # CPU share against every other session (OVS, the hosts, other jobs), so 8 search
        # processes got no more CPU than one busy process elsewhere. Measured on 2 cores,
        # Random/20, 8 processes, strict: high 736 -> 610 ms with its own session.
        # Cleanup does not need the session: the process ends at EOF on stdin, which also
        # happens when the controller dies (killed or not).
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     bufsize=0, cwd=REPO, start_new_session=True)
        hello = self._read(8)  # the worker answers 0 once its matcher is built
        if struct.unpack("<Q", hello)[0] != 0:
            raise RuntimeError("search worker failed to start")

    def _read(self, n: int) -> bytes:
        buf = b""
        while len(buf) < n:
            chunk = self.proc.stdout.read(n - len(buf))
            if not chunk:
                raise RuntimeError(f"search worker exited (rc={self.proc.poll()})")
            buf += chunk
        return buf

    def count(self, payload: bytes) -> int:
        self.proc.stdin.write(struct.pack("<I", len(payload)) + bytes(payload))
        return struct.unpack("<Q", self._read(8))[0]

    def close(self) -> None:
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class _Base:
    def __init__(self, cfg: ControllerConfig, send: SendFn, clock=time.time_ns,
                 log: CompletionLog | None = None):
        self.cfg = cfg
        self.send = send
        self.clock = clock
        self.log = log or CompletionLog(cfg.completion_log)
        self.handled = {HIGH: 0, LOW: 0}

    def _finish(self, data: bytes, in_port: int, ip_id: int | None, klass: str,
                t_in_ns: int, matches: int) -> None:
        self.send(data, in_port)
        t_out = self.clock()
        self.handled[klass] += 1  # only an approximate counter under threads (not a metric)
        self.log.write(PacketRecord(-1 if ip_id is None else ip_id, klass, t_in_ns, t_out,
                                    matches))


class FifoEngine(_Base):
    """Everything on the calling thread, in arrival order."""

    def __init__(self, cfg, send, clock=time.time_ns, log=None, matcher=None):
        super().__init__(cfg, send, clock, log)
        self.matcher = matcher or make_matcher(cfg.matcher, cfg.patterns)

    def handle(self, data: bytes, in_port: int) -> None:
        t_in = self.clock()
        info = parse_frame(data)
        klass = precedence_class(info.precedence, self.cfg.high_precedence_min)
        matches = self.matcher.count(data[info.payload_offset:])
        self._finish(data, in_port, info.ip_id, klass, t_in, matches)

    def stop(self) -> None:
        self.matcher.close()
        self.log.close()


class TwoClassQueue:
    """The high and the low queue behind one lock, so a policy can look at both.

    ``put`` from any thread; ``get(klass)`` blocks until an item of that class may be taken:
    a high item whenever one is queued; a low item when one is queued and, under
    ``strict``, no high item is queued. ``_STOP`` items are always taken at once.
    """

    def __init__(self, strict: bool):
        self.strict = strict
        self._lock = threading.Lock()
        self._items = {HIGH: collections.deque(), LOW: collections.deque()}
        self._ready = {HIGH: threading.Condition(self._lock), LOW: threading.Condition(self._lock)}

    def _low_may_run(self) -> bool:
        low = self._items[LOW]
        return bool(low) and (not self.strict or not self._items[HIGH] or low[0] is _STOP)

    def put(self, klass: str, item) -> None:
        with self._lock:
            self._items[klass].append(item)
            self._ready[klass].notify()

    def get(self, klass: str):
        with self._lock:
            if klass == HIGH:
                items = self._items[HIGH]
                self._ready[HIGH].wait_for(lambda: items)
                item = items.popleft()
                if not items and self._items[LOW]:
                    self._ready[LOW].notify()  # the high queue just ran dry: low may go
                return item
            self._ready[LOW].wait_for(self._low_may_run)
            return self._items[LOW].popleft()

    def qsize(self, klass: str) -> int:
        with self._lock:
            return len(self._items[klass])


class PriorityEngine(_Base):
    """Classify and enqueue on the calling thread; 1 low + N high workers do the rest."""

    def __init__(self, cfg, send, clock=time.time_ns, log=None, matcher=None):
        super().__init__(cfg, send, clock, log)
        self.queue = TwoClassQueue(cfg.strict_priority)
        self.matcher = None
        if matcher is not None:  # tests inject one (threads mode only)
            self.matcher = matcher
        elif cfg.worker_mode == "threads":
            self.matcher = make_matcher(cfg.matcher, cfg.patterns)  # shared: read-only
        else:
            make_matcher(cfg.matcher, cfg.patterns).close()  # fail here, not in a worker
        self.workers: list[threading.Thread] = []
        self.search_procs: list[SearchProcess] = []
        plan = [LOW] + [HIGH] * cfg.high_workers
        try:
            for i, klass in enumerate(plan):
                count = self.matcher.count if self.matcher else None
                if count is None:
                    nice = cfg.low_worker_nice if klass == LOW else cfg.high_worker_nice
                    sp = SearchProcess(cfg.matcher, cfg.patterns, nice)
                    self.search_procs.append(sp)
                    count = sp.count
                t = threading.Thread(target=self._work, args=(klass, count),
                                     name=f"ofb-{klass}-{i}", daemon=True)
                self.workers.append(t)
        except Exception:
            self._close_procs()
            raise
        for t in self.workers:
            t.start()

    def handle(self, data: bytes, in_port: int) -> None:
        t_in = self.clock()
        info = parse_frame(data)
        klass = precedence_class(info.precedence, self.cfg.high_precedence_min)
        self.queue.put(klass, (data, in_port, info, klass, t_in))

    def _work(self, klass: str, count) -> None:
        while True:
            item = self.queue.get(klass)
            if item is _STOP:
                return
            data, in_port, info, k, t_in = item
            matches = count(data[info.payload_offset:])
            self._finish(data, in_port, info.ip_id, k, t_in, matches)

    def stop(self) -> None:
        for t in self.workers:
            self.queue.put(HIGH if t.name.startswith("ofb-high") else LOW, _STOP)
        for t in self.workers:
            t.join(timeout=10)
        self._close_procs()
        if self.matcher:
            self.matcher.close()
        self.log.close()

    def _close_procs(self) -> None:
        for sp in self.search_procs:
            sp.close()
        self.search_procs = []
