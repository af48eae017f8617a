"""Rule-set and key-trace generators for the classifier benchmark, reproducible from a seed.

Kinds (``make(kind, n, seed)``):

* ``ntt``      document 003's measurement condition exactly as its slide 19 prints it:
               32-bit key, ``n_masks`` masks (100), ``Mask: rand()|rand()``, ``key: rand()``,
               with glibc's ``rand()`` (31-bit, ``srand(seed)``; reproduced bit for bit by
               :func:`glibc_rand`).  Each of the low 31 mask bits is set with p = 3/4 (a mask
               cares about ~23 bits), bit 31 never.  The slide does not say how values and
               priorities were drawn; here, continuing the same ``rand()`` stream: masks
               first (a repeated mask is drawn again), then per rule ``mask =
               masks[rand() % n_masks]``, ``value = rand() & mask``, ``priority = rand() &
               0xffff`` (random, OpenFlow's 16-bit range).  A rule whose (mask, value) was
               already drawn is skipped (the stream goes on), so the n rules are distinct;
               rules with equal priorities are kept and resolved as the classifier does
               (lower rule index = earlier insert wins).  Keys: ``key = rand()`` after
               ``srand(key_seed)`` (uniform 31-bit, the
               document's trace; a key matches n x E[2^-popcount(mask)] = n x 0.625^31 ~
               n / 2.1M rules on average, so ~4 % of keys hit at 100k rules and ~37 % at 1M),
               or the hit-heavy trace (``hit_fraction`` of the keys are
               a random rule's value with rand() bits in its wildcards).
* ``ntt_half`` the earlier variant: masks with each of the 32 bits set with p = 1/2 (masks
               with fewer than 8 bits redrawn), values uniform under the mask, numpy's
               generator, priorities uniform in 0..65535, uniform 32-bit keys.
* ``of``       OpenFlow-style multi-field rules over a 29-byte key (eth_dst, eth_src, vlan,
               eth_type, ip_proto, ipv4_src, ipv4_dst, tp_src, tp_dst): L2 MAC rules (exact,
               OUI-masked, the document's XX:XX:XX:11:11:XX style), VLAN, IPv4 prefix
               routes, 5-tuple ACL entries with ports exact or wildcard.
* ``cb_acl``, ``cb_fw``, ``cb_ipc``  ClassBench-like 5-tuple sets (13-byte key: proto, src,
               dst, sport, dport) shaped like ClassBench's acl/fw/ipc seeds: prefix pairs
               drawn from a nested address pool, port ranges expanded to prefixes (as a
               trie/hash classifier needs), protocol exact or wildcard; priority by
               specificity (more care bits = higher priority), so no rule is shadowed
               whole by a higher one. Not the ClassBench seed files themselves:
               distributions are approximations written here.

All key fields are in network byte order (most significant byte first). Keys for the
structured kinds hit rules (a random rule, random bits where it wildcards) with
probability ``hit_fraction`` and are uniform random otherwise.

Binary files for ``cls-bench``: rules ``b"OFBR" u32 key_len u32 n`` + n x (u32 priority LE,
value, mask); keys ``b"OFBK" u32 key_len u32 n`` + n keys.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

KINDS = ("ntt", "ntt_half", "of", "cb_acl", "cb_fw", "cb_ipc")
#: mask counts of the document-condition sweep (slide 19 uses 100)
NTT_MASK_COUNTS = (10, 100, 1000)


@dataclass(frozen=True)
class Field:
    name: str
    offset: int  # bytes into the key
    width: int  # bytes


@dataclass
class RuleSet:
    kind: str
    seed: int
    fields: list[Field]
    priorities: np.ndarray  # (n,) uint32
    values: np.ndarray  # (n, key_len) uint8, already masked
    masks: np.ndarray  # (n, key_len) uint8
    params: dict = field(default_factory=dict)

    @property
    def key_len(self) -> int:
        return int(self.values.shape[1])

    def __len__(self) -> int:
        return int(self.values.shape[0])

    def distinct_masks(self) -> int:
        return len(np.unique(self.masks, axis=0))

    def keys(self, n: int, seed: int, hit_fraction: float | None = None) -> np.ndarray:
        """n keys (n, key_len) uint8; hit_fraction None = the kind's default (0 for the
        NTT kinds: the document's uniform keys; 0.9 for the structured kinds).

        ``ntt``: the non-hit keys are glibc ``rand()`` after ``srand(seed)`` (31-bit, as
        slide 19); hit keys take a random rule's value and rand() bits where it wildcards."""
        if hit_fraction is None:
            hit_fraction = 0.0 if self.kind.startswith("ntt") else 0.9
        if not 0.0 <= hit_fraction <= 1.0:
            raise ValueError(f"hit_fraction {hit_fraction} is not in [0, 1]")
        rng = np.random.default_rng([seed, 0x6B657973])
        if self.kind == "ntt":
            keys = _u_to_bytes(np.asarray(glibc_rand(seed, n), dtype=np.uint64), 4)
        else:
            keys = rng.integers(0, 256, size=(n, self.key_len), dtype=np.uint8)
        hit = rng.random(n) < hit_fraction
        if hit.any() and len(self):
            idx = rng.integers(0, len(self), size=int(hit.sum()))
            m, v = self.masks[idx], self.values[idx]
            keys[hit] = (keys[hit] & ~m) | (v & m)
        return keys

    def write_rules(self, path: str | Path) -> Path:
        path = Path(path)
        n, kl = self.values.shape
        rec = np.zeros((n, 4 + 2 * kl), dtype=np.uint8)
        rec[:, :4] = self.priorities.astype("<u4").view(np.uint8).reshape(n, 4)
        rec[:, 4 : 4 + kl] = self.values
        rec[:, 4 + kl :] = self.masks
        with open(path, "wb") as f:
            f.write(b"OFBR" + struct.pack("<II", kl, n))
            f.write(rec.tobytes())
        return path


