"""One strict schema language for every YAML config of ofbench (FAUCET's way: refuse, never
guess).

Each strict config states what it accepts as a :class:`Spec` tree and validates through
:func:`validate`; a bad file stops its reader with one message naming the file, the line and the
full key path, in the compiler form editors and CI logs understand::

    lab1.yaml:14: switch.ports.p1.pci: expected str, got int 3
    c.yaml:2: high_workers: must be in 1..64, got 0
    slices.yaml:7: tenants.t1[1]: unknown port 'g7' (known ports: g1)

Who uses it (one schema each, one test per kind of bad config in tests/test_config_schemas.py):
the lab profile (dut/profiles/schema.py), the controller apps' config (dut/controller/config.py),
vmwire tenants and the slice app (dut/vmwire/tenants.py, slice_app.py), WAN scenarios
(dut/wan/config.py), the WAN steering app (dut/wan/steering_app.py), ToS trace specs
(traces/tos_trace.py) and the suites' report declarations (reports/goals.py). This package
imports nothing of ofbench, so every layer may import it (tests/test_import_graph.py keeps it so).

A Spec checks, in this order: type (``kind``, a type or a tuple of types; ``bool`` is never an
``int``, an ``int`` is a ``float``), ``choices``, ``pattern`` (a full match), length
(``min_len``/``max_len`` of a str, list or mapping), range (``ge``/``gt``/``le``/``lt``), then
the contents: ``fields`` (a mapping with known keys: unknown keys refused, ``required`` ones
named, ``default`` filled in), or ``keys``/``values`` (a mapping of free names), or ``items`` (a
list, ``unique`` naming the item keys whose values must differ), and last ``check(value)``, which
returns a reason (str) or None, or raises :class:`Invalid` with a path below the value for a
cross-check (``raise Invalid("no switch port 'p7'", at=(0, "switch"))``). ``convert`` maps the
checked value to what the reader wants (``float``, ``bytes``...). ``what`` says in words what a
good value is, used in the type/pattern error (``expected an OpenFlow port number 1..N``).

Errors are :class:`SchemaError` (a ValueError); each system subclasses it (``ProfileError``,
``ConfigError``, ``VmwireConfigError``, ``SteeringConfigError``, ``TraceSpecError``,
``GoalError``), so its
callers' ``except`` clauses keep working, and passes its class as ``error=``.
"""
from __future__ import annotations

import difflib
import re
from pathlib import Path
from typing import Any, Callable, Iterable

import yaml

__all__ = ["Spec", "Invalid", "SchemaError", "validate", "load_yaml", "read_yaml", "key_path",
           "line_of"]


class SchemaError(ValueError):
    """A config that must not be used. ``str(e)`` is ``<file>[:<line>]: <key path>: <reason>``;
    the parts are kept as attributes (None for a plain message)."""

    def __init__(self, message: str, *, source: str | None = None, key: str | None = None,
                 line: int | None = None, reason: str | None = None):
        super().__init__(message)
        self.source, self.key, self.line, self.reason = source, key, line, reason

    @classmethod
    def at(cls, source: str, path: Iterable = (), reason: str = "", line: int | None = None
           ) -> "SchemaError":
        key = key_path(path)
        head = f"{source}:{line}" if line else source
        msg = f"{head}: {key}: {reason}" if key else f"{head}: {reason}"
        return cls(msg, source=source, key=key, line=line, reason=reason)


class Invalid(Exception):
    """Raised by a ``check`` for a problem below the checked value (``at`` is relative)."""

    def __init__(self, reason: str, at: Iterable = ()):
        super().__init__(reason)
        self.reason, self.at = reason, tuple(at)


def key_path(path: Iterable) -> str:
    """('switch', 'ports', 'p1') -> 'switch.ports.p1';
    ('links', 0, 'switch') -> 'links[0].switch'."""
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) and not isinstance(p, bool) else (
            f".{p}" if out else str(p))
    return out


_TYPE_NAMES = {str: "str", int: "int", float: "number", bool: "bool (true or false)",
               dict: "mapping", list: "list", type(None): "null"}


def _type_name(kind) -> str:
    if isinstance(kind, tuple):
        return " or ".join(_TYPE_NAMES.get(k, k.__name__) for k in kind)
    return _TYPE_NAMES.get(kind, getattr(kind, "__name__", str(kind)))


