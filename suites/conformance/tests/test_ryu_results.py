"""Unit tests of the conformance result parsing (pure functions, no lab)."""
from __future__ import annotations

import json

import pytest

from suites.conformance import ryu_results as rr

pytestmark = pytest.mark.quick


@pytest.fixture
def of13(tmp_path):
    (tmp_path / "match").mkdir()
    (tmp_path / "action" / "25_SET_FIELD").mkdir(parents=True)
    (tmp_path / "match" / "00_IN_PORT.json").write_text(json.dumps(
        ["match: 00_IN_PORT", {"description": "a-->x", "prerequisite": [], "tests": []},
         {"description": "b-->y", "prerequisite": [], "tests": []}]))
    (tmp_path / "action" / "25_SET_FIELD" / "03_ETH_DST.json").write_text(json.dumps(
        ["action: set_field: 03_ETH_DST", {"description": "c-->z"}]))
    return tmp_path


LOG = """--- Test start ---
action: set_field: 03_ETH_DST
    c-->z                                                                                                ERROR
        Received incorrect packet: ethernet(dst='aa')
match: 00_IN_PORT
    a-->x                                                                                                OK
...---  Test end  ---
"""


def test_catalogue_categories_and_required(of13):
    cases = rr.catalogue(of13, {"match/00_IN_PORT.json"})
    assert [c.desc for c in cases] == ["c-->z", "a-->x", "b-->y"]  # sorted by description
    assert [c.category for c in cases] == ["set_field", "match", "match"]
    assert [c.required for c in cases] == [False, True, True]


def test_parse_log_ok_error_reason_and_not_run(of13):
    cases = rr.catalogue(of13, {"match/00_IN_PORT.json"})
    res = {r.case.desc: r for r in rr.parse_log(LOG, cases)}
    assert res["c-->z"].result == "ERROR"
    assert res["c-->z"].reason.startswith("Received incorrect packet")
    assert res["a-->x"].result == "OK"
    assert res["b-->y"].result == "NOT RUN"


def test_throughput_lines_with_progress_dots(of13):
    cases = rr.catalogue(of13, set())
    log = "match: 00_IN_PORT\n.........    a-->x" + " " * 80 + "OK\n"
    assert rr.parse_log(log, cases)[1].result == "OK"


def test_summary_and_rows(of13):
    cases = rr.catalogue(of13, {"match/00_IN_PORT.json"})
    res = rr.parse_log(LOG, cases)
    m = rr.summary(res)
    assert (m["total"], m["ok"], m["error"], m["required_ok"], m["required_total"]) == \
        (3, 1, 2, 1, 2)
    assert m["set_field_total"] == 1 and m["match_ok"] == 1
    rows = rr.category_rows(res)
    assert {"category": "match", "required": "yes", "ok": 1, "error": 1, "total": 2} in rows
    assert len(rr.error_rows(res)) == 2
    assert {r["file"] for r in rr.file_rows(res)} == {"match/00_IN_PORT.json",
                                                       "action/25_SET_FIELD/03_ETH_DST.json"}


def test_read_required_rejects_bad_line(tmp_path):
    p = tmp_path / "req.txt"
    p.write_text("# comment\nmatch/00_IN_PORT.json\nnot-a-json-path\n")
    with pytest.raises(ValueError, match=r"req.txt:3: expected a .json path"):
        rr.read_required(p)


def test_category_of_rejects_unknown():
    with pytest.raises(ValueError):
        rr.category_of("other/x.json")


def test_real_catalogue_counts():
    """The shipped tool has 991 cases, 276 in the required files."""
    from suites.conformance.runner import of13_dir, required_file
    req = rr.read_required(required_file())
    cases = rr.catalogue(of13_dir(), req)
    assert len(cases) == 991
    assert sum(c.required for c in cases) == 276
    assert sum(c.timed for c in cases) == 51  # 15 group + 36 meter throughput cases


