"""Python binding and library behaviour: differential against a pure-Python reference,
ties, deletes, batches, bulk build, and the C test binary (differential + concurrency)."""

import os
import random
import subprocess

import pytest

from dut.classifier import binding
from dut.classifier.binding import Classifier
from dut.classifier.rulefile import parse_rule_text


@pytest.fixture(scope="module", autouse=True)
def _built():
    binding.load()  # fails the module with the path when the library is not built


def ref_lookup(rules, key):
    """rules: list of (id, prio, value, mask, handle) alive; best = max prio, then min id."""
    best = None
    for rid, prio, value, mask, handle in rules:
        if all((k & m) == (v & m) for k, v, m in zip(key, value, mask)):
            if best is None or (prio, -rid) > (best[1], -best[0]):
                best = (rid, prio, handle)
    return (best[2], best[0]) if best else (0, 0)


def _path(simd):
    if not binding.simd_supported(simd):
        pytest.skip(f"this CPU has no {simd}: that path is tested where it has")
    return simd


@pytest.mark.parametrize("simd", binding.SIMD_PATHS)
def test_simd_path_forced_and_reported(simd):
    with Classifier(4, "ours", simd=_path(simd)) as c:
        assert c.simd == simd


def test_simd_path_unknown_or_missing_is_a_clear_error(monkeypatch):
    with pytest.raises(ValueError, match="unknown SIMD path"):
        Classifier(4, simd="sse9")
    monkeypatch.setenv("OFB_CLS_SIMD", "nope")
    with pytest.raises(ValueError, match="ofb_cls_create refused"):
        Classifier(4)


@pytest.mark.parametrize("algo,bands,simd", [("ours", 0, "scalar"), ("ours", 0, "avx2"), ("ours", 0, "avx512"),
                                             ("ours", 4, "scalar"), ("ours", 4, "avx2"), ("ours", 4, "avx512"),
                                             ("ours", 32, None), ("tss", 0, None), ("linear", 0, None)])
@pytest.mark.parametrize("key_len", [4, 13, 40])
def test_differential_against_python_reference(algo, bands, simd, key_len):
    """bands: OURS priority bands (0 = auto = 1 for a classifier filled by inserts);
    simd: OURS' phase-1 path (None = the CPU's best); key_len 40 takes AVX2's gather path,
    key_len 4 the key32 bitmaps (scalar, AVX2)."""
    _differential(algo, bands, simd, key_len)


def _differential(algo, bands, simd, key_len):
    if simd is not None:
        _path(simd)
    rnd = random.Random(key_len * 7 + len(algo) + bands)
    masks = [bytes(rnd.choice([0, 0xFF, rnd.randrange(256)]) if i < 8 or i >= key_len - 8 else 0
                   for i in range(key_len)) for _ in range(12)]  # <= 2 words: the SIMD paths run
    alive = []
    # priorities 0..7 spread over bands 0..65535 would all land in one band: use 0..65535
    # with many repeats so that both ties and several bands occur
    prios = [rnd.randrange(65536) for _ in range(8)]
    with Classifier(key_len, algo, bands=bands, simd=simd) as c:
        for step in range(600):
            op = rnd.random()
            if op < 0.45:
                m = rnd.choice(masks)
                v = bytes(rnd.randrange(256) & b for b in m)
                prio = rnd.choice(prios)  # many equal priorities
                h = step + 1
                rid = c.insert(prio, v, m, h)
                alive.append((rid, prio, v, m, h))
            elif op < 0.6 and alive:
                r = alive.pop(rnd.randrange(len(alive)))
                assert c.delete_id(r[0])
                assert not c.delete_id(r[0])  # second delete fails
            else:
                keys = []
                for _ in range(8):
                    k = bytes(rnd.randrange(256) for _ in range(key_len))
                    if alive and rnd.random() < 0.6:
                        _, _, v, m, _ = rnd.choice(alive)
                        k = bytes((kb & ~mb) | (vb & mb) for kb, vb, mb in zip(k, v, m))
                    keys.append(k)
                want = [ref_lookup(alive, k) for k in keys]
                assert [c.lookup(k) for k in keys] == want
                assert c.lookup_batch(keys) == want
        assert c.stats()["rules"] == len(alive)


