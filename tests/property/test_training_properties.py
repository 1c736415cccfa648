"""Invariants of the training estimate over random layouts."""

from __future__ import annotations

from functools import cache

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from estimator import default_catalog
from estimator.catalog.architecture import ModelSpec
from estimator.catalog.specs import GpuSpec
from estimator.training.estimate import estimate_training
from estimator.training.workload import TrainingWorkload

pytestmark = pytest.mark.property


@cache
def _setup() -> tuple[ModelSpec, GpuSpec, TrainingWorkload]:
    catalog = default_catalog()
    return (catalog.models.get("llama-3.2-1b"), catalog.gpus.get("h100"),
            TrainingWorkload(profile=catalog.profiles.get("hf")))


def _per_gpu(**changes: object) -> int:
    model, gpu, base = _setup()
    return estimate_training(model, gpu, base.model_copy(update=changes)).memory.per_gpu_bytes


layouts = st.fixed_dictionaries({
    "batch": st.integers(1, 8), "seq_len": st.sampled_from([128, 1024, 4096]),
    "precision": st.sampled_from(["fp32", "amp-bf16", "bf16"]),
    "optimizer": st.sampled_from(["adamw", "adamw-fused", "adam-8bit", "sgd", "lion"]),
    "dp": st.sampled_from([1, 2, 8, 64]), "grad_accum": st.integers(1, 4),
})


@settings(max_examples=40, deadline=None)
@given(layouts, st.integers(0, 2))
def test_more_zero_never_increases_per_gpu_memory(layout: dict[str, object], stage: int) -> None:
    model, gpu, base = _setup()
    more = estimate_training(model, gpu, base.model_copy(update={**layout, "zero": stage + 1})).memory
    less = estimate_training(model, gpu, base.model_copy(update={**layout, "zero": stage})).memory
    assert more.model_states_bytes <= less.model_states_bytes
    if layout["dp"] != 1:
        # At dp = 1 ZeRO shards nothing and only adds its buffers (ZeRO-3's gathered parameters); with ranks to shard
        # over, a higher stage never needs more memory per GPU.
        assert more.per_gpu_bytes <= less.per_gpu_bytes


@settings(max_examples=40, deadline=None)
@given(layouts, st.sampled_from(["sdpa", "eager"]))
def test_recompute_never_increases_activations(layout: dict[str, object], attention: str) -> None:
    model, gpu, base = _setup()

    def activations(recompute: str) -> int:
        w = base.model_copy(update={**layout, "attention": attention, "recompute": recompute})
        return estimate_training(model, gpu, w).memory.activation_bytes

    assert activations("full") <= activations("selective") <= activations("none")


@settings(max_examples=30, deadline=None)
@given(layouts)
def test_zero3_per_gpu_memory_non_increasing_in_dp(layout: dict[str, object]) -> None:
    smaller, larger = _per_gpu(**{**layout, "dp": 2}, zero=3), _per_gpu(**{**layout, "dp": 16}, zero=3)
    assert larger <= smaller


@settings(max_examples=30, deadline=None)
@given(layouts)
def test_report_has_no_non_finite_numbers(layout: dict[str, object]) -> None:
    model, gpu, base = _setup()
    t = estimate_training(model, gpu, base.model_copy(update=layout)).time
    for value in (t.step_s, t.tokens_per_s, t.mfu):
        assert 0 < value < float("inf")
