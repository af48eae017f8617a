"""RFC 2544 throughput (NDR/PDR), latency and back-to-back over fast wires, per switch kind.

Order in the file is the order of the run: generator loopback sanity (nothing else is worth
running if the generator's own counters are wrong), generator benchmarks, then the switch
matrix (peers first, the profile's switch last, so its record can carry ratios against the
peers measured in the same run, which is what `local` targets are stated in), then the plot.

The switch matrix runs on the profile's generator: softgen, or a real TRex v3.08 server started
by the lab when generator.kind is trex and generator.server is local (dut/profiles/local-trex.yaml,
ofbench switch over memif; the vhost-user peers cannot be driven by TRex). On a remote lab
(e.g. --dut=lab-emu, over SSH) it runs the profile's switch over the profile's links: generator
on the generator host, switch on the switch host, flows from the controller host
(drivers/lab/links.py); peers are measured on a local lab. Every trial's generator counters
are cross-checked with the switch's port counters.  The generator loopbacks and benchmarks are softgen's own (they need the softgen feature).

Default run: 64 B x {1, 1k} flows with short trials; --nightly: every RFC 2544 size and IMIX x
{1, 1k, 100k} flows; `-m quick`: the loopback sanity and one short NDR search on it.
"""
from __future__ import annotations

import os
import re
import statistics
import time

import pytest

from drivers.lab.base import is_remote
from drivers.softgen.driver import VERSION as SOFTGEN_VERSION
from drivers.softgen.driver import binary as softgen_binary
from drivers.trafficgen.base import make_measure
from drivers.trafficgen.frames import RFC2544_SIZES
from drivers.trafficgen.model import Stream
from drivers.trafficgen.mlr import MlrConfig, goals_from_section, search_mlr, spread
from drivers.trafficgen.ndr import SearchConfig, search_ndr_pdr

from . import rig as rig_setup
from . import topology
from .trials import (_cross_checked, _gen_ceiling, _gen_unavailable, _lab_ceiling, _prov, _search_log, ceilings_of,
                     _search_max_rate, _streams, _switch_reader, _trex_ceiling,
                     latency_distributions, mlr_config, search_latency_distributions,
                     search_latency_metrics)
from .txbench import TX_BENCH_TRIAL_S, softgen_tx_trial, window_rates_pps

# The generator benchmarks and loopbacks are softgen's own and built on this box (local_lab);
# the switch matrix runs on the profile's generator (softgen, or TRex with generator.kind
# trex), see _gen_unavailable: on a local lab over wires built here, on a remote lab (the
# emulated SSH lab included) over the profile's links between the generator and switch hosts.
SOFTGEN = [pytest.mark.local_lab, pytest.mark.features("softgen"),
           pytest.mark.skipif(not softgen_binary().exists(), reason=f"softgen not built ({softgen_binary()})")]


def _softgen(fn):
    for mark in SOFTGEN:
        fn = mark(fn)
    return fn

DEFAULT_CASES = [(64, 1), (64, 1000)]
NIGHTLY_CASES = [(size, flows) for size in (*RFC2544_SIZES, "imix") for flows in (1, 1000, 100_000)
                 if (size, flows) not in DEFAULT_CASES]
# What this run measured, for ratios against peers and for the plot: {(size, flows): {kind: metrics}}
MEASURED: dict[tuple, dict[str, dict]] = {}
WIRES: dict[tuple, str] = {}  # {((size, flows), kind): port kind} of this run's searches


@pytest.fixture
def loop(lab):
    """softgen -> memif -> softgen (two processes)."""
    topo = topology.loopback(lab)
    yield topo
    topo.close()


@pytest.fixture
def ring(lab):
    """softgen -> net_ring -> the same softgen (one process, one core)."""
    topo = topology.ring_loopback(lab)
    yield topo
    topo.close()


# ---- generator sanity and benchmarks ----------------------------------------------------------
def _sanity(g, tx, rx):
    c = g.run([Stream("seq", tx, rx_port=rx, frame_size=64, rate_pps=100_000, count=50_000, latency=True, flows=100),
               Stream("big", tx, rx_port=rx, frame_size=1518, rate_pps=10_000, count=2_000)], drain_s=0.2)
    seq, big = c.streams["seq"], c.streams["big"]
    for s in (seq, big):
        assert s.tx > 0, f"{s.name}: nothing sent"
        assert s.tx + s.unsent == s.offered and s.rx + s.lost == s.tx
        assert s.duplicate == 0, f"{s.name}: {s.duplicate} duplicates on a point-to-point wire"
    assert c.ports[rx].rx == seq.rx + big.rx + c.ports[rx].rx_other
    assert seq.latency and seq.latency.samples == seq.rx
    return c, seq, big


@_softgen
@pytest.mark.quick
def test_generator_loopback_sanity(ring, results):
    """softgen -> net_ring -> softgen, no switch: counters add up exactly, sequence intact."""
    c, seq, big = _sanity(ring.gen, "r", "r")
    assert c.lost == 0, "a ring in one process cannot lose packets"
    results.record("loopback_sanity_ring", metrics={
        "tx_packets": c.tx, "rx_packets": c.rx, "lost_packets": c.lost, "unsent_packets": c.unsent,
        "out_of_order_packets": seq.out_of_order + big.out_of_order, **seq.latency.as_metrics()},
        params={"rate_pps": 100_000, "frame_size": 64}, provenance=_prov(ring.gen, "ring"),
        distributions=latency_distributions(seq.latency))


