"""One test per kind of bad profile: each must be refused with the file and the key named."""
import copy
import re

import pytest
import yaml

from dut.profiles.schema import ProfileError, available_profiles, load_profile

GOOD = {
    "schema_version": 1,
    "lab": {"kind": "local"},
    "features": ["netns", "ovs"],
    "switch": {"kind": "ovs", "ports": {"p1": {"devargs": "net_memif0,role=server"}}},
    "generator": {"kind": "softgen", "ports": {"g0": {"devargs": "net_null0"}}},
    "links": [{"generator": "g0", "switch": "p1"}],
}


REMOTE = {"kind": "remote", "hosts": {"controller": {"address": "198.18.0.3"}}}
CONF = {"tester_host": "controller", "links": [{"tester": f"t{i}", "switch": f"s{i}"}
                                               for i in (1, 2, 3)]}


def write(tmp_path, data, name="bad.yaml"):
    p = tmp_path / name
    p.write_text(data if isinstance(data, str) else yaml.safe_dump(data))
    return str(p)


def mutate(fn):
    d = copy.deepcopy(GOOD)
    fn(d)
    return d


@pytest.mark.parametrize("name", available_profiles())
def test_shipped_profiles_parse(name):
    assert load_profile(name).name == name


def test_good_profile_gets_defaults(tmp_path):
    p = load_profile(write(tmp_path, GOOD, "good.yaml"))
    assert p.name == "good" and p.switch["workers"] == 1 and p.controller["port"] == 0
    assert p.switch_kinds == ["ovs"] and p.has("netns") and not p.has("trex")
    assert p.one_dut is False


def test_one_dut_keeps_the_suites_on_the_profiles_switch(tmp_path):
    both = mutate(lambda d: d.update(peers=["ofbench", "ovs-dpdk"]))
    p = load_profile(write(tmp_path, both, "both.yaml"))
    assert p.suite_switch_kinds() == ["ovs", "ofbench", "ovs-dpdk"] == p.switch_kinds
    one = load_profile(write(tmp_path, {**both, "one_dut": True}, "one.yaml"))
    assert one.one_dut and one.suite_switch_kinds() == ["ovs"]
    assert one.switch_kinds == ["ovs", "ofbench", "ovs-dpdk"]  # throughput keeps its peers


