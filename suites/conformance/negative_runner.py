"""Send the negative-conformance cases (negative_cases.py) to one switch on a live OpenFlow
session and classify each answer.

Per case: reset (delete every flow, group and meter), the case's setup messages (each must be
accepted), a snapshot of the state the case could change, the case's message, an ECHO_REQUEST
(liveness), then the errors received before the ECHO_REPLY, a second snapshot, the teardown.

Classes (``classify``, pure):
  * ``as spec``      an OFPT_ERROR with the case's xid and the expected (or an allowed) code;
                     a disconnect where the case allows it
  * ``other error``  an OFPT_ERROR, not one the case allows (or with another xid)
  * ``silent``       no error and the ECHO answered; ``state_changed`` says whether the switch
                     visibly acted on the message (True), did not (False) or cannot be seen (None)
  * ``disconnect``   the switch closed the session (and is still running); it reconnects
  * ``crash``        the switch process died
  * ``hang``         alive and connected, but no ECHO_REPLY within the timeout

The controller side listens inside the switch's network namespace (the switch connects to
127.0.0.1 there), see ``listen_in_netns``.
"""
from __future__ import annotations

import ctypes
import os
import socket
import struct
import threading
import time
from dataclasses import dataclass, field

from os_ken.ofproto import ofproto_v1_3 as ofp

import openflow as w
from suites.conformance import negative_cases as nc

AS_SPEC, OTHER, SILENT, DISCONNECT, CRASH, HANG = (
    "as spec", "other error", "silent", "disconnect", "crash", "hang")
CLASSES = (AS_SPEC, OTHER, SILENT, DISCONNECT, CRASH, HANG)
FATAL = (CRASH, HANG)

ECHO_TIMEOUT_S = 5.0
RECONNECT_TIMEOUT_S = 30.0     # OVS backs off up to 8 s between connection attempts
XID_BASE = 0x4E000000          # case i is sent with xid XID_BASE + i
SETUP_XID = 0x53000000
ECHO_XID = 0xEC000000


@dataclass
class Outcome:
    case: nc.Case
    cls: str
    got: list[str] = field(default_factory=list)   # the error names received, in order
    state_changed: bool | None = None
    note: str = ""

    def row(self) -> dict:
        return {"case": self.case.name, "category": self.case.category,
                "section": self.case.section, "spec": self.case.strength,
                "what": self.case.why, "class": self.cls,
                "expected": nc.answer_name(self.case.expected),
                "also allowed": ", ".join(nc.answer_name(a) for a in self.case.acceptable),
                "got": ", ".join(self.got) or "-",
                "state changed": {True: "yes", False: "no", None: "n/a"}[self.state_changed],
                "note": self.note}


def classify(case: nc.Case, xid: int, errors: list[tuple[int, int, int]], echo_ok: bool,
             closed: bool, alive: bool) -> tuple[str, str]:
    """(class, note) from what came back; ``errors`` = (type, code, xid) received between the
    case and its ECHO_REPLY (or the end of the session)."""
    if not alive:
        return CRASH, "switch process died"
    answers = case.answers()
    mine = [(t, c) for t, c, x in errors if x == xid]
    if closed:
        if nc.DISCONNECT in answers:
            return AS_SPEC, "closed the connection (allowed)"
        return DISCONNECT, ""
    if mine:
        if any(nc.matches_answer(a, t, c) for t, c in mine for a in answers):
            alt = not any(nc.matches_answer(case.expected, t, c) for t, c in mine)
            return AS_SPEC, "an allowed alternative" if alt else ""
        return OTHER, ""
    if errors:
        return OTHER, "error carries another xid than the request's"
    if not echo_ok:
        return HANG, f"no ECHO_REPLY within {ECHO_TIMEOUT_S:.0f} s"
    return SILENT, ""


def listen_in_netns(netns: str | None) -> socket.socket:
    """A TCP listener on 127.0.0.1:<free port> inside ``netns`` (a socket keeps the namespace
    it was created in; setns only moves the helper thread that creates it)."""
    out: dict = {}

    def make():
        try:
            if netns:
                libc = ctypes.CDLL(None, use_errno=True)
                fd = os.open(f"/run/netns/{netns}", os.O_RDONLY)
                try:
                    if libc.setns(fd, 0x40000000) != 0:     # CLONE_NEWNET
                        raise OSError(ctypes.get_errno(), f"setns into {netns}")
                finally:
                    os.close(fd)
            out["sock"] = w.listen()
        except BaseException as e:  # handed to the caller
            out["err"] = e

    t = threading.Thread(target=make, name="netns-listener")
    t.start()
    t.join()
    if "err" in out:
        raise out["err"]
    return out["sock"]


