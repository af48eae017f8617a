"""The run index page: reports/<run-id>/index.html, one self-contained page per run.

What it shows, top to bottom: the run id and a summary (passed/failed/skipped/duration from
session.json), links to pytest.html / trend.html / results.jsonl, the provenance shared by the
run's records, then one section per suite: a bar chart of the suite's main metric (when there
are at least two records to compare), a table of its records (one column per metric, a
"targets" column with misses in red), and the extras the suite registered (plots and tables).

Files of a run dir this module reads or writes:
  results.jsonl                   records (reports.results)
  session.json                    written by the harness at session end, all keys optional:
                                  {"passed": N, "failed": N, "skipped": N, "error": N,
                                   "duration_s": x, "profile": "local", "command": "pytest ...",
                                   "failed_tests": ["suites/x/test_y.py::test_z", ...],
                                   "pytest_html": "pytest.html"}
  pytest.html, trend.html         linked when present
  plots/*.png                     written here (charts of the index page)
  extras/<suite>/manifest.jsonl   written by add_plot/add_table: {"kind", "file", "title"}
  extras/<suite>/*.png|*.html     extras (a .png/.html without a manifest entry is shown too)

Self-contained: inline CSS, no JS, nothing fetched; images are relative files in the run dir.
Plots use matplotlib's Agg backend (no display). Not thread-safe (one writer per run dir).
"""
from __future__ import annotations

import html
import json
import math
import os
import re
import shutil
from collections import Counter
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from redact import redact_record, redact_text
from reports.results import load_results

INDEX_FILE = "index.html"
SESSION_FILE = "session.json"
PYTEST_HTML = "pytest.html"
TREND_HTML = "trend.html"
PLOTS_DIR = "plots"
EXTRAS_DIR = "extras"
MANIFEST = "manifest.jsonl"
MAX_BARS = 60          # a chart with more bars is unreadable: show the first MAX_BARS
OPEN_TABLE_ROWS = 100  # longer tables start collapsed
TRANSPOSE_MAX_RECORDS = 4   # few records with many metrics: a column per record reads better
TRANSPOSE_MIN_METRICS = 8

CSS = """
:root { --fg:#1d2330; --muted:#5b6577; --line:#d9dee7; --bg:#ffffff; --band:#f4f6fa;
        --bad:#c62828; --badbg:#fde8e8; --good:#2e7d32; --goodbg:#e6f4ea; --accent:#1f5fbf; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans",
       sans-serif; color: var(--fg); background: var(--bg); }
header { background: #18233a; color: #fff; padding: 18px 32px 14px; }
header h1 { margin: 0 0 4px; font-size: 22px; font-weight: 600; }
header .sub { color: #b9c3d6; font-size: 13px; }
header a { color: #9cc3ff; }
main { padding: 8px 32px 48px; max-width: 1500px; }
h2 { font-size: 19px; margin: 32px 0 8px; padding-bottom: 4px; border-bottom: 2px solid var(--line); }
h3 { font-size: 15px; margin: 18px 0 6px; color: var(--muted); }
.chips { display: flex; flex-wrap: wrap; gap: 8px; margin: 14px 0 4px; }
.chip { padding: 6px 12px; border-radius: 16px; background: var(--band); font-weight: 600; }
.chip.pass { background: var(--goodbg); color: var(--good); }
.chip.fail { background: var(--badbg); color: var(--bad); }
.chip.skip { background: #fff4e0; color: #8a5a00; }
.links a { margin-right: 16px; color: var(--accent); }
nav.toc { margin: 10px 0; color: var(--muted); }
nav.toc a { color: var(--accent); margin-right: 12px; }
.scroll { overflow-x: auto; max-width: 100%; }
table { border-collapse: collapse; margin: 6px 0 12px; font-size: 13px; }
th, td { border: 1px solid var(--line); padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: var(--band); font-weight: 600; white-space: nowrap; position: sticky; top: 0; }
tbody tr:nth-child(even) td { background: #fafbfd; }
td.num { text-align: right; font-variant-numeric: tabular-nums;
         font-family: ui-monospace, "DejaVu Sans Mono", monospace; white-space: nowrap; }
td.name { font-weight: 600; white-space: nowrap; }
td.params { color: var(--muted); font-size: 12px; }
td.miss, tbody tr:nth-child(even) td.miss { background: var(--badbg); color: var(--bad); font-weight: 600; }
td.met, tbody tr:nth-child(even) td.met { background: var(--goodbg); color: var(--good); }
.true { color: var(--good); font-weight: 700; }
.false { color: var(--bad); font-weight: 700; }
.none { color: #a0a8b8; }
h2 .verdict { font-size: 14px; margin-left: 8px; }
table.kv th, table.transposed tbody th { text-align: right; position: static; }
table.transposed thead th { text-align: right; }
figure { margin: 10px 0 18px; }
figure img { max-width: 100%; border: 1px solid var(--line); border-radius: 4px; }
figcaption { color: var(--muted); font-size: 12px; margin-top: 2px; }
.note { color: var(--muted); font-size: 12px; }
.empty { color: var(--muted); font-style: italic; }
details > summary { cursor: pointer; color: var(--accent); margin: 4px 0; }
td.params { max-width: 300px; }
td.params.short { max-width: none; white-space: nowrap; }
table.records > thead th { white-space: normal; min-width: 56px; vertical-align: bottom; }
td.prov { white-space: nowrap; }
td.params details > summary { color: var(--muted); white-space: nowrap; overflow: hidden;
                              text-overflow: ellipsis; max-width: 290px; margin: 0; }
td.params details[open] > summary { white-space: normal; }
td.targets { max-width: 360px; font-size: 12px; }
.spread { color: var(--muted); font-size: 11px; margin-left: 4px; }
table.verdicts { font-size: 13px; }
table.verdicts td.goal { max-width: 560px; font-size: 12px; }
table.verdicts td.note { max-width: 280px; }
table.verdicts td.peers { white-space: nowrap; }
table.verdicts .evidence { font-size: 12px; }
table.verdicts td.goal b { font-size: 13px; }
td.v { font-weight: 700; white-space: nowrap; }
td.v.met { background: var(--goodbg); color: var(--good); }
td.v.missed { background: var(--badbg); color: var(--bad); }
td.v.inconclusive { background: #fff4e0; color: #8a5a00; }
td.v.not-measured { color: var(--muted); font-weight: 400; }
.chip.inconclusive { background: #fff4e0; color: #8a5a00; }
tr:target td { outline: 2px solid var(--accent); }
td.better { color: var(--good); font-weight: 600; }
td.worse { color: var(--bad); font-weight: 600; }
"""


