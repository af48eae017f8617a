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
``x: metric, series: switch`` (conformance by category) one group per metric.

Two kinds draw a record's ``distributions`` (distributions/) instead of its metrics::

    charts:
      - kind: cdf                    # one line per record (workload) and switch
        title: "Latency at 50 % of PDR through each switch"
        records: "ndr_*flows"        # or a list of patterns
        distributions: [latency_at_50pct_of_pdr_us]   # several: a line per (record, each)
        labels: [at 50 % of PDR]     # optional, one per distribution
        xlabel: "one-way latency, us"
        log: true                    # log x axis
        reference:                   # optional vertical lines (x in the distribution's unit)
          - {at: 20, label: "required delay"}

      - kind: histogram              # one panel per distribution, a bar per record in each bin
        title: "app3: delay per method, 5 ms bins (document 002, Figure 7)"
        records: [all_on_path2, paper_greedy, best]
        distributions: [app3_delay_ms]
        labels: [app3]
        y: percent                   # percent (of the record's samples; default) | count
        xmax: 200                    # optional right end of the x axis
        means: {app3_delay_ms: app3_mean_ms}        # optional: our mean (a metric) marked
        reference:                   # a list for every panel, or {distribution: list}
          app3_delay_ms:
            - {at: 27.4, label: "document: all on path 2, mean", series: all_on_path2}

