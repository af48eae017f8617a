"""The rig of the end-to-end NDR on one box (issue 44): its pure helpers, and the repeatability
bench: ofbench's NDR at 64 B searched 5 times in one run beside the generator's own loopback
ceiling measured in the same run, every trial with the rig's figures and its cause.

    flock /tmp/ofbench-bench.lock .venv/bin/python -m pytest suites/throughput/test_rig.py \
        --dut=local -k repeatability -s
    OFBENCH_RIG_WIRE=memif:14 (memif, 2^14-slot rings; default vhost, 1024 slots) and
    OFBENCH_RIG_HOUSEKEEPING=gen|switch|off (suites/throughput/rig.py) pick the rig.
"""
from __future__ import annotations

import contextlib
import os
import statistics
from types import SimpleNamespace

import pytest

from drivers.lab.base import is_remote
from drivers.softgen.driver import binary as softgen_binary
from drivers.trafficgen.base import make_measure
from drivers.trafficgen.counters import Counters, StreamCounters
from drivers.trafficgen.mlr import search_mlr

from . import rig as rig_setup
from . import topology
from .trials import _gen_ceiling, _search_log, _streams, _switch_reader, ceilings_of, mlr_config

REPEATS = 5


@pytest.mark.quick
def test_spread():
    assert rig_setup.spread([1.0, 1.1, 0.9, 1.0, 1.0]) == pytest.approx(0.2)
    assert rig_setup.spread([1.0]) is None and rig_setup.spread([0.0, 0.0]) is None


@pytest.mark.quick
def test_received_rate_uses_the_tx_window():
    c = Counters(streams={"s": StreamCounters("s", tx=1000, rx=900, tx_window_s=0.45)})
    assert rig_setup.received_rate_pps(c, 0.5) == pytest.approx(2000)
    c.streams["s"].tx_window_s = 0.0
    assert rig_setup.received_rate_pps(c, 0.5) == pytest.approx(1800)


@pytest.mark.quick
def test_trial_metrics_and_switch_rig_in_the_measurer():
    trials = [SimpleNamespace(passed=True, cause="ok", rig={"gen_max_gap_ns": 20e3, "switch_max_gap_ns": 61e3}),
              SimpleNamespace(passed=False, cause="rig stall", rig={"gen_max_gap_ns": 30e3,
                                                                   "switch_max_gap_ns": 3.9e6}),
              SimpleNamespace(passed=False, cause="DUT loss", rig={})]
    m = rig_setup.trial_metrics(trials)
    assert m["rig_switch_max_gap_us_max"] == pytest.approx(3900)
    assert m["rig_gen_max_gap_us_median"] == pytest.approx(25)
    assert m["failed_trials_rig_stall"] == 1 and m["failed_trials_dut_loss"] == 1

    def measure(d, r):
        return Counters(rig={"gen_max_gap_ns": 1.0})
    reads = iter([{"tsc_hz": 1e9, "workers": [{"gap_floor_cycles": 1000, "gap_hist": [0, 0],
                                               "backlog_hist": [0]}]},
                  {"tsc_hz": 1e9, "workers": [{"gap_floor_cycles": 1000, "gap_hist": [0, 2],
                                               "backlog_hist": [1]}]}])
    c = rig_setup.with_switch_rig(measure, lambda: next(reads), 4096)(1.0, 1e6)
    assert c.rig == {"gen_max_gap_ns": 1.0, "switch_max_gap_ns": 4000.0, "switch_max_gap_lo_ns": 2000.0,
                     "switch_stalls": 2.0, "switch_rx_backlog_pkts": 32.0, "ring_slots": 4096.0}


@pytest.mark.quick
def test_pinning_plan_keeps_the_pollers():
    threads = [(10, 10, "ofswitch"), (10, 11, "eal-intr-thread"), (10, 12, "ofs-agent"),
               (20, 20, "softgen"), (20, 21, "lcore-worker-1"), (30, 30, "python"),
               (40, 41, "rte-worker-1")]
    assert rig_setup.plan_pinning(threads, 1) == {11: {1}, 12: {1}, 20: {1}, 30: {1}}
    assert rig_setup.housekeeping_core("gen", 0, 1) == 1
    assert rig_setup.housekeeping_core("switch", 0, 1) == 0
    assert rig_setup.housekeeping_core("off", 0, 1) is None
    with pytest.raises(ValueError, match="OFBENCH_RIG_HOUSEKEEPING"):
        rig_setup.housekeeping_core("both", 0, 1)
    assert rig_setup.poller_nice_from_env("") is None and rig_setup.poller_nice_from_env("-20") == -20
    with pytest.raises(ValueError, match="OFBENCH_RIG_POLLER_NICE"):
        rig_setup.poller_nice_from_env("-21")


