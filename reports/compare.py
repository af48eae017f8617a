"""Compare two runs: every metric that moved beyond its noise band, and which way.

    python -m reports compare RUN_A RUN_B [--k 3] [--out PAGE.html] [--all]

RUN_A is the reference (main, last night, the other lab), RUN_B the run under review. Works
across commits and across labs (two profiles): records are paired by suite, name and switch
kind plus generator and port kind; a record whose generator or port kind differs between the
two labs is still paired when that leaves one candidate, and the difference is shown as
context (a softgen lab against a TRex lab measures the same switch with another instrument).

The verdict is statistical, from repeated trials (reports.noise reads them), never one value
against another:

- both sides with >= MIN_REPS repetitions: jumpavg (FD.io CSIT's change-point grouping, the
  nightly trend's detector) groups A's and B's repetitions, each side one indivisible run, by
  minimum description length: one group = the same population ("within noise"); two groups =
  B differs, better or worse when the averages differ by >= 2 %. Chosen over Mann-Whitney U
  (with 3 repetitions a side its smallest two-sided p is 0.1: it can never say "changed") and a
  bootstrap CI of the ratio of medians (3-5 values resample into too few distinct medians for
  a CI to mean anything); jumpavg weighs the difference of the averages against each side's own
  spread and works from 2-3 values up, and a nightly and a review then read changes one way;
- one side repeated (its noise known), the other a single value or a mean +- sd: the nightly
  MAD rule (reports.trend.judge: run A's values are the history, B's median the new value, the
  band max(K * 1.4826 * MAD, 2 % of the median), the MAD the larger of the two runs' spreads);
- one value a side: no verdict. A move beyond the 2 % floor is listed as "unsure" (repeat the
  measurement) and never makes the exit code 1.

Direction (better / worse) is reports.metrics.metric_direction; a metric without one is listed
as "changed" when it moved.

Also compared: each goal's verdict (reports.goals) in A and in B. Writes RUN_B/compare-<A>.html
and .json (or --out); exit code 1 when something got worse, else 0.
"""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Mapping, Sequence

from redact import redact_record, redact_text
from reports.metrics import metric_direction
from reports.noise import Spread, group_repetitions, is_spread_metric, metric_spread, number
from reports.results import load_results
from reports.trend import K_DEFAULT, MAD_TO_SIGMA, REL_FLOOR, judge, median_mad

CONTEXT_KEYS = ("generator", "port_kind")
MIN_REPS = 3    # repetitions a side for jumpavg's verdict
ORDER = {"worse": 0, "better": 1, "changed": 2, "unsure": 3, "only_a": 4, "only_b": 5,
         "same": 6, "not_measured": 7}
LABEL = {"worse": "▼ worse", "better": "▲ better", "changed": "changed (no direction)",
         "unsure": "moved? (1 value a side)",
         "same": "within noise", "only_a": "only in A", "only_b": "only in B",
         "not_measured": "not measured"}


def jumpavg_verdict(a: Sequence[float], b: Sequence[float], direction: int,
                    rel_floor: float = REL_FLOOR) -> tuple[str, float | None]:
    """(same | better | worse | changed, change of the averages in %) of B's repetitions
    against A's: jumpavg groups the two sides (each one indivisible run); one group = same."""
    from jumpavg import classify
    xa, xb = [float(v) for v in a], [float(v) for v in b]
    shift = -min(xa + xb) if min(xa + xb) < 0 else 0.0
    groups = classify([[v + shift for v in xa], [v + shift for v in xb]])
    mean_a, mean_b = sum(xa) / len(xa), sum(xb) / len(xb)
    change = (mean_b - mean_a) / abs(mean_a) * 100.0 if mean_a else None
    if len(groups) == 1:
        return "same", change
    rel = abs(mean_b - mean_a) / abs(mean_a) if mean_a else float("inf")
    if rel < rel_floor:
        return "same", change
    if direction == 0:
        return "changed", change
    return ("better" if (mean_b - mean_a) * direction > 0 else "worse"), change


def spread_mad(sp: Spread | None) -> float:
    """The MAD of a spread's repetitions (for a mean ± sd: the sd expressed as a MAD)."""
    if sp is None or not sp.repeated:
        return 0.0
    if sp.kind == "stdev":
        return (sp.hi - sp.lo) / 2 / MAD_TO_SIGMA
    return median_mad(sp.values)[1] if sp.values else 0.0