@pytest.mark.parametrize("bad, key, words", [
    (lambda d: d.update(colour="blue"), "colour", "unknown key"),
    (lambda d: d["switch"].update(wrkers=2), "switch.wrkers", "unknown key"),
    (lambda d: d["switch"].update(workers="two"), "switch.workers", "expected int"),
    (lambda d: d["switch"].update(workers=0), "switch.workers", "must be >= 1, got 0"),
    (lambda d: d.pop("switch"), "switch", "required key is missing"),
    (lambda d: d["switch"].update(kind="cisco"), "switch.kind", "expected one of ofbench, ovs"),
    (lambda d: d.update(features=["netns", "warp_drive"]), "features[1]", "expected one of"),
    (lambda d: d.update(schema_version=2), "schema_version", "expected one of 1, got 2"),
    (lambda d: d.update(targets={"throughput": {"x": {"ndr_mpps": "at least 14"}}}),
     "targets.throughput.x.ndr_mpps", "bad target"),
    (lambda d: d.update(lab={"kind": "remote"}), "lab.hosts", "remote lab needs"),
    (lambda d: d.update(generator={"kind": "trex"}), "generator.server", "required"),
    (lambda d: d["links"][0].update(generator="g9"), "links[0].generator", "no generator port"),
    (lambda d: d["links"][0].update(switch="p7"), "links[0].switch", "no switch port 'p7'"),
    (lambda d: d["switch"].pop("ports"), "links[0]", "both sections need their ports"),
    (lambda d: d["lab"].update(emulated=True), "lab.emulated", "only a remote lab"),
    (lambda d: d.update(lab={"kind": "remote", "hosts": {"sw": {"address": "198.18.0.2"}}},
                        switch={**d["switch"], "host": "switch"}),
     "switch.host", "'switch' is not a host in lab.hosts"),
    (lambda d: d.update(lab={"kind": "remote", "hosts": {"sw": {"address": "198.18.0.2",
                                                                "ssh_port": "22"}}}),
     "lab.hosts.sw.ssh_port", "expected int"),
    (lambda d: d.update(peers=["ovs"]), "peers", "already the profile's switch"),
    (lambda d: d.update(one_dut="yes"), "one_dut", "expected bool"),
    (lambda d: d.update(one_dut_=True), "one_dut_", "unknown key"),
    (lambda d: d["controller"].update(port=70000) if "controller" in d
     else d.update(controller={"port": 70000}), "controller.port", "must be in 0..65535, got 70000"),
    (lambda d: d.update(conformance=CONF), "conformance.tester_host",
     "'controller' is not a host in lab.hosts"),
    (lambda d: d.update(lab=REMOTE, conformance={**CONF, "links": CONF["links"][:2]}),
     "conformance.links", "must have 3..3 items, got 2"),
    (lambda d: d.update(lab=REMOTE, conformance={**CONF, "links": [
        {"tester": "t1", "switch": "s1"}, {"tester": "t1", "switch": "s2"},
        {"tester": "t3", "switch": "s3"}]}), "conformance.links[1].tester",
     "'t1' is already used by conformance.links[0]"),
    (lambda d: d.update(lab=REMOTE, conformance={**CONF, "links": [
        {"tester": "t1", "switch": "a very long name"}, *CONF["links"][1:]]}),
     "conformance.links[0].switch", "expected a kernel interface name"),
    (lambda d: d.update(lab=REMOTE, conformance={"links": CONF["links"]}),
     "conformance.tester_host", "required key is missing"),
    (lambda d: d["lab"].update(coordinator="192.0.2.1"), "lab.coordinator",
     "expected HOST:PORT of labgrid-coordinator"),
    (lambda d: d["lab"].update(coordinator="192.0.2.1:99999"), "lab.coordinator",
     "port 99999 is not in 1..65535"),
    (lambda d: d["lab"].update(coordinator=20408), "lab.coordinator", "got int 20408"),
    (lambda d: d["lab"].update(coordinator="127.0.0.1:20408", place="my place"), "lab.place",
     "expected a place name"),
    (lambda d: d["lab"].update(place="lab1"), "lab.place", "set lab.coordinator too"),
    (lambda d: d["lab"].update(coordinator="127.0.0.1:20408", tags={"Pool": "emu"}),
     "lab.tags.Pool", "expected a tag key"),
    (lambda d: d["lab"].update(coordinator="127.0.0.1:20408", tags={"pool": "Emu Lab"}),
     "lab.tags.pool", "expected a tag value"),
    (lambda d: d["lab"].update(cordinator="127.0.0.1:20408"), "lab.cordinator", "unknown key"),
])
def test_bad_profile_names_file_and_key(tmp_path, bad, key, words):
    path = write(tmp_path, mutate(bad))
    with pytest.raises(ProfileError) as e:
        load_profile(path)
    msg = str(e.value)
    assert re.search(rf"bad.yaml(:\d+)?: {re.escape(key)}: .*{re.escape(words)}", msg), msg
    assert e.value.key == key and e.value.source == "bad.yaml" or e.value.source.endswith(
        "/bad.yaml"), msg


def _host(**kv):
    return lambda d: d.update(lab={"kind": "remote", "hosts": {"sw": {"address": "198.18.0.2",
                                                                      **kv}}})


