"""Import a script of benchmarks/ (the analyses docs/accuracy.md is written from) as a module, for the tests that
check its figures against the committed measurements; benchmarks/ is on the path only while it imports."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def benchmark(name: str) -> Any:
    """``benchmarks/<name>.py`` as a module (its own imports of the scripts beside it resolve while it loads)."""
    sys.path.insert(0, str(BENCHMARKS))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(BENCHMARKS))
