"""Host dispatch counted in aten operations (timing.host_dispatch_s, phases.eager_ops) under the shipped hf
profile: the operation counts are transformers 5.17's, measured per layer by TorchDispatchMode on the H200
(tests/data/measured/random, prefill_ops and decode_ops)."""

from __future__ import annotations

import pytest

from estimator import InferenceWorkload, default_catalog
from estimator.inference.estimate import estimate
from estimator.model.phases import eager_ops


def _workload(profile: str) -> InferenceWorkload:
    catalog = default_catalog()
    bf16 = catalog.formats.get("bf16")
    return InferenceWorkload(batch=1, prompt_tokens=128, output_tokens=1, weight_format=bf16, kv_format=bf16,
                             profile=catalog.profiles.get(profile))


def test_operation_counts_follow_the_family_and_grouped_heads() -> None:
    catalog, rt = default_catalog(), _workload("hf")
    llama8b, llama2 = catalog.models.get("llama-3.1-8b").arch, catalog.models.get("llama-2-7b").arch
    assert llama8b is not None and llama2 is not None
    # the layers' operations, and llama's 38 (prefill) / 48 (decode) outside them (eager_ops_outside_layers)
    assert eager_ops(llama8b, rt, decode=True) == 48 + 32 * 63  # grouped KV heads: repeat_kv's expand and reshape
    assert eager_ops(llama2, rt, decode=True) == 48 + 32 * 57  # as many KV heads as query heads
    assert eager_ops(llama8b, rt, decode=False) == 38 + 32 * 52
    # a prefill layer on the math SDPA kernel (fp32, grouped KV heads) dispatches one more
    assert eager_ops(llama8b, rt, decode=False, math_layers=32) == 38 + 32 * 53
    phi, oss = catalog.models.get("phi-3-mini").arch, catalog.models.get("gpt-oss-20b").arch
    # counted on the CPU (docs/accuracy.md, "Host dispatch")
    assert phi is not None and eager_ops(phi, rt, decode=True) == 54 + 32 * 66
    assert oss is not None and eager_ops(oss, rt, decode=True) == 0  # not counted: layers × host_per_layer_s


def test_a_host_bound_decode_is_its_operations_times_their_cost() -> None:
    """Two 32-layer models no longer share one host step: llama-3.1-8b 48 + 2,016 operations × 16.09 µs = 33.2 ms,
    llama-2-7b 48 + 1,824 × 16.09 µs = 30.1 ms (measured 31.9 and about 22–26 ms, docs/accuracy.md)."""
    catalog = default_catalog()
    h200 = catalog.gpus.get("h200")
    steps = {name: estimate(catalog.models.get(name), h200, _workload("hf")).time.decode_step_s
             for name in ("llama-3.1-8b", "llama-2-7b")}
    assert steps["llama-3.1-8b"] == pytest.approx((48 + 2016) * 1.609e-5, rel=1e-9)
    assert steps["llama-2-7b"] == pytest.approx((48 + 1824) * 1.609e-5, rel=1e-9)