def write_keys(path: str | Path, keys: np.ndarray) -> Path:
    path = Path(path)
    n, kl = keys.shape
    with open(path, "wb") as f:
        f.write(b"OFBK" + struct.pack("<II", kl, n))
        f.write(np.ascontiguousarray(keys, dtype=np.uint8).tobytes())
    return path


def matches(rs: RuleSet, key: np.ndarray) -> np.ndarray:
    """Boolean (n,) of the rules the key matches (for tests and checks)."""
    return np.all((key[None, :] & rs.masks) == rs.values, axis=1)


def best_rule(rs: RuleSet, key: np.ndarray) -> int:
    """Index of the highest-priority matching rule (lower index wins ties), -1 if none."""
    m = np.nonzero(matches(rs, key))[0]
    if len(m) == 0:
        return -1
    p = rs.priorities[m]
    return int(m[np.flatnonzero(p == p.max())[0]])


# ---------------------------------------------------------------- helpers

def _u_to_bytes(x: np.ndarray, width: int) -> np.ndarray:
    """(n,) unsigned ints -> (n, width) big-endian bytes."""
    x = x.astype(np.uint64)
    out = np.empty((len(x), width), dtype=np.uint8)
    for i in range(width):
        out[:, i] = (x >> np.uint64(8 * (width - 1 - i))) & np.uint64(0xFF)
    return out


def _prefix_masks(lengths: np.ndarray, bits: int) -> np.ndarray:
    lengths = lengths.astype(np.uint64)
    full = np.uint64((1 << bits) - 1)
    shift = np.uint64(bits) - lengths
    m = np.where(lengths == 0, np.uint64(0), (full >> shift) << shift)
    return m & full


def _dedupe(values: np.ndarray, masks: np.ndarray, prios: np.ndarray, n: int):
    """Drop rules with an identical (mask, value); keep the first n in order."""
    both = np.ascontiguousarray(np.concatenate([masks, values], axis=1))
    _, first = np.unique(both.view(np.dtype((np.void, both.shape[1]))).ravel(), return_index=True)
    keep = np.sort(first)[:n]
    return values[keep], masks[keep], prios[keep]


def range_to_prefixes(lo: int, hi: int, bits: int = 16) -> list[tuple[int, int]]:
    """Split [lo, hi] into (value, prefix_len) prefixes, the classic expansion."""
    if not 0 <= lo <= hi < (1 << bits):
        raise ValueError(f"bad range {lo}-{hi} for {bits} bits")
    out = []
    while lo <= hi:
        size = lo & -lo if lo else 1 << bits
        while size > hi - lo + 1:
            size >>= 1
        out.append((lo, bits - size.bit_length() + 1))
        lo += size
    return out


