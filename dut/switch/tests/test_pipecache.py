"""The pipeline cache against the per-table way (dut/switch/tests/test_pipecache.c): a real
worker lcore forwards the same frames through random four-table pipelines (goto-table,
write-metadata, push/pop VLAN, set-field, dec TTL, flow changes between runs) with the cache
off, then on twice; the frames on each port, the flows' and tables' counters must be the same.
Runs without hugepages; the EAL runtime directory is removed even when the binary crashes."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from dut.switch import launcher


@pytest.mark.parametrize("build", ["release", "sanitized"])
def test_pipeline_cache_same_as_every_table(build):
    binary = launcher.builds()[build] / "dut" / "switch" / "test_ofswitch_pipecache"
    if not binary.exists():
        pytest.skip(f"{binary} not built" + (": scripts/build_san.sh" if build == "sanitized"
                                             else ""))
    proc = subprocess.Popen([str(binary), "60"], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        out, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        shutil.rmtree(Path("/var/run/dpdk") / f"ofs-pcache-{proc.pid}", ignore_errors=True)
    summary = [line for line in out.splitlines() if line.startswith("pipecache: ")]
    assert proc.returncode == 0 and summary, out[-3000:]
    assert "differ 0" in summary[0], summary[0]
    assert not launcher.sanitizer_reports(out), out[-4000:]
