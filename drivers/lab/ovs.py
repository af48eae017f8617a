"""Open vSwitch as lab equipment: the conformance tester switch and a performance peer.

Each instance has its own db, sockets and logs under the run's state dir (OVS_RUNDIR, OVS_LOGDIR,
OVS_DBDIR, OVS_SYSCONFDIR are all set: without them OVS falls back to /var/run/openvswitch and
bridge management sockets collide with any other OVS on the box). Both daemons run in the
foreground under the lab's supervisor, so they are stopped with the run and recorded for the
stale-run cleanup. ``ovs-vswitchd`` runs inside ``netns`` when given, so the netdev datapath
sees that namespace's veths (put the controller in the same namespace: its loopback differs).
``host`` (a lab host: drivers/lab/base.Host) runs it on a lab host over the Lab protocol (the
conformance tester on a remote lab); the default is this box (the local lab).

Kinds: ``ovs`` = userspace netdev datapath (Debian's ovs-vswitchd); ``ovs-dpdk`` = Debian's
ovs-vswitchd-dpdk with dpdk-init (it always adds --in-memory, so it gets hugepages, not
--no-huge; see DESIGN.md).
"""
from __future__ import annotations

from pathlib import Path

from drivers.lab.base import LabError

OVS_VSWITCHD = "/usr/lib/openvswitch-switch/ovs-vswitchd"
OVS_VSWITCHD_DPDK = "/usr/lib/openvswitch-switch-dpdk/ovs-vswitchd-dpdk"
OVS_SCHEMA = "/usr/share/openvswitch/vswitch.ovsschema"


