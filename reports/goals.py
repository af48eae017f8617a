"""Verdicts: every target the run's profile states and every goal a suite declares, judged on
the run's records, with the peers' values beside ours and the noise taken into account.

Where goals come from (data only: reports/ imports neither suites/ nor dut/):

* the profile's ``targets:`` ({suite: {record name or "*": {metric: "<op> <number>"}}}), read
  from dut/profiles/<profile>.yaml; they apply to records of the profile's own switch, as the
  harness checks them;
* each suite's ``suites/<suite>/report.yaml``, key ``goals:``, a list of::

      - id: beat_fifo                       # unique within the suite
        text: "Random/20: high <= 0.30x FIFO with low <= 1.02x (issue 6)"
        record: random_20pat_8thr_naive_proc_strict   # a record name; "{switch}" stands for
                                            # the switch kind when names carry it (of13_{switch})
        switch: any                         # ours (default: the profile's switch) | any | <kind>
        conditions:                         # all must hold
          high_ratio: "<= 0.30"
          low_ratio: "<= 1.02"
          vhost_user_mbps: ">= 1.0 x ovs-dpdk"   # relative: ours / that peer's value, same run

The first time a run is judged the declarations are copied into <run>/goals.json, so a later
re-render judges the run against the goals of its own day (delete the file to re-read them).

Verdict of one condition from the spread of our value (reports.noise):
  met           every repetition is on the good side of the bound (one value: that value)
  missed        every repetition is on the bad side
  inconclusive  the spread [min, max] (or mean +- 1 sd) straddles the bound
  not measured  no record of ours carries the metric in this run
A goal is missed if any condition is, else not measured if any is, else inconclusive if any
is, else met. The table is written to <run>/verdicts.json (see write_verdicts).
"""
from __future__ import annotations

import dataclasses
import json
import operator
import re
from pathlib import Path
from typing import Any, Mapping, Sequence

import yaml

from configschema import Invalid, SchemaError, Spec, load_yaml, validate
from reports.noise import Spread, group_repetitions, metric_spread
from paths import REPO

SUITES_DIR = REPO / "suites"
PROFILES_DIR = REPO / "dut" / "profiles"
GOALS_FILE = "goals.json"
VERDICTS_FILE = "verdicts.json"
SUITE_DECL = "report.yaml"
DEFAULT_OURS = "ofbench"

OPS = {">=": operator.ge, "<=": operator.le, ">": operator.gt, "<": operator.lt,
       "==": operator.eq}
CONDITION_RE = re.compile(r"^\s*(>=|<=|==|>|<)\s*(-?[0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?)"
                          r"\s*(?:x\s+([A-Za-z0-9_.-]+))?\s*$")
VERDICT_ORDER = ("missed", "not measured", "inconclusive", "met")


class GoalError(SchemaError):
    """A goal or chart declaration is malformed; the message names the file, line and key."""


def parse_condition(expr: str, where: str = "") -> tuple[str, float, str | None]:
    """'>= 20' -> ('>=', 20.0, None); '>= 1.0 x ovs-dpdk' -> ('>=', 1.0, 'ovs-dpdk')."""
    m = CONDITION_RE.match(str(expr))
    if not m:
        raise GoalError(f"{where}: bad condition {expr!r}: write '<op> <number>' or "
                        "'<op> <number> x <peer switch kind>'")
    return m.group(1), float(m.group(2)), m.group(3)


# ---- declarations -------------------------------------------------------------------------------

def _condition_problem(expr: str) -> str | None:
    if CONDITION_RE.match(expr):
        return None
    return (f"bad condition {expr!r}: write '<op> <number>' or '<op> <number> x <peer switch "
            "kind>'")


# Keys each chart kind takes (bars: reports/charts.py's grouped bars; cdf / histogram: a
# record's distributions, distributions/).
CHART_KEYS = {"bars": {"kind", "title", "records", "x", "series", "metric", "metrics", "labels",
                       "ylabel", "log"},
              "cdf": {"kind", "title", "records", "distribution", "distributions", "labels",
                      "xlabel", "ylabel", "log", "reference"},
              "histogram": {"kind", "title", "records", "distribution", "distributions",
                            "labels", "xlabel", "ylabel", "y", "xmax", "means", "reference"}}