def _type_ok(kind, value) -> bool:
    if kind is None:
        return True
    if isinstance(kind, tuple):
        return any(_type_ok(k, value) for k in kind)
    if kind is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, kind)


def _got(value) -> str:
    return f"{type(value).__name__} {value!r}"


def _num(x) -> str:
    return f"{x:#x}" if isinstance(x, int) and x > 0xffffff else str(x)


class Spec:
    """What one value of a config may be; see the module docstring for each option."""

    def __init__(self, kind=None, *, required: bool = False, default: Any = None,
                 choices: Iterable | None = None, fields: dict[str, "Spec"] | None = None,
                 items: "Spec | None" = None, values: "Spec | None" = None,
                 keys: "Spec | None" = None, check: Callable | None = None,
                 ge=None, gt=None, le=None, lt=None, min_len: int | None = None,
                 max_len: int | None = None, pattern: str | None = None,
                 unique: Iterable[str] = (), convert: Callable | None = None,
                 what: str | None = None):
        self.kind, self.required, self.default = kind, required, default
        self.choices = tuple(choices) if choices is not None else None
        self.fields, self.items, self.values, self.keys = fields, items, values, keys
        self.check, self.ge, self.gt, self.le, self.lt = check, ge, gt, le, lt
        self.min_len, self.max_len = min_len, max_len
        self.pattern = re.compile(pattern) if isinstance(pattern, str) else pattern
        self.unique, self.convert, self.what = tuple(unique), convert, what

    def with_fields(self, **more: "Spec") -> "Spec":
        """A copy of this mapping spec that also accepts ``more`` keys."""
        new = Spec.__new__(Spec)
        new.__dict__.update(self.__dict__)
        new.fields = {**(self.fields or {}), **more}
        return new

    # ---- the checks of one value ----------------------------------------------------------
    def _span(self) -> str:
        """The range in words: 'in 1..64', '>= 0', 'in [0, 100)'; '' without one."""
        lo = (self.ge, ">=") if self.ge is not None else (self.gt, ">")
        hi = (self.le, "<=") if self.le is not None else (self.lt, "<")
        if lo[0] is not None and hi[0] is not None:
            if lo[1] == ">=" and hi[1] == "<=":
                return f"in {_num(lo[0])}..{_num(hi[0])}"
            return (f"in {'[' if lo[1] == '>=' else '('}{_num(lo[0])}, "
                    f"{_num(hi[0])}{']' if hi[1] == '<=' else ')'}")
        if lo[0] is not None:
            return f"{lo[1]} {_num(lo[0])}"
        if hi[0] is not None:
            return f"{hi[1]} {_num(hi[0])}"
        return ""

    def _range_problem(self, v) -> str | None:
        ok = ((self.ge is None or v >= self.ge) and (self.gt is None or v > self.gt) and
              (self.le is None or v <= self.le) and (self.lt is None or v < self.lt))
        if ok and (not isinstance(v, float) or v == v):    # NaN is in no range
            return None
        return f"must be {self._span()}, got {v!r}"

    def _length_problem(self, v) -> str | None:
        n = len(v)
        if (self.min_len is None or n >= self.min_len) and (self.max_len is None
                                                             or n <= self.max_len):
            return None
        unit = "characters" if isinstance(v, str) else (
            "keys" if isinstance(v, dict) else "items")
        if self.min_len == 1 and self.max_len is None:
            return "must not be empty"
        if self.max_len is None:
            return f"needs at least {self.min_len} {unit}, got {n}"
        return f"must have {self.min_len or 0}..{self.max_len} {unit}, got {n}"


def _closest(key, known) -> str:
    near = difflib.get_close_matches(str(key), [str(k) for k in known], n=1, cutoff=0.6)
    return f"did you mean {near[0]!r}? " if near else ""


