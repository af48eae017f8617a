"""Compact distributions in a result record (the ``distributions`` field, result-v2.json).

A record's ``metrics`` stay flat numbers (p50, p99, mean: what goals, the trend and ``reports
compare`` judge). Beside them a record may carry the *shape* of a measured distribution in a
few dozen numbers, never every sample, under a key that names the quantity and its unit::

    "distributions": {
      "latency_us":    {"kind": "quantiles", "at": [0, 0.01, ..., 0.999, 1],
                        "values": [3.1, 3.4, ..., 41.0, 58.2], "samples": 20000},
      "app3_delay_ms": {"kind": "histogram", "bin_width": 5, "first_edge": 10,
                        "counts": [12, 340, 97, 4], "above": 0, "samples": 453}
    }

- ``quantiles``: the value below which a fraction ``at[i]`` of the samples fall (``at`` rises
  from 0 = min to 1 = max; QUANTILE_POINTS by default). A CDF is drawn from it (reports/charts.py
  kind ``cdf``). From raw samples: linear interpolation between order statistics; from a
  generator's latency histogram: linear interpolation inside the bucket holding the rank,
  clamped to the recorded min and max (so the curve is exact at its ends and within one bucket
  width elsewhere).
- ``histogram``: fixed bins of ``bin_width`` whose edges are multiples of it; ``counts[i]`` holds
  the samples in ``[first_edge + i*w, first_edge + (i+1)*w)``; leading and trailing empty bins
  are left out; at most MAX_BINS bins, the samples beyond the last are counted in ``above``.
  Document 002's Figures 7-8 are 5 ms bins (reports/charts.py kind ``histogram``).
- ``hdrh`` (schema v2): the whole latency histogram as HdrHistogram's compressed V2 encoding
  (PyPI ``hdrhistogram``, the encoding NFVbench records), values as integers of 1/``per_unit``
  of the key's unit (``per_unit: 1000`` = ns for a ``_us`` key), 3 significant digits: every
  percentile (p50 ... p99.99) and the CDF are read from it, not from a few quantiles. From a
  generator's bucketed histogram each bucket's count is recorded at its upper edge (the
  conservative bound the generators' own percentiles use).

``reports compare``, the trend and the Influx export read ``metrics`` only: a distribution is
drawn, never judged bin by bin. Pure functions; producers (suites/) call them, reports/ reads.
Imports nothing of ofbench (hdrhistogram only), so it is a bottom package beside paths/ since
issue 43 (it was reports/distributions.py, which the suites below reports reached up to); its
tests, which follow a record through the writer, compare and the trend, stay in
reports/tests/test_distributions.py.
"""
from __future__ import annotations

import math
import re
from typing import Iterable, Mapping, Sequence

QUANTILE_POINTS = (0.0, 0.01, 0.02, 0.05, 0.1, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6, 0.7, 0.75, 0.8,
                   0.9, 0.95, 0.98, 0.99, 0.995, 0.999, 1.0)
MAX_BINS = 80
# The key names the quantity and ends in its unit (the schema checks the same pattern).
KEY_RE = re.compile(r"^[a-z][a-z0-9_]*_(ns|us|ms|s|b|kb|mb|pct)$")


def _round(x: float, nd: int = 5) -> float:
    return float(f"{x:.{nd}g}") if x else 0.0


def quantiles_from_samples(values: Iterable[float],
                           points: Sequence[float] = QUANTILE_POINTS) -> dict | None:
    """Quantiles of raw samples (linear between order statistics); None without samples."""
    d = sorted(float(v) for v in values if v is not None and math.isfinite(float(v)))
    if not d:
        return None
    out = []
    for q in points:
        k = (len(d) - 1) * q
        lo, hi = math.floor(k), math.ceil(k)
        out.append(_round(d[lo] + (d[hi] - d[lo]) * (k - lo)))
    return {"kind": "quantiles", "at": list(points), "values": out, "samples": len(d)}


def quantiles_from_histogram(buckets: Iterable[tuple[float, float, int]],
                             lo: float | None = None, hi: float | None = None,
                             points: Sequence[float] = QUANTILE_POINTS) -> dict | None:
    """Quantiles of a bucketed distribution [(low, high, count)] (a generator's latency
    histogram), linear inside a bucket, clamped to the exact min/max when given."""
    b = sorted((float(l), float(h), int(c)) for l, h, c in buckets if c > 0)
    n = sum(c for _, _, c in b)
    if not n:
        return None
    lo = b[0][0] if lo is None else float(lo)
    hi = b[-1][1] if hi is None else float(hi)
    out = []
    for q in points:
        rank = q * n
        seen = 0
        v = b[-1][1]
        for low, high, c in b:
            if seen + c >= rank:
                v = low + (high - low) * ((rank - seen) / c)
                break
            seen += c
        out.append(_round(min(max(v, lo), hi)))
    out[0], out[-1] = _round(lo), _round(hi)
    for i in range(1, len(out)):   # clamping can break monotony at the ends: keep it rising
        out[i] = max(out[i], out[i - 1])
    return {"kind": "quantiles", "at": list(points), "values": out, "samples": n}


def histogram_from_samples(values: Iterable[float], bin_width: float,
                           max_bins: int = MAX_BINS) -> dict | None:
    """Counts in fixed bins of bin_width (edges at its multiples); None without samples."""
    if bin_width <= 0:
        raise ValueError(f"bin_width must be > 0, got {bin_width}")
    idx = sorted(math.floor(float(v) / bin_width) for v in values
                 if v is not None and math.isfinite(float(v)))
    if not idx:
        return None
    first = idx[0]
    counts = [0] * min(max_bins, idx[-1] - first + 1)
    above = 0
    for i in idx:
        if i - first < len(counts):
            counts[i - first] += 1
        else:
            above += 1
    return {"kind": "histogram", "bin_width": bin_width, "first_edge": _round(first * bin_width, 12),
            "counts": counts, "above": above, "samples": len(idx)}


