"""max_batch and max_context_tokens: exact integers, checked at the boundary (n fits, n + 1 does not)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from estimator.catalog.registry import Catalog
from estimator.inference.estimate import estimate
from estimator.inference.workload import MAX_BATCH, MAX_TOKENS, InferenceWorkload
from estimator.model.capacity import largest_true, max_batch, max_context_tokens
from estimator.model.footprint import memory_per_gpu
from estimator.notes import NoteCode

MODELS = ["llama-3.1-8b", "llama-3.1-70b", "gemma-2-9b", "mixtral-8x7b", "deepseek-v2-lite", "gpt2"]
GPUS = ["h100", "rtx-4090", "a100-40gb-pcie", "h200", "l4"]


@pytest.mark.parametrize(("answer", "high"), [(0, 10), (1, 10), (7, 10), (10, 10), (1000, 10**6), (10**6, 10**6)])
def test_largest_true_finds_the_boundary(answer: int, high: int) -> None:
    calls: list[int] = []

    def predicate(n: int) -> bool:
        calls.append(n)
        return n <= answer

    assert largest_true(predicate, 1, high) == answer
    assert len(calls) <= 2 * high.bit_length() + 2  # logarithmic, not a scan


def test_max_batch_of_llama_70b_on_4_h100(catalog: Catalog, workload: Callable[..., InferenceWorkload]) -> None:
    report = estimate(catalog.model("llama-3.1-70b"), catalog.gpus.get("h100"),
                      workload(batch=1, prompt_tokens=2048, output_tokens=256, tensor_parallel=4))
    b, c = report.memory.max_batch, report.memory.max_context_tokens_by_memory
    assert b is not None and c is not None
    assert report.memory.max_context_tokens == 131_072  # min(c, the model's max_position_embeddings 131,072)
    w = workload(batch=1, prompt_tokens=2048, output_tokens=256, tensor_parallel=4)
    assert _fits(catalog, "llama-3.1-70b", "h100", w.model_copy(update={"batch": b}), 4)
    assert not _fits(catalog, "llama-3.1-70b", "h100", w.model_copy(update={"batch": b + 1}), 4)
    assert _fits(catalog, "llama-3.1-70b", "h100", w.model_copy(update={"prompt_tokens": c - 256}), 4)
    assert not _fits(catalog, "llama-3.1-70b", "h100", w.model_copy(update={"prompt_tokens": c - 255}), 4)
    # KV is 80 KiB per token per GPU (320 KiB / 4): the context limit is (free memory) / 80 KiB, far past 2,048
    assert 100 < b < 1000 and 300_000 < c < 1_000_000


def test_generic_model_has_no_capacity_figures(catalog: Catalog, workload: Callable[..., InferenceWorkload]) -> None:
    report = estimate(catalog.model("7b"), catalog.gpus.get("h100"), workload())
    assert report.memory.max_batch is None
    assert report.memory.max_context_tokens is None
    assert NoteCode.SIZE_ONLY_NO_CAPACITY in {w.code for w in report.warnings}


def _fits(catalog: Catalog, model: str, gpu: str, w: InferenceWorkload, tp: int) -> bool:
    g = catalog.gpus.get(gpu)
    per_gpu = memory_per_gpu(catalog.model(model), g, w, tp, w.batch, w.prompt_tokens, w.output_tokens).per_gpu
    return per_gpu <= g.memory_bytes


@pytest.mark.property
@settings(max_examples=60, deadline=None)
@given(model=st.sampled_from(MODELS), gpu=st.sampled_from(GPUS), prompt=st.integers(1, 200_000),
       output=st.integers(0, 8192), batch=st.integers(1, 64), kv=st.sampled_from(["bf16", "fp8"]))
def test_max_batch_and_context_are_the_exact_boundary(shipped_catalog: Catalog,
                                                      workload: Callable[..., InferenceWorkload],
                                                      model: str, gpu: str, prompt: int, output: int, batch: int,
                                                      kv: str) -> None:
    catalog = shipped_catalog  # MODELS and GPUS hold families and cards the tiny catalog leaves out
    m, g = catalog.model(model), catalog.gpus.get(gpu)
    w = workload(kv=kv, batch=batch, prompt_tokens=prompt, output_tokens=output)
    b = max_batch(m, g, w, 1, w.prompt_tokens, w.output_tokens)
    assert b is not None
    if b > 0:
        assert _fits(catalog, model, gpu, w.model_copy(update={"batch": b}), 1)
    if b < MAX_BATCH:  # the search is capped at the workload's largest valid batch
        assert not _fits(catalog, model, gpu, w.model_copy(update={"batch": b + 1}), 1)
    c = max_context_tokens(m, g, w, 1, w.batch, w.output_tokens)
    assert c is not None
    if c > 0:
        assert _fits(catalog, model, gpu, w.model_copy(update={"prompt_tokens": c - output}), 1)
        if c < MAX_TOKENS:
            assert not _fits(catalog, model, gpu, w.model_copy(update={"prompt_tokens": c - output + 1}), 1)
    else:
        assert not _fits(catalog, model, gpu, w.model_copy(update={"prompt_tokens": 1}), 1)