class OvsInstance:
    def __init__(self, lab, name: str = "ovs", *, dpdk: bool = False, netns: str | None = None,
                 dpdk_mem_mb: int = 256, dpdk_lcore: int | None = None,
                 pmd_cpu_mask: str | None = None, host=None):
        self.lab, self.name, self.dpdk, self.netns = lab, name, dpdk, netns
        self.host = host if host is not None else lab
        self.dpdk_mem_mb, self.dpdk_lcore, self.pmd_cpu_mask = dpdk_mem_mb, dpdk_lcore, pmd_cpu_mask
        self.dir = Path(self.host.state_dir) / f"ovs-{name}"
        self.db_sock = self.dir / "db.sock"
        self.env = {"OVS_RUNDIR": str(self.dir), "OVS_LOGDIR": str(self.dir),
                    "OVS_DBDIR": str(self.dir), "OVS_SYSCONFDIR": str(self.dir)}
        self.procs = []
        self._db_created = False

    @property
    def kind(self) -> str:
        return "ovs-dpdk" if self.dpdk else "ovs"

    # ---- lifecycle ----------------------------------------------------------------------------
    def start(self) -> "OvsInstance":
        host = self.host
        host.run(["mkdir", "-p", self.dir])
        db = self.dir / "conf.db"
        # A new instance starts from an empty database even when an earlier one of this run had
        # the same name (its bridges would clash: "a bridge named ... already exists"); a
        # restart of this same instance keeps its configuration.
        if not self._db_created:
            host.run(["rm", "-f", db])
            host.run(["ovsdb-tool", "create", db, OVS_SCHEMA])
            self._db_created = True
        self.procs.append(host.start(
            f"{self.name}-ovsdb",
            ["ovsdb-server", db, f"--remote=punix:{self.db_sock}",
             f"--unixctl={self.dir / 'ovsdb-server.ctl'}", "--no-chdir", "-vconsole:warn",
             f"--log-file={self.dir / 'ovsdb-server.log'}"],
            env=self.env, ready=lambda: host.exists(self.db_sock), ready_timeout_s=15))
        self.vsctl("--no-wait", "init")
        if self.dpdk:
            if host is not self.lab:
                raise LabError(f"ovs-dpdk on a lab host ({host.role}) is not supported yet")
            if not getattr(self.lab, "use_hugepages", True):
                raise LabError("ovs-dpdk needs hugepages (ovs-vswitchd-dpdk always adds "
                               "--in-memory, which cannot run with --no-huge); none usable")
            extra = self.lab.eal_args(f"{self.name}", mem_mb=self.dpdk_mem_mb,
                                      lcores=str(self.dpdk_lcore if self.dpdk_lcore is not None
                                                 else self.lab.next_core()))
            # ovs-vswitchd-dpdk adds --in-memory itself; drop flags that clash with it.
            extra = [a for a in extra if a not in ("--huge-unlink",)]
            extra = _drop_option(extra, "-l")
            self.vsctl("--no-wait", "set", "Open_vSwitch", ".",
                       "other_config:dpdk-init=true",
                       f"other_config:dpdk-extra={' '.join(extra)}",
                       *([f"other_config:pmd-cpu-mask={self.pmd_cpu_mask}"]
                         if self.pmd_cpu_mask else []))
        binary = OVS_VSWITCHD_DPDK if self.dpdk else OVS_VSWITCHD
        ctl = self.dir / "ovs-vswitchd.ctl"
        self.procs.append(host.start(
            f"{self.name}-vswitchd",
            [binary, f"unix:{self.db_sock}", f"--unixctl={ctl}", "--no-chdir",
             "-vconsole:warn", f"--log-file={self.dir / 'ovs-vswitchd.log'}"],
            env=self.env, netns=self.netns, ready=lambda: self._appctl_ok(ctl),
            ready_timeout_s=60 if self.dpdk else 20))
        return self

    def _appctl_ok(self, ctl: Path) -> bool:
        return self.host.run(self._env_argv(["ovs-appctl", "-t", ctl, "version"]), check=False,
                             timeout=10).returncode == 0

    def stop(self) -> None:
        for p in reversed(self.procs):
            self.host.stop(p)
        self.procs.clear()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    # ---- commands -----------------------------------------------------------------------------
    def _env_argv(self, argv: list) -> list[str]:
        """argv with this instance's OVS_* directories in its environment (on any host)."""
        return ["env", *(f"{k}={v}" for k, v in self.env.items()), *map(str, argv)]

    def _run(self, argv: list, timeout: float = 30.0) -> str:
        return self.host.run(self._env_argv(argv), timeout=timeout).stdout

    def vsctl(self, *args, timeout: float = 30.0) -> str:
        return self._run(["ovs-vsctl", f"--db=unix:{self.db_sock}", "--timeout=20", *args],
                         timeout)

    def ofctl(self, *args, protocols: str = "OpenFlow13") -> str:
        return self._run(["ovs-ofctl", "-O", protocols, *args])

    def appctl(self, *args) -> str:
        return self._run(["ovs-appctl", "-t", self.dir / "ovs-vswitchd.ctl", *args])

    def add_bridge(self, br: str, *, dpid: int | None = None,
                   controller: str | list[str] | None = None,
                   protocols: str = "OpenFlow13", fail_mode: str = "secure",
                   other_config: dict | None = None) -> None:
        """A bridge on the userspace datapath (netdev); ``controller`` like tcp:127.0.0.1:6653,
        or a list of such targets (one connection each)."""
        args = ["--", "add-br", br, "--", "set", "bridge", br, "datapath_type=netdev",
                f"protocols={protocols}", f"fail_mode={fail_mode}"]
        if dpid is not None:
            args += [f"other_config:datapath-id={dpid:016x}"]
        for k, v in (other_config or {}).items():
            args += [f"other_config:{k}={v}"]
        # Out-of-band: the controller connection must not depend on the bridge's own flows.
        args += ["--", "set", "bridge", br, "other_config:disable-in-band=true"]
        self.vsctl(*args)
        if controller:
            targets = [controller] if isinstance(controller, str) else list(controller)
            self.vsctl("set-controller", br, *targets)

    def add_port(self, br: str, port: str, *, ofport: int | None = None,
                 type: str | None = None, options: dict | None = None) -> None:
        args = ["add-port", br, port]
        settings = []
        if type:
            settings.append(f"type={type}")
        if ofport is not None:
            settings.append(f"ofport_request={ofport}")
        for k, v in (options or {}).items():
            settings.append(f"options:{k}={v}")
        if settings:
            args += ["--", "set", "Interface", port, *settings]
        self.vsctl(*args)

    def controller_connected(self, br: str) -> bool:
        out = self.vsctl("--columns=is_connected", "list", "Controller")
        return "true" in out


def _drop_option(args: list[str], opt: str) -> list[str]:
    out, skip = [], False
    for a in args:
        if skip:
            skip = False
            continue
        if a == opt:
            skip = True
            continue
        out.append(a)
    return out
