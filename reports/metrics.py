"""Which way a metric is better, read from its name (units in key names): used by the run
index to colour comparisons and by the nightly trend to call a change a regression. The rules
are documented in reports/trend.py's module comment."""
from __future__ import annotations

LOWER_WORDS = frozenset({
    "latency", "lat", "lost", "loss", "losses", "drop", "drops", "dropped", "error", "errors",
    "err", "errs", "fail", "failed", "failures", "fails", "miss", "misses", "missed", "jitter",
    "timeout", "timeouts", "unsent", "retries", "retransmits", "cycles", "ooo", "dup", "dups",
    "duplicate", "duplicates", "reorder", "reordered", "overruns", "stalls", "flaky",
    "spread",
})
HIGHER_UNITS = frozenset({"mpps", "kpps", "pps", "mlps", "klps", "lps", "mbps", "gbps", "kbps",
                          "bps", "ops", "mops", "kops", "fps", "rps", "tps", "cps"})
LOWER_UNITS = frozenset({"ns", "us", "ms", "s", "sec", "secs", "seconds"})
HIGHER_WORDS = frozenset({"ok", "pass", "passed", "passes", "hit", "hits", "ndr", "pdr",
                          "throughput", "goodput", "speedup", "score", "success", "successes",
                          "rate"})
# Names the rules cannot read: the controller's completion times against FIFO (document 000)
# and vmwire's context switches per packet against the kernel path (document 001).
DIRECTION_OVERRIDES: dict[str, int] = {"high_ratio": -1, "low_ratio": -1, "ctx_ratio": -1,
                                       "host_ctx_ratio": -1}


def metric_direction(metric: str) -> int:
    """+1 higher is better, -1 lower is better, 0 no direction (not judged). See module doc."""
    if metric in DIRECTION_OVERRIDES:
        return DIRECTION_OVERRIDES[metric]
    tokens = [t for t in metric.lower().split("_") if t]
    if not tokens:
        return 0
    if any(t in LOWER_WORDS for t in tokens):
        return -1
    if tokens[-1] in HIGHER_UNITS:
        return 1
    if tokens[-1] in LOWER_UNITS:
        return -1
    if any(t in HIGHER_UNITS for t in tokens):   # e.g. tx_mpps_vs_testpmd_ratio
        return 1
    if any(t in LOWER_UNITS for t in tokens):    # e.g. p99_us_vs_peer_ratio
        return -1
    if any(t in HIGHER_WORDS for t in tokens):
        return 1
    return 0
