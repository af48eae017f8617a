"""Testbed identity: what each host of a lab is, read when the lab opens, and a short id of it.

A host's fingerprint (:data:`SNIPPET`, stdlib python3 run on the host, or here for a local
lab): its machine id (``/etc/machine-id``: two testbeds of one model stay two), CPU model,
microcode, cores, kernel, BIOS and system (``/sys/class/dmi/id``, where readable), the DPDK version (pkg-config, else the Debian package), and per port of the
profile its NIC: a PCI address's vendor/device ids and driver, and for a kernel interface
(its own, or the PCI device's) ``ethtool -i``'s driver, version and firmware; a DPDK vdev
(memif, ring, ...) is named as such. The lab adds what only the controlling side knows: the
TRex version and ofbench's build of the switch (``dut_build``).

``testbed_id`` is the first 12 hex digits of the sha256 of the canonical JSON of the hosts'
fingerprints *without* ofbench's build (the DUT changes every commit; the testbed must not), so
a BIOS, microcode, kernel, firmware, NIC or DPDK change gives a new id, and a trend keyed by it
starts a new series instead of reading the change as a regression of the DUT.
"""
from __future__ import annotations

import hashlib
import json
import subprocess
import sys

from drivers.lab.base import LabError

SNIPPET = r"""
import glob, json, os, re, subprocess, sys
def rd(p):
    try:
        return open(p).read().strip() or None
    except OSError:
        return None
def sh(argv):
    try:
        cp = subprocess.run(argv, capture_output=True, text=True, timeout=10)
        return cp.stdout if cp.returncode == 0 else None
    except (OSError, subprocess.SubprocessError):
        return None
cpu = {}
for line in (rd("/proc/cpuinfo") or "").splitlines():
    k, _, v = line.partition(":")
    k = k.strip()
    want = ("model name", "microcode", "vendor_id", "cpu family", "model", "stepping")
    if k in want and k not in cpu:
        cpu[k] = v.strip()
def ethtool(ifname):
    out = sh(["ethtool", "-i", ifname])
    if out is None:
        return {"ethtool": "n/a"}
    info = dict(l.split(": ", 1) for l in out.splitlines() if ": " in l)
    return {k: info.get(k) for k in ("driver", "version", "firmware-version", "bus-info")}
ports = {}
for name, spec in json.loads(sys.argv[1]).items():
    if spec.get("pci"):
        d = "/sys/bus/pci/devices/" + spec["pci"]
        if not os.path.isdir(d):
            ports[name] = {"pci": spec["pci"], "missing": True}
            continue
        drv = os.path.realpath(d + "/driver") if os.path.exists(d + "/driver") else None
        p = {"pci": spec["pci"], "vendor": rd(d + "/vendor"), "device": rd(d + "/device"),
             "subsystem_device": rd(d + "/subsystem_device"),
             "driver": os.path.basename(drv) if drv else None}
        nets = sorted(os.listdir(d + "/net")) if os.path.isdir(d + "/net") else []
        if nets:
            p.update(ethtool(nets[0]))
        ports[name] = p
    elif spec.get("iface"):
        ports[name] = {"iface": spec["iface"], **ethtool(spec["iface"])}
    else:
        ports[name] = {"vdev": re.sub(r"\d+$", "", (spec.get("devargs") or "").split(",")[0])}
dpdk = (sh(["pkg-config", "--modversion", "libdpdk"]) or
        sh(["dpkg-query", "-W", "-f", "${Version}", "dpdk"]) or "n/a").strip()
dmi = {k: rd("/sys/class/dmi/id/" + k) or "n/a"
       for k in ("bios_vendor", "bios_version", "bios_date", "sys_vendor", "product_name")}
print(json.dumps({
    "cpu_model": cpu.get("model name", "n/a"), "cpu_vendor": cpu.get("vendor_id", "n/a"),
    "cpu_family_model_stepping": "/".join(cpu.get(k, "?")
                                          for k in ("cpu family", "model", "stepping")),
    "microcode": cpu.get("microcode", "n/a"), "cores": os.cpu_count(),
    "kernel": os.uname().release, "dpdk": dpdk, "bios": dmi, "ports": ports,
    "machine_id": rd("/etc/machine-id") or "n/a",
}, sort_keys=True))
"""

