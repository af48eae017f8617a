"""The pipeline cache against the per-table way (dut/switch/tests/test_pipecache.c): a real
worker lcore forwards the same frames through random four-table pipelines (goto-table,
write-metadata, push/pop VLAN, set-field, dec TTL, flow changes between runs) with the cache
off, then on (replaying, then with compiled programs, then with forced set conflicts and
signature collisions); the frames on each port, the flows' and tables' counters must be the same.
Runs without hugepages; the EAL runtime directory is removed even when the binary crashes."""
from __future__ import annotations

import pytest

from dut.switch import launcher
from dut.switch.tests.switchproc import run_dp_rig_binary


@pytest.mark.parametrize("build", ["release", "sanitized"])
def test_pipeline_cache_same_as_every_table(build):
    # ~10 s on a quiet box; each of its ~17k grace periods waits for the worker's thread, a
    # scheduler tick when the box is loaded (70 s seen beside a sanitizer build): room for that
    rc, out = run_dp_rig_binary(build, "test_ofswitch_pipecache", ["60"], "ofs-pcache", 240)
    summary = [line for line in out.splitlines() if line.startswith("pipecache: ")]
    assert rc == 0 and summary, out[-3000:]
    assert "differ 0" in summary[0], summary[0]
    # the forced conflicts did conflict: an entry read on another key's signature
    assert " 0 signature matches" not in summary[0], summary[0]
    assert not launcher.sanitizer_reports(out), out[-4000:]
