"""Run os-ken's switch test tool against one target switch (ofbench or ovs), on a local lab or
on a remote one over SSH.

On a remote lab (the emulated SSH lab included) the profile's ``conformance`` section says
where: the tester OVS and the tool run on ``conformance.tester_host``, the profile's switch on
its host, joined by the three cables ``conformance.links`` lists (kernel interfaces on both
hosts; the switch opens its ends with af_xdp, the tester OVS with its netdev datapath); the
switch reaches the tool at the tester host's lab address. One tool instance (one set of
cables); IPv6 is disabled on the cabled interfaces only, offloads as below.

Local topology (one network namespace, three veth links, as the tool wants):

    tester OVS port 1 (t1) ---- s1  target port 1
    tester OVS port 2 (t2) ---- s2  target port 2
    tester OVS port 3 (t3) ---- s3  target port 3

Controller (the tool) on 127.0.0.1:<free port> inside the namespace; both switches connect to it.

Choices that make results stable (each was a flipping case before):
  * IPv6 is disabled in the namespace: otherwise the kernel's own ND/MLD frames on the veths
    reach the target and bump matched_count in "table-miss" cases.
  * The tester OVS runs with ``other_config:flow-limit=0`` (no datapath flow cache): the tool
    deletes and re-adds the tester's flows before every case, and OVS's asynchronous
    revalidation could leave a stale "drop" datapath flow for a few ms, so a fast target's
    packet reached the tester but no PACKET_IN came (~1-2 % of cases flipped).
  * ofbench opens its ports with af_xdp, not af_packet: the kernel strips VLAN tags before
    af_packet sees them and DPDK's af_packet PMD re-inserts them as 0x8100, turning 802.1ad
    (0x88a8) S-tags into C-tags (PBB and QinQ cases).
  * VLAN offloads are off on every veth end, so frames cross the links as they were sent.
  * Two OVS in one namespace need different bridge names (a netdev bridge creates a tap
    interface named like the bridge).
  * The tool's throughput sender is replaced (tool_patch.py): paced by the clock in 1 ms ticks.
    The tool's own sender fell 7-13 % short of its rate, and its 10 ms bursts (200 packets at
    20 000 pktps) overflowed the tester OVS's AF_PACKET receive buffers on their way back, so
    the tester counted less than the target forwarded. The tester OVS is *not* reniced: at
    nice -10 it starved the target (ofbench lost 11 % at 20 000 pktps).
  * After the tool ends, ``<tag>-counters.txt`` beside the logs holds the veths' counters, the
    tester's AF_PACKET socket drops (``ss`` skmem ``d<N>``), the tester's port counters and
    ofbench's: where the packets of a throughput case went.
"""
from __future__ import annotations

import contextlib
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from drivers.lab.base import is_remote
from drivers.lab.ovs import OvsInstance
from paths import REPO

TESTER_DPID = 0x2
TARGET_DPID = 0x1
# The peer OVS as target is tuned as the certification runs needed (DESIGN.md "Conformance").
OVS_TARGET_TUNING = {"max-idle": "500", "max-revalidator": "100"}


def of13_dir() -> Path:
    import os_ken
    return Path(os_ken.__file__).parent / "tests" / "switch" / "of13"


def required_file() -> Path:
    """conformance-required.txt: beside the suite, else the shared copy."""
    here = Path(__file__).with_name("conformance-required.txt")
    return here if here.exists() else Path("/work/shared/conformance-required.txt")


def tester_argv(port: int, test_dir: Path, interval_s: int = 0,
                listen_host: str = "127.0.0.1", python: str | None = None) -> list[str]:
    # nice -10: the tool is also the traffic source of the 51 throughput cases (packet-outs at
    # a fixed rate from eventlet timer ticks); on a busy 2-core box it fell ~20 % short of its
    # own rate, which failed group/meter cases whatever the switch did.
    return ["nice", "-n", "-10", python or sys.executable, "-m", "suites.conformance.tester_main",
            "--app", "os_ken.tests.switch.tester", "--hub", "eventlet",
            "--ofp-listen-host", listen_host, "--ofp-port", str(port), "--",
            "--test-switch-target", f"{TARGET_DPID:016x}",
            "--test-switch-tester", f"{TESTER_DPID:016x}",
            "--test-switch-dir", str(test_dir),
            "--test-switch-interval", str(interval_s)]


