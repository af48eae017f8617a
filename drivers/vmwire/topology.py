"""Bring up one vmwire topology: a namespace, the slice controller, a switch of any kind with
guest ports (vhost-user, kernel-path, capture), torn down in every exit path.

Everything runs in one network namespace of the run (``ofb-<short>-<tag>``): the switch, the
controller (its loopback), the taps/veths of kernel-path guests and the testpmd guests. vhost-
user sockets live in the run's state dir. Deleting the namespace removes every interface.

Use::

    with VmwireTopology(lab, switch_kind, "vw1", ports, cfg) as topo:
        ...  topo.ns, topo.switch, topo.sock("g1"), topo.ifname("k1")

Preflight (before anything starts): tenant config valid, socket paths free, switch kind able
to carry each port's path.
"""
from __future__ import annotations

import os
import re
import time
from pathlib import Path

from drivers.vmwire.guest import GuestSetupError, check_socket_path
from dut.vmwire.tenants import VmwireConfig, write_config_file
from dut.vmwire.wiring import switch_support


def cores_of_mask(mask: str) -> list[int]:
    """CPU numbers of a hex CPU mask as OVS takes it (``"0x2"`` -> ``[1]``)."""
    try:
        bits = int(mask, 16)
    except (TypeError, ValueError):
        raise ValueError(f"CPU mask {mask!r}: expected hex like 0x2") from None
    if bits <= 0:
        raise ValueError(f"CPU mask {mask!r} selects no CPU")
    return [i for i in range(bits.bit_length()) if bits >> i & 1]