def _chart_checks(c: dict) -> None:
    kind = c.get("kind", "bars")
    for k in sorted(set(c) - CHART_KEYS[kind]):
        raise Invalid(f"not a key of a {kind} chart (allowed: "
                      f"{', '.join(sorted(CHART_KEYS[kind]))})", at=(k,))
    if kind != "bars":
        if "distribution" in c and "distributions" in c:
            raise Invalid("give distribution or distributions, not both", at=("distributions",))
        if "distribution" not in c and "distributions" not in c:
            raise Invalid("required key is missing (or give distribution)", at=("distributions",))
        n = len(c.get("distributions") or [c.get("distribution")])
        if "labels" in c and len(c["labels"]) != n:
            raise Invalid(f"one per distribution ({n}), got {len(c['labels'])}", at=("labels",))
        return
    if (c.get("x", "record"), c.get("series", "switch")) == ("metric", "metric"):
        raise Invalid("x: metric needs series: switch (not both metric)", at=("series",))
    if "metric" in c and "metrics" in c:
        raise Invalid("give metric or metrics, not both", at=("metrics",))
    if "metric" not in c and "metrics" not in c:
        raise Invalid("required key is missing (or give metric)", at=("metrics",))
    n = len(c.get("metrics") or [c.get("metric")])
    if "labels" in c and len(c["labels"]) != n:
        raise Invalid(f"one per metric ({n}), got {len(c['labels'])}", at=("labels",))


GOAL = Spec(dict, fields={
    "id": Spec((str, int), required=True),
    "text": Spec(str, default=""),
    "record": Spec(str, required=True, min_len=1),
    "switch": Spec(str, default="ours"),
    "conditions": Spec(dict, required=True, min_len=1, keys=Spec(str, what="a metric name"),
                       values=Spec(str, check=_condition_problem,
                                   what="a condition '<op> <number>[ x <peer>]'")),
})
CHART = Spec(dict, check=_chart_checks, fields={   # defaults: reports/charts.py
    "kind": Spec(str, choices=tuple(CHART_KEYS)),
    "title": Spec(str),
    "records": Spec((str, list), what="a record name pattern or a list of them"),
    "x": Spec(str, choices=("record", "metric")),
    "series": Spec(str, choices=("switch", "metric")),
    "metric": Spec(str, min_len=1),
    "metrics": Spec(list, min_len=1, items=Spec(str, min_len=1)),
    "distribution": Spec(str, min_len=1),
    "distributions": Spec(list, min_len=1, items=Spec(str, min_len=1)),
    "labels": Spec(list, items=Spec((str, int, float))),
    "xlabel": Spec(str),
    "ylabel": Spec(str),
    "log": Spec(bool),
    "y": Spec(str, choices=("percent", "count")),
    "xmax": Spec((int, float)),
    "means": Spec(dict),
    "reference": Spec((list, dict)),
})
# suites/<suite>/report.yaml (configschema/'s language): what a suite declares for its report.
SUITE_REPORT = Spec((dict, type(None)), what="a mapping with keys goals, charts", fields={
    "goals": Spec((list, type(None)), items=GOAL, unique=("id",)),
    "charts": Spec((list, type(None)), items=CHART),
})


def read_suite_report(path: Path) -> dict:
    """The checked declarations of one report.yaml ({} for an empty file); GoalError names the
    file, line and key of a malformed one."""
    data, node = load_yaml(path, GoalError)
    return validate(SUITE_REPORT, data, source=str(path), error=GoalError, node=node) or {}


def load_suite_goals(suites_dir: Path = SUITES_DIR) -> list[dict]:
    """Every suite's declared goals, each with 'suite' and 'source' added; GoalError names the
    file, line and key of a malformed one."""
    goals = []
    for path in sorted(Path(suites_dir).glob(f"*/{SUITE_DECL}")):
        suite = path.parent.name
        for g in read_suite_report(path).get("goals") or []:
            goals.append({"suite": suite, "source": f"suites/{suite}/{SUITE_DECL}",
                          "id": str(g["id"]), "text": g["text"], "record": g["record"],
                          "switch": g["switch"], "conditions": dict(g["conditions"])})
    return goals


def load_profile(name: str, profiles_dir: Path = PROFILES_DIR) -> dict | None:
    """The profile's YAML as data ({} when unreadable), None when no such file."""
    path = Path(profiles_dir) / f"{name}.yaml"
    if not name or not path.is_file():
        return None
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError:
        return {}
    return data if isinstance(data, dict) else {}


def profile_goals(profile: str, targets: Mapping) -> list[dict]:
    goals = []
    for suite, per_name in (targets or {}).items():
        for name, conds in (per_name or {}).items():
            goals.append({"suite": str(suite), "source": f"profile {profile}",
                          "id": f"target:{name}", "text": "", "record": str(name),
                          "switch": "ours", "conditions": {str(k): str(v)
                                                            for k, v in (conds or {}).items()}})
    return goals


def merge_duplicates(profile: list[dict], suite: list[dict], ours: str) -> list[dict]:
    """A profile target that states a suite goal's condition again is shown once, under the
    suite's goal (whose source then names the profile too)."""
    out_profile = []
    for pg in profile:
        kept = {}
        for metric, expr in pg["conditions"].items():
            twin = next((sg for sg in suite if sg["suite"] == pg["suite"]
                         and sg["record"].replace("{switch}", ours) == pg["record"]
                         and sg["switch"] == "ours"
                         and sg["conditions"].get(metric, "").replace(" ", "")
                         == expr.replace(" ", "")), None)
            if twin is None:
                kept[metric] = expr
            elif pg["source"] not in twin["source"]:
                twin["source"] += f" + {pg['source']}"
        if kept:
            out_profile.append({**pg, "conditions": kept})
    return out_profile + suite