@_softgen
def test_generator_loopback_sanity_memif(loop, results):
    """softgen -> memif -> softgen (two processes): the wire the switch matrix uses."""
    c, seq, big = _sanity(loop.gen, "a", "b")
    results.record("loopback_sanity_memif", metrics={
        "tx_packets": c.tx, "rx_packets": c.rx, "lost_packets": c.lost, "unsent_packets": c.unsent,
        "out_of_order_packets": seq.out_of_order + big.out_of_order, **seq.latency.as_metrics()},
        params={"rate_pps": 100_000, "frame_size": 64}, provenance=_prov(loop.gen, "memif"),
        distributions=latency_distributions(seq.latency))


@_softgen
@pytest.mark.quick
def test_ndr_search_on_generator_loopback(lab, profile, ring, results, progress):
    """One short NDR/PDR search with the real generator (no switch): the search and the
    generator work together; the figure is the generator's own ceiling (TX+RX on one core)."""
    measure = make_measure(ring.gen, _streams("r", "r", 64, 1), drain_s=0.05)
    cfg = MlrConfig(max_rate_pps=4e6, min_rate_pps=50_000, goals=goals_from_section(
        profile.section("search")), latency_fractions=(0.5,), latency_trial_s=0.5)
    log = _search_log(lab)
    r = search_mlr(measure, cfg, lambda line: log(line, progress))
    assert r.trials and all(t.tx + t.unsent == t.offered for t in r.trials)
    assert r.goals["ndr"].relevant_upper_bound_pps is None or r.ndr.rate_pps > 0
    dists = search_latency_distributions(r)
    results.record("ndr_64b_1flows_loopback", metrics={**r.metrics(), **search_latency_metrics(dists)},
                   params={"frame_size": 64, "flows": 1, "search": "mlrsearch"},
                   provenance=_prov(ring.gen, "ring"), distributions=dists,
                   search=r.search_record())


@_softgen
@pytest.mark.bench
def test_latency_floor_memif(loop, results):
    c = loop.gen.run([Stream("lat", "a", rx_port="b", frame_size=64, rate_pps=10_000, duration_s=2.0, latency=True)],
                     drain_s=0.2)
    lat = c.streams["lat"].latency
    assert lat.samples > 0
    results.record("latency_floor_memif", metrics={"latency_p50_us": lat.p50_us, "latency_p99_us": lat.p99_us,
                                                    "latency_p99_9_us": lat.p99_9_us, "latency_min_us": lat.min_us,
                                                    "latency_max_us": lat.max_us, "samples": lat.samples,
                                                    "lost_packets": c.lost},
                   params={"rate_pps": 10_000, "frame_size": 64}, provenance=_prov(loop.gen, "memif"),
                   distributions=latency_distributions(lat))


def parse_testpmd_tx_pps(log: str) -> float:
    """Median of testpmd's periodic non-zero Tx-pps figures (first one dropped: start-up)."""
    vals = parse_testpmd_tx_pps_windows(log)
    return float(statistics.median(vals)) if vals else 0.0


def parse_testpmd_tx_pps_windows(log: str) -> list[int]:
    """testpmd's periodic non-zero Tx-pps figures, the first (start-up, partial) one dropped."""
    vals = [int(v) for v in re.findall(r"Tx-pps:\s+(\d+)", log)]
    return [v for v in vals if v > 0][1:]


def summarise_tx_trials(softgen_mpps: list[float], testpmd_mpps: list[float]) -> dict[str, float]:
    """Figures of the alternating softgen/testpmd TX trials, each a list of ~1 s windows (pure).
    On this shared 2-core box a window is only ever slowed down by others, never sped up, and
    it flips between discrete levels (~6 and ~20 Mpps seen within one testpmd run: another
    busy-polling process on a core or not), so the best window of each sender is the closest
    to its undisturbed rate and their ratio is the headline; medians show the spread.  A
    sender with no usable window gives 0."""
    best_sg, best_tp = max(softgen_mpps, default=0.0), max(testpmd_mpps, default=0.0)
    med_sg = statistics.median(softgen_mpps) if softgen_mpps else 0.0
    med_tp = statistics.median(testpmd_mpps) if testpmd_mpps else 0.0
    return {"tx_mpps": best_sg, "testpmd_tx_mpps": best_tp,
            "tx_vs_testpmd": best_sg / best_tp if best_tp else 0.0,
            "tx_mpps_median": med_sg, "testpmd_tx_mpps_median": med_tp,
            "tx_vs_testpmd_median": med_sg / med_tp if med_tp else 0.0,
            "tx_mpps_min": min(softgen_mpps, default=0.0), "testpmd_tx_mpps_min": min(testpmd_mpps, default=0.0)}


@pytest.mark.quick
def test_eal_args_fall_back_to_no_huge_when_hugepages_are_short():
    class Lab:
        def eal_args(self, name, mem_mb, lcores, in_memory=False):
            return ["-l", lcores, "--file-prefix", name, "-m", str(mem_mb),
                    *(["--in-memory", "--single-file-segments"] if in_memory else
                      ["--huge-dir", "/h", "--huge-unlink"])]
    assert topology.eal_args(Lab(), "g", 128, "0,1", free_mb=lambda: 1000)[-2:] == ["/h", "--huge-unlink"]
    for in_memory in (False, True):
        args = topology.eal_args(Lab(), "g", 128, "0,1", in_memory=in_memory, free_mb=lambda: 100)
        assert args == ["-l", "0,1", "--file-prefix", "g", "--no-huge", "-m", "128"]


