"""A 16-bit prefill on PyTorch's math SDPA kernel (Falcon's one KV head handed to SDPA with a mask): the kernel
converts its fp32 probabilities back to the inputs' dtype (`compute.math_sdpa_pass_bytes`), and its KV copies and fp32
batched GEMMs are those of a decode step with every prompt position as a query row
(`attention_kernels.unexpanded_math_work`) — against PyTorch's own composite."""

from __future__ import annotations

from pathlib import Path

import pytest

from estimator import default_catalog, estimate
from estimator.catalog.architecture import Architecture
from estimator.inference.workload import InferenceWorkload
from estimator.model.attention_kernels import unexpanded_math_work
from estimator.model.compute import MATH_SDPA_PASS_BYTES_PER_SCORE, math_sdpa_pass_bytes
from estimator.model.gemms import Gemm
from estimator.model.phases import prefill_cost
from estimator.model.timing import Hardware, phase_time
from tests.lab_modules import lab_module

EXTRA = Path(__file__).resolve().parents[1] / "data" / "measured" / "h200-2026-11-30-extra.jsonl"


def _falcon() -> Architecture:
    arch = default_catalog().models.get("falcon-7b").arch
    assert arch is not None and arch.attention.unexpanded_kv_with_mask
    return arch


def test_sixteen_bit_inputs_add_the_probabilities_copy() -> None:
    assert math_sdpa_pass_bytes(4) == MATH_SDPA_PASS_BYTES_PER_SCORE == 38
    assert math_sdpa_pass_bytes(2) == 38 + 4 + 2  # read the fp32 probabilities, write them in 16 bits


def test_pytorch_math_kernel_converts_its_probabilities_back() -> None:
    """PyTorch's composite (the one every device runs): from bf16 inputs the b × heads × s × s fp32 probabilities
    are copied to bf16 before PV; from fp32 inputs no copy of that size is made."""
    torch = pytest.importorskip("torch")
    from torch.profiler import ProfilerActivity, profile

    b, heads, s, d = 2, 8, 24, 16

    def copies(dtype: object) -> list[list[int]]:
        q = torch.randn(b, heads, s, d, dtype=dtype)
        k, v = (torch.randn(b, 1, s, d, dtype=dtype) for _ in range(2))
        mask = torch.zeros(b, 1, s, s, dtype=dtype)
        with torch.inference_mode(), profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
            torch.ops.aten._scaled_dot_product_attention_math(q, k, v, attn_mask=mask)
        return [e.input_shapes[0] for e in prof.events() if e.name == "aten::_to_copy"]

    assert [b, heads, s, s] in copies(torch.bfloat16)
    assert [b, heads, s, s] not in copies(torch.float32)


def test_falcon_prefill_times_the_math_gemms_and_copies_by_shape() -> None:
    catalog = default_catalog()
    hf = catalog.profiles.get("hf")
    copies, gemms = unexpanded_math_work(_falcon(), hf, 1, 2, 512, queries=512)
    # 32 layers × 2 sequences × 71 heads × 512 positions × (64 key + 64 value elements)
    assert copies == 32 * 2 * 71 * 512 * 128
    assert gemms == (Gemm(m=512, k=64, n=512, count=32, batch=2 * 71), Gemm(m=512, k=512, n=64, count=32, batch=2 * 71))
    fmt = catalog.formats.get("bf16")
    w = InferenceWorkload(batch=2, prompt_tokens=512, output_tokens=0, weight_format=fmt, kv_format=fmt, profile=hf)
    prefill = prefill_cost(_falcon(), w, 1, 2, 512, 512, 0.0)
    assert prefill.math_gemms == gemms and prefill.math_kv_copy_elements == copies
    assert not any(g.batch > 1 for g in prefill.gemms)  # the math GEMMs are not also in the linear list


def test_the_math_kernel_is_its_own_part_of_the_time() -> None:
    """--explain names the math kernel's copies and GEMMs apart from the KV read they once hid in, and the parts still
    sum to the GPU time."""
    catalog = default_catalog()
    fmt = catalog.formats.get("bf16")
    w = InferenceWorkload(batch=1, prompt_tokens=2048, output_tokens=1, weight_format=fmt, kv_format=fmt,
                          profile=catalog.profiles.get("hf"))
    report = estimate(catalog.models.get("falcon-7b"), catalog.gpus.get("h200"), w)
    lines = [n.text for n in report.explain if "expected (hf)" in n.text]
    assert len(lines) == 2 and all("math-kernel attention (fp32 KV copies and GEMMs)" in line for line in lines)
    prefill = prefill_cost(_falcon(), w, 1, 1, 2048, 2049, 16 * 2**20)  # its KV cache: 16 MiB
    t = phase_time(prefill, Hardware(989.4e12, 4.8e12, "HBM3e", None, 1, fp32_flop_per_s=67e12), w.profile)
    assert t.math_s > t.kv_s > 0
    parts = t.compute_s + t.elementwise_s + t.kv_s + t.math_s + t.fixed_s + t.prologue_s
    assert t.gpu_s == pytest.approx(parts, rel=1e-12)  # the same sum in another order (float rounding only)


def test_falcon_prefills_on_the_h200() -> None:
    """falcon-7b's HF prefills at 2,048 tokens (batch 1 and 8; −20.7% and −19.3% before this term) within the ±15%
    prefill target of docs/accuracy.md. Not blind: these rows showed the miss. The 8,192-token row (−17.8%) is still
    outside it and not asserted here (docs/accuracy.md, *Prefill time*, names the miss)."""
    reference_points = lab_module("accuracy.reference_points")
    found = {p.case: p for p in reference_points.points(EXTRA) if p.term == "prefill_s hf"
             and p.case.startswith("falcon-7b")}
    for case in ("falcon-7b prefill b1 s2048 logits=last", "falcon-7b prefill b8 s2048 logits=last"):
        assert abs(found[case].error) < 0.15, (case, found[case].error)
