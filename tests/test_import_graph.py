"""The layers stay readable: no import cycles between ofbench's modules, no layer imports one
above it, and no production module imports from a tests/ folder. Imports inside functions
count too (a lazy import is still a dependency), and so does a module started by its name
(``python -m suites.x``, a string naming a module of the tree).

The layers, bottom first (a module may use its own layer and any below it):

    configschema, paths, openflow,  import nothing of ofbench (each may be used by any layer)
    redact, distributions
    dut                             the systems under test
    drivers                         the lab equipment
    traces                          generated traces and rule sets
    suites                          the experiments
    reports                         records, HTML, compare, trend
    harness                         the pytest plugin around everything

Arrows that break this today and are not fixed yet are listed in KNOWN with their issue, so the
test stays green and the debt stays visible; an entry goes when its arrow does. No test module
imports another (KNOWN_TEST_IMPORTS lists those that still do).
"""
import ast
import functools
import sys
from pathlib import Path

from paths import REPO

LAYERS = (("configschema", "paths", "openflow", "redact", "distributions"), ("dut",), ("drivers",),
          ("traces",), ("suites",), ("reports",), ("harness",))
RANK = {top: rank for rank, tops in enumerate(LAYERS) for top in tops}
TOP = tuple(RANK)
BOTTOM = LAYERS[0]
# (module, module it imports or starts) -> the issue that removes the arrow
KNOWN: dict[tuple[str, str], str] = {
}
# (test module, test module it imports) -> the issue that removes the import: a helper two test
# modules share lives in a plain module (or the tests folder's helper module) instead
KNOWN_TEST_IMPORTS: dict[tuple[str, str], str] = {
}


def is_test(mod: str) -> bool:
    return mod.startswith("tests.") or mod == "tests" or ".tests." in f"{mod}." or \
        mod.rpartition(".")[2].startswith("test_")


def is_test_folder(mod: str) -> bool:
    return mod.startswith("tests.") or ".tests." in f"{mod}."


@functools.cache
def modules() -> dict[str, Path]:
    out = {}
    for top in TOP:
        for p in (REPO / top).rglob("*.py"):
            mod = ".".join(p.relative_to(REPO).with_suffix("").parts)
            out[mod.removesuffix(".__init__")] = p
    return out


def import_graph() -> dict[str, set[str]]:
    return {m: set(out) for m, out in _import_graph().items()}


@functools.cache
def _tree(path: Path) -> ast.AST:
    return ast.parse(path.read_text())


@functools.cache
def _import_graph() -> dict[str, set[str]]:
    mods = modules()

    def known(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    edges: dict[str, set[str]] = {}
    for mod, path in mods.items():
        pkg = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        out = set()
        for node in ast.walk(_tree(path)):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = pkg.split(".")[: len(pkg.split(".")) - node.level + 1]
                    base = ".".join(up + ([node.module] if node.module else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base
                           for a in node.names]
            else:
                continue
            out |= {t for t in map(known, targets) if t and t != mod}
        edges[mod] = out
    return edges


def started_by_name() -> dict[str, set[str]]:
    """module -> the modules of the tree it names in a string (``-m suites.x.y``)."""
    mods = modules()
    out: dict[str, set[str]] = {}
    for mod, path in mods.items():
        for node in ast.walk(_tree(path)):
            if (isinstance(node, ast.Constant) and isinstance(node.value, str)
                    and "." in node.value and node.value in mods and node.value != mod):
                out.setdefault(mod, set()).add(node.value)
    return out


def upward_arrows() -> list[tuple[str, str]]:
    """(module, target) of every production module's arrow to a higher layer, or from a bottom
    package to any other ofbench folder."""
    bad = []
    graph = import_graph()
    for mod, named in started_by_name().items():
        graph.setdefault(mod, set()).update(named)
    for mod, out in graph.items():
        if ".tests." in f"{mod}." or mod.startswith("tests"):
            continue
        top = mod.split(".")[0]
        for target in out:
            t = target.split(".")[0]
            if RANK[t] > RANK[top] or (top in BOTTOM and t != top):
                bad.append((mod, target))
    return sorted(bad)


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    sys.setrecursionlimit(max(10_000, sys.getrecursionlimit()))
    index, low, stack, on, found, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in edges:
        if v not in index:
            visit(v)
    return found


def test_no_import_cycles():
    assert cycles(import_graph()) == []


def test_no_layer_imports_one_above_it():
    bad = [f"{m} -> {t}" for m, t in upward_arrows() if (m, t) not in KNOWN]
    assert bad == []


def test_no_circle_between_top_level_folders():
    """Beside the listed debts, the folders' own graph has no circle (the layers are a line)."""
    folders: dict[str, set[str]] = {}
    for mod, out in import_graph().items():
        if is_test(mod):
            continue
        for target in out:
            if (mod, target) not in KNOWN and target.split(".")[0] != mod.split(".")[0]:
                folders.setdefault(mod.split(".")[0], set()).add(target.split(".")[0])
    assert cycles(folders) == []


def test_no_production_module_imports_from_a_tests_folder():
    """Helpers that production code needs live beside it, not in a tests/ folder (issue 43:
    the OpenFlow wire helpers left dut/switch/tests for openflow/)."""
    graph = import_graph()
    for mod, named in started_by_name().items():
        graph.setdefault(mod, set()).update(named)
    bad = [f"{m} -> {t}" for m, out in graph.items() if not is_test(m)
           for t in out if is_test_folder(t)]
    assert bad == []


def test_the_known_exceptions_still_exist():
    """When an arrow in KNOWN goes, its entry goes too."""
    arrows = set(upward_arrows())
    assert [k for k in KNOWN if k not in arrows] == []


def imports_between_tests():
    """(test module, test module) of every import between two test modules."""
    return sorted((m, t) for m, out in import_graph().items() if is_test(m)
                  for t in out if t != m and t.rpartition(".")[2].startswith("test_"))


def test_no_test_module_imports_another():
    """A helper two test modules share lives in a plain module beside them (issue 43: softgen's
    TX trial left test_throughput.py for suites/throughput/txbench.py), so a test module is
    only ever collected, never imported."""
    found = imports_between_tests()
    assert [f"{m} -> {t}" for m, t in found if (m, t) not in KNOWN_TEST_IMPORTS] == []
    assert [k for k in KNOWN_TEST_IMPORTS if k not in set(found)] == []  # gone: drop its entry
