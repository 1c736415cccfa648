"""Import a script of benchmarks/ (the analyses docs/accuracy.md is written from) as a module, for the tests that
check its figures against the committed measurements; benchmarks/ is on the path only while it imports."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def benchmark(name: str) -> Any:
    """``benchmarks/<name>.py`` as a module (its own imports of the scripts beside it resolve while it loads)."""
    sys.path.insert(0, str(BENCHMARKS))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(BENCHMARKS))


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
