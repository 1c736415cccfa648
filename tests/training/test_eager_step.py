"""The eager (Hugging Face) training step's parts beside its FLOPs (estimator.training.eager_step): the loss stage's
bytes and foreach AdamW, exactly, and the whole step against the random architectures measured on the H200."""

from __future__ import annotations

import statistics
from typing import Any

import pytest

from estimator import default_catalog
from estimator.catalog.architecture import Architecture, Attention, Mlp
from estimator.model.compute import attention_flops
from estimator.training.eager_step import adamw_foreach_s, eager_compute_s, elementwise_s, loss_stage_bytes
from estimator.training.workload import TrainingWorkload
from tests.lab_modules import lab_module


def _arch(softcap: bool) -> Architecture:
    return Architecture(model_type="llama", hidden_size=512, num_layers=2, vocab_size=1000,
                        tie_word_embeddings=False, final_logit_softcapping=softcap,
                        attention=Attention(num_heads=8, num_kv_heads=8, head_dim=64, v_head_dim=64),
                        mlp=Mlp(intermediate_size=1024, gated=True))


def test_loss_stage_bytes_per_logit() -> None:
    # 2,048 tokens × 1,000 logits: 24 bytes each forward, 26 backward; soft-capping adds 12 and 14
    assert loss_stage_bytes(_arch(False), 2048) == (2048 * 1000 * 24, 2048 * 1000 * 26)
    assert loss_stage_bytes(_arch(True), 2048) == (2048 * 1000 * 36, 2048 * 1000 * 40)


def test_foreach_adamw_bytes_and_element_cost() -> None:
    """1e9 fp32 parameters on the H200 (4.8 TB/s): 21 × 4 B / 4.8e12 + 8 × 0.67 ps = 22.86 ps each; with bf16
    states 14.11 ps (measured 23 and 14, tests/data/measured/random). A 1e6-parameter model waits on the host:
    1.12 ms + 100 tensors × 27.4 µs."""
    catalog = default_catalog()
    hf, h200 = catalog.profiles.get("hf"), catalog.gpus.get("h200")
    assert adamw_foreach_s(10**9, 4, 100, h200, hf) == pytest.approx(10**9 * (84 / 4.8e12 + 8 * 6.7e-13), rel=1e-12)
    assert adamw_foreach_s(10**9, 2, 100, h200, hf) == pytest.approx(10**9 * (42 / 4.8e12 + 8 * 6.7e-13), rel=1e-12)
    assert adamw_foreach_s(10**6, 4, 100, h200, hf) == pytest.approx(1.12e-3 + 100 * 2.74e-5, rel=1e-12)


def test_elementwise_bytes_forward_and_backward() -> None:
    """The `hf` profile's split of the step's GPU time: 2 layers × 2,048 tokens × (llama's traced 63 × 512 + 5 × 1,024
    = 37,376 passes) × 2 B (bf16) = 306,184,192 bytes forward at 4.8 TB/s × 0.864; the backward 4.4 times that, 5.4
    with checkpointing (the recompute's forward); fp32: its own 41 × 512 + 5 × 1,024 = 26,112 passes of 4 B each,
    427,819,008 bytes; a profile without the ratio lumps them (0)."""
    catalog = default_catalog()
    hf, h200 = catalog.profiles.get("hf"), catalog.gpus.get("h200")
    bandwidth = h200.bandwidth_bytes_per_s * hf.bandwidth_fraction(h200.memory_type)
    assert bandwidth == pytest.approx(4.8e12 * 0.864, rel=1e-12)
    def work(precision: Any, recompute: Any = "none", profile: Any = hf) -> TrainingWorkload:
        return TrainingWorkload(batch=1, seq_len=2048, precision=precision, optimizer="adamw",
                                recompute=recompute, attention="sdpa", profile=profile)
    forward, fp32 = 306_184_192 / bandwidth, 427_819_008 / bandwidth
    assert elementwise_s(_arch(False), work("bf16"), bandwidth) == pytest.approx((forward, 4.4 * forward), rel=1e-12)
    assert elementwise_s(_arch(False), work("bf16", "full"), bandwidth) == pytest.approx((forward, 5.4 * forward),
                                                                                          rel=1e-12)
    assert elementwise_s(_arch(False), work("fp32"), bandwidth) == pytest.approx((fp32, 4.4 * fp32), rel=1e-12)
    lumped = hf.model_copy(update={"train_backward_elementwise_ratio": None})
    assert elementwise_s(_arch(False), work("bf16", profile=lumped), bandwidth) == (0.0, 0.0)


def test_sliding_windows_run_the_masked_kernel_over_every_causal_pair() -> None:
    """transformers passes a sliding window the sequence reaches to SDPA as a mask, as in a prefill: a GPU-bound step
    (2 layers of width 4,096, 8 × 4,096 tokens, GEMMs ≈ 0.12 s against a host floor of 12.6 ms) scores every causal
    pair of its sliding layer at the masked kernel's share of the peak, forward once and backward twice; its full
    layer runs the fused kernel at 0.42 — where native windows would skip the sliding layer's far pairs."""
    catalog = default_catalog()
    hf, h200 = catalog.profiles.get("hf"), catalog.gpus.get("h200")
    arch = Architecture(model_type="mistral", hidden_size=4096, num_layers=2, vocab_size=1000,
                        tie_word_embeddings=False, layer_windows=(512, None),
                        attention=Attention(num_heads=32, num_kv_heads=8, head_dim=128, v_head_dim=128),
                        mlp=Mlp(intermediate_size=14336, gated=True))
    peak = h200.peak_flop_per_s("bf16")
    assert peak is not None
    native = hf.model_copy(update={"masked_attention_flop_efficiency": None})
    def step(profile: Any, model: Architecture = arch) -> float:
        w = TrainingWorkload(batch=8, seq_len=4096, precision="bf16", optimizer="adamw", recompute="none",
                             attention="sdpa", profile=profile)
        return eager_compute_s(model, w, h200, peak, 0, 2)[0]
    assert hf.masked_attention_flop_efficiency is not None
    every_pair = attention_flops(arch, 8, 4096, ignore_windows=True)  # both layers, each scoring every causal pair
    masked = every_pair / 2 / (peak * hf.masked_attention_flop_efficiency) + every_pair / 2 / (peak * 0.42)
    windowed = attention_flops(arch, 8, 4096) / (peak * 0.42)
    assert step(hf) - step(native) == pytest.approx(3 * (masked - windowed), rel=1e-9)
    short = arch.model_copy(update={"layer_windows": (8192, None)})  # a window the sequence does not reach: no mask
    assert step(hf, short) == step(native, short)


@pytest.mark.lab  # predicts every random row (about 25 s): lab-only
def test_step_time_on_held_out_random_architectures() -> None:
    """Measured steps, so a tolerance: 35 held-out training rows (0.05–8.8 B parameters, amp / bf16 / fp32,
    checkpointing on and off) had a median error of 64.5% before the eager step was modelled, 10.2% with one
    step-level GEMM share and 6.2% with the GPU time split into GEMMs, attention and elementwise kernels
    (docs/accuracy.md, *Training steps*); this holds that figure against a regression."""
    random_points = lab_module("accuracy.random_points")
    rows = random_points.load(sorted(random_points.DATA.glob("*.jsonl")))
    points = [p for p in random_points.points(rows) if p.term == "train step" and p.split == "held-out"]
    assert len(points) == 35
    assert statistics.median(abs(p.error) for p in points) <= 0.07