def _check(spec: Spec, value: Any, path: tuple, fail: Callable) -> Any:
    if not _type_ok(spec.kind, value):
        span = spec._span()
        want = spec.what or (f"{_type_name(spec.kind)} {span}" if span
                             else _type_name(spec.kind))
        fail(path, f"expected {want}, got {_got(value)}")
    if spec.choices is not None and value not in spec.choices:
        fail(path, f"expected one of {', '.join(map(str, spec.choices))}, got {value!r}")
    if spec.pattern is not None and (not isinstance(value, str)
                                     or not spec.pattern.fullmatch(value)):
        fail(path, f"expected {spec.what or 'a string matching ' + spec.pattern.pattern}, "
             f"got {value!r}")
    if (spec.min_len is not None or spec.max_len is not None) and hasattr(value, "__len__"):
        problem = spec._length_problem(value)
        if problem:
            fail(path, problem)
    if any(b is not None for b in (spec.ge, spec.gt, spec.le, spec.lt)) and \
            _type_ok(float, value):
        problem = spec._range_problem(value)
        if problem:
            fail(path, f"expected {spec.what}, got {value!r}" if spec.what else problem)
    if isinstance(value, dict) and spec.fields is not None:
        out = {}
        for k in value:
            if k not in spec.fields:
                fail(path + (str(k),), f"unknown key ({_closest(k, spec.fields)}allowed: "
                     f"{', '.join(spec.fields)})")
        for k, sub in spec.fields.items():
            if k in value:
                out[k] = _check(sub, value[k], path + (k,), fail)
            elif sub.required:
                fail(path + (k,), "required key is missing")
            elif sub.default is not None:
                out[k] = sub.default() if callable(sub.default) else sub.default
        value = out
    elif isinstance(value, dict) and (spec.values is not None or spec.keys is not None):
        out = {}
        for k, v in value.items():
            at = path + (str(k),)       # a mapping key is never a list index in the path
            if spec.keys is not None:
                _check(spec.keys, k, at, fail)
            out[k] = _check(spec.values, v, at, fail) if spec.values else v
        value = out
    elif isinstance(value, list) and spec.items is not None:
        value = [_check(spec.items, v, path + (i,), fail) for i, v in enumerate(value)]
    if isinstance(value, list) and spec.unique:
        for field in spec.unique:
            seen: dict = {}
            for i, item in enumerate(value):
                if not isinstance(item, dict) or item.get(field) is None:
                    continue
                v = item[field]
                if v in seen:
                    fail(path + (i, field), f"{v!r} is already used by "
                         f"{key_path(path + (seen[v],))}")
                seen[v] = i
    if spec.check is not None:
        try:
            problem = spec.check(value)
        except Invalid as e:
            fail(path + e.at, e.reason)
        if problem:
            fail(path, problem)
    if spec.convert is not None:
        value = spec.convert(value)
    return value


def validate(spec: Spec, data: Any, *, source: str, error: type[SchemaError] = SchemaError,
             node: yaml.Node | None = None, prefix: tuple = ()) -> Any:
    """The checked value (defaults filled in, converted) or ``error`` naming source, key and,
    when the YAML ``node`` of the document is given, the line. ``prefix`` is the path of
    ``data`` inside the document (a profile's ``vmwire`` section)."""
    def fail(path: tuple, reason: str):
        full = prefix + path
        raise error.at(source, full, reason, line_of(node, full) if node is not None else None)

    return _check(spec, data, (), fail)


# ---- reading YAML with the nodes that give lines --------------------------------------------
def read_yaml(text: str, source: str, error: type[SchemaError] = SchemaError
              ) -> tuple[Any, yaml.Node | None]:
    """``(data, node)`` of a YAML text; bad YAML raises ``error`` naming ``source``."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise error.at(source, (), f"not valid YAML: {e}") from None
    return data, node


def load_yaml(path: str | Path, error: type[SchemaError] = SchemaError,
              source: str | None = None) -> tuple[Any, yaml.Node | None]:
    """``(data, node)`` of a YAML file; a file that cannot be read or is not YAML raises
    ``error`` naming it (``source``, default the path as given)."""
    source = str(path) if source is None else source
    try:
        text = Path(path).read_text()
    except OSError as e:
        raise error.at(source, (), f"cannot read: {e.strerror or e}") from None
    return read_yaml(text, source, error)


def line_of(node: yaml.Node | None, path: Iterable) -> int | None:
    """1-based line of the deepest key or item of ``path`` present in the document (a missing
    key: its parent's line); None when not even the first key is there."""
    line = None
    for key in path:
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                if k.value == str(key):
                    line, node = k.start_mark.line + 1, v
                    break
            else:
                return line
        elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) \
                and 0 <= key < len(node.value):
            node = node.value[key]
            line = node.start_mark.line + 1
        else:
            return line
    return line
