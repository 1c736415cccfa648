"""Time of fp32 prefills and the CUDA-graph hf profile: fp32 GEMMs at the profile's fp32
figure, PyTorch's math SDPA kernel as GEMMs over every pair plus its passes per score (compute.math_attention_*,
phases.prefill_cost), and a GPU cost per counted operation (timing.phase_time, the hf-graph profile)."""

from __future__ import annotations

import pytest

from estimator import InferenceWorkload, default_catalog
from estimator.catalog.architecture import Architecture, Attention, Mlp, ModelSpec
from estimator.model.compute import MATH_SDPA_PASS_BYTES_PER_SCORE, math_attention_flops, math_attention_scores
from estimator.model.phases import job_costs, prefill_cost
from estimator.model.timing import Hardware, PhaseCost, phase_time


def _arch(heads: int, kv_heads: int) -> Architecture:
    return Architecture(model_type="llama", hidden_size=512, num_layers=2, vocab_size=1000,
                        tie_word_embeddings=False,
                        attention=Attention(num_heads=heads, num_kv_heads=kv_heads, head_dim=64, v_head_dim=64),
                        mlp=Mlp(intermediate_size=1024, gated=True))


def _rt(dtype: str, profile: str = "hf") -> InferenceWorkload:
    catalog = default_catalog()
    fmt = catalog.formats.get(dtype)
    return InferenceWorkload(batch=1, prompt_tokens=128, output_tokens=1, weight_format=fmt, kv_format=fmt,
                             profile=catalog.profiles.get(profile))


def test_math_kernel_scores_every_pair_of_every_head() -> None:
    # 2 layers × batch 3 × 8 heads × 100² tokens = 480,000 scores (the upper triangle too: it is masked afterwards)
    assert math_attention_scores(_arch(8, 2), 3, 100) == 480_000
    # QKᵀ and PV: 2 FLOPs per multiply–add × 480,000 × (64 + 64) = 122,880,000
    assert math_attention_flops(_arch(8, 2), 3, 100) == 122_880_000
    assert MATH_SDPA_PASS_BYTES_PER_SCORE == 4 + 8 + 8 + 5 + 1 + 8 + 4


def test_fp32_grouped_prefill_moves_attention_to_the_math_kernel() -> None:
    arch = _arch(8, 2)
    fp32 = prefill_cost(arch, _rt("fp32"), 1, 1, 100, 101, 0)
    bf16 = prefill_cost(arch, _rt("bf16"), 1, 1, 100, 101, 0)
    assert fp32.fp32 and not bf16.fp32
    assert fp32.attention_flops == 0 and bf16.math_attention_flops == 0
    assert fp32.math_attention_flops == 2 * 8 * 100 * 100 * 2 * 128  # 2 layers × 8 heads × 100² × 2 × (64 + 64)
    # llama's traced passes in each dtype (hf profile: 63 h + 5 FFN in 16-bit, 41 h + 5 FFN in fp32, whose RMSNorm
    # upcasts nothing), 2 or 4 bytes each, over 2 layers × 100 tokens; the fp32 math kernel adds 38 B per score
    ffn = arch.mlp.intermediate_size
    assert bf16.elementwise_bytes == (63 * 512 + 5 * ffn) * 2 * 2 * 100
    assert fp32.elementwise_bytes == (41 * 512 + 5 * ffn) * 4 * 2 * 100 + 2 * 8 * 100 * 100 * 38
    mha = prefill_cost(_arch(8, 8), _rt("fp32"), 1, 1, 100, 101, 0)
    assert mha.math_attention_flops == 0 and mha.attention_flops > 0  # the memory-efficient kernel takes fp32 MHA


def _hw() -> Hardware:
    return Hardware(peak_flop_per_s=1e15, bandwidth_bytes_per_s=4e12, memory_type="HBM3e", link_bytes_per_s=None,
                    tensor_parallel=1, fp32_flop_per_s=6e13)


def test_fp32_figures_of_the_hf_profile() -> None:
    hf = default_catalog().profiles.get("hf")
    assert (hf.fp32_matmul_flop_efficiency, hf.fp32_attention_flop_efficiency) == (0.74, 0.40)
    cost = PhaseCost(matmul_flops=1e12, attention_flops=1e11, weight_bytes=0, kv_bytes=0, elementwise_bytes=0,
                     layers=1, fp32=True, math_attention_flops=3e11)
    t = phase_time(cost, Hardware(6e13, 4e12, "HBM3e", None, 1), hf)
    # 1e12 / (6e13 × 0.74) + 1e11 / (6e13 × 0.40) + 3e11 / (6e13 × 0.74)
    assert t.compute_s == pytest.approx(1e12 / 4.44e13 + 1e11 / 2.4e13 + 3e11 / 4.44e13, rel=1e-12)
    # a 16-bit phase with math-kernel attention (Falcon) runs those GEMMs at the card's fp32 peak, not its bf16 one
    bf16 = phase_time(PhaseCost(0, 0, 0, 0, 0, 1, math_attention_flops=3e11), _hw(), hf)
    assert bf16.compute_s == pytest.approx(3e11 / (6e13 * 0.74), rel=1e-12)


