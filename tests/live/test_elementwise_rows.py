"""Each family's traced elementwise passes (the `hf` profile's ``elementwise_passes_by_family``, counted by
lab/measure/count_elementwise.py) against the random rows (lab/accuracy/elementwise_counts.py): the 16-bit prefills
that the GPU sets come within ±7% of their measurements in every family, where one hand count for all families read
the llama family and Gemma 2 more than 9% low."""

from __future__ import annotations

from typing import Any

import pytest

from tests.lab_modules import lab_module

# predicts every random prefill and training row twice (about 45 s): lab-only
pytestmark = pytest.mark.lab


@pytest.fixture(scope="module")
def counts() -> Any:
    return lab_module("accuracy.elementwise_counts")


def test_every_family_s_gpu_bound_prefills_come_within_seven_percent(counts: Any) -> None:
    """Measured prefills, so a tolerance: the signed median error of each family's 16-bit prefills that the GPU sets
    (measured: +3.7% to +6.5%, all high). GPT-2's remaining error is the host's preamble (the profile's 1.5 ms, where
    its rows' wall time exceeds the kernels' busy time by about 0.7 ms), not its passes."""
    points = lab_module("accuracy.random_points")
    rows = points.load(sorted(points.DATA.glob("*.jsonl")))
    hand, counted = (counts.gpu_bound_16bit(counts.errors(rows, counted=flag)) for flag in (False, True))
    assert set(counted) == {"gemma2", "gpt2", "llama", "mistral", "qwen2"}
    assert all(abs(error) <= 0.07 for error in counted.values()), counted
    for family in ("gemma2", "llama", "mistral", "qwen2"):
        assert hand[family] < -0.09 and abs(counted[family]) < abs(hand[family]), (family, hand, counted)
