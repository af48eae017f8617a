"""Matchers: the naive reference on known cases, C matchers differentially against it."""
import random
import threading
import time

import pytest

from dut.controller import matching
from dut.controller.matching import MatcherError, make_matcher, naive_count


def _lib_or_skip():
    try:
        matching.load_library()
    except MatcherError as e:
        pytest.skip(str(e))


def test_naive_counts_overlapping_and_duplicate_patterns():
    assert naive_count(b"aaaa", [b"aa"]) == 3
    assert naive_count(b"abcabc", [b"abc", b"abc"]) == 4
    assert naive_count(b"abc", [b"abcd"]) == 0
    assert naive_count(b"", [b"a"]) == 0
    assert naive_count(b"xxABCDEFGHIJxx", [b"ABCDEFGHIJ", b"ZZ"]) == 1


@pytest.mark.parametrize("kind", ["naive_c", "aho_corasick"])
def test_c_matchers_agree_with_naive_on_random_inputs(kind):
    _lib_or_skip()
    rnd = random.Random(6)
    for trial in range(150):
        alphabet = rnd.choice([b"ab", b"abc", bytes(range(256))])
        pats = [bytes(rnd.choice(alphabet) for _ in range(rnd.randint(1, 6)))
                for _ in range(rnd.randint(1, 8))]
        text = bytes(rnd.choice(alphabet) for _ in range(rnd.randint(0, 300)))
        m = make_matcher(kind, pats)
        try:
            assert m.count(text) == naive_count(text, pats), (trial, pats, text)
        finally:
            m.close()


def test_aho_corasick_state_count_is_trie_size():
    _lib_or_skip()
    m = make_matcher("aho_corasick", [b"he", b"she", b"his", b"hers"])
    assert m.states == 10  # root + h,e,r,s + s,h,e + i,s
    assert m.count(b"ushers") == 3  # she, he, hers
    m.close()


def test_c_matcher_accepts_bytearray_payload():
    _lib_or_skip()
    m = make_matcher("aho_corasick", [b"ab"])
    assert m.count(bytearray(b"abab")) == 2
    m.close()


def test_bad_matcher_arguments_are_rejected():
    with pytest.raises(MatcherError, match="unknown matcher 'boyer'"):
        make_matcher("boyer", [b"x"])
    with pytest.raises(MatcherError, match="at least one pattern"):
        make_matcher("naive", [])
    with pytest.raises(MatcherError, match="empty pattern"):
        make_matcher("naive", [b""])


def test_missing_library_names_the_path(monkeypatch, tmp_path):
    monkeypatch.setattr(matching, "_lib", None)
    monkeypatch.setenv("OFBENCH_BUILD_DIR", str(tmp_path))
    with pytest.raises(MatcherError, match="libofbsearch.so not found"):
        make_matcher("aho_corasick", [b"x"])


def test_c_matcher_releases_the_gil():
    """A Python thread keeps running while another thread is inside a long C search."""
    _lib_or_skip()
    m = make_matcher("naive_c", [bytes([i % 7]) * 9 + b"\xff" for i in range(64)])
    text = bytes(8) * 400_000  # ~3.2 MB: tens of ms of brute force in one call
    ticks = []
    stop = threading.Event()

    def ticker():
        while not stop.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.001)

    t = threading.Thread(target=ticker)
    t.start()
    try:
        time.sleep(0.005)
        before = len(ticks)
        t0 = time.perf_counter()
        m.count(text)
        dt = time.perf_counter() - t0
        during = len(ticks) - before
    finally:
        stop.set()
        t.join()
    # Holding the GIL for dt would allow at most ~1 tick (the 5 ms switch interval forces a
    # hand-over, but the C call never offers one); released, the ticker runs ~dt/1 ms times.
    if dt > 0.02:
        assert during >= 3, (dt, during)