# ---- small pure helpers ----------------------------------------------------------------------

def esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def slug(text: str, max_len: int = 60) -> str:
    s = re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower()
    return (s or "x")[:max_len]


def fmt_number(v: float | int) -> str:
    """Readable fixed notation with ~4 significant digits; no exponent for usual ranges."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return f"{v:,}".replace(",", "\u2009")
    if not math.isfinite(v):
        return str(v)
    a = abs(v)
    if a == 0:
        return "0"
    if a >= 1e4:
        return f"{v:,.0f}".replace(",", "\u2009")
    if a >= 1e-3:
        digits = max(0, 3 - int(math.floor(math.log10(a))))
        return f"{v:.{digits}f}"
    return f"{v:.3g}"


def cell(value: Any) -> str:
    """<td> for one value: numbers right-aligned, bools as ✓/✗, null as a dash."""
    if value is None:
        return '<td class="num none">—</td>'
    if isinstance(value, bool):
        return f'<td class="num {"true" if value else "false"}">{"✓" if value else "✗"}</td>'
    if isinstance(value, (int, float)):
        return f'<td class="num">{esc(fmt_number(value))}</td>'
    if isinstance(value, (list, tuple)):
        return f"<td>{esc(', '.join(str(v) for v in value))}</td>"
    if isinstance(value, Mapping):
        return f"<td>{esc(json.dumps(value, sort_keys=True))}</td>"
    return f"<td>{esc(value)}</td>"


def ordered_keys(dicts: Iterable[Mapping]) -> list[str]:
    """Union of keys in first-seen order."""
    seen: dict[str, None] = {}
    for d in dicts:
        for k in d:
            seen.setdefault(k, None)
    return list(seen)


def table_html(rows: Sequence[Mapping], title: str | None = None) -> str:
    """A plain HTML table of rows (columns = union of keys). Also fine for pytest-html extras."""
    if not rows:
        return f'<p class="empty">{esc(title) + ": " if title else ""}no rows</p>'
    cols = ordered_keys(rows)
    head = "".join(f"<th>{esc(c)}</th>" for c in cols)
    body = "".join("<tr>" + "".join(cell(r.get(c)) for c in cols) + "</tr>" for r in rows)
    cap = f"<h3>{esc(title)}</h3>" if title else ""
    return f'{cap}<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{body}' \
           f"</tbody></table></div>"


def plain(value: Any) -> str:
    """A value as plain words (provenance table): bools as yes/no, null as 'none'."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    return "none" if value is None else str(value)


def params_text(params: Mapping) -> str:
    parts = []
    for k, v in params.items():
        if isinstance(v, (list, tuple)):
            v = ",".join(str(x) for x in v)
        elif isinstance(v, Mapping):
            v = json.dumps(v, sort_keys=True)
        parts.append(f"{k}={v}")
    return " ".join(parts)


PARAMS_FOLD_CHARS = 40   # longer params text is folded into a <details> (one line closed)


def params_td(params: Mapping) -> str:
    """The params cell: short text as is; long text folded, its start as the summary."""
    text = params_text(params)
    if len(text) <= PARAMS_FOLD_CHARS:
        return f'<td class="params short">{esc(text)}</td>'
    return (f'<td class="params"><details><summary title="{esc(text)}">{esc(text)}</summary>'
            f"{esc(text)}</details></td>")


def spread_text(sp) -> str:
    """'0.27–0.34 ×5' (min–max and count), or '±0.03 sd ×5' for a mean with its sd."""
    if sp is None or not sp.repeated:
        return ""
    n = f" ×{sp.n}" if sp.n else ""
    if sp.kind == "stdev":
        return f"±{short_number((sp.hi - sp.lo) / 2)} sd{n}"
    if sp.lo == sp.hi:
        return f"all equal{n}"
    return f"{short_number(sp.lo)}–{short_number(sp.hi)}{n}"


def short_number(v: float) -> str:
    """Three significant digits, no trailing zeros (spreads beside a value): 0.27, 1.2e+06."""
    if isinstance(v, float) and v.is_integer() and abs(v) < 1e6:
        return str(int(v))
    return f"{v:.3g}"


def spread_cell(sp, extra_class: str = "") -> str:
    """A number cell showing the median and, when repeated, min–max and the count."""
    if sp is None:
        return f'<td class="num none {extra_class}">—</td>'
    label = "median" if sp.kind == "values" else "mean"
    note = spread_text(sp)
    med = sp.median
    if isinstance(med, float) and med.is_integer() and abs(med) < 1e15:
        med = int(med)
    tail = f'<span class="spread" title="{label} of {sp.n}">{esc(note)}</span>' if note else ""
    return f'<td class="num {extra_class}">{esc(fmt_number(med))}{tail}</td>'


def target_text(t: Mapping) -> str:
    text = t.get("message")
    if text:
        return text
    value = t.get("value")
    vtxt = fmt_number(value) if isinstance(value, (int, float)) else str(value)
    s = f"{t.get('metric')} {vtxt}, target {t.get('op')} {fmt_number(t.get('target', 0))}"
    if t.get("relative_to"):
        s += f" (vs {t['relative_to']})"
    if t.get("miss_by_pct") is not None and not t.get("ok", False):
        s += f", off by {fmt_number(abs(t['miss_by_pct']))}%"
    return s


def targets_cell(record: Mapping) -> str:
    misses = record.get("target_misses") or []
    checked = record.get("targets") or []
    if misses:
        items = "<br>".join(esc("✗ " + target_text(t)) for t in misses)
        return f'<td class="miss targets">{items}</td>'
    if checked:
        return f'<td class="met">✓ {len(checked)} met</td>'
    return '<td class="none">—</td>'


# ---- main metric and charts -----------------------------------------------------------------

