"""Ryu/os-ken switch test tool results in the shape of the Ryu certification pages.

Pure functions only (unit-tested in suites/conformance/tests/): the catalogue of cases read from
the tool's JSON files, the parse of the tool's log, the grouping into categories (match, action,
set_field, group, meter) and required/optional, the summary metrics and the table rows.

Log format of os_ken/tests/switch/tester.py (what we parse):
  * a file's description (its JSON's first element, e.g. ``action: 00_OUTPUT``) on its own line
    before its first case;
  * one line per case: 4 spaces, the case description (``%-100s``), a space, OK or ERROR; lines
    of throughput cases start with the progress dots the tool writes to stdout;
  * after an ERROR line, the reason on the next line, indented by 8 spaces.
"""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

CATEGORIES = ("match", "action", "set_field", "group", "meter")
CASE_RE = re.compile(r"^\.*    (?P<desc>\S.*?)\s+(?P<result>OK|ERROR)\s*$")
REASON_RE = re.compile(r"^        (?P<reason>\S.*)$")
# our paced sender's line (suites/conformance/tool_patch.py SENDER_LINE), before a case's result
SENDER_RE = re.compile(r"ofbench-sender: nominal (?P<nominal>[\d.]+) pktps, sent (?P<sent>\d+) "
                       r"packets in (?P<secs>[\d.]+) s = (?P<rate>[\d.]+) pktps")


@dataclass(frozen=True)
class Case:
    file: str          # path relative to the of13 dir, e.g. "action/00_OUTPUT.json"
    file_desc: str     # the tool's file description, e.g. "action: 00_OUTPUT"
    desc: str          # the case description
    category: str
    required: bool
    timed: bool = False  # a throughput case (group/meter rates over 30 s): depends on CPU time


@dataclass
class CaseResult:
    case: Case
    result: str        # "OK", "ERROR" or "NOT RUN"
    reason: str = ""
    offered_pktps: float | None = None  # what the sender really sent (throughput cases)
    nominal_pktps: float | None = None


def category_of(rel_path: str) -> str:
    parts = rel_path.split("/")
    if parts[0] == "action" and len(parts) > 2 and parts[1] == "25_SET_FIELD":
        return "set_field"
    if parts[0] not in CATEGORIES:
        raise ValueError(f"{rel_path}: not under one of {CATEGORIES}")
    return parts[0]


