"""memchase (drivers/probes): one JSON line per run, latencies that grow with the working set,
and a clear refusal of bad arguments. Skips with the reason when it is not built."""
import json
import subprocess

import pytest

from paths import build_dir

BINARY = build_dir() / "drivers/probes/memchase"
needs_binary = pytest.mark.skipif(not BINARY.exists(), reason=f"memchase not built ({BINARY} missing)")


@needs_binary
def test_reports_every_size_as_json():
    out = subprocess.run([str(BINARY), "--mib", "1,2", "--loads", "20000", "--reps", "3"],
                         capture_output=True, text=True, timeout=60, check=True)
    data = json.loads(out.stdout)
    assert [s["mib"] for s in data["sizes"]] == [1, 2]
    assert data["pages"] in ("hugetlb", "thp")
    for s in data["sizes"]:
        assert len(s["ns_runs"]) == 3 and 0 < s["ns_best"] <= s["ns_per_load"]


@needs_binary
@pytest.mark.parametrize("argv, says", [(["--mib", "0"], "--mib"), ([], "--mib is required"),
                                        (["--mib", "1", "--reps", "99"], "--reps"),
                                        (["--bogus"], "unknown")])
def test_bad_arguments_are_named(argv, says):
    out = subprocess.run([str(BINARY), *argv], capture_output=True, text=True, timeout=10)
    assert out.returncode == 2 and says in out.stderr