# ---------------------------------------------------------------- ntt

def glibc_rand(seed: int, n: int) -> list[int]:
    """The first n values of glibc's ``rand()`` after ``srand(seed)`` (TYPE_3 additive
    feedback generator, r[i] = r[i-3] + r[i-31] mod 2^32, output r >> 1: 31 bits).
    Checked against the C library's own rand() in traces/tests/test_rulesets.py."""
    seed &= 0xFFFFFFFF
    if seed == 0:
        seed = 1
    r = [seed - (1 << 32) if seed >= 1 << 31 else seed]
    for i in range(1, 31):  # Park-Miller minimal standard, Schrage's method, as glibc
        x = r[i - 1]
        hi = abs(x) // 127773 * (1 if x >= 0 else -1)  # C division truncates toward zero
        lo = x - hi * 127773
        w = 16807 * lo - 2836 * hi
        r.append(w + 2147483647 if w < 0 else w)
    r = [x & 0xFFFFFFFF for x in r] + [0] * 3
    for i in range(31, 34):
        r[i] = r[i - 31]
    for i in range(34, 344):  # discarded warm-up
        r.append((r[i - 31] + r[i - 3]) & 0xFFFFFFFF)
    out = [0] * n
    r = r[-31:]  # r[k] = r[i-31], r[k+28] = r[i-3] for output k
    append = r.append
    for k in range(n):
        v = (r[k] + r[k + 28]) & 0xFFFFFFFF
        append(v)
        out[k] = v >> 1
    return out


def ntt(n: int, seed: int, n_masks: int = 100) -> RuleSet:
    """Document 003's slide-19 condition (see the module docstring)."""
    if n < 0 or n_masks < 1:
        raise ValueError(f"ntt: n={n}, n_masks={n_masks}: need n >= 0 and n_masks >= 1")
    if n_masks > 100_000:
        raise ValueError(f"ntt: n_masks={n_masks} is more than this generator supports (100000)")
    state = {"pos": 0, "buf": np.asarray(glibc_rand(seed, 2 * n_masks + 3 * n + 64), dtype=np.uint64)}

    def draw(k: int) -> np.ndarray:
        """the next k rand() values (the stream is extended when it runs short)"""
        need = state["pos"] + k
        if need > len(state["buf"]):
            state["buf"] = np.asarray(glibc_rand(seed, max(need, 2 * len(state["buf"]))), dtype=np.uint64)
        out = state["buf"][state["pos"]:need]
        state["pos"] = need
        return out

    masks: list[int] = []
    seen: set[int] = set()
    while len(masks) < n_masks:
        a, b = draw(2)
        m = int(a | b)
        if m not in seen:
            seen.add(m)
            masks.append(m)
    masks_a = np.array(masks, dtype=np.uint64)
    vals = np.zeros(0, np.uint64)
    msk = np.zeros(0, np.uint64)
    pri = np.zeros(0, np.uint32)
    want = n
    while len(vals) < n:
        # candidates j use stream values 3j..3j+2: (mask index, value, priority)
        k = int(want * 1.02) + 16
        x = draw(3 * k).reshape(k, 3)
        m = masks_a[(x[:, 0] % np.uint64(n_masks)).astype(np.int64)]
        v = x[:, 1] & m
        p = (x[:, 2] & np.uint64(0xFFFF)).astype(np.uint32)
        vals, msk, pri = np.concatenate([vals, v]), np.concatenate([msk, m]), np.concatenate([pri, p])
        # keep the first draw of each (mask, value), in stream order
        _, first = np.unique((msk << np.uint64(32)) | vals, return_index=True)
        keep = np.sort(first)[:n]
        vals, msk, pri = vals[keep], msk[keep], pri[keep]
        want = n - len(vals)
    return RuleSet("ntt", seed, [Field("key", 0, 4)], pri, _u_to_bytes(vals, 4), _u_to_bytes(msk, 4),
                   {"n_masks": n_masks, "masks": "rand()|rand()", "keys": "rand()"})