def centred(sp: Spread) -> list[float]:
    """Run A's repetitions as the history, centred on the figure the record states (a record
    carrying its repetitions in params states their mean or best, not their median): the
    band keeps their spread, and the change is measured from the stated figure."""
    if sp.kind != "values" or not sp.values:
        return [sp.median]
    shift = sp.median - median_mad(sp.values)[0]
    return [v + shift for v in sp.values]


@dataclasses.dataclass
class CompareRow:
    suite: str
    name: str
    switch: str
    metric: str
    verdict: str
    a: dict | None
    b: dict | None
    band: float | None = None
    change_pct: float | None = None
    direction: int = 0
    context: str = ""
    evidence_a: str = ""
    evidence_b: str = ""
    method: str = ""       # jumpavg | band (one side repeated) | none (one value a side)


def _key(rec: Mapping) -> tuple:
    p = rec.get("provenance", {}) or {}
    return (rec.get("suite"), rec.get("name"), str(p.get("dut_switch_kind", "")))


def pair_groups(records_a: Sequence[Mapping], records_b: Sequence[Mapping]):
    """[(group_a | None, group_b | None, context)]: repetition groups of A and B paired by
    full key first, then by (suite, name, switch) when that leaves one candidate each."""
    ga = group_repetitions(records_a)
    gb = group_repetitions(records_b)
    pairs, used_a, used_b = [], set(), set()
    for k in gb:
        if k in ga:
            pairs.append((ga[k], gb[k], ""))
            used_a.add(k)
            used_b.add(k)
    rest_a = [k for k in ga if k not in used_a]
    rest_b = [k for k in gb if k not in used_b]
    for k in list(rest_b):
        cands = [ka for ka in rest_a if ka[:3] == k[:3]]
        others_b = [kb for kb in rest_b if kb[:3] == k[:3]]
        if len(cands) == 1 and len(others_b) == 1:
            ka = cands[0]
            diff = ", ".join(f"{name} {va or '?'} → {vb or '?'}" for name, va, vb in
                             zip(CONTEXT_KEYS, ka[3:], k[3:]) if va != vb)
            pairs.append((ga[ka], gb[k], diff))
            rest_a.remove(ka)
            rest_b.remove(k)
    pairs += [(None, gb[k], "") for k in rest_b]
    pairs += [(ga[k], None, "") for k in rest_a]
    return pairs


def compare_records(records_a: Sequence[Mapping], records_b: Sequence[Mapping],
                    k: float = K_DEFAULT, rel_floor: float = REL_FLOOR) -> list[CompareRow]:
    from reports.goals import evidence_id
    rows = []
    for grp_a, grp_b, context in pair_groups(records_a, records_b):
        ref = (grp_b or grp_a)[0]
        suite, name, switch = _key(ref)
        metrics: dict[str, None] = {}
        for g in (grp_a or []) + (grp_b or []):
            ms = g.get("metrics") or {}
            for m, v in ms.items():
                # x_stdev describes x's noise (used for x's band), it is not a result itself
                if number(v) is not None and not is_spread_metric(m, ms):
                    metrics.setdefault(m, None)
        if not grp_a or not grp_b:   # a record only one run has: one row, not one per metric
            rows.append(CompareRow(suite, name, switch, f"{len(metrics)} metric(s)",
                                   "only_b" if grp_b else "only_a", None, None,
                                   evidence_a=evidence_id(grp_a[0]) if grp_a else "",
                                   evidence_b=evidence_id(grp_b[0]) if grp_b else ""))
            continue
        for m in metrics:
            sa = metric_spread(grp_a, m) if grp_a else None
            sb = metric_spread(grp_b, m) if grp_b else None
            d = metric_direction(m)
            row = CompareRow(suite, name, switch, m, "same", sa.as_dict() if sa else None,
                             sb.as_dict() if sb else None, direction=d, context=context,
                             evidence_a=evidence_id(grp_a[0]) if grp_a else "",
                             evidence_b=evidence_id(grp_b[0]) if grp_b else "")
            if sa is None and sb is None:
                row.verdict = "not_measured"
            elif sb is None:
                row.verdict = "only_a"
            elif sa is None:
                row.verdict = "only_b"
            elif (sa.kind == sb.kind == "values" and len(sa.values) >= MIN_REPS
                  and len(sb.values) >= MIN_REPS):
                row.verdict, row.change_pct = jumpavg_verdict(centred(sa), centred(sb), d,
                                                              rel_floor)
                row.method = "jumpavg"
            else:
                history = centred(sa)
                j = judge(sb.median, history, d if d else 1, k, rel_floor, min_history=1,
                          other_mad=max(spread_mad(sb), spread_mad(sa)))
                row.band, row.change_pct = j.band, j.change_pct
                row.method = "band" if sa.repeated or sb.repeated else "none"
                moved = j.verdict in ("progression", "regression")
                if not moved:
                    row.verdict = "same"
                elif row.method == "none":
                    row.verdict = "unsure"
                elif d == 0:
                    row.verdict = "changed"
                else:
                    row.verdict = "better" if j.verdict == "progression" else "worse"
            rows.append(row)
    rows.sort(key=lambda r: (ORDER.get(r.verdict, 9), r.suite, r.name, r.switch, r.metric))
    return rows


