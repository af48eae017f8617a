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
from pathlib import Path

import pytest

from drivers.lab.base import is_remote
from drivers.softgen.driver import VERSION as SOFTGEN_VERSION
from drivers.softgen.driver import SoftgenPort, binary as softgen_binary
from drivers.trafficgen.base import make_measure
from drivers.trafficgen.frames import RFC2544_SIZES
from drivers.trafficgen.model import Stream
from drivers.trafficgen.ndr import SearchConfig, search_ndr_pdr
from reports.distributions import quantiles_from_histogram

from . import rig as rig_setup
from . import topology

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


def _prov(gen, port_kind, switch_kind=None, **extra):
    return {"generator": gen.name, "generator_version": gen.version, "port_kind": port_kind,
            "dut_switch_kind": switch_kind or "none", **extra}


def latency_distributions(lat, key: str = "latency_us") -> dict:
    """{key: quantiles} of a latency stream's histogram (reports/distributions.py), beside the
    p50/p99 metrics: what the report draws as a CDF; {} without samples."""
    if lat is None or not lat.samples or not lat.histogram:
        return {}
    # TRex publishes total_min/total_max late (drivers/trex/README.md findings 3-4): a 0 there
    # is "not known", and the histogram's own bucket edges bound the ends instead
    return {key: quantiles_from_histogram(lat.histogram, lat.min_us or None, lat.max_us or None)}


def search_latency_distributions(result) -> dict:
    """The latency trials of an NDR/PDR search (at fractions of the PDR rate) as quantiles,
    keyed latency_at_<pct>pct_of_pdr_us."""
    out = {}
    for frac, lat in sorted((result.latency or {}).items()):
        out.update(latency_distributions(lat, f"latency_at_{int(round(frac * 100))}pct_of_pdr_us"))
    return out


def _streams(tx, rx, size, flows, latency=True):
    """The trial's streams at ``rate_pps`` offered in all: with a latency stream, the load
    stream gives it room (at line rate the two together must still fit on the wire)."""
    def build(rate_pps, duration_s):
        lat_pps = min(10_000, max(1.0, rate_pps / 100)) if latency else 0.0
        streams = [Stream("main", tx, rx_port=rx, frame_size=size, rate_pps=rate_pps - lat_pps,
                          duration_s=duration_s, flows=flows)]
        if latency:  # a light latency stream beside the load, as TRex users do
            streams.append(Stream("lat", tx, rx_port=rx, frame_size=64 if size == "imix" else size,
                                  rate_pps=lat_pps, duration_s=duration_s, latency=True))
        return streams
    return build


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
def test_ndr_search_on_generator_loopback(lab, ring, results, progress):
    """One short NDR/PDR search with the real generator (no switch): the search and the
    generator work together; the figure is the generator's own ceiling (TX+RX on one core)."""
    measure = make_measure(ring.gen, _streams("r", "r", 64, 1), drain_s=0.05)
    cfg = SearchConfig(max_rate_pps=4e6, min_rate_pps=50_000, trial_duration_s=0.2, final_duration_s=0.5,
                       precision=0.1, latency_fractions=(0.5,))
    log = _search_log(lab)
    r = search_ndr_pdr(measure, cfg, lambda line: log(line, progress))
    assert r.trials and all(t.tx + t.unsent == t.offered for t in r.trials)
    results.record("ndr_64b_1flows_loopback", metrics=r.metrics(),
                   params={"frame_size": 64, "flows": 1, "trial_s": 0.2, "precision": 0.1},
                   provenance=_prov(ring.gen, "ring"), distributions=search_latency_distributions(r))


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


def window_rates_pps(samples: list[tuple[int, int]], tsc_hz: float, min_window_s: float = 0.5) -> list[float]:
    """TX rates between successive (tsc, tx packets) samples of one softgen stream (pure);
    windows shorter than min_window_s (the last, partial one) are left out."""
    out = []
    for (t0, n0), (t1, n1) in zip(samples, samples[1:]):
        dt = (t1 - t0) / tsc_hz
        if dt >= min_window_s and n1 >= n0:
            out.append((n1 - n0) / dt)
    return out


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


@pytest.mark.quick
def test_p2p_app_flow_specs():
    from .p2p_app import flow_specs
    assert flow_specs({"pairs": [[1, 2]], "flows": 1}) == [(1, None, 2), (2, None, 1)]
    specs = flow_specs({"pairs": [[1, 2]], "flows": 3, "udp_src_base": 10})
    assert specs == [(1, 10, 2), (1, 11, 2), (1, 12, 2), (2, 10, 1), (2, 11, 1), (2, 12, 1)]


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
TX_BENCH_TRIAL_S = 2.0


