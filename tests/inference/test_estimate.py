"""estimate(): the Report for the reference cases and its invariants."""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest

from estimator import InferenceWorkload, estimate
from estimator.catalog.registry import Catalog
from estimator.errors import WorkloadInvalid
from estimator.model.footprint import prefill_shape
from estimator.notes import NoteCode

Make = Callable[..., InferenceWorkload]


def test_generic_70b_fp16_on_a100(catalog: Catalog, make_workload: Make) -> None:
    report = estimate(catalog.model("70b"), catalog.gpus.get("a100"), make_workload(dtype="fp16", kv="fp16"),
                      requested_gpu="a100")
    assert report.gpu.name == "NVIDIA A100 SXM4 80GB"
    assert report.gpu.requested_as == "a100"
    assert report.memory.weights_bytes == 140_000_000_000  # 70e9 × 2 B
    assert not report.memory.fits
    assert report.memory.gpus_required == 2
    assert report.time.decode_step_bound_s == pytest.approx(140e9 / 2039e9, rel=1e-12)  # 68.7 ms
    assert report.memory.kv_cache_bytes is None
    assert report.memory.activation_bytes is None
    assert NoteCode.SIZE_ONLY_NO_KV in {w.code for w in report.warnings}


def test_llama_8b_batch_64_kv_and_weights(catalog: Catalog, make_workload: Make) -> None:
    w = make_workload(batch=64, prompt_tokens=2048, output_tokens=1)
    report = estimate(catalog.models.get("llama-3.1-8b"), catalog.gpus.get("h200"), w)
    assert report.memory.kv_cache_bytes == 64 * 2049 * 131_072
    assert report.memory.weights_bytes == 16_060_522_496
    assert report.memory.fits
    assert report.time.bound == "memory"


def test_total_is_the_sum_of_terms(shipped_catalog: Catalog, make_workload: Make) -> None:
    r = estimate(shipped_catalog.models.get("qwen2.5-7b"), shipped_catalog.gpus.get("l40s"), make_workload(batch=4))
    m = r.memory
    assert m.kv_cache_bytes is not None and m.activation_bytes is not None
    assert m.total_bytes == m.weights_bytes + m.kv_cache_bytes + m.activation_bytes + m.overhead_bytes
    assert m.headroom_bytes == m.capacity_bytes - m.per_gpu_bytes


def test_tensor_parallel_splits_weights(catalog: Catalog, make_workload: Make) -> None:
    model, gpu = catalog.models.get("llama-3.1-70b"), catalog.gpus.get("h100")
    one = estimate(model, gpu, make_workload())
    four = estimate(model, gpu, make_workload(tensor_parallel=4))
    assert four.memory.per_gpu_bytes < one.memory.per_gpu_bytes / 3
    assert four.memory.fits and not one.memory.fits
    assert one.memory.gpus_required == 2
    assert four.time.communication_s > 0


def test_tensor_parallel_must_divide_heads(catalog: Catalog, make_workload: Make) -> None:
    with pytest.raises(WorkloadInvalid, match="does not divide 32 attention heads"):
        estimate(catalog.models.get("llama-3.1-8b"), catalog.gpus.get("h100"), make_workload(tensor_parallel=3))


def test_bound_never_exceeds_expected(catalog: Catalog, make_workload: Make) -> None:
    for profile in ("optimized", "hf"):
        r = estimate(catalog.models.get("llama-3.1-8b"), catalog.gpus.get("rtx-4090"), make_workload(profile=profile))
        assert r.time.decode_step_s is not None and r.time.decode_step_bound_s is not None
        assert r.time.decode_step_bound_s <= r.time.decode_step_s
        assert r.time.prefill_bound_s <= r.time.prefill_s


