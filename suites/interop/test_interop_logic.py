"""The interop suite's pure parts: the probe frames, FAUCET configs FAUCET itself accepts."""
from __future__ import annotations

import pytest

from drivers.lab import faucet
from suites.interop import configs
from suites.interop.udp_probe import frame, parse


@pytest.mark.quick
def test_probe_frames_round_trip_tagged_and_untagged():
    f = frame("02:00:00:00:00:02", "02:00:00:00:00:01", 100, "10.0.0.2", "10.0.0.1", 9000, 7)
    assert f[12:14] == b"\x81\x00" and parse(f) == ("100", 9000)
    u = frame("02:00:00:00:00:02", "02:00:00:00:00:01", None, "10.0.0.2", "10.0.0.1", 9001, 7)
    assert parse(u) == ("none", 9001)
    assert parse(u, vid="200") == ("200", 9001)  # the tag the kernel moved to PACKET_AUXDATA
    assert parse(b"\xff" * 12 + b"\x08\x06" + b"\0" * 40) is None  # ARP: not ours


@pytest.mark.quick
@pytest.mark.skipif(faucet.faucet_available() is not None, reason="FAUCET not installed")
def test_every_scenario_config_is_one_faucet_accepts(tmp_path):
    from suites.interop.test_interop import SCENARIOS
    paths = []
    for name, body in SCENARIOS.items():
        _, cfg, _, _ = body()
        paths.append(tmp_path / f"{name}.yaml")
        paths[-1].write_text(cfg)
    faucet.check_config(*paths)  # one FAUCET start-up for all of them
