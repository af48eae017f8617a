"""Interleaved comparisons: two systems up at once, run by turns, the idle one paused
(drivers/supervisor.py Supervisor.pause), so each window has the box to itself and the two
windows of a pair are seconds apart. Used where the host's slow and fast spells (minutes long,
2x apart on the shared 2-core box, docs/results.md) are larger than the difference measured:
suites/vmwire (ofbench vs OVS-DPDK over vhost-user) and suites/softgen (softgen vs TRex TX).
The schedule and the ratios are pure; :func:`by_turns` drives the processes."""
from __future__ import annotations

import statistics
import time
from contextlib import contextmanager
from typing import Callable


def interleaved_order(pairs: int, labels: tuple[str, str]) -> list[tuple[str, str]]:
    """ABBAABBA...: each pair's two windows back to back, the first of a pair alternating so
    neither side always follows the other (a drift over the run cancels)."""
    a, b = labels
    return [(a, b) if i % 2 == 0 else (b, a) for i in range(pairs)]


def pair_ratios(ours: list[float], peer: list[float]) -> list[float]:
    """ours[i] / peer[i] for every pair whose peer window is non-zero."""
    return [round(a / b, 3) for a, b in zip(ours, peer) if b]


def pair_summary(ratios: list[float], key: str, count_key: str) -> dict:
    """``key`` (the median ratio), ``<key>_pair_min``/``_pair_max``, ``count_key`` (how many
    pairs held 1.0) and ``pairs``."""
    return {key: round(statistics.median(ratios), 3) if ratios else None,
            f"{key}_pair_min": min(ratios, default=None),
            f"{key}_pair_max": max(ratios, default=None),
            count_key: sum(1 for r in ratios if r >= 1.0),
            "pairs": len(ratios)}


@contextmanager
def running(supervisor, procs: list):
    """``procs`` resumed for the block and paused again after it, whatever happens."""
    for p in procs:
        supervisor.resume(p)
    try:
        yield
    finally:
        for p in procs:
            supervisor.pause(p)


def by_turns(supervisor, procs: dict[str, list], pairs: int, settle_s: float,
             measure: Callable[[str], object],
             on_pair: Callable[[int, tuple[str, str], dict], None] | None = None) -> dict[str, list]:
    """Two sides (``procs``: label -> its paused processes) measured in interleaved_order:
    each side resumed, ``settle_s`` later ``measure(label)``, paused again. {label: each
    window's measure, in pair order}; ``on_pair(i, order, so_far)`` after every pair."""
    out: dict[str, list] = {label: [] for label in procs}
    for i, order in enumerate(interleaved_order(pairs, tuple(procs))):
        for label in order:
            with running(supervisor, procs[label]):
                time.sleep(settle_s)
                out[label].append(measure(label))
        if on_pair:
            on_pair(i, order, out)
    return out
