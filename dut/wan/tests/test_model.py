"""Behaviour of the WAN delay models, selectors and strict config (source document 002)."""
import math
import textwrap

import pytest

from dut.wan.config import App, ConfigError, Framing, Path, load_scenario, parse_scenario
from dut.wan.model import (InfeasibleError, all_on, best_selection, paper_delay_ms, paper_greedy,
                           plan_moves, predict, queueing_delay_ms, reselect, unmeetable_apps)

DOC = "traces/wan/doc002.yaml"


@pytest.fixture(scope="module")
def doc():
    return load_scenario(DOC)


def test_paper_model_reproduces_table5_predictions(doc):
    # Table 5 (everything on path 2): 100 / 18 / 18 / 4 / 4 ms.
    pred = all_on("path2", doc.apps, doc.paths).predicted_ms
    assert [round(pred[f"app{i}"]) for i in range(1, 6)] == [99, 18, 18, 4, 4]


def test_paper_model_alone_is_eq1():
    app = App("a", 125_000, 100, 50)                        # 1 Mbit
    assert paper_delay_ms(app, Path("p", 100, 2), []) == pytest.approx(2 + 10)


def test_paper_greedy_follows_text_rule(doc):
    sel = paper_greedy(doc.apps, doc.paths)
    assert sel.feasible
    assert sel.assignment["app1"] == sel.assignment["app2"] == "path1"
    assert sel.assignment["app3"] == sel.assignment["app5"] == "path2"
    # H'(app4 on path1) = 100.015 ms > F = 100 ms: the strict text rule keeps app4 off path 1
    # (Table 4 prints 100 ms and path 1; it must have rounded).
    assert sel.assignment["app4"] == "path2"
    for a in doc.apps:
        assert sel.predicted_ms[a.name] <= a.deadline_ms


def test_queueing_model_sees_what_paper_model_misses(doc):
    base = all_on("path2", doc.apps, doc.paths, model=queueing_delay_ms, framing=doc.framing)
    # The paper's model calls the baseline feasible (18 ms <= 20 ms); queueing says no.
    assert all_on("path2", doc.apps, doc.paths).feasible
    assert set(base.infeasible) >= {"app3", "app5"}
    assert base.predicted_ms["app3"] > 40


def test_queueing_model_single_app_is_serialisation_plus_delay():
    fr = Framing(udp_payload_bytes=1000, app_header_bytes=0, frame_header_bytes=0, wire_overhead_bytes=0)
    app = App("a", 1000, 1e12, 50)                             # negligible load: no waiting
    assert queueing_delay_ms(app, Path("p", 8, 1), [], fr) == pytest.approx(2.0, rel=1e-6)


def test_queueing_model_overload_is_infinite():
    app = App("a", 200_000, 10, 50)                           # 160 Mbit/s offered
    assert math.isinf(queueing_delay_ms(app, Path("p", 100, 1), []))
    assert math.isinf(paper_delay_ms(App("b", 1, 1, 1), Path("p", 100, 1), [app]))


def test_best_selection_meets_all_and_beats_baseline(doc):
    sel = best_selection(doc.apps, doc.paths, framing=doc.framing)
    assert sel.feasible and sel.method == "best_exact"
    base = predict({a.name: "path2" for a in doc.apps}, doc.apps, doc.paths, queueing_delay_ms, doc.framing)
    assert sel.predicted_ms["app3"] < 0.64 * base["app3"]
    assert sel.predicted_ms["app5"] < 0.58 * base["app5"]


def test_local_search_used_for_large_cases_and_feasible():
    apps = [App(f"a{i}", 10_000, 100, 50 if i % 2 else 500) for i in range(12)]
    paths = [Path("long", 100, 100), Path("mid", 50, 20), Path("short", 20, 2)]
    sel = best_selection(apps, paths, exact_limit=10)
    assert sel.method == "best_local" and set(sel.assignment) == {a.name for a in apps}
    assert sel.feasible


