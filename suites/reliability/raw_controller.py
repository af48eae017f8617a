"""A scripted OpenFlow 1.3 controller for the reliability suite: it listens, accepts switch
connections one after another, installs "wire" flows (in_port=a -> output:b) on each, runs a
short script of role requests and FLOW_MODs, answers (or ignores) the switch's echoes, and
logs every event as one JSON line with a CLOCK_MONOTONIC timestamp (comparable with the test
process's time.monotonic()).

    python -m suites.reliability.raw_controller --port 6653 --wire 1:2,2:1 \\
        [--echo ignore] [--script role:master:10,sleep:1,flow_mod,role:nochange:0] \\
        [--ready-file PATH]

Script steps: ``role:<nochange|equal|master|slave>:<generation_id>`` (logs the reply's role
or the error), ``flow_mod`` (a FLOW_MOD and a BARRIER; logs an error if one came back),
``sleep:<seconds>``. Events: listening, connected, wire_installed, role, flow_mod,
disconnected (with the connection's duration).
"""
from __future__ import annotations

import argparse
import json
import struct
import sys
import time
from pathlib import Path

import openflow as w

ROLES = {"nochange": 0, "equal": 1, "master": 2, "slave": 3}
ROLE_NAMES = {v: k for k, v in ROLES.items()}


def log(event: str, **kw) -> None:
    print(json.dumps({"event": event, "t": time.monotonic(), **kw}), flush=True)


def wait_answer(s: w.Session, types: tuple[int, ...], xid: int, timeout_s: float = 5.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for t in types:
            m = s.wait_for(t, xid, 0.02)
            if m is not None:
                return m
        if s.closed:
            return None
    return None


def error_code(m) -> int:
    t, c = w.error_type_code(m[2])
    return t << 16 | c


def run_script(s: w.Session, steps: list[str]) -> None:
    xid = 100
    for step in steps:
        xid += 1
        kind, *args = step.split(":")
        if kind == "sleep":
            time.sleep(float(args[0]))
        elif kind == "role":
            s.send(w.role_request(xid, ROLES[args[0]], int(args[1])))
            m = wait_answer(s, (w.ROLE_REPLY, w.ERROR), xid)
            if m is None:
                log("role", asked=args[0], gen=int(args[1]), answer="none")
            elif m[0] == w.ROLE_REPLY:
                log("role", asked=args[0], gen=int(args[1]), answer="reply",
                    role=ROLE_NAMES.get(struct.unpack_from("!I", m[2])[0], "?"))
            else:
                log("role", asked=args[0], gen=int(args[1]), answer="error",
                    error=error_code(m))
        elif kind == "flow_mod":
            s.send(w.flow_mod(match_=w.match(w.oxm(0, struct.pack("!I", 7))), priority=7,
                              xid=xid))
            s.send(w.msg(w.BARRIER_REQUEST, xid=xid + 1000))
            m = wait_answer(s, (w.ERROR, w.BARRIER_REPLY), xid)
            err = wait_answer(s, (w.ERROR,), xid, 0.3) if m is not None and m[0] != w.ERROR \
                else m
            log("flow_mod", error=error_code(err) if err is not None else None)
        else:
            raise SystemExit(f"raw_controller: unknown script step {step!r}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--wire", default="", help="in:out pairs, e.g. 1:2,2:1")
    ap.add_argument("--echo", choices=("answer", "ignore"), default="answer")
    ap.add_argument("--script", default="")
    ap.add_argument("--ready-file")
    a = ap.parse_args(argv)
    lst = w.listen(a.host, a.port)
    log("listening", port=a.port)
    if a.ready_file:
        Path(a.ready_file).write_text("ready\n")
    wires = [tuple(int(x) for x in p.split(":")) for p in a.wire.split(",") if p]
    steps = [x for x in a.script.split(",") if x]
    while True:
        conn, _ = lst.accept()
        t0 = time.monotonic()
        s = w.Session(conn)
        s.answer_echo = a.echo == "answer"
        try:
            s.handshake()
        except TimeoutError:
            s.close()
            continue
        log("connected")
        for i, (inp, out) in enumerate(wires):
            s.send(w.flow_mod(match_=w.match(w.oxm(0, struct.pack("!I", inp))), priority=10,
                              instructions=w.apply_actions(w.action_output(out)), xid=10 + i))
        if wires:
            ok = s.barrier(xid=0xB0)
            log("wire_installed", ok=ok)
        run_script(s, steps)
        with s.cond:
            while not s.closed:
                s.cond.wait(0.5)
        log("disconnected", after_s=round(time.monotonic() - t0, 3))
        s.close()


if __name__ == "__main__":
    sys.exit(main())