# ---- multipart snapshots -----------------------------------------------------------------
def _entries(body: bytes, len_off: int = 0, min_len: int = 4):
    """Split a multipart reply body into its variable-length entries (length at len_off)."""
    off = 0
    while off + min_len <= len(body):
        n, = struct.unpack_from("!H", body, off + len_off)
        if n < min_len:
            break
        yield body[off:off + n]
        off += n


def parse_flows(body: bytes) -> list[tuple]:
    return sorted((e[2], struct.unpack_from("!H", e, 12)[0], e[48:]) for e in _entries(body))


def parse_groups(body: bytes) -> list[tuple]:
    return sorted((struct.unpack_from("!I", e, 4)[0], e[2], e[8:]) for e in _entries(body))


def parse_meters(body: bytes) -> list[tuple]:
    return sorted((struct.unpack_from("!I", e, 4)[0], struct.unpack_from("!H", e, 2)[0], e[8:])
                  for e in _entries(body))


def parse_ports(body: bytes) -> list[tuple]:
    """PORT_DESC -> [(port_no, hw_addr, config, advertised)]."""
    out = []
    for off in range(0, len(body) - 63, 64):
        port, = struct.unpack_from("!I", body, off)
        hw = body[off + 8:off + 14]
        config, = struct.unpack_from("!I", body, off + 32)
        adv, = struct.unpack_from("!I", body, off + 44)
        out.append((port, hw, config, adv))
    return sorted(out)


