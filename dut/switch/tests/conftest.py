"""Fixtures the switch's tests share."""
from __future__ import annotations

import os
import socket

import pytest

from dut.switch import launcher
from dut.switch.tests.switchproc import switch_process


@pytest.fixture(params=["release", "sanitized"])
def null_switch(tmp_path, request):
    binary = launcher.builds()[request.param] / "dut" / "switch" / "ofswitch"
    if not binary.exists():
        pytest.skip(f"{binary} not built" + (": scripts/build_san.sh"
                                             if request.param == "sanitized" else ""))
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(2)
    prefix = f"ofb-swbounds-{os.getpid()}-{request.param}"
    eal = ["-l", "0", "--no-huge", "-m", "256", "--no-pci", "--file-prefix", prefix,
           "--log-level", "lib.eal:error"]
    argv = launcher.switch_argv(binary, eal, [(1, "net_null0,no-rx=1"), (2, "net_null1,no-rx=1")],
                                controller=("127.0.0.1", listener.getsockname()[1]), dpid=0xB0,
                                stats_sock=tmp_path / "stats", idle_sleep_us=50)
    try:
        with switch_process(argv, tmp_path / "ofswitch.log", prefix) as proc:
            yield proc, listener, tmp_path
    finally:
        listener.close()
        text = (tmp_path / "ofswitch.log").read_text(errors="replace")
        assert not launcher.sanitizer_reports(text), text[-6000:]