def test_testpmd_parse():
    log = "Tx-pps: 0 \n Tx-pps:  5 \n Tx-pps: 100\n Tx-pps: 300\n Tx-pps: 200"
    assert parse_testpmd_tx_pps(log) == 200.0
    assert parse_testpmd_tx_pps_windows(log) == [100, 300, 200]


@pytest.mark.quick
def test_summarise_tx_trials():
    m = summarise_tx_trials([6.0, 17.0, 16.0], [8.0, 18.0, 5.0])
    assert (m["tx_mpps"], m["testpmd_tx_mpps"], m["tx_mpps_median"], m["testpmd_tx_mpps_median"]) == (17, 18, 16, 8)
    assert m["tx_vs_testpmd"] == 17 / 18 and m["tx_vs_testpmd_median"] == 2.0
    assert (m["tx_mpps_min"], m["testpmd_tx_mpps_min"]) == (6.0, 5.0)
    assert summarise_tx_trials([], [3.0])["tx_vs_testpmd"] == 0.0
    assert summarise_tx_trials([3.0], [])["tx_vs_testpmd"] == 0.0


@pytest.mark.quick
def test_window_rates():
    hz = 1000.0
    samples = [(0, 0), (1000, 500), (2000, 1500), (2100, 1600)]  # the last window is 0.1 s: left out
    assert window_rates_pps(samples, hz) == [500.0, 1000.0]
    assert window_rates_pps(samples[:1], hz) == []


# Both senders get the same wire and placement: memif client, sender busy-polling on lcore 1,
# the testpmd rxonly sink (memif server) forwarding on lcore 0; 64 B frames (testpmd
# --txpkts=60 + FCS); burst 32; ~8-16k mbufs with a per-lcore cache; memif's default rings.
# softgen's side and the trial length: suites/throughput/txbench.py (the softgen suite uses it).


def _tx_bench_sink(lab, sock, tag):
    argv = ["dpdk-testpmd", *topology.eal_args(lab, f"sink{tag}", 256, "1,0"), "--main-lcore", "1",
            "--vdev", topology.memif(0, "server", sock), "--", "--total-num-mbufs=16384", "-a",
            "--stats-period", "1", "--forward-mode=rxonly"]
    sock.unlink(missing_ok=True)
    return lab.supervisor.start(f"txbench-sink{tag}", argv, ready=sock.exists, ready_timeout_s=30)


def _testpmd_tx_trial(lab, sock, tag):
    """One testpmd txonly trial: its per-second Tx-pps (Mpps) over ~TX_BENCH_TRIAL_S."""
    argv = ["dpdk-testpmd", *topology.eal_args(lab, f"txbench-testpmd-{tag}", 256, "0,1"), "--main-lcore", "0",
            "--vdev", topology.memif(0, "client", sock), "--", "--total-num-mbufs=16384", "-a",
            "--stats-period", "1", "--forward-mode=txonly", "--txpkts=60"]
    tp = lab.supervisor.start(f"txbench-testpmd-{tag}", argv, ready=None)
    try:
        want = int(TX_BENCH_TRIAL_S)  # per-second figures after the start-up one
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and tp.popen.poll() is None:
            if len(parse_testpmd_tx_pps_windows(tp.log_path.read_text(errors="replace"))) >= want:
                break
            time.sleep(0.2)
        vals = parse_testpmd_tx_pps_windows(tp.log_path.read_text(errors="replace"))[:want]
    finally:
        lab.supervisor.stop(tp)
    return [v / 1e6 for v in vals]


@_softgen
@pytest.mark.bench
def test_softgen_tx_64b_1core_memif(lab, results, progress, request):
    """softgen TX on one core into a memif sink (testpmd rxonly), next to testpmd txonly on
    the same wire in the same run: alternating trials (ABBA order), each sender with a fresh
    sink, best and median of each (see summarise_tx_trials)."""
    rounds = 8 if request.config.getoption("--nightly") else 4
    sg_mpps: list[float] = []
    tp_mpps: list[float] = []
    unsent = refused = 0
    for r in range(rounds):
        order = ("softgen", "testpmd") if r % 2 == 0 else ("testpmd", "softgen")
        n_sg, n_tp = len(sg_mpps), len(tp_mpps)
        for who in order:
            sock = topology.fresh_sock(lab, "txbench-memif")
            tag = f"{who[0]}{r}"
            sink = _tx_bench_sink(lab, sock, tag)
            try:
                if who == "softgen":
                    got = softgen_tx_trial(lab, sock, tag, progress)
                    if got is not None:
                        sg_mpps += got[0]
                        unsent, refused = unsent + got[1].unsent, refused + got[1].refused
                else:
                    tp_mpps += _testpmd_tx_trial(lab, sock, tag)
            finally:
                lab.supervisor.stop(sink)
        progress(f"tx bench round {r}: softgen windows {', '.join(f'{x:.2f}' for x in sg_mpps[n_sg:])} Mpps; "
                 f"testpmd txonly windows {', '.join(f'{x:.2f}' for x in tp_mpps[n_tp:])} Mpps")
    assert sg_mpps, "no softgen TX window (memif between softgen and the testpmd sink never came up?)"
    assert tp_mpps, "testpmd txonly reported no Tx-pps in any trial"
    m = summarise_tx_trials(sg_mpps, tp_mpps)
    progress(f"softgen tx best {m['tx_mpps']:.2f} (median {m['tx_mpps_median']:.2f}) Mpps, testpmd txonly best "
             f"{m['testpmd_tx_mpps']:.2f} (median {m['testpmd_tx_mpps_median']:.2f}) Mpps: "
             f"{m['tx_vs_testpmd']:.2f}x (medians {m['tx_vs_testpmd_median']:.2f}x)")
    results.suite = "softgen"  # the issue files this figure under suite=softgen
    results.record("tx_64b_1core_memif", metrics={**m, "windows": float(len(sg_mpps) + len(tp_mpps))},
                   params={"frame_size": 64, "cores": 1, "trial_s": TX_BENCH_TRIAL_S, "rounds": rounds,
                           "statistic": "best (and median) of ~1 s windows of alternating trials",
                           "softgen_windows_mpps": [round(x, 3) for x in sg_mpps],
                           "testpmd_windows_mpps": [round(x, 3) for x in tp_mpps],
                           "softgen_unsent_packets": unsent, "softgen_refused_packets": refused},
                   provenance={"generator": "softgen", "generator_version": SOFTGEN_VERSION, "port_kind": "memif",
                               "dut_switch_kind": "none", "testpmd": "dpdk-testpmd 22.11 --forward-mode=txonly"})


