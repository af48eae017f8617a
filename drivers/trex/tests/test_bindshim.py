"""bindshim.c (libofb_trex_bind.so): TRex's wildcard zmq_bind goes to the address given, and
without an address the bind is refused, never left on every address. Driven through a real
libzmq (TRex's own so/x86_64/libzmq.so.5) by ctypes calls resolved in the process's global
scope, as TRex's own calls are (the preloaded library comes first there)."""
from __future__ import annotations

import ctypes
import os
import subprocess
import sys
from pathlib import Path

import pytest

from drivers.trex.server import (BIND_SHIM, TrexServerError, find_runtime, local_shim,
                                 server_env)
from paths import build_dir

PROBE = r"""
import ctypes, os, sys
ctypes.CDLL(sys.argv[1], mode=ctypes.RTLD_GLOBAL)
zmq = ctypes.CDLL(None, use_errno=True)          # the global scope, as TRex's PLT calls resolve
zmq.zmq_ctx_new.restype = ctypes.c_void_p
zmq.zmq_socket.restype = ctypes.c_void_p
zmq.zmq_socket.argtypes = [ctypes.c_void_p, ctypes.c_int]
zmq.zmq_bind.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
ctx = zmq.zmq_ctx_new()
s = zmq.zmq_socket(ctx, 4)                      # ZMQ_REP
rc = zmq.zmq_bind(s, sys.argv[2].encode())
print(rc, ctypes.get_errno() if rc else 0)
if rc == 0:
    port = int(sys.argv[2].rsplit(":", 1)[1])
    for line in open("/proc/net/tcp").read().splitlines()[1:]:
        f = line.split()
        a, p = f[1].split(":")
        if int(p, 16) == port and f[3] == "0A":
            print(".".join(str(b) for b in bytes.fromhex(a)[::-1]))
"""


def _libzmq() -> Path:
    rt, why = find_runtime()
    if rt is None:
        pytest.skip(why)
    return rt / "so/x86_64/libzmq.so.5"


def _probe(endpoint: str, env: dict) -> list[str]:
    shim = build_dir() / BIND_SHIM
    if not shim.is_file():
        pytest.skip(f"{shim} not built")
    full = {k: v for k, v in os.environ.items() if k != "OFB_TREX_BIND_ADDR"}
    full.update(env, LD_PRELOAD=str(shim))
    out = subprocess.run([sys.executable, "-c", PROBE, str(_libzmq()), endpoint], env=full,
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    return out.stdout.split()


def _free_port() -> int:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_wildcard_bind_goes_to_the_address_given():
    port = _free_port()
    out = _probe(f"tcp://*:{port}", {"OFB_TREX_BIND_ADDR": "127.0.0.1"})
    assert out == ["0", "0", "127.0.0.1"]


def test_wildcard_bind_without_an_address_is_refused():
    out = _probe(f"tcp://*:{_free_port()}", {})
    assert out[0] == "-1"


def test_other_endpoints_pass_unchanged():
    port = _free_port()
    out = _probe(f"tcp://127.0.0.1:{port}", {})
    assert out == ["0", "0", "127.0.0.1"]


def test_server_env_needs_an_address_and_names_the_shim(tmp_path):
    env = server_env("/rt", "10.0.0.2", "/w/build/" + BIND_SHIM)
    assert env == {"LD_LIBRARY_PATH": "/rt/so/x86_64", "LD_PRELOAD": "/w/build/" + BIND_SHIM,
                   "OFB_TREX_BIND_ADDR": "10.0.0.2"}
    with pytest.raises(TrexServerError, match="address"):
        server_env("/rt", "", "/x.so")


def test_a_missing_shim_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv("OFBENCH_BUILD_DIR", str(tmp_path))
    with pytest.raises(TrexServerError, match="make setup"):
        local_shim()
