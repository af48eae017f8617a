"""Document 000: ToS-prioritised os-ken controller vs the FIFO baseline (experiment.py).

Each test runs one *group*: a trace (order, pattern count) and a matcher, the FIFO baseline
with that matcher, then the prioritised app with each configuration, all in the same run, so
the ratios compare like with like. Records: ``<trace>_<P>pat_<N>thr_<matcher>[_proc]`` with
``high_ms``, ``low_ms``, ``fifo_high_ms``, ``fifo_low_ms``, ``high_ratio``, ``low_ratio`` (means
over repetitions; ``*_stdev`` the spread; ``recv_*_ms`` the receiver cross-check), and
``<trace>_<P>pat_fifo_<matcher>`` for the baseline. ``_proc`` = worker_mode processes (our
improvement: the search runs in one process per worker, so it uses every core); ``_strict`` =
strict priority on top (the low worker starts a packet only while no high packet is queued);
``_nice`` = OS priority on top of that: the high search processes run at nice -10 (HIGH_NICE),
so in the high window the high searches win the 2 cores from everything else on the box (the
lab's switch and hosts, the controller's intake of low Packet-Ins, the low search).
Repetitions are interleaved across configurations (experiment.Rig.run_interleaved).

  quick    Random, 20 patterns, aho_corasick, FIFO vs 2 high threads, 1 repetition.
  default  Random/20 naive, 5 repetitions as in the document: 1 and 8 threads, 8 processes
           plain, strict (the configuration for the issue's beat goal) and strict + nice, and
           FIFO + 8 processes strict with os-ken's own Packet-In intake (``_osken``; every
           other config uses the raw intake, see dut/controller/_app_base.py);
           Random/20 aho_corasick with 1 and 8 threads;
           High_Low/20 and Low_High/20 with naive, 8 threads; 3 repetitions.
  nightly  every trace x patterns 1/20/50 x both matchers x 1/2/4/8 threads (+ naive in
           processes mode, 1/2/4/8, and 8 processes strict, and strict + nice),
           5 repetitions.
Every group runs once per switch the rig supports (experiment.RIG_KINDS: ofbench, OVS
userspace) that the profile has (its switch and peers; with ``one_dut: true`` its switch only),
switch by switch; each record's provenance names its switch (``dut_switch_kind``, and for
ofbench ``dut_lookup``), so the same record name appears once per switch, side by side.
The last test draws the document's Figures 5-7 and Table 2 side by side with ours, per switch.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import pytest

from dut.controller.matching import make_matcher
from dut.controller.classify import parse_frame
from suites.controller import docfigs
from suites.controller.experiment import (RIG_KINDS, Config, Rig, make_trace, rig_skip_reason,
                                          summary_metrics, switch_rows)
from traces.pcap import read_pcap

# OS priority of the search processes in the ``_nice`` configs (config keys high_worker_nice
# and low_worker_nice; dut/controller/search_worker.set_nice applies them to the process and
# to its autogroup: each search process leads its own session, and CFS weighs a process's own
# nice only inside its autogroup, which is why an earlier trial with os.nice(-5) changed
# nothing). -10 is CFS weight 9548 against 1024 at nice 0. Measured on this box (Random/20,
# 8 processes strict, interleaved with FIFO): on a quiet host high_ratio 0.294 -> 0.270 (12
# reps each) and 0.291 -> 0.274 (10 reps); with the host noisier (FIFO's own time +-15 %) no
# gain, 0.294 -> 0.291 and 0.288 -> 0.298 (8 reps): it also starves the Packet-In path (OVS
# and the controller's intake, first to last Packet-In 40 -> 100-550 ms). So it is measured
# beside strict, not instead of it. The low process stays at 0: 19 measured the same (0.270)
# and would starve the low class whenever other jobs load the box.
HIGH_NICE, LOW_NICE = -10, 0

# The session collector's "controller" section holds, for the summary test:
#   ours:        switch kind -> (order, patterns, label, matcher) -> metrics
#   search_cost: (patterns, matcher) -> us per packet


@dataclass(frozen=True)
class Group:
    order: str
    patterns: int
    matcher: str
    threads: tuple[int, ...] = ()
    processes: tuple[int, ...] = ()
    strict_processes: tuple[int, ...] = ()   # processes mode + strict priority
    nice_processes: tuple[int, ...] = ()     # processes + strict + HIGH_NICE (LOW_NICE)
    reps: int = 3
    # Also run FIFO and these strict-priority process counts with os-ken's own Packet-In
    # intake (config packet_in_intake: osken), each against the FIFO of the same intake.
    osken_intake: tuple[int, ...] = ()

    @property
    def id(self) -> str:
        p = f"-proc{'_'.join(map(str, self.processes))}" if self.processes else ""
        sp = (f"-strict{'_'.join(map(str, self.strict_processes))}"
              if self.strict_processes else "")
        ni = (f"-nice{'_'.join(map(str, self.nice_processes))}" if self.nice_processes else "")
        ok = (f"-osken{'_'.join(map(str, self.osken_intake))}" if self.osken_intake else "")
        return (f"{self.order}-{self.patterns}pat-{self.matcher}-"
                f"thr{'_'.join(map(str, self.threads))}{p}{sp}{ni}{ok}-x{self.reps}")


QUICK = [Group("random", 20, "aho_corasick", threads=(2,), reps=1)]
DEFAULT = [
    Group("random", 20, "naive", threads=(1, 8), processes=(8,), strict_processes=(8,),
          nice_processes=(8,), osken_intake=(8,), reps=5),
    Group("random", 20, "aho_corasick", threads=(1, 8)),
    Group("high_low", 20, "naive", threads=(8,)),
    Group("low_high", 20, "naive", threads=(8,)),
]
NIGHTLY = [Group(o, p, m, threads=(1, 2, 4, 8),
                 processes=(1, 2, 4, 8) if m == "naive" else (),
                 strict_processes=(8,) if m == "naive" else (),
                 nice_processes=(8,) if m == "naive" else (), reps=5)
           for o in ("high_low", "low_high", "random") for p in (1, 20, 50)
           for m in ("naive", "aho_corasick")]


@pytest.fixture(scope="module", params=RIG_KINDS)
def rig(request, lab, profile):
    why = rig_skip_reason(request.param, profile)
    if why:
        pytest.skip(why)
    r = Rig(lab, request.param)
    try:
        yield r
    finally:
        r.close()


@pytest.fixture(scope="module")
def trace_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("c6traces")


def search_cost_us(pcap, meta, matcher: str, samples: int = 20) -> float:
    """Per-packet cost of the matcher alone on this trace's payloads (this process, 1 core)."""
    frames = read_pcap(pcap)[:samples]
    m = make_matcher(matcher, [p.encode() for p in meta["patterns"]])
    payloads = [f[parse_frame(f).payload_offset:] for f in frames]
    t0 = time.perf_counter()
    for p in payloads:
        m.count(p)
    dt = time.perf_counter() - t0
    m.close()
    return dt / len(payloads) * 1e6


