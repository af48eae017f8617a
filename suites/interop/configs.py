"""FAUCET configs (faucet.yaml) for the interop scenarios, as YAML text. One datapath ``sw``
(dp_id 1, the id every switch of the suite is started with), hardware "Open vSwitch" (FAUCET's
generic multi-table pipeline; ofbench gets the same tables OVS does)."""
from __future__ import annotations

import yaml

DP_ID = 1


def _dp(interfaces: dict, **dp_extra) -> dict:
    return {"sw": {"dp_id": DP_ID, "hardware": "Open vSwitch", **dp_extra,
                   "interfaces": interfaces}}


def dump(cfg: dict) -> str:
    return yaml.safe_dump(cfg, sort_keys=False)


def l2(ports: list[int], vid: int = 100) -> str:
    """One VLAN, every port untagged in it."""
    return dump({"vlans": {"v100": {"vid": vid}},
                 "dps": _dp({p: {"native_vlan": "v100"} for p in ports})})


def vlans(untagged: dict[int, str], tagged: dict[int, list[str]] | None = None,
          vids: dict[str, int] | None = None, vips: dict[str, str] | None = None,
          route: bool = False, acls_in: dict[int, str] | None = None,
          acls: dict | None = None) -> str:
    """VLANs by name (``vids``: name -> vid), ports untagged in one VLAN or tagged in several,
    FAUCET's router between VLANs with virtual IPs (``vips``: name -> 'ip/prefix'), port ACLs
    (``acls_in``: port -> acl name; ``acls``: name -> rules)."""
    vids = vids or {}
    names = set(untagged.values()) | {n for ns in (tagged or {}).values() for n in ns}
    vl = {}
    for n in sorted(names):
        vl[n] = {"vid": vids[n]}
        if vips and n in vips:
            vl[n]["faucet_vips"] = [vips[n]]
    ifs: dict = {}
    for p, n in untagged.items():
        ifs.setdefault(p, {})["native_vlan"] = n
    for p, ns in (tagged or {}).items():
        ifs.setdefault(p, {})["tagged_vlans"] = list(ns)
    for p, a in (acls_in or {}).items():
        ifs.setdefault(p, {})["acls_in"] = [a]
    cfg: dict = {"vlans": vl}
    if acls:
        cfg["acls"] = acls
    if route:
        cfg["routers"] = {"r1": {"vlans": sorted(vips or names)}}
    cfg["dps"] = _dp(dict(sorted(ifs.items())))
    return dump(cfg)
