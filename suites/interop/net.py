"""One FAUCET network on one switch of any kind: kernel hosts in network namespaces of this run,
each on a veth whose other end is a port of the switch (in the switch's namespace), FAUCET in
the switch's namespace on its loopback. Checks are traffic between the hosts: ping, UDP (with
the TTL and port each datagram arrived with), the hosts' own interface counters.

Every failure becomes :class:`ScenarioError` with one message naming the scenario and switch;
:meth:`FaucetNet.close` stops the switch, FAUCET and every namespace whatever happened.
"""
from __future__ import annotations

import json
import re
import sys
import time
from dataclasses import dataclass

from drivers.lab.faucet import FaucetError
from drivers.lab.switches import start_faucet, start_switch
from drivers.supervisor import ProcessStartError

KIND_TAG = {"ofbench": "o", "ovs": "v", "ovs-dpdk": "d"}
PROBE = "suites.interop.udp_probe"


class ScenarioError(AssertionError):
    """A scenario could not be set up or run; the message names the scenario and the switch."""


@dataclass
class Host:
    name: str               # h1, h2, ...
    port: int               # the switch port (ofport) it is cabled to
    ip: str                 # address/prefix
    vid: int | None = None  # set: a tagged host on a tagged port: no kernel address; it sends
    #                         and counts 802.1Q frames with udp_probe's raw socket (this box's
    #                         kernel has no 8021q module for eth0.<vid>)
    gw: str | None = None   # default route
    mac: str | None = None
    up: bool = True         # False: its cable starts down (a spare host for a move)

    @property
    def addr(self) -> str:
        return self.ip.split("/")[0]

    @property
    def dev(self) -> str:
        return "eth0"