@pytest.mark.bench
@pytest.mark.local_lab
@pytest.mark.features("softgen")
@pytest.mark.skipif(not softgen_binary().exists(), reason=f"softgen not built ({softgen_binary()})")
@pytest.mark.parametrize("flows", [1, 1000], ids=["64b-1flows", "64b-1000flows"])
def test_ndr_repeatability(lab, profile, flows, results, progress):
    """ofbench's NDR at 64 B, REPEATS searches on one topology after one warm-up, beside the
    generator's loopback ceiling of this run: the spread, the ratio, each failed trial's cause."""
    kind = profile.switch["kind"]
    if kind != "ofbench" or is_remote(lab) or profile.generator["kind"] != "softgen":
        pytest.skip("the repeatability bench drives ofbench with softgen on a local lab")
    log = _search_log(lab)
    # the profile's rig section, OFBENCH_RIG_WIRE=<wire>[:<ring log2>] etc. override it
    rig = rig_setup.rig_settings(profile.section("rig"), os.environ)
    # the yardstick: the generator's loopback in its switch-run layout, this rig's ring size
    ceiling = _gen_ceiling(lab, lambda line: log(line, progress), rig.ring_log2 if rig.wire == "memif" else None)
    two_core = ceilings_of("softgen")[1]
    wire = rig.wire_label
    topo = topology.switch_p2p(lab, kind, flows, tag=f"rep{flows}", wire=rig.wire, ring_log2=rig.ring_log2)
    stack = contextlib.ExitStack()
    try:
        measure = rig_setup.with_switch_rig(
            make_measure(topo.gen, _streams(topo.tx_port, topo.rx_port, 64, flows), drain_s=0.1),
            _switch_reader(topo), topo.ring_slots)
        max_rate = min(topo.max_rate_pps, ceiling)
        choice, nice = rig.housekeeping, rig.poller_nice
        pin = rig_setup.pin_others(lab, rig_setup.housekeeping_core(choice, topology.SWITCH_CORE,
                                                                     topology.GEN_WORKER_CORE), nice,
                                   rig.switch_policy)
        stack.enter_context(pin)
        log(f"housekeeping threads: {choice} ({pin.moved} threads moved), pollers' nice {nice} "
            f"({pin.reniced} threads), switch policy {rig.switch_policy} ({len(pin.fifo)} threads)", progress)
        rig_setup.warm_up(measure, max_rate)
        # the search `make suites` runs (MLRsearch with the profile's goals), no latency trials
        cfg = mlr_config(profile, max_rate, False, latency_fractions=())
        ndrs, trials = [], []
        for i in range(REPEATS):
            r = search_mlr(measure, cfg, lambda line: log(f"{kind} 64B {flows} flows #{i + 1}: {line}",
                                                         progress))
            ndrs.append(r.ndr.rate_pps / 1e6)
            trials += r.trials
        med = statistics.median(ndrs)
        m = {"ndr_mpps_median": med, "ndr_mpps_min": min(ndrs), "ndr_mpps_max": max(ndrs),
             "search_max_mpps": max_rate / 1e6,
             "trials": float(len(trials)), "failed_trials": float(sum(not t.passed for t in trials)),
             **rig_setup.ceiling_metrics(med, ceiling, two_core)}
        sp = rig_setup.spread(ndrs)
        if sp is not None:
            m["ndr_spread"] = sp
        m.update(rig_setup.trial_metrics(trials))
        log(f"{kind} 64B {flows} flows over {wire} ({topo.ring_slots} slots), housekeeping {choice}: NDRs {', '.join(f'{x:.3f}' for x in ndrs)} Mpps, median {med:.3f}, "
            f"spread {sp if sp is None else round(sp, 3)}, ceiling same config {ceiling / 1e6:.2f} Mpps "
            f"(two cores {(two_core or 0) / 1e6:.2f}), "
            f"causes {rig_setup.cause_summary(t.cause for t in trials)}", progress)
        results.record(f"ndr_repeat_64b_{flows}flows", metrics=m,
                       params={"frame_size": 64, "flows": flows, "switch_kind": kind, "repeats": REPEATS,
                               "ndr_mpps": ndrs, "port_kind": topo.port_kind, "ring_slots": topo.ring_slots,
                               "housekeeping": choice, "wire": wire, "poller_nice": nice,
                               "search": "mlrsearch", "threads_moved": pin.moved,
                               "switch_policy": rig.switch_policy},
                       provenance={"generator": topo.gen.name, "generator_version": topo.gen.version,
                                   "port_kind": topo.port_kind, "dut_switch_kind": kind,
                                   **rig_setup.box_changes(pin, rig)},
                       check_targets_now=False)
    finally:
        stack.close()
        topo.close()


