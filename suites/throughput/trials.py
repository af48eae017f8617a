"""The throughput suite's trial helpers, shared by its tests (test_throughput, test_rig) and
by suites/interop's FAUCET-pipeline RFC 2544 (issue 43: no test module imports another; these
were test_throughput.py's): the trial's streams, the generator's loopback ceilings (measured
once per run, the search's upper bound, issue 44), the switch's counters read around every trial,
the RFC 9971 goals from the profile, the search's log, latency histograms, provenance."""
from __future__ import annotations

import time
from pathlib import Path

from distributions import hdrh_from_buckets, hdrh_metrics
from drivers.lab.base import is_remote
from drivers.softgen.driver import binary as softgen_binary
from drivers.trafficgen.mlr import MlrConfig, goals_from_section
from drivers.trafficgen.model import Stream

from . import rig as rig_setup
from . import topology


def _prov(gen, port_kind, switch_kind=None, **extra):
    return {"generator": gen.name, "generator_version": gen.version, "port_kind": port_kind,
            "dut_switch_kind": switch_kind or "none", **extra}


def latency_distributions(lat, key: str = "latency_us") -> dict:
    """{key: hdrh} of a latency stream's whole histogram (HdrHistogram's V2 encoding,
    distributions/), beside the p50/p99 metrics: what the report draws as a CDF and
    reads every percentile from; {} without samples. Each bucket of the generator's histogram
    (softgen's log-linear ns buckets, TRex's) counts at its upper edge."""
    if lat is None or not lat.samples or not lat.histogram:
        return {}
    d = hdrh_from_buckets(lat.histogram)
    return {key: d} if d else {}


def search_latency_distributions(result) -> dict:
    """The latency trials of an NDR/PDR search (at fractions of the PDR rate) as hdrh
    histograms, keyed latency_at_<pct>pct_of_pdr_us."""
    out = {}
    for frac, lat in sorted((result.latency or {}).items()):
        out.update(latency_distributions(lat, f"latency_at_{int(round(frac * 100))}pct_of_pdr_us"))
    return out


def search_latency_metrics(dists: dict) -> dict:
    """latency_p50/p90/p99/p99_9/p99_99_us_at_<pct>pct from the search's hdrh histograms."""
    out = {}
    for key, d in dists.items():
        pct = key.removeprefix("latency_at_").removesuffix("pct_of_pdr_us")
        out.update(hdrh_metrics(d, f"_at_{pct}pct"))
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


def _switch_reader(topo):
    """() -> the switch's stats (its stats socket on any host), or None when not known."""
    if topo.read_switch_stats is not None:
        return topo.read_switch_stats
    if topo.switch_stats is not None:
        from dut.switch.launcher import read_stats

        def read():
            return read_stats(topo.switch_stats)
        return read
    return None


_CEILING: dict[str, tuple[float, list[float]]] = {}
# Which ceiling a record's ratio is judged against (issue 44): the generator's loopback in the
# layout it has in the switch run. softgen: one process, one worker sending and receiving
# (topology.same_config_loopback); its loopback with a second process receiving on the other
# core ("softgen_two_core", topology.loopback) is recorded beside it. TRex's loopback is its
# switch run's server with the same cores (low_end: one CPU), i.e. already the same config.
SAME_CONFIG = {"softgen": "softgen", "trex": "trex"}
TWO_CORE = {"softgen": "softgen_two_core"}


def _measure_ceiling(key: str, make_topo, ask_pps, progress, what: str) -> None:
    loop = make_topo()
    try:
        _CEILING[key] = rig_setup.generator_ceiling_pps(loop.gen, loop.tx_port, loop.rx_port,
                                                        ask_pps=ask_pps or loop.max_rate_pps)
    finally:
        loop.close()
    med, rates = _CEILING[key]
    progress(f"{what}: {med / 1e6:.2f} Mpps (trials {', '.join(f'{r / 1e6:.2f}' for r in rates)})")


def _gen_ceiling(lab, progress, ring_log2: int | None = None) -> float | None:
    """softgen's own memif loopback ceilings (suites/throughput/rig.py), measured once per run
    on a local lab: the same-config one (one worker sending and receiving, the switch run's
    ring size ``ring_log2``: the yardstick and the NDR search's upper bound) and the two-core
    one (a second process receiving on the other core: recorded beside it)."""
    if "softgen" not in _CEILING:
        _measure_ceiling("softgen", lambda: topology.same_config_loopback(lab, tag="ceils", ring_log2=ring_log2),
                         topology.TX_ASK_PPS, progress,
                         "generator loopback ceiling, same config (one worker TX+RX)")
        _measure_ceiling("softgen_two_core", lambda: topology.loopback(lab, tag="ceil"), topology.TX_ASK_PPS,
                         progress, "generator loopback ceiling, two cores (TX on one, RX on the other)")
    return _CEILING["softgen"][0]


