"""suites/interleave.py: the turn-taking driver with a recording stand-in for the supervisor."""
import pytest

from suites.interleave import by_turns, interleaved_order, running


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


def test_interleaved_order_runs_more_sides_forward_then_backward():
    assert interleaved_order(3, ("a", "b", "c")) == [("a", "b", "c"), ("c", "b", "a"),
                                                      ("a", "b", "c")]


def test_by_turns_resumes_a_shared_process_with_each_of_its_sides():
    sup = RecordingSupervisor()
    out = by_turns(sup, {"sw/vh": ["sw", "g1"], "sw/k": ["sw", "g2"]}, 1, 0.0, lambda label: label)
    assert out == {"sw/vh": ["sw/vh"], "sw/k": ["sw/k"]}
    assert sup.calls == [("resume", "sw"), ("resume", "g1"), ("pause", "sw"), ("pause", "g1"),
                         ("resume", "sw"), ("resume", "g2"), ("pause", "sw"), ("pause", "g2")]
