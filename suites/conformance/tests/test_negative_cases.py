"""Unit tests of the negative-conformance cases and runner's pure parts (no lab, no switch).

The builders are checked against os-ken's own serializer (a second, independent encoder of the
same structures): the valid form of each message must be byte-identical."""
from __future__ import annotations

import re
import struct

import pytest
from os_ken.ofproto import ofproto_v1_3 as ofp
from os_ken.ofproto import ofproto_v1_3_parser as parser

import openflow as w
from suites.conformance import negative_cases as nc
from suites.conformance import negative_runner as nr

pytestmark = pytest.mark.quick

CTX = nc.Context()


class _Datapath:
    ofproto = ofp
    ofproto_parser = parser

    def set_xid(self, msg):  # os-ken's serializer leaves xid to the datapath
        msg.xid = 0


def _ryu(msg, xid: int = 7) -> bytes:
    msg.xid = xid
    msg.serialize()
    return bytes(msg.buf)


DP = _Datapath()


# ---- builders vs os-ken ---------------------------------------------------------------------
def test_group_mod_matches_os_ken():
    ryu = parser.OFPGroupMod(DP, ofp.OFPGC_ADD, ofp.OFPGT_ALL, 1, [
        parser.OFPBucket(0, ofp.OFPP_ANY, ofp.OFPG_ANY, [parser.OFPActionOutput(2, 0xFFFF)])])
    assert nc.group_mod(7, group_id=1) == _ryu(ryu)


def test_meter_mod_and_bands_match_os_ken():
    ryu = parser.OFPMeterMod(DP, ofp.OFPMC_ADD, ofp.OFPMF_KBPS, 3, [
        parser.OFPMeterBandDrop(1000, 0), parser.OFPMeterBandDscpRemark(500, 10, 2)])
    assert nc.meter_mod(7, meter_id=3, bands=nc.band_drop(1000)
                        + nc.band_dscp(500, 2, 10)) == _ryu(ryu)


def test_port_table_role_config_mods_match_os_ken():
    mac = "02:00:00:00:00:01"
    assert nc.port_mod(7, 1, b"\x02\0\0\0\0\x01", 4, 4, 0) == _ryu(
        parser.OFPPortMod(DP, 1, mac, 4, 4, 0))
    assert nc.table_mod(7, 3, 0) == _ryu(parser.OFPTableMod(DP, 3, 0))
    assert nc.role_request(7, ofp.OFPCR_ROLE_MASTER, 10) == _ryu(
        parser.OFPRoleRequest(DP, ofp.OFPCR_ROLE_MASTER, 10))
    assert nc.set_config(7, 1, 128) == _ryu(parser.OFPSetConfig(DP, 1, 128))


def test_packet_out_and_flow_stats_request_match_os_ken():
    ryu = parser.OFPPacketOut(DP, ofp.OFP_NO_BUFFER, ofp.OFPP_CONTROLLER,
                              [parser.OFPActionOutput(2, 0xFFFF)], nc.FRAME_IPV4_UDP)
    assert nc.packet_out_raw(7, w.action_output(2), nc.FRAME_IPV4_UDP) == _ryu(ryu)
    ryu = parser.OFPFlowStatsRequest(DP, 0, ofp.OFPTT_ALL, ofp.OFPP_ANY, ofp.OFPG_ANY, 0, 0,
                                     parser.OFPMatch())
    assert nc.flow_stats_request(7) == _ryu(ryu)


