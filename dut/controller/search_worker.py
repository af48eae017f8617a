"""Search process of the prioritised app's ``processes`` worker mode (engine.SearchProcess).

Reads requests on stdin (u32 little-endian length + payload), answers each with the u64 match
count on stdout. Answers 0 once at start when the matcher is built. Ends at EOF on stdin.
"""
from __future__ import annotations

import argparse
import os
import struct
import sys

from dut.controller.matching import make_matcher


def _read_exact(fd: int, n: int) -> bytes | None:
    buf = b""
    while len(buf) < n:
        chunk = os.read(fd, n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return buf


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--matcher", required=True)
    p.add_argument("--patterns-hex", required=True, help="comma-separated hex patterns")
    p.add_argument("--nice", type=int, default=0)
    args = p.parse_args(argv)
    if args.nice:
        os.nice(args.nice)
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