# Profile strings that reach a shell, a path or an argv on a lab host (issue 38): one case per
# kind of bad value, each refused before anything runs with the file, line and key.
@pytest.mark.parametrize("bad, key, words", [
    (_host(address="-oProxyCommand=id"), "lab.hosts.sw.address",
     "expected an IP address or a host name"),
    (_host(address="lab1; id"), "lab.hosts.sw.address", "expected an IP address or a host name"),
    (_host(address="999.1.1.1"), "lab.hosts.sw.address", "expected an IP address or a host name"),
    (_host(user="-l"), "lab.hosts.sw.user", "expected a POSIX user name"),
    (_host(user="root@evil"), "lab.hosts.sw.user", "expected a POSIX user name"),
    (_host(workdir="/opt"), "lab.hosts.sw.workdir", "at least two levels deep"),
    (_host(workdir="/"), "lab.hosts.sw.workdir", "at least two levels deep"),
    (_host(workdir="~/ofbench"), "lab.hosts.sw.workdir", "expected an absolute path"),
    (_host(workdir="opt/ofbench"), "lab.hosts.sw.workdir", "expected an absolute path"),
    (_host(workdir="/opt/ofbench/../../etc"), "lab.hosts.sw.workdir", "normalised"),
    (_host(workdir="/opt//ofbench"), "lab.hosts.sw.workdir", "normalised"),
    (_host(workdir="/opt/ofbench/"), "lab.hosts.sw.workdir", "normalised"),
    (_host(workdir="/opt/of bench"), "lab.hosts.sw.workdir", "no spaces, quotes or shell"),
    (_host(workdir="/opt/$(id)"), "lab.hosts.sw.workdir", "no spaces, quotes or shell"),
    (_host(workdir="/usr/local"), "lab.hosts.sw.workdir", "is a system or home directory"),
    (_host(workdir="/etc/ofbench"), "lab.hosts.sw.workdir", "is a system or home directory"),
    (_host(workdir="/home/alice"), "lab.hosts.sw.workdir", "is a system or home directory"),
    (_host(key_file="-i/x"), "lab.hosts.sw.key_file", "expected a file path"),
    (lambda d: d.update(lab={"kind": "remote", "hosts": {"-sw": {"address": "198.18.0.2"}}}),
     "lab.hosts.-sw", "expected a name of 1-32"),
    (lambda d: d.update(lab={"kind": "local", "state_dir": "/run"}), "lab.state_dir",
     "at least two levels deep"),
    (lambda d: d.update(lab={"kind": "local", "known_hosts": "/x y"}), "lab.known_hosts",
     "expected a file path"),
    (lambda d: d["switch"]["ports"].update({"p;1": {"devargs": "net_null1"}}),
     "switch.ports.p;1", "expected a name of 1-32"),
    (lambda d: d["switch"]["ports"]["p1"].update(devargs="-v,net_null0"),
     "switch.ports.p1.devargs", "expected DPDK devargs"),
    (lambda d: d["switch"]["ports"]["p1"].update(devargs="net_null0 --vdev x"),
     "switch.ports.p1.devargs", "expected DPDK devargs"),
    (lambda d: d["generator"]["ports"]["g0"].update(devargs=None, pci="03:00.0"),
     "generator.ports.g0.pci", "expected a PCI address"),
    (lambda d: d["switch"].update(cores="0;id"), "switch.cores", "expected a core list"),
    (lambda d: d.update(controller={"host": "-x"}), "controller.host",
     "expected an IP address or a host name"),
    (lambda d: d.update(generator={"kind": "trex", "server": "a b"}), "generator.server",
     "expected an IP address or a host name"),
    (lambda d: d.update(lab=REMOTE, conformance={**CONF, "links": [
        {"tester": "-t1", "switch": "s1"}, *CONF["links"][1:]]}),
     "conformance.links[0].tester", "expected a kernel interface name"),
    (lambda d: d.update(influx={"url": "http://127.0.0.1:8086", "token": "u:p"}),
     "influx.token", "a token in a profile is refused"),
])
def test_profile_strings_reaching_a_shell_or_path_are_checked(tmp_path, bad, key, words):
    d = mutate(bad)
    if d["generator"].get("ports", {}).get("g0", {}).get("devargs", "") is None:
        del d["generator"]["ports"]["g0"]["devargs"]
    path = write(tmp_path, d)
    with pytest.raises(ProfileError) as e:
        load_profile(path)
    msg = str(e.value)
    assert re.search(rf"bad.yaml:\d+: {re.escape(key)}: .*{re.escape(words)}", msg), msg


@pytest.mark.parametrize("host", [
    {"address": "192.0.2.10", "user": "root", "workdir": "/opt/ofbench"},
    {"address": "2001:db8::1", "user": "lab-user", "workdir": "/srv/ofbench/lab1"},
    {"address": "switch-1.lab.example.org", "user": "_ofb", "workdir": "/home/lab/ofbench"},
    {"address": "sw1", "key_file": "~/.ssh/ofbench_lab", "workdir": "/var/cache/ofbench/sw"},
])
def test_good_host_strings_are_accepted(tmp_path, host):
    d = mutate(lambda d: d.update(lab={"kind": "remote", "hosts": {"sw": host}}))
    assert load_profile(write(tmp_path, d, "good.yaml")).data["lab"]["hosts"]["sw"]


def test_missing_file_lists_known_profiles():
    with pytest.raises(ProfileError, match=r"nosuchlab.yaml: no such profile file \(known"):
        load_profile("nosuchlab")


def test_yaml_syntax_error_names_file(tmp_path):
    with pytest.raises(ProfileError, match=r"bad.yaml: not valid YAML"):
        load_profile(write(tmp_path, "switch: [unclosed\n"))


def test_not_a_mapping(tmp_path):
    with pytest.raises(ProfileError, match=r"bad.yaml: a profile is a mapping"):
        load_profile(write(tmp_path, "- just\n- a list\n"))
