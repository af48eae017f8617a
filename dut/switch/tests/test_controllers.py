"""The switch and its controllers (OpenFlow 1.3.5 6.3-6.4, issue 15 part 4), on a real ofswitch
with two DPDK ring ports (net_ring: what a port transmits comes back on its own rx) and this
test as the controllers on loopback ports:

* two connections at once: roles, one master, generation_id (STALE), IS_SLAVE refusals,
  asynchronous messages per connection (SET_ASYNC);
* the echo keepalive: a controller that stops answering is dropped and reconnected;
* fail-secure vs fail-standalone on controller loss, flows kept across the reconnect;
  standalone learns MACs (a frame to the MAC learnt on its ingress port is filtered).

Traffic without a controller: a flow in_port=1 -> output:IN_PORT keeps one frame circling
through port 1's ring, so the datapath keeps working while no controller is connected; the
stats socket (answered also while disconnected) shows the ports' counters.
"""
from __future__ import annotations

import itertools
import os
import shutil
import socket
import struct
import subprocess
import time
from contextlib import contextmanager

import pytest

from dut.switch import launcher
from dut.switch.tests.switchproc import accept, error_of, flow_packets, switch_process
import openflow as w

ROLE_REQUEST, ROLE_REPLY, SET_ASYNC = 24, 25, 28
ROLE_EQUAL, ROLE_MASTER, ROLE_SLAVE = 1, 2, 3
OFPP_IN_PORT = 0xFFFFFFF8
_SWITCHES = itertools.count()  # a unique --file-prefix for every switch of this process
FRAME = b"\x22" * 6 + b"\x11" * 6 + b"\x08\x00" + bytes(46)


def listen() -> socket.socket:
    return w.listen()


@contextmanager
def ring_switch(tmp_path, ports: list[int], **opts):
    """ofswitch with net_ring ports 1 and 2, connecting to 127.0.0.1:<each of ports>."""
    binary = launcher.binary_path()
    if not binary.exists():
        pytest.skip(f"{binary} not built")
    prefix = f"ofb-swctl-{os.getpid()}-{next(_SWITCHES)}"
    eal = ["-l", "0", "--no-huge", "-m", "256", "--no-pci", "--file-prefix", prefix,
           "--log-level", "lib.eal:error"]
    argv = launcher.switch_argv(binary, eal, [(1, "net_ring0"), (2, "net_ring1")],
                                controller=[("127.0.0.1", p) for p in ports], dpid=0xC1,
                                stats_sock=tmp_path / "stats", idle_sleep_us=50, **opts)
    with switch_process(argv, tmp_path / "ofswitch.log", prefix) as proc:
        yield proc


def role(s: w.Session, r: int, gen: int, xid: int) -> tuple[str, int]:
    """ROLE_REQUEST; ("reply", role) or ("error", type << 16 | code)."""
    s.send(w.msg(ROLE_REQUEST, struct.pack("!I4xQ", r, gen), xid))
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        m = s.wait_for(ROLE_REPLY, xid, 0.05)
        if m:
            return "reply", struct.unpack_from("!I", m[2])[0]
        m = s.wait_for(w.ERROR, xid, 0.05)
        if m:
            t, c = struct.unpack_from("!HH", m[2])
            return "error", t << 16 | c
    raise TimeoutError("no answer to ROLE_REQUEST")


def port_tx(tmp_path, port: int) -> int:
    st = launcher.read_stats(tmp_path / "stats")
    assert st is not None, "stats socket does not answer"
    return next(p["tx_packets"] for p in st["ports"] if p["port"] == port)


