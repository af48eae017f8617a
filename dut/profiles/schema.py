"""Lab profiles: what a lab is (dut/profiles/<name>.yaml, or a path).

A profile is parsed strictly before anything starts, by the schema language every strict
config of ofbench shares (configschema/): unknown keys are rejected, types and ranges are
checked, required keys are named. Every error is a :class:`ProfileError` whose message names the
file, the line and the full key path (``lab1.yaml:21: switch.workers: expected int >= 1, got
str 'two'``), so a typo in a 40-line lab file costs seconds, not a wasted night run.

The ``vmwire`` section is owned by that system: its spec is dut/vmwire/tenants.py's ``VMWIRE``,
checked here in place, so its errors carry this file, line and key path too.

Schema version 1 (``schema_version: 1``)::

    schema_version: 1
    name: str                      # defaults to the file's stem
    description: str
    lab: {kind: local | remote, emulated: bool, known_hosts: str, state_dir: str,
          hosts: {<role>: {address, user, ssh_port, key_file, workdir}},
                                   # address: an IP or host name; user: a POSIX user name;
                                   # workdir: absolute, normalised, >= 2 levels deep, not a
                                   # system dir (rsync --delete there, behind a marker file)
          coordinator: "HOST:PORT",  # labgrid's coordinator: runs lease the lab's place first
          place: str,                # its place there (default: the profile's name)
          tags: {<key>: <value>},    # the place's tags besides those from the profile (pool)
          testbed: str}              # the testbed type tag (default: emulated / local / remote)
                                   # remote: each role (switch, controller, generator) a host
                                   # reached over SSH; workdir = its ofbench tree (synced and
                                   # built there); emulated: the harness builds the hosts as
                                   # namespaces with sshd on this box (drivers/lab/emulated.py)
    features: [str]                # from FEATURES; tests declare what they need
    switch: {kind: ofbench|ovs|ovs-dpdk, workers: int, cores: str, host: <role>,
             lookup: tuple|dtree|trie|simple,  # ofbench's flow lookup (dut/switch/launcher.py LOOKUPS)
             busy_poll: bool,        # idle workers spin (dedicated cores) instead of sleeping
             cache_lines: int,       # ofbench's flow cache per worker, 64-byte lines, a power
                                     # of 2 (default the binary's: 262144, 16 MiB)
             fail_mode: secure|standalone,  # ofbench with no controller (default secure)
             ports: {<name>: {devargs: str, speed_gbps: num, pci: str}}}
    peers: [ofbench|ovs|ovs-dpdk]  # switches measured side by side with `switch`
    one_dut: bool                  # default false. true: the controller, WAN and vmwire suites
                                   # run on `switch` only (its kind, build, lookup, workers),
                                   # as conformance and throughput do, never on a kind of
                                   # their own (peers, OFBENCH_WAN_SWITCH); Profile.
                                   # suite_switch_kinds. Every record's provenance names its
                                   # switch kind and lookup either way
    controller: {host: str, port: int}            # port 0 = pick a free one per run
    generator: {kind: softgen|trex, server: str, sync_port: int, async_port: int, cores: str,
                low_end: bool, limit_memory_mb: int,
                ports: {<name>: {devargs: str, speed_gbps: num, trex_port: int}}}
               # trex: server "local" = the lab starts a TRex server on this box (cores: its
               # CPUs, "1" with low_end: true, "<master>,<rx>,<dp>..." without); an address =
               # a running server
    links: [{generator: <generator port>, switch: <switch port>}]
    conformance: {tester_host: <role>,     # a remote lab: the host of the tester OVS and the
                                           # os-ken test tool (the switch's controller there)
                  links: [{tester: <interface>, switch: <interface>}] x 3}
               # three cables, kernel interfaces on the tester host and the switch host, in the
               # tool's port order 1, 2, 3 (the switch opens its ends with af_xdp)
    targets: {<suite>: {<test name>: {<metric>: "<op> <number>"}}}
    influx: {url: str, token: "-", org: str, bucket: str}   # the token only from the env/a file
    search: {method: mlrsearch,            # the throughput search (RFC 9971, drivers/trafficgen/mlr.py)
             min_load: num, max_load: num,   # pps; max_load defaults to the generator's ceiling
             goals: [{name: str,             # e.g. ndr, pdr: the record's <name>_mpps
                      goal_loss_ratio: [0, 1), goal_exceed_ratio: [0, 1),
                      goal_initial_trial_duration: s > 0, goal_final_trial_duration: s >= initial,
                      goal_duration_sum: s >= final, goal_width: (0, 1) relative}]}
               # RFC 9971's names; absent = NDR (loss 0) and PDR (loss 0.005), exceed 0.5,
               # short trials in a normal run, 1 s trials and 21 s sums with --nightly
    rig: {wire: vhost|memif, ring_log2: 8..15, housekeeping: off|gen|switch, poller_nice: -20..19,
          switch_policy: other|fifo}
               # the end-to-end rig on a local lab (suites/throughput/rig.py, issue 44): ofbench's
               # wire to softgen (the vhost-user peers stay on vhost), its rx ring depth (memif
               # <= 14), the core of the run's non-polling threads, the pollers' nice, the
               # switch worker's scheduling policy
    vmwire: {ports, tenants, switch_vhost_mode}   # dut/vmwire/tenants.py
"""
from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from configschema import Invalid, SchemaError, Spec, load_yaml, validate
from dut.switch.launcher import DEFAULT_LOOKUP, LOOKUPS as SWITCH_LOOKUPS  # the switch's own
from dut.vmwire.tenants import VMWIRE

