"""harness/reporting.py: the run's local influxd is stopped on every way a session ends."""
import pytest

from harness.reporting import _StopInfluxd


class FakeServer:
    stopped = 0

    def stop(self):
        self.stopped += 1


@pytest.mark.parametrize("error", [None, RuntimeError("trend failed"), KeyboardInterrupt()])
def test_the_local_influxd_is_stopped_whatever_the_session_finish_raises(error):
    srv = FakeServer()
    gen = _StopInfluxd(srv).pytest_sessionfinish(session=None, exitstatus=0)
    next(gen)
    if error is None:
        with pytest.raises(StopIteration):
            gen.send(None)
    else:
        with pytest.raises(type(error)):
            gen.throw(error)
    assert srv.stopped == 1


def test_the_local_influxd_is_stopped_at_unconfigure_too():
    """pytest calls no sessionfinish when sessionstart raised after the server started."""
    srv = FakeServer()
    _StopInfluxd(srv).pytest_unconfigure(config=None)
    assert srv.stopped == 1
