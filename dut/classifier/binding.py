"""Python binding of the classifier library (cffi, ABI mode) for tests and suites.

Loads ``<build>/dut/classifier/libofbcls.so`` where ``<build>`` is ``$OFBENCH_BUILD_DIR`` or
``<repo>/build``. Same semantics as classifier.h: highest priority wins, equal priorities go
to the lower rule id (earlier insert); ``lookup`` returns ``(handle, rule_id)`` with
``(0, 0)`` for no match. The object is single-writer: do not share one instance between
Python threads without your own lock.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from cffi import FFI

from paths import build_dir

ALGOS = {"ours": 0, "tss": 1, "linear": 2, "htrie": 3, "sptrie": 4, "hybrid": 5, "louds": 6, "dtree": 7, "dfa": 8,
         "auto": 9, "keymap": 10, "kscan": 11}
# "auto" is the library's default: resolved at creation by key length (classifier.h
# ofb_cls_algo_for_key) and at the first bulk build by the rules' mask shape;
# Classifier.runs names what it runs.
DEFAULT_ALGO = "auto"
SIMD_PATHS = ("scalar", "avx2", "avx512")


_ALGO_NAMES = {v: k for k, v in ALGOS.items()}


def algo_for_key(key_len: int) -> str:
    """What "auto" (the default) runs for keys of key_len bytes."""
    return _ALGO_NAMES[load().ofb_cls_algo_for_key(key_len)]


class ReadOnlyError(RuntimeError):
    """An update asked of a read-only classifier (LOUDS)."""

_CDEF = """
struct ofb_cls_tuning {
    const char *simd;
    uint8_t no_simd, no_hugepages, no_key32, no_gf, gf_k, gf_debug, dtree_sync, dfa_bulk_sync, keymap_sync,
            dtree_stats, dtree_no_mid, dtree_no_rid, dfa_stats, dfa_key_order, dfa_no_paths, dfa_narrow,
            dfa_no_flat, dfa_no_vbmi, dfa_no_auto, kmap_debug, dfa_auto_one;
    uint32_t bands, gf_maxg, gf_bpe, gf_slack, gf_min, dtree_delta, dtree_trees, dfa_states_per_rule;
    uint64_t dfa_max_states, dfa_group_mb, dfa_max_mb;
    uint32_t dfa_groups, dfa_full_min, kscan_bytes_per_rule;
};
struct ofb_cls_params { uint32_t key_len; uint32_t expected_rules; uint64_t mem_budget_bytes;
                        int algo; uint32_t prio_min, prio_max; uint32_t bands; struct ofb_cls_tuning tuning; };
struct ofb_cls_rule { uint32_t priority; const uint8_t *value; const uint8_t *mask; uint64_t handle; };
struct ofb_cls_stats { uint64_t rules, tables, bytes, version, pending_frees, pending_removals, bands; };
struct ofb_cls;
struct ofb_cls *ofb_cls_create(const struct ofb_cls_params *);
void ofb_cls_destroy(struct ofb_cls *);
uint32_t ofb_cls_insert(struct ofb_cls *, const struct ofb_cls_rule *);
int ofb_cls_delete_id(struct ofb_cls *, uint32_t);
uint32_t ofb_cls_delete(struct ofb_cls *, const struct ofb_cls_rule *);
int ofb_cls_build_bulk(struct ofb_cls *, const struct ofb_cls_rule *, size_t, uint32_t *);
void ofb_cls_batch_begin(struct ofb_cls *);
int ofb_cls_batch_commit(struct ofb_cls *);
void ofb_cls_synchronize(struct ofb_cls *);
uint64_t ofb_cls_lookup_id(const struct ofb_cls *, const uint8_t *, uint32_t *);
size_t ofb_cls_lookup_batch(const struct ofb_cls *, const uint8_t *const keys[], size_t,
                            uint64_t handles_out[], uint32_t rule_ids_out[]);
