"""The rig of an end-to-end NDR search on one box (issue 44): the generator's own ceiling
measured in the same run (the search's upper bound), a warm-up before the first trial, the
switch's rig figures around each trial, and a summary of what the trials' rig measured.

The generator's ceiling: one softgen worker sending and receiving on a net_ring port that loops
onto itself (what the switch topology asks of softgen's one worker: TX on p0, RX on p1, minus
the wire), asked for more than it can send, for a few short trials; the median received rate.
"""
from __future__ import annotations

import statistics
from typing import Callable

from drivers.trafficgen.counters import Counters
from drivers.trafficgen.model import Stream
from drivers.trafficgen.rig import cause_summary, switch_rig

CEILING_TRIALS = 3
CEILING_TRIAL_S = 0.5
WARM_UP_S = 1.0
WARM_UP_FRACTION = 0.1


def received_rate_pps(c: Counters, duration_s: float) -> float:
    """What came back per second of the trial: rx over the TX window when known (start-up and
    the catch-up grace excluded), else over the scheduled duration (pure)."""
    window = max((s.tx_window_s for s in c.streams.values()), default=0.0)
    span = window if window > 0 else duration_s
    return c.rx / span if span > 0 else 0.0


def generator_ceiling_pps(gen, port: str, size: int = 64, ask_pps: float = 40e6,
                          trials: int = CEILING_TRIALS, trial_s: float = CEILING_TRIAL_S) -> tuple[float, list[float]]:
    """(median, every trial's) received rate of ``gen`` on a port looped onto itself, asked
    ``ask_pps`` (more than one core sends)."""
    rates = []
    for _ in range(trials):
        c = gen.run([Stream("ceiling", port, rx_port=port, frame_size=size, rate_pps=ask_pps,
                            duration_s=trial_s)], drain_s=0.05)
        rates.append(received_rate_pps(c, trial_s))
    return statistics.median(rates), rates


def warm_up(measure: Callable[[float, float], Counters], max_rate_pps: float,
            duration_s: float = WARM_UP_S, fraction: float = WARM_UP_FRACTION) -> Counters:
    """One trial, not judged, before the search: page faults, flow-cache fills, the first
    scheduler migrations happen here rather than in the first judged trial."""
    return measure(duration_s, max_rate_pps * fraction)


def with_switch_rig(measure: Callable[[float, float], Counters], read_stats: Callable[[], dict | None],
                    ring_slots: int) -> Callable[[float, float], Counters]:
    """measure() plus the switch's rig figures (its worker's longest gap, rx backlog) from its
    stats around the trial, and the ring size the cause is judged against, in Counters.rig."""
    def measured(duration_s: float, rate_pps: float) -> Counters:
        before = read_stats() if read_stats else None
        c = measure(duration_s, rate_pps)
        after = read_stats() if read_stats else None
        c.rig.update(switch_rig(before, after))
        c.rig["ring_slots"] = float(ring_slots)
        return c
    return measured


def spread(values: list[float]) -> float | None:
    """(max - min) / median; None for fewer than 2 values or a median of 0 (pure)."""
    if len(values) < 2:
        return None
    med = statistics.median(values)
    return (max(values) - min(values)) / med if med > 0 else None


def trial_metrics(trials) -> dict[str, float]:
    """A record's metrics from a search's trials (anything with passed, cause and rig): the
    longest gaps seen in any trial, and how many failed trials had each cause."""
    m: dict[str, float] = {}
    for key in ("gen_max_gap_ns", "switch_max_gap_ns", "gen_rx_backlog_pkts", "switch_rx_backlog_pkts"):
        vals = [t.rig[key] for t in trials if t.rig and key in t.rig]
        if vals:
            unit = "us" if key.endswith("_ns") else "pkts"
            name = key.removesuffix("_ns").removesuffix("_pkts")
            m[f"rig_{name}_{unit}_max"] = max(vals) / (1e3 if unit == "us" else 1)
            m[f"rig_{name}_{unit}_median"] = statistics.median(vals) / (1e3 if unit == "us" else 1)
    for cause, n in cause_summary(t.cause for t in trials).items():
        m[f"failed_trials_{cause.lower().replace(' ', '_')}"] = float(n)
    return m
