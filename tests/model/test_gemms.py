"""An fp32 prefill's GEMMs one by one (estimator.model.gemms, the hf profiles' fp32_gemm)."""

from __future__ import annotations

import pytest

from estimator import InferenceWorkload, default_catalog
from estimator.catalog.architecture import Architecture, Attention, Mlp
from estimator.catalog.profiles import GemmRoofline
from estimator.model.compute import math_attention_flops, prefill_matmul_flops
from estimator.model.gemms import Gemm, gemms_s, prefill_gemms
from estimator.model.phases import prefill_cost
from estimator.model.timing import Hardware, phase_time
from tests.lab_modules import lab_module


def _arch(heads: int = 8, kv_heads: int = 2, tied: bool = False) -> Architecture:
    return Architecture(model_type="llama", hidden_size=512, num_layers=2, vocab_size=1000,
                        tie_word_embeddings=tied,
                        attention=Attention(num_heads=heads, num_kv_heads=kv_heads, head_dim=64, v_head_dim=64),
                        mlp=Mlp(intermediate_size=1024, gated=True))


def test_the_gemms_are_the_inventory_s_linear_layers() -> None:
    # batch 3 × 100 tokens; q 512→512, k and v 512→128, o 512→512, gate and up 512→1024, down 1024→512 in 2 layers;
    # the LM head once per sequence (last logits)
    gemms = prefill_gemms(_arch(), 3, 100, logits_positions=1, tp=1, math_layers=0)
    assert gemms == (Gemm(300, 512, 512, 2), Gemm(300, 512, 128, 2), Gemm(300, 512, 128, 2),
                     Gemm(300, 512, 512, 2), Gemm(300, 512, 1024, 2), Gemm(300, 512, 1024, 2),
                     Gemm(300, 1024, 512, 2), Gemm(3, 512, 1000, 1))
    assert sum(g.flops for g in gemms) == prefill_matmul_flops(_arch(), 3, 100, logits_positions=1)


def test_tied_heads_math_kernel_and_tensor_parallel() -> None:
    tied = prefill_gemms(_arch(tied=True), 1, 64, logits_positions=64, tp=1, math_layers=2)
    assert tied is not None and tied[-3] == Gemm(64, 512, 1000, 1)  # the tied head still multiplies every position
    # the math kernel's QKᵀ and PV: 8 heads of one sequence, 64 × 64 scores over head_dim 64, per layer
    assert tied[-2:] == (Gemm(64, 64, 64, 2, 8), Gemm(64, 64, 64, 2, 8))
    assert sum(g.flops for g in tied[-2:]) == math_attention_flops(_arch(), 1, 64)
    split = prefill_gemms(_arch(), 1, 64, logits_positions=1, tp=2, math_layers=0)
    assert split is not None and split[0] == Gemm(64, 512, 256, 2) and split[3] == Gemm(64, 256, 512, 2)
    assert sum(g.flops for g in split) * 2 == prefill_matmul_flops(_arch(), 1, 64, logits_positions=1)


def test_a_model_with_routed_experts_keeps_the_flop_share() -> None:
    qwen3_moe = default_catalog().models.get("qwen3-30b-a3b").arch
    assert qwen3_moe is not None
    assert prefill_gemms(qwen3_moe, 1, 128, logits_positions=1, tp=1, math_layers=0) is None


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


def test_each_dtype_s_prefill_gemms_by_shape() -> None:
    hf = default_catalog().profiles.get("hf")
    assert hf.fp32_gemm == GemmRoofline(kernel_s=4e-6, flop_efficiency=0.70, bandwidth_efficiency=0.25)
    assert hf.gemm == GemmRoofline(kernel_s=4e-6, flop_efficiency=0.78, bandwidth_efficiency=0.65)
    fp32 = prefill_cost(_arch(), _rt("fp32"), 1, 1, 100, 101, 0)
    bf16 = prefill_cost(_arch(), _rt("bf16"), 1, 1, 100, 101, 0)
    assert len(fp32.gemms) == 10  # 7 projections, the head, the math kernel's two (8 heads over 2 KV heads)
    assert len(bf16.gemms) == 8  # flash attention: the projections and the head
    hw = Hardware(1e15, 4.8e12, "HBM3e", None, 1, 6.69e13)
    t = phase_time(fp32, hw, hf)
    assert t.compute_s == pytest.approx(gemms_s(fp32.gemms, hf.fp32_gemm, 6.69e13, 4.8e12, 4), rel=1e-12)
    assert t.bound_s == phase_time(fp32, hw, hf.model_copy(update={"fp32_gemm": None})).bound_s
    half = phase_time(bf16, hw, hf)
    assert half.compute_s == pytest.approx(gemms_s(bf16.gemms, hf.gemm, 1e15, 4.8e12, 2)
                                           + bf16.attention_flops / (1e15 * hf.attention_flop_efficiency), rel=1e-12)


