"""traces.classbench_sets: the public ClassBench set loads, checked against its provenance, and
expands as its provenance says."""

import numpy as np
import pytest

from traces import classbench_sets as cs
from traces import rulesets


def test_acl1_loads_and_matches_provenance():
    prov = cs.provenance("acl1_20000")
    rs = cs.load("acl1_20000")
    assert rs.params["filters"] == prov["lines"] == 2572
    assert len(rs) == rs.params["rules"] == 3937
    assert rs.key_len == rulesets.CB_KEY_LEN
    assert (rs.values & ~rs.masks).sum() == 0           # values masked
    assert rs.priorities[0] == 2572 and rs.priorities[-1] == 1   # first filter highest


def test_expansion_of_one_filter(tmp_path):
    f = tmp_path / "one.txt"
    f.write_text("@10.0.0.0/8\t192.168.1.7/32\t0 : 65535\t1025 : 65535\t0x06/0xFF\t0x1000/0x1000\t\n"
                 "@0.0.0.0/0\t0.0.0.0/0\t0 : 65535\t0 : 65535\t0x00/0x00\t0x0000/0x0000\t\n")
    rs = cs.to_ruleset(cs.parse(f), "one")
    dport = rulesets.range_to_prefixes(1025, 65535)
    assert len(rs) == len(dport) + 1                      # sport 0:65535 is one prefix
    first = rs.values[0]
    assert list(first[:9]) == [6, 10, 0, 0, 0, 192, 168, 1, 7]
    assert list(rs.masks[0][:9]) == [0xFF, 0xFF, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF]
    assert (rs.masks[-1] == 0).all() and rs.priorities[-1] == 1
    keys = rs.keys(256, 3, hit_fraction=1.0)             # every key inside some filter
    assert all(rulesets.matches(rs, k).any() for k in keys)
    assert isinstance(keys, np.ndarray)


def test_bad_line_names_file_and_line(tmp_path):
    f = tmp_path / "bad.txt"
    f.write_text("@10.0.0.0/8\t1.2.3.4/32\t0 : 65535\t0 : 65535\t0x06/0xFF\t0x0000/0x0000\t\n@300.0.0.0/8 oops\n")
    with pytest.raises(cs.ClassBenchError, match=r"bad\.txt:2: not a ClassBench filter line"):
        cs.parse(f)
    f.write_text("@10.0.0.0/8\t1.2.3.4/32\t0 : 65535\t9 : 3\t0x06/0xFF\t0x0000/0x0000\t\n")
    with pytest.raises(cs.ClassBenchError, match=r"bad\.txt:1: bad port range"):
        cs.parse(f)


def test_changed_file_is_refused(tmp_path, monkeypatch):
    d = tmp_path / "classbench"
    d.mkdir()
    (d / "acl1_20000.txt").write_bytes((cs.DIR / "acl1_20000.txt").read_bytes() + b"\n")
    (d / "acl1_20000.provenance.yaml").write_text((cs.DIR / "acl1_20000.provenance.yaml").read_text())
    monkeypatch.setattr(cs, "DIR", d)
    with pytest.raises(cs.ClassBenchError, match="sha256"):
        cs.load("acl1_20000")
    with pytest.raises(cs.ClassBenchError, match="unknown public ClassBench set"):
        cs.load("fw9")