# ---- the switch matrix --------------------------------------------------------------------------
def _switch_unavailable(kind: str, profile) -> str | None:
    from drivers.lab.switches import switch_available
    return switch_available(kind, profile)


def _case_id(case) -> str:
    size, flows = case
    return f"{size}{'' if size == 'imix' else 'b'}-{flows}flows"


def pytest_generate_tests(metafunc):
    if "case" in metafunc.fixturenames:
        cases = [pytest.param(c, id=_case_id(c)) for c in DEFAULT_CASES]
        cases += [pytest.param(c, id=_case_id(c), marks=pytest.mark.nightly) for c in NIGHTLY_CASES]
        metafunc.parametrize("case", cases)


_TAGS = iter(range(1 << 30))  # unique per topology in a run: OVS state dirs are named by it


def _record_name(size, flows):
    return f"ndr_{size}{'' if size == 'imix' else 'b'}_{flows}flows"


def _switch_topology(lab, profile, kind, flows, tag):
    if is_remote(lab):
        if kind != profile.switch["kind"]:
            pytest.skip(f"on a remote lab the links go to the profile's switch; {kind} is "
                        f"measured on a local lab")
        return topology.links_p2p(lab, profile, flows, tag)
    if profile.generator["kind"] == "trex":
        if profile.generator.get("server") != "local":
            pytest.skip(f"profile {profile.name!r}: a TRex server at {profile.generator['server']}"
                        f" is driven over a remote lab's links (lab.kind: remote)")
        try:
            return topology.switch_p2p_trex(lab, profile.generator, kind, flows, tag=tag)
        except topology.TopologyUnavailable as e:
            pytest.skip(str(e))
    rig = rig_setup.rig_settings(profile.section("rig"), os.environ)
    if kind != "ofbench" and rig.wire != "vhost":  # the vhost-user peers: vhost, DPDK's ring
        return topology.switch_p2p(lab, kind, flows, tag=tag)
    return topology.switch_p2p(lab, kind, flows, tag=tag, wire=rig.wire, ring_log2=rig.ring_log2)