class Peer:
    """One switch under test, seen from its controller: the session, reconnects, liveness."""

    def __init__(self, kind: str, listener: socket.socket, alive_fn, log=lambda m: None):
        self.kind, self.listener, self.alive_fn, self.log = kind, listener, alive_fn, log
        self.s: w.Session | None = None
        self.reconnects = 0
        self._xid = 0x10000

    def xid(self) -> int:
        self._xid += 1
        return SETUP_XID + self._xid

    def connect(self, timeout_s: float = RECONNECT_TIMEOUT_S) -> None:
        if self.s is not None:
            self.s.close()
        try:
            if isinstance(self.listener, socket.socket):
                self.listener.settimeout(timeout_s)
                conn, _ = self.listener.accept()
                conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            else:  # a lab host's listener (drivers/lab: listen_here)
                conn = self.listener.accept(timeout_s)
        except (socket.timeout, TimeoutError):
            raise ConnectionError(f"{self.kind} did not connect within {timeout_s:.0f} s "
                                  f"(alive={self.alive_fn()})") from None
        self.s = w.Session(conn)
        self.s.send(w.hello(xid=1))
        if self.s.wait_for(w.HELLO, timeout_s=10) is None:
            raise ConnectionError(f"no HELLO from {self.kind}")

    # -- helpers on the session --------------------------------------------------------------
    def _drain(self) -> list[tuple[int, int, bytes]]:
        """Take every kept message; answer the switch's ECHO_REQUESTs (OVS probes idle
        controllers)."""
        with self.s.cond:
            msgs, self.s.msgs[:] = list(self.s.msgs), []
        for t, x, body in msgs:
            if t == w.ECHO_REQUEST:
                self.s.send(w.msg(w.ECHO_REPLY, body, x))
        return msgs

    def sync(self, timeout_s: float | None = None) -> tuple[bool, list]:
        """ECHO round trip; (answered, every message received before the reply)."""
        timeout_s = ECHO_TIMEOUT_S if timeout_s is None else timeout_s
        x = ECHO_XID + self.xid() % 0x1000000
        try:
            self.s.send(w.msg(w.ECHO_REQUEST, b"neg", x))
        except OSError:
            return False, self._drain()
        deadline = time.monotonic() + timeout_s
        got: list = []
        while True:
            for m in self._drain():
                if m[0] == w.ECHO_REPLY and m[1] == x:
                    return True, got + [m2 for m2 in self._drain()]
                got.append(m)
            if self.s.closed or time.monotonic() > deadline:
                return False, got + self._drain()
            with self.s.cond:
                if not self.s.msgs:
                    self.s.cond.wait(0.05)

    def request(self, message: bytes, xid: int, reply_type: int) -> list[bytes] | None:
        """Send a request; the bodies of its replies (multipart: every part), None on error."""
        self.s.send(message)
        bodies = []
        deadline = time.monotonic() + ECHO_TIMEOUT_S
        while time.monotonic() < deadline:
            err = self.s.wait_for(w.ERROR, xid, timeout_s=0)
            if err is not None:
                return None
            m = self.s.wait_for(reply_type, xid, timeout_s=0.05)
            if m is None:
                if self.s.closed:
                    return None
                continue
            bodies.append(m[2])
            if reply_type != w.MULTIPART_REPLY or not struct.unpack_from("!H", m[2], 2)[0] & 1:
                return bodies
        return None

    def multipart(self, mp_type: int, body: bytes = b"") -> bytes | None:
        x = self.xid()
        parts = self.request(w.multipart(mp_type, body, x), x, w.MULTIPART_REPLY)
        return None if parts is None else b"".join(p[8:] for p in parts)

    def ports(self) -> list[tuple] | None:
        b = self.multipart(ofp.OFPMP_PORT_DESC)
        return None if b is None else parse_ports(b)

    def snapshot(self, what: str | None):
        if what is None:
            return None
        if what == "flows":
            b = self.multipart(ofp.OFPMP_FLOW, w.flow_stats_body())
            return None if b is None else parse_flows(b)
        if what == "groups":
            b = self.multipart(ofp.OFPMP_GROUP_DESC)
            return None if b is None else parse_groups(b)
        if what == "meters":
            b = self.multipart(ofp.OFPMP_METER_CONFIG, struct.pack("!I4x", w.OFPM_ALL))
            return None if b is None else parse_meters(b)
        if what == "ports":
            p = self.ports()
            return None if p is None else [(n, c, a) for n, _, c, a in p]
        if what == "config":
            x = self.xid()
            r = self.request(w.msg(nc.OFPT_GET_CONFIG_REQUEST, xid=x), x, 8)
            return None if r is None else r[0][:4]
        raise ValueError(f"unknown observation {what!r}")

    def reset(self, ctx: nc.Context) -> None:
        """Delete every flow, group and meter; default config; ports up and packet-ins on."""
        s = self.s
        s.send(w.flow_mod(command=ofp.OFPFC_DELETE, table=ofp.OFPTT_ALL, xid=self.xid()))
        s.send(nc.group_mod(self.xid(), command=ofp.OFPGC_DELETE, group_id=ofp.OFPG_ALL,
                            buckets=b""))
        s.send(nc.meter_mod(self.xid(), command=ofp.OFPMC_DELETE, meter_id=ofp.OFPM_ALL,
                            bands=b""))
        s.send(nc.set_config(self.xid(), 0, 128))
        for p in ctx.ports:
            s.send(nc.port_mod(self.xid(), p, ctx.macs[p], 0, ofp.OFPPC_PORT_DOWN
                               | ofp.OFPPC_NO_RECV | ofp.OFPPC_NO_FWD | ofp.OFPPC_NO_PACKET_IN))

    def context(self) -> nc.Context:
        """The switch's ports (waits until at least two are there: OVS adds them after it has
        connected)."""
        deadline = time.monotonic() + 20
        ports = []
        while time.monotonic() < deadline:
            ports = [p for p in (self.ports() or []) if p[0] <= ofp.OFPP_MAX]
            if len(ports) >= 2:
                break
            time.sleep(0.2)
        if len(ports) < 2:
            raise ConnectionError(f"{self.kind} shows {len(ports)} port(s), 2 wanted")
        return nc.Context(tuple(p[0] for p in ports), {p[0]: p[1] for p in ports})


def _errors(msgs) -> list[tuple[int, int, int]]:
    return [(*struct.unpack_from("!HH", body), x) for t, x, body in msgs
            if t == w.ERROR and len(body) >= 4]


