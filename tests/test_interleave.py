"""suites/interleave.py: the turn-taking driver with a recording stand-in for the supervisor."""
import pytest

from suites.interleave import by_turns, running


class RecordingSupervisor:
    def __init__(self):
        self.calls = []

    def pause(self, p):
        self.calls.append(("pause", p))

    def resume(self, p):
        self.calls.append(("resume", p))


def test_by_turns_resumes_one_side_per_window_and_pauses_it_after():
    sup = RecordingSupervisor()
    seen = []

    def measure(label):
        seen.append((label, list(sup.calls)))
        return label.upper()

    pairs = []
    out = by_turns(sup, {"a": ["a1", "a2"], "b": ["b1"]}, 2, 0.0, measure,
                   lambda i, order, so_far: pairs.append((i, order)))
    assert out == {"a": ["A", "A"], "b": ["B", "B"]}
    assert pairs == [(0, ("a", "b")), (1, ("b", "a"))]
    assert [label for label, _ in seen] == ["a", "b", "b", "a"]
    # while "a" measured for the first time, only its processes had been resumed
    assert seen[0][1] == [("resume", "a1"), ("resume", "a2")]
    assert sup.calls[-2:] == [("pause", "a1"), ("pause", "a2")]


def test_running_pauses_again_when_the_block_raises():
    sup = RecordingSupervisor()
    with pytest.raises(RuntimeError):
        with running(sup, ["x"]):
            raise RuntimeError("boom")
    assert sup.calls == [("resume", "x"), ("pause", "x")]