@pytest.mark.bench
@pytest.mark.peers_first  # the harness's switch_kind: peers first, the switch under test last
def test_rfc2544_ndr_pdr(lab, profile, switch_kind, case, results, progress, request):
    kind = switch_kind
    why = _gen_unavailable(profile, lab) or _switch_unavailable(kind, profile)
    if why:
        pytest.skip(why)
    size, flows = case
    nightly = request.config.getoption("--nightly")
    if not is_remote(lab) and profile.generator["kind"] == "trex" and profile.generator.get("server") == "local" \
            and kind == "ofbench":
        _trex_ceiling(lab, profile, progress)  # before the switch's TRex server starts
    rig = rig_setup.rig_settings(profile.section("rig"), os.environ)
    # softgen's loopback ceilings before the switch run's topology: its generator and switch
    # poll both cores once up, and a ceiling measured beside them reads low (issue 44)
    if is_remote(lab):
        _lab_ceiling(lab, profile, progress)
    elif profile.generator["kind"] != "trex":
        _gen_ceiling(lab, progress, rig.ring_log2 if rig.wire == "memif" else None)
    topo = _switch_topology(lab, profile, kind, flows, tag=f"t{next(_TAGS)}")
    checks: list[dict] = []
    pin = rig_setup.pin_others(lab, None if is_remote(lab) else rig_setup.housekeeping_core(
        rig.housekeeping, topology.SWITCH_CORE, topology.GEN_WORKER_CORE),
        None if is_remote(lab) else rig.poller_nice, "other" if is_remote(lab) else rig.switch_policy)
    try:
        measure = _cross_checked(topo, make_measure(topo.gen, _streams(topo.tx_port, topo.rx_port, size, flows),
                                                    drain_s=0.1), checks)
        # the rig's figures of every trial beside its counters (issue 44: suites/throughput/rig.py)
        measure = rig_setup.with_switch_rig(measure, _switch_reader(topo), topo.ring_slots, topo.switch_ports)
        log = _search_log(lab)
        max_rate = _search_max_rate(lab, profile, topo, progress)
        pin.__enter__()  # the run's other threads off the pollers' cores (OFBENCH_RIG_HOUSEKEEPING)
        rig_setup.warm_up(measure, max_rate)
        cfg = mlr_config(profile, max_rate, nightly)
        r = search_mlr(measure, cfg, lambda line: log(f"{kind} {size}B {flows} flows: {line}", progress))
        # back-to-back (RFC 2544 26.4): the longest burst at max rate with no loss, bounded by
        # what one short burst can tell on this box: a single trial at the top rate
        b2b = topo.gen.run([Stream("b2b", topo.tx_port, rx_port=topo.rx_port, frame_size=size,
                                   rate_pps=topo.max_rate_pps, count=50_000, flows=flows)], drain_s=0.2)
        dists = search_latency_distributions(r)
        m = {**r.metrics(), **search_latency_metrics(dists)}
        m.update(rig_setup.trial_metrics(r.trials))
        if max_rate != topo.max_rate_pps:
            m["search_max_mpps"] = max_rate / 1e6
        ceiling_why = None
        if is_remote(lab):  # issue 44's yardstick on the lab's generator host (or why not)
            lab_ceiling, ceiling_why = _lab_ceiling(lab, profile, progress)
            m.update(rig_setup.ceiling_metrics(m["ndr_mpps"], lab_ceiling))
        elif topo.switch_kind is not None:  # issue 44's yardstick
            m.update(rig_setup.ceiling_metrics(m["ndr_mpps"], *ceilings_of(profile.generator["kind"])))
        m["b2b_burst_frames"] = float(b2b.streams["b2b"].tx if b2b.lost == 0 else 0)
        m["b2b_lost_packets"] = float(b2b.lost)
        if checks:  # every trial's generator counters agreed with the switch's (else CounterError)
            m["switch_cross_checked_trials"] = float(len(checks))
            last = checks[-1]
            m["switch_rx_packets_last_trial"], m["switch_tx_packets_last_trial"] = \
                float(last["switch_rx"]), float(last["switch_tx"])
        peers = MEASURED.setdefault(case, {})
        WIRES[(case, kind)] = topo.port_kind
        if kind == profile.switch["kind"]:
            for peer, pm in peers.items():
                if pm.get("ndr_mpps"):
                    m[f"ndr_mpps_vs_{peer.replace('-', '_')}"] = m["ndr_mpps"] / pm["ndr_mpps"]
                if pm.get("pdr_mpps"):
                    m[f"pdr_mpps_vs_{peer.replace('-', '_')}"] = m["pdr_mpps"] / pm["pdr_mpps"]
        peers[kind] = m
        results.record(_record_name(size, flows), metrics=m,
                       params={"frame_size": size, "flows": flows, "switch_kind": kind,
                               "search": "mlrsearch", "trial_s": cfg.trial_duration_s,
                               "ring_slots": topo.ring_slots,
                               # the peers' wires: a ratio across wires says so (the profile's
                               # rig.wire puts ofbench on memif, the vhost-user peers stay on vhost)
                               **({"peer_port_kinds": {p: WIRES[(case, p)] for p in peers
                                                       if p != kind and (case, p) in WIRES}}
                                  if kind == profile.switch["kind"] else {}),
                               **({} if is_remote(lab) else {"rig_housekeeping": rig.housekeeping,
                                                             "rig_poller_nice": rig.poller_nice,
                                                             "rig_switch_policy": rig.switch_policy}),
                               **({"ceiling_not_measured": ceiling_why} if ceiling_why else {}),
                               "ndr_verified": r.ndr.verified, "generator_limited": r.ndr.generator_limited,
                               "backpressure": r.ndr.backpressure},
                       provenance=_prov(topo.gen, topo.port_kind, kind, **(topo.hosts or {}),
                                        **({"generator_version": topo.generator_version}
                                           if topo.generator_version else {}),
                                        **({} if is_remote(lab) else rig_setup.box_changes(pin, rig))),
                       check_targets_now=kind == profile.switch["kind"],
                       distributions=dists, search=r.search_record())
    finally:
        pin.__exit__(None, None, None)
        topo.close()


SIDE_BY_SIDE_REPS = 10
SOAK_S, SOAK_S_NIGHTLY = 60, 1800     # issue 40 part 5: 60 s in `make suites`, 30 min nightly
SOAK_FRACTION = 0.5                   # of the PDR found in this run (or by a quick search)
BURST_MIN_PACKETS = 64                # a second that lost more than this (and 0.01 %) is a burst
BURST_MIN_RATIO = 1e-4


def soak_buckets(samples: list[tuple[float, int, int]]) -> list[dict]:
    """Per-interval {t_s, tx, rx, lost} from cumulative (t_s, tx, rx) samples (pure). A
    window's lost = its tx - its rx: packets in flight at the edges give +- a ring's worth."""
    out = []
    for (t0, tx0, rx0), (t1, tx1, rx1) in zip(samples, samples[1:]):
        out.append({"t_s": round(t1, 3), "tx": tx1 - tx0, "rx": rx1 - rx0,
                    "lost": (tx1 - tx0) - (rx1 - rx0)})
    return out


def loss_bursts(buckets: list[dict], total_lost: int, min_packets: int = BURST_MIN_PACKETS,
                min_ratio: float = BURST_MIN_RATIO) -> list[dict]:
    """The seconds whose loss is beyond in-flight noise. Packets in flight at a window's edges
    move between neighbouring windows (+x here, -x next), so the largest negative window says
    how far that goes; a burst is a window that lost more than max(min_packets, min_ratio of
    its tx, that swing), and only when the trial's exact total loss is itself beyond
    max(min_packets, the swing) (the total has no in-flight error)."""
    swing = max([0] + [-b["lost"] for b in buckets])
    if total_lost <= max(min_packets, swing):
        return []
    return [b for b in buckets if b["lost"] > max(min_packets, min_ratio * max(b["tx"], 0), swing)]


