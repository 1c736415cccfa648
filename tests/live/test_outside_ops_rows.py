"""The `hf` profile's count of what an eager step dispatches against the rows that counted it (lab/fit/host_per_op_s.py
on tests/data/measured/random, docs/accuracy.md *Host dispatch*), and its cost per operation against
the fit it states."""

from __future__ import annotations

from typing import Any

import pytest

from estimator import default_catalog
from tests.lab_modules import lab_module


@pytest.fixture(scope="module")
def host_fit() -> Any:
    return lab_module("fit.host_per_op_s")


@pytest.fixture(scope="module")
def rows(host_fit: Any) -> list[dict[str, Any]]:
    return list(host_fit.load(sorted(host_fit.DATA.glob("*.jsonl"))))


def test_every_counted_step_dispatches_exactly_what_the_profile_counts(host_fit: Any, rows: list[dict[str, Any]]
                                                                       ) -> None:
    """Prefills and eager decodes of five families, fp32 and 16-bit, 2–28 layers, 128–4,096 tokens: the layers'
    operations, the math kernel's one more per layer, and those outside the layers, to the operation."""
    hf = default_catalog().profiles.get("hf")
    pairs = [pair for row in rows if (pair := host_fit.counted(row, hf))]
    assert len(pairs) >= 480
    assert [m for m, p in pairs] == [p for m, p in pairs]
    # without the operations outside the layers the count falls short in every row
    short = [m - p for row in rows if (pair := host_fit.counted(row, host_fit.outside_profile(hf)))
             for m, p in [pair]]
    assert min(short) >= 22


def test_the_shipped_cost_per_operation_is_the_fit_it_states(host_fit: Any, rows: list[dict[str, Any]]) -> None:
    """Least squares on seed 0's host-bound fit rows, rounded to the four digits the profile gives."""
    hf = default_catalog().profiles.get("hf")
    fitted, used = host_fit.per_op_fit(rows, hf)
    assert used >= 30
    assert hf.host_per_op_s == pytest.approx(round(fitted, 8), abs=1e-12)