def link_test_dir(dest: Path, files: list[str]) -> Path:
    """A directory of symlinks to the chosen of13 files (and no others: an earlier run of this
    session may have used the same folder name), keeping their sub-folders."""
    import shutil
    src = of13_dir()
    shutil.rmtree(dest, ignore_errors=True)
    for rel in files:
        p = dest / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.symlink_to(src / rel)
    return dest


@dataclass
class RunOutput:
    log_text: str           # the tool logs of every shard, one after the other
    duration_s: float       # wall time from the first tool start to the last tool's end
    exit_code: int | None   # the first abnormal exit code of a shard (143 = normal end)
    shards: int = 1


@dataclass
class _Shard:
    """One tool instance with its own namespace(s), tester OVS and target switch."""
    tag: str
    files: list[str]
    ns: str = ""
    ns_target: str = ""
    started: list = field(default_factory=list)
    proc: object = None
    host: object = None       # the host that runs the tool (a local lab: the lab itself)
    rc: int | None = None
    done_s: float | None = None
    write_counters: object = None   # write_counters(path): where the packets went


NORMAL_EXIT = (0, 143, -15)   # the tool ends itself with SIGTERM


def run_tool(lab, kind: str, files: list[str], *, tag: str = "conf", timeout_s: float = 3600,
             interval_s: int = 0, workers: int = 1, lookup: str = "simple",
             shards: list[list[str]] | None = None, progress=None,
             total_cases: int | None = None) -> RunOutput:
    """Build the topology, start tester + target + tool, wait for the tool to finish; stop
    everything and delete the namespaces on every exit path.

    ``shards`` (lists of files, from ryu_results.plan_shards) runs several tool instances at
    once, each against its own tester and target in its own namespace: the tool's 51
    throughput cases send for 30 s each, so one instance cannot finish the full set in less
    than ~27 min whatever the switch. ``progress(msg)`` gets a line every ~30 s."""
    remote = is_remote(lab)
    groups = [list(files)] if remote else (shards or [list(files)])
    run = [_Shard(tag if len(groups) == 1 else f"{tag}{i}", g) for i, g in enumerate(groups)]
    try:
        for sh in run:
            if remote:
                _start_remote(lab, sh, kind, interval_s, workers, lookup)
            else:
                _start_shard(lab, sh, kind, interval_s, workers, lookup)
        t0 = time.monotonic()
        _wait_all(run, t0, timeout_s, progress, total_cases)
        duration = max((sh.done_s for sh in run if sh.done_s is not None),
                       default=time.monotonic() - t0)
        texts = []
        for sh in run:
            sh.host.stop(sh.proc)
            texts.append(sh.proc.log_path.read_text(errors="replace"))
            sh.write_counters(sh.proc.log_path.with_name(f"{sh.tag}-counters.txt"))
        bad = [sh.rc for sh in run if sh.rc not in NORMAL_EXIT]
        rc = bad[0] if bad else run[0].rc
        return RunOutput("\n".join(texts), duration, rc, len(run))
    finally:
        for sh in reversed(run):
            for item in reversed(sh.started):
                try:
                    item.stop() if hasattr(item, "stop") else sh.host.stop(item)
                except Exception:  # keep cleaning up
                    pass
            for n in {sh.ns, sh.ns_target} - {""}:
                try:
                    lab.del_netns(n)
                except Exception:  # keep cleaning up
                    pass


def _cases_done(log_path: Path) -> int:
    from suites.conformance.ryu_results import CASE_RE
    try:
        text = log_path.read_text(errors="replace")
    except OSError:
        return 0
    return sum(1 for line in text.splitlines() if CASE_RE.match(line))


