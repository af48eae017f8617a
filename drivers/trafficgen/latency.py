"""Latency histogram of softgen (log-linear buckets in ns) -> summary statistics.

Bucket layout mirrors softgen_hist_index() in drivers/softgen/softgen.h: values below 16 ns have
one bucket each; above, every power of two is split into 16 equal sub-buckets, so a bucket is
at most 6.25 % wide.  Percentiles report the upper edge of the bucket holding the rank (a
conservative bound: the true value is at most that), clamped to the exact max.
"""
from __future__ import annotations

from dataclasses import dataclass, field

SUB_BITS = 4
SUB = 1 << SUB_BITS
BUCKETS = 640
PERCENTILES = (50.0, 90.0, 99.0, 99.9)


def bucket_index(ns: int) -> int:
    if ns < SUB:
        return int(ns)
    e = ns.bit_length() - 1
    sub = (ns >> (e - SUB_BITS)) & (SUB - 1)
    return min((e - SUB_BITS + 1) * SUB + sub, BUCKETS - 1)


def bucket_bounds_ns(index: int) -> tuple[int, int]:
    """[low, high) in ns of a bucket."""
    if index < SUB:
        return index, index + 1
    group, sub = divmod(index, SUB)
    width = 1 << (group - 1)
    low = (SUB + sub) * width
    return low, low + width


@dataclass
class LatencyStats:
    """Latency of one stream in microseconds; histogram as [(low_us, high_us, count)]."""

    samples: int = 0
    min_us: float = 0.0
    avg_us: float = 0.0
    max_us: float = 0.0
    p50_us: float = 0.0
    p90_us: float = 0.0
    p99_us: float = 0.0
    p99_9_us: float = 0.0
    jitter_us: float | None = None
    histogram: list[tuple[float, float, int]] = field(default_factory=list)

    def as_metrics(self, prefix: str = "latency_") -> dict[str, float]:
        return {
            f"{prefix}min_us": self.min_us, f"{prefix}avg_us": self.avg_us,
            f"{prefix}max_us": self.max_us, f"{prefix}p50_us": self.p50_us,
            f"{prefix}p90_us": self.p90_us, f"{prefix}p99_us": self.p99_us,
            f"{prefix}p99_9_us": self.p99_9_us,
        }


def percentile_from_buckets(buckets: list[tuple[int, int]], pct: float, max_ns: int) -> int:
    """Upper edge (ns) of the bucket holding the pct-th percentile; buckets = [(index, count)]."""
    total = sum(c for _, c in buckets)
    if total == 0:
        return 0
    rank = max(1, -(-total * pct // 100))  # ceil without floats for the common cases
    seen = 0
    for index, count in sorted(buckets):
        seen += count
        if seen >= rank:
            return min(bucket_bounds_ns(index)[1] - 1, max_ns)
    return max_ns


def stats_from_softgen(n: int, min_ns: int, max_ns: int, sum_ns: int,
                       buckets: list[tuple[int, int]]) -> LatencyStats:
    if n == 0:
        return LatencyStats()
    p = {pct: percentile_from_buckets(buckets, pct, max_ns) / 1000.0 for pct in PERCENTILES}
    hist = [(bucket_bounds_ns(i)[0] / 1000.0, bucket_bounds_ns(i)[1] / 1000.0, c)
            for i, c in sorted(buckets)]
    return LatencyStats(samples=n, min_us=min_ns / 1000.0, avg_us=sum_ns / n / 1000.0,
                        max_us=max_ns / 1000.0, p50_us=p[50.0], p90_us=p[90.0], p99_us=p[99.0],
                        p99_9_us=p[99.9], histogram=hist)


def merge_bucket_lists(*lists: list[tuple[int, int]]) -> list[tuple[int, int]]:
    acc: dict[int, int] = {}
    for lst in lists:
        for i, c in lst:
            acc[i] = acc.get(i, 0) + c
    return sorted(acc.items())
