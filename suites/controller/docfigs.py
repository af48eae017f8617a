"""Document 000's numbers and our figures in its layout (Figures 5-7, Table 2).

Pure functions over plain dicts so they are testable without a lab:
``ours[(order, patterns, label)] = {"high_ms": .., "low_ms": ..}`` where label is ``fifo`` or
``1thr`` .. ``8thr`` (optionally suffixed, e.g. ``8thr_proc``).
"""
from __future__ import annotations

# ms, FIFO ("conventional") and the proposal with N high threads; None = not printed in the
# text of the document (Figures 6 and 7 give only the FIFO and 8-thread values in the text).
DOC = {
    ("high_low", 20): {"fifo": (2526, 5034), "1thr": (4949, 5206), "2thr": (3787, 5142),
                       "4thr": (3205, 5135), "8thr": (2965, 5238)},
    ("low_high", 20): {"fifo": (5080, 2547), "8thr": (3229, 5168)},
    ("random", 20): {"fifo": (5126, 5121), "8thr": (2994, 5179)},
    ("random", 1): {"fifo": (425, 424), "8thr": (327, 483)},
    ("random", 50): {"fifo": (12334, 12321), "8thr": (7076, 12563)},
}  # (high_ms, low_ms)
LABELS = ("fifo", "1thr", "2thr", "4thr", "8thr")
FIGURE = {"high_low": "Figure 5 (High_Low)", "low_high": "Figure 6 (Low_High)",
          "random": "Figure 7 (Random)"}


def doc_ratio(order: str, patterns: int, label: str) -> tuple[float | None, float | None]:
    d = DOC.get((order, patterns), {})
    if label not in d or "fifo" not in d:
        return None, None
    return d[label][0] / d["fifo"][0], d[label][1] / d["fifo"][1]


def direction(r: float | None, tol: float = 0.05) -> str | None:
    """'down', 'up' or 'same' (within tol) for a ratio vs FIFO."""
    if r is None:
        return None
    if r < 1 - tol:
        return "down"
    if r > 1 + tol:
        return "up"
    return "same"


def comparison_rows(ours: dict, matcher: str, suffix: str = "") -> list[dict]:
    """One row per document number we also measured: doc vs ours, ratios, direction agreement.

    Directions: a ratio within 5 % of 1 is 'same'; 'same' on one side and a move of less than
    15 % on the other still counts as agreeing (the document's 1.01-1.02 are 'same')."""
    rows = []
    for (order, pats), labels in DOC.items():
        for label, (d_hi, d_lo) in labels.items():
            if label == "fifo":
                continue
            mine = ours.get((order, pats, label + suffix, matcher))
            if not mine:
                continue
            d_rh, d_rl = doc_ratio(order, pats, label)
            o_rh, o_rl = mine.get("high_ratio"), mine.get("low_ratio")
            rows.append({
                "trace": order, "patterns": pats, "config": label + suffix, "matcher": matcher,
                "doc_high_ms": d_hi, "ours_high_ms": _r(mine.get("high_ms")),
                "doc_low_ms": d_lo, "ours_low_ms": _r(mine.get("low_ms")),
                "doc_high_ratio": _r(d_rh, 2), "ours_high_ratio": _r(o_rh, 2),
                "doc_low_ratio": _r(d_rl, 2), "ours_low_ratio": _r(o_rl, 2),
                "direction_agrees": _agrees(d_rh, o_rh) and _agrees(d_rl, o_rl),
            })
    return rows


def _agrees(doc: float | None, ours: float | None) -> bool:
    a, b = direction(doc), direction(ours)
    if a is None or b is None:
        return False
    if a == b:
        return True
    if "same" in (a, b):
        return abs(ours - 1) < 0.15 and abs(doc - 1) < 0.15
    return False


def _r(v, nd=1):
    return None if v is None else round(v, nd)


def figure(order: str, patterns: int, ours: dict, matcher: str, suffix: str = ""):
    """Bars per configuration like the document's Figures 5-7: FIFO and 1/2/4/8 threads, low
    (tos0) and high (tos5) class; the document's values on the left, ours on the right."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(12, 4.2))
    doc = DOC.get((order, patterns), {})
    sides = (("document 000 (Ryu, Xeon E5-1620 v4)", {k: v for k, v in doc.items()}),
             (f"ofbench ({matcher}{suffix.replace('_', ' ')}, this box)",
              {lab: (ours[(order, patterns, lab + (suffix if lab != 'fifo' else ''),
                           matcher)]["high_ms"],
                     ours[(order, patterns, lab + (suffix if lab != 'fifo' else ''),
                           matcher)]["low_ms"])
               for lab in LABELS
               if (order, patterns, lab + (suffix if lab != "fifo" else ""), matcher) in ours}))
    for ax, (title, vals) in zip(axes, sides):
        names = [f"{'FIFO' if lab == 'fifo' else lab[:-3] + ' thr'}" for lab in LABELS]
        lows = [vals.get(lab, (None, None))[1] for lab in LABELS]
        highs = [vals.get(lab, (None, None))[0] for lab in LABELS]
        xs = list(range(len(LABELS)))
        w = 0.38
        for off, series, color, name in ((-w / 2, lows, "#7a8ca8", "low (tos0)"),
                                         (w / 2, highs, "#c0392b", "high (tos5)")):
            bx = [x + off for x, v in zip(xs, series) if v is not None]
            bv = [v for v in series if v is not None]
            bars = ax.bar(bx, bv, w, color=color, label=name)
            for b, v in zip(bars, bv):
                ax.annotate(f"{v:.0f}", (b.get_x() + b.get_width() / 2, b.get_height()),
                            ha="center", va="bottom", fontsize=7)
        ax.set_xticks(xs, names)
        ax.set_ylabel("completion time (ms)")
        ax.set_title(title, fontsize=10)
        ax.legend(fontsize=8)
    fig.suptitle(f"{FIGURE.get(order, order)}, {patterns} patterns: first Packet-In to the "
                 "class's 500th Packet-Out", fontsize=11)
    fig.tight_layout()
    return fig


def table2_rows(ours: dict, matcher: str, label: str = "8thr") -> list[dict]:
    """Table 2 layout (Random, 8 threads, patterns 1/20/50): doc and ours with ratios."""
    rows = []
    for pats in (1, 20, 50):
        d = DOC[("random", pats)]
        fifo = ours.get(("random", pats, "fifo", matcher))
        mine = ours.get(("random", pats, label, matcher))
        for klass, idx in (("low", 1), ("high", 0)):
            rows.append({
                "patterns": pats, "class": klass,
                "doc_fifo_ms": d["fifo"][idx], "doc_prop_ms": d["8thr"][idx],
                "doc_ratio": round(d["8thr"][idx] / d["fifo"][idx], 2),
                "ours_fifo_ms": _r(fifo and fifo[f"{klass}_ms"]),
                "ours_prop_ms": _r(mine and mine[f"{klass}_ms"]),
                "ours_ratio": _r(mine and mine.get(f"{klass}_ratio"), 2),
                "config": f"{label} {matcher}",
            })
    return rows