def one_value(r: CompareRow) -> bool:
    """A move judged with one value on each side (no repetitions: the band is the floor)."""
    return (r.a or {}).get("n", 0) <= 1 and (r.b or {}).get("n", 0) <= 1


def _run_info(run_dir: Path, records: Sequence[Mapping]) -> dict:
    session = {}
    p = run_dir / "session.json"
    if p.is_file():
        try:
            session = json.loads(p.read_text())
        except json.JSONDecodeError:
            session = {}
    provs = [r.get("provenance", {}) for r in records]
    shas = sorted({str(pv.get("git_sha", "?"))[:12] for pv in provs})
    profiles = sorted({str(pv.get("profile", "?")) for pv in provs})
    return {"run": run_dir.name, "path": str(run_dir),
            "profile": session.get("profile") or ", ".join(profiles) or "?",
            "git_sha": ", ".join(shas) or "?",
            "git_dirty": any(pv.get("git_dirty") for pv in provs),
            "command": redact_text(str(session.get("command", ""))), "records": len(records)}


def goal_changes(run_a: Path, ra, run_b: Path, rb) -> list[dict]:
    """Goals measured in both runs whose verdict differs (judged with each run's own goals)."""
    from reports.goals import GoalError, declared_goals, evaluate_goals
    out = []
    try:
        va = evaluate_goals(ra, declared_goals(run_a, _profile_of(run_a, ra), snapshot=False))
        vb = evaluate_goals(rb, declared_goals(run_b, _profile_of(run_b, rb), snapshot=False))
    except GoalError as e:
        return [{"error": str(e)}]
    a = {(r.suite, r.goal, r.switch): r.goal_verdict for r in va}
    b = {(r.suite, r.goal, r.switch): r.goal_verdict for r in vb}
    absent = ("not measured", "not declared", None)
    for key in sorted(set(a) | set(b)):
        # a goal only one run measured (a suite the other did not run) is no change
        if a.get(key) in absent or b.get(key) in absent:
            continue
        if a.get(key) != b.get(key):
            out.append({"suite": key[0], "goal": key[1], "switch": key[2],
                        "a": a.get(key, "not declared"), "b": b.get(key, "not declared")})
    return out


def _profile_of(run_dir: Path, records) -> str:
    p = run_dir / "session.json"
    if p.is_file():
        try:
            prof = json.loads(p.read_text()).get("profile")
            if prof:
                return prof
        except (json.JSONDecodeError, AttributeError):
            pass
    return next((r["provenance"].get("profile") for r in records
                 if r.get("provenance", {}).get("profile")), "")


