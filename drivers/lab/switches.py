"""Start the switch under test of any kind with the same call, so a suite compares
``ofbench``, ``ovs`` and ``ovs-dpdk`` through identical topology and controller.

Ports are kernel interfaces (veth ends in ``netns``) given as ``(ofport, ifname)``: ``ovs`` and
``ovs-dpdk`` attach them as netdev ports. Fast
wires (memif, vhost-user) are added by the suites that need rates, through ``extra_ports``.
``ofbench`` reads kernel interfaces with DPDK's af_xdp PMD.
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

from drivers.lab.ovs import OvsInstance

REPO = Path(__file__).resolve().parents[2]


def build_dir() -> Path:
    return Path(os.environ.get("OFBENCH_BUILD_DIR") or REPO / "build")


def switch_available(kind: str, profile) -> str | None:
    """None if switch ``kind`` can run in this lab, else the reason it cannot (for a skip)."""
    if kind == "ofbench":
        binary = build_dir() / "dut/switch/ofswitch"
        if profile.lab_kind == "local" and not binary.exists():
            return f"ofbench switch not built ({binary} missing)"
        return None
    if kind == "ovs":
        return None if "ovs" in profile.features else "profile lacks feature ovs"
    if kind == "ovs-dpdk":
        if "ovs_dpdk" not in profile.features:
            return "profile lacks feature ovs_dpdk"
        from drivers.lab.local import hugepages_usable
        if profile.lab_kind == "local" and not hugepages_usable():
            return ("ovs-dpdk needs hugepages (it always runs --in-memory) and none are free "
                    "or /dev/hugepages-ofbench is not mounted")
        return None
    return f"unknown switch kind {kind!r}"


def ofbench_settings(profile, kind: str, env=os.environ) -> dict:
    """The profile's settings for our switch (``switch.lookup``, ``switch.workers``) when
    ``kind`` is the profile's own switch; env ``OFBENCH_SWITCH_LOOKUP`` overrides the lookup
    (as in the conformance suite). For ofbench run as a peer, the launcher's defaults."""
    out: dict = {}
    sw = profile.switch if profile is not None else {}
    if kind == "ofbench" and sw.get("kind") == "ofbench":
        out = {"lookup": sw.get("lookup", "trie"), "workers": int(sw.get("workers", 1))}
    if kind == "ofbench" and env.get("OFBENCH_SWITCH_LOOKUP"):
        out["lookup"] = env["OFBENCH_SWITCH_LOOKUP"]
    return out


@dataclass
class SwitchHandle:
    kind: str
    name: str
    dpid: int
    stop_fn: object
    ovs: OvsInstance | None = None
    proc: object | None = None
    info: dict = field(default_factory=dict)

    def stop(self) -> None:
        self.stop_fn()


def start_switch(lab, kind: str, *, name: str, netns: str | None,
                 ports: list[tuple[int, str]], controller: tuple[str, int], dpid: int = 1,
                 extra_ports: list[tuple[int, dict]] | None = None) -> SwitchHandle:
    """Start switch ``kind`` connected to ``controller`` with ``ports``; returns a handle.

    ``extra_ports`` are kind-specific port specs ``(ofport, {"ovs": {...}, "devargs": str})``.
    """
    host, port = controller
    if kind in ("ovs", "ovs-dpdk"):
        ovs = OvsInstance(lab, name, dpdk=(kind == "ovs-dpdk"), netns=netns).start()
        ovs.add_bridge("br0", dpid=dpid, controller=f"tcp:{host}:{port}")
        for ofport, ifname in ports:
            ovs.add_port("br0", ifname, ofport=ofport)
        for ofport, spec in extra_ports or []:
            ovs.add_port("br0", spec["ovs"]["name"], ofport=ofport,
                         type=spec["ovs"].get("type"), options=spec["ovs"].get("options"))
        return SwitchHandle(kind, name, dpid, ovs.stop, ovs=ovs)
    if kind == "ofbench":
        from dut.switch.launcher import start_ofswitch
        # af_xdp, not af_packet: the kernel strips VLAN tags before af_packet sees them and the
        # PMD re-inserts them as 0x8100, which turns 802.1ad into 802.1Q (QinQ/PBB break).
        devports = [(ofport, f"net_af_xdp{ofport},iface={ifname}")
                    for ofport, ifname in ports]
        devports += [(ofport, spec["devargs"]) for ofport, spec in extra_ports or []]
        settings = ofbench_settings(getattr(lab, "profile", None), kind)
        proc = start_ofswitch(lab, name, ports=devports, controller=controller, dpid=dpid,
                              netns=netns, **settings)
        return SwitchHandle(kind, name, dpid, lambda: lab.supervisor.stop(proc), proc=proc,
                            info=settings)
    raise ValueError(f"unknown switch kind {kind!r}")


def start_controller(lab, name: str, app: str | list[str], *, netns: str | None,
                     port: int | None = None, config: str | None = None, hub: str = "native",
                     extra: list[str] | None = None, ready_timeout_s: float = 30.0):
    """Start os-ken app(s) through dut.controller.launcher under the supervisor; returns
    ``(proc, port)`` once the OpenFlow listener accepts connections."""
    port = port or lab.free_tcp_port()
    ready = Path(lab.state_dir) / f"{name}.ready"
    ready.unlink(missing_ok=True)
    apps = [app] if isinstance(app, str) else list(app)
    argv = [sys.executable, "-m", "dut.controller.launcher",
            *sum((["--app", a] for a in apps), []),
            "--ofp-listen-host", "127.0.0.1", "--ofp-port", str(port), "--hub", hub,
            "--ready-file", str(ready)]
    if config:
        argv += ["--config", str(config)]
    if extra:
        argv += ["--", *extra]
    proc = lab.supervisor.start(name, argv, netns=netns, cwd=REPO,
                                env={"PYTHONPATH": str(REPO), "PYTHONUNBUFFERED": "1"},
                                ready=ready.exists, ready_timeout_s=ready_timeout_s)
    return proc, port
