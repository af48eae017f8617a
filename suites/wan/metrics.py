"""Turn per-message delays of the WAN experiment into the suite's flat metrics (pure functions).

Record shapes (suite=wan):
  name=<method>: app<i>_mean_ms, app<i>_p50_ms, app<i>_p99_ms, app<i>_deadline_hit_pct,
                 app<i>_lost, app<i>_completed_pct, app<i>_pred_paper_ms, app<i>_pred_queueing_ms,
                 app<i>_count
  name=summary:  app3_reduction_pct, app5_reduction_pct, deadlines_met, model_error_pct,
                 paper_model_error_pct, queueing_model_error_pct
`deadline_hit_pct` counts lost messages as misses; `deadlines_met` counts apps whose *mean*
meets F (the document's criterion). Each app's delays in 5 ms bins (the document's Figures
7-8) go into the method record's `distributions` (suites/wan/test_wan.py, distributions/).

Lived in dut/wan/report.py until issue 43: shaping a suite's records belongs to the suite, and
it needs traces.wan_apps (a layer above dut).
"""
from __future__ import annotations

import math
from typing import Mapping, Sequence

from dut.wan.config import App
from traces.wan_apps import app_stats


def method_metrics(recv: Sequence[dict], sent: Sequence[dict], apps: Sequence[App],
                   predictions: Mapping[str, Mapping[str, float]]) -> dict[str, float]:
    out: dict[str, float] = {}
    for i, a in enumerate(apps, start=1):
        delays = [r["delay_ms"] for r in recv if r["app"] == a.name]
        n_sent = sum(1 for s in sent if s["app"] == a.name)
        st = app_stats(delays, a.deadline_ms, n_sent)
        for k in ("mean_ms", "p50_ms", "p99_ms", "max_ms", "deadline_hit_pct"):
            out[f"app{i}_{k}"] = _r(st[k])
        out[f"app{i}_count"] = st["count"]
        out[f"app{i}_lost"] = st["lost"]
        # A lossy run is visible at a glance: delays of completed messages alone are biased
        # (a lost datagram loses its whole message, more often for long messages).
        out[f"app{i}_completed_pct"] = _r(100.0 * st["count"] / n_sent) if n_sent else None
        for model, pred in predictions.items():
            if a.name in pred:
                out[f"app{i}_pred_{model}_ms"] = _r(pred[a.name])
    return out


def _r(x: float, nd: int = 3) -> float:
    if isinstance(x, float):
        return round(x, nd) if math.isfinite(x) else None
    return x


def model_errors(per_method: Mapping[str, Mapping[str, float]], n_apps: int, model: str) -> list[float]:
    """|pred - measured| / measured in % for every (method, app) with a finite prediction."""
    errs = []
    for m in per_method.values():
        for i in range(1, n_apps + 1):
            meas, pred = m.get(f"app{i}_mean_ms"), m.get(f"app{i}_pred_{model}_ms")
            if meas is None or pred is None or not math.isfinite(meas) or not math.isfinite(pred) or meas <= 0:
                continue
            errs.append(abs(pred - meas) / meas * 100.0)
    return errs


def summary(per_method: Mapping[str, Mapping[str, float]], apps: Sequence[App], baseline: str,
            ours: str, models: Sequence[str] = ("paper", "queueing")) -> tuple[dict[str, float], dict]:
    """(metrics, params) of the summary record."""
    base, best = per_method[baseline], per_method[ours]
    out: dict[str, float] = {}
    for i in range(1, len(apps) + 1):
        b, o = base.get(f"app{i}_mean_ms"), best.get(f"app{i}_mean_ms")
        if b and o is not None and math.isfinite(b) and math.isfinite(o):
            out[f"app{i}_reduction_pct"] = round((b - o) / b * 100.0, 2)
    out["deadlines_met"] = sum(1 for i, a in enumerate(apps, start=1)
                               if (best.get(f"app{i}_mean_ms") or math.inf) <= a.deadline_ms)
    errs = {m: model_errors(per_method, len(apps), m) for m in models}
    mean_err = {m: (sum(e) / len(e) if e else math.inf) for m, e in errs.items()}
    for m, v in mean_err.items():
        out[f"{m}_model_error_pct"] = round(v, 2)
    best_model = min(mean_err, key=mean_err.get)
    out["model_error_pct"] = round(mean_err[best_model], 2)
    return out, {"best_model": best_model, "baseline": baseline, "ours": ours}
