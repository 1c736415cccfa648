"""Invariants that hold for every model, card and workload."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from estimator import InferenceWorkload, estimate
from estimator.catalog.registry import default_catalog

CATALOG = default_catalog()
MODELS = sorted(m.name for m in CATALOG.models)
GPUS = sorted(g.name for g in CATALOG.gpus)


def _workload(batch: int, prompt: int, output: int, dtype: str, profile: str) -> InferenceWorkload:
    return InferenceWorkload(batch=batch, prompt_tokens=prompt, output_tokens=output,
                             weight_format=CATALOG.formats.get(dtype), kv_format=CATALOG.formats.get("bf16"),
                             profile=CATALOG.profiles.get(profile))


pytestmark = pytest.mark.property
common = settings(max_examples=60, deadline=None)


@common
@given(model=st.sampled_from(MODELS), gpu=st.sampled_from(GPUS), batch=st.integers(1, 256),
       prompt=st.integers(1, 65_536), output=st.integers(0, 4096),
       dtype=st.sampled_from(["bf16", "fp16", "fp8", "awq-int4", "q4_k_m", "fp32"]),
       profile=st.sampled_from(["optimized", "hf"]))
def test_every_report_is_finite_and_consistent(model: str, gpu: str, batch: int, prompt: int, output: int,
                                                dtype: str, profile: str) -> None:
    r = estimate(CATALOG.models.get(model), CATALOG.gpus.get(gpu), _workload(batch, prompt, output, dtype, profile))
    for section in (r.memory.model_dump(), r.time.model_dump()):
        for value in section.values():
            if isinstance(value, float):
                assert math.isfinite(value)
    assert r.memory.fits == (r.memory.per_gpu_bytes <= r.memory.capacity_bytes)
    assert r.memory.fits == (r.memory.headroom_bytes >= 0)
    if r.memory.fits:
        assert r.memory.gpus_required == 1
    assert r.time.prefill_bound_s <= r.time.prefill_s
    if r.time.decode_step_s is not None:
        assert r.time.decode_step_bound_s is not None
        assert r.time.decode_step_bound_s <= r.time.decode_step_s


@common
@given(model=st.sampled_from(MODELS), batch=st.integers(1, 128), prompt=st.integers(1, 32_768),
       more=st.integers(1, 4096))
def test_memory_grows_with_batch_and_context(model: str, batch: int, prompt: int, more: int) -> None:
    gpu = CATALOG.gpus.get("h200")
    spec = CATALOG.models.get(model)
    base = estimate(spec, gpu, _workload(batch, prompt, 16, "bf16", "hf")).memory.per_gpu_bytes
    assert estimate(spec, gpu, _workload(batch + 1, prompt, 16, "bf16", "hf")).memory.per_gpu_bytes >= base
    assert estimate(spec, gpu, _workload(batch, prompt + more, 16, "bf16", "hf")).memory.per_gpu_bytes >= base


@common
@given(model=st.sampled_from(MODELS), dtype=st.sampled_from(["fp32", "bf16", "fp8", "int8", "gptq-int4", "nf4",
                                                              "int4"]))
def test_fewer_bits_never_more_weight_bytes(model: str, dtype: str) -> None:
    from estimator.model.memory import weights_bytes

    arch = CATALOG.models.get(model).arch
    assert arch is not None
    fmt = CATALOG.formats.get(dtype)
    wider = CATALOG.formats.get("fp32")
    assert 0 < weights_bytes(arch, fmt) <= weights_bytes(arch, wider)