def goals_from_misses(records: Sequence[Mapping], profile: str) -> list[dict]:
    """When the profile's file cannot be read (a profile given by path, since moved), its
    targets are known only where the harness wrote a miss into a record: judge those."""
    goals: dict[tuple, dict] = {}
    for r in records:
        for t in r.get("target_misses") or []:
            target = t.get("target")
            expr = target if isinstance(target, str) else f"{t.get('op', '>=')} {target}"
            try:
                parse_condition(expr)
            except GoalError:
                continue
            g = goals.setdefault((r.get("suite"), r.get("name")), {
                "suite": str(r.get("suite")), "source": f"profile {profile} (from the "
                "record's target_misses)", "id": f"target:{r.get('name')}", "text": "",
                "record": str(r.get("name")), "switch": "ours", "conditions": {}})
            g["conditions"][str(t.get("metric"))] = expr
    return list(goals.values())


def declared_goals(run_dir: Path, profile: str, suites_dir: Path = SUITES_DIR,
                   profiles_dir: Path = PROFILES_DIR, snapshot: bool = True) -> dict:
    """{"profile", "ours", "profile_found", "goals": [...]}: the run's snapshot (goals.json) if
    there is one, else read from the profile and the suites (and snapshotted)."""
    snap = Path(run_dir) / GOALS_FILE
    if snapshot and snap.is_file():
        try:
            data = json.loads(snap.read_text())
            if isinstance(data, dict) and isinstance(data.get("goals"), list):
                return data
        except json.JSONDecodeError:
            pass
    prof = load_profile(profile, profiles_dir)
    ours = DEFAULT_OURS
    if prof and isinstance(prof.get("switch"), dict) and prof["switch"].get("kind"):
        ours = str(prof["switch"]["kind"])
    goals = merge_duplicates(profile_goals(profile, (prof or {}).get("targets") or {}),
                             load_suite_goals(suites_dir), ours)
    data = {"profile": profile, "ours": ours, "profile_found": prof is not None, "goals": goals}
    if snapshot:
        snap.write_text(json.dumps(data, indent=1))
    return data


# ---- judging ------------------------------------------------------------------------------------

def judge_interval(spread: Spread | None, op: str, bound: float) -> str:
    if spread is None:
        return "not measured"
    fn = OPS[op]
    if spread.n <= 1 or spread.lo == spread.hi:
        return "met" if fn(spread.median, bound) else "missed"
    lo_ok, hi_ok, med_ok = fn(spread.lo, bound), fn(spread.hi, bound), fn(spread.median, bound)
    if lo_ok and hi_ok and (op != "==" or med_ok):
        return "met"
    if not lo_ok and not hi_ok and not med_ok:
        return "missed"
    return "inconclusive"


def ratio_spread(ours: Spread, peer: Spread) -> Spread | None:
    """ours / peer, with the widest interval the two spreads allow (positive values)."""
    if not peer.median or peer.lo <= 0 or ours.lo < 0:
        return None
    n = min(ours.n, peer.n) if ours.n > 1 and peer.n > 1 else max(ours.n, peer.n)
    kind = "stdev" if "stdev" in (ours.kind, peer.kind) else "values"
    return Spread(ours.median / peer.median, ours.lo / peer.hi, ours.hi / peer.lo, n, kind)


def combine(verdicts: Sequence[str]) -> str:
    for v in VERDICT_ORDER:
        if v in verdicts:
            return v
    return "not measured"


def _kind(rec: Mapping) -> str:
    return str((rec.get("provenance") or {}).get("dut_switch_kind", ""))


def evidence_id(rec: Mapping) -> str:
    """The HTML id of a record's row in the run index (reports.html uses the same)."""
    raw = f"rec-{rec.get('suite')}-{rec.get('name')}-{_kind(rec)}"
    return re.sub(r"[^A-Za-z0-9_-]+", "-", raw)


def _records_for(records: Sequence[Mapping], suite: str, pattern: str, kind: str | None):
    """Records of `suite` named `pattern` (with {switch} = the record's kind), of switch `kind`
    (None: any)."""
    out = []
    for r in records:
        if r.get("suite") != suite:
            continue
        k = _kind(r)
        if kind is not None and k != kind:
            continue
        name = pattern.replace("{switch}", k) if "{switch}" in pattern else pattern
        if pattern == "*" or r.get("name") == name:
            out.append(r)
    return out