def _tx_bench_sink(lab, sock, tag):
    argv = ["dpdk-testpmd", *topology.eal_args(lab, f"sink{tag}", 256, "1,0"), "--main-lcore", "1",
            "--vdev", topology.memif(0, "server", sock), "--", "--total-num-mbufs=16384", "-a",
            "--stats-period", "1", "--forward-mode=rxonly"]
    sock.unlink(missing_ok=True)
    return lab.supervisor.start(f"txbench-sink{tag}", argv, ready=sock.exists, ready_timeout_s=30)


def _softgen_tx_trial(lab, sock, tag, progress):
    """One softgen trial: (Mpps of each ~1 s window, stream counters), None if the link stayed down."""
    from drivers.softgen.driver import Softgen, wait_links_up
    inst = topology.start_softgen(lab, f"txbench-softgen-{tag}", [SoftgenPort("t", topology.memif(0, "client", sock))])
    gen = Softgen([inst])
    try:
        if not wait_links_up(gen, 15):
            progress(f"tx bench: memif to the sink not up after 15 s (softgen trial {tag})")
            return None
        # asks for more than one core can send: the worker sends a burst on every loop, as
        # testpmd txonly does, and what it could not build counts as unsent, not as sent
        # the same ~1 s windows testpmd reports, read from the stats' own TSC
        # (the stream outlasts the sampling: every window is one of full-speed sending)
        [r] = gen.load([Stream("tx", "t", frame_size=64, rate_pps=topology.TX_ASK_PPS,
                                         duration_s=TX_BENCH_TRIAL_S + 10)])
        samples = []
        gen.start()
        try:
            for _ in range(int(TX_BENCH_TRIAL_S) + 2):
                st = gen.raw_stats()[0]
                if not st["running"]:
                    break
                samples.append((st["tsc"], next((t["tx"] for t in st["tx_streams"] if t["id"] == r.id), 0)))
                time.sleep(1.0)
        finally:
            gen.stop()
        time.sleep(0.05)
        s = gen.counters().streams["tx"]
        assert s.tx + s.unsent == s.offered and s.refused <= s.unsent
        # the first window holds the start-up, as testpmd's first figure does: both drop it
        return [pps / 1e6 for pps in window_rates_pps(samples, st["tsc_hz"])[1:]], s
    finally:
        gen.close()
        lab.supervisor.stop(inst.managed)


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
                    got = _softgen_tx_trial(lab, sock, tag, progress)
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
    if "kind" in metafunc.fixturenames:
        from harness.state import run_state
        prof = run_state(metafunc.config).profile
        kinds = list(prof.switch_kinds)
        ordered = kinds[1:] + kinds[:1]  # peers first, the switch under test last
        metafunc.parametrize("kind", ordered, ids=ordered)
    if "case" in metafunc.fixturenames:
        cases = [pytest.param(c, id=_case_id(c)) for c in DEFAULT_CASES]
        cases += [pytest.param(c, id=_case_id(c), marks=pytest.mark.nightly) for c in NIGHTLY_CASES]
        metafunc.parametrize("case", cases)


_TAGS = iter(range(1 << 30))  # unique per topology in a run: OVS state dirs are named by it


def _search_log(lab):
    """Progress lines to the terminal and to search.log beside the test's process logs."""
    logs = lab.supervisor.log_dir if hasattr(lab, "supervisor") else lab.log_dir  # remote: log_dir
    path = Path(logs) / "search.log"
    path.parent.mkdir(parents=True, exist_ok=True)

    def log(line, progress):
        with open(path, "a") as f:
            f.write(time.strftime("%H:%M:%S ") + line + "\n")
        progress(line)
    return log


def _record_name(size, flows):
    return f"ndr_{size}{'' if size == 'imix' else 'b'}_{flows}flows"


def _gen_unavailable(profile, lab=None) -> str | None:
    """Why the profile's generator cannot run here (a skip reason), or None."""
    gen = profile.generator
    if lab is not None and is_remote(lab):
        from drivers.lab.links import why_not
        return why_not(profile)
    if gen["kind"] == "trex":
        if "trex" not in profile.features:
            return f"profile {profile.name!r} lacks feature(s): trex"
        if gen.get("server") == "local":
            from drivers.trex.server import find_runtime
            return find_runtime()[1] or None
        return None
    if "softgen" not in profile.features:
        return f"profile {profile.name!r} lacks feature(s): softgen"
    if not softgen_binary().exists():
        return f"softgen not built ({softgen_binary()})"
    return None


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
    return topology.switch_p2p(lab, kind, flows, tag=tag)


