"""FAUCET's driver (drivers/lab/faucet.py): its log counters, the refusal message, the
listener probe, the start's refusals."""
from __future__ import annotations

import os
import socket

import pytest

from drivers.lab import faucet
from drivers.lab.faucet import FaucetCounters, config_reason, listening_in_netns_of, parse_log

LOG = """\
Nov 28 17:49:55 faucet.valve INFO     DPID 1 (0x1) sw Cold start configuring DP
Nov 28 17:49:57 faucet.valve INFO     DPID 1 (0x1) sw L2 learned on Port 1 2a:bc:c0:97:b1:f5
Nov 28 17:49:58 faucet.valve ERROR    DPID 1 (0x1) sw OFError type: OFPET_BAD_MATCH code: OFPBMC_BAD_FIELD version=0x4
Nov 28 17:49:59 faucet.valve WARNING  DPID 1 (0x1) sw datapath down
Nov 28 17:50:01 faucet.valve INFO     DPID 1 (0x1) sw Cold start configuring DP
Nov 28 17:49:55 faucet.valve ERROR    DPID 1 (0x1) sw send_flow_msgs: DP not up
Nov 28 17:49:55 faucet.valve INFO     DPID 1 (0x1) sw status change: Port 2 up status False reason MODIFY state 1
Nov 28 17:49:56 faucet INFO     Reconfiguring existing datapath DPID 1 (0x1)
"""


def test_parse_log_counts_errors_connects_disconnects():
    c = parse_log(LOG)
    assert (c.ofp_errors, c.connects, c.disconnects) == (1, 2, 1)
    assert c.errors == ["OFPET_BAD_MATCH/OFPBMC_BAD_FIELD"]
    assert parse_log("") == FaucetCounters()
    assert c.port_changes == [(2, False)] and c.reloads == 1
    assert c.plus(c).connects == 4 and c.plus(FaucetCounters()) == c


def test_config_reason_is_the_last_plain_line():
    out = ("[InvalidConfigError(\"DP sw: Implicitly created VLAN v999 must be an int\")]\n"
           "/x/os_ken/lib/hub.py:160: EventletDeprecationWarning: \n  import eventlet\n")
    assert config_reason(out) == "DP sw: Implicitly created VLAN v999 must be an int"
    assert config_reason("boom\n  import eventlet\n") == "boom"
    assert config_reason("") == "(no output)"


def test_listening_probe_sees_our_own_listener():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        assert not listening_in_netns_of(os.getpid(), port)
        s.listen()
        assert listening_in_netns_of(os.getpid(), port)


def test_missing_venv_is_a_clear_skip_reason(monkeypatch, tmp_path):
    monkeypatch.setenv("OFBENCH_FAUCET_VENV", str(tmp_path / "none"))
    why = faucet.faucet_available()
    assert "requirements-faucet.lock" in why and str(tmp_path) in why
    with pytest.raises(faucet.FaucetError, match="FAUCET not installed"):
        faucet.check_config(tmp_path / "x.yaml")


@pytest.mark.skipif(faucet.faucet_available() is not None, reason="FAUCET not installed")
def test_a_config_faucet_refuses_names_the_file_and_reason(tmp_path):
    bad = tmp_path / "faucet.yaml"
    bad.write_text("vlans: {v100: {vid: 100}}\n"
                   "dps: {sw: {dp_id: 1, interfaces: {1: {native_vlan: v999}}}}\n")
    with pytest.raises(faucet.FaucetError) as e:
        faucet.check_config(bad)
    assert str(bad) in str(e.value) and "refuses" in str(e.value)
    assert "v999" in str(e.value) and "eventlet" not in str(e.value)
    good = tmp_path / "good.yaml"
    good.write_text("vlans: {v100: {vid: 100}}\n"
                    "dps: {sw: {dp_id: 1, interfaces: {1: {native_vlan: v100}}}}\n")
    faucet.check_config(good)


def test_ovs_testcontroller_log_counts():
    from drivers.lab.faucet import parse_ovs_testcontroller_log
    log = ("2026-11-28T18:10:59Z|00001|vconn|DBG|tcp:127.0.0.1:47992: sent (Success): "
           "OFPT_HELLO (OF1.3) (xid=0x1):\n"
           "2026-11-28T18:11:00Z|00009|vconn|DBG|tcp:127.0.0.1:47992: received: OFPT_ERROR "
           "(OF1.3) (xid=0x4): OFPBRC_BAD_TYPE\n"
           "2026-11-28T18:11:01Z|00010|rconn|INFO|tcp:127.0.0.1:47992: connection closed\n")
    c = parse_ovs_testcontroller_log(log)
    assert (c.connects, c.ofp_errors, c.disconnects) == (1, 1, 1)
    assert c.errors[0].startswith("OFPT_ERROR")


PROM = """\
# HELP of_packet_ins_total OF packet_ins received from DP
# TYPE of_packet_ins_total counter
of_packet_ins_total{dp_id="0x1",dp_name="sw"} 20013.0
# HELP vlan_hosts_learned Number of hosts learned on a VLAN
# TYPE vlan_hosts_learned gauge
vlan_hosts_learned{dp_id="0x1",dp_name="sw",vlan="100"} 10000.0
vlan_hosts_learned{dp_id="0x1",dp_name="sw",vlan="200"} 9990.0
"""


@pytest.mark.skipif(faucet.faucet_available() is not None, reason="FAUCET not installed")
def test_prometheus_counters_summed_over_labels_by_faucets_own_parser(tmp_path):
    """FaucetProcess.metrics reads the exporter with prometheus_client's parser (FAUCET's
    venv): counters without ``_total``, each name summed over its labels; an exporter that is
    not there is a FaucetError naming its address."""
    import threading
    from http.server import BaseHTTPRequestHandler, HTTPServer

    class Prom(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - http.server's name
            self.send_response(200)
            self.end_headers()
            self.wfile.write(PROM.encode())

        def log_message(self, *a):
            pass

    srv = HTTPServer(("127.0.0.1", 0), Prom)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        proc = faucet.FaucetProcess(None, "f", None, 0, srv.server_address[1], tmp_path / "c",
                                    tmp_path / "l", tmp_path / "e", None)
        assert proc.metrics() == {"of_packet_ins": 20013.0, "vlan_hosts_learned": 19990.0}
    finally:
        srv.shutdown()
        srv.server_close()
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]
    proc = faucet.FaucetProcess(None, "f", None, 0, dead, tmp_path / "c", tmp_path / "l",
                                tmp_path / "e", None)
    with pytest.raises(faucet.FaucetError, match=f"127.0.0.1:{dead}"):
        proc.metrics()