class FaucetNet:
    def __init__(self, lab, kind: str, scenario: str, abbr: str, hosts: list[Host],
                 config: str, *, connect_timeout_s: float = 30.0,
                 controller_port: int | None = None):
        self.lab, self.kind, self.scenario = lab, kind, scenario
        self.tag = f"{KIND_TAG[kind]}{abbr}"
        self.hosts = {h.name: h for h in hosts}
        self.ns: dict[str, str] = {}
        self.ifname: dict[int, str] = {}
        self.switch = None
        self.faucet = None
        self.procs: list = []
        self.connect_timeout_s = connect_timeout_s
        self._config = config
        self.controller_port = controller_port  # the switch's controller port (default FAUCET's)
        self._restarts = 0
        self.final = None
        self.faucets: list = []  # every FAUCET this network started (their logs outlive them)
        self._probes = 0
        self.max_unreplied_echoes = 5  # FAUCET's own (start_faucet)

    def fail(self, what: str) -> ScenarioError:
        return ScenarioError(f"interop {self.scenario} on {self.kind}: {what}")

    # ---- set up -----------------------------------------------------------------------------
    def __enter__(self) -> "FaucetNet":
        try:
            self._build()
            self._start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _build(self) -> None:
        lab = self.lab
        try:
            self.ns["sw"] = lab.add_netns(f"{self.tag}sw")
            for h in self.hosts.values():
                self.add_host(h)
        except Exception as e:  # noqa: BLE001 - any setup failure is this scenario's
            raise self.fail(f"hosts could not be created: {e}") from e

    def add_host(self, h: Host, *, cable: bool = True) -> None:
        """A namespace for ``h`` with eth0 (and eth0.<vid>) cabled to switch port ``h.port``."""
        lab = self.lab
        self.hosts[h.name] = h
        h.mac = h.mac or f"02:41:00:00:{h.port:02x}:{len(self.ns):02x}"
        ns = self.ns[h.name] = lab.add_netns(f"{self.tag}{h.name}")
        if h.port not in self.ifname:
            self.ifname[h.port] = lab.ifname(f"{self.tag}{h.port}")
        if cable:
            lab.add_veth(ns, "eth0", self.ns["sw"], self.ifname[h.port])
            self.configure(h)
            if not h.up:
                self.set_link(h.name, False)

    def configure(self, h: Host) -> None:
        ns, run = self.ns[h.name], self.lab.netns_exec
        # IPv4 only: no router solicitations or DAD frames in the hosts' counters
        run(ns, ["sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1"], check=False)
        run(ns, ["sysctl", "-qw", "net.ipv6.conf.default.disable_ipv6=1"], check=False)
        if h.mac:
            run(ns, ["ip", "link", "set", "eth0", "address", h.mac])
        if h.vid:
            return  # a tagged host speaks through udp_probe's raw socket (no 8021q here)
        run(ns, ["ip", "addr", "add", h.ip, "dev", h.dev])
        if h.gw:
            run(ns, ["ip", "route", "add", "default", "via", h.gw])

    def _start(self) -> None:
        # OVS adds its ports to a bridge that already has its controller: FAUCET, asking for
        # the port description while they come, can miss a port's ADD (seen on OVS-DPDK). So
        # an OVS switch starts first with all its ports and connects once FAUCET listens (its
        # backoff: <= 8 s); ofbench has its ports before it connects and starts second.
        port = self.lab.free_tcp_port()
        if self.kind != "ofbench":
            self._start_switch(self.controller_port or port)
        try:
            self.faucet = start_faucet(self.lab, f"faucet-{self.tag}", self._config,
                                       netns=self.ns["sw"], port=port,
                                       max_unreplied_echoes=self.max_unreplied_echoes)
            self.faucets.append(self.faucet)
        except FaucetError as e:
            raise self.fail(str(e)) from e
        except ProcessStartError as e:
            raise self.fail(f"FAUCET did not start: {e}") from e
        if self.kind == "ofbench":
            self._start_switch(self.controller_port or port)
        self.wait_connected(1)

    def _start_switch(self, port: int) -> None:
        try:
            self.switch = start_switch(self.lab, self.kind, name=f"sw-{self.tag}",
                                       netns=self.ns["sw"], ports=sorted(self.ifname.items()),
                                       controller=("127.0.0.1", port), dpid=1)
        except Exception as e:  # noqa: BLE001
            raise self.fail(f"the switch did not start: {e}") from e

    def wait_connected(self, connects: int, timeout_s: float | None = None) -> None:
        """Wait until FAUCET has configured the datapath ``connects`` times in all and has
        seen every cabled port up."""
        timeout_s = timeout_s or self.connect_timeout_s
        deadline = time.monotonic() + timeout_s
        want = {h.port for h in self.hosts.values() if h.up}
        while time.monotonic() < deadline:
            if not self.faucet.alive():
                raise self.fail(f"FAUCET exited; log {self.faucet.log}:\n"
                                f"{self.faucet.proc.log_tail()}\n{self.faucet.exceptions()}")
            c = self.faucet.counters()
            if c.connects >= connects:
                up = {p for p, ok in c.port_changes if ok}
                if want <= up:
                    time.sleep(0.5)  # the cold start's last FLOW_MODs
                    return
            time.sleep(0.1)
        c = self.faucet.counters()
        if c.connects < connects:
            raise self.fail(f"the switch never connected to FAUCET in {timeout_s:.0f} s; "
                            f"FAUCET's log {self.faucet.log}")
        missing = sorted(want - {p for p, ok in c.port_changes if ok})
        raise self.fail(f"FAUCET never saw port(s) {missing} up in {timeout_s:.0f} s; "
                        f"FAUCET's log {self.faucet.log}")

    # ---- stop -------------------------------------------------------------------------------
    def close(self) -> None:
        """Stop everything this network started; idempotent, never raises. FAUCET's counters
        are taken first (``self.final``): the switch's stop is a disconnect of our making."""
        if self.final is None and self.faucets:
            self.final = self.counters()
        for p in reversed(self.procs):
            try:
                self.lab.stop(p)
            except Exception:  # noqa: BLE001
                pass
        self.procs.clear()
        for what in (self.switch, self.faucet):
            if what is not None:
                try:
                    what.stop()
                except Exception:  # noqa: BLE001
                    pass
        self.switch = self.faucet = None
        for ns in list(self.ns.values()):
            try:
                self.lab.del_netns(ns)
            except Exception:  # noqa: BLE001
                pass
        self.ns.clear()

    # ---- controller -------------------------------------------------------------------------
    def stop_faucet(self) -> None:
        self.faucet.stop()

    def start_faucet_again(self) -> None:
        """FAUCET started anew on the same port with the same config (a new log file)."""
        old = self.faucet
        self._restarts += 1
        try:
            self.faucet = start_faucet(self.lab, f"faucet-{self.tag}-r{self._restarts}",
                                       old.config.read_text(), netns=self.ns["sw"],
                                       port=old.port)
            self.faucets.append(self.faucet)
        except (FaucetError, ProcessStartError) as e:
            raise self.fail(f"FAUCET did not restart: {e}") from e

    # ---- checks -----------------------------------------------------------------------------
    def ping(self, src: str, dst_ip: str, count: int = 3, interval_s: float = 0.2,
             wait_s: float = 1.0) -> dict:
        out = self.lab.netns_exec(self.ns[src], ["ping", "-n", "-c", str(count), "-i",
                                                 str(interval_s), "-W", str(wait_s), dst_ip],
                                  check=False, timeout=count * interval_s + wait_s + 10).stdout
        m = re.search(r"(\d+) packets transmitted, (\d+) received", out)
        ttls = [int(t) for t in re.findall(r"ttl=(\d+)", out)]
        return {"tx": int(m.group(1)) if m else 0, "rx": int(m.group(2)) if m else 0,
                "ttls": ttls}

    def reachable(self, src: str, dst_ip: str, tries: int = 6) -> bool:
        """A ping answered within ``tries`` seconds (the first echoes may flood and learn)."""
        for _ in range(tries):
            if self.ping(src, dst_ip, count=1, wait_s=1.0)["rx"]:
                return True
        return False

    def rx_packets(self, name: str, dev: str = "eth0") -> int:
        out = self.lab.netns_exec(self.ns[name], ["cat", f"/sys/class/net/{dev}/statistics/"
                                                        "rx_packets"]).stdout
        return int(out.strip())

    def set_link(self, name: str, up: bool) -> None:
        """The host's cable: its eth0 down or up (the switch's port loses its carrier)."""
        self.lab.netns_exec(self.ns[name], ["ip", "link", "set", "eth0",
                                            "up" if up else "down"])

    def udp(self, src: str, dst: str, to_port: int, *, count: int = 20, listen=None,
            to_ip: str | None = None, pps: float = 200.0, wait_s: float = 2.0) -> dict:
        """Send ``count`` datagrams from ``src`` to ``dst`` (its address or ``to_ip``) at UDP
        port ``to_port``; ``dst`` listens on ``listen`` (default: ``to_port``). Returns the
        receiver's {"ports": {port: count}, "ttls": [...], "rx": n} and "tx"."""
        return self.udp_finish(self.udp_start(src, dst, to_port, count=count, listen=listen,
                                              to_ip=to_ip, pps=pps, wait_s=wait_s))

    def udp_start(self, src: str, dst: str, to_port: int, *, count: int = 20, listen=None,
                  to_ip: str | None = None, pps: float = 200.0, wait_s: float = 2.0):
        """:meth:`udp` started (receiver and sender both running); :meth:`udp_finish` waits."""
        recv = self._recv(dst, list(listen or [to_port]), wait_s)
        send = self._send(src, ["send", "--to", to_ip or self.hosts[dst].addr, "--port",
                                str(to_port), "--count", str(count), "--pps", str(pps)])
        return [recv], send, count / pps + wait_s + 10

    def udp_bcast(self, src: str, dsts: list[str], to_ip: str, to_port: int = 9100, *,
                  count: int = 10) -> dict[str, int]:
        """Datagrams to the broadcast address ``to_ip``: how many each of ``dsts`` got."""
        recvs = [self._recv(d, [to_port], 2.0) for d in dsts]
        send = self._send(src, ["send", "--to", to_ip, "--port", str(to_port), "--count",
                                str(count), "--pps", "200"])
        got = self.udp_finish((recvs, send, count / 200 + 12), each=True)
        return {d: g["rx"] for d, g in zip(dsts, got)}

    def raw(self, src: str, dst: str, to_port: int = 9000, *, vid: int | None = None,
            count: int = 20) -> dict:
        """``count`` UDP frames written by ``src``'s raw socket (802.1Q-tagged ``vid``), from
        its MAC and address to ``dst``'s; ``dst`` counts them with a raw socket if it is a
        tagged host ({"frames": {"<vid>/<port>": n}}), else with its kernel's UDP socket."""
        s, d = self.hosts[src], self.hosts[dst]
        recv = self._recv(dst, [to_port], 2.0, raw=bool(d.vid))
        send = self._send(src, ["rawsend", "--iface", "eth0", "--vid", str(vid or 0),
                                "--src-mac", s.mac, "--dst-mac", d.mac, "--src-ip", s.addr,
                                "--dst-ip", d.addr, "--port", str(to_port), "--count",
                                str(count), "--pps", "200"])
        return self.udp_finish(([recv], send, count / 200 + 12))

    def _recv(self, dst: str, ports: list[int], wait_s: float, raw: bool = False):
        self._probes += 1
        ready = self.lab.sock_path(f"{self.tag}-udp{self._probes}.ready")
        ready.unlink(missing_ok=True)
        argv = [sys.executable, "-m", PROBE, "rawrecv" if raw else "recv",
                *sum((["--port", str(p)] for p in ports), []), "--timeout", str(wait_s),
                "--ready-file", str(ready)]
        try:
            p = self.lab.supervisor.start(f"udp-recv-{self.tag}-{self._probes}", argv,
                                          netns=self.ns[dst], ready=ready.exists,
                                          env={"PYTHONPATH": "."})
        except ProcessStartError as e:
            raise self.fail(f"UDP probe did not start: {e}") from e
        self.procs.append(p)
        return p

    def _send(self, src: str, args: list[str]):
        self._probes += 1
        try:
            p = self.lab.supervisor.start(f"udp-send-{self.tag}-{self._probes}",
                                          [sys.executable, "-m", PROBE, *args],
                                          netns=self.ns[src], env={"PYTHONPATH": "."})
        except ProcessStartError as e:
            raise self.fail(f"UDP probe did not start: {e}") from e
        self.procs.append(p)
        return p

    def udp_finish(self, started, each: bool = False):
        recvs, send, timeout_s = started
        try:
            send.wait(timeout_s=timeout_s)
            for r in recvs:
                r.wait(timeout_s=timeout_s)
        except Exception as e:  # noqa: BLE001
            raise self.fail(f"UDP probe did not finish in {timeout_s:.0f} s: {e}") from e
        finally:
            for p in (send, *recvs):
                self.lab.stop(p)
                self.procs.remove(p)

        def last_json(p) -> dict:
            lines = [ln for ln in p.log_path.read_text().splitlines() if ln.startswith("{")]
            if not lines:
                raise self.fail(f"UDP probe printed no result; log {p.log_path}")
            return json.loads(lines[-1])

        tx = last_json(send)["tx"]
        out = []
        for r in recvs:
            got = last_json(r)
            got["tx"] = tx
            if "ports" in got:
                got["ports"] = {int(k): v for k, v in got["ports"].items()}
            out.append(got)
        return out if each else out[0]

    def counters(self):
        """FAUCET's counters summed over every FAUCET this network started."""
        from drivers.lab.faucet import FaucetCounters
        out = FaucetCounters()
        for f in self.faucets:
            out = out.plus(f.counters())
        return out

    def port_mark(self) -> int:
        return len(self.faucet.counters().port_changes)

    def wait_port(self, port: int, up: bool, since: int, timeout_s: float = 10.0) -> float | None:
        """Seconds until FAUCET has logged port ``port`` going ``up``/down after the
        ``since`` = :meth:`port_mark` taken before the change (None: not in time)."""
        t0 = time.monotonic()
        seen = since
        while time.monotonic() - t0 < timeout_s:
            if (port, up) in self.faucet.counters().port_changes[seen:]:
                return time.monotonic() - t0
            time.sleep(0.1)
        return None