PROFILE_DIR = Path(__file__).resolve().parent
SCHEMA_VERSION = 1

SWITCH_KINDS = ("ofbench", "ovs", "ovs-dpdk")
GENERATOR_KINDS = ("softgen", "trex")
LAB_KINDS = ("local", "remote")
FEATURES = {
    "netns": "network namespaces and veth pairs on the local box",
    "hugepages": "2 MB hugepages with a hugetlbfs mount",
    "softgen": "the ofbench DPDK generator",
    "trex": "a reachable TRex server",
    "line_rate_nic": "physical NICs that reach 10GbE line rate",
    "kvm": "usable KVM for QEMU guests",
    "vm_guests": "QEMU guests can be started (TCG or KVM)",
    "ovs": "Open vSwitch userspace (netdev datapath)",
    "ovs_dpdk": "Open vSwitch with DPDK",
    "influxdb": "an InfluxDB server for results",
    "wanem": "the user-space WAN emulator",
}
TARGET_RE = re.compile(r"^\s*(>=|<=|>|<|==)\s*(-?\d+(\.\d+)?([eE][-+]?\d+)?)\s*$")

class ProfileError(SchemaError):
    """A profile that must not be used. The message names the file, the line and the key."""


def _check_power_of_2(n: int) -> str | None:
    return None if n & (n - 1) == 0 else f"expected a power of 2, got {n}"


def _check_target(expr: str) -> str | None:
    return None if TARGET_RE.match(expr) else (
        f"bad target {expr!r}: write '<op> <number>' with op one of >= <= > < ==")


TCP_PORT = dict(ge=0, le=65535)
COORDINATOR_RE = r"(\[[0-9A-Fa-f:]+\]|[A-Za-z0-9_.-]+):[0-9]{1,5}"
PLACE_RE = r"[A-Za-z0-9_.-]{1,64}"


# Profile strings that reach a shell (commands run over SSH, rsync's destination), a path or a
# process's argv on a lab host are checked here, before anything runs: a leading '-' would be
# read as an option, a space or ';' as shell, a workdir of '/opt' would be emptied by rsync
# --delete (drivers/lab/remote.py also wants its marker file there).
IFNAME = Spec(str, required=True, pattern=r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,14}",
              what="a kernel interface name (1-15 of A-Z a-z 0-9 _ . -, not starting with "
                   "'-' or '.')")
# names that become process names, DPDK file prefixes, namespaces and file names (host roles,
# port names): a safe alphabet, no leading '-'
NAME = Spec(str, pattern=r"[A-Za-z0-9_][A-Za-z0-9_-]{0,31}",
            what="a name of 1-32 of A-Z a-z 0-9 _ - (not starting with '-')")
