"""Text rule files for the classifier: one rule per line, errors name the file and line.

Format (``#`` starts a comment, blank lines are ignored)::

    fields eth_dst:48 vlan_vid:16 ipv4_dst:32 tp_dst:16     # once, before any rule
    # priority  field=value[/mask] ...  -> action
    100 eth_dst=00:11:22:00:00:00/ff:ff:ff:00:00:00 ipv4_dst=10.0.0.0/8 -> output:2
    10  tp_dst=80 -> drop
    0   -> controller

* ``fields``: name:bits, bits a multiple of 8 (1..1024 in total); the key is the fields
  packed in that order, each in network byte order.
* priority: 0..4294967295, higher wins; equal priorities: earlier line wins.
* value: decimal, ``0x`` hex, MAC ``aa:bb:cc:dd:ee:ff`` or IPv4 ``10.1.2.3``.
* mask: ``/N`` prefix length (decimal), or ``/0x..``, MAC or IPv4 form; absent = exact.
  A field not named is a wildcard. Value bits outside the mask are an error.
* action: any non-empty text after ``->``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path


class RuleFileError(ValueError):
    def __init__(self, path: str, line: int, msg: str):
        self.path, self.line, self.msg = str(path), line, msg
        super().__init__(f"{path}:{line}: {msg}")


@dataclass(frozen=True)
class FieldDef:
    name: str
    bits: int
    offset: int  # bytes

    @property
    def width(self) -> int:
        return self.bits // 8


@dataclass(frozen=True)
class TextRule:
    priority: int
    value: bytes
    mask: bytes
    action: str
    line: int


@dataclass
class RuleFile:
    path: str
    fields: list[FieldDef]
    rules: list[TextRule]

    @property
    def key_len(self) -> int:
        return sum(f.width for f in self.fields)

    def field(self, name: str) -> FieldDef:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(name)


_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _decimal(text: str) -> bool:
    """ASCII digits only: str.isdigit() also takes '²' (which int() then refuses with no
    file:line) and '١' (which int() silently reads as 1)."""
    return re.fullmatch(r"[0-9]+", text) is not None


def _parse_number(text: str, bits: int) -> int | None:
    """Integer from decimal, 0x hex, MAC (6 bytes) or dotted IPv4; None if no form fits."""
    try:
        if re.fullmatch(r"[0-9]+", text):
            return int(text)
        if re.fullmatch(r"0[xX][0-9a-fA-F]+", text):
            return int(text, 16)
        if re.fullmatch(r"([0-9a-fA-F]{1,2}:){5}[0-9a-fA-F]{1,2}", text):
            return int("".join(f"{int(x, 16):02x}" for x in text.split(":")), 16)
        if re.fullmatch(r"([0-9]{1,3}\.){3}[0-9]{1,3}", text):
            parts = [int(x) for x in text.split(".")]
            if all(p < 256 for p in parts):
                return (parts[0] << 24) | (parts[1] << 16) | (parts[2] << 8) | parts[3]
    except ValueError:
        return None
    return None


def parse_rule_text(text: str, path: str = "<string>") -> RuleFile:
    fields: list[FieldDef] | None = None
    rules: list[TextRule] = []
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue

        def err(msg: str):
            raise RuleFileError(path, lineno, msg)

        if line.startswith("fields"):
            if fields is not None:
                err("second 'fields' line")
            fields, off, seen = [], 0, set()
            specs = line.split()[1:]
            if not specs:
                err("'fields' needs at least one name:bits")
            for spec in specs:
                name, _, bits = spec.partition(":")
                if not _NAME.match(name):
                    err(f"bad field name {name!r}")
                if name in seen:
                    err(f"field {name!r} declared twice")
                if not _decimal(bits) or int(bits) == 0 or int(bits) % 8:
                    err(f"field {name!r}: width {bits!r} is not a positive multiple of 8 bits")
                seen.add(name)
                fields.append(FieldDef(name, int(bits), off))
                off += int(bits) // 8
            if off > 128:
                err(f"key is {off} bytes, the classifier allows 128")
            continue
        if fields is None:
            err("rule before the 'fields' line")
        head, arrow, action = line.partition("->")
        if not arrow or not action.strip():
            err("missing '-> action'")
        toks = head.split()
        if not toks:
            err("missing priority")
        if not _decimal(toks[0]) or int(toks[0]) > 0xFFFFFFFF:
            err(f"bad priority {toks[0]!r} (0..4294967295)")
        klen = sum(f.width for f in fields)
        value, mask = bytearray(klen), bytearray(klen)
        used = set()
        for tok in toks[1:]:
            name, eq, spec = tok.partition("=")
            if not eq:
                err(f"{tok!r}: expected field=value[/mask]")
            fd = next((f for f in fields if f.name == name), None)
            if fd is None:
                err(f"unknown field {name!r}")
            if name in used:
                err(f"field {name!r} given twice")
            used.add(name)
            vtext, slash, mtext = spec.partition("/")
            v = _parse_number(vtext, fd.bits)
            if v is None:
                err(f"{name}: bad value {vtext!r}")
            full = (1 << fd.bits) - 1
            if v > full:
                err(f"{name}: value {vtext} does not fit in {fd.bits} bits")
            if not slash:
                m = full
            elif _decimal(mtext):
                n = int(mtext)
                if n > fd.bits:
                    err(f"{name}: prefix /{n} longer than {fd.bits} bits")
                m = (full << (fd.bits - n)) & full if n else 0
            else:
                m = _parse_number(mtext, fd.bits)
                if m is None or m > full:
                    err(f"{name}: bad mask {mtext!r}")
            if v & ~m:
                err(f"{name}: value {vtext} has bits outside mask {mtext or 'exact'}")
            value[fd.offset:fd.offset + fd.width] = v.to_bytes(fd.width, "big")
            mask[fd.offset:fd.offset + fd.width] = m.to_bytes(fd.width, "big")
        rules.append(TextRule(int(toks[0]), bytes(value), bytes(mask), action.strip(), lineno))
    if fields is None:
        raise RuleFileError(path, 0, "no 'fields' line")
    return RuleFile(str(path), fields, rules)


def parse_rule_file(path: str | Path) -> RuleFile:
    return parse_rule_text(Path(path).read_text(), str(path))


def format_rules(fields: list[FieldDef], rules: list[tuple[int, bytes, bytes, str]]) -> str:
    """Text for (priority, value, mask, action) rules; masks written in hex."""
    out = ["fields " + " ".join(f"{f.name}:{f.bits}" for f in fields)]
    for prio, value, mask, action in rules:
        parts = [str(prio)]
        for f in fields:
            m = int.from_bytes(mask[f.offset:f.offset + f.width], "big")
            if m == 0:
                continue
            v = int.from_bytes(value[f.offset:f.offset + f.width], "big") & m
            full = (1 << f.bits) - 1
            parts.append(f"{f.name}={v:#x}" if m == full else f"{f.name}={v:#x}/{m:#x}")
        out.append(" ".join(parts) + f" -> {action}")
    return "\n".join(out) + "\n"
