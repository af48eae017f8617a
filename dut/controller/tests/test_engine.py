"""FIFO and prioritised engines with fake Packet-Out senders (no os-ken, no switch)."""
import os
import threading
import time

import pytest
from scapy.layers.inet import IP, TCP
from scapy.layers.l2 import Ether

from dut.controller import matching
from dut.controller.config import parse_config
from dut.controller.engine import _STOP, FifoEngine, PriorityEngine, TwoClassQueue
from dut.controller.timing import CompletionLog, parse_lines


def frame(ip_id, prec, payload=b"..ABCDEFGHIJ.." * 10):
    return bytes(Ether() / IP(tos=prec << 5, id=ip_id) / TCP() / payload)


class Sent:
    def __init__(self):
        self.lock = threading.Lock()
        self.items = []

    def __call__(self, data, in_port):
        with self.lock:
            self.items.append((data, in_port))


class SlowMatcher:
    """Sleeps (GIL released) so ordering is decided by the queues, not by the CPU."""

    def __init__(self, seconds):
        self.seconds = seconds

    def count(self, payload):
        time.sleep(self.seconds)
        return 1

    def close(self):
        pass


def _feed_and_drain(eng, frames, in_port, sent, timeout_s=30.0):
    """Hand every frame to the engine, wait (bounded) until as many Packet-Outs went out, stop."""
    try:
        for f in frames:
            eng.handle(f, in_port)
        deadline = time.monotonic() + timeout_s
        while len(sent.items) < len(frames) and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        eng.stop()


def test_fifo_handles_in_arrival_order_and_logs(tmp_path):
    log = tmp_path / "log.csv"
    cfg = parse_config({"patterns": ["ABCDEFGHIJ"], "completion_log": str(log)})
    sent = Sent()
    eng = FifoEngine(cfg, sent)
    frames = [frame(i, 5 if i % 2 else 0) for i in range(6)]
    for f in frames:
        eng.handle(f, 1)
    eng.stop()
    assert [d for d, _ in sent.items] == frames
    recs = parse_lines(log.read_text().splitlines())
    assert [r.ip_id for r in recs] == list(range(6))
    assert [r.klass for r in recs] == ["low", "high"] * 3
    assert {r.matches for r in recs} == {10}
    assert all(r.t_out_ns >= r.t_in_ns for r in recs)


def test_priority_pool_has_one_low_and_n_high_workers():
    cfg = parse_config({"patterns": ["x"], "high_workers": 4})
    eng = PriorityEngine(cfg, Sent())
    try:
        names = [t.name for t in eng.workers]
        assert sum(n.startswith("ofb-low") for n in names) == 1
        assert sum(n.startswith("ofb-high") for n in names) == 4
        assert all(t.is_alive() for t in eng.workers)
    finally:
        eng.stop()
    assert not any(t.is_alive() for t in eng.workers)


def test_priority_serves_late_high_packets_before_early_low_ones():
    """Low_High order: 20 low then 20 high. 4 high workers finish the highs long before the
    single low worker finishes the lows (FIFO would finish the lows first)."""
    cfg = parse_config({"patterns": ["x"], "high_workers": 4})
    log = CompletionLog(None)
    done = {}
    sent = Sent()

    def send(data, in_port):
        sent(data, in_port)
        done[data] = time.monotonic()

    eng = PriorityEngine(cfg, send, log=log, matcher=SlowMatcher(0.01))
    lows = [frame(i, 0) for i in range(20)]
    highs = [frame(100 + i, 5) for i in range(20)]
    _feed_and_drain(eng, lows + highs, 3, sent)
    assert len(sent.items) == 40
    assert max(done[f] for f in highs) < max(done[f] for f in lows)
    assert {p for _, p in sent.items} == {3}


def test_non_ip_packets_go_to_the_low_worker():
    cfg = parse_config({"patterns": ["x"], "high_workers": 2})
    sent = Sent()
    eng = PriorityEngine(cfg, sent)
    try:
        eng.handle(b"\xff" * 60, 1)
        deadline = time.monotonic() + 5
        while not sent.items and time.monotonic() < deadline:
            time.sleep(0.005)
    finally:
        eng.stop()
    assert eng.handled == {"high": 0, "low": 1}


def test_processes_mode_searches_in_search_processes(tmp_path):
    log = tmp_path / "log.csv"
    cfg = parse_config({"patterns": ["ABCDEFGHIJ"], "high_workers": 2,
                        "worker_mode": "processes", "low_worker_nice": 5,
                        "completion_log": str(log)})
    sent = Sent()
    eng = PriorityEngine(cfg, sent)
    procs = [sp.proc for sp in eng.search_procs]
    try:
        assert len(procs) == 3
        for i in range(10):
            eng.handle(frame(i, 5 if i < 5 else 0), 2)
        deadline = time.monotonic() + 10
        while len(sent.items) < 10 and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        eng.stop()
    assert len(sent.items) == 10
    assert {r.matches for r in parse_lines(log.read_text().splitlines())} == {10}
    assert all(p.poll() is not None for p in procs)  # no search process left behind