void ofb_cls_get_stats(const struct ofb_cls *, struct ofb_cls_stats *);
const char *ofb_cls_simd_name(const struct ofb_cls *);
int ofb_cls_simd_supported(const char *name);
const char *ofb_cls_last_error(const struct ofb_cls *);
uint64_t ofb_cls_trie_bytes(const struct ofb_cls *);
int ofb_cls_algo(const struct ofb_cls *);
int ofb_cls_algo_for_key(uint32_t key_len);
"""

_ffi = FFI()
_ffi.cdef(_CDEF)
_lib = None


def library_path() -> Path:
    return build_dir() / "dut" / "classifier" / "libofbcls.so"


def load():
    """The loaded library; FileNotFoundError naming the path when it is not built."""
    global _lib
    if _lib is None:
        p = library_path()
        if not p.exists():
            raise FileNotFoundError(f"{p} not found: build it (make setup, or ninja -C {build_dir()})")
        _lib = _ffi.dlopen(str(p))
    return _lib


def _env_num(env, name: str) -> int:
    """C's atoll of the variable: leading digits (with a sign), 0 when none or unset."""
    m = re.match(r"\s*([+-]?\d+)", env.get(name, ""))
    return int(m.group(1)) if m else 0


def tuning_from_env(env=None) -> dict:
    """struct ofb_cls_tuning (classifier.h) from the environment, field by field, read as
    cls-bench and cls-test read it (bench/tuning_env.h; keep the two in step): the library
    itself reads no environment. Only fields that differ from the default (0) are returned;
    "simd" is a str."""
    env = os.environ if env is None else env

    def is_(name, val):
        return env.get(name) == val

    def rng(name, lo, hi, plus=0):
        v = _env_num(env, name)
        return v + plus if lo <= v <= hi else 0

    no_simd = env.get("OFB_CLS_NO_SIMD", "")
    t = {
        "simd": env.get("OFB_CLS_SIMD") or None,
        "no_simd": int(bool(no_simd) and no_simd[0] != "0"),
        "no_hugepages": int(is_("OFB_CLS_HUGEPAGES", "0")),
        "no_key32": int(is_("OFB_CLS_KEY32", "0")),
        "no_gf": int(is_("OFB_CLS_GF", "0")),
        "gf_k": 4 if _env_num(env, "OFB_CLS_GF_K") == 4 else 0,
        "gf_debug": int("OFB_CLS_GF_DEBUG" in env),
        "dtree_sync": int(is_("OFB_CLS_DTREE_SYNC", "1")),
        "dfa_bulk_sync": int(is_("OFB_CLS_DFA_BULK_SYNC", "1")),
        "keymap_sync": int(is_("OFB_CLS_KEYMAP_SYNC", "1")),
        "dtree_stats": int("OFB_DTREE_STATS" in env),
        "dtree_no_mid": int(is_("OFB_DTREE_MID", "0")),
        "dtree_no_rid": int(is_("OFB_DTREE_RID", "0")),
        "dfa_stats": int("OFB_DFA_STATS" in env),
        "dfa_key_order": int(is_("OFB_DFA_ORDER", "key")),
        "dfa_no_paths": int(is_("OFB_DFA_PATHS", "0")),
        "dfa_narrow": int(is_("OFB_DFA_NARROW", "1")),
        "dfa_no_flat": int(is_("OFB_DFA_FLAT", "0")),
        "dfa_no_vbmi": int(is_("OFB_DFA_VBMI", "0")),
        "dfa_no_auto": int(is_("OFB_CLS_AUTO_DFA", "0")),
        "kmap_debug": int("OFB_KMAP_DEBUG" in env),
        "dfa_auto_one": int(is_("OFB_CLS_AUTO_DFA", "one")),
        "gf_maxg": rng("OFB_CLS_GF_MAXG", 1, 8),
        "gf_bpe": rng("OFB_CLS_GF_BPE", 1, 256),
        "gf_slack": rng("OFB_CLS_GF_SLACK", 0, 16, plus=1) if "OFB_CLS_GF_SLACK" in env else 0,
        "gf_min": rng("OFB_CLS_GF_MIN", 1, 2**32 - 1),
        "dtree_delta": rng("OFB_CLS_DTREE_DELTA", 1, 2**32 - 1),
        "dtree_trees": rng("OFB_DTREE_TREES", 1, 8),
        "dfa_states_per_rule": rng("OFB_DFA_STATES_PER_RULE", 1, 2**32 - 1),
        "dfa_max_states": max(_env_num(env, "OFB_DFA_MAX_STATES"), 0),
        "dfa_group_mb": max(_env_num(env, "OFB_DFA_GROUP_MB"), 0),
        "dfa_max_mb": max(_env_num(env, "OFB_DFA_MAX_MB"), 0),
        "dfa_groups": rng("OFB_DFA_GROUPS", 1, 4),
        "dfa_full_min": rng("OFB_DFA_FULL_MIN", 4, 256),
        "kscan_bytes_per_rule": rng("OFB_KSCAN_BYTES_PER_RULE", 1, 2**32 - 1),
    }
    if env.get("OFB_CLS_BANDS"):  # set: a fixed count (0 = 1 band, negative = the most, as before)
        b = _env_num(env, "OFB_CLS_BANDS")
        t["bands"] = min(b, 32) if b >= 1 else (32 if b < 0 else 1)
    return {k: v for k, v in t.items() if v}


