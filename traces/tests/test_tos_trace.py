"""ToS traces of document 000: shape, orders, exact expected matches, strict YAML."""
import json
from pathlib import Path

import pytest

from dut.controller.classify import parse_frame
from dut.controller.matching import naive_count
from traces.pcap import read_pcap
from traces.tos_trace import TraceSpecError, build_trace, load_spec, parse_spec, write_trace
from paths import REPO


def _spec(**kw):
    return parse_spec({"name": "t", "seed": 6, "order": "random", **kw})


@pytest.mark.parametrize("order", ["high_low", "low_high", "random"])
def test_shipped_yaml_builds_the_documents_trace(order, tmp_path):
    spec = load_spec(REPO / "traces/controller" / f"{order}.yaml")
    pcap, side = write_trace(spec, tmp_path)
    frames = read_pcap(pcap)
    meta = json.loads(side.read_text())
    assert len(frames) == 1000
    assert {len(f) for f in frames} == {1514}
    infos = [parse_frame(f) for f in frames]
    assert {len(f) - i.payload_offset for f, i in zip(frames, infos)} == {1448}
    precs = [i.precedence for i in infos]
    assert precs.count(5) == 500 and precs.count(0) == 500
    assert [i.ip_id for i in infos] == list(range(1000))
    assert meta["classes"] == ["high" if p == 5 else "low" for p in precs]
    if order == "high_low":
        assert precs[:500] == [5] * 500
    elif order == "low_high":
        assert precs[:500] == [0] * 500
    else:
        assert 0 < precs[:500].count(5) < 500
    assert len(meta["patterns"]) == 20 and {len(p) for p in meta["patterns"]} == {10}
    assert meta["spec"]["seed"] == 6 and meta["pcap_sha256"]


def test_expected_matches_are_exact():
    spec = _spec(packets_high=15, packets_low=15, pattern_count=5, occurrences=3,
                 match_fraction=0.5)
    frames, meta = build_trace(spec)
    pats = [p.encode() for p in meta["patterns"]]
    for f, want in zip(frames, meta["expected_matches"]):
        assert naive_count(f[parse_frame(f).payload_offset:], pats) == want
    assert 0 < sum(m > 0 for m in meta["expected_matches"]) < 30


def test_same_spec_same_bytes_and_seed_changes_order():
    a, _ = build_trace(_spec(packets_high=20, packets_low=20))
    b, _ = build_trace(_spec(packets_high=20, packets_low=20))
    c, _ = build_trace(_spec(packets_high=20, packets_low=20, seed=7))
    assert a == b and a != c


def test_pattern_sets_are_nested_across_counts():
    _, m1 = build_trace(_spec(packets_high=1, packets_low=1, pattern_count=1))
    _, m50 = build_trace(_spec(packets_high=1, packets_low=1, pattern_count=50))
    assert m50["patterns"][0] == m1["patterns"][0] and len(set(m50["patterns"])) == 50


def test_override_wins(tmp_path):
    spec = load_spec(REPO / "traces/controller/random.yaml", {"pattern_count": 50})
    assert spec.pattern_count == 50


@pytest.mark.parametrize("text,match", [
    ("name: x\nseed: 1\norder: random\nbogus: 3\n", r"bad.yaml:4: bogus: unknown key"),
    ("name: x\nseed: 1\norder: sideways\n", r"bad.yaml:3: order: expected one of high_low, low_high, random, got 'sideways'"),
    ("name: x\norder: random\n", "bad.yaml: seed: required key is missing"),
    ("name: x\nseed: 1\norder: random\npattern_count: 0\n", r"bad.yaml:4: pattern_count: must be in 1..4096, got 0"),
    ("name: x\nseed: 1\norder: random\nhigh_precedence: 8\n", "high_precedence: must be in 0..7, got 8"),
    ("name: x\nseed: 1\norder: random\nmatch_fraction: 1.5\n", r"match_fraction: must be in 0..1, got 1.5"),
    ("name: x\nseed: 1\norder: random\nsrc_ip: 10.0.0\n", "src_ip: expected an IPv4 address, got '10.0.0'"),
    ("name: x\nseed: 1\norder: random\ndst_mac: zz\n", "dst_mac: expected a MAC address"),
    ("name: x\nseed: 1\norder: random\nip_bytes: 60\noccurrences: 9\n", "bad.yaml:5: occurrences: 9 patterns of 10 B do not fit"),
    ("name: a b\nseed: 1\norder: random\n", "bad.yaml:1: name: expected a word of letters"),
    ("- 1\n", "bad.yaml: expected a mapping of keys, got list"),
    ("name: [x\n", "not valid YAML"),
])
def test_bad_yaml_names_the_key(tmp_path, text, match):
    p = tmp_path / "bad.yaml"
    p.write_text(text)
    with pytest.raises(TraceSpecError, match=match):
        load_spec(p)


def test_cli_writes_pcap(tmp_path, capsys):
    from traces.tos_trace import main
    assert main([str(REPO / "traces/controller/high_low.yaml"), "--out", str(tmp_path),
                 "--set", "pattern_count=1"]) == 0
    assert Path(capsys.readouterr().out.strip()).name == "high_low_1pat_s6.pcap"
    bad = tmp_path / "b.yaml"
    bad.write_text("name: x\nseed: 1\norder: up\n")
    assert main([str(bad)]) == 2
