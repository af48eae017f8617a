"""Sample runs for the reports tests: realistic records of a few suites (shared helper)."""
from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from reports.results import ResultWriter, utc_rfc3339

BASE_PROVENANCE = {
    "git_sha": "0123456789abcdef0123456789abcdef01234567", "git_dirty": False,
    "dut_build": "sha256:00aa11bb22cc33dd", "host": "testhost", "profile": "local",
    "dut_switch_kind": "ovs", "generator": "softgen", "generator_version": "0.1.0",
    "port_kind": "memif",
}


def provenance_at(when: dt.datetime, **over) -> dict:
    return {**over, "start_time": utc_rfc3339(when - dt.timedelta(seconds=5)),
            "end_time": utc_rfc3339(when)}


def make_sample_run(run_dir: Path, when: dt.datetime | None = None) -> ResultWriter:
    when = when or dt.datetime(2024, 5, 1, 2, 0, tzinfo=dt.timezone.utc)
    w = ResultWriter(run_dir, BASE_PROVENANCE)
    t = when
    w.write("smoke", "ping_and_udp_burst", {"ok": True, "ping_loss_pct": 0.0, "rtt_avg_us": 48.2,
                                            "udp_rx_pkts": 1000, "udp_tx_pkts": 1000},
            {"hosts": 2}, provenance_at(t, port_kind="veth", generator="kernel"))
    for kind, scale in (("ovs", 1.0), ("ofbench", 2.7)):
        for flows in (1, 1000, 100000):
            t += dt.timedelta(seconds=30)
            ndr = round(3.1 * scale / (1 + flows / 50000), 3)
            misses = []
            if kind == "ovs" and flows == 100000:
                misses = [{"metric": "ndr_mpps", "op": ">=", "target": 2.0, "value": ndr,
                           "ok": False, "miss_by": round(2.0 - ndr, 3),
                           "miss_by_pct": round((2.0 - ndr) / 2.0 * 100, 1)}]
            w.write("throughput", f"ndr_64b_{flows}flows",
                    {"ndr_mpps": ndr, "pdr_mpps": round(ndr * 1.07, 3),
                     "latency_p99_us": round(40 / scale + flows / 10000, 2),
                     "trials": 9},
                    {"frame_size_b": 64, "flows": flows, "loss_targets_pct": [0.0, 0.1]},
                    provenance_at(t, dut_switch_kind=kind),
                    targets=misses or [{"metric": "ndr_mpps", "op": ">=", "target": 2.0,
                                        "value": ndr, "ok": True}],
                    target_misses=misses or None)
    w.write("softgen", "tx_64b_1core_memif", {"tx_mpps": 11.8, "testpmd_tx_mpps": 12.4,
                                              "tx_vs_testpmd_ratio": 0.95},
            {"frame_size_b": 64}, provenance_at(t + dt.timedelta(seconds=60)))
    return w


def write_session(run_dir: Path, **over) -> None:
    data = {"passed": 7, "failed": 1, "skipped": 2, "duration_s": 312.4, "profile": "local",
            "command": "pytest suites/ --dut=local",
            "failed_tests": ["suites/throughput/test_rfc2544.py::test_ndr[ovs-100000]"]}
    data.update(over)
    (Path(run_dir) / "session.json").write_text(json.dumps(data))
