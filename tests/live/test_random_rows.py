"""The random architectures' committed measurements (tests/data/measured/random) against the shipped model:
bounds never above a measurement, and the mechanisms docs/accuracy.md states for them."""

from __future__ import annotations

from typing import Any

import pytest

from tests.lab_modules import lab_module

# predicts every random row (about 30 s): lab-only
pytestmark = pytest.mark.lab


@pytest.fixture(scope="module")
def random_points() -> Any:
    return lab_module("accuracy.random_points")


@pytest.fixture(scope="module")
def measured(random_points: Any) -> list[Any]:
    return list(random_points.points(random_points.load(sorted(random_points.DATA.glob("*.jsonl")))))


def test_every_bound_is_at_most_its_measurement(random_points: Any, measured: list[Any]) -> None:
    bounds = [p for p in measured if p.term in random_points.BOUNDS]
    assert len(bounds) > 500  # prefill, HF and lean decode, training steps of five seeds
    above = [(p.model, p.case, p.term, p.predicted, p.measured) for p in bounds if p.predicted > p.measured]
    assert above == []


def test_gpt2_prefill_peaks_count_its_hidden_locals(measured: list[Any]) -> None:
    # GPT-2 holds 6 hidden-wide tensors through its MLP where other families hold 4 (memory.EAGER_HIDDEN_LOCALS, and
    # EAGER_POSITION_LOCALS for the position embeddings, one row per position whatever the batch; traced on gpt2-xl);
    # the random gpt2 rows, none of them traced, are within the ±5% target but for the four below
    gpt2 = [p for p in measured if p.family == "gpt2" and p.term == "prefill activation" and
            not p.split.endswith(" cal")]  # a calibration changes no memory term: each row once
    assert len(gpt2) >= 90
    within = sum(abs(p.error) <= 0.05 for p in gpt2)
    # measured: 164 of 168 — misses −24.5% at 128 tokens and −5.0% to −5.7% at 512, each the caching allocator's
    # blocks beyond the tensors (docs/accuracy.md, *Memory*: on the H200 the tensors' requested bytes equal the traced
    # live set, and every 16-bit row of seed 11, gpt2's among them, is exact in requested bytes)
    assert within >= len(gpt2) - 4
    # every batch of 2 to 8: the position embeddings counted once per position
    assert all(abs(p.error) <= 0.05 for p in gpt2 if not p.case.startswith("b1 "))
