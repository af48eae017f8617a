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
