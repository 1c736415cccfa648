"""Shared fixtures: the packaged catalog and a workload builder."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from estimator.catalog import Catalog, default_catalog
from estimator.workload import InferenceWorkload


@pytest.fixture(scope="session")
def catalog() -> Catalog:
    return default_catalog()


@pytest.fixture(scope="session")
def workload(catalog: Catalog) -> Callable[..., InferenceWorkload]:
    def build(dtype: str = "bf16", kv: str = "bf16", **kw: Any) -> InferenceWorkload:
        return InferenceWorkload(weight_format=catalog.formats.get(dtype), kv_format=catalog.formats.get(kv),
                                 profile=catalog.profiles.get(kw.pop("profile", "optimized")), **kw)

    return build
