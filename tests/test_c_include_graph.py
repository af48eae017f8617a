"""The C parts keep the layers too (issue 43 part 5, the C side of test_import_graph.py): no
``#include "..."`` circle among the switch's files, no C file including one of a layer above its
own (the layers of test_import_graph.py: dut below drivers below traces ...), and no file of
dut/switch/src over 1,000 lines (issue 43's goal: the switch's units cut along its concepts).

An include is resolved as the compiler does for the quoted form: beside the including file
first, then through the include folders meson adds (a header of another C part, found by its
name among the tree's C folders). An include that resolves to nothing of the tree (a system or
DPDK header) is not an arrow. Arrows that break the layers today are listed in KNOWN with their
issue; an entry goes when its arrow does.
"""
import re
from pathlib import Path

from paths import REPO

C_TOPS = ("dut", "drivers", "traces", "suites", "reports", "harness")
LAYERS = (("configschema", "paths", "openflow"), ("dut",), ("drivers",), ("traces",),
          ("suites",), ("reports",), ("harness",))
RANK = {top: rank for rank, tops in enumerate(LAYERS) for top in tops}
SWITCH = "dut/switch"
MAX_LINES = 1000
# (including file, included file) -> the issue that removes the arrow
KNOWN: dict[tuple[str, str], str] = {
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def c_files() -> list[Path]:
    out = []
    for top in C_TOPS:
        for ext in ("*.c", "*.h"):
            out += [p for p in (REPO / top).rglob(ext) if "build" not in p.parts]
    return sorted(out)


def rel(p: Path) -> str:
    return p.resolve().relative_to(REPO).as_posix()


def include_graph() -> dict[str, set[str]]:
    files = c_files()
    by_name: dict[str, list[Path]] = {}
    for p in files:
        by_name.setdefault(p.name, []).append(p)
    graph: dict[str, set[str]] = {}
    for p in files:
        edges = graph.setdefault(rel(p), set())
        for name in INCLUDE.findall(p.read_text(errors="replace")):
            beside = (p.parent / name)
            if beside.is_file():
                edges.add(rel(beside))
                continue
            found = by_name.get(Path(name).name, [])
            if len(found) == 1:  # another C part's header, through meson's include folders
                edges.add(rel(found[0]))
    return graph


def cycles(graph: dict[str, set[str]], within: str) -> list[list[str]]:
    found, state = [], {}

    def visit(n: str, path: list[str]) -> None:
        state[n] = 1
        for m in sorted(graph.get(n, ())):
            if not m.startswith(within):
                continue
            if state.get(m) == 1:
                found.append(path[path.index(m):] + [m] if m in path else path + [m])
            elif m not in state:
                visit(m, path + [m])
        state[n] = 2

    for n in sorted(graph):
        if n.startswith(within) and n not in state:
            visit(n, [n])
    return found


def test_no_include_circle_in_the_switch():
    assert cycles(include_graph(), SWITCH + "/") == []


def test_cycle_finder_finds_one():
    g = {"dut/switch/a.h": {"dut/switch/b.h"}, "dut/switch/b.h": {"dut/switch/a.h"}}
    assert cycles(g, "dut/switch/") == [["dut/switch/a.h", "dut/switch/b.h", "dut/switch/a.h"]]


def upward() -> set[tuple[str, str]]:
    out = set()
    for src, dsts in include_graph().items():
        for dst in dsts:
            a, b = src.split("/")[0], dst.split("/")[0]
            if a in RANK and b in RANK and RANK[b] > RANK[a]:
                out.add((src, dst))
    return out


def test_no_c_file_includes_one_of_a_layer_above():
    new = upward() - set(KNOWN)
    assert not new, f"includes pointing up a layer (not in KNOWN): {sorted(new)}"


def test_known_upward_includes_still_exist():
    gone = set(KNOWN) - upward()
    assert not gone, f"fixed: remove from KNOWN {sorted(gone)}"


def test_no_switch_source_over_1000_lines():
    long = {rel(p): n for p in (REPO / SWITCH / "src").glob("*.[ch]")
            if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert not long, f"over {MAX_LINES} lines: {long}"
