"""OvsInstance: a second instance with the same name in one run starts from an empty database
(the full conformance runs of ofbench and OVS both build a tester named cf0-tester), while a
restart of the same instance keeps its bridges. Real ovsdb-server and ovs-vswitchd."""
import shutil
import uuid

import pytest

from dut.profiles.schema import parse_profile
from drivers.lab.local import LocalLab
from drivers.lab.ovs import OvsInstance

pytestmark = pytest.mark.skipif(shutil.which("ovs-vswitchd") is None and
                                not __import__("os").path.exists("/usr/sbin/ovs-vswitchd"),
                                reason="Open vSwitch is not installed")


@pytest.fixture
def lab(tmp_path):
    prof = parse_profile({"schema_version": 1, "lab": {"kind": "local"}, "features": ["ovs"],
                          "switch": {"kind": "ovs"}}, where="t.yaml")
    lab = LocalLab(prof, f"run-20990101T000000Z-{uuid.uuid4().hex[:4]}", tmp_path / "run")
    try:
        yield lab
    finally:
        lab.close()


def test_same_name_new_instance_gets_fresh_db_restart_keeps_it(lab):
    first = OvsInstance(lab, "dup")
    first.start()
    first.add_bridge("brdup")
    first.stop()
    first.start()  # a restart of the same instance: its bridge is still configured
    assert "brdup" in first.vsctl("list-br")
    first.stop()
    second = OvsInstance(lab, "dup")
    second.start()
    assert "brdup" not in second.vsctl("list-br")
    second.add_bridge("brdup")  # did fail: "a bridge named brdup already exists"
    second.stop()
