"""Testbed identity (drivers/lab/fingerprint.py): what goes into the id and what does not."""
from __future__ import annotations

import copy

from drivers.lab.fingerprint import fingerprint_lab, host_ports, provenance, testbed_id
from dut.profiles.schema import load_profile

FP = {"hosts": {"switch": {"cpu_model": "X", "microcode": "0x1", "kernel": "6.1", "dpdk": "22.11",
                           "ports": {"switch.p1": {"pci": "0000:03:00.0",
                                                   "firmware-version": "1.0"}},
                           "ofbench_build": "sha256:aaaa"}},
      "trex": "v3.08", "dut_host": "switch"}


def changed(fn):
    fp = copy.deepcopy(FP)
    fn(fp)
    return testbed_id(fp)


def test_id_follows_the_testbed_not_the_dut_build():
    base = testbed_id(FP)
    assert len(base) == 12
    assert changed(lambda f: f["hosts"]["switch"].update(ofbench_build="sha256:bbbb")) == base
    for fn in (lambda f: f["hosts"]["switch"].update(microcode="0x2"),
               lambda f: f["hosts"]["switch"].update(kernel="6.2"),
               lambda f: f["hosts"]["switch"]["ports"]["switch.p1"].update(
                   **{"firmware-version": "1.1"}),
               lambda f: f.update(trex="v3.09")):
        assert changed(fn) != base


def test_ports_per_host_role():
    prof = load_profile("lab-emu")
    ports = host_ports(prof, lambda s: prof.data[s].get("host") or s)
    assert set(ports["switch"]) >= {"switch.p1", "switch.p2", "conformance0.switch"}
    assert ports["controller"]["conformance0.tester"] == {"iface": "ct1"}
    assert set(ports["generator"]) == {"generator.t0", "generator.t1"}


def test_this_box_is_read_and_flattened_into_provenance():
    fp = fingerprint_lab(None, load_profile("local"))
    local = fp["hosts"]["local"]
    assert local["cores"] >= 1 and local["kernel"] and local["cpu_model"]
    prov = provenance(fp)
    assert prov["testbed_id"] == fp["testbed_id"] and prov["testbed_kernel"] == local["kernel"]


def test_trend_series_and_influx_tags_carry_the_testbed_and_pool():
    from reports.influx import record_to_point_parts
    from reports.trend import record_keys
    rec = {"suite": "throughput", "name": "ndr", "metrics": {"ndr_mpps": 1.0},
           "provenance": {"profile": "lab1", "dut_switch_kind": "ofbench", "generator": "trex",
                          "port_kind": "pci", "testbed_id": "abc123abc123", "pool": "pool=a",
                          "place": "lab1", "end_time": "2026-11-28T00:00:00Z"}}
    other = {**rec, "provenance": {**rec["provenance"], "testbed_id": "def456def456"}}
    (k1, _), (k2, _) = record_keys(rec)[0], record_keys(other)[0]
    assert k1 != k2 and k1.testbed_id == "abc123abc123" and k1.pool == "pool=a"
    _, tags, _, _ = record_to_point_parts(rec)
    assert tags["testbed_id"] == "abc123abc123" and tags["pool"] == "pool=a"
    assert tags["place"] == "lab1"


def test_a_host_whose_fingerprint_cannot_be_read_is_named():
    """A lab host where the fingerprint snippet fails (unreachable, python missing, garbage
    output) stops the run with the host's role and address, not a traceback."""
    import pytest

    from drivers.lab.base import LabError

    prof = load_profile("lab-emu")

    class Host:
        def __init__(self, address, out=None, exc=None):
            self.address, self.out, self.exc = address, out, exc

        def python_snippet(self, snippet, arg):
            if self.exc:
                raise self.exc
            return self.out

    class Lab:
        kind = "remote"

        def __init__(self, hosts):
            self.hosts = hosts

        @staticmethod
        def role_of(section):
            return prof.data[section].get("host") or section

    for bad in (Host("198.18.0.9", exc=LabError("ssh: connect timed out")),
                Host("198.18.0.9", out="not json"),
                Host("198.18.0.9", exc=OSError("Permission denied: /sys/.../microcode"))):
        with pytest.raises(LabError, match=r"lab\.hosts\.generator: the testbed fingerprint "
                                           r"cannot be read on 198\.18\.0\.9"):
            fingerprint_lab(Lab({"generator": bad}), prof)