A reference with ``series:`` takes that series' colour. Repetitions of a record (the same
record written several times) are drawn as their pointwise median (CDF) or summed counts
(histogram), said in the legend. Pure data: the declaration is read as YAML, nothing in
suites/ is imported.
"""
from __future__ import annotations

import fnmatch
from pathlib import Path
from typing import Mapping, Sequence

from distributions import cdf_points, histogram_bins
from reports.goals import SUITE_DECL, SUITES_DIR, GoalError, read_suite_report
from reports.noise import group_repetitions, metric_spread

PALETTE = ["#1f5fbf", "#e08a1e", "#2e9d5b", "#c0392b", "#8e44ad", "#7f8c8d", "#16a3b5"]


def load_suite_charts(suite: str, suites_dir: Path = SUITES_DIR) -> list[dict]:
    """The suite's chart declarations ([] when it declares none); GoalError names the file,
    line and key of a malformed one (the spec is reports.goals.CHART)."""
    path = Path(suites_dir) / suite / SUITE_DECL
    if not path.is_file():
        return []
    out = []
    for i, c in enumerate(read_suite_report(path).get("charts") or []):
        where = f"{path}: charts[{i}]"
        kind = c.get("kind", "bars")
        if kind != "bars":
            out.append(_distribution_chart(c, kind, where))
            continue
        metrics = c.get("metrics") or [c["metric"]]
        labels = c.get("labels") or list(metrics)
        out.append({"kind": "bars", "title": c.get("title", ", ".join(metrics)),
                    "records": c.get("records", "*"), "x": c.get("x", "record"),
                    "series": c.get("series", "switch"), "metrics": list(metrics),
                    "labels": [str(x) for x in labels],
                    "ylabel": c.get("ylabel", metrics[0] if len(metrics) == 1 else ""),
                    "log": c.get("log", False)})
    return out


def _patterns(records, where: str) -> list[str]:
    pats = [records] if isinstance(records, str) else records
    if not isinstance(pats, list) or not pats or not all(isinstance(p, str) for p in pats):
        raise GoalError(f"{where}.records: a pattern or a list of patterns")
    return list(pats)


def _references(ref, dists: list[str], where: str) -> dict[str, list[dict]]:
    """{distribution: [{at, label, series}]} from a list (every panel) or a mapping."""
    if ref is None:
        return {}
    per = ref if isinstance(ref, dict) else {d: ref for d in dists}
    out: dict[str, list[dict]] = {}
    for d, lines in per.items():
        if d not in dists:
            raise GoalError(f"{where}.reference.{d}: not one of the chart's distributions")
        if not isinstance(lines, list):
            raise GoalError(f"{where}.reference: a list of {{at, label}}")
        for j, ln in enumerate(lines):
            if not isinstance(ln, dict) or set(ln) - {"at", "label", "series"} or \
                    not isinstance(ln.get("at"), (int, float)) or isinstance(ln.get("at"), bool):
                raise GoalError(f"{where}.reference[{j}]: {{at: <number>, label: <text>, "
                                f"series: <optional record>}}, got {ln!r}")
            out.setdefault(d, []).append({"at": float(ln["at"]),
                                          "label": str(ln.get("label", "")),
                                          "series": ln.get("series")})
    return out


def _distribution_chart(c: Mapping, kind: str, where: str) -> dict:
    # keys, types and counts are checked by reports.goals.CHART (configschema); the rest here
    dists = c.get("distributions") or ([c["distribution"]] if c.get("distribution") else [])
    if not dists or not all(isinstance(d, str) for d in dists):
        raise GoalError(f"{where}: distribution or distributions: required")
    labels = c.get("labels") or list(dists)
    if len(labels) != len(dists):
        raise GoalError(f"{where}.labels: one per distribution")
    y = c.get("y", "percent")
    if y not in ("percent", "count"):
        raise GoalError(f"{where}.y: percent or count, got {y!r}")
    means = c.get("means") or {}
    if not isinstance(means, dict) or set(means) - set(dists):
        raise GoalError(f"{where}.means: {{distribution: metric}} for the chart's distributions")
    xmax = c.get("xmax")
    if xmax is not None and (not isinstance(xmax, (int, float)) or isinstance(xmax, bool)):
        raise GoalError(f"{where}.xmax: a number")
    return {"kind": kind, "title": str(c.get("title", ", ".join(dists))),
            "records": _patterns(c.get("records", "*"), where),
            "distributions": list(dists), "labels": [str(x) for x in labels],
            "xlabel": str(c.get("xlabel", dists[0] if len(dists) == 1 else "")),
            "ylabel": str(c.get("ylabel", "cumulative fraction" if kind == "cdf" else
                                ("% of samples" if y == "percent" else "count"))),
            "log": bool(c.get("log", False)), "y": y, "xmax": xmax,
            "means": {str(k): str(v) for k, v in means.items()},
            "reference": _references(c.get("reference"), list(dists), where)}


def _matches(name: str, pattern) -> bool:
    if isinstance(pattern, (list, tuple)):
        return any(_matches(name, p) for p in pattern)
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


# ---- distributions: cdf and histogram ---------------------------------------------------------

LINESTYLES = ["-", "--", ":", "-."]


def _merge(dists: Sequence[Mapping]) -> Mapping:
    """Repetitions of one distribution: quantiles at the same points -> pointwise median;
    histograms of the same bin width -> counts summed; HdrHistograms of the same unit -> added;
    anything else -> the first."""
    import statistics
    first = dists[0]
    if len(dists) == 1:
        return first
    if all(d.get("kind") == "quantiles" and d.get("at") == first.get("at") for d in dists):
        return {"kind": "quantiles", "at": list(first["at"]),
                "values": [statistics.median(vs) for vs in zip(*(d["values"] for d in dists))],
                "samples": sum(int(d.get("samples", 0)) for d in dists)}
    if all(d.get("kind") == "histogram" and d.get("bin_width") == first.get("bin_width")
           for d in dists):
        w = float(first["bin_width"])
        acc: dict[int, int] = {}
        for d in dists:
            base = round(float(d["first_edge"]) / w)
            for i, c in enumerate(d["counts"]):
                acc[base + i] = acc.get(base + i, 0) + c
        lo, hi = min(acc), max(acc)
        return {"kind": "histogram", "bin_width": w, "first_edge": lo * w,
                "counts": [acc.get(i, 0) for i in range(lo, hi + 1)],
                "above": sum(int(d.get("above", 0)) for d in dists),
                "samples": sum(int(d.get("samples", 0)) for d in dists)}
    if all(d.get("kind") == "hdrh" and d.get("per_unit") == first.get("per_unit") for d in dists):
        from hdrh.histogram import HdrHistogram
        h = HdrHistogram.decode(str(first["encoded"]).encode("ascii"))
        for d in dists[1:]:
            h.decode_and_add(str(d["encoded"]).encode("ascii"))
        return {"kind": "hdrh", "encoded": h.encode().decode("ascii"),
                "per_unit": first["per_unit"], "samples": h.get_total_count()}
    return first


def distribution_series(records: Sequence[Mapping], chart: Mapping) -> list[dict]:
    """What a cdf/histogram declaration draws (pure): one entry per (record, switch,
    distribution) present in the run, in first-seen order: {label, name, switch, distribution,
    dist_label, dist (repetitions merged), reps, mean (the `means:` metric or None)}."""
    recs = [r for r in records if _matches(str(r.get("name")), chart["records"])]
    has_switch = any("{switch}" in p for p in chart["records"])
    found = []
    for g in group_repetitions(recs).values():
        kind = str(g[0].get("provenance", {}).get("dut_switch_kind", "?"))
        name = str(g[0].get("name"))
        if has_switch and kind in name:
            name = name.replace(kind, "{switch}")
        for d, lab in zip(chart["distributions"], chart["labels"]):
            ds = [x for x in ((r.get("distributions") or {}).get(d) for r in g)
                  if isinstance(x, Mapping)]
            if not ds:
                continue
            mean_metric = chart.get("means", {}).get(d)
            sp = metric_spread(g, mean_metric) if mean_metric else None
            found.append({"name": name, "record": str(g[0].get("name")), "switch": kind,
                          "distribution": d, "dist_label": lab,
                          "dist": _merge(ds), "reps": len(ds),
                          "mean": sp.median if sp is not None else None})
    names = list(dict.fromkeys(f["name"] for f in found))
    kinds = list(dict.fromkeys(f["switch"] for f in found))
    several = chart["kind"] == "cdf" and len({f["distribution"] for f in found}) > 1
    for f in found:   # name only what tells the lines apart
        parts = []
        if len(names) > 1 or (len(kinds) == 1 and not several):
            parts.append(f["name"] if len(kinds) > 1 else f["record"])
        if len(kinds) > 1:
            parts.append(f"[{f['switch']}]" if parts else f["switch"])
        if several:
            parts.append(f["dist_label"])
        f["label"] = " ".join(parts)
    return found


def _wrap_title(ax, title: str, width_in: float) -> None:
    import textwrap
    ax.set_title("\n".join(textwrap.wrap(title, int(width_in * 11))), fontsize=10, loc="left")


def _plain_axes(ax) -> None:
    ax.grid(alpha=0.3)
    ax.set_axisbelow(True)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)


def _style(series: Sequence[Mapping]) -> dict[int, tuple[str, str]]:
    """(colour, linestyle) per series: colour by switch when several switches (line style by
    workload), else colour by series."""
    kinds = list(dict.fromkeys(s["switch"] for s in series))
    names = list(dict.fromkeys((s["name"], s["distribution"]) for s in series))
    out = {}
    for i, s in enumerate(series):
        if len(kinds) > 1:
            out[i] = (PALETTE[kinds.index(s["switch"]) % len(PALETTE)],
                      LINESTYLES[names.index((s["name"], s["distribution"])) % len(LINESTYLES)])
        else:
            out[i] = (PALETTE[i % len(PALETTE)], "-")
    return out


def _reference_lines(ax, refs: Sequence[Mapping], colour_of: Mapping[str, str]) -> None:
    for ref in refs:
        colour = colour_of.get(str(ref.get("series")), "#444")
        ax.axvline(ref["at"], color=colour, linestyle=(0, (4, 3)), linewidth=1.2,
                   label=f"{ref['label']} ({ref['at']:g})" if ref["label"] else f"{ref['at']:g}")


def draw_cdf(records: Sequence[Mapping], chart: Mapping, out_png: Path) -> Path | None:
    """One CDF line per record (workload), switch and distribution; None when the run has
    none of the chart's distributions."""
    series = distribution_series(records, chart)
    if not series:
        return None
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    style = _style(series)
    fig_w = 9.5
    fig, ax = plt.subplots(figsize=(fig_w, 3.8), dpi=100)
    try:
        lows = []
        for i, s in enumerate(series):
            xs, ys = cdf_points(s["dist"])
            colour, ls = style[i]
            n = s["dist"].get("samples")
            label = s["label"] + (f" (n={n})" if n else "") + \
                (f", median of ×{s['reps']}" if s["reps"] > 1 else "")
            ax.plot(xs, ys, color=colour, linestyle=ls, linewidth=1.6, label=label,
                    drawstyle="steps-post" if s["dist"].get("kind") == "histogram" else "default")
            lows += [x for x in xs if x > 0]
        colour_of = {s["name"]: style[i][0] for i, s in enumerate(series)}
        for d in chart["distributions"]:
            _reference_lines(ax, chart.get("reference", {}).get(d, []), colour_of)
        if chart.get("log") and lows:
            ax.set_xscale("log")
            ax.set_xlim(left=min(lows) * 0.8)
        ax.set_ylim(0, 1.02)
        ax.set_ylabel(chart.get("ylabel") or "cumulative fraction", fontsize=9)
        ax.set_xlabel(chart.get("xlabel", ""), fontsize=9)
        _wrap_title(ax, chart["title"], fig_w)
        _plain_axes(ax)
        ax.legend(fontsize=8, frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0))
        fig.tight_layout()
        out_png.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(out_png, bbox_inches="tight")
    finally:
        plt.close(fig)
    return out_png


