"""Rule-file parser: good files round-trip, every kind of bad line names file and line."""

import pytest

from dut.classifier.rulefile import RuleFileError, format_rules, parse_rule_file, parse_rule_text

GOOD = """\
# a comment
fields eth_dst:48 vlan_vid:16 ipv4_dst:32 tp_dst:16
100 eth_dst=00:11:22:00:00:00/ff:ff:ff:00:00:00 ipv4_dst=10.0.0.0/8 -> output:2
10  tp_dst=80 -> drop   # trailing comment
5   vlan_vid=0x1005/0x1fff ipv4_dst=10.1.2.3 -> output:1
0   -> controller
"""


def test_good_file_parses(tmp_path):
    p = tmp_path / "r.rules"
    p.write_text(GOOD)
    rf = parse_rule_file(p)
    assert rf.key_len == 6 + 2 + 4 + 2
    assert [r.priority for r in rf.rules] == [100, 10, 5, 0]
    assert [r.line for r in rf.rules] == [3, 4, 5, 6]
    r0 = rf.rules[0]
    assert r0.value[:6] == bytes.fromhex("001122000000") and r0.mask[:6] == bytes.fromhex("ffffff000000")
    assert r0.value[8:12] == bytes([10, 0, 0, 0]) and r0.mask[8:12] == bytes([255, 0, 0, 0])
    assert rf.rules[1].value[12:] == (80).to_bytes(2, "big") and rf.rules[1].mask[12:] == b"\xff\xff"
    assert rf.rules[3].mask == bytes(14) and rf.rules[3].action == "controller"


def test_round_trip():
    rf = parse_rule_text(GOOD)
    text = format_rules(rf.fields, [(r.priority, r.value, r.mask, r.action) for r in rf.rules])
    again = parse_rule_text(text)
    assert [(r.priority, r.value, r.mask, r.action) for r in again.rules] == \
           [(r.priority, r.value, r.mask, r.action) for r in rf.rules]


HDR = "fields a:8 b:16 ip:32\n"
BAD = [
    ("1 a=1 -> x\n", 1, "before the 'fields'"),
    (HDR + HDR, 2, "second 'fields'"),
    ("fields\n", 1, "at least one"),
    ("fields a:12\n", 1, "multiple of 8"),
    ("fields a:8 a:8\n", 1, "declared twice"),
    ("fields 9a:8\n", 1, "bad field name"),
    ("fields a:1032\n", 1, "128"),
    (HDR + "1 a=1\n", 2, "missing '-> action'"),
    (HDR + "1 a=1 ->   \n", 2, "missing '-> action'"),
    (HDR + "-> x\n", 2, "missing priority"),
    (HDR + "x a=1 -> x\n", 2, "bad priority"),
    (HDR + "4294967296 -> x\n", 2, "bad priority"),
    (HDR + "1 c=1 -> x\n", 2, "unknown field"),
    (HDR + "1 a=1 a=2 -> x\n", 2, "given twice"),
    (HDR + "1 a -> x\n", 2, "expected field=value"),
    (HDR + "1 a=zz -> x\n", 2, "bad value"),
    (HDR + "1 a=256 -> x\n", 2, "does not fit"),
    (HDR + "1 ip=10.0.0.0/33 -> x\n", 2, "longer than"),
    (HDR + "1 ip=10.0.0.0/1.2 -> x\n", 2, "bad mask"),
    (HDR + "1 ip=10.0.0.1/8 -> x\n", 2, "outside mask"),
    (HDR + "1 ip=300.0.0.0 -> x\n", 2, "bad value"),
    ("# only a comment\n", 0, "no 'fields'"),
    # issue 38: str.isdigit() takes these; they are refused with the file and line
    ("fields a:8\u00b2\n", 1, "multiple of 8"),
    ("fields a:\u0668\n", 1, "multiple of 8"),
    (HDR + "\u00b2 a=1 -> x\n", 2, "bad priority"),
    (HDR + "\u0661 a=1 -> x\n", 2, "bad priority"),
    (HDR + "1 ip=10.0.0.0/\u00b2 -> x\n", 2, "bad mask"),
    (HDR + "1 ip=10.0.0.0/\u0668 -> x\n", 2, "bad mask"),
    (HDR + "1 a=\u00b9 -> x\n", 2, "bad value"),
]


@pytest.mark.parametrize("text,line,msg", BAD, ids=[b[2] + str(i) for i, b in enumerate(BAD)])
def test_bad_line_names_file_and_line(text, line, msg):
    with pytest.raises(RuleFileError) as e:
        parse_rule_text(text, "lab.rules")
    assert e.value.line == line
    assert str(e.value).startswith(f"lab.rules:{line}: ")
    assert msg in str(e.value)
