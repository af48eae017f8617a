"""The switch's libFuzzer harnesses (fuzz_agent.c: the agent's messages; fuzz_conn.c: the
connection layer; README "Fuzzing") in `make test`, in the sanitizer build (ASan + UBSan, no
recovery): every committed seed and reproducer replayed (fuzz_agent under every lookup
backend), then a short coverage-guided run of each (OFBENCH_FUZZ_SECONDS, default 60 s and
40 s). Zero findings is the bar: a finding is fixed in the C code and its input added to the
target's regress folder."""
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


def _need_binary(target: str = "fuzz_agent"):
    if not fuzzer.binary(target).exists():
        pytest.skip(f"{fuzzer.binary(target)} not built: scripts/build_san.sh (make setup runs it)")


def test_seed_corpus_and_reproducers_exist():
    assert len(list(fuzzer.CORPUS.glob("*.bin"))) > 1000, \
        "seed corpus missing: python -m suites.conformance.fuzz_corpus"
    assert any(fuzzer.REGRESS.iterdir())
    for t in fuzzer.TARGETS.values():
        assert list(t.corpus.glob("*.bin")) and any(t.regress.iterdir()), t.name
        # every committed input fits what a run reads (longer ones would be cut)
        for p in [*t.corpus.iterdir(), *t.regress.iterdir()]:
            assert p.stat().st_size <= fuzzer.MAX_LEN, p


def test_issue37_reproducers_are_kept():
    """Findings 1 and 3 of issue 37 as inputs of both targets."""
    names = {p.name for t in fuzzer.TARGETS.values() for p in t.regress.iterdir()}
    assert {"finding1-flow-mod-65528-then-flow-stats.bin",
            "finding1-group-mod-65528-then-group-desc.bin",
            "finding1-flow-mod-65528-split-then-flow-stats.bin",
            "finding3-stalled-peer-dropped.bin"} <= names


@pytest.mark.parametrize("target,lookup", [(name, lk) for name, t in fuzzer.TARGETS.items()
                                           for lk in t.lookups])
def test_seeds_and_reproducers_replay_clean(target, lookup):
    _need_binary(target)
    files = fuzzer.seed_files(target)
    r = fuzzer.replay(files, lookup, target)
    assert r.clean, r.summary() + "\n" + r.log_tail
    assert r.execs >= len(files), r.summary()


@pytest.mark.parametrize("target", list(fuzzer.TARGETS))
def test_short_fuzz_run_finds_nothing(tmp_path, target):
    _need_binary(target)
    t = fuzzer.TARGETS[target]
    seconds = float(os.environ.get("OFBENCH_FUZZ_SECONDS") or t.short_s)
    r = fuzzer.fuzz(seconds, tmp_path / "work", tmp_path / "artifacts", target=target)
    print(r.summary())
    assert r.clean, (r.summary() + "\n" + r.log_tail +
                     f"\nfix the bug, then copy the input into {t.regress}/")
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
