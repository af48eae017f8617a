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
    nice = Config("priority", "naive", 8, "processes", 19, strict_priority=True,
                  high_worker_nice=-10)
    assert nice.label == "8thr_naive_proc_strict_nice"


@pytest.mark.quick
def test_config_labels_name_the_os_ken_intake():
    assert Config("fifo", "naive", intake="osken").label == "fifo_naive_osken"
    assert Config("fifo", "naive", intake="osken").short_label == "fifo_osken"
    c = Config("priority", "naive", 8, "processes", strict_priority=True, intake="osken")
    assert c.label == "8thr_naive_proc_strict_osken"


@pytest.mark.quick
def test_cpu_accounting_reads_own_threads_and_children():
    import os
    import subprocess
    import sys

    from suites.controller.experiment import child_pids, process_cpu_ns

    t0 = process_cpu_ns(os.getpid())
    sum(i * i for i in range(200_000))  # burn a little CPU
    assert process_cpu_ns(os.getpid()) > t0 > 0
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(5)"])
    try:
        assert child.pid in child_pids(os.getpid())
    finally:
        child.kill()
        child.wait()
    assert process_cpu_ns(child.pid) == 0  # gone: counts nothing
    assert child_pids(child.pid) == []


@pytest.mark.quick
def test_the_rig_runs_on_ofbench_and_ovs_only():
    from suites.controller.experiment import RIG_KINDS, Rig
    assert RIG_KINDS == ("ofbench", "ovs")
    with pytest.raises(ValueError, match="runs on ofbench or ovs; got switch kind 'ovs-dpdk'"):
        Rig(object(), "ovs-dpdk")  # refused before anything is built


@pytest.mark.quick
def test_rig_kinds_follow_the_profile_and_one_dut():
    from dut.profiles.schema import parse_profile
    from suites.controller.experiment import rig_skip_reason
    base = {"schema_version": 1, "lab": {"kind": "local"}, "features": ["netns", "ovs"],
            "switch": {"kind": "ofbench"}, "peers": ["ovs"]}
    both = parse_profile(base, where="t.yaml")
    assert rig_skip_reason("ovs", both) is None
    one = parse_profile({**base, "one_dut": True}, where="t.yaml")
    assert "one_dut: true" in rig_skip_reason("ovs", one)
    alone = parse_profile({**base, "peers": []}, where="t.yaml")
    assert "not one the profile runs here (ofbench)" in rig_skip_reason("ovs", alone)


@pytest.mark.quick
def test_switch_rows_put_each_switch_beside_the_other():
    from suites.controller.experiment import switch_rows
    key = ("random", 20, "8thr", "naive")
    rows = switch_rows({"ofbench": {key: {"high_ratio": 0.5}, ("x", 1, "fifo", "naive"): {}},
                        "ovs": {key: {"high_ratio": 0.6}}})
    assert len(rows) == 1 and rows[0]["config"] == "8thr"
    assert rows[0]["ofbench high_ratio"] == 0.5 and rows[0]["ovs high_ratio"] == 0.6