@pytest.mark.quick
def test_gap_probe_buckets():
    from .gap_probe import buckets_ms
    w = {"gap_floor_cycles": 1000, "gap_hist": [5, 0, 1]}
    before = {"tsc_hz": 1e6, "workers": [w]}
    after = {"tsc_hz": 1e6, "workers": [dict(w, gap_hist=[7, 0, 4])]}
    assert buckets_ms(before, after) == [(1.0, 2.0, 2), (4.0, 8.0, 3)]  # 1000 cycles at 1 MHz: 1 ms


@pytest.mark.quick
def test_rig_settings_from_profile_and_env():
    assert rig_setup.rig_settings(None, {}) == rig_setup.RigSettings("vhost", None, "off", None)
    sec = {"wire": "memif", "ring_log2": 14, "housekeeping": "gen", "poller_nice": -20}
    r = rig_setup.rig_settings(sec, {})
    assert (r.wire, r.ring_log2, r.housekeeping, r.poller_nice, r.wire_label) == \
        ("memif", 14, "gen", -20, "memif:14")
    env = {"OFBENCH_RIG_WIRE": "vhost:12", "OFBENCH_RIG_HOUSEKEEPING": "off", "OFBENCH_RIG_POLLER_NICE": "0"}
    assert rig_setup.rig_settings(sec, env) == rig_setup.RigSettings("vhost", 12, "off", 0)
    assert rig_setup.rig_settings(sec, {"OFBENCH_RIG_WIRE": "vhost"}).ring_log2 is None
    with pytest.raises(ValueError, match="OFBENCH_RIG_WIRE='tap'"):
        rig_setup.rig_settings(sec, {"OFBENCH_RIG_WIRE": "tap"})
    with pytest.raises(ValueError, match="OFBENCH_RIG_WIRE='memif:x'"):
        rig_setup.rig_settings(sec, {"OFBENCH_RIG_WIRE": "memif:x"})
    with pytest.raises(ValueError, match="ring_log2 15 out of range for memif"):
        rig_setup.rig_settings({"wire": "memif", "ring_log2": 15}, {})
    with pytest.raises(ValueError, match="OFBENCH_RIG_HOUSEKEEPING"):
        rig_setup.rig_settings(sec, {"OFBENCH_RIG_HOUSEKEEPING": "both"})


@pytest.mark.quick
def test_profile_rig_section_is_checked(tmp_path):
    import yaml

    from dut.profiles.schema import ProfileError, load_profile
    base = {"schema_version": 1, "lab": {"kind": "local"}, "switch": {"kind": "ofbench"}}
    p = tmp_path / "p.yaml"
    p.write_text(yaml.safe_dump({**base, "rig": {"wire": "memif", "ring_log2": 14, "housekeeping": "gen",
                                                 "poller_nice": -20}}))
    assert rig_setup.rig_settings(load_profile(str(p)).section("rig"), {}).wire_label == "memif:14"
    p.write_text(yaml.safe_dump({**base, "rig": {"wire": "tap"}}))
    with pytest.raises(ProfileError, match="wire"):
        load_profile(str(p))
    # the profiles this repository ships load
    from dut.profiles.schema import resolve_path
    for name in ("local", "local-trex"):
        rig_setup.rig_settings(load_profile(str(resolve_path(name))).section("rig"), {})


