"""Strict tenant config: one test per kind of bad input; each error names file, key (line)."""
import pytest

from dut.vmwire.tenants import VmwireConfigError, load_config_file, parse_config

GOOD = {"ports": {"g1": 1, "g2": 2, "g3": 3}, "tenants": {"t1": ["g1", "g2"], "t2": ["g3"]}}


def test_good_config():
    cfg = parse_config(GOOD, "x.yaml")
    assert cfg.tenant_of == {"g1": "t1", "g2": "t1", "g3": "t2"}
    assert cfg.ofports_of("t1") == [1, 2]
    assert cfg.tenant_of_ofport(3) == "t2" and cfg.tenant_of_ofport(9) is None
    assert cfg.switch_vhost_mode == "client"


def test_profile_section_comes_back_as_plain_data(tmp_path):
    from dut.profiles.schema import load_profile
    prof = tmp_path / "p.yaml"
    prof.write_text("schema_version: 1\nlab: {kind: local}\nswitch: {kind: ovs}\n"
                    "vmwire: {ports: {g1: 1, g2: 2, g3: 3}, tenants: {t1: [g1, g2], t2: [g3]},"
                    " switch_vhost_mode: server}\n")
    out = load_profile(str(prof)).section("vmwire")
    assert out["tenants"] == {"t1": ["g1", "g2"], "t2": ["g3"]}
    assert out["switch_vhost_mode"] == "server"


def test_tenant_refers_to_unknown_port():
    bad = {"ports": {"g1": 1}, "tenants": {"t1": ["g1", "g9"]}}
    with pytest.raises(VmwireConfigError, match=r"p.yaml: tenants.t1\[1\]: unknown "
                                                r"port 'g9' \(known ports: g1\)"):
        parse_config(bad, "p.yaml")


def test_port_in_two_tenants():
    bad = {"ports": {"g1": 1, "g2": 2}, "tenants": {"a": ["g1"], "b": ["g2", "g1"]}}
    with pytest.raises(VmwireConfigError, match=r"tenants.b\[1\]: port 'g1' is already in "
                                                r"tenant 'a'"):
        parse_config(bad, "w")


def test_port_listed_twice():
    with pytest.raises(VmwireConfigError, match="listed twice"):
        parse_config({"ports": {"g1": 1}, "tenants": {"a": ["g1", "g1"]}}, "w")


@pytest.mark.parametrize("num", [0, -1, 0xFFFFFF00, "1", True, 1.5])
def test_bad_port_number(num):
    with pytest.raises(VmwireConfigError, match=r"ports.g1: expected an OpenFlow port number"):
        parse_config({"ports": {"g1": num}, "tenants": {"a": ["g1"]}}, "w")


def test_duplicate_port_number():
    with pytest.raises(VmwireConfigError, match=r"ports.g2: port number 1 is already used by "
                                                r"port 'g1'"):
        parse_config({"ports": {"g1": 1, "g2": 1}, "tenants": {"a": ["g1"]}}, "w")


def test_unknown_key():
    with pytest.raises(VmwireConfigError, match=r"w: tenant: unknown key"):
        parse_config(dict(GOOD, tenant={}), "w")


@pytest.mark.parametrize("section,key", [({"tenants": {"a": ["g1"]}}, "ports"),
                                         ({"ports": {"g1": 1}}, "tenants"),
                                         ({"ports": {}, "tenants": {}}, "ports")])
def test_missing_or_empty_sections(section, key):
    with pytest.raises(VmwireConfigError, match=rf"w: {key}: (required|must not be empty)"):
        parse_config(section, "w")


def test_empty_tenant_and_bad_names():
    with pytest.raises(VmwireConfigError, match=r"tenants.a: must not be empty"):
        parse_config({"ports": {"g1": 1}, "tenants": {"a": []}}, "w")
    with pytest.raises(VmwireConfigError, match=r"ports.1bad: expected a name of 1-32 characters"):
        parse_config({"ports": {"1bad": 1}, "tenants": {"a": ["1bad"]}}, "w")
    with pytest.raises(VmwireConfigError, match=r"tenants.t 1: expected a name of 1-32"):
        parse_config({"ports": {"g1": 1}, "tenants": {"t 1": ["g1"]}}, "w")


def test_bad_vhost_mode():
    with pytest.raises(VmwireConfigError, match=r"switch_vhost_mode: expected one of client, "
                                                r"server"):
        parse_config(dict(GOOD, switch_vhost_mode="both"), "w")


def test_not_a_mapping():
    with pytest.raises(VmwireConfigError, match=r"w: expected a mapping"):
        parse_config(["g1"], "w")


def test_file_errors_carry_the_line(tmp_path):
    p = tmp_path / "slices.yaml"
    p.write_text("vmwire:\n  ports:\n    g1: 1\n  tenants:\n    t1:\n      - g1\n      - g7\n")
    with pytest.raises(VmwireConfigError, match=r"slices.yaml:7: vmwire.tenants.t1\[1\]: "
                                                r"unknown port 'g7'"):
        load_config_file(p)


def test_file_missing_and_not_yaml(tmp_path):
    with pytest.raises(VmwireConfigError, match="no such vmwire config file"):
        load_config_file(tmp_path / "nope.yaml")
    p = tmp_path / "bad.yaml"
    p.write_text("ports: [\n")
    with pytest.raises(VmwireConfigError, match="not valid YAML"):
        load_config_file(p)


def test_profile_loader_uses_this_validator(tmp_path):
    """dut/profiles/schema.py checks the vmwire section with this spec, in place: the error
    names the profile, the line and the full key path."""
    from dut.profiles.schema import ProfileError, load_profile
    prof = tmp_path / "p.yaml"
    prof.write_text("schema_version: 1\nlab: {kind: local}\nswitch: {kind: ovs}\n"
                    "generator: {kind: softgen}\n"
                    "vmwire: {ports: {g1: 1}, tenants: {t1: [g1, gX]}}\n")
    with pytest.raises(ProfileError, match=r"p.yaml:5: vmwire.tenants.t1\[1\]: unknown port "
                                           r"'gX'"):
        load_profile(str(prof))
