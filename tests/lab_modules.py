"""Import a module of lab/ (the measurement, fit and accuracy scripts docs/accuracy.md is written from) for the tests
that check the product's figures against the committed measurements. The import goes through importlib so that the
lab's scripts, which mypy does not check, stay out of the strict type check of the tests."""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any

import pytest


def lab_module(name: str) -> Any:
    """``lab.<name>`` (e.g. ``accuracy.random_points``) as a module."""
    return importlib.import_module(f"lab.{name}")


# the transformers every count of the hf profiles describes (its modeling code decides what a forward dispatches)
COUNTED_TRANSFORMERS = "5.17.0"
needs_torch_and_transformers = pytest.mark.skipif(
    importlib.util.find_spec("transformers") is None or importlib.util.find_spec("torch") is None,
    reason="needs torch and transformers")


def skip_unless_counted_transformers() -> None:
    """Skip a test that re-counts operations unless the installed transformers is the one the counts are of."""
    import transformers

    if transformers.__version__ != COUNTED_TRANSFORMERS:
        pytest.skip(f"transformers {transformers.__version__}: the shipped counts describe {COUNTED_TRANSFORMERS}")
