"""Parameter counts against Hugging Face transformers itself, built on the meta device (no weights, no network).

The shipped `hf_params` were produced by tools/hf_param_count.py; this test recomputes them where torch and
transformers are installed (CI installs both, CPU builds) so a config or a transformers change cannot drift.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from estimator.catalog.files import default_specs_dir
from estimator.catalog.registry import Catalog
from tests.catalog.test_families import REMOTE_CODE

pytestmark = [
    pytest.mark.hf,
    pytest.mark.skipif(importlib.util.find_spec("transformers") is None or importlib.util.find_spec("torch") is None,
                       reason="torch and transformers not installed (pip install '.[gpu]')"),
]
TOOLS = Path(__file__).resolve().parents[2] / "tools"


def test_transformers_meta_counts_equal_ours(shipped_catalog: Catalog) -> None:
    from estimator.model.inventory import param_count

    sys.path.insert(0, str(TOOLS))
    try:
        import hf_param_count  # type: ignore[import-not-found]
    finally:
        sys.path.remove(str(TOOLS))
    for path in sorted((default_specs_dir() / "models").glob("*.yaml")):
        model = shipped_catalog.models.get(path.stem)
        assert model.arch is not None
        config = hf_param_count.load_spec(path)["config"]
        if config.get("model_type") in REMOTE_CODE:  # no transformers class: test_remote_code_families counts it
            continue
        count = hf_param_count.count_params(config)
        assert count == param_count(model.arch), path.stem