def main_metric(records: Sequence[Mapping]) -> str | None:
    """The metric a suite's bar chart shows: the numeric (non-bool) metric most records carry;
    ties go to the one with the clearest better-direction (throughput before latency before
    other), then to the first seen."""
    from reports.metrics import metric_direction
    counts: Counter[str] = Counter()
    first_seen: dict[str, int] = {}
    for rec in records:
        for k, v in rec.get("metrics", {}).items():
            first_seen.setdefault(k, len(first_seen))
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                counts[k] += 1
    if not counts:
        return None

    def rank(k: str):
        d = metric_direction(k)
        return (-counts[k], 0 if d > 0 else 1 if d < 0 else 2, first_seen[k])
    return min(counts, key=rank)


def varying(records: Sequence[Mapping], key: str) -> bool:
    return len({r.get("provenance", {}).get(key) for r in records}) > 1


def record_label(rec: Mapping, show_kind: bool) -> str:
    label = str(rec.get("name"))
    if show_kind:
        label += f" [{rec.get('provenance', {}).get('dut_switch_kind', '?')}]"
    return label


def bar_chart(records: Sequence[Mapping], metric: str, out_png: Path, title: str) -> Path | None:
    """Horizontal bars of `metric` per record, coloured by switch kind when that varies; a
    record that missed a target on this metric gets a red edge. None when < 2 values."""
    rows = [(r, r["metrics"][metric]) for r in records
            if isinstance(r.get("metrics", {}).get(metric), (int, float))
            and not isinstance(r["metrics"][metric], bool)]
    if len(rows) < 2:
        return None
    truncated = len(rows) > MAX_BARS
    rows = rows[:MAX_BARS]
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    show_kind = varying([r for r, _ in rows], "dut_switch_kind")
    kinds = list(dict.fromkeys(r.get("provenance", {}).get("dut_switch_kind", "?")
                               for r, _ in rows))
    palette = ["#1f5fbf", "#e08a1e", "#2e9d5b", "#8e44ad", "#7f8c8d", "#16a3b5"]
    colour = {k: palette[i % len(palette)] for i, k in enumerate(kinds)}
    labels = [record_label(r, show_kind) for r, _ in rows]
    values = [float(v) for _, v in rows]
    fig_h = 1.2 + 0.32 * len(rows)
    fig, ax = plt.subplots(figsize=(9.5, fig_h), dpi=100)
    try:
        y = list(range(len(rows)))[::-1]
        bars = ax.barh(y, values, color=[colour[r.get("provenance", {}).get("dut_switch_kind",
                                                                           "?")] for r, _ in rows],
                       height=0.7)
        for bar, (rec, _) in zip(bars, rows):
            if any(t.get("metric") == metric for t in rec.get("target_misses") or []):
                bar.set_edgecolor("#c62828")
                bar.set_linewidth(2.5)
        ax.set_yticks(y, labels, fontsize=9)
        ax.set_xlabel(metric)
        ax.set_title(title, fontsize=11, loc="left")
        ax.grid(axis="x", alpha=0.3)
        ax.set_axisbelow(True)
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
        vmax = max(values + [0])
        for yi, v in zip(y, values):
            ax.text(v + vmax * 0.01, yi, fmt_number(v), va="center", fontsize=8, color="#333")
        ax.set_xlim(min(0, min(values)) * 1.1, vmax * 1.12 if vmax > 0 else 1)
        if show_kind:
            from matplotlib.patches import Patch
            ax.legend(handles=[Patch(color=colour[k], label=k) for k in kinds],
                      loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8,
                      title="switch", title_fontsize=8, frameon=False)
        if truncated:
            ax.text(1.0, -0.02, f"first {MAX_BARS} records shown", transform=ax.transAxes,
                    ha="right", va="top", fontsize=8, color="#777")
        fig.tight_layout()
        out_png.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(out_png)
    finally:
        plt.close(fig)
    return out_png


# ---- extras API (suites call these through the harness's `results` fixture) -------------------

SUITE_NAME_RE = re.compile(r"[a-z][a-z0-9_]*", re.ASCII)


def safe_suite_name(suite: Any) -> bool:
    """A suite name from the safe alphabet: the only ones whose extras and chart declarations
    are read (a record's `suite` or a folder name is data, never a path)."""
    return isinstance(suite, str) and SUITE_NAME_RE.fullmatch(suite) is not None


def _inside(path: Path, folder: Path) -> bool:
    """True when `path`, symlinks resolved, lies inside `folder` (resolved)."""
    try:
        Path(path).resolve().relative_to(Path(folder).resolve())
    except (ValueError, OSError, RuntimeError):
        return False
    return True


def safe_run_link(run_dir: Path, value: Any) -> str | None:
    """`value` when it is a plain relative path to a file inside the run folder (what an href
    of the index may point at), else None: no scheme (javascript:, http:), no absolute path,
    no .. and nothing a symlink takes outside."""
    if not isinstance(value, str) or not re.fullmatch(r"[A-Za-z0-9._-]+(?:/[A-Za-z0-9._-]+)*",
                                                      value, re.ASCII):
        return None
    if any(part in (".", "..") for part in value.split("/")):
        return None
    return value if _inside(Path(run_dir) / value, run_dir) else None


def _extras_dir(run_dir: Path, suite: str) -> Path:
    if not safe_suite_name(suite):
        raise ValueError(f"suite name {suite!r} must match [a-z][a-z0-9_]*")
    d = Path(run_dir) / EXTRAS_DIR / suite
    d.mkdir(parents=True, exist_ok=True)
    return d


def _next_name(d: Path, title: str, ext: str) -> Path:
    n = sum(1 for p in d.iterdir() if p.name != MANIFEST)
    while True:
        p = d / f"{n:03d}-{slug(title)}{ext}"
        if not any(d.glob(f"{n:03d}-*")):
            return p
        n += 1


def _manifest_add(d: Path, kind: str, path: Path, title: str) -> None:
    with open(d / MANIFEST, "a", encoding="utf-8") as f:
        f.write(json.dumps({"kind": kind, "file": path.name, "title": title}) + "\n")


