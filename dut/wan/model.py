"""Delay models and path selectors for WAN path selection (source document 002).

Delay models: f(app, path, others_on_path, framing) -> predicted mean delay of one message in
ms (send start to last byte received), `math.inf` when the path is overloaded.

- `paper_delay_ms`: the document's eq. (1)-(3): H = T + L/W alone, H' = T + L/(W - Q) with
  Q = sum L_k/E_k of the other apps on the path.  It treats other apps as a constant bandwidth
  drain, so it misses queueing: with Poisson message arrivals a message often waits behind a
  whole message of another app, which is why the document measured more than it predicted.
- `queueing_delay_ms`: the path as one FIFO link (M/G/1, Pollaczek-Khinchine):
  D = T + Wq + S_a, S_k = wire_bytes(L_k) * 8 / W (framing: headers, per-frame wire overhead),
  rho = sum lambda_k S_k, Wq = sum lambda_k E[S_k^2] / (2 (1 - rho)), E[S^2] = S^2 for fixed
  sizes and 2 S^2 for exponential sizes.  Poisson arrivals hold by construction (exponential
  intervals), the link is FIFO in the emulator, so the mean is exact up to the sender's packet
  interleaving and host noise.

Selectors take (apps, paths, model) and return a Selection; infeasibility is always reported
(Selection.infeasible), never hidden: `Selection.require_feasible()` raises.

- `all_on`: the document's baseline (every app on one path, e.g. the short one).
- `paper_greedy`: the document's algorithm as its text intends (sec. 3.4): paths by T
  descending, apps in order, each app to the first path where every app on it (itself
  included) keeps H' <= F.  The printed pseudo-code's test `F_k <= f'` is the violation
  condition inverted; we follow the text.  An app with no such path stays unassigned.
- `best_selection` (ours): exact search over all n^m assignments when that is small (else a
  greedy start plus single-app moves to a local optimum), minimising lexicographically
  (number of apps over F, worst ratio pred/F, sum of ratios) under the queueing model.
  Minimising the worst ratio leaves the largest relative slack to the tightest app.

Re-selection: `reselect()` keeps the current assignment while it stays feasible and within
`hysteresis` of the best objective (so flows do not flap on small changes), and
`plan_moves()` lists the (app, from, to) moves for the controller.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Callable, Iterable, Mapping, Sequence

from dut.wan.config import App, Framing, Path

DelayModel = Callable[[App, Path, Sequence[App], Framing], float]


class InfeasibleError(RuntimeError):
    """No assignment meets every app's required delay; the message names the apps."""


# --- delay models ---------------------------------------------------------------------------

def paper_delay_ms(app: App, path: Path, others: Sequence[App], framing: Framing | None = None) -> float:
    """Eq. (3): H' = T + L / (W - Q); eq. (1) when `others` is empty."""
    q_bps = sum(o.offered_bps for o in others)
    avail_bps = path.bandwidth_bps - q_bps
    if avail_bps <= 0:
        return math.inf
    return path.delay_ms + app.length_bytes * 8.0 / avail_bps * 1000.0


def _service_s(app: App, path: Path, framing: Framing) -> float:
    return framing.wire_bytes(app.length_bytes) * 8.0 / path.bandwidth_bps


def path_utilisation(apps: Iterable[App], path: Path, framing: Framing) -> float:
    return sum(_service_s(a, path, framing) / (a.interval_ms / 1000.0) for a in apps)


def queueing_delay_ms(app: App, path: Path, others: Sequence[App], framing: Framing | None = None) -> float:
    """M/G/1 FIFO mean: T + Wq + own serialisation (framing-aware)."""
    framing = framing or Framing()
    members = [app, *others]
    rho = path_utilisation(members, path, framing)
    if rho >= 1.0:
        return math.inf
    second_moment = 0.0
    for a in members:
        s = _service_s(a, path, framing)
        k = 2.0 if a.size_distribution == "exponential" else 1.0
        second_moment += (1000.0 / a.interval_ms) * k * s * s
    wq_s = second_moment / (2.0 * (1.0 - rho))
    return path.delay_ms + (wq_s + _service_s(app, path, framing)) * 1000.0