@pytest.mark.parametrize("simd", ["scalar", "avx2"])
@pytest.mark.parametrize("sync", ["0", "1"])
@pytest.mark.parametrize("key_len", [4, 13, 40])
def test_dtree_differential_against_python_reference(simd, sync, key_len, monkeypatch):
    """dtree: compiled tree + OURS tables as the delta; the delta is merged into a rebuilt
    tree every 16 rules, on a thread (sync 0, adopted whenever it finishes) or on the
    writer (sync 1); deletes kill rules in the tree.  simd: the tree walk's path."""
    monkeypatch.setenv("OFB_CLS_DTREE_DELTA", "16")
    monkeypatch.setenv("OFB_CLS_DTREE_SYNC", sync)
    _differential("dtree", 0, simd, key_len)


@pytest.mark.parametrize("simd", ["scalar", "avx2"])
@pytest.mark.parametrize("sync", ["0", "1"])
@pytest.mark.parametrize("key_len", [4, 13, 40])
def test_dfa_differential_against_python_reference(simd, sync, key_len, monkeypatch):
    """dfa: dtree with the byte DFA (dfa.h) in front; the same merges every 16 rules; a
    deleted rule the DFA still names sends that key to the tree.  simd: the range step."""
    monkeypatch.setenv("OFB_CLS_DTREE_DELTA", "16")
    monkeypatch.setenv("OFB_CLS_DTREE_SYNC", sync)
    _differential("dfa", 0, simd, key_len)