@pytest.mark.quick
def test_pin_others_leaves_a_remote_lab_alone():
    """A remote lab (lab-emu) has no local supervisor: nothing to pin, nothing raised."""
    with rig_setup.pin_others(SimpleNamespace(), None, None) as pin:
        assert pin.moved == 0 and pin.reniced == 0 and pin.fifo == []
    # what a record's provenance says the run changed: flat scalars (the record schema's rule)
    changes = rig_setup.box_changes(pin, rig_setup.RigSettings("memif", 14, "off", None))
    assert changes == {"rig_housekeeping_core": None, "rig_poller_nice": None, "rig_switch_policy": "other",
                       "rig_fifo_threads": 0, "rig_threads_moved": 0}


@pytest.mark.quick
def test_ceiling_metrics_judge_the_same_config():
    m = rig_setup.ceiling_metrics(17.75, 30e6, 63.66e6)
    assert m["ceiling_same_config_mpps"] == pytest.approx(30.0)
    assert m["ndr_vs_gen_ceiling"] == pytest.approx(17.75 / 30.0)
    assert m["ceiling_two_core_mpps"] == pytest.approx(63.66)
    assert m["ndr_vs_ceiling_two_core"] == pytest.approx(17.75 / 63.66)
    # TRex: its loopback is its switch run's server (same config); no two-core figure
    assert set(rig_setup.ceiling_metrics(3.2, 8e6)) == {"ceiling_same_config_mpps", "ndr_vs_gen_ceiling"}
    assert rig_setup.ceiling_metrics(1.0, None, 0.0) == {}


@pytest.mark.quick
def test_same_config_loopback_is_the_switch_runs_generator(monkeypatch, tmp_path):
    """One softgen process, its worker on the generator's core, p0 a memif server and p1 a
    client of the same socket file (another spelling) with the switch run's ring size."""
    started = []

    def start_softgen(lab, name, ports, lcores=(0, 1), netns=None, mem_mb=128):
        started.append((ports, lcores))
        return SimpleNamespace(managed=name)
    monkeypatch.setattr(topology, "start_softgen", start_softgen)
    monkeypatch.setattr(topology, "Softgen", lambda insts: SimpleNamespace(instances=insts, close=lambda: None))
    monkeypatch.setattr(topology, "wait_links_up", lambda gen, t: True)
    stopped = []
    lab = SimpleNamespace(sock_path=lambda n: str(tmp_path / n),
                          supervisor=SimpleNamespace(stop=stopped.append))
    topo = topology.same_config_loopback(lab, tag="x", ring_log2=14)
    (ports, lcores), = started
    assert lcores == (topology.SWITCH_CORE, topology.GEN_WORKER_CORE)
    assert (topo.tx_port, topo.rx_port, topo.ring_slots) == ("p0", "p1", 16384)
    kv = [dict(x.split("=", 1) for x in p.devargs.split(",")[1:]) for p in ports]
    assert [k["role"] for k in kv] == ["server", "client"] and kv[1]["rsize"] == "14"
    assert kv[0]["socket"] != kv[1]["socket"]
    assert os.path.normpath(kv[0]["socket"]) == os.path.normpath(kv[1]["socket"])
    topo.close()
    assert stopped == ["x-gen"]


@pytest.mark.quick
def test_switch_policy_fifo_is_checked():
    sec = {"wire": "memif", "ring_log2": 14, "housekeeping": "gen", "poller_nice": -20}
    assert rig_setup.rig_settings(sec, {}).switch_policy == "other"
    assert rig_setup.rig_settings({**sec, "switch_policy": "fifo"}, {}).switch_policy == "fifo"
    assert rig_setup.rig_settings(sec, {"OFBENCH_RIG_SWITCH_POLICY": "fifo"}).switch_policy == "fifo"
    with pytest.raises(ValueError, match="OFBENCH_RIG_SWITCH_POLICY='rr'"):
        rig_setup.rig_settings(sec, {"OFBENCH_RIG_SWITCH_POLICY": "rr"})
    # the run's other threads must not wait behind a FIFO poller on its core
    with pytest.raises(ValueError, match="needs housekeeping gen"):
        rig_setup.rig_settings({**sec, "housekeeping": "switch", "switch_policy": "fifo"}, {})
    # RT throttling off: a FIFO poller would own its core for good
    assert rig_setup.fifo_refusal("950000\n") is None
    assert "no RT throttling" in rig_setup.fifo_refusal("-1\n")
    assert "unreadable" in rig_setup.fifo_refusal("")
    # only the switch's pollers, never the generator's worker or the switch's agent
    assert rig_setup.is_switch_poller("ofswitch", 10, 10, "ofswitch")
    assert rig_setup.is_switch_poller("ofswitch", 10, 13, "lcore-worker-1")
    assert not rig_setup.is_switch_poller("ofswitch", 10, 12, "ofs-agent")
    assert not rig_setup.is_switch_poller("softgen", 20, 21, "rte-worker-1")


