"""The layers stay readable: no import cycles between ofbench's modules, and no layer imports
one above it (dut/ the systems under test, drivers/ the lab equipment, suites/ the experiments,
reports/ and harness/ around them). Imports inside functions count too: a lazy import is
still a dependency."""
import ast
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TOP = ("configschema", "openflow", "dut", "drivers", "traces", "suites", "reports", "harness")
# layer -> top-level folders it must not import
FORBIDDEN = {
    # the config schema language under every strict config: every layer may import it
    "configschema": {"openflow", "dut", "drivers", "traces", "suites", "reports", "harness"},
    # OpenFlow 1.3 on the wire (issue 43): under the os-ken apps in dut/ and everything above
    "openflow": {"configschema", "dut", "drivers", "traces", "suites", "reports", "harness"},
    "dut": {"suites", "harness", "reports"},
    "drivers": {"suites", "reports"},
    "traces": {"suites", "drivers", "harness", "reports"},
    "reports": {"suites", "drivers", "dut", "traces"},
    "harness": {"suites"},
}
# Known exceptions (none left: lab tooling moved out of dut/ in issue 18).
KNOWN: set[tuple[str, str]] = set()


def modules() -> dict[str, Path]:
    out = {}
    for top in TOP:
        for p in (REPO / top).rglob("*.py"):
            mod = ".".join(p.relative_to(REPO).with_suffix("").parts)
            out[mod.removesuffix(".__init__")] = p
    return out


def import_graph() -> dict[str, set[str]]:
    mods = modules()

    def known(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    edges: dict[str, set[str]] = {}
    for mod, path in mods.items():
        pkg = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        out = set()
        for node in ast.walk(ast.parse(path.read_text())):
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
    bad = []
    for mod, out in import_graph().items():
        top = mod.split(".")[0]
        if ".tests" in mod or mod.startswith("tests"):
            continue
        for target in out:
            t = target.split(".")[0]
            if t in FORBIDDEN.get(top, ()) and (mod, t) not in KNOWN:
                bad.append(f"{mod} -> {target}")
    assert bad == []


def test_the_known_exceptions_still_exist():
    """When lab tooling leaves dut/, its entry in KNOWN goes too."""
    graph = import_graph()
    for mod, top in KNOWN:
        assert any(t.split(".")[0] == top for t in graph.get(mod, ())), (mod, top)