def _switch_reader(topo):
    """() -> the switch's stats (its stats socket on any host), or None when not known."""
    if topo.read_switch_stats is not None:
        return topo.read_switch_stats
    if topo.switch_stats is not None:
        from dut.switch.launcher import read_stats

        def read():
            return read_stats(topo.switch_stats)
        return read
    if topo.rig_stats is not None:  # the switch's rig figures only (no counter cross-check)
        from dut.switch.launcher import read_stats
        return lambda: read_stats(topo.rig_stats)
    return None


_CEILING: dict[str, tuple[float, list[float]]] = {}


def _gen_ceiling(lab, progress) -> float | None:
    """softgen's own memif loopback ceiling (suites/throughput/rig.py), measured once per run
    on a local lab: the NDR search's upper bound (issue 44; was the wire's fixed rate)."""
    if "softgen" not in _CEILING:
        loop = topology.loopback(lab, tag="ceil")
        try:
            _CEILING["softgen"] = rig_setup.generator_ceiling_pps(loop.gen, loop.tx_port, loop.rx_port,
                                                                   ask_pps=topology.TX_ASK_PPS)
        finally:
            loop.close()
        med, rates = _CEILING["softgen"]
        progress(f"generator loopback ceiling: {med / 1e6:.2f} Mpps (trials "
                 f"{', '.join(f'{r / 1e6:.2f}' for r in rates)})")
    return _CEILING["softgen"][0]


def _search_max_rate(lab, profile, topo, progress) -> float:
    """The search's upper bound: the generator's ceiling measured in this run (softgen on a
    local lab), never above the wire's nominal rate; else the topology's fixed rate."""
    if is_remote(lab) or profile.generator["kind"] != "softgen" or topo.switch_kind is None:
        return topo.max_rate_pps
    return min(topo.max_rate_pps, _gen_ceiling(lab, progress))


def _cross_checked(topo, measure, checks: list):
    """measure() plus the switch's own port counters around every trial (see
    topology.switch_cross_check); raises CounterError on an impossible pair."""
    read = _switch_reader(topo) if topo.read_switch_stats or topo.switch_stats else None
    if read is None:
        return measure

    def checked(duration_s, rate_pps):
        before = read()
        c = measure(duration_s, rate_pps)
        after = read()
        if before and after:
            checks.append(topology.switch_cross_check(before, after, c.ports[topo.tx_port].tx,
                                                      c.ports[topo.rx_port].rx, topo.switch_ports))
        return c
    return checked