def _wait_all(run: list[_Shard], t0: float, timeout_s: float, progress, total_cases) -> None:
    last_report = t0
    while True:
        now = time.monotonic()
        for sh in run:
            if sh.done_s is None and not sh.proc.alive():
                sh.rc, sh.done_s = _exit_code(sh.proc), now - t0
        if all(sh.done_s is not None for sh in run):
            return
        if now - t0 > timeout_s:
            for sh in run:
                if sh.done_s is None:
                    sh.rc, sh.done_s = None, now - t0
            return
        if progress is not None and now - last_report >= 30:
            last_report = now
            done = sum(_cases_done(sh.proc.log_path) for sh in run)
            running = sum(sh.done_s is None for sh in run)
            of = f"/{total_cases}" if total_cases else ""
            progress(f"{done}{of} cases done, {running} of {len(run)} tool instance(s) "
                     f"running, {now - t0:.0f} s")
        time.sleep(1.0)


CTL_TOOL_IP, CTL_TARGET_IP = "10.254.0.1", "10.254.0.2"  # inside our two namespaces only


def unavailable(lab, profile, kind: str) -> str | None:
    """Why the tool cannot run against ``kind`` on this lab (a skip reason), or None."""
    if not is_remote(lab):
        missing = [f for f in ("netns", "ovs") if f not in profile.features]
        return f"profile {profile.name!r} lacks feature(s): {', '.join(missing)}" if missing \
            else None
    if not profile.data.get("conformance"):
        return (f"profile {profile.name!r} has no conformance section (a remote lab needs the "
                f"tester host and its three cables to the switch: conformance.tester_host, "
                f"conformance.links)")
    if kind != profile.switch["kind"] or kind != "ofbench":
        return (f"on a remote lab the conformance cables go to the profile's switch (ofbench); "
                f"{kind} is measured on a local lab")
    return None


def _exit_code(proc) -> int | None:
    popen = getattr(proc, "popen", None)
    return popen.poll() if popen is not None else proc.host.exit_code(proc)


def _start_remote(lab, sh: _Shard, kind: str, interval_s: int, workers: int,
                  lookup: str) -> None:
    """One tool instance over the profile's conformance cables (see the module comment)."""
    from drivers.lab.switches import start_switch, switch_host
    if kind != "ofbench":
        raise ValueError(f"conformance on a remote lab: target {kind!r} is not the profile's "
                         f"switch")
    conf = lab.profile.data["conformance"]
    tester_host, sw_host = lab.host(conf["tester_host"]), switch_host(lab)
    sh.host = tester_host
    tif = {i: link["tester"] for i, link in enumerate(conf["links"], 1)}
    sif = {i: link["switch"] for i, link in enumerate(conf["links"], 1)}
    for h, ifs in ((tester_host, tif), (sw_host, sif)):
        for ifn in ifs.values():
            h.run(["ip", "link", "set", ifn, "up"])
            h.run(["sysctl", "-qw", f"net.ipv6.conf.{ifn}.disable_ipv6=1"], check=False)
            h.run(["ethtool", "-K", ifn, "rxvlan", "off", "txvlan", "off",
                   "rx-vlan-stag-hw-parse", "off", "tx-vlan-stag-hw-insert", "off"], check=False)
    env = {"PYTHONPATH": str(tester_host.workdir), "PYTHONUNBUFFERED": "1"}
    envv = [f"{k}={v}" for k, v in env.items()]
    # the tool listens on the tester host's lab address (what the switch host reaches), not
    # on every address of the host; the tester OVS beside it connects there too
    listen = tester_host.address
    port = int(tester_host.run(["env", *envv, tester_host.python, "-m", "suites.conformance.runner",
                                "free-port", listen]).stdout.split()[-1])
    test_dir = Path(tester_host.state_dir) / f"{sh.tag}-of13"
    tester_host.run(["env", *envv, tester_host.python, "-m", "suites.conformance.runner",
                     "link-test-dir", str(test_dir)], input="\n".join(sh.files) + "\n")
    tester = OvsInstance(lab, f"{sh.tag}-tester", host=tester_host)
    sh.started.append(tester)
    tester.start()
    tester.vsctl("--no-wait", "set", "Open_vSwitch", ".", "other_config:flow-limit=0")
    tester.add_bridge("brtester", dpid=TESTER_DPID, controller=f"tcp:{listen}:{port}")
    for i in (1, 2, 3):
        tester.add_port("brtester", tif[i], ofport=i)
    sw = start_switch(lab, "ofbench", name=f"{sh.tag}-ofswitch", host=sw_host,
                      ports=[(i, sif[i]) for i in (1, 2, 3)],
                      controller=(tester_host.address, port), dpid=TARGET_DPID,
                      workers=workers, lookup=lookup, idle_sleep_us=200)
    sh.started.append(sw)
    sh.proc = tester_host.start(f"{sh.tag}-tool", tester_argv(port, test_dir, interval_s,
                                                                 listen, tester_host.python),
                                cwd=tester_host.workdir, env=env)
    sh.started.append(sh.proc)

    def write_counters(path: Path) -> None:
        parts = []
        try:
            for h, ifs in ((tester_host, tif), (sw_host, sif)):
                for ifn in ifs.values():
                    parts.append(f"{h.role}: " + h.run(["ip", "-s", "-s", "link", "show", ifn],
                                                       check=False).stdout)
            parts.append(tester.ofctl("dump-ports", "brtester"))
            parts.append(f"ofbench stats: {sw.stats()}")
        except Exception as exc:  # noqa: BLE001 - a diagnostic never fails the run
            parts.append(f"counters incomplete: {exc!r}")
        with contextlib.suppress(OSError):
            path.write_text("\n".join(str(x) for x in parts))
    sh.write_counters = write_counters