def add_plot(run_dir: Path, suite: str, fig_or_png: Any, title: str) -> Path:
    """Register a plot for the suite's section: a matplotlib Figure (saved as PNG, then closed)
    or the path of an existing PNG (copied). Returns the PNG's path in the run dir (also usable
    as a pytest-html extra)."""
    d = _extras_dir(run_dir, suite)
    out = _next_name(d, title, ".png")
    if isinstance(fig_or_png, (str, os.PathLike)):
        src = Path(fig_or_png)
        if not src.is_file():
            raise FileNotFoundError(f"add_plot({suite!r}, {title!r}): {src} does not exist")
        shutil.copyfile(src, out)
    elif hasattr(fig_or_png, "savefig"):
        fig_or_png.savefig(out, dpi=100, bbox_inches="tight")
        import matplotlib.pyplot as plt
        plt.close(fig_or_png)
    else:
        raise TypeError(f"add_plot({suite!r}, {title!r}): want a matplotlib Figure or a PNG "
                        f"path, got {type(fig_or_png).__name__}")
    _manifest_add(d, "png", out, title)
    return out


def add_table(run_dir: Path, suite: str, rows: Sequence[Mapping], title: str) -> Path:
    """Register a table (list of flat dicts) for the suite's section. Writes the rows as
    <n>-<title>.json and the rendered fragment beside it as <n>-<title>.html; returns the
    .html path (ready for pytest-html's extras.html)."""
    rows = [dict(r) for r in rows]
    d = _extras_dir(run_dir, suite)
    out = _next_name(d, title, ".json")
    out.write_text(json.dumps(rows, indent=1, default=str))
    fragment = out.with_suffix(".html")
    fragment.write_text(table_html(rows, title))
    _manifest_add(d, "table", out, title)
    return fragment


def load_extras(run_dir: Path, suite: str) -> list[dict]:
    """[{kind, file (Path), title}] in registration order, plus unregistered .png/.html.
    Only for a suite name of the safe alphabet, and only files that (symlinks resolved) lie
    inside extras/<suite>/ of this run folder: anything else is not read."""
    if not safe_suite_name(suite):
        return []
    d = Path(run_dir) / EXTRAS_DIR / suite
    if not d.is_dir() or not _inside(d, Path(run_dir) / EXTRAS_DIR):
        return []
    items, listed = [], set()
    if (d / MANIFEST).exists():
        for line in (d / MANIFEST).read_text().splitlines():
            if line.strip():
                e = json.loads(line)
                name = e.get("file") if isinstance(e, dict) else None
                if (isinstance(name, str) and "/" not in name and name not in (".", "..")
                        and (d / name).is_file() and _inside(d / name, d)):
                    items.append({**e, "file": d / name})
                    listed.add(name)
    # the .html fragment of a registered table is the same table: not listed twice
    listed |= {Path(f).with_suffix(".html").name for f in list(listed) if f.endswith(".json")}
    for p in sorted(d.iterdir()):
        if p.name not in listed and p.suffix in (".png", ".html") and p.is_file() \
                and _inside(p, d):
            items.append({"kind": p.suffix[1:], "file": p, "title": p.stem})
    return items


# ---- the page --------------------------------------------------------------------------------

def load_session(run_dir: Path) -> dict:
    p = Path(run_dir) / SESSION_FILE
    if not p.exists():
        return {}
    try:
        data = json.loads(p.read_text())
    except json.JSONDecodeError as e:
        return {"_load_error": f"{p}: not JSON ({e})"}
    return data if isinstance(data, dict) else {"_load_error": f"{p}: not a JSON object"}


def common_provenance(records: Sequence[Mapping]) -> tuple[dict, list[str]]:
    """(keys whose value is the same in every record, keys that vary)."""
    provs = [r.get("provenance", {}) for r in records]
    keys = ordered_keys(provs)
    same, varies = {}, []
    for k in keys:
        vals = {json.dumps(p.get(k), sort_keys=True) for p in provs}
        if len(vals) == 1:
            same[k] = provs[0].get(k)
        else:
            varies.append(k)
    return same, varies


def _summary_html(session: Mapping, records: Sequence[Mapping]) -> str:
    chips = []
    for key, cls, label in (("passed", "pass", "passed"), ("failed", "fail", "failed"),
                            ("errors", "fail", "errors"), ("error", "fail", "errors"),
                            ("skipped", "skip", "skipped")):
        if isinstance(session.get(key), int) and (key not in ("error", "errors") or session[key]):
            n = session[key]
            chips.append(f'<span class="chip {cls if n else ""}">{esc(n)} {label}</span>')
    if "duration_s" in session:
        chips.append(f'<span class="chip">{esc(fmt_number(float(session["duration_s"])))} s'
                     "</span>")
    chips.append(f'<span class="chip">{len(records)} records</span>')
    misses = sum(1 for r in records if r.get("target_misses"))
    if misses:
        chips.append(f'<span class="chip fail">{misses} target misses</span>')
    out = f'<div class="chips">{"".join(chips)}</div>'
    if session.get("command"):
        out += f'<p class="note">command: <code>{esc(redact_text(session["command"]))}</code></p>'
    if session.get("_load_error"):
        out += f'<p class="note">{esc(session["_load_error"])}</p>'
    failed = session.get("failed_tests") or []
    if failed:
        out += "<h3>failed tests</h3><ul>" + "".join(
            f'<li class="false">{esc(t)}</li>' for t in failed) + "</ul>"
    return out


PASS_METRICS = ("ok", "passed", "pass")


def pass_counts(records: Sequence[Mapping]) -> tuple[int, int] | None:
    """(records whose ok/passed flag is true, records carrying such a flag), or None."""
    flags = [next((r["metrics"][k] for k in PASS_METRICS
                   if isinstance(r.get("metrics", {}).get(k), bool)), None) for r in records]
    flags = [f for f in flags if f is not None]
    return (sum(flags), len(flags)) if flags else None


CHART_HOW = {
    "bars": "bar: the recorded figure, whisker: min–max of its repetitions",
    "cdf": "cumulative distribution from the record's quantiles (distributions field); "
           "dashed verticals: reference values",
    "histogram": "bars: share of each record's samples per bin (distributions field); "
                 "▼ our mean; dashed verticals: the document's figures and requirements",
}