def simd_supported(path: str) -> bool:
    """True if this CPU can run the named SIMD path ("scalar", "avx2", "avx512")."""
    return bool(load().ofb_cls_simd_supported(path.encode()))


class Classifier:
    def __init__(self, key_len: int, algo: str = DEFAULT_ALGO, expected_rules: int = 0,
                 prio_min: int = 0, prio_max: int = 0, bands: int = 0, simd: str | None = None,
                 mem_budget_bytes: int = 0):
        """simd: force OURS' phase-1 path ("scalar", "avx2", "avx512"; None = what
        OFB_CLS_SIMD says, by default the best the CPU has); ValueError if the CPU lacks it.
        The other knobs come from the environment (tuning_from_env), read at creation."""
        if algo not in ALGOS:
            raise ValueError(f"unknown algorithm {algo!r}; use one of {sorted(ALGOS)}")
        self.lib = load()
        self._c = None
        self.key_len = key_len
        self.algo = algo
        if simd is not None:
            if simd not in SIMD_PATHS:
                raise ValueError(f"unknown SIMD path {simd!r}; use one of {SIMD_PATHS}")
            if not simd_supported(simd):
                raise ValueError(f"SIMD path {simd!r}: this CPU does not have it")
        tuning = tuning_from_env()
        if simd is not None:
            tuning["simd"] = simd
        simd_name = tuning.pop("simd", None)
        simd_c = _ffi.new("char[]", simd_name.encode()) if simd_name else _ffi.NULL
        p = _ffi.new("struct ofb_cls_params *", {"key_len": key_len, "expected_rules": expected_rules,
                                                  "algo": ALGOS[algo], "prio_min": prio_min,
                                                  "prio_max": prio_max, "bands": bands,
                                                  "mem_budget_bytes": mem_budget_bytes, "tuning": tuning})
        p.tuning.simd = simd_c  # simd_c lives until create has returned
        self._c = self.lib.ofb_cls_create(p)
        if self._c == _ffi.NULL:
            errno = _ffi.errno
            self._c = None
            raise ValueError(f"ofb_cls_create refused key_len={key_len} algo={algo} "
                             f"mem_budget_bytes={mem_budget_bytes}: {os.strerror(errno)}")

    @property
    def runs(self) -> str:
        """The algorithm this classifier runs ("auto" resolved: by key length at creation,
        and at the first bulk build by the rules' mask shape; classifier.h)."""
        return _ALGO_NAMES[self.lib.ofb_cls_algo(self._c)]

    def last_error(self) -> str | None:
        """The library's message for the last failed insert/build (None if none)."""
        e = self.lib.ofb_cls_last_error(self._c)
        return None if e == _ffi.NULL else _ffi.string(e).decode()

    @property
    def simd(self) -> str:
        """The phase-1 SIMD path this classifier runs."""
        return _ffi.string(self.lib.ofb_cls_simd_name(self._c)).decode()

    def _check(self, b: bytes, what: str) -> bytes:
        if len(b) != self.key_len:
            raise ValueError(f"{what} is {len(b)} bytes, key_len is {self.key_len}")
        return bytes(b)

    def _rule(self, priority: int, value: bytes, mask: bytes, handle: int = 0):
        v = _ffi.new("uint8_t[]", self._check(value, "value"))
        m = _ffi.new("uint8_t[]", self._check(mask, "mask"))
        r = _ffi.new("struct ofb_cls_rule *", {"priority": priority, "value": v, "mask": m, "handle": handle})
        return r, (v, m)

    def insert(self, priority: int, value: bytes, mask: bytes, handle: int) -> int:
        r, _keep = self._rule(priority, value, mask, handle)
        rid = self.lib.ofb_cls_insert(self._c, r)
        if rid == 0:
            self._fail("ofb_cls_insert")
        return rid

    def _fail(self, what: str):
        """A refused update: ReadOnlyError for LOUDS, MemoryError otherwise (no memory, a
        trie over its limit), with the library's message."""
        e = self.last_error()
        if e and "read-only" in e:
            raise ReadOnlyError(f"{what} refused: {e}")
        raise MemoryError(f"{what} failed: {e or 'out of memory'}")

    def delete_id(self, rule_id: int) -> bool:
        if self.lib.ofb_cls_delete_id(self._c, rule_id) == 0:
            return True
        if self.algo == "louds":
            self._fail("ofb_cls_delete_id")
        return False

    def delete(self, priority: int, value: bytes, mask: bytes) -> int:
        r, _keep = self._rule(priority, value, mask)
        rid = self.lib.ofb_cls_delete(self._c, r)
        if not rid and self.algo == "louds":
            self._fail("ofb_cls_delete")
        return rid

    def build_bulk(self, rules: Sequence[tuple[int, bytes, bytes, int]]) -> list[int]:
        n = len(rules)
        arr = _ffi.new("struct ofb_cls_rule[]", n)
        keep = []
        for i, (prio, value, mask, handle) in enumerate(rules):
            v = _ffi.new("uint8_t[]", self._check(value, "value"))
            m = _ffi.new("uint8_t[]", self._check(mask, "mask"))
            keep.append((v, m))
            arr[i].priority, arr[i].value, arr[i].mask, arr[i].handle = prio, v, m, handle
        ids = _ffi.new("uint32_t[]", max(n, 1))
        if self.lib.ofb_cls_build_bulk(self._c, arr, n, ids) != 0:
            self._fail("ofb_cls_build_bulk")
        return list(ids[0:n])

    def batch(self):
        """Context manager: the updates inside become visible to readers at once."""
        cls = self

        class _B:
            def __enter__(self):
                cls.lib.ofb_cls_batch_begin(cls._c)

            def __exit__(self, *exc):
                if cls.lib.ofb_cls_batch_commit(cls._c) and exc[0] is None:
                    raise MemoryError(f"ofb_cls_batch_commit failed (the previous trie stays): "
                                      f"{cls.last_error() or 'out of memory'}")

        return _B()

    def lookup(self, key: bytes) -> tuple[int, int]:
        rid = _ffi.new("uint32_t *")
        h = self.lib.ofb_cls_lookup_id(self._c, self._check(key, "key"), rid)
        return int(h), int(rid[0])

    def lookup_batch(self, keys: Iterable[bytes]) -> list[tuple[int, int]]:
        keys = [self._check(k, "key") for k in keys]
        n = len(keys)
        bufs = [_ffi.new("uint8_t[]", k) for k in keys]
        kp = _ffi.new("const uint8_t *[]", bufs)
        ho = _ffi.new("uint64_t[]", max(n, 1))
        io = _ffi.new("uint32_t[]", max(n, 1))
        self.lib.ofb_cls_lookup_batch(self._c, kp, n, ho, io)
        return [(int(ho[i]), int(io[i])) for i in range(n)]

    def stats(self) -> dict:
        st = _ffi.new("struct ofb_cls_stats *")
        self.lib.ofb_cls_synchronize(self._c)
        self.lib.ofb_cls_get_stats(self._c, st)
        return {k: int(getattr(st, k)) for k in
                ("rules", "tables", "bytes", "version", "pending_frees", "pending_removals", "bands")}

    def close(self) -> None:
        if self._c is not None and self._c != _ffi.NULL:
            self.lib.ofb_cls_destroy(self._c)
        self._c = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass
