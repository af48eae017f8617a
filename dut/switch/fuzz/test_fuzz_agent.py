"""The agent's libFuzzer harness (fuzz_agent.c, README "Fuzzing") in `make test`, in the
sanitizer build (ASan + UBSan, no recovery): every committed seed and reproducer replayed under
both lookup backends, then a short coverage-guided run (OFBENCH_FUZZ_SECONDS, default 60 s).
Zero findings is the bar: a finding is fixed in the C code and its input added to regress/."""
from __future__ import annotations

import os

import pytest

from dut.switch.fuzz import fuzzer

SAMPLE_LOG = """INFO: seed corpus: files: 1112 min: 8b max: 1940b total: 584233b rss: 72Mb
#1198	INITED cov: 1405 ft: 2554 corp: 297/104Kb exec/s: 1198 rss: 143Mb
#317939	DONE   cov: 1819 ft: 4952 corp: 1114/537Kb lim: 2105 exec/s: 2627 rss: 463Mb
Done 317939 runs in 121 second(s)
stat::number_of_executed_units: 317939
stat::average_exec_per_sec:     2627
stat::new_units_added:          1914
stat::slowest_unit_time_sec:    0
stat::peak_rss_mb:              463
"""


def test_parse_reads_final_stats():
    r = fuzzer.parse(SAMPLE_LOG, fuzzer.FuzzRun(121, "trie", 0))
    assert (r.execs, r.execs_per_s, r.cov_edges, r.features, r.corpus_units, r.new_units,
            r.peak_rss_mb) == (317939, 2627, 1819, 4952, 1114, 1914, 463)
    assert r.clean and not r.reports


def test_parse_sees_sanitizer_reports():
    log = SAMPLE_LOG + "x.c:3:1: runtime error: load of misaligned address\n"
    r = fuzzer.parse(log, fuzzer.FuzzRun(1, "trie", 0))
    assert not r.clean and r.reports == ["runtime error:"]


def _need_binary():
    if not fuzzer.binary().exists():
        pytest.skip(f"{fuzzer.binary()} not built: scripts/build_san.sh (make setup runs it)")


def test_seed_corpus_and_reproducers_exist():
    assert len(list(fuzzer.CORPUS.glob("*.bin"))) > 1000, \
        "seed corpus missing: python -m suites.conformance.fuzz_corpus"
    assert any(fuzzer.REGRESS.iterdir())


@pytest.mark.parametrize("lookup", fuzzer.LOOKUPS)
def test_seeds_and_reproducers_replay_clean(lookup):
    _need_binary()
    files = fuzzer.seed_files()
    r = fuzzer.replay(files, lookup)
    assert r.clean, r.summary() + "\n" + r.log_tail
    assert r.execs >= len(files), r.summary()


def test_short_fuzz_run_finds_nothing(tmp_path):
    _need_binary()
    seconds = float(os.environ.get("OFBENCH_FUZZ_SECONDS") or fuzzer.SHORT_S)
    r = fuzzer.fuzz(seconds, tmp_path / "work", tmp_path / "artifacts")
    print(r.summary())
    assert r.clean, (r.summary() + "\n" + r.log_tail +
                     f"\nfix the bug, then copy the input into {fuzzer.REGRESS}/")
    assert r.execs > 0 and r.cov_edges > 0, r.log_tail


def test_coverage_sources_follow_the_build(tmp_path):
    """The coverage build compiles what meson compiles into the harness and the classifier
    library (a hand-kept list fell behind the agent's split), and says when it cannot tell."""
    info = tmp_path / "meson-info"
    info.mkdir()
    (info / "intro-targets.json").write_text(
        '[{"name": "fuzz_agent", "target_sources": [{"sources": ["/r/a.c", "/r/b.c", "/r/h.h"]}]},'
        ' {"name": "ofbcls", "target_sources": [{"sources": ["/r/c.c", "/r/a.c"]}]},'
        ' {"name": "other", "target_sources": [{"sources": ["/r/x.c"]}]}]')
    assert [str(p) for p in fuzzer.coverage_sources(tmp_path)] == ["/r/a.c", "/r/b.c", "/r/c.c"]
    (info / "intro-targets.json").write_text('[{"name": "fuzz_agent", "target_sources": []}]')
    with pytest.raises(ValueError, match="fuzz_agent, ofbcls"):
        fuzzer.coverage_sources(tmp_path)
    with pytest.raises(FileNotFoundError, match="build_san"):
        fuzzer.coverage_sources(tmp_path / "none")
    _need_binary()
    real = {p.name for p in fuzzer.coverage_sources()}
    assert {"datapath.c", "agent_flows.c", "fuzz_agent.c", "classifier.c"} <= real, real