def test_flow_add_and_set_field_match_os_ken():
    ryu = parser.OFPFlowMod(DP, 0, 0, 0, ofp.OFPFC_ADD, 0, 0, 0x8000, ofp.OFP_NO_BUFFER,
                            ofp.OFPP_ANY, ofp.OFPG_ANY, 0,
                            parser.OFPMatch(eth_type=0x0800, ipv4_src="10.0.0.1"),
                            [parser.OFPInstructionActions(ofp.OFPIT_APPLY_ACTIONS, [
                                parser.OFPActionSetField(ipv4_dst="10.0.0.9"),
                                parser.OFPActionOutput(2, 0xFFFF)])])
    ours = nc.flow_add(7, w.match(nc.ETH_IP, w.oxm(nc.IPV4_SRC, b"\x0a\0\0\x01")),
                       instructions=w.apply_actions(
                           nc.set_field(w.oxm(nc.IPV4_DST, b"\x0a\0\0\x09")),
                           w.action_output(2)))
    assert ours == _ryu(ryu)


def test_goto_meter_group_push_match_os_ken():
    assert nc.goto_table(3) == _ser(parser.OFPInstructionGotoTable(3))
    assert nc.meter_instruction(5) == _ser(parser.OFPInstructionMeter(5))
    assert nc.action_group(9) == _ser(parser.OFPActionGroup(9))
    assert nc.action_push(ofp.OFPAT_PUSH_VLAN, 0x8100) == _ser(parser.OFPActionPushVlan(0x8100))


def _ser(obj) -> bytes:
    buf = bytearray()
    obj.serialize(buf, 0)
    return bytes(buf)


# ---- the malformed parts are malformed the way the case says ---------------------------------
def test_with_length_and_retype_change_only_their_field():
    m = w.msg(w.ECHO_REQUEST, b"abc", 9)
    assert nc.with_length(m, 99) == m[:2] + b"\x00\x63" + m[4:]
    assert nc.retype(m, version=3)[0] == 3 and nc.retype(m, version=3)[1:] == m[1:]


def test_oxm_raw_and_match_raw_keep_the_given_lengths():
    t = nc.oxm_raw(nc.ETH_TYPE, b"\x08\x00\x00")
    assert t[:4] == struct.pack("!HBB", 0x8000, nc.ETH_TYPE << 1, 3) and len(t) == 7
    m = nc.match_raw(b"", type_=0)
    assert m == struct.pack("!HH", 0, 4) + bytes(4)
    assert struct.unpack_from("!H", nc.match_raw(nc.ETH_IP, length=200), 2)[0] == 200


def _case(name: str) -> nc.Case:
    return next(c for c in nc.catalogue() if c.name == name)


def test_value_outside_mask_case_really_has_bits_outside_the_mask():
    m = _case("match_value_outside_mask").message(CTX, 1)
    i = m.index(struct.pack("!HBB", 0x8000, nc.IPV4_SRC << 1 | 1, 8))
    value, mask = struct.unpack_from("!II", m, i + 4)
    assert value & ~mask & 0xFFFFFFFF


def test_truncated_cases_are_shorter_than_their_structures():
    fm = _case("flow_mod_truncated").message(CTX, 1)
    assert len(fm) == 40 < 56
    cut = _case("flow_mod_cuts_match").message(CTX, 1)
    match_len, = struct.unpack_from("!H", cut, 50)
    assert 48 + match_len > len(cut)
    assert len(_case("packet_out_runt_frame").message(CTX, 1)) == 24 + 16 + 10


def test_header_below_8_is_the_only_unframed_case():
    unframed = [c.name for c in nc.catalogue() if not c.reframes]
    assert unframed == ["header_len_below_8"]
    assert nc.DISCONNECT in _case("header_len_below_8").acceptable


def test_port_mod_cases_use_the_context_mac():
    ctx = nc.Context((5, 6), {5: b"\x0a" * 6, 6: b"\x0b" * 6})
    m = _case("port_mod_undefined_config").message(ctx, 1)
    assert struct.unpack_from("!I", m, 8)[0] == 5 and m[16:22] == b"\x0a" * 6
    bad = _case("port_mod_bad_hw_addr").message(ctx, 1)
    assert bad[16:22] != b"\x0a" * 6