def _autogroup_nice(pid: int) -> int:
    # "/autogroup-123 nice -10"
    with open(f"/proc/{pid}/autogroup") as f:
        return int(f.read().split()[-1])


@pytest.mark.skipif(not os.path.exists("/proc/self/autogroup") or os.geteuid() != 0,
                    reason="needs kernel autogroups and root (a negative nice value)")
def test_search_processes_run_at_the_configured_nice_values_in_their_autogroups():
    cfg = parse_config({"patterns": ["ABCDEFGHIJ"], "high_workers": 2,
                        "worker_mode": "processes", "low_worker_nice": 19,
                        "high_worker_nice": -10})
    eng = PriorityEngine(cfg, Sent())
    try:
        low, *high = [sp.proc.pid for sp in eng.search_procs]  # plan: low first
        # Both: the process's own value (weighs inside its group) and its autogroup's (weighs
        # against every other session on the box; the process is a session leader).
        assert [os.getpriority(os.PRIO_PROCESS, p) for p in [low, *high]] == [19, -10, -10]
        assert [_autogroup_nice(p) for p in [low, *high]] == [19, -10, -10]
    finally:
        eng.stop()


def test_search_process_has_its_own_session_and_ends_when_its_pipe_closes():
    from dut.controller.engine import SearchProcess

    sp = SearchProcess("naive", (b"ABCDEFGHIJ",))
    try:
        assert sp.count(b"..ABCDEFGHIJ..ABCDEFGHIJ") == 2
        assert os.getsid(sp.proc.pid) == sp.proc.pid != os.getsid(0)
        sp.proc.stdin.close()  # what the controller's death does to the pipe
        assert sp.proc.wait(timeout=10) == 0
    finally:
        sp.close()


def test_processes_mode_with_bad_matcher_fails_at_start(monkeypatch, tmp_path):
    monkeypatch.setattr(matching, "_lib", None)
    monkeypatch.setenv("OFBENCH_BUILD_DIR", str(tmp_path))
    cfg = parse_config({"patterns": ["x"], "matcher": "aho_corasick",
                        "worker_mode": "processes"})
    with pytest.raises(matching.MatcherError, match="not found"):
        PriorityEngine(cfg, Sent())


def _get_within(q, klass, timeout_s=0.2):
    """q.get(klass) on a helper thread; the item, or None if it blocked past the timeout."""
    box = []
    t = threading.Thread(target=lambda: box.append(q.get(klass)), daemon=True)
    t.start()
    t.join(timeout_s)
    return box[0] if box else None


def test_strict_queue_holds_low_while_high_is_queued():
    q = TwoClassQueue(strict=True)
    q.put("low", "L1")
    q.put("high", "H1")
    box = []
    low = threading.Thread(target=lambda: box.append(q.get("low")), daemon=True)
    low.start()
    low.join(0.2)
    assert box == []                  # a high packet waits: low may not start
    assert q.get("high") == "H1"      # the high queue runs dry ...
    low.join(5)
    assert box == ["L1"]              # ... and that releases the waiting low worker


def test_independent_queues_serve_low_even_with_high_queued():
    q = TwoClassQueue(strict=False)
    q.put("high", "H1")
    q.put("low", "L1")
    assert _get_within(q, "low") == "L1"
    assert q.qsize("high") == 1


def test_strict_queue_lets_stop_through_and_keeps_order():
    q = TwoClassQueue(strict=True)
    q.put("high", "H1")
    q.put("low", _STOP)
    assert _get_within(q, "low") is _STOP  # stopping never waits for the high class
    q.put("low", "L1")
    q.put("low", "L2")
    assert q.get("high") == "H1"
    assert [q.get("low"), q.get("low")] == ["L1", "L2"]


def test_strict_priority_engine_finishes_highs_before_any_waiting_low():
    """Random mix of 30 low + 30 high queued at once: under strict priority no low packet
    starts while a high one waits. At most two lows end before the last high: one taken
    before the highs were queued, and one started when the high queue ran dry while the last
    highs were still being searched (strict priority does not preempt or wait for in-flight)."""
    cfg = parse_config({"patterns": ["x"], "high_workers": 2, "strict_priority": True})
    done, sent = {}, Sent()

    def send(data, in_port):
        sent(data, in_port)
        done[data] = time.monotonic()

    eng = PriorityEngine(cfg, send, log=CompletionLog(None), matcher=SlowMatcher(0.005))
    frames = [frame(i, 5 if i % 2 else 0) for i in range(60)]
    _feed_and_drain(eng, frames, 1, sent)
    assert len(sent.items) == 60
    last_high = max(done[f] for f in frames[1::2])
    assert sum(done[f] < last_high for f in frames[0::2]) <= 2