def ntt_half(n: int, seed: int, n_masks: int = 100) -> RuleSet:
    """The p = 1/2 variant (each mask bit set with probability 1/2), numpy's generator."""
    rng = np.random.default_rng([seed, 3])
    masks = []
    while len(masks) < n_masks:
        m = int(rng.integers(0, 1 << 32))
        if bin(m).count("1") >= 8 and m not in masks:
            masks.append(m)
    masks_a = np.array(masks, dtype=np.uint64)
    vals, msk, pri = np.zeros((0, 4), np.uint8), np.zeros((0, 4), np.uint8), np.zeros(0, np.uint32)
    want = n
    while len(vals) < n:
        k = int(want * 1.1) + 16
        mi = rng.integers(0, n_masks, size=k)
        m = masks_a[mi]
        v = rng.integers(0, 1 << 32, size=k, dtype=np.uint64) & m
        p = rng.integers(0, 65536, size=k, dtype=np.uint32)
        vals = np.concatenate([vals, _u_to_bytes(v, 4)])
        msk = np.concatenate([msk, _u_to_bytes(m, 4)])
        pri = np.concatenate([pri, p])
        vals, msk, pri = _dedupe(vals, msk, pri, n)
        want = n - len(vals)
    return RuleSet("ntt_half", seed, [Field("key", 0, 4)], pri, vals, msk, {"n_masks": n_masks})


# ---------------------------------------------------------------- openflow

OF_FIELDS = [
    Field("eth_dst", 0, 6), Field("eth_src", 6, 6), Field("vlan_vid", 12, 2), Field("eth_type", 14, 2),
    Field("ip_proto", 16, 1), Field("ipv4_src", 17, 4), Field("ipv4_dst", 21, 4),
    Field("tp_src", 25, 2), Field("tp_dst", 29 - 2, 2),
]
OF_KEY_LEN = 29


def openflow(n: int, seed: int) -> RuleSet:
    rng = np.random.default_rng([seed, 5])
    ouis = rng.integers(0, 1 << 24, size=64, dtype=np.uint64) << np.uint64(24)
    v, m, p = _of_batch(rng, int(n * 1.05) + 16, ouis)
    v, m, p = _dedupe(v, m, p, n)
    while len(v) < n:  # duplicates removed: top up
        v2, m2, p2 = _of_batch(rng, 2 * (n - len(v)) + 16, ouis)
        v, m, p = _dedupe(np.concatenate([v, v2]), np.concatenate([m, m2]), np.concatenate([p, p2]), n)
    return RuleSet("of", seed, list(OF_FIELDS), p, v, m)


def _of_batch(rng, k: int, ouis: np.ndarray):
    kl = OF_KEY_LEN
    v = np.zeros((k, kl), np.uint8)
    m = np.zeros((k, kl), np.uint8)
    p = np.zeros(k, np.uint32)
    kind = rng.choice(4, size=k, p=[0.3, 0.1, 0.3, 0.3])
    f = {x.name: x for x in OF_FIELDS}

    def put(sel, name, val, mask):
        fl = f[name]
        v[sel, fl.offset : fl.offset + fl.width] = _u_to_bytes(val, fl.width) & _u_to_bytes(mask, fl.width)
        m[sel, fl.offset : fl.offset + fl.width] = _u_to_bytes(mask, fl.width)

    full48 = np.uint64((1 << 48) - 1)
    # 0: L2 forwarding: eth_dst exact (a few OUIs), vlan exact
    s = kind == 0
    c = int(s.sum())
    mac = ouis[rng.integers(0, 64, c)] | rng.integers(0, 1 << 24, c, dtype=np.uint64)
    put(s, "eth_dst", mac, np.full(c, full48))
    put(s, "vlan_vid", rng.integers(1, 64, c, dtype=np.uint64) | np.uint64(0x1000), np.full(c, np.uint64(0x1FFF)))
    p[s] = rng.integers(100, 200, c)
    # 1: MAC with masks: OUI-masked or XX:XX:XX:11:11:XX (document 003's example)
    s = kind == 1
    c = int(s.sum())
    masks = np.array([0xFFFFFF000000, 0xFFFFFFFFFF00, 0x000000FFFF00, 0xFFFFFF00FFFF], dtype=np.uint64)
    mm = masks[rng.integers(0, 4, c)]
    put(s, "eth_src", ouis[rng.integers(0, 64, c)] | rng.integers(0, 1 << 24, c, dtype=np.uint64), mm)
    p[s] = rng.integers(200, 300, c)
    # 2: IPv4 routes: eth_type 0x0800, ipv4_dst prefix /8../32, priority = prefix length
    s = kind == 2
    c = int(s.sum())
    ln = rng.choice([8, 16, 20, 24, 24, 24, 28, 32], c)
    put(s, "eth_type", np.full(c, np.uint64(0x0800)), np.full(c, np.uint64(0xFFFF)))
    put(s, "ipv4_dst", (np.uint64(10) << np.uint64(24)) | rng.integers(0, 1 << 24, c, dtype=np.uint64),
        _prefix_masks(ln, 32) | np.uint64(0xFF000000))
    p[s] = 1000 + ln
    # 3: ACL: ipv4 src/dst prefixes, proto exact, ports exact or wildcard
    s = kind == 3
    c = int(s.sum())
    put(s, "eth_type", np.full(c, np.uint64(0x0800)), np.full(c, np.uint64(0xFFFF)))
    put(s, "ip_proto", rng.choice(np.array([6, 17], np.uint64), c), np.full(c, np.uint64(0xFF)))
    put(s, "ipv4_src", rng.integers(0, 1 << 32, c, dtype=np.uint64), _prefix_masks(rng.choice([16, 24, 32], c), 32))
    put(s, "ipv4_dst", (np.uint64(10) << np.uint64(24)) | rng.integers(0, 1 << 24, c, dtype=np.uint64),
        _prefix_masks(rng.choice([24, 32], c), 32))
    wild = rng.random(c) < 0.3
    put(s, "tp_dst", rng.choice(np.array([22, 53, 80, 443, 8080], np.uint64), c),
        np.where(wild, np.uint64(0), np.uint64(0xFFFF)))
    wild = rng.random(c) < 0.8
    put(s, "tp_src", rng.integers(1024, 65536, c, dtype=np.uint64), np.where(wild, np.uint64(0), np.uint64(0xFFFF)))
    p[s] = rng.integers(2000, 3000, c)
    return v, m, p