def _suite_section(run_dir: Path, suite: str, records: Sequence[Mapping]) -> str:
    counts = pass_counts(records)
    verdict = ""
    if counts:
        ok, n = counts
        verdict = (f' <span class="verdict {"true" if ok == n else "false"}">{ok} of {n} ok'
                   "</span>")
    parts = [f'<section id="suite-{esc(slug(suite))}"><h2>{esc(suite)}'
             f' <span class="note">{len(records)} record(s)</span>{verdict}</h2>']
    declared_charts, chart_error = [], ""
    try:
        from reports.charts import load_suite_charts
        declared_charts = load_suite_charts(suite) if records and safe_suite_name(suite) else []
    except ValueError as e:
        chart_error = str(e)
    if chart_error:
        parts.append(f'<p class="false">{esc(chart_error)}</p>')
    drawn = 0
    for i, chart in enumerate(declared_charts):
        from reports.charts import draw_chart
        try:
            png = draw_chart(records, chart, Path(run_dir) / PLOTS_DIR /
                             f"{slug(suite)}-chart{i}-{slug(chart['title'], 40)}.png")
        except Exception as e:  # noqa: BLE001 - one bad chart must not cost the page
            parts.append(f'<p class="false">chart {esc(chart["title"])}: '
                         f"{esc(type(e).__name__)}: {esc(e)}</p>")
            continue
        if png:
            drawn += 1
            rel = png.relative_to(run_dir).as_posix()
            how = CHART_HOW.get(chart.get("kind", "bars"), "")
            if chart.get("kind") == "histogram" and chart.get("y") == "count":
                how = how.replace("share of each record's samples", "each record's count")
            parts.append(f'<figure><img src="{esc(rel)}" alt="{esc(chart["title"])}">'
                         f'<figcaption>{esc(chart["title"])} (declared in suites/{esc(suite)}/'
                         f"report.yaml; {esc(how)})</figcaption></figure>")
    if records:
        metric = main_metric(records) if not drawn else None
        if metric:
            png = bar_chart(records, metric, Path(run_dir) / PLOTS_DIR / f"{slug(suite)}-"
                            f"{slug(metric)}.png", f"{suite}: {metric} per record")
            if png:
                rel = png.relative_to(run_dir).as_posix()
                parts.append(f'<figure><img src="{esc(rel)}" alt="{esc(suite)}: {esc(metric)} '
                             f'per record"><figcaption>{esc(metric)} per record</figcaption>'
                             "</figure>")
        shapes = split_by_shape(records)
        for shape in shapes:
            table = records_table(shape)
            if len(shapes) > 1:
                names = list(dict.fromkeys(str(r.get("name")) for r in shape))
                table = (f'<h3>{esc(", ".join(names[:4]))}'
                         f'{esc(f" and {len(names) - 4} more") if len(names) > 4 else ""}</h3>'
                         + table)
            if len(shape) > OPEN_TABLE_ROWS:
                table = f"<details><summary>{len(shape)} records</summary>{table}</details>"
            parts.append(table)
        trials = search_trials_html(records)
        if trials:
            parts.append(trials)
    else:
        parts.append('<p class="empty">no records</p>')
    for extra in load_extras(run_dir, suite):
        rel = extra["file"].relative_to(run_dir).as_posix()
        if extra["kind"] == "png":
            parts.append(f'<figure><img src="{esc(rel)}" alt="{esc(extra["title"])}">'
                         f'<figcaption>{esc(extra["title"])}</figcaption></figure>')
        elif extra["kind"] == "table":
            parts.append(table_html(json.loads(extra["file"].read_text()), extra["title"]))
        elif extra["kind"] == "html":
            parts.append(f'<h3>{esc(extra["title"])}</h3>' + extra["file"].read_text())
    parts.append("</section>")
    return "\n".join(parts)


TRIAL_COLUMNS = ("target", "rate_pps", "duration_s", "loss_ratio", "reason", "cause")
MAX_TRIAL_ROWS = 400      # the record keeps at most this many (drivers/trafficgen/mlr.py)


def _trial_key_order(key: str) -> tuple:
    """The DUT's per-trial figures that say most first (cycles per packet, cache hit ratio,
    CPU shares, the PMD's hits and upcalls), port packet counts last."""
    for i, part in enumerate(("cycles_per_packet", "cache_hit_ratio", "cpu_share", "upcalls",
                              "hits", "pmd_")):
        if part in key:
            return (i, key)
    return (9, key)


def search_trials_html(records: Sequence[Mapping]) -> str:
    """Every search's trials beside the DUT's own counters and the rig's measurements of each
    trial (the record's ``search.trial_log``: issue 40 part 6), one folded table per record:
    load, duration, loss ratio, verdict and cause, then a column per telemetry figure
    (``dut``: the switch's stats socket or OVS-DPDK's pmd-stats-show; ``rig``: polling gaps,
    ring backlog). "" when no record kept a trial log."""
    out = []
    for r in records:
        log = (r.get("search") or {}).get("trial_log") if isinstance(r.get("search"), Mapping) \
            else None
        if not isinstance(log, list) or not log:
            continue
        log = [t for t in log if isinstance(t, Mapping)][:MAX_TRIAL_ROWS]
        dut_keys = sorted({k for t in log for k in (t.get("dut") or {})}, key=_trial_key_order)
        rig_keys = sorted({k for t in log for k in (t.get("rig") or {})})
        head = ["#", *TRIAL_COLUMNS, *(f"dut: {k}" for k in dut_keys),
                *(f"rig: {k}" for k in rig_keys)]
        rows = []
        for i, t in enumerate(log, 1):
            tds = [f"<td>{i}</td>"]
            for k in TRIAL_COLUMNS:
                v = t.get(k)
                if k == "rate_pps" and isinstance(v, (int, float)):
                    tds.append(f'<td class="num">{esc(fmt_number(v / 1e6))} Mpps</td>')
                else:
                    tds.append(cell(v))
            tds += [cell((t.get("dut") or {}).get(k)) for k in dut_keys]
            tds += [cell((t.get("rig") or {}).get(k)) for k in rig_keys]
            failed = t.get("cause") not in (None, "", "ok")    # a failed trial's cause
            rows.append(('<tr class="miss">' if failed else "<tr>") + "".join(tds) + "</tr>")
        kind = r.get("provenance", {}).get("dut_switch_kind")
        label = f"{r.get('name')}" + (f" [{kind}]" if kind else "")
        out.append(f'<details class="trials"><summary>{esc(label)}: {len(log)} search trials '
                   f"with the DUT's counters ({len(dut_keys)}) and the rig's measurements "
                   f"({len(rig_keys)}) of each</summary>"
                   '<div class="scroll"><table class="records trials"><thead><tr>'
                   + "".join(header_th(h) for h in head) + "</tr></thead><tbody>"
                   + "".join(rows) + "</tbody></table></div></details>")
    if not out:
        return ""
    return "<h3>Search trials and telemetry</h3>" + "\n".join(out)