def _start_shard(lab, sh: _Shard, kind: str, interval_s: int, workers: int, lookup: str) -> None:
    tag = sh.tag
    sh.host = lab
    sh.ns = ns = lab.add_netns(tag)
    # An OVS target needs its own namespace: OVS's netdev datapath creates a tap device named
    # "ovs-netdev", so two OVS cannot share one. It reaches the tool over a control veth.
    sh.ns_target = ns_target = lab.add_netns(tag + "t") if kind == "ovs" else ns
    started = sh.started
    for n in {ns, ns_target}:
        lab.netns_exec(n, ["sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1",
                           "net.ipv6.conf.default.disable_ipv6=1"])
    tif = {i: lab.ifname(f"{tag}t{i}") for i in (1, 2, 3)}
    sif = {i: lab.ifname(f"{tag}s{i}") for i in (1, 2, 3)}
    for i in (1, 2, 3):
        lab.add_veth(ns, tif[i], ns_target, sif[i])
        for n, ifn in ((ns, tif[i]), (ns_target, sif[i])):
            lab.netns_exec(n, ["ethtool", "-K", ifn, "rxvlan", "off", "txvlan", "off",
                               "rx-vlan-stag-hw-parse", "off", "tx-vlan-stag-hw-insert", "off"],
                           check=False)
    port = lab.free_tcp_port()
    listen_host, ctl_host = "127.0.0.1", "127.0.0.1"
    if ns_target != ns:
        ca, cb = lab.ifname(f"{tag}ca"), lab.ifname(f"{tag}cb")
        lab.add_veth(ns, ca, ns_target, cb)
        lab.netns_exec(ns, ["ip", "addr", "add", f"{CTL_TOOL_IP}/30", "dev", ca])
        lab.netns_exec(ns_target, ["ip", "addr", "add", f"{CTL_TARGET_IP}/30", "dev", cb])
        # the tool listens on its end of the control veth only; the tester OVS beside it
        # connects there too
        listen_host = ctl_host = CTL_TOOL_IP
    test_dir = link_test_dir(Path(lab.state_dir) / f"{tag}-of13", sh.files)
    tester = OvsInstance(lab, f"{tag}-tester", netns=ns)
    started.append(tester)
    tester.start()
    tester.vsctl("--no-wait", "set", "Open_vSwitch", ".", "other_config:flow-limit=0")
    tester.add_bridge("brtester", dpid=TESTER_DPID, controller=f"tcp:{listen_host}:{port}")
    for i in (1, 2, 3):
        tester.add_port("brtester", tif[i], ofport=i)
    if kind == "ofbench":
        from drivers.lab.switches import start_switch
        sw = start_switch(lab, "ofbench", name=f"{tag}-ofswitch", netns=ns,
                          ports=[(i, sif[i]) for i in (1, 2, 3)], controller=("127.0.0.1", port),
                          dpid=TARGET_DPID, workers=workers, lookup=lookup, idle_sleep_us=200)
        started.append(sw)
    elif kind == "ovs":
        target_ovs = OvsInstance(lab, f"{tag}-target", netns=ns_target)
        started.append(target_ovs)
        target_ovs.start()
        target_ovs.vsctl("--no-wait", "set", "Open_vSwitch", ".",
                         *[f"other_config:{k}={v}" for k, v in OVS_TARGET_TUNING.items()])
        target_ovs.add_bridge("brtarget", dpid=TARGET_DPID, controller=f"tcp:{ctl_host}:{port}")
        for i in (1, 2, 3):
            target_ovs.add_port("brtarget", sif[i], ofport=i)
    else:
        raise ValueError(f"conformance: unsupported target kind {kind!r}")
    sh.proc = lab.supervisor.start(f"{tag}-tool", tester_argv(port, test_dir, interval_s,
                                                              listen_host),
                                   netns=ns, cwd=REPO,
                                   env={"PYTHONPATH": str(REPO), "PYTHONUNBUFFERED": "1"})
    started.append(sh.proc)
    stats = Path(lab.state_dir) / f"{tag}-ofswitch.stats" if kind == "ofbench" else None
    sh.write_counters = lambda path: _write_counters(lab, path, ns, ns_target, tif, sif, tester,
                                                     stats)


