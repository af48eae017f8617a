from dut.controller.p2p_app import flow_specs


def test_flow_specs_one_rule_per_direction_or_n_exact_rules():
    assert flow_specs({"pairs": [[1, 2]], "flows": 1}) == [(1, None, 2), (2, None, 1)]
    specs = flow_specs({"pairs": [[1, 2]], "flows": 3, "udp_src_base": 10})
    assert specs == [(1, 10, 2), (1, 11, 2), (1, 12, 2), (2, 10, 1), (2, 11, 1), (2, 12, 1)]