def test_sctp_checksum_patch_gives_standard_crc32c():
    """The tool patch (tester_main) must yield RFC 3309 CRC32c, as scapy computes it."""
    import struct
    from scapy.all import SCTP, raw
    from suites.conformance.tool_patch import sctp_checksum_fixed
    b = raw(SCTP(sport=11111, dport=2222) / b"hello")
    zeroed = b[:8] + b"\0\0\0\0" + b[12:]
    assert struct.pack("!I", sctp_checksum_fixed(None, zeroed)) == b[8:12]


def test_files_matching_globs_and_typo(of13):
    assert rr.files_matching(of13, "match/*, action/25_SET_FIELD/03_ETH_DST") == {
        "match/00_IN_PORT.json", "action/25_SET_FIELD/03_ETH_DST.json"}
    with pytest.raises(ValueError, match="'meter/nope' matches no file"):
        rr.files_matching(of13, "match/*,meter/nope")


def test_timed_files_are_the_real_group_and_meter_files():
    from suites.conformance.runner import of13_dir
    timed = rr.timed_files(rr.catalogue(of13_dir(), set()))
    assert len(timed) == 17 and all(f.startswith(("group/", "meter/")) for f in timed)


def test_sender_line_goes_to_the_next_case(of13):
    from suites.conformance.tool_patch import sender_summary
    cases = rr.catalogue(of13, set())
    line = sender_summary(200.0, 5994, 30.0, 0.012)
    assert "199.8 pktps (99.9 % of nominal)" in line
    log = ("match: 00_IN_PORT\n" + line + "\n    a-->x" + " " * 80 + "ERROR\n"
           "        Received unexpected throughput: x\n    b-->y" + " " * 80 + "OK\n")
    res = rr.parse_log(log, cases)
    assert (res[1].nominal_pktps, res[1].offered_pktps, res[1].result) == (200.0, 199.8, "ERROR")
    assert res[1].reason.startswith("Received unexpected")
    assert res[2].offered_pktps is None  # the sender line belongs to one case only
    rows = rr.sender_rows(res)
    assert len(rows) == 1 and rows[0]["offered_pct"] == 99.9


def test_packets_due_follows_the_clock_not_the_ticks():
    from suites.conformance.tool_patch import max_burst_for, packets_due
    assert packets_due(200, 10.0, 10.0, 0) == 0
    assert packets_due(200, 10.0, 10.5, 0) == 100          # owed since the start
    assert packets_due(200, 10.0, 10.5, 60) == 40          # minus what was sent
    assert packets_due(200, 10.0, 10.5, 150) == 0          # never negative
    assert packets_due(175, 0.0, 30.0, 0) == 5250          # exact products are not lost
    assert packets_due(20000, 0.0, 0.1, 0, max_burst=80) == 80  # a late tick is capped
    assert max_burst_for(20000, 0.001, 4) == 80 and max_burst_for(100, 0.001, 4) == 1


def test_paced_sender_reaches_the_nominal_rate_despite_late_ticks():
    """Simulated tool: every tick is 30 % late (what the tool's own sender never made up);
    the paced count still totals the nominal rate x time, in bursts of at most max_burst."""
    from suites.conformance.tool_patch import max_burst_for, packets_due
    pktps, now, sent, biggest = 20000, 0.0, 0, 0
    burst = max_burst_for(pktps, 0.001, 4)
    while now < 30.0:
        n = packets_due(pktps, 0.0, now, sent, burst)
        biggest = max(biggest, n)
        sent += n
        now += 0.0013
    assert abs(sent - pktps * 30.0) <= pktps * 0.0013 * 4
    assert biggest <= burst


def test_plan_shards_covers_every_file_once_and_balances_the_real_set():
    from suites.conformance.runner import of13_dir, required_file
    cases = rr.catalogue(of13_dir(), rr.read_required(required_file()))
    files = {c.file for c in cases}
    for n in (1, 2, 3, 4):
        plan = rr.plan_shards(cases, n)
        flat = [f for g in plan for f in g]
        assert sorted(flat) == sorted(files) and len(flat) == len(files)
        assert len(plan) == n
        est = [rr.shard_estimate_s(cases, g) for g in plan]
        # longest-first greedy: no shard longer than the ideal share plus its largest file
        biggest_file = max(rr.shard_estimate_s(cases, [f]) for f in files)
        assert max(est) <= sum(est) / n + biggest_file
    assert rr.plan_shards(cases, 3) == rr.plan_shards(list(reversed(cases)), 3)  # deterministic


