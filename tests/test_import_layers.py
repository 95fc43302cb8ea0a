"""The import structure of pipeproof (ARCHITECTURE.md, "Layout"; issue 26 item 4).

Every ``.py`` of the package is parsed with ``ast`` -- every ``import`` and ``from ...
import`` statement, including those inside functions (a function-local import is a
dependency like any other: it only hides a cycle from the interpreter's start-up), with
relative imports resolved -- and the module graph is checked:

* it has no cycle at all;
* ``model/`` imports nothing of pipeproof outside ``model/``;
* ``checker/`` is one-way: traces at the bottom, then the state space, then the symbolic
  encoding and the reductions, then the engines, then the portfolio (``CHECKER_LAYERS``);
  a module imports only modules of its own layer or below.

Importing ``pipeproof.a.b`` also runs ``pipeproof/__init__.py`` and ``pipeproof/a/__init__.py``;
those parent-package edges are not counted: the interpreter initialises a package before
its modules, so they never make a circular import, and counting them would make every
module of the package depend on ``pipeproof/__init__.py``'s imports.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Optional

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: source folder -> package name (pyproject.toml's ``[tool.setuptools] package-dir``)
PACKAGE_DIRS = {
    "pipeproof": "pipeproof",
    "model": "pipeproof.model",
    "checker": "pipeproof.checker",
    "impl": "pipeproof.impl",
    "frontend": "pipeproof.frontend",
    "proofs": "pipeproof.proofs",
    "spec": "pipeproof.spec",
}

#: the layers of ``checker/``, bottom first (module names relative to
#: ``pipeproof.checker``); a module may import its own layer and those below
CHECKER_LAYERS: list[tuple[str, set[str]]] = [
    ("traces, verdicts, errors and graph algorithms (leaves)",
     {"", "errors", "properties", "trace", "verdict", "packed", "graphs", "termeval",
      "explain", "render", "render.lanes", "render.timeline", "render.perfetto",
      "render.html"}),
    ("the state space: concrete steps, explorer, replay, shortening, lasso reports",
     {"concrete", "cta_symmetry", "statespace", "tracebuild", "shorten", "lasso"}),
    ("the symbolic encoding and the reductions",
     {"por", "por.modes", "por.counts", "por.footprints", "por.tables", "por.futures",
      "por.closure", "por.reducer", "safesteps", "symbolic", "invariants", "evalgraph",
      "certificate", "unrolling", "chain", "native", "native.ccode", "native.build",
      "native.porwalk", "native.por"}),
    ("the engines", {"explicit", "bmc", "liveness", "native.search", "distributed", "swarm"}),
    ("the portfolio", {"portfolio"}),
]


def _modules() -> dict[str, tuple[Path, bool]]:
    """Every module of the package: name -> (file, is a package ``__init__``)."""
    out: dict[str, tuple[Path, bool]] = {}
    for folder, pkg in PACKAGE_DIRS.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = list(path.relative_to(ROOT / folder).with_suffix("").parts)
            is_pkg = parts[-1] == "__init__"
            if is_pkg:
                parts.pop()
            out[".".join([pkg, *parts])] = (path, is_pkg)
    return out


MODULES = _modules()


def _imports(name: str) -> list[tuple[str, int]]:
    """(imported module, line) for every import of pipeproof in module ``name``, at any
    nesting; ``from m import x`` counts ``m.x`` where that is a module, else ``m``."""
    path, is_pkg = MODULES[name]
    tree = ast.parse(path.read_text(), filename=str(path))
    package = name if is_pkg else name.rpartition(".")[0]
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(a.name, node.lineno) for a in node.names
                    if a.name.split(".")[0] == "pipeproof"]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                if node.level - 1 > len(base) - 1:
                    raise AssertionError(f"{path}:{node.lineno}: relative import above "
                                         "the package")
                base = base[:len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "pipeproof":
                continue
            for a in node.names:
                sub = f"{target}.{a.name}"
                out.append((sub if sub in MODULES else target, node.lineno))
    return out


def _graph() -> dict[str, dict[str, int]]:
    """module -> {imported module: first line}; every target must be a known module."""
    graph: dict[str, dict[str, int]] = {}
    unknown = []
    for name in MODULES:
        edges: dict[str, int] = {}
        for target, line in _imports(name):
            if target not in MODULES:
                unknown.append(f"{MODULES[name][0].relative_to(ROOT)}:{line}: {target}")
                continue
            if target != name:
                edges.setdefault(target, line)
        graph[name] = edges
    assert not unknown, "imports of modules that do not exist:\n" + "\n".join(unknown)
    return graph


GRAPH = _graph()


def find_cycle(graph: dict[str, dict[str, int]]) -> Optional[list[str]]:
    """One cycle of ``graph`` as a closed list of modules, or None (iterative DFS)."""
    colour: dict[str, int] = {}  # 1: on the DFS path, 2: finished
    for root in sorted(graph):
        if root in colour:
            continue
        path = [root]
        stack = [iter(sorted(graph[root]))]
        colour[root] = 1
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                colour[path.pop()] = 2
                stack.pop()
            elif colour.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            elif nxt not in colour:
                colour[nxt] = 1
                path.append(nxt)
                stack.append(iter(sorted(graph.get(nxt, {}))))
    return None


def _where(a: str, b: str) -> str:
    return f"{MODULES[a][0].relative_to(ROOT)}:{GRAPH[a][b]}"


def test_the_parser_sees_the_known_edges() -> None:
    """The graph is real: top-level, function-level and relative imports are all in it."""
    assert len(MODULES) > 60
    assert "pipeproof.model.system" in GRAPH["pipeproof.checker.bmc"]       # top-level
    assert "pipeproof.checker.bmc" in GRAPH["pipeproof.checker.portfolio"]  # in a function
    assert "pipeproof.checker.liveness" in GRAPH["pipeproof.checker.bmc"]   # from . import x
    assert "pipeproof.checker.errors" in GRAPH["pipeproof.cli"]             # in a function
    assert find_cycle({"a": {"b": 1}, "b": {"c": 1}, "c": {"a": 1}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b": 1}, "b": {}, "c": {"a": 1, "b": 1}}) is None


def test_no_import_cycle() -> None:
    cycle = find_cycle(GRAPH)
    if cycle is not None:
        steps = "\n".join(f"  {a} -> {b}  ({_where(a, b)})" for a, b in zip(cycle, cycle[1:]))
        pytest.fail(f"import cycle (counting imports inside functions):\n{steps}")


def test_model_imports_only_model() -> None:
    bad = [f"{a} -> {b}  ({_where(a, b)})" for a in sorted(GRAPH)
           if a.startswith("pipeproof.model") for b in GRAPH[a]
           if not (b == "pipeproof.model" or b.startswith("pipeproof.model."))]
    assert not bad, "model/ imports outside model/:\n" + "\n".join(bad)


def test_checker_is_layered() -> None:
    prefix = "pipeproof.checker"
    layer_of = {}
    for i, (_what, names) in enumerate(CHECKER_LAYERS):
        for n in names:
            layer_of[f"{prefix}.{n}" if n else prefix] = i
    ours = [m for m in MODULES if m == prefix or m.startswith(prefix + ".")]
    missing = sorted(set(ours) - set(layer_of))
    assert not missing, ("checker modules without a layer (add them to CHECKER_LAYERS): "
                         + ", ".join(missing))
    assert not set(layer_of) - set(ours), sorted(set(layer_of) - set(ours))
    upward = []
    for a in sorted(ours):
        for b in GRAPH[a]:
            if b in layer_of and layer_of[b] > layer_of[a]:
                upward.append(f"{a} ({CHECKER_LAYERS[layer_of[a]][0]}) imports {b} "
                              f"({CHECKER_LAYERS[layer_of[b]][0]})  ({_where(a, b)})")
            elif not b.startswith(prefix) and not b.startswith("pipeproof.model"):
                upward.append(f"{a} imports {b} outside checker/ and model/  ({_where(a, b)})")
    assert not upward, "checker/ imports against its layers:\n" + "\n".join(upward)


def test_every_package_is_installed() -> None:
    # the package list of pyproject.toml is explicit: a sub-package missing from it works
    # in an editable install and is absent from a wheel
    import tomllib

    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    dirs = {pkg: folder for pkg, folder in cfg["package-dir"].items()}
    assert set(dirs) == set(cfg["packages"])
    on_disk = {name for name, (_path, is_pkg) in MODULES.items() if is_pkg}
    missing = on_disk - set(cfg["packages"])
    assert not missing, f"packages not in pyproject.toml: {sorted(missing)}"
    for pkg, folder in dirs.items():
        assert (ROOT / folder / "__init__.py").exists(), (pkg, folder)