def test_encoder_reports_no_decode(catalog: Catalog, make_workload: Make) -> None:
    r = estimate(catalog.models.get("bert-base"), catalog.gpus.get("t4"), make_workload(dtype="fp16", kv="fp16",
                                                                                      prompt_tokens=512))
    assert r.memory.kv_cache_bytes == 0
    assert r.time.decode_step_s is None
    assert [w.values for w in r.warnings if w.code is NoteCode.ENCODER] == [{"model": "bert-base"}]


def test_dtype_without_tensor_rate_falls_back(catalog: Catalog, make_workload: Make) -> None:
    r = estimate(catalog.models.get("llama-3.1-8b"), catalog.gpus.get("v100"), make_workload())
    assert r.gpu.compute_dtype == "fp16"
    assert [w.values for w in r.warnings if w.code is NoteCode.COMPUTE_FALLBACK] == [
        {"gpu": r.gpu.name, "wanted": "bf16", "used": "fp16"}]


def test_quantized_decode_reads_fewer_bytes(catalog: Catalog, make_workload: Make) -> None:
    model, gpu = catalog.models.get("llama-3.1-8b"), catalog.gpus.get("rtx-4090")
    bf16 = estimate(model, gpu, make_workload())
    awq = estimate(model, gpu, make_workload(dtype="awq-int4"))
    assert awq.time.decode_step_bound_s is not None and bf16.time.decode_step_bound_s is not None
    assert awq.time.decode_step_bound_s < 0.45 * bf16.time.decode_step_bound_s
    assert awq.gpu.compute_dtype == "fp16"  # W4A16 kernels compute in 16 bit


def test_prefill_chunking_shape() -> None:
    assert prefill_shape(64, 2048, None) == (64, 2048)
    assert prefill_shape(64, 2048, 8192) == (4, 2048)
    assert prefill_shape(1, 32768, 8192) == (1, 8192)
    assert prefill_shape(2, 1000, 8192) == (2, 1000)


def test_report_has_no_nan(catalog: Catalog, make_workload: Make) -> None:
    r = estimate(catalog.models.get("deepseek-v3"), catalog.gpus.get("h200"), make_workload(dtype="fp8"))
    for value in r.time.model_dump().values():
        assert not (isinstance(value, float) and not math.isfinite(value))


def test_mixtral_decode_experts_read(catalog: Catalog, make_workload: Make) -> None:
    model, gpu = catalog.models.get("mixtral-8x7b"), catalog.gpus.get("h200")
    one = estimate(model, gpu, make_workload(batch=1)).time.experts_read_per_layer
    many = estimate(model, gpu, make_workload(batch=64)).time.experts_read_per_layer
    assert one == pytest.approx(2.0)  # 8 × (1 − (1 − 2/8)¹)
    assert many == pytest.approx(8 * (1 - 0.75**64))  # 7.99999...
    assert many is not None and many > 7.99


def test_report_carries_each_term_per_gpu(catalog: Catalog, make_workload: Make) -> None:
    w = make_workload(batch=2, prompt_tokens=1000, output_tokens=24, tensor_parallel=4)
    mem = estimate(catalog.model("llama-3.1-70b"), catalog.gpus.get("h100"), w).memory
    # KV: 80 layers × (8 KV heads ÷ 4 ranks) × 128 dims × 2 (K, V) × 2 B = 81,920 B per token per GPU;
    # × 1,024 tokens × 2 sequences = 167,772,160 B on each GPU, × 4 GPUs in all
    assert mem.kv_cache_per_gpu_bytes == 167_772_160
    assert mem.kv_cache_bytes == 4 * 167_772_160
    assert [(kv.bytes, kv.total_bytes) for kv in mem.kv_by_window] == [(167_772_160, 671_088_640)]
    assert mem.activation_per_gpu_bytes is not None and mem.activation_bytes == 4 * mem.activation_per_gpu_bytes
    assert mem.overhead_bytes == 4 * mem.overhead_per_gpu_bytes
    assert mem.per_gpu_bytes == (mem.weights_per_gpu_bytes + mem.kv_cache_per_gpu_bytes
                                 + mem.activation_per_gpu_bytes + mem.overhead_per_gpu_bytes)