def test_plan_shards_never_splits_a_file_and_drops_empty_groups(of13):
    cases = rr.catalogue(of13, set())
    plan = rr.plan_shards(cases, 5)
    assert sorted(map(tuple, plan)) == [("action/25_SET_FIELD/03_ETH_DST.json",),
                                         ("match/00_IN_PORT.json",)]
    with pytest.raises(ValueError, match="shards must be >= 1"):
        rr.plan_shards(cases, 0)


def test_shard_logs_concatenated_parse_like_one_log(of13):
    """Each shard's tool log names its own files; parsing their concatenation gives every
    case its result, and a file whose shard died stays NOT RUN."""
    cases = rr.catalogue(of13, set())
    shard_a = LOG.split("match: 00_IN_PORT")[0]
    shard_b = "--- Test start ---\nmatch: 00_IN_PORT\n    a-->x" + " " * 90 + "OK\n"
    res = rr.parse_log(shard_a + "\n" + shard_b, cases)
    assert [r.result for r in res] == ["ERROR", "OK", "NOT RUN"]


def test_batched_packet_outs_are_the_tools_packet_outs_byte_for_byte():
    """The sender's one-write batch equals what TestSw.send_packet_out would send, xid by xid."""
    from os_ken.ofproto import ofproto_protocol, ofproto_v1_3
    from suites.conformance import tool_patch as tp
    dp = ofproto_protocol.ProtocolDesc(ofproto_v1_3.OFP_VERSION)
    data = bytes(range(60)) * 2
    template = tp.packet_out_template(dp, 1, data)
    batch = tp.packet_outs(template, 0xFFFFFFFE, 3)
    parser, ofp = dp.ofproto_parser, dp.ofproto
    expected = b""
    for xid in (0xFFFFFFFE, 0xFFFFFFFF, 0):
        out = parser.OFPPacketOut(datapath=dp, buffer_id=ofp.OFP_NO_BUFFER, data=data,
                                  in_port=ofp.OFPP_CONTROLLER,
                                  actions=[parser.OFPActionOutput(1)])
        out.xid = xid
        out.serialize()
        expected += bytes(out.buf)
    assert batch == expected
    assert tp.packet_outs(template, 7, 0) == b""


def test_link_test_dir_holds_only_this_runs_files(tmp_path):
    """The OVS full run reuses the ofbench run's shard folder names: the tool must not find the
    earlier run's files there (it ran them twice)."""
    from suites.conformance.runner import link_test_dir
    dest = tmp_path / "cf0-of13"
    link_test_dir(dest, ["match/00_IN_PORT.json", "meter/01_DROP_00_KBPS_00_1M.json"])
    link_test_dir(dest, ["action/00_OUTPUT.json"])
    assert sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*.json")) == \
        ["action/00_OUTPUT.json"]


@pytest.mark.parametrize("raw, why", [("three", "whole number"), ("0", "1..8"), ("9", "1..8")])
def test_bad_shard_count_names_the_variable(monkeypatch, raw, why):
    from suites.conformance.ryu_results import DEFAULT_SHARDS, shard_count
    monkeypatch.setenv("OFBENCH_CONFORMANCE_SHARDS", raw)
    with pytest.raises(pytest.UsageError, match=f"OFBENCH_CONFORMANCE_SHARDS.*{why}"):
        shard_count()
    monkeypatch.setenv("OFBENCH_CONFORMANCE_SHARDS", "2")
    assert shard_count() == 2
    monkeypatch.delenv("OFBENCH_CONFORMANCE_SHARDS")
    assert shard_count() == DEFAULT_SHARDS
