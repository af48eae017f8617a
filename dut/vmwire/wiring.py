"""Switch-side wiring of guests: port specs for drivers.lab.switches.start_switch.

Every guest port is ``(ofport, spec)`` with the OVS form (``spec["ovs"]``) and the DPDK devargs
of the ofbench switch (``spec["devargs"]``), so the same topology runs on every switch kind:

* vhost-user (the fast path): OVS-DPDK ``dpdkvhostuserclient`` (OVS is always the client,
  the guest owns the socket, OVS reconnects when the guest restarts); ofbench
  ``vhost:<sock>,client=<0|1>``, its own port on librte_vhost as OVS-DPDK drives it
  (dut/switch/src/vhost_port.h; client=1 reconnects likewise), or with ``driver="net_vhost"``
  DPDK's vhost PMD ``net_vhost<N>,iface=<sock>,queues=1,client=<0|1>,legacy-ol-flags=1``
  (see :func:`vhost_port` for the offload-flag mode and why the PMD is not the default).
* kernel path: a tap or veth that the switch reads with DPDK's af_packet PMD
  (``net_af_packet<N>,iface=<if>``; OVS-DPDK: ``type=dpdk`` with those devargs).

Which switch kinds can do what: plain ``ovs`` (netdev datapath without DPDK) has no vhost-user
ports; :func:`switch_support` says so, and tests skip with that reason.
"""
from __future__ import annotations

from pathlib import Path

VHOST = "vhost-user"
KERNEL = "kernel"


def switch_support(kind: str, path: str) -> str | None:
    """None if switch ``kind`` can attach guests by ``path`` (vhost-user | kernel), else why not."""
    if path == VHOST and kind == "ovs":
        return "Open vSwitch without DPDK (netdev datapath) has no vhost-user ports"
    if kind not in ("ofbench", "ovs", "ovs-dpdk"):
        return f"unknown switch kind {kind!r}"
    return None


OFBENCH_VHOST_DRIVERS = ("rte_vhost", "net_vhost")


def vhost_port(name: str, ofport: int, sock: str | Path, *, switch_client: bool = True,
               driver: str = "rte_vhost") -> tuple:
    """A vhost-user port; ``switch_client=True``: the guest side is the socket server.

    ``driver`` (ofbench only): ``rte_vhost`` (default) is the switch's own port on librte_vhost,
    as OVS-DPDK's netdev-dpdk drives it; ``net_vhost`` goes through DPDK's vhost PMD, whose
    per-burst queue-state handshake, per-packet counters and one-by-one mbuf frees cost ~10 %
    of the switch core in the vmwire loop (dut/vmwire/README.md)."""
    if driver not in OFBENCH_VHOST_DRIVERS:
        raise ValueError(f"vhost driver {driver!r}: expected one of {OFBENCH_VHOST_DRIVERS}")
    if not switch_client:
        # OVS-DPDK's server-mode ports (dpdkvhostuser) live in its vhost-sock-dir under a
        # name it picks; the suites always use client mode for OVS.
        ovs = {"name": name, "type": "dpdkvhostuser"}
    else:
        ovs = {"name": name, "type": "dpdkvhostuserclient",
               "options": {"vhost-server-path": str(sock)}}
    # legacy-ol-flags=1: DPDK 22.11's vhost PMD defaults to the "compliant" offload-flag mode,
    # which on this box cut a vhost<->virtio_user loop to 1/1.5-1/3 of the legacy mode's rate
    # (testpmd io fwd as the switch, A/B in one run: 3.7/7.8 vs 11.3/15.2 Mpps). Legacy mode is
    # also the right one for guest-to-guest forwarding: a guest's "checksum left to the host"
    # (NEEDS_CSUM) stays a tx offload flag on the mbuf and reaches the receiving guest as such.
    # The switch's own port uses librte_vhost's legacy offload-flag mode too (vhost_port.h).
    client = 1 if switch_client else 0
    if driver == "rte_vhost":
        devargs = f"vhost:{sock},client={client}"
    else:
        devargs = f"net_vhost{ofport},iface={sock},queues=1,client={client},legacy-ol-flags=1"
    return ofport, {"ovs": ovs, "devargs": devargs, "path": VHOST, "sock": str(sock),
                    "driver": driver}


def af_packet_port(name: str, ofport: int, ifname: str, *, create: str | None = None,
                   peer: str | None = None) -> tuple:
    """A kernel interface (tap/veth) read by the switch through af_packet.

    ``create``: ``"tap"`` (a persistent tap a QEMU guest attaches to later) or ``"veth"``
    (a veth pair whose other end ``peer`` is the guest's) is made by VmwireTopology in its
    namespace before the switch opens the port; None = the interface already exists."""
    if create not in (None, "tap", "veth"):
        raise ValueError(f"create={create!r}: expected None, 'tap' or 'veth'")
    if create == "veth" and not peer:
        raise ValueError("a veth port needs the guest-side peer name")
    devargs = f"net_af_packet{ofport},iface={ifname}"
    return ofport, {"ovs": {"name": name, "type": "dpdk",
                            "options": {"dpdk-devargs": devargs}},
                    "devargs": devargs, "path": KERNEL, "ifname": ifname,
                    "create": create, "peer": peer}


def pcap_port(name: str, ofport: int, pcap_path: str | Path) -> tuple:
    """A capture port: every frame the switch sends to it is written to ``pcap_path``
    (DPDK net_pcap ``tx_pcap=``). Works on OVS-DPDK and on the ofbench switch."""
    devargs = f"net_pcap{ofport},tx_pcap={pcap_path}"
    return ofport, {"ovs": {"name": name, "type": "dpdk",
                            "options": {"dpdk-devargs": devargs}},
                    "devargs": devargs, "path": "capture", "pcap": str(pcap_path)}