# ---- the catalogue as a whole ----------------------------------------------------------------
def test_every_case_is_framed_versioned_and_carries_its_xid():
    for i, c in enumerate(nc.catalogue()):
        m = c.message(CTX, 0x4E000000 + i)
        length, = struct.unpack_from("!H", m, 2)
        if c.reframes:
            assert length == len(m), c.name
        assert struct.unpack_from("!I", m, 4)[0] == 0x4E000000 + i, c.name
        assert m[0] == (3 if c.name == "bad_version" else 4), c.name


def test_every_case_cites_a_section_and_names_known_codes():
    for c in nc.catalogue():
        assert re.match(r"^\d+(\.\d+)*", c.section), c.name
        assert c.why and c.strength in ("must", "should"), c.name
        for a in c.answers():
            if a == nc.DISCONNECT:
                continue
            name = nc.error_name(*a)
            assert not re.search(r"/\d+$|^\d+/", name), (c.name, name)
        if c.acceptable or c.strength == "should":
            assert c.choice, f"{c.name}: a choice needs its reason"


def test_catalogue_covers_every_category_the_issue_names():
    cats = set(nc.categories(nc.catalogue()))
    assert {"header/length", "bad match", "bad instruction", "bad action", "flow mod",
            "packet out", "group mod", "meter mod", "table mod", "port mod", "multipart",
            "set config", "role"} <= cats
    names = {c.name for c in nc.catalogue()}
    for must in ("match_value_outside_mask", "set_field_prereq_not_in_match",
                 "packet_out_set_field_prereq", "match_in_port_zero", "meter_no_bands",
                 "meter_dscp_bad_prec_level", "table_mod_undefined_config",
                 "packet_out_no_frame", "packet_out_runt_frame", "role_stale_generation",
                 "port_mod_bad_hw_addr", "set_config_undefined_flags", "match_dup_field"):
        assert must in names


def test_role_generations_rise_in_catalogue_order():
    gens = []
    for c in nc.catalogue():
        for mk in c.setup:
            m = mk(CTX, 1)
            if m[1] == nc.OFPT_ROLE_REQUEST:
                gens.append(struct.unpack_from("!Q", m, 16)[0])
    assert gens == sorted(gens) and len(gens) >= 5


def test_quick_cases_are_a_small_subset():
    q = nc.quick_cases()
    assert 5 <= len(q) <= 15 and all(c.quick for c in q)


def test_select_by_name_or_category_and_refuse_an_empty_selection():
    cases = nc.catalogue()
    assert nc.select(cases, "") == cases
    got = nc.select(cases, "meter_no_bands, packet out")
    assert {c.name for c in got} >= {"meter_no_bands", "packet_out_no_frame"}
    assert all(c.name == "meter_no_bands" or c.category == "packet out" for c in got)
    with pytest.raises(ValueError, match="OFBENCH_NEGATIVE_CASES='nope'"):
        nc.select(cases, "nope")


def test_error_name_and_matches_answer():
    assert nc.error_name(4, 9) == "BAD_MATCH/BAD_PREREQ"
    assert nc.error_name(12, nc.ANY_CODE) == "METER_MOD_FAILED/*"
    assert nc.matches_answer((12, nc.ANY_CODE), 12, 11)
    assert not nc.matches_answer((12, 8), 12, 11)
    assert not nc.matches_answer(nc.DISCONNECT, 12, 8)


# ---- classify -------------------------------------------------------------------------------
def _mk(expected=(4, 9), acceptable=()):
    return nc.Case("x", "bad match", "7.2.3.6", "why", lambda c, x: b"", expected, acceptable)