@dataclasses.dataclass
class Comparison:
    a: dict
    b: dict
    rows: list[CompareRow]
    goals: list[dict]
    settings: dict

    def counts(self) -> dict[str, int]:
        return {v: sum(1 for r in self.rows if r.verdict == v) for v in ORDER}

    @property
    def exit_code(self) -> int:
        return 1 if any(r.verdict == "worse" for r in self.rows) else 0

    def moved(self) -> list[CompareRow]:
        return [r for r in self.rows if r.verdict in ("worse", "better", "changed")]

    def one_value_moves(self) -> int:
        """Moves with one value on each side: no verdict ("unsure")."""
        return sum(1 for r in self.rows if r.verdict == "unsure")

    def summary(self) -> str:
        c = self.counts()
        lines = [f"A {self.a['run']} (profile {self.a['profile']}, git {self.a['git_sha']})",
                 f"B {self.b['run']} (profile {self.b['profile']}, git {self.b['git_sha']})",
                 f"{c['worse']} worse, {c['better']} better, {c['changed']} changed (no "
                 f"direction), {c['same']} within noise, {c['only_a']} record(s) only in A, "
                 f"{c['only_b']} record(s) only in B",
                 f"(verdicts from repeated trials: jumpavg with >= {MIN_REPS} a side, the MAD "
                 f"band with one side repeated; {self.one_value_moves()} move(s) beyond 2 % "
                 "with one value per side are unsure: the noise itself is unknown, no verdict)"]
        for r in self.moved() + [r for r in self.rows if r.verdict == "unsure"]:
            a, b = r.a or {}, r.b or {}
            pct = f"{r.change_pct:+.1f}%" if r.change_pct is not None else "n/a"
            mark = LABEL[r.verdict]
            how = "jumpavg" if r.method == "jumpavg" else f"band ±{_fmt(r.band)}"
            lines.append(f"  {mark:<12} {r.suite}/{r.name} [{r.switch}] {r.metric}: "
                         f"{_fmt(a.get('median'))} (n={a.get('n', 0)}) -> "
                         f"{_fmt(b.get('median'))} (n={b.get('n', 0)}), {pct}, {how}"
                         + (f"; {r.context}" if r.context else ""))
        for g in self.goals:
            if "error" in g:
                lines.append(f"  goals: {g['error']}")
            else:
                lines.append(f"  goal {g['suite']}/{g['goal']} [{g['switch']}]: {g['a']} -> "
                             f"{g['b']}")
        return "\n".join(lines)

    def as_dict(self) -> dict:
        return {"a": self.a, "b": self.b, "settings": self.settings, "counts": self.counts(),
                "goal_changes": self.goals,
                "rows": [dataclasses.asdict(r) for r in self.rows]}


def _fmt(v) -> str:
    return "—" if v is None else f"{v:.4g}"


def compare_runs(run_a: Path, run_b: Path, k: float = K_DEFAULT,
                 rel_floor: float = REL_FLOOR) -> Comparison:
    run_a, run_b = Path(run_a).resolve(), Path(run_b).resolve()
    for d in (run_a, run_b):
        if not (d / "results.jsonl").is_file():
            raise FileNotFoundError(f"{d}: no results.jsonl (not a run folder?)")
    ra = [redact_record(r) for r in load_results(run_a, errors=[])]
    rb = [redact_record(r) for r in load_results(run_b, errors=[])]
    rows = compare_records(ra, rb, k, rel_floor)
    return Comparison(_run_info(run_a, ra), _run_info(run_b, rb), rows,
                      goal_changes(run_a, ra, run_b, rb), {"k": k, "rel_floor": rel_floor})


