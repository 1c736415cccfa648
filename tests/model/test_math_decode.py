"""A decode step on PyTorch's math SDPA kernel (Falcon's one KV head handed to SDPA with a mask): the kernel's matmuls
copy K and V once per query head in fp32, then run batched fp32 GEMMs of one query row
(model.attention_kernels.unexpanded_math_work) — against PyTorch's own composite and the H200's falcon-7b decodes."""

from __future__ import annotations

from pathlib import Path

import pytest

from estimator import default_catalog, estimate
from estimator.catalog.architecture import Architecture
from estimator.inference.workload import InferenceWorkload
from estimator.model.attention_kernels import unexpanded_math_work
from estimator.model.gemms import Gemm
from tests.lab_modules import lab_module

EXTRA = Path(__file__).resolve().parents[1] / "data" / "measured" / "h200-2026-11-30-extra.jsonl"


def _falcon() -> Architecture:
    arch = default_catalog().models.get("falcon-7b").arch
    assert arch is not None and arch.attention.unexpanded_kv_with_mask
    return arch


def test_falcon_copies_its_kv_head_per_query_head_in_every_layer() -> None:
    catalog = default_catalog()
    copies, gemms = unexpanded_math_work(_falcon(), catalog.profiles.get("hf"), 1, 16, 4096)
    # 32 layers × 16 sequences × 71 heads × 4,096 positions × (64 key + 64 value elements)
    assert copies == 32 * 16 * 71 * 4096 * 128
    assert gemms == (Gemm(m=1, k=64, n=4096, count=32, batch=16 * 71), Gemm(m=1, k=4096, n=64, count=32, batch=16 * 71))


def test_only_the_math_kernel_and_only_under_transformers() -> None:
    catalog = default_catalog()
    llama = catalog.models.get("llama-3.1-8b").arch
    assert llama is not None
    assert unexpanded_math_work(llama, catalog.profiles.get("hf"), 1, 16, 4096) == (0.0, ())
    assert unexpanded_math_work(_falcon(), catalog.profiles.get("optimized"), 1, 16, 4096) == (0.0, ())


def test_pytorch_math_kernel_copies_the_broadcast_kv_head_in_fp32() -> None:
    """The mechanism itself, from PyTorch's composite (the one every device runs): a bf16 query of 71 heads against
    one KV head clones K and V to 71 heads in fp32 before each batched GEMM."""
    torch = pytest.importorskip("torch")
    from torch.profiler import ProfilerActivity, profile

    b, heads, ctx, d = 2, 71, 48, 64
    q = torch.randn(b, heads, 1, d, dtype=torch.bfloat16)
    k, v = (torch.randn(b, 1, ctx, d, dtype=torch.bfloat16) for _ in range(2))
    mask = torch.ones(b, 1, 1, ctx, dtype=torch.bool)
    with torch.inference_mode(), profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        torch.ops.aten._scaled_dot_product_attention_math(q, k, v, attn_mask=mask)
    clones = [e.input_shapes[0] for e in prof.events() if e.name == "aten::clone"]
    bmms = [e.input_shapes for e in prof.events() if e.name == "aten::bmm"]
    assert clones == [[b, heads, d, ctx], [b, heads, ctx, d]]  # K (transposed) and V, one copy per query head
    assert bmms == [[[b * heads, 1, d], [b * heads, d, ctx]], [[b * heads, 1, ctx], [b * heads, ctx, d]]]


def test_falcon_decodes_on_the_h200() -> None:
    """falcon-7b's eager decodes at 16 × 4,096 and 64 × 2,048 (measured before this term: the estimate read −75% and
    −86%, the host's floor alone) within ±10%; batch 1 stays host-bound."""
    reference_points = lab_module("accuracy.reference_points")
    found = {p.case: p for p in reference_points.points(EXTRA) if p.term == "decode_step_s hf eager"
             and p.case.startswith("falcon-7b")}
    for case in ("falcon-7b hf decode b16 ctx4096", "falcon-7b hf decode b64 ctx2048"):
        assert abs(found[case].error) < 0.10, (case, found[case].error)


def test_the_math_kernel_reads_the_cache_once_and_walks_no_tiles() -> None:
    """The step's KV term on the math kernel is one read of the cache (the upcast) beside the copies and GEMMs,
    not the decode kernel's tile walks, and the report says which kernel runs (one decode note, the math one)."""
    catalog = default_catalog()
    fmt = catalog.formats.get("bf16")
    workload = InferenceWorkload(batch=16, prompt_tokens=4096, output_tokens=1, weight_format=fmt, kv_format=fmt,
                                 profile=catalog.profiles.get("hf"))
    report = estimate(catalog.models.get("falcon-7b"), catalog.gpus.get("h200"), workload)
    codes = [n.code.value for n in report.assumptions]
    assert "decode-math-attention" in codes and "decode-attention" not in codes