class VmwireTopology:
    def __init__(self, lab, switch_kind: str, tag: str, ports: list[tuple], cfg: VmwireConfig,
                 *, capture: dict | None = None, pmd_cpu_mask: str | None = "0x2",
                 busy_poll: bool = False):
        self.lab, self.kind, self.tag = lab, switch_kind, tag
        self.ports, self.cfg, self.capture = ports, cfg, capture
        self.pmd_cpu_mask = pmd_cpu_mask
        self.busy_poll = busy_poll
        self.ns = None
        self.switch = None
        self.ctl = None

    # ---- preflight ---------------------------------------------------------------------------
    def preflight(self) -> None:
        for ofport, spec in self.ports:
            why = switch_support(self.kind, spec.get("path", ""))
            if why and spec.get("path") != "capture":
                raise GuestSetupError(f"port {ofport}: {why}")
            if spec.get("path") == "capture" and self.kind == "ovs":
                raise GuestSetupError("capture ports (net_pcap) need a DPDK switch")
            if "sock" in spec:
                check_socket_path(spec["sock"])
        if self.pmd_cpu_mask is not None:
            try:
                cores_of_mask(self.pmd_cpu_mask)
            except ValueError as e:
                raise GuestSetupError(f"pmd_cpu_mask: {e}") from None
        known = set(self.cfg.ports.values())
        for ofport, spec in self.ports:
            if ofport not in known and spec.get("path") != "capture":
                raise GuestSetupError(f"switch port {ofport} is not a port of the tenant "
                                      f"config (ports: {sorted(known)})")
        if self.capture and not any(o == self.capture["ofport"] and s.get("path") == "capture"
                                    for o, s in self.ports):
            raise GuestSetupError(f"capture.ofport {self.capture['ofport']} is not a capture "
                                  f"port of this topology")

    # ---- lifecycle ---------------------------------------------------------------------------
    def __enter__(self):
        self.preflight()
        try:
            self._start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc):
        self.close()

    def _start(self) -> None:
        from drivers.lab.switches import start_controller, start_switch
        lab = self.lab
        self.ns = lab.add_netns(self.tag)
        # No IPv6 autoconf chatter from the interfaces we create in here.
        lab.netns_exec(self.ns, ["sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1",
                                 "net.ipv6.conf.default.disable_ipv6=1"], check=False)
        for _, spec in self.ports:
            self._create_if(spec)
        cfg_path = Path(lab.state_dir) / f"{self.tag}-slices.yaml"
        write_config_file(self.cfg, cfg_path)
        if self.capture:
            import yaml
            data = yaml.safe_load(cfg_path.read_text())
            data["capture"] = self.capture
            cfg_path.write_text(yaml.safe_dump(data, sort_keys=False))
        self.ctl, port = start_controller(lab, f"{self.tag}-ctl", "dut.vmwire.slice_app",
                                          netns=self.ns, config=str(cfg_path))
        if self.kind == "ofbench":
            self.switch = self._start_ofbench(port)
        else:
            self.switch = start_switch(lab, self.kind, name=f"{self.tag}-sw", netns=self.ns,
                                       ports=[], controller=("127.0.0.1", port),
                                       extra_ports=self.ports)
        if self.switch.ovs is not None and self.kind == "ovs-dpdk" and self.pmd_cpu_mask:
            self.switch.ovs.vsctl("set", "Open_vSwitch", ".",
                                  f"other_config:pmd-cpu-mask={self.pmd_cpu_mask}")
        self.wait_flows()

    def _start_ofbench(self, ctl_port: int):
        """The ofbench switch on the core OVS-DPDK's PMD gets (``pmd_cpu_mask``), so both
        kinds face the guests (pinned elsewhere by the suites) on the same terms. Without it
        the lab hands out cores round-robin and the switch may share a core with the guest
        testpmd: both then run at half speed and the idle sleep adds context switches."""
        from drivers.lab.switches import ofbench_settings, start_switch
        workers = ofbench_settings(getattr(self.lab, "profile", None), "ofbench").get("workers", 1)
        cores = cores_of_mask(self.pmd_cpu_mask) if self.pmd_cpu_mask else []
        cores = [c for c in cores if c < (os.cpu_count() or 1)]
        lcores = ",".join(map(str, cores[:workers])) if len(cores) >= workers else None
        sw = start_switch(self.lab, "ofbench", name=f"{self.tag}-sw", netns=self.ns, ports=[],
                          extra_ports=self.ports,
                          controller=("127.0.0.1", ctl_port), lcores=lcores,
                          idle_sleep_us=0 if self.busy_poll else None)
        sw.info.update({"lcores": lcores, "busy_poll": self.busy_poll})
        return sw

    def _create_if(self, spec: dict) -> None:
        ns, ifname = self.ns, spec.get("ifname")
        run = lambda argv: self.lab.netns_exec(ns, argv)  # noqa: E731
        if spec.get("create") == "tap":
            run(["ip", "tuntap", "add", "mode", "tap", "name", ifname])
        elif spec.get("create") == "veth":
            run(["ip", "link", "add", ifname, "type", "veth", "peer", "name", spec["peer"]])
            run(["ip", "link", "set", spec["peer"], "up"])
        else:
            return
        # Offloads would hand af_packet oversized or unchecksummed frames.
        for i in filter(None, (ifname, spec.get("peer"))):
            self.lab.netns_exec(ns, ["ethtool", "-K", i, "tx", "off", "rx", "off", "tso", "off",
                                     "gso", "off", "gro", "off"], check=False)
        run(["ip", "link", "set", ifname, "up"])

    def wait_flows(self, timeout_s: float = 30.0) -> None:
        """Until the slice app reports its flows installed on this switch."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if re.search(r"installed \d+ flows", self.ctl.log_path.read_text(errors="replace")):
                return
            if not self.ctl.alive():
                break
            time.sleep(0.1)
        raise RuntimeError(f"{self.kind} switch never got the slice flows; controller log "
                           f"{self.ctl.log_path}")

    def close(self) -> None:
        if self.switch is not None:
            try:
                self.switch.stop()
            finally:
                self.switch = None
        if self.ctl is not None:
            self.lab.supervisor.stop(self.ctl)
            self.ctl = None
        if self.ns is not None:
            self.lab.del_netns(self.ns)
            self.ns = None

    # ---- helpers -----------------------------------------------------------------------------
    def switch_procs(self) -> list:
        """The processes that forward (ofbench; OVS's ovs-vswitchd, not its ovsdb-server)."""
        if self.switch is None:
            return []
        if self.switch.ovs is not None:
            return [p for p in self.switch.ovs.procs if p.name.endswith("vswitchd")]
        return [self.switch.proc] if self.switch.proc is not None else []

    def switch_pids(self) -> list[int]:
        return [p.pid for p in self.switch_procs()]

    def port_stats(self) -> dict[int, dict[str, int]]:
        """OpenFlow port counters (OVS kinds): {ofport: {rx_packets, tx_packets, tx_dropped}}."""
        if self.switch is None or self.switch.ovs is None:
            return {}
        out = self.switch.ovs.ofctl("dump-ports", "br0")
        stats: dict[int, dict[str, int]] = {}
        for m in re.finditer(r"port\s+(\d+): rx pkts=(\d+|\?).*?\n\s+tx pkts=(\d+|\?), "
                             r"bytes=\S+, drop=(\d+|\?)", out):
            num = lambda s: int(s) if s.isdigit() else 0  # noqa: E731
            stats[int(m.group(1))] = {"rx_packets": num(m.group(2)),
                                      "tx_packets": num(m.group(3)),
                                      "tx_dropped": num(m.group(4))}
        return stats