WIDE_TABLE_COLUMNS = 12   # a union table wider than this is split by the records' metric sets


def split_by_shape(records: Sequence[Mapping]) -> list[list[Mapping]]:
    """Records in one table, or, when the suite's records measure different things (their
    metric sets differ) and one table would need more than WIDE_TABLE_COLUMNS or mostly empty
    columns, one table per record name (names measuring the same metrics share one), in
    first-seen order."""
    union = ordered_keys(r.get("metrics", {}) for r in records)
    by_name: dict[str, list[Mapping]] = {}
    for r in records:    # a record name's switches stay together, whatever they measured
        by_name.setdefault(str(r.get("name")), []).append(r)
    shapes: dict[tuple, list[Mapping]] = {}
    for recs in by_name.values():   # names measuring the same things share a table
        key = tuple(sorted(ordered_keys(r.get("metrics", {}) for r in recs)))
        shapes.setdefault(key, []).extend(recs)
    filled = sum(len(r.get("metrics", {})) for r in records) / max(1, len(records) * len(union))
    if len(shapes) == 1 or (len(union) <= WIDE_TABLE_COLUMNS and filled >= 0.6):
        return [list(records)]
    return list(shapes.values())


def header_th(name: str) -> str:
    """A column header that may break after its underscores (long metric names)."""
    return "<th>" + esc(name).replace("_", "_<wbr>") + "</th>"


def _metric_td(group: Sequence[Mapping], metric: str) -> str:
    """One metric of a record (or of repeated records): the value, or the median with
    min–max and the count when it was measured more than once; red when a target missed."""
    from reports.noise import metric_spread
    missed = any(metric in {t.get("metric") for t in r.get("target_misses") or []}
                 for r in group)
    value = group[0].get("metrics", {}).get(metric)
    sp = metric_spread(group, metric) if isinstance(value, (int, float)) \
        and not isinstance(value, bool) else None
    if sp is not None and sp.repeated:
        td = spread_cell(sp)
    else:
        td = cell(value)
    if missed:
        td = td.replace('<td class="', '<td class="miss ', 1)
    return td


def _group_label(group: Sequence[Mapping], show_kind: bool) -> str:
    label = record_label(group[0], show_kind)
    return label + (f" ×{len(group)}" if len(group) > 1 else "")


def records_table(records: Sequence[Mapping]) -> str:
    """One row per record and a column per metric; transposed (a column per record, a row
    per metric) when there are few records with many metrics, which reads better than a
    table that scrolls sideways. Repeated records (same suite, name, switch, generator and
    port kind) share one row whose cells show median, min–max and the count. A `x_stdev`
    metric is shown inside x's cell (mean ± sd), not as a column of its own. Each row has
    the id reports.goals.evidence_id gives, so verdicts link to it."""
    from reports.goals import evidence_id
    from reports.noise import group_repetitions, is_spread_metric
    groups = list(group_repetitions(records).values())
    all_metrics: dict = {}
    for r in records:
        all_metrics.update(r.get("metrics", {}))
    metric_cols = [m for m in ordered_keys(r.get("metrics", {}) for r in records)
                   if not is_spread_metric(m, all_metrics)]
    prov_cols = [k for k in ("dut_switch_kind", "generator", "port_kind")
                 if varying(records, k)]
    has_targets = any(r.get("targets") or r.get("target_misses") for r in records)
    show_kind = varying(records, "dut_switch_kind")
    if len(groups) <= TRANSPOSE_MAX_RECORDS and len(metric_cols) > TRANSPOSE_MIN_METRICS:
        head = "<th>metric</th>" + "".join(
            f'<th id="{esc(evidence_id(g[0]))}">{esc(_group_label(g, show_kind))}</th>'
            for g in groups)
        rows = [f"<tr><th>{esc(k)}</th>" + "".join(cell(g[0].get("provenance", {}).get(k))
                                                   for g in groups) + "</tr>"
                for k in prov_cols]
        rows += [f"<tr><th>{esc(m)}</th>" + "".join(_metric_td(g, m) for g in groups)
                 + "</tr>" for m in metric_cols]
        rows.append("<tr><th>params</th>" + "".join(params_td(g[0].get("params", {}))
                                                    for g in groups) + "</tr>")
        if has_targets:
            rows.append("<tr><th>targets</th>" + "".join(targets_cell(g[0]) for g in groups)
                        + "</tr>")
        return ('<div class="scroll"><table class="records transposed"><thead><tr>' + head
                + "</tr></thead><tbody>" + "".join(rows) + "</tbody></table></div>")
    head = ["name", *prov_cols, *metric_cols, "params"] + (["targets"] if has_targets else [])
    rows_html = []
    for g in groups:
        r = g[0]
        tds = [f'<td class="name">{esc(r.get("name"))}'
               + (f'<span class="spread">×{len(g)}</span>' if len(g) > 1 else "") + "</td>"]
        tds += [cell(r.get("provenance", {}).get(k)).replace("<td>", '<td class="prov">', 1)
                for k in prov_cols]
        tds += [_metric_td(g, m) for m in metric_cols]
        tds.append(params_td(r.get("params", {})))
        if has_targets:
            tds.append(targets_cell(r))
        rows_html.append(f'<tr id="{esc(evidence_id(r))}">' + "".join(tds) + "</tr>")
    return ('<div class="scroll"><table class="records"><thead><tr>'
            + "".join(header_th(h) for h in head) + "</tr></thead><tbody>"
            + "".join(rows_html) + "</tbody></table></div>")


VERDICT_LABEL = {"met": "✓ met", "missed": "✗ missed", "inconclusive": "≈ inconclusive",
                 "not measured": "– not measured"}


