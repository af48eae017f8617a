"""Tenant slices on one switch (OpenFlow 1.3 os-ken app): traffic never crosses tenants.

Start::

    python -m dut.controller.launcher --app dut.vmwire.slice_app --config slices.yaml

``slices.yaml`` is the vmwire mapping of dut/vmwire/tenants.py (ports + tenants), optionally
with ``capture: {ofport: N, ports: [g1, ...]}`` (see below).

Design (RISE 4.0): a tenant is identified by the *logical port* its guest is wired to, never by
VLAN id or MAC, so tenants may use any VLAN ids and any (even spoofed) MACs. Every flow matches
``in_port`` only, and its outputs are the other ports of the in-port's tenant; a frame whose
in-port belongs to no tenant, or to a tenant of one port, is dropped; table-miss drops. A slice
of two ports is therefore a wire; a larger slice floods inside itself (a hub: correct and
isolating, not bandwidth-optimal - MAC learning inside a slice would be the next step, and it
must stay keyed by tenant so spoofed MACs cannot move a flow across slices).

Isolation invariant (checked by tests over random configs): for every flow, every output port
is in the same tenant as the flow's in_port, or is the capture port.

Capture: a DPDK switch's vhost-user ports cannot be captured with tcpdump (RISE's open issue).
With ``capture``, the app adds ``output:<capture ofport>`` to every flow that enters or leaves a
listed port, so a pcap-writing port (DPDK net_pcap ``tx_pcap=``, see dut/vmwire/capture.py)
receives a copy of both directions. This works on any OpenFlow 1.3 switch.

Concurrency: os-ken calls the handlers on its hub; the flow computation is pure and cached.
"""
from __future__ import annotations

from dataclasses import dataclass

from configschema import Invalid, Spec
from dut.vmwire.tenants import (OFPP_MAX, VMWIRE, VmwireConfig, VmwireConfigError,
                                tenant_checks, load_config_file)

PRIORITY_SLICE = 100
PRIORITY_MISS = 0


@dataclass(frozen=True)
class SliceFlow:
    priority: int
    in_port: int | None        # None = match everything (table-miss)
    outputs: tuple[int, ...]   # empty = drop

    def describe(self) -> str:
        m = f"in_port={self.in_port}" if self.in_port is not None else "*"
        a = ",".join(f"output:{o}" for o in self.outputs) or "drop"
        return f"priority={self.priority},{m} actions={a}"


def slice_flows(cfg: VmwireConfig, capture_ofport: int | None = None,
                capture_ports: tuple[str, ...] | list[str] = ()) -> list[SliceFlow]:
    """The whole flow table that isolates ``cfg``'s tenants (pure; order is deterministic)."""
    captured = {cfg.ports[p] for p in capture_ports}
    flows = [SliceFlow(PRIORITY_MISS, None, ())]
    for name, ofport in sorted(cfg.ports.items(), key=lambda kv: kv[1]):
        tenant = cfg.tenant_of.get(name)
        outs = [cfg.ports[p] for p in cfg.tenants[tenant] if p != name] if tenant else []
        if capture_ofport is not None and (ofport in captured or captured & set(outs)):
            outs.append(capture_ofport)
        flows.append(SliceFlow(PRIORITY_SLICE, ofport, tuple(outs)))
    return flows


def _capture_checks(data: dict) -> None:
    """The tenant checks, then: the capture port is no tenant port, its ports are known."""
    tenant_checks(data)
    cap = data.get("capture")
    if cap is None:
        return
    if cap["ofport"] in data["ports"].values():
        raise Invalid(f"expected a port number that is no tenant port, got {cap['ofport']!r}",
                      at=("capture", "ofport"))
    for i, p in enumerate(cap["ports"]):
        if p not in data["ports"]:
            raise Invalid(f"unknown port {p!r} (known ports: {', '.join(sorted(data['ports']))})",
                          at=("capture", "ports", i))


# The slice app's config file: the vmwire mapping plus ``capture``.
SLICE_APP_CONFIG = VMWIRE.with_fields(capture=Spec(dict, fields={
    "ofport": Spec(int, required=True, ge=1, lt=OFPP_MAX,
                   what=f"an OpenFlow port number 1..{OFPP_MAX - 1}"),
    "ports": Spec(list, default=list, items=Spec(str, what="a port name")),
}))
SLICE_APP_CONFIG.check = _capture_checks


def load_app_config(path) -> tuple[VmwireConfig, int | None, tuple[str, ...]]:
    """Tenant config plus the optional ``capture`` key."""
    cfg, data = load_config_file(path, spec=SLICE_APP_CONFIG)
    cap = data.get("capture")
    return cfg, (cap["ofport"] if cap else None), tuple(cap["ports"]) if cap else ()


# ---- os-ken glue ----------------------------------------------------------------------------
try:
    from os_ken.base import app_manager
    from os_ken.controller import ofp_event
    from os_ken.controller.handler import CONFIG_DISPATCHER, set_ev_cls
    from os_ken.ofproto import ofproto_v1_3
except ImportError:  # pragma: no cover - os-ken is in the venv
    app_manager = None

if app_manager is not None:
    import logging

    from dut.controller.launcher import app_config_path

    LOG = logging.getLogger("dut.vmwire.slice_app")

    class SliceApp(app_manager.OSKenApp):
        OFP_VERSIONS = [ofproto_v1_3.OFP_VERSION]

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            path = app_config_path()
            if not path:
                raise VmwireConfigError("slice_app: no config (start it with --config <yaml>)")
            cfg, cap_port, cap_names = load_app_config(path)
            self.flows = slice_flows(cfg, cap_port, cap_names)
            LOG.info("slice_app: %d tenants, %d flows", len(cfg.tenants), len(self.flows))

        @set_ev_cls(ofp_event.EventOFPSwitchFeatures, CONFIG_DISPATCHER)
        def on_features(self, ev):
            # Every (re)connection rebuilds the whole table: a restarted switch or a stale
            # table from a previous run must not keep a cross-tenant flow.
            dp = ev.msg.datapath
            ofp, parser = dp.ofproto, dp.ofproto_parser
            dp.send_msg(parser.OFPFlowMod(dp, command=ofp.OFPFC_DELETE, table_id=ofp.OFPTT_ALL,
                                          out_port=ofp.OFPP_ANY, out_group=ofp.OFPG_ANY,
                                          match=parser.OFPMatch()))
            for f in self.flows:
                match = parser.OFPMatch(in_port=f.in_port) if f.in_port is not None \
                    else parser.OFPMatch()
                actions = [parser.OFPActionOutput(o, 0) for o in f.outputs]
                inst = [parser.OFPInstructionActions(ofp.OFPIT_APPLY_ACTIONS, actions)] \
                    if actions else []
                dp.send_msg(parser.OFPFlowMod(dp, priority=f.priority, match=match,
                                              instructions=inst))
            dp.send_msg(parser.OFPBarrierRequest(dp))
            LOG.info("slice_app: dpid %016x: installed %d flows", dp.id, len(self.flows))
