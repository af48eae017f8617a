"""The packet-handling engines behind the two os-ken apps (no os-ken import here).

  FifoEngine      the conventional Ryu controller of document 000: the thread that delivers
                  the Packet-In does everything in arrival order (parse, search, Packet-Out).
  PriorityEngine  the document's proposal: the delivering thread only parses and classifies
                  (classify.py) and enqueues in one of two ``queue.Queue``s; a pool started once
                  at construction (1 low worker + N high workers) searches and sends.

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
             pure-Python search runs on every core. ``low_worker_nice`` lowers the OS priority
             of the low worker's process, so high work wins the cores when both are queued.
"""
from __future__ import annotations

import queue
import struct
import subprocess
import sys
import threading
import time
from typing import Callable

from dut.controller.classify import HIGH, LOW, parse_frame, precedence_class
from dut.controller.config import ControllerConfig
from dut.controller.matching import REPO_ROOT, make_matcher
from dut.controller.timing import CompletionLog, PacketRecord

SendFn = Callable[[bytes, int], None]
_STOP = object()


class SearchProcess:
    """One search process speaking a length-prefixed protocol on its stdin/stdout.

    Request: u32 length + payload bytes. Reply: u64 match count. Used by one thread only.
    """

    def __init__(self, matcher: str, patterns: tuple[bytes, ...], nice: int = 0):
        argv = [sys.executable, "-m", "dut.controller.search_worker", "--matcher", matcher,
                "--patterns-hex", ",".join(p.hex() for p in patterns), "--nice", str(nice)]
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     bufsize=0, cwd=REPO_ROOT)
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


class PriorityEngine(_Base):
    """Classify and enqueue on the calling thread; 1 low + N high workers do the rest."""

    def __init__(self, cfg, send, clock=time.time_ns, log=None, matcher=None):
        super().__init__(cfg, send, clock, log)
        self.queues = {HIGH: queue.Queue(), LOW: queue.Queue()}
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
                    nice = cfg.low_worker_nice if klass == LOW else 0
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
        self.queues[klass].put((data, in_port, info, klass, t_in))

    def _work(self, klass: str, count) -> None:
        q = self.queues[klass]
        while True:
            item = q.get()
            if item is _STOP:
                return
            data, in_port, info, k, t_in = item
            matches = count(data[info.payload_offset:])
            self._finish(data, in_port, info.ip_id, k, t_in, matches)

    def stop(self) -> None:
        for t in self.workers:
            self.queues[HIGH if t.name.startswith("ofb-high") else LOW].put(_STOP)
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