HOSTNAME_RE = re.compile(r"(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
                         r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*")
# POSIX portable user names (useradd's default rule, plus upper case)
USER_RE = r"[A-Za-z_][A-Za-z0-9_.-]{0,31}"
SAFE_PATH_RE = re.compile(r"[A-Za-z0-9_.@+/-]+")
# directories rsync --delete must never be pointed at, even two levels deep
SYSTEM_DIRS = frozenset({
    "/usr/bin", "/usr/sbin", "/usr/lib", "/usr/lib32", "/usr/lib64", "/usr/libx32",
    "/usr/libexec", "/usr/include", "/usr/share", "/usr/src", "/usr/local", "/usr/games",
    "/var/lib", "/var/log", "/var/cache", "/var/spool", "/var/mail", "/var/tmp", "/var/run",
    "/var/backups", "/var/www", "/var/opt", "/var/local", "/run/user", "/run/ofbench"})
SYSTEM_TREES = frozenset({"proc", "sys", "dev", "etc", "boot", "bin", "sbin", "lib", "lib32",
                          "lib64", "libx32"})


def check_address(value: str) -> str | None:
    """An IPv4/IPv6 address or a DNS host name (RFC 1123); nothing that starts with '-'."""
    try:
        ipaddress.ip_address(value)
        return None
    except ValueError:
        pass
    if HOSTNAME_RE.fullmatch(value) and not re.fullmatch(r"[0-9.]+", value):
        return None
    return (f"expected an IP address or a host name (letters, digits, '-' and '.'; not "
            f"starting with '-'), got {value!r}")


def check_workdir(value: str) -> str | None:
    """An absolute, normalised path at least two levels deep, not a system directory: where
    ofbench's tree is synced with rsync --delete (pure)."""
    if not value.startswith("/"):
        return f"expected an absolute path (no '~', not relative), got {value!r}"
    if not SAFE_PATH_RE.fullmatch(value):
        return (f"expected a path of A-Z a-z 0-9 / _ . @ + - (no spaces, quotes or shell "
                f"characters), got {value!r}")
    parts = value.split("/")[1:]
    if len([p for p in parts if p not in ("", ".")]) < 2:
        return (f"expected a path at least two levels deep (e.g. /opt/ofbench): the tree is "
                f"synced there with rsync --delete, got {value!r}")
    if any(p in ("", ".", "..") for p in parts) or any(p.startswith("-") for p in parts):
        return (f"expected a normalised path (no '//', '.', '..', trailing '/' or a part "
                f"starting with '-'), got {value!r}")
    if value in SYSTEM_DIRS or parts[0] in SYSTEM_TREES or (parts[0] == "home" and len(parts) == 2):
        return f"{value!r} is a system or home directory: give a folder of ofbench's own"
    return None


def _check_server(value: str) -> str | None:
    return None if value == "local" else check_address(value)


def check_state_dir(value: str) -> str | None:
    """lab.state_dir: where each host keeps its runs (removed per run): absolute, normalised,
    two levels deep at least (e.g. /run/ofbench)."""
    problem = check_workdir(value)
    return problem if problem and "system" not in problem else None


# a local file the harness reads (ssh key, known_hosts): no leading '-', no shell characters
LOCAL_FILE = Spec(str, pattern=r"~?[A-Za-z0-9_.@+/][A-Za-z0-9_.@+/-]*",
                  what="a file path (A-Z a-z 0-9 / _ . @ + -, may start with '~'; not with '-')")
CORES = Spec(str, pattern=r"[0-9]+(?:-[0-9]+)?(?:,[0-9]+(?:-[0-9]+)?)*",
             what="a core list like '0', '2-5' or '0,1,2'")
HOST = Spec(dict, fields={
    "address": Spec(str, required=True, check=check_address),
    "user": Spec(str, default="root", pattern=USER_RE,
                 what="a POSIX user name (A-Z a-z 0-9 _ . -, not starting with '-' or a digit)"),
    "ssh_port": Spec(int, default=22, **TCP_PORT),
    "key_file": LOCAL_FILE,
    "workdir": Spec(str, default="/opt/ofbench", check=check_workdir),
})
PORT = Spec(dict, fields={
    "devargs": Spec(str, pattern=r"[A-Za-z0-9_][A-Za-z0-9_.,=:/@+-]*",
                    what="DPDK devargs (A-Z a-z 0-9 _ . , = : / @ + -, not starting with '-')"),
    "pci": Spec(str, pattern=r"[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]",
                what="a PCI address DDDD:BB:DD.F (e.g. 0000:03:00.0)"),
    "speed_gbps": Spec(float),
    "trex_port": Spec(int),
})
def _check_goal(goal: dict) -> None:
    """What no single goal key can say (RFC 9971: final >= initial duration, sum >= final)."""
    init, final = goal.get("goal_initial_trial_duration"), goal.get("goal_final_trial_duration")
    total = goal.get("goal_duration_sum")
    if init is not None and final is not None and final < init:
        raise Invalid(f"{final} s is below goal_initial_trial_duration {init} s",
                      at=("goal_final_trial_duration",))
    if total is not None and total < (final if final is not None else init or 0):
        raise Invalid(f"{total} s is below goal_final_trial_duration "
                      f"{final if final is not None else init} s", at=("goal_duration_sum",))


def _check_search(search: dict) -> None:
    lo, hi = search.get("min_load"), search.get("max_load")
    if lo is not None and hi is not None and lo >= hi:
        raise Invalid(f"{lo} pps is not below max_load {hi} pps", at=("min_load",))


SEARCH_GOAL = Spec(dict, check=_check_goal, fields={
    "name": Spec(str, required=True, pattern=r"[a-z][a-z0-9_]{0,30}",
                 what="a metric-friendly name (a-z, 0-9, _)"),
    "goal_loss_ratio": Spec(float, ge=0, lt=1),
    "goal_exceed_ratio": Spec(float, ge=0, lt=1),
    "goal_initial_trial_duration": Spec(float, gt=0),
    "goal_final_trial_duration": Spec(float, gt=0),
    "goal_duration_sum": Spec(float, gt=0),
    "goal_width": Spec(float, gt=0, lt=1),
})
# The end-to-end rig on one box (issue 44, suites/throughput/rig.py): the wire between softgen
# and the ofbench switch, its ring depth, where the run's other threads go, the pollers' nice.
# Each has an OFBENCH_RIG_* override for experiments.
RIG = Spec(dict, fields={
    "wire": Spec(str, default="vhost", choices=("vhost", "memif")),
    # log2 of the DUT's rx ring: memif's rsize (at most 14), virtio_user's queue_size (<= 15)
    "ring_log2": Spec(int, ge=8, le=15),
    "housekeeping": Spec(str, default="off", choices=("off", "gen", "switch")),
    "poller_nice": Spec(int, ge=-20, le=19),
    # the switch's worker in the fair scheduler (other) or SCHED_FIFO priority 1 (fifo: needs
    # the kernel's RT throttling on and the run's other threads off the switch's core)
    "switch_policy": Spec(str, default="other", choices=("other", "fifo")),
})
SEARCH = Spec(dict, check=_check_search, fields={
    "method": Spec(str, default="mlrsearch", choices=("mlrsearch",)),
    "min_load": Spec(float, gt=0),
    "max_load": Spec(float, gt=0),
    "goals": Spec(list, min_len=1, unique=("name",), items=SEARCH_GOAL),
})

PROFILE = Spec(dict, fields={
    "schema_version": Spec(int, required=True, choices=(SCHEMA_VERSION,)),
    "name": Spec(str),
    "description": Spec(str, default=""),
    "lab": Spec(dict, required=True, fields={
        "kind": Spec(str, required=True, choices=LAB_KINDS),
        "hosts": Spec(dict, keys=NAME, values=HOST),
        "state_dir": Spec(str, check=check_state_dir),
        "known_hosts": LOCAL_FILE,
        "emulated": Spec(bool, default=False),
        # labgrid's coordinator that arbitrates this lab (drivers/lab/lease.py): absent = a
        # private lab, nobody else to wait for (no lease taken)
        "coordinator": Spec(str, pattern=COORDINATOR_RE,
                            what="HOST:PORT of labgrid-coordinator (e.g. 192.0.2.1:20408)"),
        # the lab's place on the coordinator (default: the profile's name)
        "place": Spec(str, pattern=PLACE_RE, what="a place name ([A-Za-z0-9_.-]{1,64})"),
        # tags of the place besides those from the profile (e.g. pool: emu)
        "tags": Spec(dict, keys=Spec(str, pattern=r"[a-z][a-z0-9_]{1,31}",
                                     what="a tag key ([a-z][a-z0-9_]+)"),
                     values=Spec(str, pattern=r"[a-z0-9][a-z0-9_.-]{0,63}",
                                 what="a tag value ([a-z0-9][a-z0-9_.-]*)")),
        "testbed": Spec(str, pattern=r"[a-z0-9][a-z0-9_.-]{0,63}",
                        what="a testbed type ([a-z0-9][a-z0-9_.-]*)"),
    }),
    "features": Spec(list, default=list, items=Spec(str, choices=tuple(sorted(FEATURES)))),
    "switch": Spec(dict, required=True, fields={
        "kind": Spec(str, required=True, choices=SWITCH_KINDS),
        "workers": Spec(int, default=1, ge=1),
        "cores": CORES,
        "lookup": Spec(str, default=DEFAULT_LOOKUP, choices=SWITCH_LOOKUPS),
        "host": Spec(str),
        "busy_poll": Spec(bool, default=False),
        # ofbench's --cache-lines (dut/switch/src/ofswitch.h): absent = the binary's default
        "cache_lines": Spec(int, ge=64, le=1 << 26, check=_check_power_of_2),
        # ofbench with no controller connected (OF1.3.5 6.4): secure keeps the flow tables
        # and drops what needs a controller; standalone forwards as a learning switch
        # (drivers/lab/switches.py passes it to ofbench, and to OVS as the profile's switch)
        "fail_mode": Spec(str, choices=("secure", "standalone")),
        "ports": Spec(dict, keys=NAME, values=PORT),
    }),
    "peers": Spec(list, default=list, items=Spec(str, choices=SWITCH_KINDS)),
    "one_dut": Spec(bool, default=False),
    "controller": Spec(dict, default=lambda: {"host": "127.0.0.1", "port": 0}, fields={
        "host": Spec(str, default="127.0.0.1", check=check_address),
        "port": Spec(int, default=0, **TCP_PORT),
    }),
    "generator": Spec(dict, default=lambda: {"kind": "softgen"}, fields={
        "kind": Spec(str, required=True, choices=GENERATOR_KINDS),
        "host": Spec(str),
        "server": Spec(str, check=_check_server),
        "sync_port": Spec(int, **TCP_PORT),
        "async_port": Spec(int, **TCP_PORT),
        "cores": CORES,
        "low_end": Spec(bool),
        "limit_memory_mb": Spec(int, ge=64),
        "ports": Spec(dict, keys=NAME, values=PORT),
    }),
    "links": Spec(list, default=list, items=Spec(dict, fields={
        "generator": Spec(str, required=True),
        "switch": Spec(str, required=True),
        "speed_gbps": Spec(float),
    })),
    "conformance": Spec(dict, fields={
        "tester_host": Spec(str, required=True),
        # os-ken's switch test tool uses three cables (its ports 1, 2, 3)
        "links": Spec(list, required=True, min_len=3, max_len=3, unique=("tester", "switch"),
                      items=Spec(dict, fields={"tester": IFNAME, "switch": IFNAME})),
    }),
    "targets": Spec(dict, default=dict, values=Spec(dict, values=Spec(dict, values=Spec(
        str, check=_check_target)))),
    "influx": Spec(dict, fields={
        "url": Spec(str, required=True),
        # a profile is committed and copied around: a token there is refused
        "token": Spec(str, default="-", check=lambda v: None if v == "-" else (
            "a token in a profile is refused (profiles are committed and copied): give it in "
            "OFBENCH_INFLUX_TOKEN or --influx-token-file")),
        "org": Spec(str, default="-"),
        "bucket": Spec(str, default="ofbench/autogen"),
    }),
    "search": SEARCH,
    "rig": RIG,
    "vmwire": VMWIRE,
})


@dataclass(frozen=True)
class Profile:
    name: str
    path: Path
    data: dict

    @property
    def features(self) -> frozenset[str]:
        return frozenset(self.data["features"])

    @property
    def lab_kind(self) -> str:
        return self.data["lab"]["kind"]

    @property
    def switch(self) -> dict:
        return self.data["switch"]

    @property
    def switch_kinds(self) -> list[str]:
        """The profile's switch first, then its peers (deduplicated): what suites compare."""
        kinds = [self.data["switch"]["kind"]]
        kinds += [p for p in self.data["peers"] if p not in kinds]
        return kinds

    @property
    def one_dut(self) -> bool:
        return bool(self.data.get("one_dut"))

    def suite_switch_kinds(self) -> list[str]:
        """The switches a suite that picks its own topology (controller, WAN, vmwire) may run
        on: the profile's switch only with ``one_dut: true``, else its switch and peers."""
        return [self.data["switch"]["kind"]] if self.one_dut else self.switch_kinds

    @property
    def peers(self) -> list[str]:
        return list(self.data["peers"])

    @property
    def generator(self) -> dict:
        return self.data["generator"]

    @property
    def controller(self) -> dict:
        return self.data["controller"]

    @property
    def targets(self) -> dict:
        return self.data["targets"]

    def section(self, name: str) -> dict:
        return self.data.get(name) or {}

    def has(self, *features: str) -> bool:
        return set(features) <= self.features


def resolve_path(name_or_path: str) -> Path:
    """``local`` -> dut/profiles/local.yaml; anything with a slash or .yaml is a path."""
    if "/" in name_or_path or name_or_path.endswith((".yaml", ".yml")):
        return Path(name_or_path).expanduser().resolve()
    return PROFILE_DIR / f"{name_or_path}.yaml"


def available_profiles() -> list[str]:
    return sorted(p.stem for p in PROFILE_DIR.glob("*.yaml"))


def load_profile(name_or_path: str) -> Profile:
    path = resolve_path(name_or_path)
    where = path.name if path.parent == PROFILE_DIR else str(path)
    if not path.is_file():
        hint = f" (known profiles: {', '.join(available_profiles())})" if "/" not in name_or_path else ""
        raise ProfileError.at(where, (), f"no such profile file{hint}")
    raw, node = load_yaml(path, ProfileError, source=where)
    return parse_profile(raw, where=where, path=path, node=node)


def parse_profile(raw: Any, *, where: str, path: Path | None = None, node=None) -> Profile:
    """Validate a parsed profile; ``node`` (the YAML document's node) adds lines to errors."""
    if not isinstance(raw, dict):
        raise ProfileError.at(where, (), f"a profile is a mapping of keys, got "
                              f"{type(raw).__name__}")
    data = validate(PROFILE, raw, source=where, error=ProfileError, node=node)
    name = data.get("name") or (path.stem if path else "profile")
    data["name"] = name
    return Profile(name=name, path=path or Path(where), data=data)


def _cross_checks(data: dict) -> None:
    """What no single key can say: raises Invalid at the key that is wrong."""
    lab = data["lab"]
    if lab["kind"] == "remote" and not lab.get("hosts"):
        raise Invalid("a remote lab needs its hosts (e.g. switch, controller, trex)",
                      at=("lab", "hosts"))
    if lab.get("emulated") and lab["kind"] != "remote":
        raise Invalid("only a remote lab (lab.kind: remote) is emulated", at=("lab", "emulated"))
    if lab.get("coordinator"):
        port = int(lab["coordinator"].rsplit(":", 1)[1])
        if not 1 <= port <= 65535:
            raise Invalid(f"port {port} is not in 1..65535", at=("lab", "coordinator"))
    elif lab.get("place"):
        raise Invalid("a place is on a coordinator: set lab.coordinator too", at=("lab", "place"))
    hosts = lab.get("hosts") or {}
    for section in ("switch", "generator"):
        role = data[section].get("host")
        if role and hosts and role not in hosts:
            raise Invalid(f"{role!r} is not a host in lab.hosts (known: {', '.join(hosts)})",
                          at=(section, "host"))
    gen = data["generator"]
    if gen["kind"] == "trex" and "server" not in gen:
        raise Invalid("required key is missing for generator.kind trex",
                      at=("generator", "server"))
    sw_ports = data["switch"].get("ports") or {}
    gen_ports = gen.get("ports") or {}
    for section, ports in (("switch", sw_ports), ("generator", gen_ports)):
        for name, port in ports.items():
            if port.get("devargs") and port.get("pci"):
                raise Invalid("give devargs (a DPDK vdev) or pci (a NIC), not both",
                              at=(section, "ports", name))
    for i, link in enumerate(data["links"]):
        if not gen_ports or not sw_ports:
            raise Invalid("links join generator.ports to switch.ports: both sections need "
                          "their ports", at=("links", i))
        if link["generator"] not in gen_ports:
            raise Invalid(f"no generator port {link['generator']!r} "
                          f"(known: {', '.join(gen_ports)})", at=("links", i, "generator"))
        if link["switch"] not in sw_ports:
            raise Invalid(f"no switch port {link['switch']!r} (known: {', '.join(sw_ports)})",
                          at=("links", i, "switch"))
    conf = data.get("conformance")
    if conf and conf["tester_host"] not in hosts:
        raise Invalid(f"{conf['tester_host']!r} is not a host in lab.hosts (known: "
                      f"{', '.join(hosts) or 'none: conformance cables are for a remote lab'})",
                      at=("conformance", "tester_host"))
    if data["switch"]["kind"] in data["peers"]:
        raise Invalid(f"{data['switch']['kind']!r} is already the profile's switch",
                      at=("peers",))


PROFILE.check = _cross_checks
