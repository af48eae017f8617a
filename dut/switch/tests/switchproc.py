"""The switch as a process of a test: started with its output in a log file, stopped on every
exit path (SIGTERM, then SIGKILL after 10 s), its DPDK runtime folder removed; and the
controller-side helpers the switch's tests share (accepting the switch's connection, reading an
error or the flow counters). A helper of the switch's tests (not a test module: no test module
imports another, tests/test_import_graph.py)."""
from __future__ import annotations

import contextlib
import shutil
import socket
import struct
import subprocess
from pathlib import Path

import openflow as w

# two locally administered MACs (dst, src) that open the tests' frames
MACS = b"\x02\x00\x00\x00\x00\x02" + b"\x02\x00\x00\x00\x00\x01"


@contextlib.contextmanager
def switch_process(argv: list[str], log_path: Path, file_prefix: str | None = None):
    """Run ``argv`` (launcher.switch_argv) with stdout and stderr into ``log_path``; yields the
    Popen. ``file_prefix``: the EAL --file-prefix whose /var/run/dpdk folder goes at the end."""
    log = open(log_path, "wb")
    proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        log.close()
        if file_prefix:
            shutil.rmtree(f"/var/run/dpdk/{file_prefix}", ignore_errors=True)



def run_dp_rig_binary(build: str, name: str, args: list[str], prefix: str,
                      timeout_s: float) -> tuple[int, str]:
    """Run the datapath test binary ``name`` (tests/dp_rig.h) of ``build`` ("release" or
    "sanitized") with ``args``; skips the test when it is not built. Returns (exit code, output);
    its EAL runtime folder /var/run/dpdk/<prefix>-<pid> goes even when the binary crashes or
    times out."""
    import pytest

    from dut.switch import launcher

    binary = launcher.builds()[build] / "dut" / "switch" / name
    if not binary.exists():
        pytest.skip(f"{binary} not built" + (": scripts/build_san.sh" if build == "sanitized" else ""))
    proc = subprocess.Popen([str(binary), *args], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        out, _ = proc.communicate(timeout=timeout_s)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        shutil.rmtree(Path("/var/run/dpdk") / f"{prefix}-{proc.pid}", ignore_errors=True)
    return proc.returncode, out

def accept(listener, proc, timeout_s: float = 15.0) -> w.Session:
    listener.settimeout(timeout_s)
    try:
        conn, _ = listener.accept()
    except socket.timeout:
        raise AssertionError(f"switch did not connect (alive={proc.poll() is None})")
    s = w.Session(conn)
    s.handshake()
    return s


def accept_sync(listener, proc) -> w.SyncSession:
    listener.settimeout(15)
    conn, _ = listener.accept()
    s = w.SyncSession(conn)
    s.handshake()
    return s


def error_of(s: w.Session, xid: int, timeout_s: float = 1.0) -> int | None:
    m = s.wait_for(w.ERROR, xid, timeout_s)
    if m is None:
        return None
    t, c = struct.unpack_from("!HH", m[2])
    return t << 16 | c


def flow_packets(c: w.Session, xid: int) -> dict[int, int]:
    """FLOW stats of every table: {cookie: packet_count}."""
    c.send(w.multipart(1, struct.pack("!B3xII4xQQ", 0xFF, w.OFPP_ANY, w.OFPG_ANY, 0, 0) +
                       w.match(), xid))
    m = c.wait_for(w.MULTIPART_REPLY, xid)
    assert m is not None, "no FLOW stats reply"
    body, out, off = m[2], {}, 8
    while off < len(body):
        length, = struct.unpack_from("!H", body, off)
        cookie, packets = struct.unpack_from("!QQ", body, off + 24)
        out[cookie] = packets
        off += length
    return out
