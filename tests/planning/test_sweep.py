"""Sweep rows equal estimate's flattened JSON at the same point (integers exactly, floats to rounding)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest

from estimator.catalog.architecture import ModelSpec
from estimator.catalog.registry import Catalog
from estimator.catalog.specs import GpuSpec
from estimator.errors import WorkloadInvalid
from estimator.inference.estimate import estimate
from estimator.inference.workload import InferenceWorkload
from estimator.planning.sweep import TOO_BIG, report_columns, sweep
from estimator.planning.sweep_row import IDENTITY, KEYS, LEFT_OUT
from estimator.report import flatten

COMBOS = [("llama-3.1-70b", "h100", "bf16", 4, "optimized"), ("gemma-2-9b", "l4", "bf16", 1, "optimized"),
          ("70b", "h100", "fp8", 2, "optimized"), ("mixtral-8x7b", "a100", "awq-int4", 2, "optimized"),
          ("bert-base", "t4", "fp16", 1, "optimized"), ("deepseek-v2-lite", "h200", "fp8", 1, "optimized"),
          ("llama-3.1-8b", "v100-pcie-16gb", "bf16", 1, "optimized"),
          # the hf profile's runtime details: math-kernel attention scores (falcon), sliding windows as masks and
          # whole-prompt caches (gemma-2), fused gate-up and gelu_new temporaries (phi-3, gpt2)
          ("falcon-7b", "h200", "bf16", 1, "hf"), ("gemma-2-9b", "h200", "bf16", 2, "hf"),
          ("phi-3-mini", "a100", "bf16", 1, "hf"), ("gpt2-xl", "l4", "fp16", 1, "hf"),
          # sliding windows with chunked and unchunked prefill, MoE over 4 ranks, MLA decompressed, sizes only over
          # 8 ranks, fractional bits per weight (ceil-rounded bytes), fp32 activations, a card too small for any
          ("gemma-3-1b", "l4", "bf16", 1, "hf"), ("mistral-7b-v0.1", "h100", "fp8", 2, "hf"),
          ("qwen3-30b-a3b", "h200", "bf16", 4, "optimized"), ("deepseek-v2-lite", "a100", "bf16", 1, "hf"),
          ("7b", "a100", "int4", 8, "hf"), ("llama-3.1-8b", "l4", "gptq-int4", 1, "optimized"),
          ("bert-large", "a100", "fp32", 1, "hf"), ("llama-3.1-405b", "l4", "gptq-int4", 8, "optimized"),
          # degrees estimate refuses: 28 heads at TP 8, 32 heads at TP 3
          ("qwen2.5-7b", "h100", "bf16", 8, "optimized"), ("llama-3.1-8b", "h100", "bf16", 3, "hf")]


def _assert_row_is_estimate(row: dict[str, Any], m: ModelSpec, g: GpuSpec, w: InferenceWorkload, gpu: str) -> None:
    """A sweep row equals estimate's flattened JSON at its point (integers exactly, floats to rounding) and a null
    ``error``; where estimate refuses the point, the row's ``error`` is estimate's message and every field but
    those that name the point is null."""
    point = w.model_copy(update={"batch": row["workload.batch"], "prompt_tokens": row["workload.prompt_tokens"],
                                 "output_tokens": row["workload.output_tokens"]})
    if row["error"] is not None:
        with pytest.raises(WorkloadInvalid) as refused:
            estimate(m, g, point, requested_gpu=gpu)
        assert row["error"] == str(refused.value)
        assert list(row) == list(KEYS)
        assert {k for k, v in row.items() if v is not None} == {*IDENTITY, "error"} - {"workload.mla_cache"}
        return
    expected = {**flatten(estimate(m, g, point, requested_gpu=gpu).model_dump(mode="json")), "error": None}
    for key in LEFT_OUT:  # explain and fixes: not in a sweep's rows
        expected.pop(key)
    assert list(row) == list(expected) == list(KEYS)
    for key, value in expected.items():
        if isinstance(value, float) and isinstance(row[key], float):
            assert math.isclose(row[key], value, rel_tol=1e-12), key
        else:
            assert row[key] == value, key


@pytest.mark.parametrize(("model", "gpu", "dtype", "tp", "profile"), COMBOS)
def test_sweep_rows_equal_estimate(shipped_catalog: Catalog, workload: Callable[..., InferenceWorkload], model: str,
                                   gpu: str, dtype: str, tp: int, profile: str) -> None:
    """Families of the shipped catalog the tiny one leaves out (falcon, phi-3, gpt2, deepseek-v2), so shipped."""
    w = workload(dtype=dtype, kv="fp16" if dtype == "fp16" else "bf16", tensor_parallel=tp, profile=profile)
    m, g = shipped_catalog.model(model), shipped_catalog.gpus.get(gpu)
    result = sweep([(m, g, w, gpu)], [1, 7, 64], [1, 1000, 32_768], [0, 256])
    assert result.size == 18
    for row in result.rows():
        _assert_row_is_estimate(row, m, g, w, gpu)


@pytest.mark.parametrize(("model", "gpu", "dtype", "tp", "profile"), [
    ("mistral-7b-v0.1", "h200", "fp32", 1, "hf"), ("qwen2.5-7b", "a100", "fp32", 2, "hf-graph"),
    ("gemma-2-9b", "h200", "fp32", 1, "hf-graph"), ("llama-3.1-8b", "h200", "bf16", 1, "hf"),
    ("qwen3-30b-a3b", "h200", "bf16", 2, "hf"), ("llama-3.1-8b", "h100", "bf16", 2, "optimized"),
    ("llama-3.1-70b", "h100", "bf16", 8, "megatron")])
def test_sweeps_under_the_shipped_profiles(shipped_catalog: Catalog, model: str, gpu: str, dtype: str, tp: int,
                                           profile: str) -> None:
    """Every shipped profile, its rows equal estimate's, assumptions included: the transformers profiles word figures
    of the point into them (the prefill's GEMM kernels, a host-bound phase's operations), so each row carries its
    own point's (sweep.words_point_figures); in fp32 grouped-query layers on the math kernel whose count follows the
    prompt (sliding windows) and the decode's attention timed as a walk over the cache once raised on the arrays."""
    fmt = shipped_catalog.formats.get(dtype)
    w = InferenceWorkload(batch=1, prompt_tokens=1, weight_format=fmt, kv_format=fmt, tensor_parallel=tp,
                          profile=shipped_catalog.profiles.get(profile))
    m, g = shipped_catalog.model(model), shipped_catalog.gpus.get(gpu)
    result = sweep([(m, g, w, gpu)], [1, 8], [128, 8192], [0, 64])
    assert result.size == 8
    for row in result.rows():
        _assert_row_is_estimate(row, m, g, w, gpu)


