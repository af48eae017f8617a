"""os-ken app: steer each WAN app's traffic to the switch port of its selected path.

Started by the lead's launcher:
    python -m dut.controller.launcher --app dut.wan.steering_app --config steer.yaml ...

Config (YAML, strict: spec :data:`CONFIG` in configschema/'s language, errors name the file,
line and key; the launcher passes its path in OFBENCH_APP_CONFIG):
    in_port: 1                        # OpenFlow port the sender is on
    paths: {path1: 2, path2: 3}       # path name -> OpenFlow port towards that path
    apps: {app1: 47001, app2: 47002}  # app name -> UDP destination port (the app id on the wire)
    assignment_file: /run/.../assign.json
    priority: 100                     # optional

The selector (suite or any other process) writes the assignment file atomically
({"version": N, "assignment": {"app1": "path1", ...}}); this app polls it and, when the
version changes, installs one flow per app: in_port + IPv4/UDP + udp_dst -> output(path port),
with OFPFC_ADD over the same match and priority, which replaces the action atomically in the
switch: frames are forwarded by the old or the new flow, never dropped for lack of one.  After a
barrier it writes `<assignment_file>.applied` with the version, so the writer knows the move
is in force.  Everything else is dropped (table-miss: no flow; the hosts use static ARP).

Logic in pure functions (parse_config, flows_for, changed_flows); the event handlers are thin.
"""
from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import dataclass

from configschema import SchemaError, Spec, load_yaml, validate


class SteeringConfigError(SchemaError):
    """A steering config that must not be used (names file, line and key), or an assignment
    that names an app or path the config lacks."""


@dataclass(frozen=True)
class SteeringConfig:
    in_port: int
    paths: dict[str, int]
    apps: dict[str, int]
    assignment_file: str
    priority: int = 100
    poll_s: float = 0.05


OFPORT = Spec(int, ge=1, lt=0xFFFFFF00, what="an OpenFlow port number 1..0xfffffeff")
# The config file's spec (configschema/); defaults are SteeringConfig's.
CONFIG = Spec(dict, what="a mapping of keys", fields={
    "in_port": Spec(int, required=True, ge=1, lt=0xFFFFFF00,
                    what="an OpenFlow port number 1..0xfffffeff"),
    "paths": Spec(dict, required=True, min_len=1, keys=Spec(str, what="a path name"),
                  values=OFPORT),
    "apps": Spec(dict, required=True, min_len=1, keys=Spec(str, what="an app name"),
                 values=Spec(int, ge=1, le=65535, what="a UDP port 1..65535")),
    "assignment_file": Spec(str, required=True, min_len=1),
    "priority": Spec(int, ge=0, le=65535),
    "poll_s": Spec(float, gt=0, convert=float),
})


def parse_config(data, source: str = "<config>", node=None) -> SteeringConfig:
    """Validate a mapping into a SteeringConfig; ``node`` (the YAML document) adds lines."""
    return SteeringConfig(**validate(CONFIG, data, source=source, error=SteeringConfigError,
                                     node=node))


def load_config(path: str) -> SteeringConfig:
    data, node = load_yaml(path, SteeringConfigError)
    return parse_config(data, str(path), node)


def flows_for(cfg: SteeringConfig, assignment: dict[str, str]) -> dict[int, int]:
    """udp_dst -> output port for every assigned app; unknown names raise (never guess)."""
    out = {}
    for app, path in assignment.items():
        if app not in cfg.apps:
            raise SteeringConfigError(f"assignment names unknown app {app!r}")
        if path not in cfg.paths:
            raise SteeringConfigError(f"assignment puts {app} on unknown path {path!r}")
        out[cfg.apps[app]] = cfg.paths[path]
    return out


def changed_flows(old: dict[int, int], new: dict[int, int]) -> tuple[dict[int, int], list[int]]:
    """(flows to add or re-point, udp ports whose flow is to be deleted)."""
    return {k: v for k, v in new.items() if old.get(k) != v}, sorted(set(old) - set(new))


def write_assignment(path: str, version: int, assignment: dict[str, str]) -> None:
    """Atomic write for the selector side."""
    tmp = f"{path}.tmp"
    with open(tmp, "w") as f:
        json.dump({"version": version, "assignment": assignment}, f)
    os.replace(tmp, path)


def write_applied(path: str, version: int, moved: int) -> None:
    """Atomic write of `<path>.applied` (the steering app's side): version in force."""
    tmp = f"{path}.applied.{version}.tmp"
    with open(tmp, "w") as f:
        json.dump({"version": version, "moved": moved, "t": time.time()}, f)
    os.replace(tmp, f"{path}.applied")


def applied_version(path: str) -> int | None:
    try:
        with open(f"{path}.applied") as f:
            return int(json.load(f)["version"])
    except (OSError, ValueError, KeyError):
        return None


