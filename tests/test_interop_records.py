"""The interop suite's records against the result schema (reports/): the suite may not import
reports (tests/test_import_graph.py), this folder may."""
from __future__ import annotations


def test_learn_params_fit_the_result_record_schema():
    """A bench record's params carry the learning passes as the schema allows (a list of dicts
    is refused: the 1k bench of 00:04 lost its record that way)."""
    from reports.results import validation_errors
    from suites.interop.faucet_pipeline import DP_OPTIONS, learn_params
    info = {"passes": [{"arps_sent": 2000, "missing_after": 3, "at_s": 13.9},
                       {"arps_sent": 3, "missing_after": 0, "at_s": 20.1}],
            "pps": 150.0, "dp_options": DP_OPTIONS}
    params = learn_params(info)
    assert params["learn_passes"] == ["pass 1: 2000 ARPs, 3 hosts missing after, at 13.9 s",
                                      "pass 2: 3 ARPs, 0 hosts missing after, at 20.1 s"]
    assert params["faucet_dp_options"] == DP_OPTIONS and params["learn_pps"] == 150.0
    cached = learn_params({"hosts_learned": 2000})
    assert cached["learn_passes"] == "a recording of an earlier run"
    for p in (params, cached):
        rec = {"schema_version": 2, "suite": "interop", "name": "x", "metrics": {},
               "params": p, "provenance": {}}
        assert [e for e in validation_errors(rec) if e.startswith("params")] == []
    bad = {"schema_version": 2, "suite": "interop", "name": "x", "metrics": {}, "provenance": {},
           "params": {"learn_passes": info["passes"]}}
    assert any(e.startswith("params.learn_passes") for e in validation_errors(bad))