@pytest.mark.bench
def test_search_methods_side_by_side(lab, profile, results, progress, request):
    """Issue 40 part 2: the same switch (the profile's), generator and frame size (64 B, 1 flow),
    one run: SIDE_BY_SIDE_REPS searches with each method, interleaved (A B B A ...) so the box's
    drift hits both alike; spread (max - min) / median of NDR and PDR, total search time and
    trials. Figures, never a failure: the record states them (README: which is the default)."""
    kind = profile.switch["kind"]
    why = _gen_unavailable(profile, lab) or _switch_unavailable(kind, profile)
    if why:
        pytest.skip(why)
    nightly = request.config.getoption("--nightly")
    reps = SIDE_BY_SIDE_REPS
    topo = _switch_topology(lab, profile, kind, 1, tag=f"t{next(_TAGS)}")
    log = _search_log(lab)
    out: dict[str, dict[str, list]] = {m: {"ndr": [], "pdr": [], "time": [], "trials": []}
                                       for m in ("binary", "mlrsearch")}
    try:
        # a longer drain than the matrix's 0.1 s: on a loaded box a trial's last packets still
        # sit in the switch's rings when the next trial counts (CounterError: rx > tx)
        base = make_measure(topo.gen, _streams(topo.tx_port, topo.rx_port, 64, 1, latency=False),
                            drain_s=0.3)
        counted = {"n": 0}

        def measure(duration_s, rate_pps):
            counted["n"] += 1
            return base(duration_s, rate_pps)
        # each method as the matrix ran it (ndr.py's normal-run settings, PDR at the same 0.5 %)
        old = SearchConfig(max_rate_pps=topo.max_rate_pps, min_rate_pps=5_000, trial_duration_s=0.5,
                           final_duration_s=1.0, precision=0.05, max_trials=10, max_verifications=2,
                           pdr_loss=0.005, latency_fractions=()) if not nightly else \
            SearchConfig(max_rate_pps=topo.max_rate_pps, min_rate_pps=5_000, trial_duration_s=2.0,
                         final_duration_s=10.0, precision=0.02, pdr_loss=0.005, latency_fractions=())
        new = mlr_config(profile, topo.max_rate_pps, nightly, latency_fractions=())
        for i in range(reps):
            order = ("binary", "mlrsearch") if i % 2 == 0 else ("mlrsearch", "binary")
            for method in order:
                counted["n"] = 0
                t0 = time.monotonic()
                say = lambda line: log(f"side by side {method} #{i + 1}: {line}", progress)  # noqa: E731
                r = search_ndr_pdr(measure, old, say) if method == "binary" else search_mlr(measure, new, say)
                o = out[method]
                o["time"].append(time.monotonic() - t0)
                o["trials"].append(counted["n"])
                o["ndr"].append(r.ndr.rate_pps / 1e6)
                o["pdr"].append(r.pdr.rate_pps / 1e6)
    finally:
        topo.close()
    m, params = {}, {"frame_size": 64, "flows": 1, "switch_kind": kind, "repetitions": reps,
                     "order": "interleaved"}
    for method, o in out.items():
        for target in ("ndr", "pdr"):
            vals = o[target]
            m[f"{method}_{target}_mpps"] = statistics.median(vals)
            m[f"{method}_{target}_min_mpps"], m[f"{method}_{target}_max_mpps"] = min(vals), max(vals)
            m[f"{method}_{target}_spread_ratio"] = spread(vals)
            m[f"{method}_{target}_searches_failed_to_zero"] = float(sum(1 for v in vals if v <= 0))
            params[f"{method}_{target}_mpps_reps"] = [round(v, 4) for v in vals]
        m[f"{method}_total_search_time_s"] = sum(o["time"])
        m[f"{method}_total_trials"] = float(sum(o["trials"]))
    m["mlrsearch_vs_binary_time_ratio"] = m["mlrsearch_total_search_time_s"] / m["binary_total_search_time_s"]
    for target in ("ndr", "pdr"):
        a, b = m[f"binary_{target}_spread_ratio"], m[f"mlrsearch_{target}_spread_ratio"]
        m[f"mlrsearch_{target}_as_steady_ok"] = None if a is None or b is None else b <= a
    progress(f"side by side, {reps} searches each: " + ", ".join(
        f"{k} {v:.3f}" for k, v in m.items() if isinstance(v, float)))
    results.record("search_methods_64b_1flows", metrics=m, params=params,
                   provenance=_prov(topo.gen, topo.port_kind, kind, **(topo.hosts or {})),
                   check_targets_now=False)