def run_cases(peer: Peer, cases: list[nc.Case], progress=lambda m: None) -> list[Outcome]:
    """Every case on ``peer``'s session (it must be connected). Stops at a crash or hang: the
    cases after it are not run (and not returned)."""
    ctx = peer.context()
    out: list[Outcome] = []
    for i, case in enumerate(cases):
        xid = XID_BASE + i
        peer._drain()
        peer.reset(ctx)
        notes = []
        setup_xids = set()
        for mk in case.setup:
            setup_xids.add(peer.xid())
            peer.s.send(mk(ctx, max(setup_xids)))
        ok, msgs = peer.sync()
        if not ok:
            raise ConnectionError(f"{peer.kind}: no ECHO_REPLY after the reset/setup of "
                                  f"{case.name} (alive={peer.alive_fn()})")
        setup_errs = [e for e in _errors(msgs) if e[2] in setup_xids]
        if setup_errs:
            notes.append("setup refused: " + ", ".join(nc.error_name(t, c)
                                                       for t, c, _ in setup_errs))
        before = peer.snapshot(case.observe)
        try:
            peer.s.send(case.message(ctx, xid))
        except OSError:
            pass
        ok, msgs = peer.sync()
        errs = _errors(msgs)
        closed = peer.s.closed
        alive = peer.alive_fn()
        if not ok and not closed and alive:     # give a slow switch one more chance
            ok, more = peer.sync()
            errs += _errors(more)
            closed, alive = peer.s.closed, peer.alive_fn()
        cls, note = classify(case, xid, errs, ok, closed, alive)
        if note:
            notes.append(note)
        got = [nc.error_name(t, c) + ("" if x == xid else f" (xid {x:#x})")
               for t, c, x in errs] + (["connection closed"] if closed else [])
        o = Outcome(case, cls, got, note="; ".join(notes))
        out.append(o)
        if cls in FATAL:
            progress(f"{peer.kind}: {case.name}: {cls}; stopping this switch's run")
            break
        if closed:
            peer.reconnects += 1
            peer.connect()
            ctx = peer.context()
        elif cls == SILENT and case.observe:
            after = peer.snapshot(case.observe)
            o.state_changed = None if before is None or after is None else before != after
        for mk in case.teardown:
            peer.s.send(mk(ctx, peer.xid()))
        if case.teardown:
            peer.sync()
    peer._drain()
    return out


# Record keys per class, named so reports/metrics.py reads their direction (the nightly trend
# calls a change a regression by it): "ok" (as spec, higher is better, as in the of13 records),
# the rest lower is better.
METRIC_OF_CLASS = {AS_SPEC: "ok", OTHER: "other_error", SILENT: "silent_fail",
                   DISCONNECT: "disconnect_fail", CRASH: "crash_fail", HANG: "hang_fail"}


def counts(outcomes: list[Outcome]) -> dict:
    """Metrics for a record: ``total``, a count per class (METRIC_OF_CLASS), silent cases that
    visibly changed state, and per category ``<category>_<class key>``."""
    m = {METRIC_OF_CLASS[c]: sum(o.cls == c for o in outcomes) for c in CLASSES}
    m["total"] = len(outcomes)
    m["silent_state_changed_fail"] = sum(o.cls == SILENT and o.state_changed is True
                                         for o in outcomes)
    for cat in nc.categories([o.case for o in outcomes]):
        key = cat.replace("/", "_").replace(" ", "_")
        for c in (AS_SPEC, OTHER, SILENT, DISCONNECT):
            m[f"{key}_{METRIC_OF_CLASS[c]}"] = sum(o.case.category == cat and o.cls == c
                                                  for o in outcomes)
    return m


def category_table(results: dict[str, list[Outcome]]) -> list[dict]:
    """One row per category: OK/ERROR per switch side by side (OK = every case as spec),
    with the counts behind it."""
    kinds = list(results)
    cats = nc.categories([o.case for outs in results.values() for o in outs])
    rows = []
    for cat in cats + ["total"]:
        row = {"category": cat}
        for k in kinds:
            outs = [o for o in results[k] if cat == "total" or o.case.category == cat]
            n = len(outs)
            ok = sum(o.cls == AS_SPEC for o in outs)
            row[k] = "OK" if n and ok == n else "ERROR"
            row[f"{k} as spec/other/silent/disc"] = (
                f"{ok}/{sum(o.cls == OTHER for o in outs)}/"
                f"{sum(o.cls == SILENT for o in outs)}/"
                f"{sum(o.cls == DISCONNECT for o in outs)} of {n}")
        rows.append(row)
    return rows


def case_table(results: dict[str, list[Outcome]]) -> list[dict]:
    """One row per case, every switch's class and answer beside each other."""
    kinds = list(results)
    by = {k: {o.case.name: o for o in outs} for k, outs in results.items()}
    rows = []
    seen = []
    for outs in results.values():
        for o in outs:
            if o.case.name not in seen:
                seen.append(o.case.name)
    cases = {o.case.name: o.case for outs in results.values() for o in outs}
    for name in seen:
        c = cases[name]
        row = {"case": name, "category": c.category, "section": c.section,
               "spec": c.strength, "expected": nc.answer_name(c.expected)}
        for k in kinds:
            o = by[k].get(name)
            row[k] = "not run" if o is None else o.cls + (
                "" if o.cls != SILENT or o.state_changed is None
                else (" (state changed)" if o.state_changed else " (no state change)"))
            row[f"{k} got"] = "-" if o is None else (", ".join(o.got) or "-")
        rows.append(row)
    return rows
