"""Sweep rows equal estimate's flattened JSON at the same point (integers exactly, floats to rounding)."""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest

from estimator.catalog.registry import Catalog
from estimator.inference.estimate import estimate
from estimator.inference.workload import InferenceWorkload
from estimator.planning.sweep import sweep
from estimator.report import flatten

COMBOS = [("llama-3.1-70b", "h100", "bf16", 4, "optimized"), ("gemma-2-9b", "l4", "bf16", 1, "optimized"),
          ("70b", "h100", "fp8", 2, "optimized"), ("mixtral-8x7b", "a100", "awq-int4", 2, "optimized"),
          ("bert-base", "t4", "fp16", 1, "optimized"), ("deepseek-v2-lite", "h200", "fp8", 1, "optimized"),
          ("llama-3.1-8b", "v100-pcie-16gb", "bf16", 1, "optimized"),
          # the hf profile's runtime details: math-kernel attention scores (falcon), sliding windows as masks and
          # whole-prompt caches (gemma-2), fused gate-up and gelu_new temporaries (phi-3, gpt2)
          ("falcon-7b", "h200", "bf16", 1, "hf"), ("gemma-2-9b", "h200", "bf16", 2, "hf"),
          ("phi-3-mini", "a100", "bf16", 1, "hf"), ("gpt2-xl", "l4", "fp16", 1, "hf")]


@pytest.mark.parametrize(("model", "gpu", "dtype", "tp", "profile"), COMBOS)
def test_sweep_rows_equal_estimate(shipped_catalog: Catalog, workload: Callable[..., InferenceWorkload], model: str,
                                   gpu: str, dtype: str, tp: int, profile: str) -> None:
    """Families of the shipped catalog the tiny one leaves out (falcon, phi-3, gpt2, deepseek-v2), so shipped."""
    w = workload(dtype=dtype, kv="fp16" if dtype == "fp16" else "bf16", tensor_parallel=tp, profile=profile)
    m, g = shipped_catalog.model(model), shipped_catalog.gpus.get(gpu)
    result = sweep([(m, g, w, gpu)], [1, 7, 64], [1, 1000, 32_768], [0, 256])
    assert result.size == 18
    for row in result.rows():
        point = w.model_copy(update={"batch": row["workload.batch"], "prompt_tokens": row["workload.prompt_tokens"],
                                     "output_tokens": row["workload.output_tokens"]})
        expected = flatten(estimate(m, g, point, requested_gpu=gpu).model_dump(mode="json"))
        expected.pop("explain")
        assert list(row) == list(expected)
        for key, value in expected.items():
            if isinstance(value, float) and isinstance(row[key], float):
                assert math.isclose(row[key], value, rel_tol=1e-12), key
            else:
                assert row[key] == value, key


def test_sweep_grid_is_the_cartesian_product(catalog: Catalog, workload: Callable[..., InferenceWorkload]) -> None:
    result = sweep([(catalog.model("llama-3.1-8b"), catalog.gpus.get("h100"), workload(), "h100")],
                   [1, 2], [10, 20, 30], [5])
    points = [(r["workload.batch"], r["workload.prompt_tokens"], r["workload.output_tokens"]) for r in result.rows()]
    assert points == [(b, p, 5) for b in (1, 2) for p in (10, 20, 30)]
