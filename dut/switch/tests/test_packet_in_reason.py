"""The reason a Packet-In carries (OF1.3.5 7.4.1, 5.4): OFPR_NO_MATCH when the table-miss flow
entry (priority 0, empty match) sent the packet to the controller, OFPR_ACTION for any other
flow's output:CONTROLLER and for a PACKET_OUT's. The switch used to overwrite the table-miss
reason with ACTION when it executed the output (found by ovs-testcontroller, which ignores
packet-ins whose reason is not NO_MATCH: suites/interop, finding 2).

Frames enter the pipeline by PACKET_OUT to OFPP_TABLE (the switch's ports are net_null, no
rx); the paths: a table-miss entry's apply-actions (through a group's bucket), its action set,
a priority-0 flow with a match (not a table-miss entry), an output:CONTROLLER followed by a
goto to a table whose table-miss entry sends it again (two packet-ins, each its own flow's
reason, table and cookie), and a PACKET_OUT's own output:CONTROLLER."""
from __future__ import annotations

import struct

import openflow as w
from dut.switch.tests.switchproc import MACS, accept_sync

OFPR_NO_MATCH, OFPR_ACTION = 0, 1
OFPP_TABLE = 0xFFFFFFF9
OXM_ETH_TYPE = 5


def frame(ethertype: int) -> bytes:
    return MACS + struct.pack("!H", ethertype) + bytes(46)


def eth_type(et: int) -> bytes:
    return w.match(w.oxm(OXM_ETH_TYPE, struct.pack("!H", et)))


def packet_in(s: w.SyncSession) -> tuple[int, int, int, int]:
    """(reason, table_id, cookie, ethertype of the frame) of the next Packet-In."""
    m = bytes(s.wait(w.PACKET_IN, timeout_s=5.0))
    reason, table, cookie = struct.unpack_from("!BBQ", m, 14)
    _, off = w.packet_in_fields(m)
    return reason, table, cookie, struct.unpack_from("!H", m, off + 12)[0]


def test_packet_in_reason_is_no_match_from_the_table_miss_entry(null_switch):
    proc, listener, tmp = null_switch
    s = accept_sync(listener, proc)
    ctl = w.action_output(w.OFPP_CONTROLLER)
    s.send(w.group_mod(1, group_id=1, buckets=w.bucket(ctl)))
    for table, priority, match_, insts, cookie in (
            (0, 0, b"", w.apply_actions(w.action_group(1)), 0x10),           # table-miss
            (0, 10, eth_type(0x0800), w.apply_actions(ctl), 0x11),
            (0, 10, eth_type(0x86DD), w.apply_actions(ctl) + w.goto_table(1), 0x12),
            (1, 0, b"", w.write_actions(ctl), 0x13),                          # table-miss
            (0, 10, eth_type(0x0806), w.goto_table(2), 0x14),
            (2, 0, eth_type(0x0806), w.apply_actions(ctl), 0x15)):           # has a match
        s.send(w.flow_mod(table=table, priority=priority, match_=match_, instructions=insts,
                          cookie=cookie))
    s.sync()
    assert s.errors == 0, f"the flows were refused: {s.first_error!r}"
    table_ = w.action_output(OFPP_TABLE)
    got = {}
    for et in (0x88B5, 0x0800, 0x0806):
        s.send(w.packet_out(frame(et), table_))
        got[et] = packet_in(s)
    s.send(w.packet_out(frame(0x86DD), table_))
    two = [packet_in(s), packet_in(s)]
    s.send(w.packet_out(frame(0x88B6), ctl))
    po = packet_in(s)
    assert got[0x88B5] == (OFPR_NO_MATCH, 0, 0x10, 0x88B5), "table-miss entry, via a group"
    assert got[0x0800] == (OFPR_ACTION, 0, 0x11, 0x0800), "a priority-10 flow"
    assert got[0x0806] == (OFPR_ACTION, 2, 0x15, 0x0806), "priority 0 with a match"
    assert sorted(two) == [(OFPR_NO_MATCH, 1, 0x13, 0x86DD), (OFPR_ACTION, 0, 0x12, 0x86DD)], \
        "output:CONTROLLER then goto a table-miss entry's action set"
    assert po == (OFPR_ACTION, 0xFF, 0xFFFFFFFFFFFFFFFF, 0x88B6), "a PACKET_OUT's output"
    assert s.errors == 0, f"an error from the switch: {s.first_error!r}"
    s.close()
    assert proc.poll() is None, (tmp / "ofswitch.log").read_text(errors="replace")[-2000:]