def run_group(rig, trace_dir, results, collector, g: Group) -> None:
    OURS = collector.section("controller").setdefault("ours", {}).setdefault(rig.switch_kind, {})
    SEARCH_COST = collector.section("controller").setdefault("search_cost", {})
    pcap, meta = make_trace(g.order, g.patterns, trace_dir)
    cost = search_cost_us(pcap, meta, g.matcher)
    SEARCH_COST[(g.patterns, g.matcher)] = cost
    configs = [Config("priority", g.matcher, n) for n in g.threads]
    configs += [Config("priority", g.matcher, n, "processes", 0) for n in g.processes]
    configs += [Config("priority", g.matcher, n, "processes", 0, strict_priority=True)
                for n in g.strict_processes]
    configs += [Config("priority", g.matcher, n, "processes", LOW_NICE, strict_priority=True,
                       high_worker_nice=HIGH_NICE) for n in g.nice_processes]
    configs = [Config("fifo", g.matcher)] + configs
    if g.osken_intake:
        configs += [Config("fifo", g.matcher, intake="osken")]
        configs += [Config("priority", g.matcher, n, "processes", 0, strict_priority=True,
                           intake="osken") for n in g.osken_intake]
    outcomes = list(zip(configs, rig.run_interleaved(configs, pcap, meta, g.reps)))
    fifo_of = {c.intake: o for c, o in outcomes if c.app == "fifo"}  # baseline per intake
    problems = []
    for cfg, o in outcomes:
        m = summary_metrics(o, fifo_of[cfg.intake])
        m["search_us_per_packet"] = round(cost, 2)
        OURS[(g.order, g.patterns, cfg.short_label, g.matcher)] = m
        results.record(
            f"{g.order}_{g.patterns}pat_{cfg.label}", m,
            params={"trace": g.order, "patterns": g.patterns, "matcher": g.matcher,
                    "app": cfg.app, "high_workers": cfg.high_workers,
                    "worker_mode": cfg.worker_mode, "low_worker_nice": cfg.low_worker_nice,
                    "high_worker_nice": cfg.high_worker_nice,
                    "strict_priority": cfg.strict_priority, "packet_in_intake": cfg.intake,
                    "switch_kind": rig.switch_kind, "reps": g.reps, "send_pps": rig.send_pps, "packets": len(meta["classes"]),
                    # each repetition against FIFO's mean (their mean is high_ratio/low_ratio):
                    # the report draws the spread and calls a goal inside it inconclusive
                    **{f"{c}_ratio_reps": [round(v / m[f"fifo_{c}_ms"], 4)
                                           for v in o.values(f"{c}_ms")]
                       for c in ("high", "low") if m.get(f"fifo_{c}_ms")},
                    "trace_sha256": meta["pcap_sha256"]},
            provenance={**rig.provenance(),
                        "generator": "suites.controller.hosts (AF_PACKET)",
                        "generator_version": "1", "controller": "os-ken 4.2.2 native hub"})
        n = len(meta["classes"])
        if m["packet_ins_min"] < n:
            problems.append(f"{cfg.label}: only {m['packet_ins_min']} of {n} Packet-Ins "
                            f"(after {o.lost_reps} retried repetitions)")
        if not m["matches_ok"]:
            problems.append(f"{cfg.label}: match counts differ from the trace's expected ones")
        if m["received_min"] < n:
            problems.append(f"{cfg.label}: receiver got {m['received_min']} of {n}")
    rows = [{"config": c.short_label if c.app == "fifo" else c.label,
             **{k: OURS[(g.order, g.patterns, c.short_label, g.matcher)][k]
                for k in ("high_ms", "high_ms_stdev", "low_ms", "low_ms_stdev", "high_ratio",
                          "low_ratio", "recv_high_ms", "recv_low_ms", "intake_ms")}}
            for c, _ in outcomes]
    results.add_table(rows, f"{rig.switch_kind}: {g.order}, {g.patterns} patterns, {g.matcher}: "
                            f"completion "
                            f"times (ms, mean of {g.reps})")
    assert not problems, "; ".join(problems)