# ---------------------------------------------------------------- classbench-like

CB_FIELDS = [Field("ip_proto", 0, 1), Field("ipv4_src", 1, 4), Field("ipv4_dst", 5, 4),
             Field("tp_src", 9, 2), Field("tp_dst", 11, 2)]
CB_KEY_LEN = 13

# per shape: prefix-length choices and weights for src and dst, chance of a port
# range (else exact or wildcard), chance of a wildcard protocol
_CB_SHAPES = {
    "acl": dict(src=([0, 8, 16, 24, 28, 32], [0.05, 0.02, 0.08, 0.25, 0.1, 0.5]),
                dst=([0, 16, 24, 28, 32], [0.1, 0.05, 0.25, 0.1, 0.5]),
                sport_wild=0.95, dport_range=0.15, dport_wild=0.25, proto_wild=0.05),
    "fw": dict(src=([0, 8, 16, 24, 32], [0.4, 0.05, 0.15, 0.2, 0.2]),
               dst=([0, 8, 16, 24, 32], [0.3, 0.05, 0.15, 0.2, 0.3]),
               sport_wild=0.6, dport_range=0.35, dport_wild=0.3, proto_wild=0.3),
    "ipc": dict(src=([0, 16, 24, 32], [0.2, 0.1, 0.3, 0.4]),
                dst=([0, 16, 24, 32], [0.2, 0.1, 0.3, 0.4]),
                sport_wild=0.8, dport_range=0.1, dport_wild=0.4, proto_wild=0.15),
}
_PORT_RANGES = [(1024, 65535), (0, 1023), (6000, 6063), (32768, 60999), (49152, 65535), (20, 21), (135, 139)]
_PORTS = [20, 21, 22, 23, 25, 53, 80, 110, 123, 143, 161, 443, 993, 995, 1433, 3306, 3389, 5060, 8080]