def test_report_carries_the_roofline_points(catalog: Catalog, make_workload: Make) -> None:
    t = estimate(catalog.model("70b"), catalog.gpus.get("a100"), make_workload()).time
    # size-only model: prefill 2 × 70e9 FLOPs × 2,048 tokens over 140e9 weight bytes = 2,048 FLOP/B exactly;
    # a decode step 2 × 70e9 FLOPs over the same 140e9 bytes = 1 FLOP/B
    assert t.prefill_flop_per_byte == 2048.0
    assert t.decode_flop_per_byte == 1.0
    assert t.prefill_flop_per_s_per_gpu == pytest.approx(t.prefill_flops / t.prefill_s, rel=1e-12)  # one GPU
    assert t.decode_flops is not None and t.decode_step_s is not None
    assert t.decode_flop_per_s_per_gpu == pytest.approx(t.decode_flops / t.decode_step_s, rel=1e-12)
    encoder = estimate(catalog.models.get("bert-base"), catalog.gpus.get("t4"), make_workload(dtype="fp16", kv="fp16"))
    assert encoder.time.decode_flop_per_byte is None and encoder.time.decode_flop_per_s_per_gpu is None


def test_flat_int4_and_prefill_chunk_are_said(shipped_catalog: Catalog, make_workload: Make) -> None:
    """--dtype int4 (4 bits, no scales) gets a warning pointing to the grouped formats, and the optimized profile's
    8,192-token prefill chunk is listed as an assumption, not left in its YAML."""
    m, g = shipped_catalog.model("llama-3.1-8b"), shipped_catalog.gpus.get("h100")
    flat = estimate(m, g, make_workload(dtype="int4", profile="optimized"), requested_gpu="h100")
    notes = [n for n in flat.warnings if n.code is NoteCode.FLAT_FORMAT]
    assert [n.values for n in notes] == [{"format": "int4", "bits": 4}]
    assert "gptq-int4" in notes[0].text
    chunks = [n.values for n in flat.assumptions if n.code is NoteCode.PREFILL_CHUNK]
    assert chunks == [{"tokens": 8192}]  # specs/profiles/optimized.yaml: prefill_chunk_tokens 8192
    grouped = estimate(m, g, make_workload(dtype="gptq-int4", profile="hf"), requested_gpu="h100")
    assert NoteCode.FLAT_FORMAT not in {n.code for n in grouped.warnings}
    assert NoteCode.PREFILL_CHUNK not in {n.code for n in grouped.assumptions}  # hf prefills the whole prompt


@pytest.mark.parametrize(("model", "tp", "batch"), [("llama-3.1-8b", 1, 8), ("mixtral-8x7b", 2, 64),
                                                     ("gemma-2-9b", 1, 4), ("deepseek-v3", 8, 16)])
def test_without_capacity_searches_only_the_two_searched_figures_are_missing(
        catalog: Catalog, make_workload: Make, model: str, tp: int, batch: int) -> None:
    # the planner's probes skip the max-batch and max-context searches; every other figure is the same report's
    w = make_workload(batch=batch, tensor_parallel=tp, prompt_tokens=4096, output_tokens=256)
    full = estimate(catalog.model(model), catalog.gpus.get("h100"), w).model_dump()
    lean = estimate(catalog.model(model), catalog.gpus.get("h100"), w, capacity_searches=False).model_dump()
    searched = ("max_batch", "max_context_tokens", "max_context_tokens_by_memory")
    assert [lean["memory"][k] for k in searched] == [None, None, None]
    assert full["memory"]["max_batch"] is not None
    for k in searched:
        full["memory"].pop(k), lean["memory"].pop(k)
    full["warnings"] = tuple(n for n in full["warnings"] if n["code"] != NoteCode.CONTEXT_LIMIT.value)
    assert lean == full