@pytest.mark.bench
@pytest.mark.peers_first
def test_soak(lab, profile, switch_kind, results, progress, request):
    """Issue 40 part 5: one long trial at SOAK_FRACTION of the PDR (this run's, or a quick
    search's) per switch, 64 B, 1 flow; loss over time in 1 s buckets read live from the
    generator; any second that lost packets beyond in-flight noise is a burst (flagged in the
    record, never a failure: a benchmark)."""
    kind = switch_kind
    why = _gen_unavailable(profile, lab) or _switch_unavailable(kind, profile)
    if why:
        pytest.skip(why)
    duration = SOAK_S_NIGHTLY if request.config.getoption("--nightly") else SOAK_S
    topo = _switch_topology(lab, profile, kind, 1, tag=f"t{next(_TAGS)}")
    try:
        if not hasattr(topo.gen, "live_counters"):
            pytest.skip(f"{topo.gen.name} reads no counters while a trial runs (softgen does)")
        pdr = (MEASURED.get((64, 1), {}).get(kind) or {}).get("pdr_mpps")
        source = "this run's search"
        if not pdr:
            measure = make_measure(topo.gen, _streams(topo.tx_port, topo.rx_port, 64, 1, latency=False),
                                   drain_s=0.2)
            r = search_mlr(measure, mlr_config(profile, topo.max_rate_pps, False, latency_fractions=()),
                           lambda line: progress(f"soak {kind}: {line}"))
            pdr, source = r.pdr.rate_pps / 1e6, "a quick search"
        if not pdr:
            pytest.skip(f"{kind}: no PDR to soak at (the search found none)")
        rate = SOAK_FRACTION * pdr * 1e6
        topo.gen.load(_streams(topo.tx_port, topo.rx_port, 64, 1, latency=False)(rate, duration))
        topo.gen.start()
        t0 = time.monotonic()
        samples = [(0.0, 0, 0)]
        try:
            while time.monotonic() - t0 < duration + 5:
                time.sleep(max(0.0, len(samples) - (time.monotonic() - t0)))
                tx, rx = topo.gen.live_counters()["main"]
                samples.append((time.monotonic() - t0, tx, rx))
                if len(samples) > duration and not topo.gen.is_running():
                    break
        finally:
            topo.gen.stop()
        time.sleep(0.3)
        c = topo.gen.counters()
    finally:
        topo.close()
    main = c.streams["main"]
    samples.append((samples[-1][0] + 0.3, main.tx, main.rx))   # the drain: in-flight arrives
    buckets = soak_buckets(samples)
    bursts = loss_bursts(buckets, main.lost)
    worst = max(buckets, key=lambda b: b["lost"]) if buckets else {"lost": 0, "t_s": 0}
    m = {"soak_rate_mpps": rate / 1e6, "soak_duration_s": float(duration),
         "soak_lost_packets": float(main.lost), "soak_loss_ratio": main.lost / main.tx if main.tx else None,
         "soak_unsent_packets": float(main.unsent), "soak_loss_bursts": float(len(bursts)),
         "soak_worst_second_lost_packets": float(max(0, worst["lost"])),
         "soak_in_flight_swing_packets": float(max([0] + [-b["lost"] for b in buckets]))}
    progress(f"soak {kind}: {duration} s at {rate / 1e6:.3f} Mpps ({SOAK_FRACTION:g} x PDR from {source}): "
             f"lost {main.lost} of {main.tx}, {len(bursts)} burst(s)"
             + (f", worst {worst['lost']} at {worst['t_s']:.0f} s" if bursts else ""))
    results.record("soak_64b_1flows", metrics=m,
                   params={"switch_kind": kind, "fraction_of_pdr": SOAK_FRACTION, "pdr_from": source,
                           "lost_per_s": [b["lost"] for b in buckets],
                           "burst_at_s": [b["t_s"] for b in bursts]},
                   provenance=_prov(topo.gen, topo.port_kind, kind, **(topo.hosts or {})),
                   check_targets_now=False)


def test_plot_rate_vs_frame_size(results):
    """Rate vs frame size per switch kind, from what this run measured."""
    if not MEASURED:
        pytest.skip("no switch was measured in this run")
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    rows = []
    for (size, flows), per_kind in sorted(MEASURED.items(), key=lambda kv: (str(kv[0][0]), kv[0][1])):
        for kind, m in per_kind.items():
            rows.append({"frame_size": size, "flows": flows, "switch": kind, "ndr_mpps": round(m["ndr_mpps"], 3),
                         "pdr_mpps": round(m["pdr_mpps"], 3), "latency_p99_us": round(m.get("latency_p99_us", 0), 1)})
    for ax, flows in zip(axes, (1, 1000)):
        for kind in sorted({r["switch"] for r in rows}):
            pts = sorted((r["frame_size"], r["ndr_mpps"]) for r in rows
                         if r["switch"] == kind and r["flows"] == flows and r["frame_size"] != "imix")
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=kind)
        ax.set_xlabel("frame size (B)")
        ax.set_ylabel("NDR (Mpps)")
        ax.set_title(f"NDR vs frame size, {flows} flow(s)")
        ax.grid(True, alpha=0.3)
        ax.legend()
    fig.tight_layout()
    results.add_plot(fig, "throughput: NDR vs frame size per switch")
    results.add_table(rows, "throughput: NDR/PDR per switch, frame size and flows")


@pytest.mark.quick
def test_soak_buckets_and_bursts():
    # in flight only: +10 then -10, +500 then -500 (the drain): the exact total says 0 lost
    samples = [(0.0, 0, 0), (1.0, 1000, 990), (2.0, 2000, 2000), (3.0, 3000, 2500), (3.3, 3000, 3000)]
    b = soak_buckets(samples)
    assert [x["lost"] for x in b] == [10, -10, 500, -500]
    assert loss_bursts(b, total_lost=0) == []
    # a real burst: 5000 lost in the third second, in-flight swing 20
    samples = [(0.0, 0, 0), (1.0, 10_000, 9_980), (2.0, 20_000, 20_000), (3.0, 30_000, 25_000),
               (4.0, 40_000, 35_000)]
    b = soak_buckets(samples)
    assert [x["t_s"] for x in loss_bursts(b, total_lost=5_000)] == [3.0]
    assert loss_bursts(b, total_lost=10) == []