@pytest.mark.bench
def test_rfc2544_ndr_pdr(lab, profile, kind, case, results, progress, request):
    why = _gen_unavailable(profile, lab) or _switch_unavailable(kind, profile)
    if why:
        pytest.skip(why)
    size, flows = case
    nightly = request.config.getoption("--nightly")
    topo = _switch_topology(lab, profile, kind, flows, tag=f"t{next(_TAGS)}")
    checks: list[dict] = []
    pin = rig_setup.pin_others(lab, None if is_remote(lab) else rig_setup.housekeeping_core(
        os.environ.get(rig_setup.HOUSEKEEPING_ENV, rig_setup.HOUSEKEEPING_DEFAULT),
        topology.SWITCH_CORE, topology.GEN_WORKER_CORE),
        rig_setup.poller_nice_from_env(os.environ.get(rig_setup.POLLER_NICE_ENV)))
    try:
        measure = _cross_checked(topo, make_measure(topo.gen, _streams(topo.tx_port, topo.rx_port, size, flows),
                                                    drain_s=0.1), checks)
        # the rig's figures of every trial beside its counters (issue 44: suites/throughput/rig.py)
        measure = rig_setup.with_switch_rig(measure, _switch_reader(topo), topo.ring_slots)
        log = _search_log(lab)
        max_rate = _search_max_rate(lab, profile, topo, progress)
        pin.__enter__()  # the run's other threads off the pollers' cores (OFBENCH_RIG_HOUSEKEEPING)
        rig_setup.warm_up(measure, max_rate)
        if nightly:
            cfg = SearchConfig(max_rate_pps=max_rate, min_rate_pps=5_000, trial_duration_s=2.0,
                               final_duration_s=10.0, precision=0.02)
        else:  # the normal run: ~30 s per search on this box, bounded even when every trial is noise
            cfg = SearchConfig(max_rate_pps=max_rate, min_rate_pps=5_000, trial_duration_s=0.5,
                               final_duration_s=1.0, precision=0.05, max_trials=10, max_verifications=2)
        r = search_ndr_pdr(measure, cfg, lambda line: log(f"{kind} {size}B {flows} flows: {line}", progress))
        # back-to-back (RFC 2544 26.4): the longest burst at max rate with no loss, bounded by
        # what one short burst can tell on this box: a single trial at the top rate
        b2b = topo.gen.run([Stream("b2b", topo.tx_port, rx_port=topo.rx_port, frame_size=size,
                                   rate_pps=topo.max_rate_pps, count=50_000, flows=flows)], drain_s=0.2)
        m = r.metrics()
        m.update(rig_setup.trial_metrics(r.trials))
        if max_rate != topo.max_rate_pps:
            m["search_max_mpps"] = max_rate / 1e6
        m["b2b_burst_frames"] = float(b2b.streams["b2b"].tx if b2b.lost == 0 else 0)
        m["b2b_lost_packets"] = float(b2b.lost)
        if checks:  # every trial's generator counters agreed with the switch's (else CounterError)
            m["switch_cross_checked_trials"] = float(len(checks))
            last = checks[-1]
            m["switch_rx_packets_last_trial"], m["switch_tx_packets_last_trial"] = \
                float(last["switch_rx"]), float(last["switch_tx"])
        peers = MEASURED.setdefault(case, {})
        if kind == profile.switch["kind"]:
            for peer, pm in peers.items():
                if pm.get("ndr_mpps"):
                    m[f"ndr_mpps_vs_{peer.replace('-', '_')}"] = m["ndr_mpps"] / pm["ndr_mpps"]
                if pm.get("pdr_mpps"):
                    m[f"pdr_mpps_vs_{peer.replace('-', '_')}"] = m["pdr_mpps"] / pm["pdr_mpps"]
        peers[kind] = m
        results.record(_record_name(size, flows), metrics=m,
                       params={"frame_size": size, "flows": flows, "switch_kind": kind,
                               "trial_s": cfg.trial_duration_s, "precision": cfg.precision,
                               "ndr_verified": r.ndr.verified, "generator_limited": r.ndr.generator_limited},
                       provenance=_prov(topo.gen, topo.port_kind, kind, **(topo.hosts or {}),
                                        **({"generator_version": topo.generator_version}
                                           if topo.generator_version else {})),
                       check_targets_now=kind == profile.switch["kind"],
                       distributions=search_latency_distributions(r))
    finally:
        pin.__exit__(None, None, None)
        topo.close()


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
def test_trex_port_names_from_profile():
    assert topology.trex_port_names({"ports": {"b": {"trex_port": 1, "speed_gbps": 10},
                                               "a": {"trex_port": 0, "speed_gbps": 10}}}) == ("a", "b", 10_000.0)
    assert topology.trex_port_names({}) == ("t0", "t1", 10_000.0)


@pytest.mark.quick
def test_latency_distributions_from_either_generator():
    """softgen's and TRex's latency histograms become the quantiles the report draws as CDFs;
    TRex's unpublished min/max (0) fall back to its bucket edges."""
    from drivers.trafficgen.latency import stats_from_softgen
    from drivers.trex.driver import latency_from_trex
    sg = stats_from_softgen(100, 2000, 9000, 400_000, [(130, 60), (150, 40)])
    d = latency_distributions(sg)["latency_us"]
    assert d["samples"] == 100 and d["values"][0] == 2.0 and d["values"][-1] == 9.0
    assert d["values"] == sorted(d["values"])
    tr = latency_from_trex({"histogram": {"10": 5, "20": 5, "200": 1}, "total_min": 0,
                            "total_max": 0}, rx=11)
    d = latency_distributions(tr, "latency_at_50pct_of_pdr_us")["latency_at_50pct_of_pdr_us"]
    assert d["samples"] == 11 and d["values"][0] == 10.0 and d["values"][-1] == 300.0

    class Search:
        latency = {0.5: sg, 0.9: None}
    assert set(search_latency_distributions(Search())) == {"latency_at_50pct_of_pdr_us"}