def test_sweep_grid_is_the_cartesian_product(catalog: Catalog, workload: Callable[..., InferenceWorkload]) -> None:
    result = sweep([(catalog.model("llama-3.1-8b"), catalog.gpus.get("h100"), workload(), "h100")],
                   [1, 2], [10, 20, 30], [5])
    points = [(r["workload.batch"], r["workload.prompt_tokens"], r["workload.output_tokens"]) for r in result.rows()]
    assert points == [(b, p, 5) for b in (1, 2) for p in (10, 20, 30)]


@pytest.mark.parametrize("update", [{"logits": "all"}, {"mla_cache": "latent"}, {"mla_cache": "decompressed"}])
def test_sweep_rows_equal_estimate_with_runtime_choices(shipped_catalog: Catalog,
                                                         workload: Callable[..., InferenceWorkload],
                                                         update: dict[str, str]) -> None:
    w = workload(profile="hf").model_copy(update=update)
    for model, gpu in (("deepseek-v2-lite", "h200"), ("gemma-2-9b", "a100")):
        m, g = shipped_catalog.model(model), shipped_catalog.gpus.get(gpu)
        for row in sweep([(m, g, w, gpu)], [1, 33], [1, 4097, 100_000], [0, 5000]).rows():
            _assert_row_is_estimate(row, m, g, w, gpu)


