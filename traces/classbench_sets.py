"""Public ClassBench filter sets (files in ``traces/classbench/``) as :class:`traces.rulesets.RuleSet`.

Each set is a ClassBench-format file with a ``<name>.provenance.yaml`` beside it (source repository,
path, commit, sha256, line count, licence status, the expansion below); :func:`load` refuses a file
whose sha256 or line count differs from its provenance.

Expansion to cls-bench's 13-byte key (``traces.rulesets.CB_FIELDS``: ip_proto, ipv4_src, ipv4_dst,
tp_src, tp_dst, network byte order): prefixes become masks, the protocol's value/mask is kept
(``0x00/0x00`` = any), every port range is split into its minimal prefixes
(:func:`traces.rulesets.range_to_prefixes`) and a filter becomes the cross product of its source-
and destination-port prefixes. The TCP-flags field is not in the key and is dropped. Priority is
file order (the first filter highest, ClassBench's first match); a filter's rules share it.

Keys: :meth:`RuleSet.keys` with ``hit_fraction=1.0`` draws every key inside a filter (a random rule
of the expansion, random bits where it wildcards) - these sets publish no header trace.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import numpy as np
import yaml

from traces.rulesets import CB_FIELDS, CB_KEY_LEN, RuleSet, range_to_prefixes

DIR = Path(__file__).resolve().parent / "classbench"
#: the public sets kept here (name -> file stem in DIR)
SETS = ("acl1_20000",)

_LINE = re.compile(r"^@(\d+)\.(\d+)\.(\d+)\.(\d+)/(\d+)\s+(\d+)\.(\d+)\.(\d+)\.(\d+)/(\d+)\s+"
                   r"(\d+)\s*:\s*(\d+)\s+(\d+)\s*:\s*(\d+)\s+0x([0-9A-Fa-f]+)/0x([0-9A-Fa-f]+)"
                   r"(?:\s+0x[0-9A-Fa-f]+/0x[0-9A-Fa-f]+)?\s*$")


class ClassBenchError(ValueError):
    """A filter file that cannot be used: names the file, the line and what is wrong."""


def _prefix_mask(length: int, bits: int) -> int:
    return ((1 << bits) - 1) ^ ((1 << (bits - length)) - 1) if length else 0


def parse(path: str | Path) -> list[tuple]:
    """ClassBench lines -> [(src, src_len, dst, dst_len, sp_lo, sp_hi, dp_lo, dp_hi, proto, proto_mask)]."""
    path = Path(path)
    out = []
    for no, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        m = _LINE.match(line)
        if not m:
            raise ClassBenchError(f"{path}:{no}: not a ClassBench filter line: {line[:80]!r}")
        g = [int(x) for x in m.groups()[:14]]
        src_o, sl, dst_o, dl = g[0:4], g[4], g[5:9], g[9]
        if any(o > 255 for o in src_o + dst_o) or sl > 32 or dl > 32:
            raise ClassBenchError(f"{path}:{no}: address octet > 255 or prefix length > 32")
        sp_lo, sp_hi, dp_lo, dp_hi = g[10:14]
        if not (sp_lo <= sp_hi <= 0xFFFF and dp_lo <= dp_hi <= 0xFFFF):
            raise ClassBenchError(f"{path}:{no}: bad port range {sp_lo}:{sp_hi} / {dp_lo}:{dp_hi}")
        proto, pmask = int(m.group(15), 16), int(m.group(16), 16)
        if proto > 0xFF or pmask > 0xFF:
            raise ClassBenchError(f"{path}:{no}: protocol 0x{proto:x}/0x{pmask:x} is not one byte")
        src = int.from_bytes(bytes(src_o), "big") & _prefix_mask(sl, 32)
        dst = int.from_bytes(bytes(dst_o), "big") & _prefix_mask(dl, 32)
        out.append((src, sl, dst, dl, sp_lo, sp_hi, dp_lo, dp_hi, proto & pmask, pmask))
    if not out:
        raise ClassBenchError(f"{path}: no filters")
    return out


def provenance(name: str) -> dict:
    p = DIR / f"{name}.provenance.yaml"
    try:
        return yaml.safe_load(p.read_text())
    except FileNotFoundError:
        raise ClassBenchError(f"{p}: missing (every public set keeps its provenance beside it)") from None


def path_of(name: str) -> Path:
    """The set's file, checked against its provenance (sha256, line count)."""
    if name not in SETS:
        raise ClassBenchError(f"unknown public ClassBench set {name!r}; use one of {SETS}")
    prov = provenance(name)
    p = DIR / f"{name}.txt"
    data = p.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != prov.get("sha256"):
        raise ClassBenchError(f"{p}: sha256 {digest} differs from its provenance's {prov.get('sha256')}")
    lines = data.count(b"\n")
    if lines != prov.get("lines"):
        raise ClassBenchError(f"{p}: {lines} lines, its provenance says {prov.get('lines')}")
    return p


def to_ruleset(filters: list[tuple], name: str) -> RuleSet:
    """Expand filters (see the module docstring) into a RuleSet over the 13-byte key."""
    vals, masks, prios, per_filter = [], [], [], []
    n = len(filters)
    for i, (src, sl, dst, dl, sp_lo, sp_hi, dp_lo, dp_hi, proto, pmask) in enumerate(filters):
        sm, dm = _prefix_mask(sl, 32), _prefix_mask(dl, 32)
        head_v = bytes([proto]) + src.to_bytes(4, "big") + dst.to_bytes(4, "big")
        head_m = bytes([pmask]) + sm.to_bytes(4, "big") + dm.to_bytes(4, "big")
        sps, dps = range_to_prefixes(sp_lo, sp_hi), range_to_prefixes(dp_lo, dp_hi)
        per_filter.append(len(sps) * len(dps))
        for sv, sln in sps:
            spm = _prefix_mask(sln, 16)
            for dv, dln in dps:
                dpm = _prefix_mask(dln, 16)
                vals.append(head_v + (sv & spm).to_bytes(2, "big") + (dv & dpm).to_bytes(2, "big"))
                masks.append(head_m + spm.to_bytes(2, "big") + dpm.to_bytes(2, "big"))
                prios.append(n - i)   # the first filter highest
    v = np.frombuffer(b"".join(vals), np.uint8).reshape(-1, CB_KEY_LEN)
    m = np.frombuffer(b"".join(masks), np.uint8).reshape(-1, CB_KEY_LEN)
    return RuleSet(f"classbench_{name}", 0, list(CB_FIELDS), np.asarray(prios, np.uint32), v & m, m.copy(),
                   {"filters": n, "rules": len(prios), "rules_per_filter": round(len(prios) / n, 3),
                    "max_rules_per_filter": max(per_filter), "source": "traces/classbench"})


def load(name: str) -> RuleSet:
    """The public set ``name`` (one of :data:`SETS`), checked and expanded."""
    p = path_of(name)
    return to_ruleset(parse(p), name)