def test_quantized_weights_keep_the_flop_share() -> None:
    catalog = default_catalog()
    fmt = catalog.formats.get("int8")
    rt = InferenceWorkload(batch=1, prompt_tokens=128, output_tokens=1, weight_format=fmt,
                           kv_format=catalog.formats.get("bf16"), profile=catalog.profiles.get("hf"))
    assert prefill_cost(_arch(), rt, 1, 1, 100, 101, 0).gemms == ()


@pytest.mark.lab  # a grid search over the probe rows (about 45 s): lab-only
def test_the_shipped_figures_are_the_script_s_fit() -> None:
    """lab/fit/gemm.py's grid over the fit rows gives the profiles' figures; the check rows, GEMMs of
    other widths and head dims, lie within a median 10% (fp32 linear), 13% (the math kernel's batched GEMMs) and 8%
    (16-bit linear): the GEMMs are measured, and cuBLAS picks a different kernel from one shape to the next."""
    probe = lab_module("fit.gemm")
    catalog = default_catalog()
    for dtypes, field, count, limits in ((("fp32",), "fp32_gemm", 128 * 2 + 180, {"linear": 0.10, "bmm": 0.13}),
                                         (("bf16", "fp16"), "gemm", 128 * 3, {"linear": 0.08})):
        measured = probe.rows(dtypes=dtypes)
        assert len(measured) == count
        spec = probe.fit([r for r in measured if r["split"] == "fit"])
        assert getattr(catalog.profiles.get("hf"), field) == spec == getattr(catalog.profiles.get("hf-graph"), field)
        for kind, limit in limits.items():
            check = [r for r in measured if r["split"] == "check" and r["kind"] == kind]
            assert probe.median_abs(probe.errors(check, spec)) < limit


def test_strided_elementwise_operations_are_timed_by_their_elements() -> None:
    """llama's 16-bit layer: of its 63 hidden passes, 39 run on the non-vectorized kernels with 15 hidden widths of
    output elements a token (count_elementwise.py); they take the longer of those elements at the profile's rate and
    their bytes at the bandwidth, the other 24 passes and the FFN's 5 their bytes."""
    from estimator.model.timing import elementwise_time_s

    hf = default_catalog().profiles.get("hf")
    assert hf.elementwise_strided_by_family["llama"] == (39, 0, 15, 0, 29, 0, 13, 0)
    assert hf.strided_elements_per_s == 3.18e11
    cost = prefill_cost(_arch(), _rt("bf16"), 1, 1, 100, 101, 0)
    # 2 layers × 100 tokens: 39 × 512 × 2 B strided bytes, 15 × 512 elements
    assert cost.strided == (39 * 512 * 2 * 200, 15 * 512 * 200)
    assert cost.elementwise_bytes == (63 * 512 + 5 * 1024) * 2 * 200
    bandwidth = 4.8e12 * hf.bandwidth_efficiency
    expected = (cost.elementwise_bytes - 39 * 512 * 2 * 200) / bandwidth + 15 * 512 * 200 / 3.18e11
    assert elementwise_time_s(cost, hf, bandwidth) == pytest.approx(expected, rel=1e-12)
    assert elementwise_time_s(cost, hf.model_copy(update={"strided_elements_per_s": None}), bandwidth) == \
        pytest.approx(cost.elementwise_bytes / bandwidth, rel=1e-12)


def test_the_shipped_strided_rate_is_the_probe_s() -> None:
    probe = lab_module("fit.strided_elements_per_s")
    assert default_catalog().profiles.get("hf").strided_elements_per_s == float(f"{probe.rate(probe.rows()):.3g}")


def test_the_estimate_says_how_its_prefill_kernels_are_timed() -> None:
    """llama-3.2-1b (16 layers, 32 query heads over 8 KV heads): 7 projections a layer and the head, and in fp32 the
    math kernel's two batched GEMMs a layer — 145 kernels; in bf16 113; the optimized profile times none by shape."""
    from estimator.inference.estimate import estimate

    catalog = default_catalog()
    model, h200 = catalog.models.get("llama-3.2-1b"), catalog.gpus.get("h200")

    def kernels_note(dtype: str, profile: str) -> list[str]:
        fmt = catalog.formats.get(dtype)
        workload = InferenceWorkload(batch=1, prompt_tokens=2048, output_tokens=1, weight_format=fmt, kv_format=fmt,
                                     profile=catalog.profiles.get(profile))
        report = estimate(model, h200, workload)
        return [n.text for n in report.assumptions if n.code == "prefill-kernels"]

    fp32, bf16 = kernels_note("fp32", "hf"), kernels_note("bf16", "hf")
    assert len(fp32) == 1 and fp32[0].startswith("prefill kernels (hf): 145 fp32 GEMM kernels, each 4.0 µs")
    assert len(bf16) == 1 and bf16[0].startswith("prefill kernels (hf): 113 16-bit GEMM kernels")
    assert "non-vectorized kernels" in bf16[0] and "3.18e+11 a second" in bf16[0]
    assert kernels_note("bf16", "optimized") == []