@pytest.mark.quick
@pytest.mark.features("netns")
@pytest.mark.parametrize("group", QUICK, ids=lambda g: g.id)
def test_quick(rig, trace_dir, results, collector, group):
    run_group(rig, trace_dir, results, collector, group)


@pytest.mark.features("netns")
@pytest.mark.parametrize("group", DEFAULT, ids=lambda g: g.id)
def test_default(rig, trace_dir, results, collector, group):
    run_group(rig, trace_dir, results, collector, group)


@pytest.mark.nightly
@pytest.mark.features("netns")
@pytest.mark.parametrize("group", NIGHTLY, ids=lambda g: g.id)
def test_nightly(rig, trace_dir, results, collector, group):
    run_group(rig, trace_dir, results, collector, group)


@pytest.mark.quick
@pytest.mark.summary
def test_document_comparison(results, collector):
    """Figures 5-7 and Table 2 of the document beside ours, from what this run measured."""
    by_switch = collector.section("controller").get("ours", {})
    SEARCH_COST = collector.section("controller").get("search_cost", {})
    if not any(by_switch.values()):
        pytest.skip("no controller group ran in this session")
    for kind, OURS in sorted(by_switch.items()):
        document_comparison(results, kind, OURS)
    if len(by_switch) > 1:
        rows = switch_rows(by_switch)
        if rows:
            results.add_table(rows, "the same configurations on each switch (ratios to the "
                                    "FIFO of the same switch)")
    if SEARCH_COST:
        results.add_table([{"patterns": p, "matcher": m, "search_us_per_packet": round(c, 1)}
                           for (p, m), c in sorted(SEARCH_COST.items())],
                          "payload search cost per 1448 B packet (one core, no contention)")


def document_comparison(results, kind: str, OURS: dict) -> None:
    matchers = sorted({k[3] for k in OURS})
    for matcher in matchers:
        for suffix in ("", "_proc", "_proc_strict", "_proc_strict_nice"):
            rows = docfigs.comparison_rows(OURS, matcher, suffix)
            if rows:
                results.add_table(rows, f"document 000 vs ofbench on {kind} ({matcher}{suffix})")
        for order in ("high_low", "low_high", "random"):
            if (order, 20, "fifo", matcher) in OURS:
                results.add_plot(docfigs.figure(order, 20, OURS, matcher),
                                 f"{docfigs.FIGURE[order]}: document vs ofbench on {kind} "
                                 f"({matcher})")
        for suffix, what in (("_proc", "processes"), ("_proc_strict", "processes, strict"),
                             ("_proc_strict_nice", "processes, strict, nice")):
            if ("random", 20, "8thr" + suffix, matcher) in OURS:
                results.add_plot(docfigs.figure("random", 20, OURS, matcher, suffix),
                                 f"Random: document vs ofbench on {kind} ({matcher}, {what})")
        if any(("random", p, "8thr", matcher) in OURS for p in (1, 50)):
            results.add_table(docfigs.table2_rows(OURS, matcher), f"Table 2 on {kind} ({matcher})")