@pytest.mark.parametrize("groups", ["one", "partitioned"])
@pytest.mark.parametrize("sync", ["0", "1"])
@pytest.mark.parametrize("simd", ["scalar", "avx2", "avx512"])
@pytest.mark.parametrize("shape", ["cb_acl", "cb_fw", "cb_ipc"])
def test_dfa_classbench_like_against_linear(shape, simd, sync, groups, monkeypatch):
    """dfa and dtree on a ClassBench-like set (bulk build: the tree at once, the DFA on the
    rebuild thread (sync 0, adopted at a later publish) or on the writer (sync 1); all rules in
    one DFA, or partitioned into groups and split), against
    linear: hit-heavy and uniform keys, then a fifth of the rules deleted (the DFA names dead
    rules: the tree answers) and new rules inserted (the delta), merged by a rebuild."""
    from traces.rulesets import make

    _path(simd)
    monkeypatch.setenv("OFB_CLS_DTREE_SYNC", sync)
    monkeypatch.setenv("OFB_CLS_DTREE_DELTA", "64")  # the inserts below trigger rebuilds on the writer
    if groups == "partitioned":  # dtree's groups, each split in two while over 1 MiB of build memory
        monkeypatch.setenv("OFB_DFA_GROUPS", "4")
        monkeypatch.setenv("OFB_DFA_GROUP_MB", "1")
    rs = make(shape, 3000, seed=5)
    rules = [(int(p), bytes(v), bytes(m), i + 1) for i, (p, v, m) in
             enumerate(zip(rs.priorities, rs.values, rs.masks))]
    keys = [bytes(k) for k in rs.keys(1500, seed=6)] + [bytes(k) for k in rs.keys(300, seed=7, hit_fraction=0.0)]
    cs = {a: Classifier(rs.key_len, a, simd=simd if a != "linear" else None) for a in ("linear", "dtree", "dfa")}
    try:
        ids = {a: c.build_bulk(rules) for a, c in cs.items()}
        want = cs["linear"].lookup_batch(keys)
        assert sum(1 for h, _ in want if h) > 1000
        for a in ("dtree", "dfa"):
            assert cs[a].lookup_batch(keys) == want, a
            assert [cs[a].lookup(k) for k in keys[:300]] == want[:300], a
        rnd = random.Random(9)
        gone = rnd.sample(range(len(rules)), len(rules) // 5)
        for a, c in cs.items():
            for i in gone:
                assert c.delete_id(ids[a][i])
        extra = rules[:500]  # the same matches again as new (later, so lower-ranked on ties) rules
        for a, c in cs.items():
            for p, v, m, h in extra:
                c.insert(p, v, m, h + 100000)
        want = cs["linear"].lookup_batch(keys)
        for a in ("dtree", "dfa"):
            assert cs[a].lookup_batch(keys) == want, a
            assert [cs[a].lookup(k) for k in keys[:300]] == want[:300], a
    finally:
        for c in cs.values():
            c.close()


def test_dfa_over_its_budget_answers_from_the_tree(monkeypatch):
    """A rule set whose DFA would pass its state budget (here 50 states, in one DFA and
    partitioned) builds the tree alone: the build succeeds and every answer is still right."""
    from traces.rulesets import make

    monkeypatch.setenv("OFB_DFA_MAX_STATES", "50")
    monkeypatch.setenv("OFB_CLS_DFA_BULK_SYNC", "1")
    rs = make("cb_fw", 3000, seed=5)
    rules = [(int(p), bytes(v), bytes(m), i + 1) for i, (p, v, m) in
             enumerate(zip(rs.priorities, rs.values, rs.masks))]
    keys = [bytes(k) for k in rs.keys(500, seed=6)]
    with Classifier(rs.key_len, "linear") as ref, Classifier(rs.key_len, "dfa") as c:
        ref.build_bulk(rules)
        c.build_bulk(rules)
        assert c.lookup_batch(keys) == ref.lookup_batch(keys)


@pytest.mark.parametrize("simd", ["scalar", "avx2", "avx512"])
def test_auto_takes_the_partitioned_dfa_within_its_budget(simd, monkeypatch):
    """A ClassBench-like set whose rules do not fit one DFA: "auto" puts the partitioned DFA
    in front of its tree (it stays within auto's state budget; OFB_CLS_AUTO_DFA=one: the tree
    alone, as before), and answers like linear, batched and one key at a time (the tree), also
    after deletes (the DFA names dead rules: the tree answers) and inserts (the delta)."""
    from traces.rulesets import make

    _path(simd)
    monkeypatch.setenv("OFB_CLS_DFA_BULK_SYNC", "1")
    rs = make("cb_fw", 3000, seed=5)
    rules = [(int(p), bytes(v), bytes(m), i + 1) for i, (p, v, m) in
             enumerate(zip(rs.priorities, rs.values, rs.masks))]
    keys = [bytes(k) for k in rs.keys(1500, seed=6)] + [bytes(k) for k in rs.keys(300, seed=7, hit_fraction=0.0)]
    monkeypatch.setenv("OFB_CLS_AUTO_DFA", "one")
    one = Classifier(rs.key_len, simd=simd)
    monkeypatch.delenv("OFB_CLS_AUTO_DFA")
    cs = {"auto": Classifier(rs.key_len, simd=simd), "one": one, "linear": Classifier(rs.key_len, "linear")}
    try:
        ids = {a: c.build_bulk(rules) for a, c in cs.items()}
        assert cs["auto"].runs == "dtree"
        assert cs["auto"].stats()["bytes"] > 2 * cs["one"].stats()["bytes"]  # the DFA (one: the tree alone)
        want = cs["linear"].lookup_batch(keys)
        assert sum(1 for h, _ in want if h) > 1000
        for a in ("auto", "one"):
            assert cs[a].lookup_batch(keys) == want, a
            assert [cs[a].lookup(k) for k in keys[:300]] == want[:300], a
        gone = random.Random(9).sample(range(len(rules)), len(rules) // 5)
        for a, c in cs.items():
            for i in gone:
                assert c.delete_id(ids[a][i])
            for p, v, m, h in rules[:200]:
                c.insert(p, v, m, h + 100000)
        want = cs["linear"].lookup_batch(keys)
        for a in ("auto", "one"):
            assert cs[a].lookup_batch(keys) == want, a
            assert [cs[a].lookup(k) for k in keys[:300]] == want[:300], a
    finally:
        for c in cs.values():
            c.close()


@pytest.mark.parametrize("algo", ["ours", "tss", "linear", "htrie", "sptrie", "hybrid", "dtree", "dfa", "keymap",
                                  "kscan"])
def test_ties_earlier_insert_wins_and_delete_by_value(algo):
    with Classifier(4, algo) as c:
        a = c.insert(5, b"\x0a\x00\x00\x00", b"\xff\x00\x00\x00", 111)
        b = c.insert(5, b"\x00\x00\x00\x01", b"\x00\x00\x00\xff", 222)
        key = b"\x0a\x00\x00\x01"
        assert c.lookup(key) == (111, a)
        assert c.delete(5, b"\x0a\x00\x00\x00", b"\xff\x00\x00\x00") == a
        assert c.lookup(key) == (222, b)
        assert c.delete(5, b"\x0a\x00\x00\x00", b"\xff\x00\x00\x00") == 0  # gone
        assert c.lookup(b"\x0b\x00\x00\x02") == (0, 0)


def test_bulk_build_batch_and_rulefile():
    rf = parse_rule_text("""fields ip:32 port:16
        100 ip=10.0.0.0/8 port=80 -> web
        50 ip=10.1.0.0/16 -> ten-one
        1 -> default
    """)
    with Classifier(rf.key_len, "ours") as c:
        ids = c.build_bulk([(r.priority, r.value, r.mask, i + 1) for i, r in enumerate(rf.rules)])
        assert ids == [1, 2, 3]
        assert c.lookup(bytes([10, 1, 2, 3, 0, 80]))[0] == 1
        assert c.lookup(bytes([10, 1, 2, 3, 0, 81]))[0] == 2
        assert c.lookup(bytes([11, 1, 2, 3, 0, 81]))[0] == 3
        with c.batch():
            c.delete_id(3)
            c.insert(2, bytes(6), bytes(6), 9)
        assert c.lookup(bytes([11, 1, 2, 3, 0, 81])) == (9, 4)
        st = c.stats()
        assert st["rules"] == 3 and st["pending_removals"] == 0 and st["bytes"] > 0


@pytest.mark.parametrize("key_len,runs", [(1, "ours"), (4, "ours"), (5, "dtree"), (13, "dtree"),
                                          (16, "dtree"), (17, "ours"), (128, "ours")])
def test_default_is_auto_and_resolves_by_key_shape(key_len, runs):
    """The default ("auto") runs the compiled tree for 5-tuple-like keys and OURS for
    document 003's 4-byte keys and the switch's long OpenFlow keys; it answers like LINEAR."""
    from dut.classifier.binding import algo_for_key
    assert algo_for_key(key_len) == runs
    rnd = random.Random(key_len)
    rules = []
    for i in range(300):
        care = min(0.75, 6 / key_len)  # a few matched bytes, as OpenFlow matches are
        m = bytes(rnd.choice((0xff, 0xf0)) if rnd.random() < care else 0 for _ in range(key_len))
        v = bytes(rnd.randrange(4) & b for b in m)
        rules.append((rnd.randrange(50), v, m, i + 1))
    keys = [bytes(rnd.randrange(4) for _ in range(key_len)) for _ in range(400)]
    with Classifier(key_len) as c, Classifier(key_len, "linear") as ref:
        assert (c.algo, c.runs) == ("auto", runs)
        c.build_bulk(rules)
        ref.build_bulk(rules)
        want = ref.lookup_batch(keys)
        assert sum(1 for h, _ in want if h) > 50
        assert c.lookup_batch(keys) == want
        assert [c.lookup(k) for k in keys] == want


@pytest.mark.parametrize("kind,runs", [("cb_acl", "dtree"), ("cb_fw", "dtree"), ("random8", "ours")])
def test_auto_keeps_ours_for_arbitrary_masks(kind, runs):
    """At its first bulk build "auto" looks at the masks: prefix-shaped bytes (ClassBench-like
    prefixes and port ranges) keep the tree; arbitrary masks on an 8-byte key go to OURS."""
    from traces.rulesets import make
    if kind == "random8":
        rnd = random.Random(8)
        masks = [bytes(rnd.randrange(256) | rnd.randrange(256) for _ in range(8)) for _ in range(2000)]
        rules = [(rnd.randrange(1000), bytes(rnd.randrange(256) & b for b in m), m, i + 1)
                 for i, m in enumerate(masks)]
        key_len = 8
        keys = [bytes(rnd.randrange(256) for _ in range(8)) for _ in range(300)]
        keys += [bytes(v) for _, v, _, _ in rules[:300]]
    else:
        rs = make(kind, 2000, seed=5)
        rules = [(int(p), bytes(v), bytes(m), i + 1) for i, (p, v, m) in
                 enumerate(zip(rs.priorities, rs.values, rs.masks))]
        key_len = rs.key_len
        keys = [bytes(k) for k in rs.keys(600, seed=6)]
    with Classifier(key_len) as c, Classifier(key_len, "linear") as ref:
        assert c.runs == "dtree"  # by key length, until the rules are seen
        c.build_bulk(rules)
        ref.build_bulk(rules)
        assert c.runs == runs
        assert c.lookup_batch(keys) == ref.lookup_batch(keys)
        c.insert(5000, bytes(key_len), bytes(key_len), 99999)  # later changes keep the choice
        assert c.runs == runs and c.lookup(bytes(key_len))[0] == 99999


def test_bad_params():
    with pytest.raises(ValueError):
        Classifier(0)
    with pytest.raises(ValueError):
        Classifier(129)
    with pytest.raises(ValueError):
        Classifier(4, "trie")
    with Classifier(4) as c, pytest.raises(ValueError):
        c.lookup(b"\x00")


@pytest.mark.parametrize("simd", binding.SIMD_PATHS)
def test_c_differential_and_concurrency_binary(simd):
    _path(simd)
    exe = binding.build_dir() / "dut" / "classifier" / "cls-test"
    r = subprocess.run([str(exe), "--quick"], capture_output=True, text=True, timeout=300,
                       env={**os.environ, "OFB_CLS_SIMD": simd})
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"simd path: {simd}" in r.stdout
    assert "differential: 0 failures" in r.stdout and r.stdout.strip().endswith("OK")


@pytest.mark.parametrize("simd", ["scalar", "avx2"])
def test_key32_bitmaps_off_still_matches_the_reference(monkeypatch, simd):
    """OFB_CLS_KEY32=0 (the measurement switch): 4-byte keys take the generic phase 1 again"""
    monkeypatch.setenv("OFB_CLS_KEY32", "0")
    _differential("ours", 0, simd, 4)


@pytest.mark.parametrize("simd", ["scalar", "avx2"])
@pytest.mark.parametrize("maxg,bpe,k", [("4", "12", "3"), ("8", "2", "4")])
def test_grouped_line_filter_matches_the_reference(monkeypatch, simd, maxg, bpe, k):
    """4-byte keys with the grouped line filter from the first rule on (OFB_CLS_GF_MIN=1; it
    needs 1024 rules otherwise), regrouped as the rules grow and churn; the second set makes
    the lines tiny (saturated), 8 masks a group and 4 bits a probe"""
    monkeypatch.setenv("OFB_CLS_GF_MIN", "1")
    monkeypatch.setenv("OFB_CLS_GF_MAXG", maxg)
    monkeypatch.setenv("OFB_CLS_GF_BPE", bpe)
    monkeypatch.setenv("OFB_CLS_GF_K", k)
    _differential("ours", 0, simd, 4)


def test_c_differential_tries_binary():
    """htrie/sptrie/hybrid against linear (and ours/tss) in C; the SP-Trie refuses cleanly
    what exceeds its limit (never runs the box out of memory)."""
    exe = binding.build_dir() / "dut" / "classifier" / "cls-test"
    r = subprocess.run([str(exe), "--quick", "--tries"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "differential: 0 failures" in r.stdout and r.stdout.strip().endswith("OK")


@pytest.mark.parametrize("algo,asked,used", [("ours", 8, 8), ("ours", 5, 4), ("ours", 100, 32),
                                              ("ours", 0, 1), ("tss", 8, 1)])
def test_bands_parameter_rounds_down_to_power_of_two(algo, asked, used):
    with Classifier(4, algo, bands=asked) as c:
        c.insert(1, b"\x01\x00\x00\x00", b"\xff\x00\x00\x00", 1)
        assert c.stats()["bands"] == used


@pytest.mark.parametrize("algo,budget", [("htrie", 0), ("sptrie", 0), ("hybrid", 0), ("hybrid", 1 << 14),
                                         ("hybrid", 1 << 30)])
def test_tries_differential_against_python_reference(algo, budget):
    """document 003's tries behind the API: inserts, deletes, batches, ties, vs the reference"""
    rnd = random.Random(budget + len(algo))
    masks = [bytes(rnd.choice([0, 0xFF, rnd.randrange(256)]) for _ in range(4)) for _ in range(10)]
    alive = []
    with Classifier(4, algo, mem_budget_bytes=budget) as c:
        with c.batch():
            for h in range(1, 101):
                m = rnd.choice(masks)
                v = bytes(rnd.randrange(256) & b for b in m)
                prio = rnd.randrange(20)
                alive.append((c.insert(prio, v, m, h), prio, v, m, h))
        for step in range(60):
            if rnd.random() < 0.3 and alive:
                r = alive.pop(rnd.randrange(len(alive)))
                assert c.delete_id(r[0])
            elif rnd.random() < 0.5:
                m = rnd.choice(masks)
                v = bytes(rnd.randrange(256) & b for b in m)
                prio = rnd.randrange(20)
                alive.append((c.insert(prio, v, m, 1000 + step), prio, v, m, 1000 + step))
            keys = [bytes(rnd.randrange(256) for _ in range(4)) for _ in range(10)]
            keys += [bytes((kb & ~mb) | (vb & mb) for kb, vb, mb in zip(keys[i], r[2], r[3]))
                     for i, r in enumerate(rnd.sample(alive, min(10, len(alive))))]
            want = [ref_lookup(alive, k) for k in keys]
            assert [c.lookup(k) for k in keys] == want
            assert c.lookup_batch(keys) == want


def test_sptrie_over_its_limit_fails_with_a_message_and_keeps_the_table():
    rnd = random.Random(5)
    rules = []
    for h in range(1, 3001):  # rand()|rand()-like masks: the set-pruning trie explodes
        m = bytes(rnd.randrange(256) | rnd.randrange(256) for _ in range(4))
        rules.append((rnd.randrange(65536), bytes(rnd.randrange(256) & b for b in m), m, h))
    with Classifier(4, "sptrie", mem_budget_bytes=1 << 20) as c:
        first = c.insert(1, b"\x01\x00\x00\x00", b"\xff\x00\x00\x00", 7)
        with pytest.raises(MemoryError, match="sptrie: the set-pruning trie of .* memory limit"):
            c.build_bulk(rules)
        assert c.lookup(b"\x01\x02\x03\x04") == (7, first)  # what was there still works
        assert c.stats()["rules"] == 1
    with Classifier(4, "hybrid", mem_budget_bytes=1 << 20) as c:  # the hybrid stays within budget
        c.build_bulk(rules)
        assert c.stats()["rules"] == 3000


@pytest.mark.parametrize("budget", [0, 1 << 14, 1 << 30])
def test_louds_matches_the_reference_and_refuses_updates(budget):
    """The hybrid trie in LOUDS layout: one bulk build, lookups as the reference (and as the
    DA+vEB layout of the same trie), every update refused with a message naming it."""
    rnd = random.Random(budget + 11)
    masks = [bytes(rnd.choice([0, 0xFF, rnd.randrange(256)]) for _ in range(4)) for _ in range(12)]
    rules = []
    for h in range(1, 301):
        m = rnd.choice(masks)
        rules.append((rnd.randrange(50), bytes(rnd.randrange(256) & b for b in m), m, h))
    with Classifier(4, "louds", mem_budget_bytes=budget) as c, \
            Classifier(4, "hybrid", mem_budget_bytes=budget) as d:
        ids = c.build_bulk(rules)
        assert d.build_bulk(rules) == ids
        alive = [(i, *r) for i, r in zip(ids, rules)]
        keys = [bytes(rnd.randrange(256) for _ in range(4)) for _ in range(200)]
        keys += [bytes((kb & ~mb) | (vb & mb) for kb, vb, mb in zip(keys[i], r[2], r[3]))
                 for i, r in enumerate(rnd.sample(alive, 100))]
        want = [ref_lookup(alive, k) for k in keys]
        assert [c.lookup(k) for k in keys] == want
        assert c.lookup_batch(keys) == want == d.lookup_batch(keys)
        with pytest.raises(binding.ReadOnlyError, match="louds: insert refused: the LOUDS trie is read-only"):
            c.insert(1, b"\x01\x00\x00\x00", b"\xff\x00\x00\x00", 9)
        with pytest.raises(binding.ReadOnlyError, match="louds: delete refused"):
            c.delete_id(ids[0])
        with pytest.raises(binding.ReadOnlyError, match="read-only"):
            c.delete(*rules[0][:3])
        with pytest.raises(binding.ReadOnlyError, match="second build"):
            c.build_bulk(rules[:1])
        assert c.lookup_batch(keys) == want and c.stats()["rules"] == 300


def _masked_set(rnd, key_len, *, masks, rules, prio, keys, in_rules):
    """(rules, keys): ``rules`` rules (priority < prio, ids 1..) over ``masks`` random masks of
    key_len bytes, then ``keys`` random keys and one key inside each of the first in_rules rules."""
    ms = [bytes(rnd.randrange(256) | rnd.randrange(256) for _ in range(key_len)) for _ in range(masks)]
    rs = []
    for i in range(rules):
        m = rnd.choice(ms)
        rs.append((rnd.randrange(prio), bytes(rnd.randrange(256) & b for b in m), m, i + 1))
    ks = [bytes(rnd.randrange(256) for _ in range(key_len)) for _ in range(keys)]
    ks += [bytes(v[j] | (rnd.randrange(256) & ~m[j] & 0xFF) for j in range(key_len))
           for _, v, m, _ in rs[:in_rules]]
    return rs, ks


def test_keymap_answers_like_linear_with_its_map_rebuilt_at_each_update(monkeypatch):
    """keymap: the key-space map (keymap.h) in front of OURS; OFB_CLS_KEYMAP_SYNC=1 rebuilds it
    at every publish, so each lookup after an update asks a fresh map (a 3-byte key: 16 MiB)."""
    monkeypatch.setenv("OFB_CLS_KEYMAP_SYNC", "1")
    rules, keys = _masked_set(random.Random(19), 3, masks=6, rules=200, prio=100, keys=300,
                              in_rules=100)
    with Classifier(3, "keymap") as c, Classifier(3, "linear") as ref:
        assert c.runs == "keymap"
        c.build_bulk(rules)
        ref.build_bulk(rules)
        assert c.lib.ofb_cls_trie_bytes(c._c) >= 1 << 24   # the map answers
        assert c.lookup_batch(keys) == ref.lookup_batch(keys)
        assert sum(1 for h, _ in ref.lookup_batch(keys) if h) >= 100
        for i in range(0, 60, 3):
            c.delete_id(i + 1)
            ref.delete_id(i + 1)
            p, v, m, _ = rules[i + 1]
            assert c.insert(p + 1, v, m, 1000 + i) == ref.insert(p + 1, v, m, 1000 + i)
            assert [c.lookup(k) for k in keys[::7]] == [ref.lookup(k) for k in keys[::7]]
        assert c.lookup_batch(keys) == ref.lookup_batch(keys)


def test_kscan_answers_like_linear_with_its_blocks_rebuilt_at_each_update(monkeypatch):
    """kscan: the key-block scan (kscan.h) in front of OURS, rebuilt as keymap's map; 4-byte keys
    over every SIMD path this CPU has; a budget per rule that a set of 300 rules fits."""
    monkeypatch.setenv("OFB_CLS_KEYMAP_SYNC", "1")
    monkeypatch.setenv("OFB_KSCAN_BYTES_PER_RULE", "200000")
    rules, keys = _masked_set(random.Random(42), 4, masks=20, rules=300, prio=50, keys=200,
                              in_rules=150)
    for simd in [p for p in binding.SIMD_PATHS if binding.simd_supported(p)]:
        with Classifier(4, "kscan", simd=simd) as c, Classifier(4, "linear") as ref:
            assert c.runs == "kscan"
            c.build_bulk(rules)
            ref.build_bulk(rules)
            assert c.lib.ofb_cls_trie_bytes(c._c) > 0, c.last_error()   # the blocks answer
            assert c.lookup_batch(keys) == ref.lookup_batch(keys)
            assert [c.lookup(k) for k in keys] == [ref.lookup(k) for k in keys]
            assert sum(1 for h, _ in ref.lookup_batch(keys) if h) >= 100
            for i in range(0, 30, 3):
                c.delete_id(i + 1)
                ref.delete_id(i + 1)
                p, v, m, _ = rules[i + 1]
                assert c.insert(p + 1, v, m, 1000 + i) == ref.insert(p + 1, v, m, 1000 + i)
                assert [c.lookup(k) for k in keys[::7]] == [ref.lookup(k) for k in keys[::7]]
            assert c.lookup_batch(keys) == ref.lookup_batch(keys)


def test_keymap_refuses_long_keys_and_says_why_it_has_no_map():
    with pytest.raises(ValueError, match="ofb_cls_create refused key_len=5 algo=keymap"):
        Classifier(5, "keymap")
    with Classifier(4, "keymap") as c:   # 32 cared-for bits: 2^32 bytes, over the map's limit
        c.build_bulk([(3, b"\x01\x02\x03\x04", b"\xff\xff\xff\xff", 7), (2, bytes(4), b"\x80\x00\x00\x01", 8)])
        assert "keymap: the rules care about 32 key bits" in c.last_error()
        assert c.lookup(b"\x01\x02\x03\x04") == (7, 1)   # OURS answers
