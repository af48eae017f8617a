"""QEMU guest: command line, serial parsing, and bad input refused before anything starts."""
import json
import socket
import threading

import pytest

from drivers.vmwire.guest import (GuestImage, GuestSetupError, Nic, Role, check_socket_path,
                              find_guest_image, parse_serial, preflight, qemu_argv)

IMG = GuestImage("/g/vmlinuz", "/g/initramfs.gz")


def _image(tmp_path):
    (tmp_path / "vmlinuz").write_bytes(b"k")
    (tmp_path / "initramfs.gz").write_bytes(b"i")
    return tmp_path


def test_vhost_user_argv_under_tcg():
    argv = qemu_argv(IMG, Nic("vhost-user", "/s/g1.sock", mac="52:54:00:00:00:09"),
                     Role("ping", "10.0.0.2/24", peer="10.0.0.1", count=3), "/l/g1.serial")
    s = " ".join(argv)
    assert "-accel tcg" in s and "-enable-kvm" not in s
    assert "memory-backend-memfd,id=mem0,size=256M,share=on" in s   # backend maps guest RAM
    assert "socket,id=chr0,path=/s/g1.sock,server=on,wait=off" in s
    assert "virtio-net-pci,netdev=net0,mac=52:54:00:00:00:09,vectors=0,romfile=" in s  # TCG msix crash
    assert "ofb.role=ping" in s and "ofb.peer=10.0.0.1" in s and "ofb.count=3" in s
    assert "-serial file:/l/g1.serial" in s


def test_kvm_and_client_mode_and_tap():
    s = " ".join(qemu_argv(IMG, Nic("vhost-user", "/s/x", server=False), Role(), "/l", kvm=True))
    assert "-enable-kvm" in s and "vectors=0" not in s and "reconnect=1" in s
    s = " ".join(qemu_argv(IMG, Nic("tap", "tap0", "e1000"), Role(vlan=42), "/l"))
    assert "tap,id=net0,ifname=tap0,script=no,downscript=no,vnet_hdr=off" in s
    assert "-device e1000,netdev=net0" in s and "memfd" not in s and "ofb.vlan=42" in s


def test_guest_image_missing(tmp_path):
    with pytest.raises(GuestSetupError, match=r"guest kernel missing: .*vmlinuz \(build it "
                                              r"with `drivers/vmwire/build_guest.sh"):
        find_guest_image(tmp_path)
    (tmp_path / "vmlinuz").write_bytes(b"k")
    with pytest.raises(GuestSetupError, match="guest initramfs missing"):
        find_guest_image(tmp_path)


def test_socket_path_in_use(tmp_path):
    path = tmp_path / "g.sock"
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(str(path))
    srv.listen(1)
    try:
        with pytest.raises(GuestSetupError, match=r"g.sock is in use: another process is "
                                                  r"listening"):
            preflight(_image(tmp_path), Nic("vhost-user", str(path)), Role())
    finally:
        srv.close()


def test_stale_socket_is_removed_and_regular_file_refused(tmp_path):
    path = tmp_path / "s.sock"
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(str(path))
    s.close()                          # a socket file nobody listens on
    check_socket_path(path)
    assert not path.exists()
    path.write_text("x")
    with pytest.raises(GuestSetupError, match="exists and is not a socket"):
        check_socket_path(path)
    with pytest.raises(GuestSetupError, match="does not exist"):
        check_socket_path(tmp_path / "nodir" / "x.sock")


@pytest.mark.parametrize("nic,role,msg", [
    (Nic("vhost-user", "/x", model="e1000"), Role(), "e1000 has no vhost"),
    (Nic("pci", "/x"), Role(), "NIC kind"),
    (Nic("tap", "t", mac="52:54:00:00:00"), Role(), "MAC"),
    (Nic("tap", "x" * 16), Role(), "tap name"),
    (Nic("tap", "t"), Role("ping"), "needs a peer"),
    (Nic("tap", "t"), Role("dance"), "guest role"),
    (Nic("tap", "t"), Role(vlan=5000), "VLAN"),
])
def test_bad_guest_specs(tmp_path, nic, role, msg):
    with pytest.raises(GuestSetupError, match=msg):
        preflight(_image(tmp_path), nic, role)


def test_parse_serial_with_console_noise():
    iperf = {"end": {"sum_received": {"bits_per_second": 2.5e8}, "sum_sent": {"retransmits": 3}}}
    text = ("Booting from ROM..\x1b[2JOFB-READY ip=10.0.0.2/24 if=eth0 mac=52:54:00:00:00:02\r\n"
            "[    7.1] random kernel line\nOFB-PING tx=10 rx=9\nOFB-IPERF-BEGIN\n"
            + json.dumps(iperf, indent=1) + "\nOFB-IPERF-END\n"
            "OFB-STATS rx_packets=100 tx_packets=200 rx_bytes=1 tx_bytes=2\nOFB-DONE rc=0\n")
    out = parse_serial(text)
    assert out.ready and out.ip == "10.0.0.2/24" and out.mac == "52:54:00:00:00:02"
    assert (out.ping_tx, out.ping_rx, out.done_rc) == (10, 9, 0)
    assert out.iperf_mbps() == 250.0 and out.stats["tx_packets"] == 200
    assert not out.errors


def test_parse_serial_partial_and_errors():
    out = parse_serial("OFB-READY ip=1/2 if=eth0 mac=x\nOFB-ERROR peer 10.0.0.1 did not answer\n"
                       "OFB-IPERF-BEGIN\nnot json\nOFB-IPERF-END\n")
    assert out.ready and not out.done and out.iperf is None and out.iperf_mbps() is None
    assert out.errors[0].startswith("peer 10.0.0.1") and "not JSON" in out.errors[1]