MODELS: dict[str, DelayModel] = {"paper": paper_delay_ms, "queueing": queueing_delay_ms}


def predict(assignment: Mapping[str, str], apps: Sequence[App], paths: Sequence[Path],
            model: DelayModel, framing: Framing | None = None) -> dict[str, float]:
    """Predicted mean delay (ms) of every assigned app under `assignment` (app -> path)."""
    framing = framing or Framing()
    by_path = {p.name: p for p in paths}
    out = {}
    for a in apps:
        pname = assignment.get(a.name)
        if pname is None:
            continue
        others = [o for o in apps if o.name != a.name and assignment.get(o.name) == pname]
        out[a.name] = model(a, by_path[pname], others, framing)
    return out


# --- selections -----------------------------------------------------------------------------

@dataclass
class Selection:
    method: str
    assignment: dict[str, str]                 # app name -> path name (assigned apps only)
    predicted_ms: dict[str, float]             # app name -> predicted mean delay
    infeasible: list[str] = field(default_factory=list)   # apps over F or without a path
    model: str = "paper"

    @property
    def feasible(self) -> bool:
        return not self.infeasible

    def require_feasible(self, apps: Sequence[App]) -> "Selection":
        if self.infeasible:
            by = {a.name: a for a in apps}
            parts = []
            for n in self.infeasible:
                p = self.predicted_ms.get(n)
                where = f"on {self.assignment[n]} predicted {p:.1f} ms" if n in self.assignment \
                    else "no path meets it"
                parts.append(f"{n} (F={by[n].deadline_ms:g} ms, {where})")
            raise InfeasibleError(f"{self.method}: requirement not met for " + "; ".join(parts))
        return self


def _violations(pred: Mapping[str, float], apps: Sequence[App]) -> list[str]:
    return [a.name for a in apps if a.name in pred and not pred[a.name] <= a.deadline_ms]


def unmeetable_apps(apps: Sequence[App], paths: Sequence[Path], model: DelayModel,
                    framing: Framing | None = None) -> list[str]:
    """Apps that miss F on every path even alone: no selector can help them."""
    return [a.name for a in apps
            if all(not model(a, p, [], framing or Framing()) <= a.deadline_ms for p in paths)]


def all_on(path_name: str, apps: Sequence[App], paths: Sequence[Path],
           model: DelayModel = paper_delay_ms, framing: Framing | None = None) -> Selection:
    if path_name not in {p.name for p in paths}:
        raise KeyError(f"no path named {path_name!r}")
    assignment = {a.name: path_name for a in apps}
    pred = predict(assignment, apps, paths, model, framing)
    return Selection(f"all_on_{path_name}", assignment, pred, _violations(pred, apps),
                     _model_name(model))


def paper_greedy(apps: Sequence[App], paths: Sequence[Path], model: DelayModel = paper_delay_ms,
                 framing: Framing | None = None) -> Selection:
    """Document 002, sec. 3.4 / Fig. 4, with the text's rule H' <= F."""
    order = sorted(paths, key=lambda p: -p.delay_ms)   # T_1 > T_2 > ... > T_n
    assignment: dict[str, str] = {}
    unplaced: list[str] = []
    for app in apps:
        for path in order:
            trial = dict(assignment, **{app.name: path.name})
            pred = predict(trial, apps, paths, model, framing)
            on_path = [a for a in apps if trial.get(a.name) == path.name]
            if all(pred[a.name] <= a.deadline_ms for a in on_path):
                assignment = trial
                break
        else:
            unplaced.append(app.name)
    pred = predict(assignment, apps, paths, model, framing)
    infeasible = unplaced + _violations(pred, apps)
    return Selection("paper_greedy", assignment, pred, infeasible, _model_name(model))


