"""The datapath's libFuzzer harness (fuzz_datapath.c, README "Fuzzing"; issue 37 part 2) in
`make test`, in the sanitizer build (ASan + UBSan, no recovery, and the debug build's layout
invariant): its guard reports a byte past a frame; every committed seed and reproducer (issue
37 finding 2's frames) replayed under every lookup backend; then a short coverage-guided run
(OFBENCH_FUZZ_SECONDS, default the target's 20 s). Zero findings is the bar."""
from __future__ import annotations

import os
import subprocess

import pytest

from dut.switch.fuzz import datapath_seeds, fuzzer

TARGET = "fuzz_datapath"


def _need_binary():
    if not fuzzer.binary(TARGET).exists():
        pytest.skip(f"{fuzzer.binary(TARGET)} not built: scripts/build_san.sh")


def test_committed_seeds_are_the_generators():
    """corpus_datapath/ and regress_datapath/ hold what datapath_seeds.py writes (the format
    and the flow set's ports are the harness's), and the finding's reproducers are there."""
    t = fuzzer.TARGETS[TARGET]
    for folder, files in ((t.corpus, datapath_seeds.seeds()),
                          (t.regress, datapath_seeds.reproducers())):
        on_disk = {p.name: p.read_bytes() for p in folder.glob("*.bin")}
        assert on_disk == {f"{n}.bin": b for n, b in files.items()}, \
            f"{folder}: run python -m dut.switch.fuzz.datapath_seeds"
    names = {p.stem for p in t.regress.iterdir()}
    assert {"finding2-ipv4_ihl60_tcp", "finding2-ipv6_hbh_2k_tcp",
            "finding2-mpls_ipv4_ihl60_ttl_in"} <= names
    # frames of every length class: empty, shorter than Ethernet, jumbo
    lengths = {len(f) for f in datapath_seeds.frames().values()}
    assert 0 in lengths and 13 in lengths and max(lengths) == 9000


def test_record_format():
    r = datapath_seeds.rec(b"abc", port=2, packet_out=True, prog=5, standalone=True)
    assert r == bytes([2 | 4 | 8, 5, 0, 3]) + b"abc"


def test_target_row():
    t = fuzzer.TARGETS[TARGET]
    assert t.name == TARGET and t.lookups == fuzzer.LOOKUPS
    assert fuzzer.MAX_LEN >= 5 * (9216 + 4)   # five jumbo frames' records (the seeds have)
    assert t.cache != fuzzer.TARGETS["fuzz_agent"].cache


def test_guard_reports_one_byte_past_a_frame(tmp_path):
    """The harness's own self-test write of the byte after each frame is an ASan report: so a
    datapath write there would be one too."""
    _need_binary()
    env = fuzzer.env()
    env["OFS_FUZZ_GUARD_SELFTEST"] = "1"
    reg = fuzzer.TARGETS[TARGET].regress
    cp = subprocess.run([str(fuzzer.binary(TARGET)), "-runs=0",
                         f"-artifact_prefix={tmp_path}/", str(reg)], capture_output=True,
                        text=True, errors="replace", env=env, timeout=300, cwd=tmp_path)
    assert cp.returncode != 0
    assert "heap-buffer-overflow" in cp.stderr and "WRITE of size 1" in cp.stderr, \
        cp.stderr[-3000:]


@pytest.mark.parametrize("lookup", fuzzer.LOOKUPS)
def test_seeds_and_reproducers_replay_clean(lookup):
    _need_binary()
    files = fuzzer.seed_files(TARGET)
    r = fuzzer.replay(files, lookup, target=TARGET)
    assert r.clean, r.summary() + "\n" + r.log_tail
    assert r.execs >= len(files), r.summary()


def test_short_fuzz_run_finds_nothing(tmp_path):
    _need_binary()
    seconds = float(os.environ.get("OFBENCH_FUZZ_SECONDS") or fuzzer.TARGETS[TARGET].short_s)
    r = fuzzer.fuzz(seconds, tmp_path / "work", tmp_path / "artifacts", target=TARGET)
    print(r.summary())
    assert r.clean, (r.summary() + "\n" + r.log_tail + "\nfix the bug, then copy the input "
                     f"into {fuzzer.TARGETS[TARGET].regress}/")
    assert r.execs > 0 and r.cov_edges > 0, r.log_tail
