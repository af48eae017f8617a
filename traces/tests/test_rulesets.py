"""Rule-set generators: reproducible from a seed, the promised shapes, keys that hit."""

import ctypes

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


def test_ntt_half_shape():
    rs = R.ntt_half(20000, seed=1)
    assert rs.key_len == 4 and rs.distinct_masks() == 100
    assert rs.priorities.max() < 65536


def _libc():
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.gnu_get_libc_version.restype = ctypes.c_char_p
        libc.gnu_get_libc_version()
        return libc
    except (OSError, AttributeError):
        return None


@pytest.mark.parametrize("seed", [1, 2, 0, 12345, 4_000_000_000])
def test_glibc_rand_is_the_c_librarys(seed):
    libc = _libc()
    if libc is None:
        pytest.skip("no glibc here to compare with")
    libc.srand(ctypes.c_uint(seed))
    want = [libc.rand() for _ in range(2000)]
    assert R.glibc_rand(seed, 2000) == want


def test_ntt_is_slide_19():
    """masks = rand()|rand() (31-bit), value = rand() & mask, priority = rand() & 0xffff,
    keys = rand(): checked against the stream itself."""
    rs = R.ntt(5000, seed=7, n_masks=100)
    st = R.glibc_rand(7, 2 * 100 + 3 * 5000 + 64)
    masks = [st[2 * i] | st[2 * i + 1] for i in range(100)]  # no repeats at 31 bits, p = 3/4
    assert rs.distinct_masks() == 100
    w = lambda row: int.from_bytes(bytes(row), "big")  # noqa: E731
    rest = st[200:]
    for j in range(50):  # no duplicate is likely among the first rules: they are draws 0..49
        m = masks[rest[3 * j] % 100]
        assert w(rs.masks[j]) == m
        assert w(rs.values[j]) == rest[3 * j + 1] & m
        assert rs.priorities[j] == rest[3 * j + 2] & 0xFFFF
    m32 = (rs.masks[:, 0].astype(np.uint32) << 24)
    assert np.all(m32 < (1 << 31))  # bit 31 is never set: rand() has 31 bits
    bits = np.unpackbits(rs.masks, axis=1).sum(axis=1)
    assert 22.5 < bits.mean() < 24.0  # 31 x 3/4 = 23.25
    keys = rs.keys(100, seed=3)
    assert [w(k) for k in keys] == R.glibc_rand(3, 100)


@pytest.mark.parametrize("n_masks", [10, 1000])
def test_ntt_mask_counts(n_masks):
    rs = R.make("ntt", 20000, seed=1, n_masks=n_masks)  # every mask drawn (e^-20 chance each not)
    assert rs.distinct_masks() == n_masks and len(rs) == 20000


def test_ntt_hit_heavy_keys_hit_and_uniform_mostly_miss():
    rs = R.ntt(20000, seed=1)
    hit = rs.keys(200, seed=4, hit_fraction=1.0)
    assert all(R.best_rule(rs, k) >= 0 for k in hit)
    uni = rs.keys(200, seed=4)
    assert sum(R.best_rule(rs, k) >= 0 for k in uni) < 20  # 20000 x 0.625^31 ~ 0.01 per key
    with pytest.raises(ValueError, match="hit_fraction"):
        rs.keys(10, seed=1, hit_fraction=1.5)


@pytest.mark.parametrize("kind", ["of", "cb_acl", "cb_fw", "cb_ipc"])
def test_structured_keys_hit_rules(kind):
    rs = R.make(kind, 2000, seed=5)
    keys = rs.keys(200, seed=9)
    hits = sum(R.best_rule(rs, k) >= 0 for k in keys)
    assert hits >= 150  # default hit_fraction 0.9


@pytest.mark.parametrize("shape", ["acl", "fw", "ipc"])
def test_classbench_specific_rules_first_and_none_shadowed(shape):
    """Priority by specificity: care bits never grow towards lower priority, and hit keys
    drawn from random rules are answered by many different rules (in generation order one
    early full wildcard answered nearly every key of cb_fw)."""
    rs = R.classbench(2000, seed=3, shape=shape)
    order = np.argsort(-rs.priorities.astype(np.int64))
    care = np.unpackbits(rs.masks[order], axis=1).sum(axis=1).astype(np.int64)
    assert np.all(np.diff(care) <= 0)
    answers = {R.best_rule(rs, k) for k in rs.keys(300, seed=4, hit_fraction=1.0)}
    assert len(answers) >= 200


def test_classbench_unique_priorities_and_prefix_masks():
    rs = R.classbench(2000, seed=2, shape="fw")
    assert len(set(rs.priorities.tolist())) == len(rs)  # unique: a total order
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
    with pytest.raises(ValueError, match="n_masks"):
        R.ntt(10, 1, n_masks=0)
