"""Repetitions of a metric inside one run, and the spread they show.

A metric is measured more than once in a run in one of three ways, all read here:

1. the same record written again: records with the same key (suite, name, dut_switch_kind,
   generator, port_kind) in one results.jsonl (a test run with repetitions, `--count`, a
   re-run); each record's value is one repetition;
2. one record carrying its repetitions in params: a list of numbers under
   ``<metric>_trials``, ``<metric>_reps`` or ``<metric>_samples`` (vmwire's ``rx_mbps_trials``);
3. one record carrying a mean and its standard deviation: metric ``<metric>_stdev`` (or
   ``_std``/``_sd``) beside ``<metric>``, with the count in params ``reps``/``trials``/
   ``repetitions`` when known (the controller's ``high_ms`` / ``high_ms_stdev``). The spread
   is then mean +- 1 sd, marked as such: min and max were not recorded.

:func:`spread` turns the values into a :class:`Spread` (median, min, max, count); a goal whose
bound lies inside [min, max] is inconclusive (reports.goals). Pure functions, no I/O.
"""
from __future__ import annotations

import dataclasses
import math
import statistics
from typing import Iterable, Mapping, Sequence

REP_SUFFIXES = ("_trials", "_reps", "_samples")
STDEV_SUFFIXES = ("_stdev", "_std", "_sd")
COUNT_PARAMS = ("reps", "trials", "repetitions", "trials_per_path")
KEY_PROVENANCE = ("dut_switch_kind", "generator", "port_kind")


def number(v) -> float | None:
    """A finite float, or None for null/str/NaN (bools count as 1/0)."""
    if v is None or isinstance(v, str) or isinstance(v, (list, dict)):
        return None
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


@dataclasses.dataclass
class Spread:
    median: float
    lo: float
    hi: float
    n: int
    kind: str = "values"        # values (min..max of repetitions) | stdev (mean +- 1 sd)
    values: list[float] = dataclasses.field(default_factory=list)

    @property
    def repeated(self) -> bool:
        return self.n > 1

    def as_dict(self) -> dict:
        return {"median": self.median, "min": self.lo, "max": self.hi, "n": self.n,
                "spread_kind": self.kind, "values": self.values}


def spread(values: Sequence[float]) -> Spread | None:
    vals = [v for v in (number(x) for x in values) if v is not None]
    if not vals:
        return None
    return Spread(statistics.median(vals), min(vals), max(vals), len(vals), "values", vals)


def record_key(rec: Mapping) -> tuple:
    prov = rec.get("provenance", {}) or {}
    return (rec.get("suite"), rec.get("name")) + tuple(str(prov.get(k, "")) for k in
                                                        KEY_PROVENANCE)


def group_repetitions(records: Iterable[Mapping]) -> dict[tuple, list[Mapping]]:
    """Records by key, in first-seen order; a group of more than one is a repeated record."""
    groups: dict[tuple, list[Mapping]] = {}
    for r in records:
        groups.setdefault(record_key(r), []).append(r)
    return groups


def in_record_repetitions(rec: Mapping, metric: str) -> Spread | None:
    """The repetitions one record carries for `metric` (ways 2 and 3 above), or None."""
    params = rec.get("params", {}) or {}
    metrics = rec.get("metrics", {}) or {}
    for suffix in REP_SUFFIXES:
        vals = params.get(metric + suffix)
        if isinstance(vals, (list, tuple)) and len(vals) > 1:
            s = spread(vals)
            if s and s.n > 1:
                # the record's own value (a median or a mean) is the figure shown
                own = number(metrics.get(metric))
                if own is not None:
                    s.median = own
                return s
    mean = number(metrics.get(metric))
    if mean is None:
        return None
    for suffix in STDEV_SUFFIXES:
        sd = number(metrics.get(metric + suffix))
        if sd is not None:
            counts = [number(src.get(k)) for src in (params, metrics) for k in COUNT_PARAMS
                      if not isinstance(src.get(k), bool)]
            n = int(next((c for c in counts if c is not None), 0))
            if n == 1:
                return None
            return Spread(mean, mean - sd, mean + sd, n, "stdev", [])
    return None


def metric_spread(records: Sequence[Mapping], metric: str) -> Spread | None:
    """Spread of `metric` over records that are repetitions of one measurement (one key):
    one value per record; a single record contributes its in-record repetitions instead."""
    vals = [v for v in (number((r.get("metrics") or {}).get(metric)) for r in records)
            if v is not None]
    if not vals:
        return None
    if len(records) == 1:
        return in_record_repetitions(records[0], metric) or spread(vals)
    return spread(vals)


def is_spread_metric(metric: str, metrics: Mapping) -> bool:
    """True for `x_stdev` when `x` is a metric too (shown inside x's cell, not as a column)."""
    return any(metric.endswith(s) and metric[:-len(s)] in metrics for s in STDEV_SUFFIXES)