def _lab_ceiling(lab, profile, progress) -> tuple[float | None, str | None]:
    """(pps, None): the lab generator host's same-config loopback ceiling
    (topology.links_same_config_loopback), measured once per run on a remote lab; (None, why)
    when that host cannot measure it for this profile (the record says why)."""
    why = topology.links_same_config_unavailable(profile)
    if why:
        return None, why
    if "lab_softgen" not in _CEILING:
        _measure_ceiling("lab_softgen", lambda: topology.links_same_config_loopback(lab, profile, tag="ceils"),
                         topology.TX_ASK_PPS, progress,
                         "generator loopback ceiling on the lab's generator host, same config (one worker TX+RX)")
    return _CEILING["lab_softgen"][0], None


def ceilings_of(generator_kind: str) -> tuple[float | None, float | None]:
    """(same-config, two-core) ceilings in pps measured in this run for a generator kind (None:
    not measured)."""
    same = _CEILING.get(SAME_CONFIG.get(generator_kind, ""))
    two = _CEILING.get(TWO_CORE.get(generator_kind, ""))
    return (same[0] if same else None), (two[0] if two else None)


def _trex_ceiling(lab, profile, progress) -> float | None:
    """TRex's own memif loopback ceiling (topology.trex_loopback), measured once per run on a
    local lab before the first switch topology (two TRex servers are not started at once)."""
    if "trex" not in _CEILING:
        _measure_ceiling("trex", lambda: topology.trex_loopback(lab, profile.generator, tag="tceil"), None,
                         progress, "TRex loopback ceiling, same config (its switch run's server and cores)")
    return _CEILING["trex"][0]


def _search_max_rate(lab, profile, topo, progress) -> float:
    """The search's upper bound: the generator's ceiling measured in this run (softgen, or a
    local TRex server: _trex_ceiling, measured before the topology; a remote lab: softgen's on
    its generator host, _lab_ceiling), never above the wire's nominal rate; else the
    topology's fixed rate."""
    if topo.switch_kind is None:
        return topo.max_rate_pps
    if is_remote(lab):
        ceiling = _lab_ceiling(lab, profile, progress)[0]
        return min(topo.max_rate_pps, ceiling) if ceiling else topo.max_rate_pps
    if profile.generator["kind"] == "trex":
        return min(topo.max_rate_pps, _CEILING["trex"][0]) if "trex" in _CEILING else topo.max_rate_pps
    log2 = topo.ring_slots.bit_length() - 1 if topo.port_kind == "memif" and topo.ring_slots != 1024 else None
    return min(topo.max_rate_pps, _gen_ceiling(lab, progress, log2))


def _cross_checked(topo, measure, checks: list):
    """measure() plus the switch's own port counters around every trial (see
    topology.switch_cross_check); raises CounterError on an impossible pair."""
    read = _switch_reader(topo)
    pmd = topo.read_pmd_stats
    if read is None and pmd is None:
        return measure

    def checked(duration_s, rate_pps):
        before = read() if read else None
        pmd0 = pmd() if pmd else None
        c = measure(duration_s, rate_pps)
        pmd1 = pmd() if pmd else None
        after = read() if read else None
        if before and after:
            if topo.cross_check:
                checks.append(topology.switch_cross_check(before, after, c.ports[topo.tx_port].tx,
                                                          c.ports[topo.rx_port].rx, topo.switch_ports))
            # the switch's own view of the trial, read outside its window (issue 40 part 6)
            c.dut = topology.switch_telemetry(before, after, topo.switch_ports)
        if pmd0 is not None and pmd1 is not None:
            # OVS-DPDK's own view of the trial: pmd-stats-show's change (issue 40 part 6)
            from drivers.lab.switches import ovs_pmd_telemetry
            c.dut.update(ovs_pmd_telemetry(pmd0, pmd1))
        return c
    return checked


def mlr_config(profile, max_rate_pps: float, nightly: bool, **kw) -> MlrConfig:
    """The profile's RFC 9971 goals (or the quick / nightly defaults) and loads."""
    sec = profile.section("search")
    return MlrConfig(max_rate_pps=min(sec.get("max_load") or max_rate_pps, max_rate_pps),
                     min_rate_pps=sec.get("min_load") or 5_000,
                     goals=goals_from_section(sec, nightly), **kw)
