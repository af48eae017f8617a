"""Rule-set generators: reproducible from a seed, the promised shapes, keys that hit."""

import numpy as np
import pytest

from traces import rulesets as R


@pytest.mark.parametrize("kind", R.KINDS)
def test_reproducible_and_sized(kind, tmp_path):
    a, b = R.make(kind, 3000, seed=11), R.make(kind, 3000, seed=11)
    c = R.make(kind, 3000, seed=12)
    assert np.array_equal(a.values, b.values) and np.array_equal(a.masks, b.masks)
    assert np.array_equal(a.priorities, b.priorities)
    assert not np.array_equal(a.values, c.values)
    assert len(a) == 3000
    assert np.all((a.values & ~a.masks) == 0)  # values are masked
    both = np.concatenate([a.masks, a.values], axis=1)
    assert len(np.unique(both, axis=0)) == len(a)  # no duplicate (mask, value)
    ka, kb = a.keys(500, seed=3), b.keys(500, seed=3)
    assert np.array_equal(ka, kb) and ka.shape == (500, a.key_len)
    rp, kp = a.write_rules(tmp_path / "r.bin"), R.write_keys(tmp_path / "k.bin", ka)
    assert rp.stat().st_size == 12 + len(a) * (4 + 2 * a.key_len)
    assert kp.read_bytes()[:4] == b"OFBK"


def test_ntt_shape():
    rs = R.ntt(20000, seed=1)
    assert rs.key_len == 4 and rs.distinct_masks() == 100
    assert rs.priorities.max() < 65536


@pytest.mark.parametrize("kind", ["of", "cb_acl", "cb_fw", "cb_ipc"])
def test_structured_keys_hit_rules(kind):
    rs = R.make(kind, 2000, seed=5)
    keys = rs.keys(200, seed=9)
    hits = sum(R.best_rule(rs, k) >= 0 for k in keys)
    assert hits >= 150  # default hit_fraction 0.9


def test_classbench_first_match_priorities_and_prefix_masks():
    rs = R.classbench(2000, seed=2, shape="fw")
    assert len(set(rs.priorities.tolist())) == len(rs)  # unique: first match order
    for f in rs.fields[1:3]:  # src/dst: prefix masks only
        m = rs.masks[:, f.offset:f.offset + 4].astype(np.uint64)
        w = (m[:, 0] << 24) | (m[:, 1] << 16) | (m[:, 2] << 8) | m[:, 3]
        inv = (~w) & 0xFFFFFFFF
        assert np.all((inv & (inv + 1)) == 0)


@pytest.mark.parametrize("lo,hi", [(0, 65535), (1024, 65535), (0, 1023), (80, 80), (6000, 6063), (1, 65534), (135, 139)])
def test_range_to_prefixes_covers_exactly(lo, hi):
    pre = R.range_to_prefixes(lo, hi)
    covered = set()
    for v, ln in pre:
        size = 1 << (16 - ln)
        assert v % size == 0
        covered.update(range(v, v + size))
    assert covered == set(range(lo, hi + 1))
    assert len(pre) <= 30


def test_bad_kind_and_range():
    with pytest.raises(ValueError, match="unknown rule-set kind"):
        R.make("nope", 10)
    with pytest.raises(ValueError, match="shape"):
        R.classbench(10, 1, "xx")
    with pytest.raises(ValueError):
        R.range_to_prefixes(5, 4)
