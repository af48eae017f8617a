"""Canary (issue 38): a real suite run with an InfluxDB token in the environment and in a file,
an InfluxDB URL carrying credentials and other secret-looking variables; then every file the
run wrote (session.json, results.jsonl, pytest.html, index.html, plots, any log) is searched for
each secret: none may appear, while the run still records what it should (the URL, redacted)."""
import json
import os
import subprocess
import sys

import pytest

from paths import REPO, build_dir

SECRETS = {
    "OFBENCH_INFLUX_TOKEN": "canary-env-token-7f3a9c",
    "OFBENCH_LAB_PASSWORD": "canary-lab-password-51d2",
    "OFBENCH_API_KEY": "canary-api-key-e8b7",
    "AWS_SECRET_ACCESS_KEY": "canary-aws-secret-0c4d",
}
URL_PASSWORD = "s3cr3tpw"
FILE_TOKEN = "canary-file-token-2b6e"
TEST = "suites/classifier/test_classifier_bench.py::test_classifier_bench[ntt_1000_quick]"


@pytest.mark.skipif(not (build_dir() / "dut/classifier/cls-bench").exists(),
                    reason="cls-bench is not built (make setup builds it)")
@pytest.mark.timeout(300)
def test_no_secret_reaches_any_file_of_the_run(tmp_path):
    token_file = tmp_path / "influx-token"
    token_file.write_text(FILE_TOKEN + "\n")
    reports = tmp_path / "reports"
    env = dict(os.environ, **SECRETS,
               OFBENCH_INFLUX_URL=f"http://user:{URL_PASSWORD}@127.0.0.1:1/")
    argv = [sys.executable, "-m", "pytest", TEST, "--dut=local", f"--reports-dir={reports}",
            f"--influx-token-file={token_file}", "-q", "-p", "no:cacheprovider"]
    cp = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=280)
    assert cp.returncode == 0, cp.stdout[-3000:] + cp.stderr[-3000:]
    (run,) = [p for p in reports.glob("run-*") if p.is_dir()]
    files = [p for p in run.rglob("*") if p.is_file()]
    names = {p.relative_to(run).as_posix() for p in files}
    assert {"session.json", "results.jsonl", "index.html", "pytest.html"} <= names, names
    needles = [*SECRETS.values(), URL_PASSWORD, FILE_TOKEN]
    hits = [(p.relative_to(run).as_posix(), s) for p in files for s in needles
            if s.encode() in p.read_bytes()]
    assert hits == [], hits
    for out in (cp.stdout, cp.stderr):
        assert not [s for s in needles if s in out]
    # what should be there still is: the URL with its credentials masked, the command
    (rec, *_) = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]
    prov = rec["provenance"]
    assert prov["env_ofbench_influx_url"] == "http://***@127.0.0.1:1/"
    assert not [k for k in prov if "token" in k or "password" in k or "key" in k], prov
    session = json.loads((run / "session.json").read_text())
    assert session["command"].endswith("--influx-token-file=*** -q -p no:cacheprovider")