@pytest.mark.quick
def test_switch_cross_check():
    from drivers.trafficgen.counters import CounterError
    before = {"ports": [{"port": 1, "rx_packets": 10, "tx_packets": 0}, {"port": 2, "rx_packets": 0, "tx_packets": 5}]}
    after = {"ports": [{"port": 1, "rx_packets": 110, "tx_packets": 0}, {"port": 2, "rx_packets": 0, "tx_packets": 104}]}
    assert topology.switch_cross_check(before, after, gen_tx=100, gen_rx=99) == \
        {"gen_tx": 100, "switch_rx": 100, "switch_tx": 99, "gen_rx": 99}
    with pytest.raises(CounterError, match="switch port 1 received 100 packets but the generator sent 90"):
        topology.switch_cross_check(before, after, gen_tx=90, gen_rx=50)
    with pytest.raises(CounterError, match="generator received 100 packets but switch port 2 sent 99"):
        topology.switch_cross_check(before, after, gen_tx=100, gen_rx=100)


@pytest.mark.quick
def test_switch_telemetry_over_a_trial():
    before = {"cache_hits": 100, "cache_misses": 10, "tsc_hz": 2_000_000_000,
              "ports": [{"port": 1, "rx_packets": 0, "tx_packets": 0}, {"port": 2, "rx_packets": 0, "tx_packets": 0}],
              "workers": [{"lcore": 0, "busy_cycles": 1000, "idle_cycles": 1000}]}
    after = {"cache_hits": 1090, "cache_misses": 20, "tsc_hz": 2_000_000_000,
             "ports": [{"port": 1, "rx_packets": 1000, "tx_packets": 0}, {"port": 2, "rx_packets": 0, "tx_packets": 990}],
             "workers": [{"lcore": 0, "busy_cycles": 100_000, "idle_cycles": 101_000}]}
    t = topology.switch_telemetry(before, after)
    assert t["port_1_rx_packets"] == 1000 and t["port_2_tx_packets"] == 990
    assert t["cycles_per_packet"] == 100.0 and t["worker_0_cpu_share"] == pytest.approx(99_000 / 199_000)
    assert t["cache_hit_ratio"] == 0.99
    # OVS publishes ports only: the rest is left out, not guessed
    ovs = topology.switch_telemetry({"ports": before["ports"]}, {"ports": after["ports"]})
    assert set(ovs) == {"port_1_rx_packets", "port_1_tx_packets", "port_2_rx_packets", "port_2_tx_packets"}


@pytest.mark.quick
def test_ovs_dpdk_pmd_counters_are_read_around_every_trial():
    """A topology with OVS-DPDK's pmd-stats reader: each trial's Counters.dut holds the PMD
    counters' change, read before and after the trial (never inside it)."""
    from types import SimpleNamespace

    from drivers.trafficgen.counters import Counters
    events: list[str] = []
    samples = iter([{"3": {"rx_packets": 10, "emc_hits": 10, "busy_cycles": 100, "idle_cycles": 100}},
                    {"3": {"rx_packets": 1010, "emc_hits": 1000, "busy_cycles": 2100, "idle_cycles": 100}}])

    def pmd():
        events.append("pmd")
        return next(samples)

    def measure(duration_s, rate_pps):
        events.append("trial")
        return Counters()

    topo = SimpleNamespace(read_switch_stats=None, switch_stats=None, read_pmd_stats=pmd,
                           cross_check=False)
    c = _cross_checked(topo, measure, [])(1.0, 1e6)
    assert events == ["pmd", "trial", "pmd"]
    assert c.dut["pmd_rx_packets"] == 1000 and c.dut["cycles_per_packet"] == 2.0
    assert c.dut["cache_hit_ratio"] == 0.99 and c.dut["worker_3_cpu_share"] == pytest.approx(2000 / 2000)
    # no reader at all: the measurement is left as it is
    bare = SimpleNamespace(read_switch_stats=None, switch_stats=None, read_pmd_stats=None)
    assert _cross_checked(bare, measure, []) is measure


@pytest.mark.quick
def test_trex_port_names_from_profile():
    assert topology.trex_port_names({"ports": {"b": {"trex_port": 1, "speed_gbps": 10},
                                               "a": {"trex_port": 0, "speed_gbps": 10}}}) == ("a", "b", 10_000.0)
    assert topology.trex_port_names({}) == ("t0", "t1", 10_000.0)


@pytest.mark.quick
def test_latency_distributions_from_either_generator():
    """softgen's and TRex's latency histograms become HdrHistograms the report draws as CDFs and
    reads percentiles from (TRex's unpublished min/max, 0, do not matter: the buckets hold it)."""
    from drivers.trafficgen.latency import stats_from_softgen
    from drivers.trex.driver import latency_from_trex
    from distributions import cdf_points, hdrh_percentiles
    sg = stats_from_softgen(100, 2000, 9000, 400_000, [(130, 60), (150, 40)])
    d = latency_distributions(sg)["latency_us"]
    assert d["kind"] == "hdrh" and d["samples"] == 100
    xs, ys = cdf_points(d)
    assert xs == sorted(xs) and ys[-1] == 1.0
    tr = latency_from_trex({"histogram": {"10": 5, "20": 5, "200": 1}, "total_min": 0,
                            "total_max": 0}, rx=11)
    d = latency_distributions(tr, "latency_at_50pct_of_pdr_us")["latency_at_50pct_of_pdr_us"]
    assert d["samples"] == 11 and hdrh_percentiles(d, (100.0,))[100.0] == pytest.approx(300, rel=1e-3)
    m = search_latency_metrics({"latency_at_50pct_of_pdr_us": d})
    assert "latency_p99_99_us_at_50pct" in m and "latency_p50_us_at_50pct" in m

    class Search:
        latency = {0.5: sg, 0.9: None}
    assert set(search_latency_distributions(Search())) == {"latency_at_50pct_of_pdr_us"}