def draw_histogram(records: Sequence[Mapping], chart: Mapping, out_png: Path) -> Path | None:
    """One panel per distribution (app), a bar per record in each bin (document 002's
    Figures 7-8 layout), reference lines and our means; None when nothing to draw."""
    series = distribution_series(records, chart)
    panels = [d for d in chart["distributions"] if any(s["distribution"] == d for s in series)]
    if not panels:
        return None
    import math
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    ncols = min(3, len(panels))
    nrows = math.ceil(len(panels) / ncols)
    fig_w = 12.5 if ncols > 1 else 9.5
    fig, axes = plt.subplots(nrows, ncols, figsize=(fig_w, 3.6 if nrows == 1 and ncols == 1
                                                    else 3.1 * nrows + 0.3),
                             dpi=100, squeeze=False)
    names = list(dict.fromkeys(s["label"] for s in series))
    colour_of_label = {n: PALETTE[i % len(PALETTE)] for i, n in enumerate(names)}
    colour_of = {s["name"]: colour_of_label[s["label"]] for s in series}
    try:
        for ax in axes.flat[len(panels):]:
            ax.set_visible(False)
        for ax, d in zip(axes.flat, panels):
            mine = [s for s in series if s["distribution"] == d]
            lab = chart["labels"][chart["distributions"].index(d)]
            w = float(mine[0]["dist"]["bin_width"])
            width = w / len(mine)
            x_hi = -math.inf
            x_lo = math.inf
            top = 0.0
            for k, s in enumerate(mine):
                edges, counts, above = histogram_bins(s["dist"])
                total = sum(counts) + above
                ys = [c * 100.0 / total if chart.get("y", "percent") == "percent" else c
                      for c in counts] if total else counts
                beyond = above + (sum(c for e, c in zip(edges, counts) if e >= chart["xmax"])
                                  if chart.get("xmax") is not None else 0)
                note = (f", mean {s['mean']:.3g}" if s["mean"] is not None else "") + \
                    (f", {beyond} beyond the axis" if beyond else "")
                label = f"{s['label']} (n={total}{note})" if len(panels) == 1 else \
                    f"{s['label']}{note}"
                ax.bar([e + k * width for e in edges], ys, width=width * 0.95, align="edge",
                       color=colour_of_label[s["label"]], label=label)
                x_lo, x_hi = min(x_lo, edges[0]), max(x_hi, edges[-1] + w)
                top = max([top, *ys])
            for s in mine:   # our mean, a marker above the bars in the series' colour
                if s["mean"] is not None:
                    ax.plot([s["mean"]], [top * 1.06], marker="v", markersize=7,
                            color=colour_of_label[s["label"]], linestyle="none")
            refs = chart.get("reference", {}).get(d, [])
            _reference_lines(ax, refs, colour_of)
            x_lo = min([x_lo, *(r["at"] for r in refs)]) if refs else x_lo
            x_hi = max([x_hi, *(r["at"] + w for r in refs)]) if refs else x_hi
            if chart.get("xmax") is not None:
                x_hi = min(x_hi, float(chart["xmax"]))
            ax.set_xlim(max(0.0, x_lo - w) if x_lo >= 0 else x_lo - w, x_hi + w)
            ax.set_ylim(0, top * 1.14 if top else 1)
            unit = d.rsplit("_", 1)[-1]
            ax.set_xlabel(chart.get("xlabel") if chart.get("xlabel") and len(panels) == 1 else
                          f"{lab}: {unit} ({w:g} {unit} bins)", fontsize=9)
            ax.set_ylabel(chart.get("ylabel", ""), fontsize=9)
            _plain_axes(ax)
            if len(panels) == 1:
                ax.legend(fontsize=7, frameon=False, loc="upper center", ncol=2,
                          bbox_to_anchor=(0.5, -0.2))
            else:   # small multiples: a compact legend inside each panel
                ax.legend(fontsize=6.5, frameon=True, framealpha=0.85, edgecolor="none",
                          loc="upper right")
        if ncols > 1:
            fig.suptitle(chart["title"], fontsize=10, x=0.01, ha="left")
        else:
            _wrap_title(axes.flat[0], chart["title"], fig_w)
        fig.tight_layout()
        out_png.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(out_png, bbox_inches="tight")
    finally:
        plt.close(fig)
    return out_png


def draw_chart(records: Sequence[Mapping], chart: Mapping, out_png: Path) -> Path | None:
    """The declared chart as a PNG (its kind's drawer); None when the run has nothing for it."""
    kind = chart.get("kind", "bars")
    if kind == "cdf":
        return draw_cdf(records, chart, out_png)
    if kind == "histogram":
        return draw_histogram(records, chart, out_png)
    return draw_grouped_bars(records, chart, out_png)