HDRH_DIGITS = 3
HDRH_HIGHEST = 3_600_000_000_000     # 1 h in ns: the largest value an hdrh may hold
HDRH_PERCENTILES = (50.0, 90.0, 99.0, 99.9, 99.99)


def hdrh_from_buckets(buckets: Iterable[tuple[float, float, int]], per_unit: int = 1000,
                      ) -> dict | None:
    """A generator's latency buckets [(low, high, count)] in the key's unit as an ``hdrh``
    distribution (each count at the bucket's upper edge less one tick); None when empty."""
    from hdrh.histogram import HdrHistogram
    h = HdrHistogram(1, HDRH_HIGHEST, HDRH_DIGITS)
    n = 0
    for lo, hi, count in buckets:
        if count <= 0:
            continue
        v = max(1, min(HDRH_HIGHEST, int(round(float(hi) * per_unit)) - 1))
        h.record_value(v, int(count))
        n += int(count)
    if not n:
        return None
    return {"kind": "hdrh", "encoded": h.encode().decode("ascii"), "per_unit": per_unit,
            "samples": n}


def _hdrh(d: Mapping):
    from hdrh.histogram import HdrHistogram
    return HdrHistogram.decode(str(d["encoded"]).encode("ascii"))


def hdrh_percentiles(d: Mapping, percentiles: Sequence[float] = HDRH_PERCENTILES
                     ) -> dict[float, float]:
    """{percentile: value in the key's unit} of an ``hdrh`` distribution."""
    h = _hdrh(d)
    per = float(d["per_unit"])
    return {p: h.get_value_at_percentile(p) / per for p in percentiles}


def hdrh_metrics(d: Mapping, suffix: str = "", prefix: str = "latency_") -> dict[str, float]:
    """latency_p50_us ... latency_p99_99_us (+ suffix) of an ``hdrh`` _us distribution."""
    out = {}
    for p, v in hdrh_percentiles(d).items():
        name = f"{p:g}".replace(".", "_")
        out[f"{prefix}p{name}_us{suffix}"] = v
    return out


def problems(distributions: Mapping) -> list[str]:
    """What is wrong with a record's distributions field beyond its shape (the schema checks
    that, and the unit at the end of each key): lengths, order, sums; [] when fine."""
    out = []
    for key, d in (distributions or {}).items():
        if not isinstance(d, Mapping):
            continue   # the schema names it
        try:
            out += _sense(key, d)
        except (TypeError, ValueError):
            continue   # wrong types: the schema names them
    return out


def _sense(key: str, d: Mapping) -> list[str]:
    where = f"distributions.{key}"
    if d.get("kind") == "quantiles":
        at, vals = list(d.get("at") or []), list(d.get("values") or [])
        if len(at) != len(vals) or not at:
            return [f"{where}: 'at' and 'values' differ in length"]
        if any(b < a for a, b in zip(at, at[1:])) or any(b < a for a, b in zip(vals, vals[1:])):
            return [f"{where}: 'at' and 'values' must not fall"]
    elif d.get("kind") == "histogram":
        total = sum(d.get("counts") or []) + (d.get("above") or 0)
        if d.get("samples") is not None and total != d["samples"]:
            return [f"{where}: counts + above = {total}, samples = {d['samples']}"]
    elif d.get("kind") == "hdrh":
        try:
            total = _hdrh(d).get_total_count()
        except Exception:   # the library raises several kinds on a corrupt string
            return [f"{where}.encoded: not an HdrHistogram V2 encoding"]
        if total != d.get("samples"):
            return [f"{where}: the histogram holds {total} values, samples = {d.get('samples')}"]
    return []


# ---- readers (reports/charts.py) -----------------------------------------------------------

def cdf_points(d: Mapping) -> tuple[list[float], list[float]]:
    """(x, cumulative fraction) of a quantiles or histogram distribution, for a CDF line."""
    if d.get("kind") == "quantiles":
        return [float(v) for v in d["values"]], [float(a) for a in d["at"]]
    if d.get("kind") == "histogram":
        w, first = float(d["bin_width"]), float(d["first_edge"])
        n = sum(d["counts"]) + d.get("above", 0)
        xs, ys, seen = [first], [0.0], 0
        for i, c in enumerate(d["counts"]):
            seen += c
            xs.append(first + (i + 1) * w)
            ys.append(seen / n if n else 0.0)
        return xs, ys
    if d.get("kind") == "hdrh":
        h, per = _hdrh(d), float(d["per_unit"])
        n = h.get_total_count()
        xs, ys, seen = [], [], 0
        for it in h.get_recorded_iterator():
            if not xs:
                xs.append(h.get_lowest_equivalent_value(it.value_iterated_to) / per)
                ys.append(0.0)
            seen += it.count_at_value_iterated_to
            xs.append(it.value_iterated_to / per)
            ys.append(seen / n if n else 0.0)
        return xs, ys
    raise ValueError(f"unknown distribution kind {d.get('kind')!r}")


def histogram_bins(d: Mapping) -> tuple[list[float], list[int], int]:
    """(left edges, counts, above) of a histogram distribution."""
    if d.get("kind") != "histogram":
        raise ValueError(f"not a histogram: kind {d.get('kind')!r}")
    w, first = float(d["bin_width"]), float(d["first_edge"])
    return ([first + i * w for i in range(len(d["counts"]))], list(d["counts"]),
            int(d.get("above", 0)))


def unit_of(key: str) -> str:
    m = KEY_RE.match(key)
    return m.group(1) if m else ""
