"""The TRex STL client in its own process: `python -m drivers.trex.client_proc`.

Importing lbr_trex_client puts TRex's bundled old yaml/scapy/zmq first on sys.path for the whole
process, so nothing else of ofbench may share this process.  Protocol: one JSON object per line
on stdin ({"op": ...}), one JSON reply per line on stdout ({"ok": true, ...} or
{"ok": false, "error": "..."}); anything TRex prints goes to stderr.

Ops: hello | translate{streams} | connect{server, sync_port, async_port, ports} | load{streams}
     | start{duration} | running | stop | stats | port_info | capture_start{rx_ports, limit}
     | capture_stop{capture_id} | close
`server` "double" (or "double:<loss ratio>") uses FakeTrexServerDouble instead of a TRex server.
"""
from __future__ import annotations

import json
import sys
import warnings


def _import_trex():
    warnings.filterwarnings("ignore")
    import lbr_trex_client  # noqa: F401  (adds TRex's paths, must come first)
    from trex.stl import api
    return api


def build_stl_streams(api, spec: dict) -> list:
    """One STLStream per sub-stream of a drivers.trex.translate spec."""
    out = []
    for sub in spec["substreams"]:
        vm = []
        for v in sub["vm"]:
            vm.append(api.STLVmFlowVar(name=v["name"], min_value=v["min"], max_value=v["max"], size=v["size"],
                                       step=v["step"], op="inc", init_value=v["min"]))
            vm.append(api.STLVmWrFlowVar(fv_name=v["name"], pkt_offset=v["offset"]))
        if sub["fix_ipv4"] is not None:
            vm.append(api.STLVmFixIpv4(offset=sub["fix_ipv4"]))
        pkt = api.STLPktBuilder(pkt_buffer=bytes.fromhex(sub["packet_hex"]), vm=vm or None)
        if sub["total_pkts"] is None:
            mode = api.STLTXCont(pps=sub["pps"])
        else:
            mode = api.STLTXSingleBurst(pps=sub["pps"], total_pkts=sub["total_pkts"])
        fs = api.STLFlowLatencyStats(pg_id=sub["pg_id"]) if sub["latency"] else api.STLFlowStats(pg_id=sub["pg_id"])
        out.append(api.STLStream(name=f"{spec['name']}#{sub['pg_id']}", packet=pkt, mode=mode, flow_stats=fs))
    return out