def read_required(path: str | Path) -> set[str]:
    """The required test files (relative paths), one per line; '#' starts a comment."""
    out = set()
    for lineno, line in enumerate(Path(path).read_text().splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        if not line.endswith(".json"):
            raise ValueError(f"{path}:{lineno}: expected a .json path, got {line!r}")
        out.add(line)
    return out


def catalogue(of13_dir: str | Path, required: set[str],
              only: set[str] | None = None) -> list[Case]:
    """Every case of the tool's JSON files under of13_dir (optionally only the files in
    ``only``), in the order the tool runs them (files sorted by description)."""
    root = Path(of13_dir)
    files = []
    for p in sorted(root.rglob("*.json")):
        rel = p.relative_to(root).as_posix()
        if only is not None and rel not in only:
            continue
        data = json.loads(p.read_text())
        file_desc = next((x for x in data if isinstance(x, str)), None)
        if file_desc is None:
            raise ValueError(f"{p}: no description string")
        files.append((file_desc, rel, data))
    cases = []
    for file_desc, rel, data in sorted(files):
        for item in data:
            if isinstance(item, dict):
                timed = any(isinstance(t.get("ingress"), dict) for t in item.get("tests", []))
                cases.append(Case(rel, file_desc, item.get("description", ""),
                                  category_of(rel), rel in required, timed))
    return cases


def files_matching(of13_dir: str | Path, patterns: str) -> set[str]:
    """The of13 files (relative paths) matching any of the comma-separated fnmatch ``patterns``
    (e.g. ``"meter/02_DSCP*,group/01_SELECT_*"``); a pattern matching no file is an error
    naming it, so a typo cannot silently run nothing."""
    from fnmatch import fnmatchcase
    root = Path(of13_dir)
    rels = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.json"))
    out: set[str] = set()
    for pat in (x.strip() for x in patterns.split(",")):
        if not pat:
            continue
        hits = {r for r in rels if fnmatchcase(r, pat) or fnmatchcase(r, pat + ".json")}
        if not hits:
            raise ValueError(f"conformance file pattern {pat!r} matches no file under {root}")
        out |= hits
    return out


def timed_files(cases: list[Case]) -> set[str]:
    """The files holding throughput cases (rates over 30 s: group and meter)."""
    return {c.file for c in cases if c.timed}


def parse_log(text: str, cases: list[Case]) -> list[CaseResult]:
    """Match the tool's log against the catalogue. Cases of a file are matched in order; a case
    missing from the log is NOT RUN (the tool died or was stopped)."""
    by_file: dict[str, list[Case]] = {}
    for c in cases:
        by_file.setdefault(c.file_desc, []).append(c)
    results = {id(c): CaseResult(c, "NOT RUN", "not run (the tool stopped before it)")
               for c in cases}
    current: list[Case] | None = None
    pos = 0
    last: CaseResult | None = None
    sender: tuple[float, float] | None = None
    for line in text.splitlines():
        line = line.rstrip("\r")
        stripped = line.strip()
        ms = SENDER_RE.search(line)
        if ms:
            sender = (float(ms.group("nominal")), float(ms.group("rate")))
            continue
        if stripped in by_file and not line.startswith(" "):
            current, pos, last = by_file[stripped], 0, None
            continue
        m = CASE_RE.match(line)
        if m and current is not None:
            desc = m.group("desc")
            # the tool pads to 100 columns; match by description, in order
            idx = next((i for i in range(pos, len(current)) if current[i].desc == desc), None)
            if idx is None:
                idx = pos if pos < len(current) else None
            if idx is None:
                continue
            r = results[id(current[idx])]
            r.result, r.reason = m.group("result"), ""
            if sender is not None:
                r.nominal_pktps, r.offered_pktps = sender
                sender = None
            last = r if r.result == "ERROR" else None
            pos = idx + 1
            continue
        m = REASON_RE.match(line)
        if m and last is not None and not last.reason:
            last.reason = m.group("reason")
            last = None
    return [results[id(c)] for c in cases]


def summary(results: list[CaseResult]) -> dict:
    """Flat metrics for the result record."""
    ok = sum(r.result == "OK" for r in results)
    req = [r for r in results if r.case.required]
    m = {"total": len(results), "ok": ok, "error": len(results) - ok,
         "required_ok": sum(r.result == "OK" for r in req), "required_total": len(req)}
    timed = [r for r in results if r.case.timed]
    m["timed_ok"] = sum(r.result == "OK" for r in timed)
    m["timed_total"] = len(timed)
    offered = [100 * r.offered_pktps / r.nominal_pktps for r in timed
               if r.offered_pktps is not None and r.nominal_pktps]
    if offered:  # the worst rate the sender really offered, in % of its nominal rate
        m["sender_offered_min_pct"] = round(min(offered), 1)
    for cat in CATEGORIES:
        rs = [r for r in results if r.case.category == cat]
        if rs:
            m[f"{cat}_ok"] = sum(r.result == "OK" for r in rs)
            m[f"{cat}_total"] = len(rs)
    return m


def category_rows(results: list[CaseResult]) -> list[dict]:
    """The certification-page table: one row per category and required/optional."""
    rows = []
    for cat in CATEGORIES:
        for req in (True, False):
            rs = [r for r in results if r.case.category == cat and r.case.required == req]
            if not rs:
                continue
            ok = sum(r.result == "OK" for r in rs)
            rows.append({"category": cat, "required": "yes" if req else "no",
                         "ok": ok, "error": len(rs) - ok, "total": len(rs)})
    return rows


def file_rows(results: list[CaseResult]) -> list[dict]:
    """One row per test file (like the certification pages' cells): OK/ERROR counts."""
    rows: dict[str, dict] = {}
    for r in results:
        row = rows.setdefault(r.case.file, {"file": r.case.file, "category": r.case.category,
                                            "required": "yes" if r.case.required else "no",
                                            "ok": 0, "error": 0})
        row["ok" if r.result == "OK" else "error"] += 1
    return list(rows.values())


def sender_rows(results: list[CaseResult]) -> list[dict]:
    """Throughput cases with the rate the tool's sender really offered (when it logged it)."""
    return [{"file": r.case.file, "case": r.case.desc, "result": r.result,
             "nominal_pktps": r.nominal_pktps, "offered_pktps": r.offered_pktps,
             "offered_pct": round(100 * r.offered_pktps / r.nominal_pktps, 1),
             "reason": r.reason}
            for r in results if r.offered_pktps is not None and r.nominal_pktps]


def error_rows(results: list[CaseResult]) -> list[dict]:
    return [{"file": r.case.file, "case": r.case.desc, "result": r.result, "reason": r.reason}
            for r in results if r.result != "OK"]


# Estimated seconds per case, to balance shards: a throughput case sends for its duration_time
# (30 s in every of13 file) plus setup and the stats round trips; the others take a fraction of
# a second (measured: 940 untimed cases in ~2.6 min) plus the tool's interval between cases.
TIMED_CASE_S = 33.0
UNTIMED_CASE_S = 0.2


def estimated_case_s(case: Case, interval_s: float = 0.0) -> float:
    return (TIMED_CASE_S if case.timed else UNTIMED_CASE_S) + interval_s


DEFAULT_SHARDS = 3


def shard_count() -> int:
    """How many tool instances run the full set at once: ``OFBENCH_CONFORMANCE_SHARDS`` (1..8),
    else DEFAULT_SHARDS; a bad value stops the run naming the variable (pytest.UsageError).
    Lived in test_conformance.py until issue 43 (its test must not import a test module)."""
    import pytest
    raw = os.environ.get("OFBENCH_CONFORMANCE_SHARDS", "").strip()
    if not raw:
        return DEFAULT_SHARDS
    try:
        n = int(raw)
    except ValueError:
        raise pytest.UsageError(f"OFBENCH_CONFORMANCE_SHARDS={raw!r}: expected a whole number "
                                ">= 1") from None
    if not 1 <= n <= 8:
        raise pytest.UsageError(f"OFBENCH_CONFORMANCE_SHARDS={n}: expected 1..8")
    return n


def plan_shards(cases: list[Case], shards: int, interval_s: float = 0.0) -> list[list[str]]:
    """Split the test files into at most ``shards`` groups of about equal estimated duration
    (longest-first greedy), for parallel tool instances, each against its own topology.

    A file never splits: the tool runs a file's cases in order against one target. Returns
    file lists in the tool's order, without empty groups; deterministic for the same input,
    so a case always runs in the same shard and a flipping case stays reproducible."""
    if shards < 1:
        raise ValueError(f"conformance shards must be >= 1, got {shards}")
    weight: dict[str, float] = {}
    for c in cases:
        weight[c.file] = weight.get(c.file, 0.0) + estimated_case_s(c, interval_s)
    groups: list[list[str]] = [[] for _ in range(min(shards, len(weight)) or 1)]
    load = [0.0] * len(groups)
    for f in sorted(weight, key=lambda f: (-weight[f], f)):
        i = min(range(len(groups)), key=lambda j: (load[j], j))
        groups[i].append(f)
        load[i] += weight[f]
    return [sorted(g) for g in groups if g]


def shard_estimate_s(cases: list[Case], files: list[str], interval_s: float = 0.0) -> float:
    chosen = set(files)
    return sum(estimated_case_s(c, interval_s) for c in cases if c.file in chosen)