_TRACE = """# tracer: nop
        ofswitch-10      [000] d..2. 100.000000: sched_switch: prev_comm=ofswitch prev_pid=10 prev_prio=100 prev_state=R ==> next_comm=kdamond.0 next_pid=77 next_prio=120
       kdamond.0-77      [000] d..2. 100.003000: sched_switch: prev_comm=kdamond.0 prev_pid=77 prev_prio=120 prev_state=R ==> next_comm=python next_pid=5 next_prio=120
          python-5       [000] d..2. 100.004000: sched_switch: prev_comm=python prev_pid=5 prev_prio=120 prev_state=S ==> next_comm=ofswitch next_pid=10 next_prio=100
        ofswitch-10      [000] ..s.. 100.100000: softirq_entry: vec=1 [action=TIMER]
        ofswitch-10      [000] ..s.. 100.100200: softirq_exit: vec=1 [action=TIMER]
        ofswitch-10      [000] d..2. 100.500000: sched_switch: prev_comm=ofswitch prev_pid=10 prev_prio=100 prev_state=R ==> next_comm=kworker/0:1 next_pid=30 next_prio=120
     kworker/0:1-30      [000] d..2. 100.500100: sched_switch: prev_comm=kworker/0:1 prev_pid=30 prev_prio=120 prev_state=I ==> next_comm=ofswitch next_pid=10 next_prio=100
    rte-worker-1-21      [001] d..2. 100.600000: sched_switch: prev_comm=rte-worker-1 prev_pid=21 prev_prio=100 prev_state=R ==> next_comm=swapper/1 next_pid=0 next_prio=120
"""


@pytest.mark.quick
def test_sched_trace_names_what_took_the_pollers_core():
    from .sched_trace import irq_runs, off_core, parse, poller_of, run_times, summary
    ev = parse(_TRACE.splitlines())
    assert len(ev) == 8  # the header is skipped
    times = run_times(ev)
    assert poller_of(times[0]) == "ofswitch-10"
    offs = off_core(ev, 0, "ofswitch-10")
    assert [round(o.length_s * 1e3, 3) for o in offs] == [4.0, 0.1]
    assert offs[0].prev_state == "R"
    assert {k: round(v * 1e3, 3) for k, v in offs[0].ran.items()} == {"kdamond.0-77": 3.0, "python-5": 1.0}
    (length, what, _), = irq_runs(ev, 0)
    assert what == "softirq vec=1 [action=TIMER]" and length == pytest.approx(200e-6)
    text = summary(ev, min_gap_s=1e-3)
    assert "poller ofswitch-10" in text and ">= 1.0 ms: 1" in text and "kdamond.0-77 3.0 (1)" in text


def _fake_tracefs(root):
    from .sched_trace import EVENTS
    root.mkdir()
    for n, v in (("tracing_cpumask", "3"), ("buffer_size_kb", "1408"), ("tracing_on", "0"), ("trace", "")):
        (root / n).write_text(v)
    for ev in EVENTS:
        (root / "events" / ev).mkdir(parents=True)
        (root / "events" / ev / "enable").write_text("0")
    return root


