"""An fp32 prefill's GEMMs one by one (issue 15, item 23: estimator.model.gemms, the hf profiles' fp32_gemm)."""

from __future__ import annotations

import pytest

from estimator import InferenceWorkload, default_catalog
from estimator.catalog.architecture import Architecture, Attention, Mlp
from estimator.catalog.profiles import GemmRoofline
from estimator.model.compute import math_attention_flops, prefill_matmul_flops
from estimator.model.gemms import Gemm, gemms_s, prefill_gemms
from estimator.model.phases import prefill_cost
from estimator.model.timing import Hardware, phase_time
from tests.benchmark_modules import benchmark


def _arch(heads: int = 8, kv_heads: int = 2, tied: bool = False) -> Architecture:
    return Architecture(model_type="llama", hidden_size=512, num_layers=2, vocab_size=1000,
                        tie_word_embeddings=tied,
                        attention=Attention(num_heads=heads, num_kv_heads=kv_heads, head_dim=64, v_head_dim=64),
                        mlp=Mlp(intermediate_size=1024, gated=True))


def test_the_gemms_are_the_inventory_s_linear_layers() -> None:
    # batch 3 × 100 tokens; q 512→512, k and v 512→128, o 512→512, gate and up 512→1024, down 1024→512 in 2 layers;
    # the LM head once per sequence (last logits)
    gemms = prefill_gemms(_arch(), 3, 100, logits_positions=1, tp=1, math_attention=False)
    assert gemms == (Gemm(300, 512, 512, 2), Gemm(300, 512, 128, 2), Gemm(300, 512, 128, 2),
                     Gemm(300, 512, 512, 2), Gemm(300, 512, 1024, 2), Gemm(300, 512, 1024, 2),
                     Gemm(300, 1024, 512, 2), Gemm(3, 512, 1000, 1))
    assert sum(g.flops for g in gemms) == prefill_matmul_flops(_arch(), 3, 100, logits_positions=1)


def test_tied_heads_math_kernel_and_tensor_parallel() -> None:
    tied = prefill_gemms(_arch(tied=True), 1, 64, logits_positions=64, tp=1, math_attention=True)
    assert tied is not None and tied[-3] == Gemm(64, 512, 1000, 1)  # the tied head still multiplies every position
    # the math kernel's QKᵀ and PV: 8 heads of one sequence, 64 × 64 scores over head_dim 64, per layer
    assert tied[-2:] == (Gemm(64, 64, 64, 2, 8), Gemm(64, 64, 64, 2, 8))
    assert sum(g.flops for g in tied[-2:]) == math_attention_flops(_arch(), 1, 64)
    split = prefill_gemms(_arch(), 1, 64, logits_positions=1, tp=2, math_attention=False)
    assert split is not None and split[0] == Gemm(64, 512, 256, 2) and split[3] == Gemm(64, 256, 512, 2)
    assert sum(g.flops for g in split) * 2 == prefill_matmul_flops(_arch(), 1, 64, logits_positions=1)


def test_a_model_with_routed_experts_keeps_the_flop_share() -> None:
    qwen3_moe = default_catalog().models.get("qwen3-30b-a3b").arch
    assert qwen3_moe is not None
    assert prefill_gemms(qwen3_moe, 1, 128, logits_positions=1, tp=1, math_attention=False) is None


def test_one_gemm_is_its_kernel_time_plus_the_longer_of_flops_and_bytes() -> None:
    spec = GemmRoofline(kernel_s=4e-6, flop_efficiency=0.5, bandwidth_efficiency=0.25)
    # 128 × 512 by 512 × 128: 16,777,216 FLOPs at 1e13 × 0.5 = 3.36 µs; (65,536 + 65,536 + 16,384) × 4 B at 1e12 ×
    # 0.25 = 2.36 µs: the FLOPs, twice over, plus the kernel twice
    small = Gemm(128, 512, 128, 2)
    assert gemms_s((small,), spec, 1e13, 1e12, 4) == pytest.approx(2 * (4e-6 + 16_777_216 / 5e12), rel=1e-12)
    # 8 pairs of a 4,096 × 64 by 64 × 4,096 product (the math kernel's QKᵀ): 17.2 GFLOPs, 3.44 ms, over its 2.2 ms
    # of bytes (mostly the scores' write)
    scores = Gemm(4096, 64, 4096, 1, 8)
    assert gemms_s((scores,), spec, 1e13, 1e12, 4) == pytest.approx(4e-6 + 8 * 2 * 4096 * 64 * 4096 / 5e12, rel=1e-12)
    # a thin one, 16,384 rows through 64 × 64: 26.8 µs of FLOPs under 33.6 µs of bytes
    thin = Gemm(16384, 64, 64, 1)
    byte_s = (16384 * 64 + 64 * 64 + 16384 * 64) * 4 / 2.5e11
    assert byte_s > 2 * 16384 * 64 * 64 / 5e12
    assert gemms_s((thin,), spec, 1e13, 1e12, 4) == pytest.approx(4e-6 + byte_s, rel=1e-12)


def _rt(dtype: str) -> InferenceWorkload:
    catalog = default_catalog()
    fmt = catalog.formats.get(dtype)
    return InferenceWorkload(batch=1, prompt_tokens=128, output_tokens=1, weight_format=fmt, kv_format=fmt,
                             profile=catalog.profiles.get("hf"))


def test_only_fp32_prefills_are_timed_by_shape() -> None:
    hf = default_catalog().profiles.get("hf")
    assert hf.fp32_gemm == GemmRoofline(kernel_s=4e-6, flop_efficiency=0.70, bandwidth_efficiency=0.25)
    fp32 = prefill_cost(_arch(), _rt("fp32"), 1, 1, 100, 101, 0)
    bf16 = prefill_cost(_arch(), _rt("bf16"), 1, 1, 100, 101, 0)
    assert bf16.gemms == () and len(fp32.gemms) == 10  # 7 projections, the head, the math kernel's two
    hw = Hardware(1e15, 4.8e12, "HBM3e", None, 1, 6.69e13)
    t = phase_time(fp32, hw, hf)
    assert t.compute_s == pytest.approx(gemms_s(fp32.gemms, hf.fp32_gemm, 6.69e13, 4.8e12, 4), rel=1e-12)
    assert t.bound_s == phase_time(fp32, hw, hf.model_copy(update={"fp32_gemm": None})).bound_s


def test_the_shipped_figures_are_the_script_s_fit() -> None:
    """benchmarks/prefill_gemm.py's grid over the fit rows gives the profiles' figures; the check rows, GEMMs of
    other widths and head dims, lie within a median 10% (linear) and 13% (the math kernel's batched GEMMs)."""
    probe = benchmark("prefill_gemm")
    measured = probe.rows()
    assert len(measured) == 128 * 2 + 180
    spec = probe.fit([r for r in measured if r["split"] == "fit"])
    catalog = default_catalog()
    assert catalog.profiles.get("hf").fp32_gemm == spec == catalog.profiles.get("hf-graph").fp32_gemm
    for kind, limit in (("linear", 0.10), ("bmm", 0.13)):
        check = [r for r in measured if r["split"] == "check" and r["kind"] == kind]
        assert probe.median_abs(probe.errors(check, spec)) < limit
