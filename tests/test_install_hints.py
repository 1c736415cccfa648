"""Every install hint the tool prints installs this project: ``pip install 'llm-estimator[EXTRA]'``.

On the package index the name "estimator" belongs to an unrelated project, so a hint naming it would install
something else. The distribution is ``llm-estimator`` (pyproject.toml's ``name``); the import name stays
``estimator``. Each hint's extra must be one pyproject.toml declares, or pip would install the bare package and
say nothing.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "estimator"
DISTRIBUTION = "llm-estimator"
# `pip install ...` followed by what it installs, quoted or not; stops at a quote, a bracket's end, a paren or a space.
HINT = re.compile(r"pip install\s+'?([A-Za-z0-9_.-]+(?:\[[A-Za-z0-9_,.-]+\])?)")


def _pyproject() -> dict[str, object]:
    """pyproject.toml, parsed (tomllib is Python 3.11+; older interpreters skip)."""
    if sys.version_info >= (3, 11):
        import tomllib

        return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    pytest.skip("tomllib is Python 3.11+")


def _hints() -> list[tuple[str, str]]:
    """Every ``pip install X`` of the package's source, as (file, X)."""
    found: list[tuple[str, str]] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        # the hints are split over adjacent string literals at times: join "...pip install " "'x[y]'" first
        joined = re.sub(r"\"\s*\n\s*\"", "", text)
        found += [(path.relative_to(ROOT).as_posix(), target) for target in HINT.findall(joined)]
    return found


def test_the_distribution_is_named_llm_estimator() -> None:
    """pyproject.toml's name is the one every hint uses."""
    project = _pyproject()["project"]
    assert isinstance(project, dict)
    assert project["name"] == DISTRIBUTION


def test_every_hint_names_this_project_and_an_extra_it_declares() -> None:
    """A hint with an extra reads ``llm-estimator[EXTRA]`` and EXTRA is in pyproject's optional-dependencies."""
    project = _pyproject()["project"]
    assert isinstance(project, dict)
    extras = set(project["optional-dependencies"])
    hints = _hints()
    with_extra = [(where, target) for where, target in hints if "[" in target]
    assert len(with_extra) >= 5, hints  # plot, xlsx, sweep, serve, checkpoints at least
    for where, target in with_extra:
        name, extra = target.rstrip("]").split("[", 1)
        assert name == DISTRIBUTION, f"{where}: pip install {target}"
        assert set(extra.split(",")) <= extras, f"{where}: pip install {target} names an extra pyproject lacks"


def test_no_hint_installs_the_unrelated_estimator_project() -> None:
    """``pip install estimator`` (bare or with extras) would install the unrelated project of that name."""
    for where, target in _hints():
        assert target.split("[", 1)[0] != "estimator", f"{where}: pip install {target}"
