"""Interleaved comparisons: two or more systems up at once, run by turns, the idle ones
paused (drivers/supervisor.py Supervisor.pause), so each window has the box to itself and the
windows of a round are seconds apart. Used where the host's slow and fast spells (minutes long,
2x apart on the shared 2-core box, docs/results.md) are larger than the difference measured:
suites/vmwire (ofbench vs OVS-DPDK over vhost-user; every switch's vhost-user and kernel-path
loops) and suites/softgen (softgen vs TRex TX). The schedule and the ratios are pure;
:func:`by_turns` drives the processes."""
from __future__ import annotations

import statistics
import time
from contextlib import contextmanager
from typing import Callable


def interleaved_order(rounds: int, labels: tuple[str, ...]) -> list[tuple[str, ...]]:
    """Every side once per round, the rounds alternately forward and backward: ABBAABBA... for
    two sides (each pair's windows back to back, the first of a pair alternating), ABCDDCBA...
    for more, so no side always follows another and a drift over the run cancels."""
    labels = tuple(labels)
    return [labels if i % 2 == 0 else labels[::-1] for i in range(rounds)]


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


def by_turns(supervisor, procs: dict[str, list], rounds: int, settle_s: float,
             measure: Callable[[str], object],
             on_round: Callable[[int, tuple[str, ...], dict], None] | None = None
             ) -> dict[str, list]:
    """Sides (``procs``: label -> its paused processes; a process may belong to several
    sides, e.g. one switch under two guests) measured in interleaved_order: each side
    resumed, ``settle_s`` later ``measure(label)``, paused again. {label: each window's
    measure, in round order}; ``on_round(i, order, so_far)`` after every round (a pair, for
    two sides)."""
    out: dict[str, list] = {label: [] for label in procs}
    for i, order in enumerate(interleaved_order(rounds, tuple(procs))):
        for label in order:
            with running(supervisor, procs[label]):
                time.sleep(settle_s)
                out[label].append(measure(label))
        if on_round:
            on_round(i, order, out)
    return out
