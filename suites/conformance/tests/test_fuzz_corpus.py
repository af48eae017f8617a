"""The agent fuzzer's committed seed corpus (dut/switch/fuzz/corpus) is exactly what
suites/conformance/fuzz_corpus.py writes today: regenerate it after changing a case."""
from __future__ import annotations

import pytest

from suites.conformance import fuzz_corpus, negative_cases as nc

pytestmark = pytest.mark.quick


def test_committed_corpus_is_current(tmp_path):
    n = fuzz_corpus.write(tmp_path)
    fresh = {p.name: p.read_bytes() for p in tmp_path.glob("*.bin")}
    committed = {p.name: p.read_bytes() for p in fuzz_corpus.DEFAULT_DIR.glob("*.bin")}
    assert len(fresh) == n
    stale = sorted(set(fresh) ^ set(committed)) + \
        sorted(k for k in fresh.keys() & committed.keys() if fresh[k] != committed[k])
    assert not stale, (f"{len(stale)} seeds differ (first {stale[:5]}): run "
                       "python -m suites.conformance.fuzz_corpus")


def test_every_negative_case_and_tool_case_has_a_seed():
    names = {p.name for p in fuzz_corpus.DEFAULT_DIR.glob("*.bin")}
    assert all(f"neg-{c.name}.bin" in names for c in nc.catalogue())
    assert sum(n.startswith("of13-") for n in names) >= 900   # os-ken's of13 set: 991 cases


def test_seed_is_a_framed_stream():
    """Each seed is whole OpenFlow messages back to back, as one connection carries them."""
    for name, data in list(fuzz_corpus.negative_seeds().items())[:20] + \
            [("session.bin", fuzz_corpus.session_seed())]:
        o = 0
        while o < len(data):
            ml = int.from_bytes(data[o + 2:o + 4], "big")
            if ml < 8:   # header_len_below_8: unframeable on purpose
                break
            o += ml
        assert o == len(data) or ml < 8, name
