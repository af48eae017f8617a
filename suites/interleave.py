"""Interleaved comparisons: two systems up at once, run by turns, the idle one paused
(drivers/supervisor.py Supervisor.pause), so each window has the box to itself and the two
windows of a pair are seconds apart. Used where the host's slow and fast spells (minutes long,
2x apart on the shared 2-core box, docs/results.md) are larger than the difference measured:
suites/vmwire (ofbench vs OVS-DPDK over vhost-user) and suites/softgen (softgen vs TRex TX).
Pure functions, no I/O."""
from __future__ import annotations

import statistics


def interleaved_order(pairs: int, labels: tuple[str, str]) -> list[tuple[str, str]]:
    """ABBAABBA...: each pair's two windows back to back, the first of a pair alternating so
    neither side always follows the other (a drift over the run cancels)."""
    a, b = labels
    return [(a, b) if i % 2 == 0 else (b, a) for i in range(pairs)]


def pair_ratios(ours: list[float], peer: list[float]) -> list[float]:
    """ours[i] / peer[i] for every pair whose peer window is non-zero."""
    return [round(a / b, 3) for a, b in zip(ours, peer) if b]


def pair_summary(ratios: list[float], key: str) -> dict:
    """``key`` (the median ratio), ``<key>_pair_min``/``_pair_max`` and ``pairs_at_least_1``."""
    return {key: round(statistics.median(ratios), 3) if ratios else None,
            f"{key}_pair_min": min(ratios, default=None),
            f"{key}_pair_max": max(ratios, default=None),
            "pairs_at_least_1": sum(1 for r in ratios if r >= 1.0),
            "pairs": len(ratios)}