def test_two_controllers_roles_and_async(tmp_path):
    l1, l2 = listen(), listen()
    with ring_switch(tmp_path, [l1.getsockname()[1], l2.getsockname()[1]]) as proc:
        c1, c2 = accept(l1, proc), accept(l2, proc)
        assert role(c1, ROLE_MASTER, 5, 1) == ("reply", ROLE_MASTER)
        assert role(c2, 0, 0, 2) == ("reply", ROLE_EQUAL), "the other stays equal"
        c2.send(w.flow_mod(match_=w.match(w.oxm(0, struct.pack("!I", 2))), priority=5, xid=3))
        assert c2.barrier() and error_of(c2, 3, 0.2) is None, "an equal may change the tables"
        assert role(c2, ROLE_MASTER, 4, 4) == ("error", 11 << 16 | 0), \
            "an older generation_id is STALE (ROLE_REQUEST_FAILED)"
        assert role(c2, ROLE_MASTER, 6, 5) == ("reply", ROLE_MASTER)
        assert role(c1, 0, 0, 6) == ("reply", ROLE_SLAVE), "the old master became a slave"
        c1.send(w.flow_mod(match_=w.match(w.oxm(0, struct.pack("!I", 1))), xid=7))
        assert error_of(c1, 7) == (1 << 16 | 10), "a slave's FLOW_MOD: BAD_REQUEST/IS_SLAVE"
        c1.send(w.packet_out(FRAME, w.action_output(2), xid=8))
        assert error_of(c1, 8) == (1 << 16 | 10), "a slave's PACKET_OUT: IS_SLAVE"
        assert c1.port_stats() is not None, "a slave may read"
        # packet-ins: by default both get them; after SET_ASYNC (slave: none) only the master
        c2.send(w.packet_out(FRAME, w.action_output(w.OFPP_CONTROLLER), xid=9))
        assert c2.barrier() and c1.barrier()
        deadline = time.monotonic() + 3
        while (c1.n_packet_in < 1 or c2.n_packet_in < 1) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert (c1.n_packet_in, c2.n_packet_in) == (1, 1), "default: master and slave"
        c1.send(w.msg(SET_ASYNC, struct.pack("!6I", 7, 0, 7, 7, 0xF, 0), 10))
        assert c1.barrier()
        c2.send(w.packet_out(FRAME, w.action_output(w.OFPP_CONTROLLER), xid=11))
        deadline = time.monotonic() + 3
        while c2.n_packet_in < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.2)
        assert c2.barrier() and c1.barrier()
        assert (c1.n_packet_in, c2.n_packet_in) == (1, 2), "SET_ASYNC is per connection"
        c1.close()
        c2.close()
        assert proc.poll() is None
    l1.close()
    l2.close()


def test_echo_keepalive_drops_a_silent_controller(tmp_path):
    lst = listen()
    with ring_switch(tmp_path, [lst.getsockname()[1]], echo_interval_ms=300) as proc:
        alive = accept(lst, proc)
        time.sleep(1.5)  # it answers the switch's echoes: stays connected
        assert alive.echo_ok(xid=0xA1), "a controller that answers keeps its connection"
        alive.answer_echo = False
        t0 = time.monotonic()
        again = accept(lst, proc, timeout_s=5)  # dropped after ~2 intervals, then reconnected
        waited = time.monotonic() - t0
        assert 0.3 <= waited <= 3.0, f"silent controller dropped after {waited:.2f} s"
        assert again.echo_ok(xid=0xA2)
        log = (tmp_path / "ofswitch.log").read_text()
        assert "no answer to the keepalive ECHO_REQUEST" in log
        alive.close()
        again.close()
    lst.close()


@pytest.mark.parametrize("mode", ["secure", "standalone"])
def test_controller_loss_fail_modes_and_flows_kept(tmp_path, mode):
    lst = listen()
    port = lst.getsockname()[1]
    with ring_switch(tmp_path, [port], fail_mode=mode) as proc:
        c = accept(lst, proc)
        # one frame circling through port 1 (the flow sends it back where it came from)
        c.send(w.flow_mod(match_=w.match(w.oxm(0, struct.pack("!I", 1))), priority=10,
                          instructions=w.apply_actions(w.action_output(OFPP_IN_PORT)), xid=1))
        c.send(w.flow_mod(match_=w.match(w.oxm(0, struct.pack("!I", 2))), priority=10, xid=2))
        assert c.barrier()
        c.send(w.packet_out(FRAME, w.action_output(1), xid=3))
        time.sleep(0.3)
        p1, p2 = port_tx(tmp_path, 1), port_tx(tmp_path, 2)
        assert p1 > 0, "the frame circles through port 1"
        c.close()
        lst.close()  # the controller is gone (no reconnect possible)
        time.sleep(0.5)
        q1a, q2a = port_tx(tmp_path, 1), port_tx(tmp_path, 2)
        time.sleep(0.5)
        q1b, q2b = port_tx(tmp_path, 1), port_tx(tmp_path, 2)
        st = launcher.read_stats(tmp_path / "stats")
        assert st["of_connected"] is False
        # the worker's time: busy while the frame circles, idle (its naps) before it did
        [wk] = st["workers"]
        assert st["tsc_hz"] > 0 and wk["busy_cycles"] > 0 and wk["idle_cycles"] > 0, st
        # the rig's histograms (issue 44): cumulative, 16 log2 buckets each, the floor ~15 us
        assert len(wk["gap_hist"]) == len(wk["backlog_hist"]) == 16
        assert 0 < wk["gap_floor_cycles"] <= st["tsc_hz"] / 60_000
        if mode == "secure":
            assert q1b > q1a, "fail-secure: the installed flow keeps forwarding"
            assert q2b == q2a, "fail-secure: nothing beyond the flows"
        else:
            assert q2b > q2a, "fail-standalone: received frames are flooded (port 2 too)"
        # the controller returns: its session starts anew, the flows are still there
        lst = w.listen(port=port)
        c = accept(lst, proc, timeout_s=10)
        c.send(w.multipart(3, xid=4))  # table stats: active count of table 0
        m = c.wait_for(w.MULTIPART_REPLY, 4)
        assert m is not None
        active = struct.unpack_from("!I", m[2], 8 + 4)[0]
        assert active == 2, f"flows kept across the reconnect ({active} in table 0)"
        c.close()
        assert proc.poll() is None
    lst.close()


