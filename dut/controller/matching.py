"""Payload search ("matchers") for the controller apps of source document 000.

Every matcher counts all occurrences of all patterns in a payload (overlapping occurrences
count; a pattern listed twice counts twice), so they are interchangeable and differentially
tested against each other (dut/controller/tests/test_matching.py).

  naive         the document's brute-force search in pure Python, O(n*m*len). Faithful
                baseline: it holds the GIL for the whole search, so threads only time-share.
  naive_c       the same brute force in C (libofbsearch.so via ctypes): no interpreter cost,
                and ctypes releases the GIL during the call.
  aho_corasick  Aho-Corasick DFA in C (libofbsearch.so via ctypes): O(n) whatever the pattern
                count, GIL released during the call. The "fast" matcher.

Why ctypes and not pyahocorasick: pyahocorasick 2.3.1 never releases the GIL (its .so has no
PyEval_SaveThread), so N threads around it would still run one at a time. ctypes.CDLL calls
drop the GIL for the duration of the foreign call.
"""
from __future__ import annotations

import ctypes
from pathlib import Path
from typing import Sequence

from paths import build_dir

MATCHERS = ("naive", "naive_c", "aho_corasick")
LIB_NAME = "libofbsearch.so"


class MatcherError(RuntimeError):
    pass


def naive_count(text: bytes, patterns: Sequence[bytes]) -> int:
    """Brute force as in the document: slide each pattern one byte at a time, compare bytes.

    Written the plain way on purpose (an index loop, byte by byte): this is the per-packet cost
    the document's Ryu controller paid, milliseconds per 1448-byte payload with 20 patterns.
    """
    count = 0
    n = len(text)
    for pat in patterns:
        m = len(pat)
        for i in range(n - m + 1):
            j = 0
            while j < m and text[i + j] == pat[j]:
                j += 1
            if j == m:
                count += 1
    return count


def library_path() -> Path:
    return build_dir() / "dut" / "controller" / LIB_NAME


_lib = None


def load_library() -> ctypes.CDLL:
    """libofbsearch.so from the shared meson build (OFBENCH_BUILD_DIR, default <repo>/build)."""
    global _lib
    if _lib is None:
        path = library_path()
        if not path.is_file():
            raise MatcherError(
                f"{path} not found: build it with `make setup` (meson subdir dut/controller), "
                "or point OFBENCH_BUILD_DIR at a build dir that has it")
        lib = ctypes.CDLL(str(path))  # CDLL (not PyDLL): the GIL is released in every call
        u8p, u32p = ctypes.c_char_p, ctypes.POINTER(ctypes.c_uint32)
        lib.ofb_naive_count.argtypes = [u8p, u32p, ctypes.c_uint32, u8p, ctypes.c_size_t]
        lib.ofb_naive_count.restype = ctypes.c_uint64
        lib.ofb_ac_build.argtypes = [u8p, u32p, ctypes.c_uint32]
        lib.ofb_ac_build.restype = ctypes.c_void_p
        lib.ofb_ac_count.argtypes = [ctypes.c_void_p, u8p, ctypes.c_size_t]
        lib.ofb_ac_count.restype = ctypes.c_uint64
        lib.ofb_ac_states.argtypes = [ctypes.c_void_p]
        lib.ofb_ac_states.restype = ctypes.c_uint32
        lib.ofb_ac_free.argtypes = [ctypes.c_void_p]
        lib.ofb_ac_free.restype = None
        _lib = lib
    return _lib


class NaiveMatcher:
    name = "naive"
    releases_gil = False

    def __init__(self, patterns: Sequence[bytes]):
        self.patterns = [bytes(p) for p in patterns]

    def count(self, payload: bytes) -> int:
        return naive_count(payload, self.patterns)

    def close(self) -> None:
        pass


class _PackedPatterns:
    def __init__(self, patterns: Sequence[bytes]):
        pats = [bytes(p) for p in patterns]
        self.blob = b"".join(pats)
        self.lens = (ctypes.c_uint32 * len(pats))(*[len(p) for p in pats])
        self.n = len(pats)


class NaiveCMatcher:
    name = "naive_c"
    releases_gil = True

    def __init__(self, patterns: Sequence[bytes]):
        self._lib = load_library()
        self._packed = _PackedPatterns(patterns)

    def count(self, payload: bytes) -> int:
        p = self._packed
        return self._lib.ofb_naive_count(p.blob, p.lens, p.n, bytes(payload), len(payload))

    def close(self) -> None:
        pass


class AhoCorasickMatcher:
    name = "aho_corasick"
    releases_gil = True
    _ac = None

    def __init__(self, patterns: Sequence[bytes]):
        self._lib = load_library()
        packed = _PackedPatterns(patterns)
        self._ac = self._lib.ofb_ac_build(packed.blob, packed.lens, packed.n)
        if not self._ac:
            raise MatcherError(f"ofb_ac_build failed for {packed.n} patterns "
                               "(lengths must be 1..256, count 1..4096)")

    @property
    def states(self) -> int:
        return self._lib.ofb_ac_states(self._ac)

    def count(self, payload: bytes) -> int:
        return self._lib.ofb_ac_count(self._ac, bytes(payload), len(payload))

    def close(self) -> None:
        if self._ac:
            self._lib.ofb_ac_free(self._ac)
            self._ac = None

    def __del__(self):
        self.close()


def make_matcher(kind: str, patterns: Sequence[bytes]):
    if not patterns:
        raise MatcherError("matcher needs at least one pattern")
    if any(len(p) == 0 for p in patterns):
        raise MatcherError("empty pattern")
    if kind == "naive":
        return NaiveMatcher(patterns)
    if kind == "naive_c":
        return NaiveCMatcher(patterns)
    if kind == "aho_corasick":
        return AhoCorasickMatcher(patterns)
    raise MatcherError(f"unknown matcher {kind!r} (known: {', '.join(MATCHERS)})")
