"""drivers.lab.links: the pure parts that read the profile's cabling."""
from dut.profiles.schema import load_profile
from drivers.lab.links import generator_lcores, link_plan, link_speed_mbps, port_spec, why_not


def test_plan_numbers_switch_ports_in_profile_order():
    prof = load_profile("lab1")
    assert link_plan(prof) == [{"generator": "t0", "switch": "p1", "ofport": 1},
                               {"generator": "t1", "switch": "p2", "ofport": 2}]
    assert why_not(prof) is None and why_not(load_profile("local")) is not None


def test_ports_speeds_and_cores_from_the_profile():
    assert port_spec({"pci": "0000:03:00.0"}) == "0000:03:00.0"
    assert port_spec({"devargs": "net_memif0,role=client"}) == "net_memif0,role=client"
    assert link_speed_mbps({"speed_gbps": 10}, {"speed_gbps": 25}) == 10_000
    assert link_speed_mbps({}, {"speed_gbps": 40}) == 40_000
    assert link_speed_mbps({}, {}) == 0
    assert generator_lcores("0,1") == (0, 1) and generator_lcores("3") == (3, 3)
    assert generator_lcores(None) == (0, 1)