def test_standalone_learns_and_filters(tmp_path):
    """Fail-standalone is a learning switch: a frame addressed to the MAC it came from (learnt
    on its ingress port) is filtered, where a flood would keep it circling."""
    lst = listen()
    with ring_switch(tmp_path, [lst.getsockname()[1]], fail_mode="standalone") as proc:
        c = accept(lst, proc)
        c.send(w.flow_mod(match_=w.match(w.oxm(0, struct.pack("!I", 1))), priority=10,
                          instructions=w.apply_actions(w.action_output(OFPP_IN_PORT)), xid=1))
        assert c.barrier()
        self_addressed = b"\x02\x00\x00\x00\x00\x07" * 2 + b"\x08\x00" + bytes(46)
        c.send(w.packet_out(self_addressed, w.action_output(1), xid=2))
        time.sleep(0.3)
        assert port_tx(tmp_path, 1) > 0, "the frame circles through port 1 (the flow)"
        c.close()
        lst.close()
        time.sleep(0.5)  # standalone now: the frame is filtered at its next arrival
        a1, a2 = port_tx(tmp_path, 1), port_tx(tmp_path, 2)
        time.sleep(0.5)
        assert (port_tx(tmp_path, 1), port_tx(tmp_path, 2)) == (a1, a2), \
            "a frame to the MAC learnt on its ingress port is dropped, not flooded"
        assert proc.poll() is None


def test_cache_lines_and_counts_held_in_cache_entries(tmp_path):
    """--cache-lines sizes each worker's flow cache (the stats socket says so). A frame
    circling through two flows that only output (1 -> 2, 2 -> 1: the cache's fast entries,
    whose packets are counted in the entry and reach the flow later, ofswitch.h) shows in the
    flows' packet counts exactly as in the ports' tx counters, once the circle is cut by a
    MODIFY that carries the counts on."""
    lst = listen()
    with ring_switch(tmp_path, [lst.getsockname()[1]], cache_lines=1024) as proc:
        c = accept(lst, proc)
        assert launcher.read_stats(tmp_path / "stats")["cache_lines"] == 1024
        for cookie, (inp, out) in ((1, (1, 2)), (2, (2, 1))):
            c.send(w.flow_mod(match_=w.match(w.oxm(0, struct.pack("!I", inp))), priority=10,
                              cookie=cookie, instructions=w.apply_actions(w.action_output(out))))
        assert c.barrier()
        c.send(w.packet_out(FRAME, w.action_output(1), xid=2))
        time.sleep(0.5)
        mid = flow_packets(c, 3)
        assert mid[1] > 1000 and mid[2] > 1000, f"the frame circles: {mid}"
        # cut the circle: flow 2 now drops (MODIFY keeps its counts)
        c.send(w.flow_mod(command=1, match_=w.match(w.oxm(0, struct.pack("!I", 2))),
                          priority=10, cookie=2, instructions=b"", xid=4))
        assert c.barrier(5)
        time.sleep(0.3)
        got = flow_packets(c, 6)
        # port 1 sent the PACKET_OUT and every frame flow 2 forwarded, flow 2 counted also the
        # one it dropped; port 2 sent what flow 1 forwarded
        assert (got[1], got[2]) == (port_tx(tmp_path, 2), port_tx(tmp_path, 1)), got
        assert got[1] >= mid[1] and got[2] >= mid[2]
        assert proc.poll() is None
        c.close()
    lst.close()


@pytest.mark.parametrize("value", ["1000", "32", str(1 << 27), "x"])
def test_bad_cache_lines_are_refused(tmp_path, value):
    binary = launcher.binary_path()
    if not binary.exists():
        pytest.skip(f"{binary} not built")
    prefix = f"ofb-swctl-{os.getpid()}-{next(_SWITCHES)}"
    cp = subprocess.run([str(binary), "-l", "0", "--no-huge", "-m", "64", "--no-pci",
                         "--file-prefix", prefix, "--log-level", "lib.eal:error", "--",
                         "--port", "1=net_ring0", "--cache-lines", value],
                        capture_output=True, text=True, timeout=60)
    shutil.rmtree(f"/var/run/dpdk/{prefix}", ignore_errors=True)
    assert cp.returncode == 2 and "--cache-lines wants a power of 2" in cp.stderr, cp.stderr