def test_graph_profile_has_no_host_floor_and_a_gpu_cost_per_operation() -> None:
    catalog = default_catalog()
    graph, hf = catalog.profiles.get("hf-graph"), catalog.profiles.get("hf")
    assert (graph.host_per_op_s, graph.host_per_layer_s, graph.gpu_per_op_s) == (0, 0, 1.97e-6)
    assert hf.gpu_per_op_s == 0
    arch = catalog.models.get("llama-3.1-8b").arch
    assert arch is not None
    rt = _rt("bf16", "hf-graph")
    decode = job_costs(ModelSpec(name="x", arch=arch), rt, 1, 1, 128, 1, 0).decode
    t = phase_time(decode, _hw(), graph)
    assert t.host_s == 0
    # (32 layers × 63 operations + 48 outside them) × 1.97 µs, and no per-layer cost beside them (docs/accuracy.md,
    # "Decode time")
    assert decode.host_ops == 32 * 63 + 48
    assert t.fixed_s == pytest.approx((32 * 63 + 48) * 1.97e-6, rel=1e-12)
    # a family whose operations are not counted keeps the lean decode's 41 µs per layer, and nothing per operation
    other = ModelSpec(name="y", arch=arch.model_copy(update={"model_type": "not-counted"}))
    uncounted = job_costs(other, rt, 1, 1, 128, 1, 0).decode
    assert uncounted.host_ops == 0
    assert phase_time(uncounted, _hw(), graph).fixed_s == pytest.approx(32 * 4.1e-5, rel=1e-12)


def test_math_kernel_time_in_an_fp32_training_step() -> None:
    """fp32, 8 heads over 2 KV heads (math kernel), batch 2 × 256 tokens: 2 layers × 2 × 8 × 256² = 2,097,152
    scores; forward GEMMs 2 × scores × 128 FLOPs at the H200's fp32 peak × 0.74, plus 38 B per score at the hf
    bandwidth; backward twice the GEMMs plus 36 B per score. Flash (bf16) or MHA leave it to the fused kernel."""
    from estimator.training.eager_step import math_attention_s
    from estimator.training.workload import TrainingWorkload

    catalog = default_catalog()
    hf, h200 = catalog.profiles.get("hf"), catalog.gpus.get("h200")
    workload = TrainingWorkload(batch=2, seq_len=256, precision="fp32", optimizer="adamw", profile=hf)
    scores = 2 * 2 * 8 * 256 * 256
    fp32_peak = h200.peak_flop_per_s("fp32")
    assert fp32_peak is not None
    gemm_s = 2 * scores * 128 / (fp32_peak * 0.74)
    bandwidth = h200.bandwidth_bytes_per_s * hf.bandwidth_fraction(h200.memory_type)
    forward, backward = math_attention_s(_arch(8, 2), workload, h200)
    assert forward == pytest.approx(gemm_s + scores * 38 / bandwidth, rel=1e-12)
    assert backward == pytest.approx(2 * gemm_s + scores * 36 / bandwidth, rel=1e-12)
    assert math_attention_s(_arch(8, 8), workload, h200) == (0.0, 0.0)
    amp = TrainingWorkload(batch=2, seq_len=256, precision="amp-bf16", optimizer="adamw", profile=hf)
    assert math_attention_s(_arch(8, 2), amp, h200) == (0.0, 0.0)


def test_an_fp32_prefill_reads_its_kv_where_a_decode_walks_its_cache() -> None:
    """The hf profile times an fp32 decode's attention as a walk over its cache positions (cache_attention_s); a
    prefill has none to walk and reads its KV at the bandwidth, as before the sweep's arrays made the choice explicit
    (timing.walks_cache)."""
    hf = default_catalog().profiles.get("hf")
    assert hf.fp32_cache_attention and hf.kv_read_efficiency is None
    prefill = PhaseCost(0, 0, 0, 4e9, 0, 2, fp32=True)
    t = phase_time(prefill, _hw(), hf)
    assert t.kv_s > 0 and t.kv_s == pytest.approx(phase_time(prefill, _hw(), hf.model_copy(
        update={"fp32_cache_attention": ()})).kv_s, rel=1e-12)
    decode = PhaseCost(0, 0, 0, 4e9, 0, 2, fp32=True, cache_keys=2 * 1000, cache_streams=1, cache_head_dim=64)
    narrow = hf.fp32_cache_attention[0]
    assert phase_time(decode, _hw(), hf).kv_s == pytest.approx(2 * narrow.fixed_s + 2 * 1000 * narrow.key_s,
                                                               rel=1e-12)
