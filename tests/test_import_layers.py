"""Import layering: no import cycles among the project's modules, each package
imports only the packages of the layers below it (``LAYERS``, as drawn in
docs/architecture.md), and the reference broker stands alone.

Every import counts — at module level, under ``if TYPE_CHECKING:``, inside a
function — because each is a dependency a reader has to follow and a change has to
respect: a cycle hidden behind a type-only or function-local import is still a cycle.
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parents[1]
PROJECT_PACKAGES = sorted(
    p.name for p in ROOT.iterdir() if (p / "__init__.py").is_file() and p.name != "tests"
)
# Lowest first: a package may import its own layer's and lower ones' modules.
LAYERS = [
    "broker",  # the reference broker: imports nothing of jepka's
    "history",  # the op model and its formats
    "generator",  # pure op generators
    "control",  # backends, commands on nodes, networks, DB adapters
    "workloads",  # clients and their generators
    "nemesis",  # faults
    "checkers",  # the analyses of a history
    "reports",  # what a person reads
    "harness",  # runner, cluster, spec, CLI
]


def module_paths(package: Path) -> dict[str, Path]:
    """Every module of the package tree at ``package`` by dotted name; a package is
    named by its directory and read from its ``__init__.py``."""
    modules = {}
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    return modules


def imported_names(module: str, path: Path) -> set[str]:
    """What ``module`` imports anywhere in its file, as dotted names: ``import a.b``
    gives ``a.b``, ``from a import b`` gives ``a.b`` (``b`` may be a submodule or a
    name defined in ``a``); relative imports are resolved against ``module``."""
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package[: len(package) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


def import_graph(*packages: Path) -> nx.DiGraph:
    """The modules of the given package trees, with an edge from each module to every
    module of those trees it imports (the longest known prefix of an imported name)."""
    modules = {name: path for package in packages for name, path in module_paths(package).items()}
    graph = nx.DiGraph()
    graph.add_nodes_from(modules)
    for name, path in modules.items():
        for imported in imported_names(name, path):
            parts = imported.split(".")
            prefixes = (".".join(parts[:n]) for n in range(len(parts), 0, -1))
            target = next((p for p in prefixes if p in modules), None)
            if target is not None and target != name:
                graph.add_edge(name, target)
    return graph


def import_cycles(graph: nx.DiGraph) -> list[list[str]]:
    """Each set of modules that import one another, directly or not."""
    return sorted(sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1)


def test_type_only_and_function_local_imports_count(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("")
    (package / "a.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.sub import b\n"
    )
    (package / "sub" / "b.py").write_text("def f():\n    from ..a import x\n")
    (package / "c.py").write_text("from pkg import a\n")
    assert import_cycles(import_graph(package)) == [["pkg.a", "pkg.sub.b"]]


def test_the_project_has_no_import_cycles() -> None:
    assert import_cycles(import_graph(*(ROOT / p for p in PROJECT_PACKAGES))) == []


def test_every_package_has_a_layer() -> None:
    assert sorted(LAYERS) == PROJECT_PACKAGES


def test_packages_import_only_their_own_and_lower_layers() -> None:
    rank = {package: i for i, package in enumerate(LAYERS)}
    graph = import_graph(*(ROOT / p for p in PROJECT_PACKAGES))
    upward = sorted(
        f"{a} imports {b}" for a, b in graph.edges if rank[b.split(".")[0]] > rank[a.split(".")[0]]
    )
    assert upward == []


def test_broker_imports_no_other_jepka_package() -> None:
    others = set(PROJECT_PACKAGES) - {"broker"}
    found = sorted(
        f"{module} imports {name}"
        for module, path in module_paths(ROOT / "broker").items()
        for name in imported_names(module, path)
        if name.split(".")[0] in others
    )
    assert found == []