@pytest.mark.parametrize("errors,echo,closed,alive,acceptable,want", [
    ([(4, 9, 5)], True, False, True, (), nr.AS_SPEC),
    ([(4, 10, 5)], True, False, True, (), nr.OTHER),
    ([(4, 10, 5)], True, False, True, ((4, 10),), nr.AS_SPEC),
    ([(4, 9, 6)], True, False, True, (), nr.OTHER),         # right code, wrong xid
    ([], True, False, True, (), nr.SILENT),
    ([], False, False, True, (), nr.HANG),
    ([], False, True, True, (), nr.DISCONNECT),
    ([(4, 9, 5)], False, True, True, (), nr.DISCONNECT),    # closing is not allowed here
    ([], False, True, True, (nc.DISCONNECT,), nr.AS_SPEC),
    ([], False, True, False, (), nr.CRASH),
])
def test_classify(errors, echo, closed, alive, acceptable, want):
    cls, _ = nr.classify(_mk(acceptable=acceptable), 5, errors, echo, closed, alive)
    assert cls == want


# ---- multipart parsing ----------------------------------------------------------------------
def test_parse_flows_groups_meters_ports():
    match_ = w.match(nc.ETH_IP)
    flow = struct.pack("!HBxIIHHHH4xQQQ", 48 + len(match_), 3, 0, 0, 77, 0, 0, 0, 0, 0, 0)
    assert nr.parse_flows(flow + match_) == [(3, 77, match_)]
    grp = struct.pack("!HBxI", 8 + 16, 1, 42) + nc.bucket()
    assert nr.parse_groups(grp) == [(42, 1, nc.bucket())]
    met = struct.pack("!HHI", 8 + 16, 1, 9) + nc.band_drop()
    assert nr.parse_meters(met) == [(9, 1, nc.band_drop())]
    port = struct.pack("!I4x6s2x16sIIIIIIII", 2, b"\x02" * 6, b"p2", 0x4, 0, 0, 0x10, 0, 0, 0,
                       0)
    assert nr.parse_ports(port) == [(2, b"\x02" * 6, 0x4, 0x10)]


def test_tables_and_counts():
    c1, c2 = _mk(), nc.Case("y", "role", "6.3.6", "w", lambda c, x: b"", (1, 10))
    runs = {"ofbench": [nr.Outcome(c1, nr.AS_SPEC), nr.Outcome(c2, nr.SILENT, [], True)],
            "ovs": [nr.Outcome(c1, nr.AS_SPEC), nr.Outcome(c2, nr.AS_SPEC)]}
    rows = nr.category_table(runs)
    assert [r["category"] for r in rows] == ["bad match", "role", "total"]
    assert rows[1]["ofbench"] == "ERROR" and rows[1]["ovs"] == "OK"
    assert rows[2]["ofbench as spec/other/silent/disc"] == "1/0/1/0 of 2"
    m = nr.counts(runs["ofbench"])
    assert m["ok"] == 1 and m["silent_fail"] == 1 and m["silent_state_changed_fail"] == 1
    assert m["total"] == 2 and m["role_silent_fail"] == 1 and m["bad_match_ok"] == 1
    cases = nr.case_table(runs)
    assert cases[1]["ofbench"] == "silent (state changed)" and cases[1]["ovs"] == "as spec"


def test_metric_names_read_the_right_way():
    from reports.metrics import metric_direction
    m = nr.counts([nr.Outcome(_mk(), nr.SILENT)])
    assert metric_direction("ok") == 1 and metric_direction("bad_match_ok") == 1
    for k in m:
        if k != "total" and not k.endswith("ok"):
            assert metric_direction(k) == -1, k


