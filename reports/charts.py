"""Charts a suite declares for its question (suites/<suite>/report.yaml, key ``charts:``), drawn
in the run index instead of the automatic "first metric per record" bar chart.

One kind so far, grouped bars with error bars from repetitions (reports.noise: the bar is the
median, the whisker min..max, or mean +- 1 sd when only that was recorded)::

    charts:
      - title: "Batched lookups per rule set: ours beside TSS, linear and rte_acl"
        records: "*"                 # record names, fnmatch; "{switch}" matches any kind
        x: record                    # one group per record (name [switch]) | metric
        series: metric               # bars in a group: one per metric | switch
        metrics: [ours_batch_mlps, tss_batch_mlps, linear_batch_mlps, acl_batch_mlps]
        labels: [ours, tss, linear, rte_acl]   # optional, one per series when series: metric
        ylabel: "Mlps (batched, one core)"     # optional
        log: true                    # optional log scale

``x: record, series: switch`` (one metric) puts each switch's bar side by side per workload;
``x: metric, series: switch`` (conformance by category) one group per metric. Pure data: the
declaration is read as YAML, nothing in suites/ is imported.
"""
from __future__ import annotations

import fnmatch
from pathlib import Path
from typing import Mapping, Sequence

from reports.goals import SUITE_DECL, SUITES_DIR, read_suite_report
from reports.noise import group_repetitions, metric_spread

PALETTE = ["#1f5fbf", "#e08a1e", "#2e9d5b", "#c0392b", "#8e44ad", "#7f8c8d", "#16a3b5"]


def load_suite_charts(suite: str, suites_dir: Path = SUITES_DIR) -> list[dict]:
    """The suite's chart declarations ([] when it declares none); GoalError names the file,
    line and key of a malformed one (the spec is reports.goals.CHART)."""
    path = Path(suites_dir) / suite / SUITE_DECL
    if not path.is_file():
        return []
    out = []
    for c in read_suite_report(path).get("charts") or []:
        metrics = c.get("metrics") or [c["metric"]]
        labels = c.get("labels") or list(metrics)
        out.append({"title": c.get("title", ", ".join(metrics)), "records": c["records"],
                    "x": c["x"], "series": c["series"], "metrics": list(metrics),
                    "labels": [str(x) for x in labels],
                    "ylabel": c.get("ylabel", metrics[0] if len(metrics) == 1 else ""),
                    "log": c["log"]})
    return out


def _matches(name: str, pattern: str) -> bool:
    return fnmatch.fnmatchcase(name, pattern.replace("{switch}", "*"))


def chart_data(records: Sequence[Mapping], chart: Mapping) -> tuple[list[str], list[str], dict]:
    """(group labels, series labels, {(group, series): Spread}) for a declaration (pure)."""
    recs = [r for r in records if _matches(str(r.get("name")), chart["records"])]
    groups = list(group_repetitions(recs).values())
    kinds = list(dict.fromkeys(str(g[0].get("provenance", {}).get("dut_switch_kind", "?"))
                               for g in groups))
    values: dict = {}
    if chart["x"] == "record":
        show_kind = chart["series"] == "metric" and len(kinds) > 1
        xs: list[str] = []
        for g in groups:
            kind = str(g[0].get("provenance", {}).get("dut_switch_kind", "?"))
            name = str(g[0].get("name"))
            if chart["series"] == "switch":
                # of13_{switch}-style names: one group holds every switch's record
                label = name.replace(kind, "{switch}") if "{switch}" in chart["records"] \
                    else name
                for m in chart["metrics"][:1]:
                    sp = metric_spread(g, m)
                    if sp is not None:
                        values[(label, kind)] = sp
            else:
                label = f"{name} [{kind}]" if show_kind else name
                for m, lab in zip(chart["metrics"], chart["labels"]):
                    sp = metric_spread(g, m)
                    if sp is not None:
                        values[(label, lab)] = sp
            if label not in xs:
                xs.append(label)
        series = kinds if chart["series"] == "switch" else list(chart["labels"])
    else:   # x: metric, series: switch
        xs = list(chart["labels"])
        series = kinds
        for g in groups:
            kind = str(g[0].get("provenance", {}).get("dut_switch_kind", "?"))
            for m, lab in zip(chart["metrics"], chart["labels"]):
                sp = metric_spread(g, m)
                if sp is not None:
                    values[(lab, kind)] = sp
    xs = [x for x in xs if any((x, s) in values for s in series)]
    series = [s for s in series if any((x, s) in values for x in xs)]
    return xs, series, values


def draw_grouped_bars(records: Sequence[Mapping], chart: Mapping, out_png: Path) -> Path | None:
    """The chart as a PNG; None when the run has nothing to draw for it."""
    xs, series, values = chart_data(records, chart)
    if not xs or not series:
        return None
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    width = 0.8 / len(series)
    fig_w = min(12.5, max(7.5, 1.0 + len(xs) * (0.5 + 0.35 * len(series))))
    fig, ax = plt.subplots(figsize=(fig_w, 3.8), dpi=100)
    try:
        for i, s in enumerate(series):
            pos, heights, lo, hi, ns = [], [], [], [], []
            for j, x in enumerate(xs):
                sp = values.get((x, s))
                if sp is None:
                    continue
                pos.append(j + (i - (len(series) - 1) / 2) * width)
                heights.append(sp.median)
                lo.append(max(0.0, sp.median - sp.lo))
                hi.append(max(0.0, sp.hi - sp.median))
                ns.append(sp.n)
            bars = ax.bar(pos, heights, width * 0.92, label=s, color=PALETTE[i % len(PALETTE)])
            if any(n > 1 for n in ns):
                ax.errorbar(pos, heights, yerr=[lo, hi], fmt="none", ecolor="#222",
                            elinewidth=1, capsize=3)
            for b, h, top, n in zip(bars, heights, hi, ns):
                txt = f"{h:.3g}" + (f" ×{n}" if n > 1 else "")
                # above the whisker, so the label never sits on it
                ax.annotate(txt, (b.get_x() + b.get_width() / 2, h + top), ha="center",
                            va="bottom", fontsize=7, xytext=(0, 2), textcoords="offset points")
        ax.set_xticks(range(len(xs)), xs, fontsize=8,
                      rotation=20 if max(len(x) for x in xs) > 14 else 0,
                      ha="right" if max(len(x) for x in xs) > 14 else "center")
        if chart.get("log"):
            ax.set_yscale("log")
        ax.set_ylabel(chart.get("ylabel", ""), fontsize=9)
        import textwrap
        ax.set_title("\n".join(textwrap.wrap(chart["title"], int(fig_w * 11))), fontsize=10,
                     loc="left")
        ax.grid(axis="y", alpha=0.3)
        ax.set_axisbelow(True)
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
        ax.legend(fontsize=8, frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0))
        ax.margins(y=0.15)
        fig.tight_layout()
        out_png.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(out_png, bbox_inches="tight")
    finally:
        plt.close(fig)
    return out_png
