from dut.profiles.targets import check_targets

T = {"throughput": {"ndr_64b_1flows": {"ndr_mpps": ">= 14.0", "latency_p99_us": "<= 50"}}}


def test_met_targets_give_no_misses():
    assert check_targets(T, "throughput", "ndr_64b_1flows",
                         {"ndr_mpps": 14.2, "latency_p99_us": 12}) == []


def test_miss_says_by_how_much():
    (miss,) = check_targets(T, "throughput", "ndr_64b_1flows",
                            {"ndr_mpps": 10.5, "latency_p99_us": 12})
    assert miss["metric"] == "ndr_mpps" and abs(miss["off_by"] + 3.5) < 1e-9
    assert "off by -3.5 (-25.0%)" in miss["message"]


def test_unmeasured_target_is_a_miss_and_other_tests_are_untouched():
    (miss,) = check_targets(T, "throughput", "ndr_64b_1flows", {"ndr_mpps": 15})
    assert "not measured" in miss["message"]
    assert check_targets(T, "throughput", "other", {}) == []


def test_star_entry_applies_to_every_result_of_the_suite_and_names_override_it():
    t = {"throughput": {"*": {"ndr_mpps": ">= 1"}, "special": {"ndr_mpps": ">= 5"}}}
    assert check_targets(t, "throughput", "any", {"ndr_mpps": 2}) == []
    (miss,) = check_targets(t, "throughput", "special", {"ndr_mpps": 2})
    assert miss["target"] == ">= 5"