class FakeTrexServerDouble:
    """A test double of what STLClient gets from a TRex server; NOT a TRex.

    It accepts the same calls the driver makes on STLClient, "sends" every stream at once when
    started (single bursts: total_pkts; continuous: pps * duration), delivers (1 - loss) of it to
    the paired port (0<->1, 2<->3), and answers get_stats() in TRex's layout: per port
    opackets/ipackets/obytes/ibytes, flow_stats[pg]['tx_pkts'|'rx_pkts'][port] and 'total',
    latency[pg]['latency'] with total_min/average/total_max/jitter/histogram (usec buckets) and
    latency[pg]['err_cntrs'].  Enough to check translation and counter mapping, nothing more."""

    def __init__(self, loss: float = 0.0):
        self.loss = loss
        self.streams: dict[int, list] = {}
        self.active = False
        self._stats: dict = {}
        self.clear_stats()

    def connect(self):
        pass

    def disconnect(self, *a, **k):
        pass

    def reset(self, ports=None):
        self.streams = {}
        self.clear_stats()

    def acquire(self, ports=None, force=False):
        pass

    def remove_all_streams(self, ports=None):
        self.streams = {}

    def add_streams(self, streams, ports=None):
        for p in ports if isinstance(ports, list) else [ports]:
            self.streams.setdefault(p, []).extend(s.to_json() for s in streams)

    def clear_stats(self, ports=None):
        self._stats = {"flow_stats": {}, "latency": {}}

    def _port(self, p):
        return self._stats.setdefault(p, {"opackets": 0, "ipackets": 0, "obytes": 0, "ibytes": 0})

    def start(self, ports=None, mult="1", force=False, duration=-1, **kw):
        for port, jsons in self.streams.items():
            peer = port ^ 1
            for j in jsons:
                mode = j["mode"]
                pps = mode["rate"]["value"]
                n = mode.get("total_pkts") if mode["type"] == "single_burst" else int(pps * max(duration, 0))
                rx = int(n * (1 - self.loss))
                size = len(__import__("base64").b64decode(j["packet"]["binary"])) + 4
                self._port(port)["opackets"] += n
                self._port(port)["obytes"] += n * size
                self._port(peer)["ipackets"] += rx
                self._port(peer)["ibytes"] += rx * size
                fs = j.get("flow_stats") or {}
                if fs.get("enabled"):
                    pg = fs["stream_id"]
                    self._stats["flow_stats"][pg] = {
                        "tx_pkts": {port: n, "total": n}, "rx_pkts": {peer: rx, "total": rx},
                        "tx_bytes": {port: n * size, "total": n * size}, "rx_bytes": {peer: rx * size, "total": rx * size}}
                    if fs.get("rule_type") == "latency":
                        self._stats["latency"][pg] = {
                            "latency": {"total_min": 5.0, "average": 15.0, "total_max": 30.0, "jitter": 2,
                                        "histogram": {10: rx // 2, 20: rx - rx // 2}},
                            "err_cntrs": {"dropped": n - rx, "dup": 0, "out_of_order": 0,
                                          "seq_too_high": 0, "seq_too_low": 0}}
        self.active = False  # everything was "sent" at once

    def stop(self, ports=None):
        self.active = False

    def is_traffic_active(self, ports=None):
        return self.active

    def wait_on_traffic(self, ports=None, timeout=None, rx_delay_ms=None):
        pass

    def get_stats(self, ports=None, sync_now=True):
        return json.loads(json.dumps(self._stats, default=str))


def _jsonable(obj):
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, float) and obj != obj:
        return None
    return obj


class Session:
    def __init__(self):
        self.api = None
        self.client = None
        self.ports: list[int] = []
        self.loaded: list[int] = []   # ports that have streams since the last load

    def handle(self, req: dict) -> dict:
        op = req.get("op")
        if op == "hello":
            return {"ok": True, "pid": __import__("os").getpid()}
        if self.api is None:
            self.api = _import_trex()
        api = self.api
        if op == "translate":
            return {"ok": True, "streams": [[s.to_json() for s in build_stl_streams(api, spec)]
                                            for spec in req["streams"]]}
        if op == "connect":
            server = req["server"]
            self.ports = list(req.get("ports", [0, 1]))
            if str(server).startswith("double"):
                loss = float(server.split(":", 1)[1]) if ":" in server else 0.0
                self.client = FakeTrexServerDouble(loss)
            else:
                self.client = api.STLClient(server=server, sync_port=req.get("sync_port", 4501),
                                            async_port=req.get("async_port", 4500))
            self.client.connect()
            self.client.reset(ports=self.ports)
            double = isinstance(self.client, FakeTrexServerDouble)
            version = None if double else self.client.get_server_version().get("version")
            return {"ok": True, "double": double, "server_version": version}
        if self.client is None:
            return {"ok": False, "error": f"{op}: not connected"}
        c = self.client
        if op == "load":
            c.reset(ports=self.ports)
            self.loaded = []
            for spec in req["streams"]:
                c.add_streams(build_stl_streams(api, spec), ports=[spec["port"]])
                if spec["port"] not in self.loaded:
                    self.loaded.append(spec["port"])
            c.clear_stats()
            return {"ok": True}
        if op == "start":
            # only ports with streams: TRex refuses to start a port without a profile
            if not self.loaded:
                return {"ok": False, "error": "start: no streams loaded"}
            c.clear_stats()
            c.start(ports=self.loaded, duration=req.get("duration", -1), force=True)
            return {"ok": True}
        if op == "running":
            return {"ok": True, "running": bool(c.is_traffic_active(ports=self.ports))}
        if op == "stop":
            c.stop(ports=self.ports)
            return {"ok": True}
        if op == "stats":
            return {"ok": True, "stats": _jsonable(c.get_stats())}
        if op == "port_info":
            info = c.get_port_info(ports=self.ports)
            return {"ok": True, "ports": _jsonable(info),
                    "server_version": _jsonable(c.get_server_version()) if hasattr(c, "get_server_version") else None}
        if op == "capture_start":
            r = c.start_capture(rx_ports=req.get("rx_ports"), tx_ports=req.get("tx_ports"),
                                limit=int(req.get("limit", 1000)))
            return {"ok": True, "capture_id": r["id"]}
        if op == "capture_stop":
            pkts: list = []
            c.stop_capture(req["capture_id"], output=pkts)
            return {"ok": True, "packets": [{"hex": bytes(p["binary"]).hex(), "port": p["port"],
                                             "origin": p["origin"]} for p in pkts]}
        if op == "close":
            c.disconnect()
            self.client = None
            return {"ok": True}
        return {"ok": False, "error": f"unknown op {op!r}"}


def main() -> int:
    out = sys.stdout
    sys.stdout = sys.stderr  # TRex prints; keep the reply channel clean
    session = Session()
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            reply = session.handle(json.loads(line))
        except Exception as exc:  # reply with the error, keep serving
            reply = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
        out.write(json.dumps(reply) + "\n")
        out.flush()
        if json.loads(line).get("op") == "close" and reply.get("ok"):
            break
    return 0


if __name__ == "__main__":
    sys.exit(main())