def classbench(n: int, seed: int, shape: str = "acl") -> RuleSet:
    if shape not in _CB_SHAPES:
        raise ValueError(f"unknown ClassBench-like shape {shape!r}; use one of {sorted(_CB_SHAPES)}")
    sh = _CB_SHAPES[shape]
    rng = np.random.default_rng([seed, 7, len(shape)])
    # nested address pool: /16 blocks, /24s inside them, hosts inside those
    blocks = rng.integers(0, 1 << 16, 256, dtype=np.uint64) << np.uint64(16)
    rows_v, rows_m, count, target = [], [], 0, n + 64
    while True:
        if count >= target:
            v = np.array(rows_v, np.uint8)
            m = np.array(rows_m, np.uint8)
            p = np.arange(len(v), 0, -1, dtype=np.uint32)
            v, m, p = _dedupe(v, m, p, n)
            if len(v) >= n:
                # priority by specificity (more care bits first, generation order among
                # equals), as an ACL is written and as ClassBench's generator leaves its sets
                # after removing redundant filters: no rule is shadowed whole by one above it
                # (one that covers it has no more care bits, so with as many it is the same
                # rule, which _dedupe dropped). In generation order the first full wildcard
                # (cb_fw: ~0.7 % of draws) shadowed every rule after it.
                care = np.unpackbits(m, axis=1).sum(axis=1).astype(np.int64)
                order = np.argsort(-care, kind="stable")
                v, m = v[order], m[order]
                p = np.arange(len(v), 0, -1, dtype=np.uint32)
                break
            target = count + 2 * (n - len(v)) + 64
        c = max(64, target - count)
        src_len = rng.choice(sh["src"][0], c, p=sh["src"][1])
        dst_len = rng.choice(sh["dst"][0], c, p=sh["dst"][1])
        src = blocks[rng.integers(0, 256, c)] | rng.integers(0, 1 << 16, c, dtype=np.uint64)
        dst = blocks[rng.integers(0, 256, c)] | rng.integers(0, 1 << 16, c, dtype=np.uint64)
        proto = rng.choice(np.array([6, 6, 6, 17, 17, 1], np.uint64), c)
        pw = rng.random(c) < sh["proto_wild"]
        sw = rng.random(c) < sh["sport_wild"]
        dr = rng.random(c) < sh["dport_range"]
        dw = rng.random(c) < sh["dport_wild"]
        sport = rng.integers(1024, 65536, c)
        dport = rng.choice(_PORTS, c)
        rng_i = rng.integers(0, len(_PORT_RANGES), c)
        base = np.zeros((c, CB_KEY_LEN), np.uint8)
        bmask = np.zeros((c, CB_KEY_LEN), np.uint8)
        base[:, 0] = np.where(pw, 0, proto)
        bmask[:, 0] = np.where(pw, 0, 0xFF)
        sm, dm = _prefix_masks(src_len, 32), _prefix_masks(dst_len, 32)
        base[:, 1:5], bmask[:, 1:5] = _u_to_bytes(src & sm, 4), _u_to_bytes(sm, 4)
        base[:, 5:9], bmask[:, 5:9] = _u_to_bytes(dst & dm, 4), _u_to_bytes(dm, 4)
        spm = np.where(sw, 0, 0xFFFF).astype(np.uint64)
        base[:, 9:11], bmask[:, 9:11] = _u_to_bytes(sport.astype(np.uint64) & spm, 2), _u_to_bytes(spm, 2)
        for i in range(c):
            if dr[i]:
                lo, hi = _PORT_RANGES[rng_i[i]]
                pref = range_to_prefixes(lo, hi)
            elif dw[i]:
                pref = [(0, 0)]
            else:
                pref = [(int(dport[i]), 16)]
            for val, ln in pref:
                pm = ((0xFFFF << (16 - ln)) & 0xFFFF) if ln else 0
                bv, bm = base[i].copy(), bmask[i].copy()
                bv[11], bv[12] = (val & pm) >> 8, (val & pm) & 0xFF
                bm[11], bm[12] = pm >> 8, pm & 0xFF
                rows_v.append(bv)
                rows_m.append(bm)
            count += len(pref)
            if count >= target:
                break
    return RuleSet(f"cb_{shape}", seed, list(CB_FIELDS), p, v, m, {"shape": shape})


def make(kind: str, n: int, seed: int = 1, n_masks: int = 100) -> RuleSet:
    """n_masks applies to the NTT kinds only."""
    if kind == "ntt":
        return ntt(n, seed, n_masks)
    if kind == "ntt_half":
        return ntt_half(n, seed, n_masks)
    if kind == "of":
        return openflow(n, seed)
    if kind.startswith("cb_"):
        return classbench(n, seed, kind[3:])
    raise ValueError(f"unknown rule-set kind {kind!r}; use one of {KINDS}")