@pytest.mark.quick
def test_sched_trace_puts_the_box_back_on_error_and_after_sigkill(tmp_path):
    import json

    from .sched_trace import EVENTS, cleanup_stale, tracing
    tfs, state = _fake_tracefs(tmp_path / "tracing"), tmp_path / "run" / "sched_trace.json"
    with pytest.raises(RuntimeError, match="boom"):
        with tracing("1", 4096, tracefs=tfs, state_file=state):
            assert (tfs / "tracing_cpumask").read_text() == "1"
            assert all((tfs / "events" / ev / "enable").read_text() == "1" for ev in EVENTS)
            assert json.loads(state.read_text())["saved"] == {"tracing_cpumask": "3", "buffer_size_kb": "1408"}
            raise RuntimeError("boom")
    assert (tfs / "tracing_cpumask").read_text() == "3" and (tfs / "buffer_size_kb").read_text() == "1408"
    assert all((tfs / "events" / ev / "enable").read_text() == "0" for ev in EVENTS)
    assert not state.exists()
    # a trace killed by SIGKILL: its state file stays; a live owner's is left alone, a dead
    # owner's is restored and removed
    (tfs / "tracing_cpumask").write_text("1")
    (tfs / "tracing_on").write_text("1")
    state.write_text(json.dumps({"pid": 123, "start_time": 1, "mounted": False,
                                 "saved": {"tracing_cpumask": "3", "buffer_size_kb": "1408"}}))
    assert not cleanup_stale(state, tfs, alive=lambda pid, st: True) and state.exists()
    assert cleanup_stale(state, tfs, alive=lambda pid, st: False)
    assert (tfs / "tracing_cpumask").read_text() == "3" and (tfs / "tracing_on").read_text() == "0"
    assert not state.exists() and not cleanup_stale(state, tfs)


@pytest.mark.quick
def test_lab_same_config_loopback_runs_on_the_generator_host(monkeypatch, tmp_path):
    """lab-emu (any remote lab): the yardstick is softgen's same-config loopback started on the
    profile's generator host through the Lab protocol with the generator's cores; it bounds
    the search and is measured once per run; a generator host that cannot say why."""
    import copy

    from drivers.softgen import driver as softgen_driver
    from dut.profiles.schema import load_profile, resolve_path

    from . import trials
    profile = load_profile(str(resolve_path("lab-emu")))
    started, stopped, asked = [], [], []
    gen_host = SimpleNamespace(sock_path=lambda n: tmp_path / n, stop=stopped.append)
    lab = SimpleNamespace(kind="remote", role_of=lambda section: {"generator": "generator"}[section],
                          host=lambda role: {"generator": gen_host}[role])

    def start_on_host(host, name, ports, lcores, **kw):
        started.append((host, ports, lcores))
        return SimpleNamespace(managed=name)
    monkeypatch.setattr(softgen_driver, "start_on_host", start_on_host)
    monkeypatch.setattr(topology, "Softgen", lambda insts: SimpleNamespace(instances=insts, close=lambda: None))
    monkeypatch.setattr(topology, "wait_links_up", lambda gen, t: True)

    def ceiling(gen, tx, rx, ask_pps):
        asked.append((tx, rx, ask_pps))
        return 9e6, [8e6, 9e6, 10e6]
    monkeypatch.setattr(rig_setup, "generator_ceiling_pps", ceiling)
    monkeypatch.setattr(trials, "_CEILING", {})
    assert trials._lab_ceiling(lab, profile, lambda line: None) == (9e6, None)
    (host, ports, lcores), = started
    assert host is gen_host and lcores == (0, 1)          # generator.cores "0,1"
    kv = [dict(x.split("=", 1) for x in p.devargs.split(",")[1:]) for p in ports]
    assert [k["role"] for k in kv] == ["server", "client"] and "rsize" not in kv[1]
    assert os.path.normpath(kv[0]["socket"]) == os.path.normpath(kv[1]["socket"])
    assert asked == [("p0", "p1", topology.TX_ASK_PPS)] and stopped == ["ceils-gen"]
    # the search's bound: the links' 20 Mpps or the ceiling, whichever is lower; measured once
    topo = SimpleNamespace(switch_kind="ofbench", max_rate_pps=20e6)
    assert trials._search_max_rate(lab, profile, topo, lambda line: None) == 9e6
    assert len(started) == 1
    # the links' ring size is the loopback's
    p2 = copy.deepcopy(profile)
    p2.generator["ports"]["t0"]["devargs"] += ",rsize=14"
    assert topology.links_ring_log2(p2) == 14
    # a generator host that cannot: the record says why, the bound stays the links'
    p3 = copy.deepcopy(profile)
    p3.generator["kind"] = "trex"
    ceil, why = trials._lab_ceiling(lab, p3, lambda line: None)
    assert ceil is None and "generator.kind 'trex'" in why
    p4 = copy.deepcopy(profile)
    p4.generator["ports"]["t0"] = {"pci": "0000:03:00.0"}
    assert "not memif" in topology.links_same_config_unavailable(p4)