def _verdict_rows_html(rows: Sequence) -> str:
    """Rows of the verdict table: a goal's verdict and text span its conditions' rows."""
    out = []
    i = 0
    while i < len(rows):
        j = i
        key = (rows[i].source, rows[i].suite, rows[i].goal, rows[i].record, rows[i].switch)
        while j < len(rows) and (rows[j].source, rows[j].suite, rows[j].goal, rows[j].record,
                                 rows[j].switch) == key:
            j += 1
        block = rows[i:j]
        span = f' rowspan="{len(block)}"' if len(block) > 1 else ""
        g = block[0]
        gv = g.goal_verdict
        title = g.text or g.goal
        where = f"{g.suite} / {g.record}" + (f" [{g.switch}]" if g.switch else "")
        link = f'<a href="#{esc(g.evidence)}">{esc(where)}</a>' if g.evidence else esc(where)
        for n, r in enumerate(block):
            from reports.noise import Spread
            sp = Spread(r.spread["median"], r.spread["min"], r.spread["max"], r.spread["n"],
                        r.spread["spread_kind"]) if r.spread else None
            peers = "<br>".join(
                f'<a href="#{esc(p["evidence"])}">{esc(p["switch"])}</a> '
                f"{esc(fmt_number(p['value']))}"
                + (f'<span class="spread">{esc(spread_text(Spread(p["median"], p["min"], p["max"], p["n"], p["spread_kind"])))}</span>'
                   if p.get("n", 1) > 1 else "") for p in r.peers)
            ratios = "<br>".join(f"{fmt_number(p['ratio'])}×" if p.get("ratio") is not None
                                 else "—" for p in r.peers)
            tds = ""
            if n == 0:
                tds += (f'<td class="v {slug(gv)}"{span}>{esc(VERDICT_LABEL[gv])}</td>'
                        f'<td class="goal"{span}><b>{esc(g.suite)}: {esc(g.goal)}</b> '
                        f'<span class="note">{esc(g.source)}</span><br>'
                        + (f"{esc(title)}<br>" if g.text else "")
                        + f'<span class="evidence">evidence: {link}</span></td>')
            cond_cls = slug(r.verdict)
            tds += (f'<td class="num">{esc(r.metric)} {esc(r.target)}</td>'
                    + spread_cell(sp, "v " + cond_cls if r.verdict != "not measured" else "")
                    + (f'<td class="peers">{peers}</td>' if peers else '<td class="none">—</td>')
                    + (f'<td class="num">{ratios}</td>' if r.peers else
                       '<td class="num none">—</td>')
                    + f'<td class="note">{esc(r.note)}</td>')
            out.append(f"<tr>{tds}</tr>")
        i = j
    return "".join(out)


def verdicts_html(rows: Sequence, declared: Mapping) -> str:
    """The verdict section: chips per verdict, the table of judged goals, and the goals not
    measured in this run folded below it."""
    from reports.goals import verdict_counts
    counts = verdict_counts(rows)
    chips = "".join(f'<span class="chip {cls}">{counts[v]} {label}</span>' for v, cls, label in
                    (("met", "pass", "met"), ("missed", "fail", "missed"),
                     ("inconclusive", "inconclusive", "inconclusive"),
                     ("not measured", "", "not measured")) if counts.get(v))
    order = {"missed": 0, "inconclusive": 1, "met": 2, "not measured": 3}
    rows = sorted(rows, key=lambda r: order.get(r.goal_verdict, 9))   # stable: goals stay whole
    judged = [r for r in rows if r.goal_verdict != "not measured"]
    unmeasured = [r for r in rows if r.goal_verdict == "not measured"]
    head = ("<thead><tr><th>verdict</th><th>goal and evidence</th><th>condition</th>"
            "<th>ours</th><th>peers</th><th>ours / peer</th><th>note</th></tr></thead>")
    profile_note = "" if declared.get("profile_found", True) else (
        f'<p class="note">profile {esc(declared.get("profile"))} not found in dut/profiles/: '
        "its targets are shown only where a record names a miss</p>")
    out = [f'<section id="verdicts"><h2>Verdicts <span class="note">goals of the suites and '
           f'targets of profile {esc(declared.get("profile"))}; ours = '
           f'{esc(declared.get("ours"))}; <a href="verdicts.json">verdicts.json</a></span></h2>'
           f'<div class="chips">{chips}</div>{profile_note}']
    if judged:
        out.append(f'<div class="scroll"><table class="verdicts">{head}<tbody>'
                   f"{_verdict_rows_html(judged)}</tbody></table></div>")
    else:
        out.append('<p class="empty">no goal was measured in this run</p>')
    if unmeasured:
        n = counts.get("not measured", 0)
        out.append(f"<details><summary>{n} goal(s) not measured in this run</summary>"
                   f'<div class="scroll"><table class="verdicts">{head}<tbody>'
                   f"{_verdict_rows_html(unmeasured)}</tbody></table></div></details>")
    out.append("</section>")
    return "".join(out)


LOG_DIRS = ("tests", "logs")   # the harness stores process logs per test / per run here
MAX_LOG_LINKS = 300


def logs_html(run_dir: Path) -> str:
    """Collapsed list of the run's process logs (tests/<test>/*.log, logs/*), linked."""
    groups: list[tuple[str, list[Path]]] = []
    total = 0
    for top in LOG_DIRS:
        root = Path(run_dir) / top
        if not root.is_dir():
            continue
        dirs = [root] + sorted(p for p in root.rglob("*") if p.is_dir())
        for d in dirs:
            files = sorted(p for p in d.iterdir() if p.is_file())
            if files and total < MAX_LOG_LINKS:
                files = files[:MAX_LOG_LINKS - total]
                total += len(files)
                groups.append((d.relative_to(run_dir).as_posix(), files))
    if not groups:
        return ""
    items = "".join(
        f"<li><b>{esc(name)}</b>: " + " ".join(
            f'<a href="{esc(f.relative_to(run_dir).as_posix())}">{esc(f.name)}</a>'
            for f in files) + "</li>" for name, files in groups)
    more = f'<p class="note">first {MAX_LOG_LINKS} files shown</p>' \
        if total >= MAX_LOG_LINKS else ""
    return f"<details><summary>process logs ({total} files)</summary><ul>{items}</ul>" \
           f"{more}</details>"


def page(title: str, header_html: str, body_html: str) -> str:
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{esc(title)}</title><style>{CSS}</style></head>\n<body>"
            f"<header>{header_html}</header>\n<main>{body_html}</main></body></html>\n")