def write_compare_page(cmp: Comparison, out: Path, show_all: bool = False) -> Path:
    """The compare page (and the same as JSON beside it, .json)."""
    from reports.html import esc, fmt_number, page
    from reports.html import spread_text as sp_text
    out = Path(out)

    def val(d):
        if not d:
            return '<td class="num none">—</td>'
        s = Spread(d["median"], d["min"], d["max"], d["n"], d["spread_kind"])
        tail = f'<span class="spread">{esc(sp_text(s))}</span>' if s.repeated else ""
        return f'<td class="num">{esc(fmt_number(d["median"]))}{tail}</td>'

    def link(run, ev):
        # the page is written into one of the two runs or elsewhere: link by path
        base = Path(run["path"]) / "index.html"
        try:
            href = base.relative_to(out.parent).as_posix()
        except ValueError:
            href = base.as_uri()
        return f"{href}#{ev}" if ev else href

    c = cmp.counts()
    chips = "".join(f'<span class="chip {cls}">{c[v]} {label}</span>' for v, cls, label in
                    (("worse", "fail", "worse"), ("better", "pass", "better"),
                     ("changed", "", "changed, no direction"), ("same", "", "within noise"),
                     ("only_a", "", "only in A"), ("only_b", "", "only in B")) if c[v])
    runs = "".join(
        f"<tr><th>{tag}</th><td><a href=\"{esc(link(r, ''))}\">{esc(r['run'])}</a></td>"
        f"<td>{esc(r['profile'])}</td><td>{esc(r['git_sha'])}"
        f"{' (dirty)' if r['git_dirty'] else ''}</td><td class=\"num\">{r['records']}</td>"
        f"<td><code>{esc(r['command'])}</code></td></tr>" for tag, r in (("A", cmp.a),
                                                                        ("B", cmp.b)))
    body = [f'<table class="kv"><thead><tr><th></th><th>run</th><th>profile</th><th>git</th>'
            f"<th>records</th><th>command</th></tr></thead><tbody>{runs}</tbody></table>",
            f'<div class="chips">{chips}</div>',
            f'<p class="note">verdicts from repeated trials: with >= {MIN_REPS} values a side, '
            "jumpavg's grouping of A's and B's repetitions (one group = within noise; two "
            f"groups and >= {cmp.settings['rel_floor'] * 100:g} % apart = better/worse); with "
            "one side repeated, beyond max(K·1.4826·MAD, "
            f"{cmp.settings['rel_floor'] * 100:g} % of A's median), K = {cmp.settings['k']:g} "
            "(the MAD rule, reports.trend.judge); one value a side: no verdict; n = values per "
            "side</p>"]
    if cmp.goals:
        body.append("<h2>goal verdicts that changed</h2><table><thead><tr><th>suite</th>"
                    "<th>goal</th><th>switch</th><th>A</th><th>B</th></tr></thead><tbody>"
                    + "".join(f"<tr><td>{esc(g.get('suite', ''))}</td><td>"
                              f"{esc(g.get('goal', g.get('error', '')))}</td><td>"
                              f"{esc(g.get('switch', ''))}</td><td>{esc(g.get('a', ''))}</td>"
                              f"<td>{esc(g.get('b', ''))}</td></tr>" for g in cmp.goals)
                    + "</tbody></table>")
    body.insert(2, f'<p class="note">{cmp.one_value_moves()} metric(s) moved beyond the floor '
                   "with one value per side (\"unsure\", listed after the verdicts): the noise "
                   "itself is unknown, so no verdict; repeat the measurement to judge them</p>")
    shown = cmp.rows if show_all else [r for r in cmp.rows if r.verdict != "same"]
    head = ("<tr><th>change</th><th>suite / record</th><th>switch</th><th>metric</th>"
            "<th>A</th><th>B</th><th>change %</th><th>band ±</th><th>context</th></tr>")
    trs = []
    moved = {id(r) for r in cmp.moved()}
    for r in shown:
        cls = {"worse": "worse", "better": "better"}.get(r.verdict, "")
        ev_a = f'<a href="{esc(link(cmp.a, r.evidence_a))}">A</a>' if r.evidence_a else ""
        ev_b = f'<a href="{esc(link(cmp.b, r.evidence_b))}">B</a>' if r.evidence_b else ""
        label, tip = LABEL[r.verdict], ""
        if r.verdict == "unsure":
            tip = "one value per side: the noise is unknown"
        elif id(r) in moved and r.method == "jumpavg":
            tip = "jumpavg: A's and B's repetitions form two groups"
        trs.append(f'<tr><td class="{cls}" title="{tip}">{esc(label)}</td>'
                   f'<td class="name">{esc(r.suite)} / {esc(r.name)} '
                   f'<span class="spread">{ev_a} {ev_b}</span></td><td>{esc(r.switch)}</td>'
                   f"<td>{esc(r.metric)}</td>{val(r.a)}{val(r.b)}"
                   f'<td class="num {cls}">'
                   f"{esc(f'{r.change_pct:+.1f}') if r.change_pct is not None else '—'}</td>"
                   f'<td class="num">{esc(fmt_number(r.band)) if r.band is not None else "—"}'
                   f'</td><td class="note">{esc(r.context)}</td></tr>')
    hidden = "" if show_all else (f'<p class="note">{c["same"]} metric(s) within noise not '
                                  "listed (--all lists them)</p>")
    body.append(f"<h2>metrics</h2>{hidden}<div class=\"scroll\"><table class=\"compare\">"
                f"<thead>{head}</thead><tbody>{''.join(trs)}</tbody></table></div>")
    header = (f"<h1>ofbench compare</h1><div class=\"sub\">A {esc(cmp.a['run'])} "
              f"({esc(cmp.a['profile'])}) → B {esc(cmp.b['run'])} ({esc(cmp.b['profile'])})"
              "</div>")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(page(f"ofbench compare {cmp.a['run']} → {cmp.b['run']}", header,
                        "\n".join(body)), encoding="utf-8")
    out.with_suffix(".json").write_text(json.dumps(cmp.as_dict(), indent=1))
    return out


def default_out(run_a: Path, run_b: Path) -> Path:
    return Path(run_b).resolve() / f"compare-{Path(run_a).resolve().name}.html"