# ---- run_cases against a test double of a switch ---------------------------------------------
class FakeSwitchDouble:
    """A test double of a switch's OpenFlow agent (not a switch): it connects to the runner's
    listener, says HELLO, answers ECHO, PORT_DESC (two ports) and other multipart requests
    (empty), and treats message type 40 by its first body byte: 0 = answer
    BAD_REQUEST/BAD_TYPE, 1 = say nothing, 2 = close the connection (and connect again),
    3 = stop answering anything (hang), 4 = die (crash)."""

    def __init__(self, port: int):
        import threading
        self.port, self.alive = port, True
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        import socket
        while self.alive:
            conn = socket.create_connection(("127.0.0.1", self.port), timeout=10)
            try:
                again = self._serve(conn)
            finally:
                conn.close()
            if not again:
                return

    def _serve(self, conn) -> bool:
        conn.sendall(w.msg(w.HELLO, xid=1))
        buf, hung = b"", False
        while True:
            chunk = conn.recv(65536)
            if not chunk:
                return False
            buf += chunk
            while len(buf) >= 8:
                n, = struct.unpack_from("!H", buf, 2)
                if len(buf) < n:
                    break
                m, buf = buf[:n], buf[n:]
                t, x = m[1], struct.unpack_from("!I", m, 4)[0]
                if hung:
                    continue
                if t == w.ECHO_REQUEST:
                    conn.sendall(w.msg(w.ECHO_REPLY, m[8:], x))
                elif t == w.MULTIPART_REQUEST:
                    mp, = struct.unpack_from("!H", m, 8)
                    body = b""
                    if mp == ofp.OFPMP_PORT_DESC:
                        body = b"".join(struct.pack("!I4x6s2x16s32x", p, bytes([2, 0, 0, 0, 0, p]),
                                                    b"p") for p in (1, 2))
                    conn.sendall(w.msg(w.MULTIPART_REPLY, struct.pack("!HH4x", mp, 0) + body, x))
                elif t == 40:
                    mode = m[8]
                    if mode == 0:
                        conn.sendall(w.msg(w.ERROR, struct.pack("!HH", 1, 1) + m[:64], x))
                    elif mode == 2:
                        return True
                    elif mode == 3:
                        hung = True
                    elif mode == 4:
                        self.alive = False
                        return False


def _double_case(name: str, mode: int, acceptable=()) -> nc.Case:
    return nc.Case(name, "header/length", "7.1.1", "test double", lambda c, x: w.msg(
        40, bytes([mode]), x), (ofp.OFPET_BAD_REQUEST, ofp.OFPBRC_BAD_TYPE), acceptable)


@pytest.fixture
def double(monkeypatch):
    monkeypatch.setattr(nr, "ECHO_TIMEOUT_S", 0.5)
    listener = nr.listen_in_netns(None)
    fake = FakeSwitchDouble(listener.getsockname()[1])
    peer = nr.Peer("double", listener, lambda: fake.alive)
    peer.connect(timeout_s=10)
    yield peer
    fake.alive = False
    peer.s.close()
    listener.close()


def test_run_cases_classifies_and_reconnects_after_a_disconnect(double):
    cases = [_double_case("err", 0), _double_case("quiet", 1), _double_case("close", 2),
             _double_case("err_after_reconnect", 0),
             _double_case("close_allowed", 2, acceptable=(nc.DISCONNECT,))]
    outs = nr.run_cases(double, cases)
    assert [o.cls for o in outs] == [nr.AS_SPEC, nr.SILENT, nr.DISCONNECT, nr.AS_SPEC,
                                     nr.AS_SPEC]
    assert outs[0].got == ["BAD_REQUEST/BAD_TYPE"] and double.reconnects == 2
    assert outs[2].got == ["connection closed"]


def test_run_cases_stops_at_a_hang(double):
    outs = nr.run_cases(double, [_double_case("hang", 3), _double_case("never", 0)])
    assert [o.cls for o in outs] == [nr.HANG]


def test_run_cases_stops_at_a_crash(double):
    outs = nr.run_cases(double, [_double_case("die", 4), _double_case("never", 0)])
    assert [o.cls for o in outs] == [nr.CRASH]


def test_write_corpus_one_file_per_message(tmp_path):
    paths = nc.write_corpus(tmp_path)
    n_setup = sum(len(c.setup) for c in nc.catalogue())
    assert len(paths) == len(nc.catalogue()) + n_setup == len(list(tmp_path.iterdir()))
    assert (tmp_path / "meter_no_bands.bin").read_bytes()[1] == w.METER_MOD
