"""Each family's traced elementwise passes against the random rows (benchmarks/random_eighth.py): the GPU-bound 16-bit
prefills of the families whose count moved the most come closer to their measurements, and no split's prefill median
gets worse by more than half a point."""

from __future__ import annotations

import statistics
from typing import Any

import pytest

from tests.benchmark_modules import benchmark


@pytest.fixture(scope="module")
def eighth() -> Any:
    return benchmark("random_eighth")


@pytest.fixture(scope="module")
def runs(eighth: Any) -> tuple[Any, Any]:
    rows = eighth.load(sorted(eighth.DATA.glob("*.jsonl")))
    return eighth.errors(rows, counted=False), eighth.errors(rows, counted=True)


def test_every_family_s_gpu_bound_prefills_come_within_seven_percent(eighth: Any, runs: tuple[Any, Any]) -> None:
    """With each family's own counts (item 18's passes, item 24's kernel paths) the signed median error of its 16-bit
    prefills that the GPU sets is within ±7% for all five families (measured: +3.7% to +6.5%, all high); with the
    hand count for every family (65 hidden passes, all at the bandwidth) Gemma 2 and the llama family read 10–21%
    low. GPT-2, whose hand count overstates its elementwise work, is the one family the hand count happened to put
    nearer (+3.8% against +5.7%): its remaining error is the host's preamble (the profile's 1.5 ms, where its rows'
    wall time exceeds the kernels' busy time by about 0.7 ms), not its passes."""
    before, after = (eighth._gpu_bound_16bit(run) for run in runs)
    assert set(after) == {"gemma2", "gpt2", "llama", "mistral", "qwen2"}
    assert all(abs(error) <= 0.07 for error in after.values()), after
    for family in ("gemma2", "llama", "mistral", "qwen2"):
        assert before[family] < -0.09 and abs(after[family]) < abs(before[family]), (family, before, after)


def test_no_split_s_prefill_median_gets_worse_by_more_than_half_a_point(runs: tuple[Any, Any]) -> None:
    """Every split (seed 5's held-out prefills move from 11.9% to 12.3%, the largest step back)."""
    before, after = runs
    for key, cases in after.items():
        if key[0] == "prefill_s":
            old = statistics.median(abs(e) for e, _ in before[key])
            new = statistics.median(abs(e) for e, _ in cases)
            assert new <= old + 0.005, (key, old, new)