@dataclasses.dataclass
class VerdictRow:
    suite: str
    goal: str
    source: str
    text: str
    record: str
    switch: str
    metric: str
    target: str
    verdict: str
    goal_verdict: str = ""
    value: float | None = None
    spread: dict | None = None
    peers: list[dict] = dataclasses.field(default_factory=list)
    evidence: str = ""
    note: str = ""

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


def evaluate_goals(records: Sequence[Mapping], declared: Mapping) -> list[VerdictRow]:
    """One row per (goal, record group, condition), goal_verdict filled per goal group."""
    ours = declared.get("ours") or DEFAULT_OURS
    suites_run = {r.get("suite") for r in records}
    rows: list[VerdictRow] = []
    for g in declared.get("goals", []):
        suite, pattern, sw = g["suite"], g["record"], g.get("switch", "ours")
        kind = ours if sw == "ours" else None if sw == "any" else sw
        mine = _records_for(records, suite, pattern, kind)
        groups = list(group_repetitions(mine).values()) or [[]]
        for group in groups:
            first = group[0] if group else {}
            name = first.get("name", pattern.replace("{switch}", kind or ours))
            gkind = _kind(first) if first else (kind or "")
            peers_by_kind: dict[str, list] = {}
            if first:
                for r in records:
                    if r.get("suite") != suite or _kind(r) == gkind:
                        continue
                    pname = pattern.replace("{switch}", _kind(r)) if "{switch}" in pattern \
                        else name
                    if r.get("name") == pname:
                        peers_by_kind.setdefault(_kind(r), []).append(r)
            group_rows = []
            for metric, expr in g["conditions"].items():
                op, bound, rel = parse_condition(expr, f"{g['source']}: {g['id']}")
                ours_sp = metric_spread(group, metric) if group else None
                peers = []
                peer_sp: dict[str, Spread] = {}
                for pk, precs in peers_by_kind.items():
                    sp = metric_spread(precs, metric)
                    if sp is None:
                        continue
                    peer_sp[pk] = sp
                    ratio = ours_sp.median / sp.median if ours_sp and sp.median else None
                    peers.append({"switch": pk, "value": sp.median, **sp.as_dict(),
                                  "ratio": ratio, "evidence": evidence_id(precs[0])})
                note = ""
                judged = ours_sp
                if rel:
                    if ours_sp is None:
                        judged = None
                    elif rel not in peer_sp:
                        judged, note = None, f"no {rel} value in this run to compare with"
                    else:
                        judged = ratio_spread(ours_sp, peer_sp[rel])
                        if judged is None:
                            note = f"{rel}'s value is not positive"
                verdict = judge_interval(judged, op, bound)
                if not group:
                    note = note or (f"no {suite} records in this run" if suite not in suites_run
                                    else f"no record {name}"
                                    + (f" of switch {kind}" if kind else "") + " in this run")
                elif ours_sp is None:
                    note = note or f"{name} has no {metric}"
                elif verdict == "inconclusive":
                    note = (f"spread {ours_sp.lo:.4g}..{ours_sp.hi:.4g} "
                            f"({'mean ± 1 sd' if ours_sp.kind == 'stdev' else 'min..max'}) "
                            f"straddles the bound")
                group_rows.append(VerdictRow(
                    suite=suite, goal=g["id"], source=g["source"], text=g.get("text", ""),
                    record=name, switch=gkind, metric=metric, target=expr, verdict=verdict,
                    value=(judged.median if rel and judged else ours_sp.median if ours_sp
                           else None),
                    spread=(judged if rel and judged else ours_sp).as_dict()
                    if (judged if rel else ours_sp) else None,
                    peers=peers, evidence=evidence_id(first) if first else "", note=note))
            gv = combine([r.verdict for r in group_rows])
            for r in group_rows:
                r.goal_verdict = gv
            rows.extend(group_rows)
    return rows


def verdict_counts(rows: Sequence[VerdictRow]) -> dict[str, int]:
    """Goals (not conditions) per verdict."""
    seen: dict[tuple, str] = {}
    for r in rows:
        seen[(r.source, r.suite, r.goal, r.record, r.switch)] = r.goal_verdict
    return {v: sum(1 for x in seen.values() if x == v) for v in VERDICT_ORDER}


def write_verdicts(run_dir: Path, rows: Sequence[VerdictRow], declared: Mapping) -> Path:
    """<run>/verdicts.json: {"run", "profile", "ours", "counts", "verdicts": [row, ...]}."""
    out = Path(run_dir) / VERDICTS_FILE
    data: dict[str, Any] = {"run": Path(run_dir).name, "profile": declared.get("profile"),
                            "ours": declared.get("ours"),
                            "profile_found": declared.get("profile_found"),
                            "counts": verdict_counts(rows),
                            "verdicts": [r.as_dict() for r in rows]}
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=1))
    tmp.replace(out)
    return out