def test_a_point_beyond_exact_int64_memory_is_an_error_row(shipped_catalog: Catalog,
                                                             workload: Callable[..., InferenceWorkload]) -> None:
    # 405B: 126 layers × 8 KV heads × 256 elements × 2 B = 516,096 B of KV per token; × 10^6 sequences × 10^8 tokens
    # = 5.2 × 10^19 B per GPU, past 2^50 (and past int64); batch 1 at 10^8 tokens is 5.2 × 10^13 B, below it.
    m, g, w = shipped_catalog.model("llama-3.1-405b"), shipped_catalog.gpus.get("h100"), workload()
    result = sweep([(m, g, w, "h100")], [1, 1_000_000, 2], [1, 100_000_000], [0])
    rows = list(result.rows())
    assert [(r["workload.batch"], r["workload.prompt_tokens"]) for r in rows] == [
        (1, 1), (1, 100_000_000), (1_000_000, 1), (1_000_000, 100_000_000), (2, 1), (2, 100_000_000)]
    assert [r["error"] for r in rows] == [None, None, None, TOO_BIG, None, None]  # in grid order, one refused
    assert "2^50 bytes" in TOO_BIG
    assert {k for k, v in rows[3].items() if v is not None} == {*IDENTITY, "error"} - {"workload.mla_cache"}
    assert result.valid == 5 and result.size == 6
    for row in rows[:3] + rows[4:]:  # the points around the refused one are estimate's, in order
        _assert_row_is_estimate(row, m, g, w, "h100")


def test_an_invalid_degree_is_an_error_row_and_the_grid_goes_on(
        shipped_catalog: Catalog, workload: Callable[..., InferenceWorkload]) -> None:
    """qwen2.5-7b at TP 8 cannot split its heads: its points are rows with estimate's message, the rest goes on."""
    qwen, llama, h100 = (shipped_catalog.model("qwen2.5-7b"), shipped_catalog.model("llama-3.1-8b"),
                         shipped_catalog.gpus.get("h100"))
    items = [(m, h100, workload(tensor_parallel=tp), "h100") for m in (qwen, llama) for tp in (1, 8)]
    rows = list(sweep(items, [1, 4], [2048], [256]).rows())
    assert [(r["model.name"], r["workload.gpus"], r["error"]) for r in rows] == [
        ("qwen2.5-7b", 1, None), ("qwen2.5-7b", 1, None),
        ("qwen2.5-7b", 8, "tensor parallel 8 does not divide 28 attention heads"),
        ("qwen2.5-7b", 8, "tensor parallel 8 does not divide 28 attention heads"),
        ("llama-3.1-8b", 1, None), ("llama-3.1-8b", 1, None), ("llama-3.1-8b", 8, None), ("llama-3.1-8b", 8, None)]
    for row, (m, g, w, name) in zip(rows, [item for item in items for _ in range(2)], strict=True):
        _assert_row_is_estimate(row, m, g, w, name)


def test_max_context_tokens_capped_at_model_limit(shipped_catalog: Catalog,
                                                  workload: Callable[..., InferenceWorkload]) -> None:
    """Llama-2-7B's memory holds 126,943 tokens of context but its window is 4,096. The capped figure and the
    memory-only one travel together, with a note, in estimate and sweep alike."""
    from estimator.notes import NoteCode

    m, g = shipped_catalog.model("llama-2-7b"), shipped_catalog.gpus.get("h100")
    w = workload(dtype="bf16", kv="bf16", tensor_parallel=1, profile="optimized")
    point = w.model_copy(update={"batch": 1, "prompt_tokens": 2048, "output_tokens": 0})
    report = estimate(m, g, point, requested_gpu="h100")
    assert m.arch is not None and m.arch.max_position_embeddings == 4096
    assert report.memory.max_context_tokens == 4096  # min(memory's 126,943, the model's 4,096)
    assert report.memory.max_context_tokens_by_memory is not None
    assert report.memory.max_context_tokens_by_memory > 100_000  # far past the limit: the cap binds
    limits = [n for n in report.warnings if n.code is NoteCode.CONTEXT_LIMIT]
    assert [n.values["limit"] for n in limits] == [4096]
    row = next(sweep([(m, g, w, "h100")], [1], [2048], [0]).rows())
    assert row["memory.max_context_tokens"] == 4096
    assert row["memory.max_context_tokens_by_memory"] == report.memory.max_context_tokens_by_memory
    assert row["warnings"] == "; ".join(n.text for n in report.warnings)
    assert "capped at the model's max_position_embeddings 4,096" in row["warnings"]


