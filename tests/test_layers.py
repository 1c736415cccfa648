"""The package's imports point one way: a lower layer never imports a higher one, and no modules form a circle.

Every import is read from the source (function-level and ``TYPE_CHECKING`` imports included), so a lazy import
cannot hide an upward dependency. The layers are the pipeline of docs/architecture.md.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "estimator"

# Lowest first. A module may import its own layer's package and any lower layer, never a higher one; packages
# that share a layer (planning, live) may not import each other.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors",),
    ("units", "report"),
    ("notes",),
    ("catalog",),
    ("model",),
    ("inference",),
    ("training",),
    ("planning", "live"),
    ("request",),  # the typed requests every front end builds, and the option definitions they are read by
    ("render",),
    ("cli", "serve"),  # the front ends: neither imports the other
    ("__init__", "__main__"),
)


def _unit(module: str) -> str:
    """The layer unit of a dotted module name below ``estimator``: its sub-package or top-level module."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _layer(unit: str) -> int:
    for index, names in enumerate(LAYERS):
        if unit in names:
            return index
    raise AssertionError(f"estimator.{unit} is in no layer of tests/test_layers.py: place it")


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """Every ``estimator…`` module that ``path`` imports, wherever the import statement stands."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == "estimator")
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.split(".")[0] != "estimator":
                continue
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names
                         if (PACKAGE.parent / node.module.replace(".", "/") / f"{a.name}.py").exists())
    return found


def _graph() -> dict[str, set[str]]:
    return {_module_name(p): _imports(p) for p in sorted(PACKAGE.rglob("*.py"))}


def test_no_module_imports_a_higher_layer() -> None:
    upward = []
    for module, imported in _graph().items():
        here = _layer(_unit(module)) if module != "estimator" else len(LAYERS) - 1
        for target in imported:
            if target == "estimator":
                continue
            there = _layer(_unit(target))
            same_layer_other_package = there == here and _unit(target) != _unit(module) and module != "estimator"
            if there > here or same_layer_other_package:
                upward.append(f"{module} -> {target}")
    assert upward == []


def test_no_import_circle() -> None:
    graph = {m: {t for t in imported if t != "estimator" and t in _graph_keys()} for m, imported in _graph().items()}
    state: dict[str, int] = {}
    circles: list[str] = []

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for target in sorted(graph.get(node, ())):
            if state.get(target) == 1:
                circles.append(" -> ".join([*path[path.index(target):], target]))
            elif target not in state:
                visit(target, [*path, target])
        state[node] = 2

    for start in sorted(graph):
        if start not in state:
            visit(start, [start])
    assert circles == []


def _graph_keys() -> set[str]:
    return {_module_name(p) for p in PACKAGE.rglob("*.py")}


def test_every_module_is_in_a_layer() -> None:
    for module in _graph():
        if module != "estimator":
            _layer(_unit(module))
