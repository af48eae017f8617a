"""The schema language itself (configschema/): what each option accepts and how it refuses."""
import math

import pytest

from configschema import Invalid, SchemaError, Spec, key_path, read_yaml, validate


class MyError(SchemaError):
    pass


def check(spec, value, **kw):
    return validate(spec, value, source="f.yaml", error=MyError, **kw)


def refused(spec, value, **kw) -> MyError:
    with pytest.raises(MyError) as e:
        check(spec, value, **kw)
    return e.value


def test_key_paths():
    assert key_path(("switch", "ports", "p1")) == "switch.ports.p1"
    assert key_path(("links", 0, "switch")) == "links[0].switch"
    assert key_path((0, 1)) == "[0][1]" and key_path(()) == ""


@pytest.mark.parametrize("spec, value, reason", [
    (Spec(int), True, "expected int, got bool True"),          # bool is never an int
    (Spec(int), 1.0, "expected int, got float 1.0"),
    (Spec(str), None, "expected str, got NoneType None"),
    (Spec(bool), "yes", "expected bool (true or false), got str 'yes'"),
    (Spec((str, int)), 1.5, "expected str or int, got float 1.5"),
    (Spec(int, ge=1, le=64), "8", "expected int in 1..64, got str '8'"),
    (Spec(int, ge=1, le=64), 65, "must be in 1..64, got 65"),
    (Spec(float, gt=0), 0, "must be > 0, got 0"),
    (Spec(float, ge=0, lt=100), 100.0, "must be in [0, 100), got 100.0"),
    (Spec(float, gt=0, le=1), 0.0, "must be in (0, 1], got 0.0"),
    (Spec(float, ge=0), math.nan, "must be >= 0, got nan"),
    (Spec(int, lt=0xFFFFFF00), 0xFFFFFF00, "must be < 0xffffff00, got 4294967040"),
    (Spec(int, ge=1, what="a port number"), 0, "expected a port number, got 0"),
    (Spec(str, choices=("a", "b")), "c", "expected one of a, b, got 'c'"),
    (Spec(str, pattern=r"[a-z]+"), "A1", "expected a string matching [a-z]+, got 'A1'"),
    (Spec(str, pattern=r"[a-z]+", what="a word"), "A1", "expected a word, got 'A1'"),
    (Spec(list, min_len=1), [], "must not be empty"),
    (Spec(str, min_len=2, max_len=3), "abcd", "must have 2..3 characters, got 4"),
    (Spec(dict, min_len=2), {"a": 1}, "needs at least 2 keys, got 1"),
    (Spec(int, check=lambda v: None if v % 2 else "must be odd"), 4, "must be odd"),
])
def test_a_value_is_refused_with_its_reason(spec, value, reason):
    e = refused(spec, value)
    assert e.reason == reason and str(e) == f"f.yaml: {reason}"


def test_an_int_is_a_number_and_convert_maps_it():
    assert check(Spec(float), 3) == 3 and type(check(Spec(float), 3)) is int
    assert type(check(Spec(float, convert=float), 3)) is float


SPEC = Spec(dict, fields={
    "name": Spec(str, required=True),
    "workers": Spec(int, default=1, ge=1),
    "tags": Spec(list, default=list, items=Spec(str)),
    "ports": Spec(dict, keys=Spec(str, pattern=r"p\d+", what="a port name p<N>"),
                  values=Spec(dict, fields={"speed": Spec(float, gt=0)})),
    "links": Spec(list, unique=("name",), items=Spec(dict, fields={"name": Spec(str)})),
})


def test_mappings_fill_defaults_and_refuse_unknown_keys():
    assert check(SPEC, {"name": "x"}) == {"name": "x", "workers": 1, "tags": []}
    e = refused(SPEC, {"name": "x", "wrkers": 2})
    assert (e.key, e.reason) == ("wrkers", "unknown key (did you mean 'workers'? allowed: "
                                           "name, workers, tags, ports, links)")
    assert refused(SPEC, {"name": "x", "colour": 2}).reason.startswith("unknown key (allowed")
    assert refused(SPEC, {}).key == "name"


def test_nested_errors_carry_the_full_path():
    assert refused(SPEC, {"name": "x", "ports": {"p1": {"speed": 0}}}).key == "ports.p1.speed"
    e = refused(SPEC, {"name": "x", "ports": {"x1": {}}})
    assert (e.key, e.reason) == ("ports.x1", "expected a port name p<N>, got 'x1'")
    assert refused(SPEC, {"name": "x", "tags": ["a", 2]}).key == "tags[1]"
    e = refused(SPEC, {"name": "x", "links": [{"name": "a"}, {"name": "b"}, {"name": "a"}]})
    assert (e.key, e.reason) == ("links[2].name", "'a' is already used by links[0]")


def test_a_number_as_a_mapping_key_is_named_as_a_key():
    data, node = read_yaml("name: x\nports:\n  7: {speed: 0}\n", "f.yaml", MyError)
    assert str(refused(SPEC, data, node=node)) == \
        "f.yaml:3: ports.7: expected a port name p<N>, got int 7"
    data, node = read_yaml("name: x\n3: y\n", "f.yaml", MyError)
    assert refused(SPEC, data, node=node).key == "3" and refused(SPEC, data, node=node).line == 2


def test_a_check_names_the_key_below_it():
    def cross(d):
        if d["b"] < d["a"]:
            raise Invalid(f"must be >= a ({d['a']})", at=("b",))
    spec = Spec(dict, check=cross, fields={"a": Spec(int), "b": Spec(int)})
    e = refused(spec, {"a": 2, "b": 1}, prefix=("sec",))
    assert str(e) == "f.yaml: sec.b: must be >= a (2)"


def test_lines_come_from_the_yaml_document():
    text = "name: x\nports:\n  p1:\n    speed: 0\nlinks:\n  - name: a\n  - {name: a}\n"
    data, node = read_yaml(text, "f.yaml", MyError)
    e = refused(SPEC, data, node=node)
    assert (e.line, e.key) == (4, "ports.p1.speed")
    assert str(e) == "f.yaml:4: ports.p1.speed: must be > 0, got 0"
    data["ports"]["p1"]["speed"] = 1
    assert refused(SPEC, data, node=node).line == 7                  # a list item's line
    data, node = read_yaml("ports:\n  p1: {}\n", "f.yaml", MyError)
    assert refused(SPEC, data, node=node).line is None               # missing top-level key


def test_with_fields_extends_a_copy():
    more = SPEC.with_fields(extra=Spec(int))
    assert check(more, {"name": "x", "extra": 1})["extra"] == 1
    assert refused(SPEC, {"name": "x", "extra": 1}).key == "extra"


def test_bad_yaml_names_the_source():
    with pytest.raises(MyError, match=r"^f.yaml: not valid YAML"):
        read_yaml("a: [b\n", "f.yaml", MyError)


def test_errors_without_a_location_stay_plain_messages():
    e = MyError("assignment names unknown app 'x'")
    assert str(e) == "assignment names unknown app 'x'" and e.key is None
