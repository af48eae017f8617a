"""Pure helpers of the controller experiment (no lab needed)."""
import pytest

from suites.controller.experiment import Config, LogTail


@pytest.mark.quick
def test_log_tail_returns_only_new_complete_lines(tmp_path):
    log = tmp_path / "log.csv"
    log.write_text("header\na,1\n")
    tail = LogTail(log, len("header\n"))
    assert tail.new_lines() == ["a,1"]
    with open(log, "a") as f:
        f.write("b,2\nc,")  # a writer in the middle of a line
    assert tail.new_lines() == ["b,2"]
    with open(log, "a") as f:
        f.write("3\n")
    assert tail.new_lines() == ["c,3"]
    assert tail.new_lines() == []


@pytest.mark.quick
def test_log_tail_of_a_missing_file_is_empty(tmp_path):
    assert LogTail(tmp_path / "nope", 0).new_lines() == []


@pytest.mark.quick
def test_config_labels_name_mode_and_policy():
    assert Config("fifo", "naive").label == "fifo_naive"
    assert Config("priority", "naive", 8).short_label == "8thr"
    assert Config("priority", "naive", 8, "processes").label == "8thr_naive_proc"
    strict = Config("priority", "naive", 8, "processes", strict_priority=True)
    assert strict.label == "8thr_naive_proc_strict"
    assert strict.short_label == "8thr_proc_strict"
