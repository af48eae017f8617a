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

from reports.noise import Spread, group_repetitions, metric_spread

REPO = Path(__file__).resolve().parent.parent
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


class GoalError(ValueError):
    """A goal declaration is malformed; the message names the file and key."""


def parse_condition(expr: str, where: str = "") -> tuple[str, float, str | None]:
    """'>= 20' -> ('>=', 20.0, None); '>= 1.0 x ovs-dpdk' -> ('>=', 1.0, 'ovs-dpdk')."""
    m = CONDITION_RE.match(str(expr))
    if not m:
        raise GoalError(f"{where}: bad condition {expr!r}: write '<op> <number>' or "
                        "'<op> <number> x <peer switch kind>'")
    return m.group(1), float(m.group(2)), m.group(3)


# ---- declarations -------------------------------------------------------------------------------

def load_suite_goals(suites_dir: Path = SUITES_DIR) -> list[dict]:
    """Every suite's declared goals, each with 'suite' and 'source' added; GoalError names the
    file and key of a malformed one."""
    goals = []
    for path in sorted(Path(suites_dir).glob(f"*/{SUITE_DECL}")):
        suite = path.parent.name
        try:
            data = yaml.safe_load(path.read_text()) or {}
        except yaml.YAMLError as e:
            raise GoalError(f"{path}: not YAML ({e})") from None
        if not isinstance(data, dict):
            raise GoalError(f"{path}: expected a mapping at the top")
        entries = data.get("goals") or []
        if not isinstance(entries, list):
            raise GoalError(f"{path}: goals: expected a list")
        seen = set()
        for i, g in enumerate(entries):
            where = f"{path}: goals[{i}]"
            if not isinstance(g, dict):
                raise GoalError(f"{where}: expected a mapping")
            unknown = set(g) - {"id", "text", "record", "switch", "conditions"}
            if unknown:
                raise GoalError(f"{where}: unknown key(s) {sorted(unknown)}")
            for key in ("id", "record", "conditions"):
                if key not in g:
                    raise GoalError(f"{where}.{key}: required key is missing")
            if g["id"] in seen:
                raise GoalError(f"{where}.id: {g['id']!r} declared twice")
            seen.add(g["id"])
            conds = g["conditions"]
            if not isinstance(conds, dict) or not conds:
                raise GoalError(f"{where}.conditions: expected a mapping metric: condition")
            for metric, expr in conds.items():
                parse_condition(expr, f"{where}.conditions.{metric}")
            goals.append({"suite": suite, "source": f"suites/{suite}/{SUITE_DECL}",
                          "id": str(g["id"]), "text": str(g.get("text", "")),
                          "record": str(g["record"]), "switch": str(g.get("switch", "ours")),
                          "conditions": {str(k): str(v) for k, v in conds.items()}})
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
