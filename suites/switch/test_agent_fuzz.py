"""The switch agent's coverage-guided fuzzer in the run's records (issue 15 part 2): the short
libFuzzer run of ``make test`` (60 s from the committed seeds and reproducers, ASan + UBSan,
dut/switch/fuzz) once per lookup backend the switch has, recorded as ``agent_fuzz_<lookup>``:
executions, rate, edges covered, corpus growth and findings (the bar: 0). ``make nightly``
runs the 30-minute one on top (dut/switch/README.md "Fuzzing").

It runs on this box's sanitizer build (build-san/, scripts/build_san.sh): a property of the
switch's code, not of a lab, so it is local_lab.
"""
from __future__ import annotations

import pytest

from dut.switch.fuzz import fuzzer

pytestmark = pytest.mark.local_lab


@pytest.mark.bench
@pytest.mark.timeout(900)
@pytest.mark.parametrize("lookup", fuzzer.LOOKUPS)
def test_agent_fuzz_short_run(lookup, results, progress, tmp_path):
    if not fuzzer.binary().exists():
        pytest.skip(f"{fuzzer.binary()} is not built (scripts/build_san.sh; make setup runs it)")
    progress(f"fuzzing the agent {fuzzer.SHORT_S} s with the {lookup} lookup (ASan + UBSan)")
    r = fuzzer.fuzz(fuzzer.SHORT_S, tmp_path / "work", tmp_path / "artifacts", lookup)
    progress(r.summary())
    results.record(f"agent_fuzz_{lookup}",
                   metrics={"execs": r.execs, "execs_per_s": r.execs_per_s,
                            "cov_edges": r.cov_edges, "features": r.features,
                            "corpus_units": r.corpus_units, "new_units": r.new_units,
                            "peak_rss_mb": r.peak_rss_mb, "findings": len(r.findings),
                            "sanitizer_reports": len(r.reports), "seconds": round(r.seconds, 1)},
                   params={"lookup": lookup, "engine": "libFuzzer (clang-14)",
                           "sanitizers": "address,undefined (no recovery)",
                           "seeds": len(fuzzer.seed_files()), "max_len": 8192},
                   provenance={"dut_switch_kind": "ofbench", "port_kind": "net_null",
                               "generator": "libFuzzer"})
    assert r.clean, f"{r.summary()}\n{r.log_tail}"