def _verdicts_section(run_dir: Path, records: Sequence[Mapping], profile: str) -> str:
    """Judge the run's goals (writes goals.json once and verdicts.json); a broken goal
    declaration is shown on the page instead of costing it."""
    from reports.goals import (GoalError, declared_goals, evaluate_goals, goals_from_misses,
                               write_verdicts)
    try:
        declared = declared_goals(run_dir, profile)
        if not declared.get("profile_found", True):
            declared = {**declared, "goals": goals_from_misses(records, profile)
                        + list(declared["goals"])}
        rows = evaluate_goals(records, declared)
        write_verdicts(run_dir, rows, declared)
    except GoalError as e:
        return f'<section id="verdicts"><h2>Verdicts</h2><p class="false">{esc(e)}</p></section>'
    except Exception as e:  # noqa: BLE001 - the rest of the page must still be written
        return (f'<section id="verdicts"><h2>Verdicts</h2><p class="false">could not judge the '
                f"goals: {esc(type(e).__name__)}: {esc(e)}</p></section>")
    return verdicts_html(rows, declared)


def pool_note(run_dir: Path) -> str:
    """' (pools: N testbeds flagged in ...)' from trend.json's pool tables, '' without any."""
    try:
        data = json.loads((Path(run_dir) / "trend.json").read_text(encoding="utf-8"))
        pools = [p for p in data.get("pools") or [] if isinstance(p, dict)]
        flagged = sorted({f"{b.get('testbed_id')} ({b.get('place')}, pool {p.get('pool')})"
                          for p in pools for b in p.get("testbeds") or []
                          if isinstance(b, dict) and b.get("flagged") is True})
    except (OSError, ValueError, AttributeError, TypeError):
        return ""
    if not pools:
        return ""
    if not flagged:
        return f" <span class=\"chip\">{len(pools)} pool series, no testbed flagged</span>"
    return (f' <span class="chip fail">testbed outside its pool: {esc(", ".join(flagged))}'
            "</span>")


def render_run_index(run_dir: Path) -> Path:
    """Write run_dir/index.html from what the run dir holds; returns its path. Safe to call
    again (e.g. after the trend page was written): it overwrites."""
    run_dir = Path(run_dir)
    load_errors: list[str] = []
    # a torn or hand-edited line must not cost the whole page: show what is readable
    records = [redact_record(r) for r in load_results(run_dir, errors=load_errors)
               if isinstance(r.get("metrics"), dict) and isinstance(r.get("provenance"), dict)]
    session = load_session(run_dir)
    run_id = next((r["run_id"] for r in records if r.get("run_id")), run_dir.name)
    by_suite: dict[str, list[dict]] = {}
    for r in records:
        by_suite.setdefault(r.get("suite", "?"), []).append(r)
    extras_root = run_dir / EXTRAS_DIR
    if extras_root.is_dir():
        for d in sorted(extras_root.iterdir()):
            if d.is_dir():
                by_suite.setdefault(d.name, [])

    same, varies = common_provenance(records)
    profile = session.get("profile") or same.get("profile") or "?"
    when = min((str(r["provenance"].get("start_time", "")) for r in records), default="")
    if when:
        when = when[:19].replace("T", " ") + " UTC"
    header = (f"<h1>ofbench run {esc(run_id)}</h1><div class=\"sub\">profile "
              f"<b>{esc(profile)}</b>" + (f" · {esc(when)}" if when else "")
              + (f" · place <b>{esc(same['place'])}</b>" if same.get("place") else "")
              + (f" of pool <b>{esc(same['pool'])}</b>" if same.get("pool") else "")
              + (f" · git {esc(str(same.get('git_sha', ''))[:12])}"
                 + (" (dirty)" if same.get("git_dirty") else "") if "git_sha" in same else "")
              + "</div>")
    links = []
    # pytest-html writes its file after the harness renders this page: a harness run
    # (session.json present) names it, or gets the default name
    # (a relative path inside the run folder only: session.json is data, never a javascript:)
    pytest_html = safe_run_link(run_dir, session.get("pytest_html", PYTEST_HTML if session
                                                     else None))
    if pytest_html and not (run_dir / PYTEST_HTML).exists():
        links.append(f'<a href="{esc(pytest_html)}">pytest report</a>')
    for fname, label in ((PYTEST_HTML, "pytest report"), (TREND_HTML, "trend page"),
                         ("results.jsonl", "results.jsonl"), (SESSION_FILE, "session.json")):
        if (run_dir / fname).exists():
            links.append(f'<a href="{fname}">{label}</a>' + (
                pool_note(run_dir) if fname == TREND_HTML else ""))
    for cmp_page in sorted(run_dir.glob("compare-*.html")):   # python -m reports compare
        links.append(f'<a href="{esc(cmp_page.name)}">compared with '
                     f'{esc(cmp_page.stem.removeprefix("compare-"))}</a>')
    body = [_summary_html(session, records)]
    verdict_section = _verdicts_section(run_dir, records, profile)
    if verdict_section:
        body.append(verdict_section)
    if load_errors:
        body.append('<p class="false">unreadable lines in results.jsonl, skipped:</p><ul>'
                    + "".join(f"<li>{esc(e)}</li>" for e in load_errors) + "</ul>")
    if links:
        body.append(f'<p class="links">{"".join(links)}</p>')
    if by_suite:
        body.append('<nav class="toc">suites: ' + "".join(
            f'<a href="#suite-{esc(slug(s))}">{esc(s)}</a>' for s in by_suite) + "</nav>")
    if same or varies:
        rows = "".join(f"<tr><th>{esc(k)}</th><td>{esc(plain(v))}</td></tr>"
                       for k, v in same.items() if k not in ("start_time", "end_time"))
        if varies:
            rows += f'<tr><th>varies per record</th><td>{esc(", ".join(varies))}</td></tr>'
        body.append(f"<details open><summary>provenance</summary><table class=\"kv\">{rows}"
                    "</table></details>")
    logs = logs_html(run_dir)
    if logs:
        body.append(logs)
    if not by_suite:
        body.append('<p class="empty">This run wrote no records.</p>')
    for suite, recs in by_suite.items():
        body.append(_suite_section(run_dir, suite, recs))
    out = run_dir / INDEX_FILE
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(page(f"ofbench {run_id}", header, "\n".join(body)), encoding="utf-8")
    os.replace(tmp, out)
    return out
