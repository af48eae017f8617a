"""Targets a profile states per suite, test and metric (``targets:`` section), e.g.
``throughput: {ndr_64b_1flows: {ndr_mpps: ">= 14.0", latency_p99_us: "<= 50"}}``.

:func:`check_targets` is pure: it compares a result's metrics with the targets that apply and
returns one miss per violated target, with how far off it is, so the harness can fail the test,
say by how much, and mark the record in the report.
"""
from __future__ import annotations

import operator

from dut.profiles.schema import TARGET_RE

OPS = {">=": operator.ge, "<=": operator.le, ">": operator.gt, "<": operator.lt,
       "==": operator.eq}


def parse_target(expr: str) -> tuple[str, float]:
    m = TARGET_RE.match(expr)
    if not m:
        raise ValueError(f"bad target {expr!r}: write '<op> <number>'")
    return m.group(1), float(m.group(2))


def targets_for(targets: dict, suite: str, name: str) -> dict:
    """The conditions that apply to one result: the suite's ``"*"`` entry, overridden by the
    entry named like the result."""
    per_suite = targets.get(suite) or {}
    return {**(per_suite.get("*") or {}), **(per_suite.get(name) or {})}


def check_targets(targets: dict, suite: str, name: str, metrics: dict) -> list[dict]:
    """Misses of ``metrics`` against the targets for ``suite``/``name``.

    A target whose metric is absent from the record is a miss too ("not measured"): a lab that
    promises a figure must deliver it.
    """
    misses = []
    for metric, expr in targets_for(targets, suite, name).items():
        op, bound = parse_target(expr)
        value = metrics.get(metric)
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            misses.append({"metric": metric, "target": expr, "value": value,
                           "message": f"{metric}: target {expr}, not measured"})
            continue
        if OPS[op](value, bound):
            continue
        off = value - bound
        pct = f" ({off / bound * 100:+.1f}%)" if bound else ""
        misses.append({"metric": metric, "target": expr, "value": value, "off_by": off,
                       "message": f"{metric} = {value:g}, target {expr}: off by {off:+g}{pct}"})
    return misses