VOLATILE = ("ofbench_build",)   # in the fingerprint, not in the testbed id


def host_ports(profile, role_of) -> dict[str, dict]:
    """{role: {port name: spec}}: the switch's and generator's ports on their hosts, and the
    conformance cables' interfaces (pure)."""
    out: dict[str, dict] = {}
    for section in ("switch", "generator"):
        for name, port in ((profile.data.get(section) or {}).get("ports") or {}).items():
            out.setdefault(role_of(section), {})[f"{section}.{name}"] = {
                "pci": port.get("pci"), "devargs": port.get("devargs")}
    conf = profile.data.get("conformance")
    if conf:
        for i, link in enumerate(conf["links"]):
            out.setdefault(conf["tester_host"], {})[f"conformance{i}.tester"] = {
                "iface": link["tester"]}
            out.setdefault(role_of("switch"), {})[f"conformance{i}.switch"] = {
                "iface": link["switch"]}
    return out


def testbed_id(fingerprint: dict) -> str:
    """12 hex digits of the sha256 of the fingerprint without its volatile parts (pure)."""
    stable = {role: {k: v for k, v in fp.items() if k not in VOLATILE}
              for role, fp in fingerprint.get("hosts", {}).items()}
    stable["trex"] = fingerprint.get("trex", "n/a")
    blob = json.dumps(stable, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def fingerprint_lab(lab, profile) -> dict:
    """{"hosts": {role: fingerprint}, "trex": ..., "testbed_id": ...} of an open lab (a remote
    lab: over SSH on each host; a local one: this box). LabError names the host that cannot
    be read."""
    remote = getattr(lab, "hosts", None) if getattr(lab, "kind", "local") != "local" else None
    hosts: dict[str, dict] = {}
    if remote:
        ports = host_ports(profile, lab.role_of)
        for role, h in remote.items():
            try:
                hosts[role] = json.loads(h.python_snippet(SNIPPET, json.dumps(ports.get(role, {}))))
            except (LabError, ValueError, OSError) as e:
                raise LabError(f"{profile.path.name}: lab.hosts.{role}: the testbed fingerprint "
                               f"cannot be read on {h.address}: {e}") from None
        sw = lab.role_of("switch")
        dut_host = sw if sw in hosts else next(iter(hosts), "none")
        if sw in hosts:
            hosts[sw]["ofbench_build"] = getattr(lab, "dut_build", "none")
        trex = lab.trex_runtime.name if getattr(lab, "trex_runtime", None) else "n/a"
    else:
        ports = host_ports(profile, lambda section: "local")
        cp = subprocess.run([sys.executable, "-c", SNIPPET, json.dumps(ports.get("local", {}))],
                            capture_output=True, text=True, timeout=60)
        if cp.returncode != 0:
            raise LabError(f"{profile.path.name}: the testbed fingerprint of this box cannot be "
                           f"read: {cp.stderr.strip()[-500:]}")
        hosts["local"] = json.loads(cp.stdout)
        trex, dut_host = "n/a", "local"
    fp = {"hosts": hosts, "trex": trex, "dut_host": dut_host}
    fp["testbed_id"] = testbed_id(fp)
    return fp


def provenance(fp: dict | None) -> dict:
    """The record keys: the id and a few facts of the DUT's host, flat (pure)."""
    if not fp:
        return {}
    first = fp["hosts"].get(fp.get("dut_host"), next(iter(fp["hosts"].values()), {}))
    return {"testbed_id": fp["testbed_id"], "testbed_cpu": str(first.get("cpu_model"))[:120],
            "testbed_microcode": str(first.get("microcode")),
            "testbed_kernel": str(first.get("kernel")), "testbed_dpdk": str(first.get("dpdk"))}