def wait_applied(path: str, version: int, timeout_s: float = 10.0) -> float:
    """Wait until the app reports `version` installed; returns seconds waited."""
    t0 = time.monotonic()
    while (applied_version(path) or -1) < version:
        if time.monotonic() - t0 > timeout_s:
            raise TimeoutError(f"steering app did not apply assignment version {version} "
                               f"within {timeout_s} s")
        time.sleep(0.01)
    return time.monotonic() - t0


# --- os-ken glue (imported only when os_ken is present, i.e. under the launcher) -------------
try:
    from os_ken.base import app_manager
    from os_ken.controller import ofp_event
    from os_ken.controller.handler import CONFIG_DISPATCHER, MAIN_DISPATCHER, set_ev_cls
    from os_ken.ofproto import ofproto_v1_3
except ImportError:  # pragma: no cover
    app_manager = None

if app_manager is not None:
    class WanSteeringApp(app_manager.OSKenApp):
        OFP_VERSIONS = [ofproto_v1_3.OFP_VERSION]

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            from dut.controller.launcher import app_config_path
            src = app_config_path() or os.environ.get("OFBENCH_WAN_STEERING")
            if not src:
                raise SteeringConfigError("no config: start with `python -m dut.controller.launcher "
                                          "--app dut.wan.steering_app --config steer.yaml`")
            self.cfg = load_config(src)
            self.dp = None
            self.installed: dict[int, int] = {}
            self.version = -1
            self.barriers: dict[int, dict] = {}     # barrier xid -> report to write on reply
            self.lock = threading.Lock()
            threading.Thread(target=self._poll, daemon=True, name="wan-steer-poll").start()

        @set_ev_cls(ofp_event.EventOFPSwitchFeatures, CONFIG_DISPATCHER)
        def on_features(self, ev):
            dp = ev.msg.datapath
            ofp, parser = dp.ofproto, dp.ofproto_parser
            dp.send_msg(parser.OFPFlowMod(datapath=dp, command=ofp.OFPFC_DELETE, table_id=ofp.OFPTT_ALL,
                                          out_port=ofp.OFPP_ANY, out_group=ofp.OFPG_ANY,
                                          match=parser.OFPMatch()))
            with self.lock:
                self.dp, self.installed, self.version, self.barriers = dp, {}, -1, {}
            self.logger.info("wan steering: datapath %016x connected", dp.id)

        def _poll(self):
            while True:
                time.sleep(self.cfg.poll_s)
                try:
                    with open(self.cfg.assignment_file) as f:
                        doc = json.load(f)
                except (OSError, ValueError):
                    continue
                with self.lock:
                    if self.dp is None or doc.get("version") == self.version:
                        continue
                    try:
                        self._apply(doc)
                    except Exception as e:   # keep the controller alive; report and retry
                        self.logger.error("wan steering: %s", e)

        def _apply(self, doc):
            dp = self.dp
            ofp, parser = dp.ofproto, dp.ofproto_parser
            new = flows_for(self.cfg, doc["assignment"])
            put, delete = changed_flows(self.installed, new)
            for udp_dst, out_port in sorted(put.items()):
                match = parser.OFPMatch(in_port=self.cfg.in_port, eth_type=0x0800, ip_proto=17,
                                        udp_dst=udp_dst)
                inst = [parser.OFPInstructionActions(ofp.OFPIT_APPLY_ACTIONS,
                                                     [parser.OFPActionOutput(out_port)])]
                dp.send_msg(parser.OFPFlowMod(datapath=dp, priority=self.cfg.priority, match=match,
                                              command=ofp.OFPFC_ADD, instructions=inst))
            for udp_dst in delete:
                match = parser.OFPMatch(in_port=self.cfg.in_port, eth_type=0x0800, ip_proto=17,
                                        udp_dst=udp_dst)
                dp.send_msg(parser.OFPFlowMod(datapath=dp, priority=self.cfg.priority, match=match,
                                              command=ofp.OFPFC_DELETE_STRICT, out_port=ofp.OFPP_ANY,
                                              out_group=ofp.OFPG_ANY))
            # Barrier, then report: the .applied file means the switch has the flows.  The
            # report is registered under the barrier's xid *before* the request goes out, so a
            # reply handled on another thread can never arrive ahead of its record.
            req = parser.OFPBarrierRequest(dp)
            dp.set_xid(req)
            self.installed, self.version = new, doc["version"]
            self.barriers[req.xid] = {"version": self.version, "moved": len(put)}
            dp.send_msg(req)
            self.logger.info("wan steering: version %s: %d flow(s) set, %d deleted",
                             self.version, len(put), len(delete))

        @set_ev_cls(ofp_event.EventOFPBarrierReply, MAIN_DISPATCHER)
        def on_barrier(self, ev):
            with self.lock:
                info = self.barriers.pop(ev.msg.xid, None)
            if info is not None:
                write_applied(self.cfg.assignment_file, info["version"], info["moved"])