def _write_counters(lab, path: Path, ns, ns_target, tif, sif, tester, stats_sock) -> None:
    """Where the packets went, for the post-mortem of a throughput case: the veths' kernel
    counters (drops included), the tester OVS's port counters, ofbench's own port counters.
    Best effort: a diagnostic never fails the run."""
    parts = []
    try:
        for n, ifs in ((ns, tif), (ns_target, sif)):
            for ifn in ifs.values():
                r = lab.netns_exec(n, ["ip", "-s", "-s", "link", "show", ifn], check=False)
                parts.append(r.stdout if isinstance(r.stdout, str) else r.stdout.decode())
        # AF_PACKET sockets (the tester OVS's ports): skmem d<N> = packets dropped on receive
        parts.append(lab.netns_exec(ns, ["ss", "-f", "link", "-a", "-m", "-n", "-p"],
                                    check=False).stdout)
        parts.append(tester.ofctl("dump-ports", "brtester"))
        if stats_sock is not None:
            from dut.switch.launcher import read_stats
            parts.append(f"ofbench stats: {read_stats(stats_sock)}")
    except Exception as exc:  # noqa: BLE001
        parts.append(f"counters incomplete: {exc!r}")
    try:
        path.write_text("\n".join(str(x) for x in parts))
    except OSError:
        pass


def _main(argv: list[str]) -> int:
    """Helpers the lab runs on a tester host: ``free-port [ADDR]`` (a TCP port free on ADDR,
    default 127.0.0.1) and ``link-test-dir DEST`` (the of13 files named on stdin, linked under
    DEST)."""
    if argv[:1] == ["free-port"] and len(argv) <= 2:
        import socket
        with socket.socket() as s:
            s.bind((argv[1] if len(argv) == 2 else "127.0.0.1", 0))
            print(s.getsockname()[1])
        return 0
    if argv[:1] == ["link-test-dir"] and len(argv) == 2:
        link_test_dir(Path(argv[1]), [line for line in sys.stdin.read().split() if line])
        return 0
    print("usage: python -m suites.conformance.runner free-port [ADDR] | link-test-dir DEST < files",
          file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
