"""Search process of the prioritised app's ``processes`` worker mode (engine.SearchProcess).

Reads requests on stdin (u32 little-endian length + payload), answers each with the u64 match
count on stdout. Answers 0 once at start when the matcher is built. Ends at EOF on stdin.
"""
from __future__ import annotations

import argparse
import errno
import os
import struct
import sys
import time

from dut.controller.matching import make_matcher


def _read_exact(fd: int, n: int) -> bytes | None:
    buf = b""
    while len(buf) < n:
        chunk = os.read(fd, n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return buf


def set_nice(nice: int) -> None:
    """Give this process the CPU weight of ``nice`` against every other process of the box.

    For a process that leads a session of its own (a search process, engine.SearchProcess;
    anything the lab supervisor starts): Debian kernels schedule sessions as autogroups: CFS shares the CPU between groups first, and a process's
    own nice value only weighs inside its group. So the value goes to both: the process
    (setpriority) and its autogroup (/proc/self/autogroup, when the kernel has autogroups).
    A negative value needs CAP_SYS_NICE; without it this raises PermissionError.
    """
    os.setpriority(os.PRIO_PROCESS, 0, nice)
    # Without CAP_SYS_ADMIN the kernel takes one autogroup nice change per 100 ms box-wide
    # (EAGAIN otherwise), and the controller starts its search processes back to back.
    for _ in range(50):
        try:
            with open("/proc/self/autogroup", "w") as f:
                f.write(str(nice))
            return
        except FileNotFoundError:
            return  # kernel without CONFIG_SCHED_AUTOGROUP: setpriority alone does it
        except BlockingIOError:
            time.sleep(0.02)
    raise OSError(errno.EAGAIN, "could not set the autogroup nice value within 1 s")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--matcher", required=True)
    p.add_argument("--patterns-hex", required=True, help="comma-separated hex patterns")
    p.add_argument("--nice", type=int, default=0)
    args = p.parse_args(argv)
    if args.nice:
        set_nice(args.nice)
    matcher = make_matcher(args.matcher, [bytes.fromhex(h) for h in args.patterns_hex.split(",")])
    rd, wr = sys.stdin.fileno(), sys.stdout.fileno()
    os.write(wr, struct.pack("<Q", 0))
    while True:
        hdr = _read_exact(rd, 4)
        if hdr is None:
            return 0
        payload = _read_exact(rd, struct.unpack("<I", hdr)[0])
        if payload is None:
            return 0
        os.write(wr, struct.pack("<Q", matcher.count(payload)))


if __name__ == "__main__":
    sys.exit(main())
