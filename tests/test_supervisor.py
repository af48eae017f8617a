import signal
import sys
import time

import pytest

from drivers.supervisor import ProcessStartError, Supervisor, proc_start_time


@pytest.fixture
def sup(tmp_path):
    s = Supervisor(tmp_path / "state", tmp_path / "logs")
    yield s
    s.stop_all()


def test_start_waits_for_ready_logs_and_stops(sup, tmp_path):
    flag = tmp_path / "ready"
    p = sup.start("sleeper", [sys.executable, "-c",
                              f"import time,pathlib; print('hello', flush=True); time.sleep(0.3); "
                              f"pathlib.Path('{flag}').touch(); time.sleep(60)"],
                  ready=flag.exists, ready_timeout_s=10)
    assert p.alive() and flag.exists()
    assert "hello" in p.log_path.read_text()
    assert (tmp_path / "state" / "pids.jsonl").read_text().count('"sleeper"') == 1
    sup.stop(p)
    assert not p.alive()


def test_process_that_dies_before_ready_raises_with_log_tail(sup):
    with pytest.raises(ProcessStartError, match=r"(?s)exited with code 3.*boom"):
        sup.start("dies", [sys.executable, "-c", "print('boom'); raise SystemExit(3)"],
                  ready=lambda: False, ready_timeout_s=10)


def test_not_ready_in_time_is_stopped(sup):
    with pytest.raises(ProcessStartError, match="not ready after"):
        sup.start("slow", [sys.executable, "-c", "import time; time.sleep(60)"],
                  ready=lambda: False, ready_timeout_s=0.5)
    assert sup.procs == []


def test_stop_all_kills_the_process_group_and_ignores_sigterm_holdouts(sup):
    # A child that ignores SIGTERM, forked by a shell: both must be gone after stop_all.
    p = sup.start("stubborn", ["sh", "-c", f"{sys.executable} -c \"import signal,time; "
                               f"signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)\" "
                               f"& wait"], stop_signal=signal.SIGTERM)
    time.sleep(0.5)
    sup.stop_all(timeout_s=1)
    time.sleep(0.2)
    assert not p.alive()
    assert proc_start_time(p.pid) is None


def test_duplicate_name_refused(sup):
    sup.start("one", [sys.executable, "-c", "import time; time.sleep(60)"])
    with pytest.raises(ValueError, match="already running"):
        sup.start("one", [sys.executable, "-c", "import time; time.sleep(60)"])


def _state(pid: int) -> str:
    # /proc/<pid>/stat: "pid (comm) S ...", the state after the last ')'
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0]


def test_pause_stops_the_group_resume_continues_and_stop_ends_a_paused_one(sup, tmp_path):
    ticks = tmp_path / "ticks"
    p = sup.start("ticker", [sys.executable, "-c",
                             f"import time\nwhile True:\n open('{ticks}','a').write('.'); "
                             f"time.sleep(0.02)"], ready=ticks.exists, ready_timeout_s=10)
    sup.pause(p)
    time.sleep(0.1)
    assert _state(p.pid) == "T"
    n = len(ticks.read_text())
    time.sleep(0.3)
    assert len(ticks.read_text()) == n, "a paused process kept running"
    sup.resume(p)
    deadline = time.monotonic() + 5
    while len(ticks.read_text()) == n and time.monotonic() < deadline:
        time.sleep(0.02)
    assert len(ticks.read_text()) > n, "resume did not continue the process"
    sup.pause(p)
    t0 = time.monotonic()
    sup.stop(p, timeout_s=3)   # the stop signal reaches a paused process at once
    assert not p.alive() and time.monotonic() - t0 < 2.5