def objective(pred: Mapping[str, float], apps: Sequence[App]) -> tuple[int, float, float]:
    """(apps over F, worst pred/F, sum pred/F): smaller is better, compared lexicographically."""
    ratios = [pred[a.name] / a.deadline_ms for a in apps]
    return (sum(r > 1.0 for r in ratios), max(ratios, default=0.0), sum(ratios))


def best_selection(apps: Sequence[App], paths: Sequence[Path], model: DelayModel = queueing_delay_ms,
                   framing: Framing | None = None, exact_limit: int = 200_000) -> Selection:
    """Ours: exact search when n^m <= exact_limit, else greedy start + local search."""
    names = [p.name for p in paths]
    if not apps:
        return Selection("best", {}, {}, [], _model_name(model))
    best: tuple | None = None
    best_assignment: dict[str, str] = {}
    if len(names) ** len(apps) <= exact_limit:
        for combo in itertools.product(names, repeat=len(apps)):
            assignment = {a.name: p for a, p in zip(apps, combo)}
            obj = objective(predict(assignment, apps, paths, model, framing), apps)
            if best is None or obj < best:
                best, best_assignment = obj, assignment
        method = "best_exact"
    else:
        start = paper_greedy(apps, paths, model, framing).assignment
        assignment = {a.name: start.get(a.name, names[-1]) for a in apps}
        best = objective(predict(assignment, apps, paths, model, framing), apps)
        improved = True
        while improved:
            improved = False
            for a in apps:
                for p in names:
                    if p == assignment[a.name]:
                        continue
                    trial = dict(assignment, **{a.name: p})
                    obj = objective(predict(trial, apps, paths, model, framing), apps)
                    if obj < best:
                        best, assignment, improved = obj, trial, True
        best_assignment = assignment
        method = "best_local"
    pred = predict(best_assignment, apps, paths, model, framing)
    return Selection(method, best_assignment, pred, _violations(pred, apps), _model_name(model))


def _model_name(model: DelayModel) -> str:
    return next((k for k, v in MODELS.items() if v is model), getattr(model, "__name__", "?"))


# --- re-selection ---------------------------------------------------------------------------

def plan_moves(old: Mapping[str, str], new: Mapping[str, str]) -> list[tuple[str, str | None, str | None]]:
    """(app, from_path, to_path) for every app whose path changes (None = unassigned)."""
    return [(a, old.get(a), new.get(a)) for a in sorted(set(old) | set(new)) if old.get(a) != new.get(a)]


def reselect(current: Mapping[str, str] | None, apps: Sequence[App], paths: Sequence[Path],
             model: DelayModel = queueing_delay_ms, framing: Framing | None = None,
             hysteresis: float = 0.1) -> tuple[Selection, list[tuple[str, str | None, str | None]]]:
    """Re-run the selector after app or path figures changed.

    Keeps `current` if every app is still assigned to an existing path, no app is over F and
    its worst ratio is within `hysteresis` (relative) of the best one; otherwise switches.
    Returns (selection in force, moves to apply).
    """
    best = best_selection(apps, paths, model, framing)
    path_names = {p.name for p in paths}
    if current and all(current.get(a.name) in path_names for a in apps):
        kept = {a.name: current[a.name] for a in apps}
        pred = predict(kept, apps, paths, model, framing)
        cur_obj, best_obj = objective(pred, apps), objective(best.predicted_ms, apps)
        if cur_obj[0] == 0 and cur_obj[1] <= best_obj[1] * (1.0 + hysteresis):
            return Selection("kept", kept, pred, [], _model_name(model)), []
    return best, plan_moves(current or {}, best.assignment)


def prediction_error_pct(predicted_ms: float, measured_ms: float) -> float:
    """Signed relative error of a prediction against a measured mean, in percent."""
    return (predicted_ms - measured_ms) / measured_ms * 100.0