def test_unmeetable_app_is_reported_not_silently_assigned(doc):
    apps = list(doc.apps) + [App("urgent", 100_000, 100, 1.0)]   # 1 ms < 2 ms path delay
    assert unmeetable_apps(apps, doc.paths, paper_delay_ms) == ["urgent"]
    greedy = paper_greedy(apps, doc.paths)
    assert "urgent" in greedy.infeasible and "urgent" not in greedy.assignment
    with pytest.raises(InfeasibleError, match="urgent.*no path meets it"):
        greedy.require_feasible(apps)
    ours = best_selection(apps, doc.paths, framing=doc.framing)
    assert ours.infeasible == ["urgent"]
    with pytest.raises(InfeasibleError, match=r"urgent \(F=1 ms, on path2 predicted"):
        ours.require_feasible(apps)


def test_zero_bandwidth_path_rejected():
    with pytest.raises(ConfigError, match="bandwidth_mbps must be > 0"):
        Path("dead", 0, 2)
    with pytest.raises(ConfigError, match=r"x.yaml:4: paths\[1\].bandwidth_mbps: must be > 0, got 0"):
        parse_scenario(*_yaml("""
            paths:
              - {name: a, bandwidth_mbps: 100, delay_ms: 1}
              - {name: b, bandwidth_mbps: 0, delay_ms: 1}
            """))


def _yaml(text):
    from configschema import read_yaml
    data, node = read_yaml(textwrap.dedent(text), "x.yaml")
    return data, "x.yaml", node


def test_unknown_key_named_with_file_and_line(tmp_path):
    f = tmp_path / "bad.yaml"
    f.write_text("apps:\n  - name: a\n    lenght_bytes: 10\n    interval_ms: 1\n    deadline_ms: 1\n")
    with pytest.raises(ConfigError, match=r"bad.yaml:3: apps\[0\].lenght_bytes: unknown key \(did you mean 'length_bytes'"):
        load_scenario(f)


def test_unknown_top_level_key(tmp_path):
    f = tmp_path / "bad.yaml"
    f.write_text("pahts: []\n")
    with pytest.raises(ConfigError, match="bad.yaml:1: pahts: unknown key .did you mean 'paths'"):
        load_scenario(f)


def test_missing_key_and_wrong_type():
    with pytest.raises(ConfigError, match=r"apps\[0\].deadline_ms: required key is missing"):
        parse_scenario({"apps": [{"name": "a", "length_bytes": 1, "interval_ms": 1}]})
    with pytest.raises(ConfigError, match=r"apps\[0\].length_bytes: expected int > 0, got str '1k'"):
        parse_scenario({"apps": [{"name": "a", "length_bytes": "1k", "interval_ms": 1, "deadline_ms": 1}]})


def test_duplicate_names_and_ports_rejected():
    p = {"name": "p", "bandwidth_mbps": 1, "delay_ms": 1}
    with pytest.raises(ConfigError, match=r"paths\[1\].name: 'p' is already used by paths\[0\]"):
        parse_scenario({"paths": [p, p]})
    a = {"name": "a", "length_bytes": 1, "interval_ms": 1, "deadline_ms": 1, "udp_port": 5}
    with pytest.raises(ConfigError, match=r"apps\[1\].udp_port: 5 is already used by apps\[0\]"):
        parse_scenario({"apps": [a, dict(a, name="b")]})


def test_reselection_moves_apps_when_path2_shrinks(doc):
    fat = [doc.paths[0], Path("path2", 1000, 2)]
    first, moves = reselect(None, doc.apps, fat, framing=doc.framing)
    assert set(first.assignment.values()) == {"path2"}          # a fat short path takes everyone
    again, none = reselect(first.assignment, doc.apps, fat, framing=doc.framing)
    assert none == [] and again.assignment == first.assignment  # no change, no moves
    thin = [doc.paths[0], Path("path2", 100, 2)]
    after, moves = reselect(first.assignment, doc.apps, thin, framing=doc.framing)
    assert after.feasible
    assert {(a, f, t) for a, f, t in moves} == {("app1", "path2", "path1"), ("app2", "path2", "path1")}


def test_plan_moves_lists_only_changes():
    assert plan_moves({"a": "x", "b": "y"}, {"a": "x", "b": "z", "c": "x"}) == [("b", "y", "z"), ("c", None, "x")]


def test_doc_file_loads(doc):
    assert [a.udp_port for a in doc.apps] == [47001, 47002, 47003, 47004, 47005]
    assert doc.path("path1").delay_ms == 100 and doc.app("app3").deadline_ms == 20
