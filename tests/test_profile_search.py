"""The profile's search goals (RFC 9971 names, `search:` in dut/profiles/schema.py): good ones
load and become the search's goals; each contradiction is refused with one message naming the
file, the line and the key."""
import copy
import re

import pytest
import yaml

from drivers.trafficgen.mlr import Goal, MlrConfig, goals_from_section
from dut.profiles.schema import ProfileError, load_profile

GOOD = {
    "schema_version": 1,
    "lab": {"kind": "local"},
    "switch": {"kind": "ofbench"},
    "search": {"min_load": 5000, "goals": [
        {"name": "ndr", "goal_loss_ratio": 0, "goal_exceed_ratio": 0.5,
         "goal_initial_trial_duration": 0.2, "goal_final_trial_duration": 0.5,
         "goal_duration_sum": 2, "goal_width": 0.05},
        {"name": "pdr", "goal_loss_ratio": 0.005}]},
}


def load(tmp_path, data):
    p = tmp_path / "bad.yaml"
    p.write_text(yaml.safe_dump(data, sort_keys=False))
    return load_profile(str(p))


def test_good_goals_load_and_feed_the_search(tmp_path):
    prof = load(tmp_path, GOOD)
    goals = goals_from_section(prof.section("search"))
    assert goals[0] == Goal("ndr", 0.0, 0.5, 0.2, 0.5, 2.0, 0.05)
    assert goals[1] == Goal("pdr", goal_loss_ratio=0.005)
    assert prof.section("search")["method"] == "mlrsearch"
    MlrConfig(max_rate_pps=1e6, min_rate_pps=prof.section("search")["min_load"], goals=goals)


def goal(**kw):
    d = copy.deepcopy(GOOD)
    d["search"]["goals"][0].update(kw)
    return d


def search(**kw):
    d = copy.deepcopy(GOOD)
    d["search"].update(kw)
    return d


@pytest.mark.parametrize("data, key, reason", [
    (goal(goal_exceed_ratio=1.0), "search.goals[0].goal_exceed_ratio", "must be in [0, 1), got 1.0"),
    (goal(goal_exceed_ratio=-0.5), "search.goals[0].goal_exceed_ratio", "must be in [0, 1)"),
    (goal(goal_loss_ratio=1), "search.goals[0].goal_loss_ratio", "must be in [0, 1)"),
    (goal(goal_width=0), "search.goals[0].goal_width", "must be in (0, 1), got 0"),
    (goal(goal_initial_trial_duration=1.0, goal_final_trial_duration=0.5),
     "search.goals[0].goal_final_trial_duration", "0.5 s is below goal_initial_trial_duration"),
    (goal(goal_duration_sum=0.3), "search.goals[0].goal_duration_sum",
     "0.3 s is below goal_final_trial_duration 0.5 s"),
    (goal(goal_initial_trial_duration=0), "search.goals[0].goal_initial_trial_duration",
     "must be > 0"),
    (goal(goal_lost_ratio=0.1), "search.goals[0].goal_lost_ratio",
     "unknown key (did you mean 'goal_loss_ratio'?"),
    (goal(name="pdr"), "search.goals[1].name", "'pdr' is already used by search.goals[0]"),
    (goal(goal_width="narrow"), "search.goals[0].goal_width", "expected number in (0, 1)"),
    (search(goals=[]), "search.goals", "must not be empty"),
    (search(min_load=2e6, max_load=1e6), "search.min_load", "2000000.0 pps is not below max_load"),
    (search(method="binary"), "search.method", "expected one of mlrsearch"),
])
def test_contradicting_goals_are_refused_naming_the_key(tmp_path, data, key, reason):
    with pytest.raises(ProfileError) as e:
        load(tmp_path, data)
    msg = str(e.value)
    assert re.match(rf".*bad\.yaml(:\d+)?: {re.escape(key)}: {re.escape(reason)}", msg), msg
    assert msg.count("\n") == 0, "one message"
