"""A topology refuses bad input before it starts anything (no namespace, no process)."""
import socket

import pytest

from drivers.vmwire.guest import GuestSetupError
from dut.vmwire.tenants import parse_config
from drivers.vmwire.topology import VmwireTopology
from dut.vmwire.wiring import pcap_port, vhost_port


class NoLab:
    """Any use of the lab means something was started: fail loudly."""
    state_dir = "/nonexistent"

    def __getattr__(self, name):
        raise AssertionError(f"lab.{name} used before preflight passed")


CFG = parse_config({"ports": {"g1": 1, "g2": 2}, "tenants": {"t": ["g1", "g2"]}}, "t")


def test_socket_in_use_stops_before_anything(tmp_path):
    busy = tmp_path / "g1.sock"
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(str(busy))
    srv.listen(1)
    try:
        topo = VmwireTopology(NoLab(), "ovs-dpdk", "x",
                              [vhost_port("g1", 1, busy), vhost_port("g2", 2, tmp_path / "b")],
                              CFG)
        with pytest.raises(GuestSetupError, match="g1.sock is in use"):
            with topo:
                pass
    finally:
        srv.close()


def test_switch_without_vhost_user_is_refused(tmp_path):
    topo = VmwireTopology(NoLab(), "ovs", "x", [vhost_port("g1", 1, tmp_path / "a")], CFG)
    with pytest.raises(GuestSetupError, match="no vhost-user ports"):
        topo.preflight()


def test_port_outside_the_tenant_config_and_bad_capture(tmp_path):
    topo = VmwireTopology(NoLab(), "ovs-dpdk", "x", [vhost_port("g7", 7, tmp_path / "a")], CFG)
    with pytest.raises(GuestSetupError, match="switch port 7 is not a port of the tenant"):
        topo.preflight()
    topo = VmwireTopology(NoLab(), "ovs-dpdk", "x",
                          [vhost_port("g1", 1, tmp_path / "a"), pcap_port("c", 98, "/x")], CFG,
                          capture={"ofport": 99, "ports": ["g1"]})
    with pytest.raises(GuestSetupError, match="capture.ofport 99 is not a capture port"):
        topo.preflight()


def test_cpu_mask_to_cores():
    from drivers.vmwire.topology import cores_of_mask
    assert cores_of_mask("0x2") == [1]
    assert cores_of_mask("0x5") == [0, 2]
    for bad in ("0x0", "zz", ""):
        with pytest.raises(ValueError):
            cores_of_mask(bad)


def test_bad_cpu_mask_stops_before_anything(tmp_path):
    topo = VmwireTopology(NoLab(), "ofbench", "x", [vhost_port("g1", 1, tmp_path / "a"),
                                                     vhost_port("g2", 2, tmp_path / "b")],
                          CFG, pmd_cpu_mask="0x0")
    with pytest.raises(GuestSetupError, match="pmd_cpu_mask"):
        with topo:
            pass
