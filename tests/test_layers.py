"""The package's imports point one way: a lower layer never imports a higher one, and no modules form a circle.

Every module is imported for real (a broken import fails here), and every import statement is also read from the
source (function-level and ``TYPE_CHECKING`` imports included), so a lazy import cannot hide an upward dependency.
The layers are the pipeline of docs/architecture.md. There is no list of allowed exceptions: a module that needs a
higher layer moves, or the thing it needs moves down.
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "estimator"
PYPROJECT = PACKAGE.parent / "pyproject.toml"

# Lowest first. A module may import its own package and any lower layer, never a higher one; packages that share
# a layer (inference and training; planning, live and oom; request and render; cli and serve) never import each
# other. The top-level modules errors, units and report are layers of their own; the package itself (its __init__)
# and __main__ sit on top.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors",),
    ("units",),
    ("report",),  # the frozen base, the schema version, ModelInfo/GpuInfo and the workload limits
    ("notes",),
    ("catalog",),
    ("model",),
    ("inference", "training"),
    ("planning", "live", "oom"),
    ("request", "render"),  # the typed requests every front end builds; the renderers of their reports
    ("cli", "serve"),  # the front ends: neither imports the other
    ("__init__", "__main__"),
)


def _unit(module: str) -> str:
    """The layer unit of a dotted module name: its sub-package or top-level module (``estimator`` itself: __init__)."""
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


MODULES = sorted(_module_name(p) for p in PACKAGE.rglob("*.py"))


def _imports(path: Path) -> set[str]:
    """Every ``estimator…`` module that ``path`` imports, wherever the import statement stands."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == "estimator")
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{path}: relative import (the layer test reads absolute imports only)"
            if node.module is None or node.module.split(".")[0] != "estimator":
                continue
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names if f"{node.module}.{a.name}" in MODULES)
    return found


def _graph() -> dict[str, set[str]]:
    return {_module_name(p): _imports(p) for p in sorted(PACKAGE.rglob("*.py"))}


def _optional_packages() -> set[str]:
    """The import names of the optional dependencies pyproject.toml declares (extras), e.g. ``fastapi_offline``."""
    text = PYPROJECT.read_text(encoding="utf-8")
    extras = text.split("[project.optional-dependencies]", 1)[1].split("\n[", 1)[0]
    return {name.lower().replace("-", "_") for name in re.findall(r'"([A-Za-z0-9_.-]+)\s*[<>=!~\[";]', extras)}


@pytest.mark.parametrize("module", MODULES)
def test_every_module_imports(module: str) -> None:
    """Each module imports on its own; only an optional dependency pyproject.toml declares may be absent."""
    try:
        importlib.import_module(module)
    except ModuleNotFoundError as missing:
        top = (missing.name or "").split(".")[0]
        if top not in _optional_packages():
            raise
        pytest.skip(f"{module} needs the optional package {top}, not installed")


def test_no_module_imports_a_higher_layer_or_a_sibling_package() -> None:
    wrong = []
    for module, imported in _graph().items():
        here = _layer(_unit(module))
        for target in imported:
            there = _layer(_unit(target))
            if there > here or (there == here and _unit(target) != _unit(module)):
                wrong.append(f"{module} -> {target}")
    assert sorted(wrong) == []


def test_no_import_circle() -> None:
    graph = {m: {t for t in imported if t in MODULES} for m, imported in _graph().items()}
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


def test_every_module_is_in_a_layer() -> None:
    for module in MODULES:
        _layer(_unit(module))