def test_times_of_a_layout_that_does_not_fit_are_hypothetical(shipped_catalog: Catalog,
                                                               workload: Callable[..., InferenceWorkload]) -> None:
    """`deepseek-v3 --gpu rtx-4090` needs 64 GPUs; its "decode step 86.8 ms" must not read as one card's. The times
    stay (a user sizing a bigger layout reads them) but carry time.hypothetical and a note, in sweep rows too."""
    from estimator.notes import NoteCode

    m, g = shipped_catalog.model("deepseek-v3"), shipped_catalog.gpus.get("rtx-4090")
    w = workload(dtype="bf16", kv="bf16", tensor_parallel=1, profile="optimized")
    report = estimate(m, g, w.model_copy(update={"batch": 1, "prompt_tokens": 2048, "output_tokens": 0}),
                      requested_gpu="rtx-4090")
    assert not report.memory.fits
    assert report.time.hypothetical is True
    assert NoteCode.TIME_HYPOTHETICAL in {n.code for n in report.warnings}
    row = next(sweep([(m, g, w, "rtx-4090")], [1], [2048], [0]).rows())
    assert row["time.hypothetical"] == report.time.hypothetical
    assert row["warnings"] == "; ".join(n.text for n in report.warnings)
    small = shipped_catalog.model("llama-3.1-8b")
    fitting = estimate(small, shipped_catalog.gpus.get("h100"), w, requested_gpu="h100")
    assert fitting.memory.fits and fitting.time.hypothetical is False
    assert NoteCode.TIME_HYPOTHETICAL not in {n.code for n in fitting.warnings}


def test_fits_with_low_headroom_warns(shipped_catalog: Catalog, workload: Callable[..., InferenceWorkload]) -> None:
    """A "fits" with 0.9 % to spare is not silent: under 10 % of the card free (vLLM keeps 10 %) a warning
    says so, in estimate and in the sweep row at the same point."""
    from estimator.notes import NoteCode

    m, h100 = shipped_catalog.model("llama-3.1-8b"), shipped_catalog.gpus.get("h100")
    w = workload(dtype="bf16", kv="bf16", tensor_parallel=1, profile="optimized")
    point = w.model_copy(update={"batch": 1, "prompt_tokens": 2048, "output_tokens": 0})
    need = estimate(m, h100, point, requested_gpu="h100").memory.per_gpu_bytes
    for capacity, low in ((need * 105 // 100, True), (need * 2, False)):  # ~4.8 % and 50 % free
        g = h100.with_memory(capacity)
        report = estimate(m, g, point, requested_gpu="h100")
        mem = report.memory
        assert mem.fits and (10 * mem.headroom_bytes < mem.capacity_bytes) is low
        codes = [n for n in report.warnings if n.code is NoteCode.LOW_HEADROOM]
        assert [n.values for n in codes] == ([{"headroom_bytes": mem.headroom_bytes,
                                               "capacity_bytes": mem.capacity_bytes}] if low else [])
        row = next(sweep([(m, g, w, "h100")], [1], [2048], [0]).rows())
        assert row["warnings"] == "; ".join(n.text for n in report.warnings)


@pytest.mark.parametrize(("model", "gpu", "dtype", "tp", "profile"), [
    ("llama-3.1-70b", "h100", "bf16", 4, "optimized"), ("mixtral-8x7b", "a100", "awq-int4", 2, "optimized"),
    ("llama-3.1-405b", "l4", "gptq-int4", 8, "optimized"), ("gemma-2-9b", "h200", "bf16", 2, "hf"),
    ("qwen3-30b-a3b", "h200", "bf16", 1, "optimized")])
def test_long_batch_axes_equal_estimate(shipped_catalog: Catalog, workload: Callable[..., InferenceWorkload],
                                        model: str, gpu: str, dtype: str, tp: int, profile: str) -> None:
    """68 batches per (prompt, output) pair: the fewest GPUs are searched along the batch axis (capacity's
    `_fits_by_batch`) and the longest context over many open pieces at once (`_walk_batched`); rows still equal
    estimate's, point by point."""
    w = workload(dtype=dtype, kv="bf16", tensor_parallel=tp, profile=profile)
    m, g = shipped_catalog.model(model), shipped_catalog.gpus.get(gpu)
    result = sweep([(m, g, w, gpu)], list(range(1, 4097, 61)), [1000, 32_768], [0, 70_000])
    assert result.size == 68 * 2 * 2
    rows = list(result.rows())
    assert len({r["memory.gpus_required"] for r in rows}) > 1  # the search has something to find
    for row in rows:
        _assert_row_is_estimate(row, m, g, w, gpu)


def test_a_sweep_column_must_be_a_report_field() -> None:
    np = pytest.importorskip("numpy")
    assert list(report_columns(np, "time", {"prefill_s": 1.0, "bound": None}, 3)) == ["time.prefill_s"]
    with pytest.raises(AssertionError, match=r"time\.prefil_s is no field"):
        report_columns(np, "time", {"prefil_s": 1.0}, 3)
