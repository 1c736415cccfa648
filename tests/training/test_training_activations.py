"""Saved-tensor accounting: Korthikanti et al. 2022 Table 2 for a GPT-3 layer; the HF Llama constants; the
measured H200 reference training step (tests/data/measured/reference/h200-measured.jsonl)."""

from __future__ import annotations

from fractions import Fraction

import pytest

from estimator import default_catalog
from estimator.catalog.architecture import Architecture, Attention, Mlp
from estimator.training.activations import (
    MEGATRON_GPT3,
    Trainable,
    hf_convention,
    layer_input_bytes_per_token,
    layer_saved_tensors,
    per_token_bytes,
)
from estimator.training.estimate import estimate_training
from estimator.training.workload import ALL_LORA_TARGETS, TrainingWorkload

# GPT-3 175B layer (Brown et al. 2020; Korthikanti et al. 2022 Table 3): h 12288, a 96, s 2048; b 1, t 8.
H, A, S, B, T = 12288, 96, 2048, 1, 8
GPT3 = Architecture(model_type="gpt3", hidden_size=H, num_layers=96, vocab_size=51200, tie_word_embeddings=True,
                    attention=Attention(num_heads=A, num_kv_heads=A, head_dim=128, v_head_dim=128, q_bias=True,
                                        kv_bias=True, o_bias=True),
                    mlp=Mlp(intermediate_size=4 * H, gated=False, bias=True), norm="layer", position_embeddings=S)
FULL = Trainable(linears=frozenset(ALL_LORA_TARGETS), norms=True, head=True)


def _gpt3_layer_bytes(tp: int, sp: bool, selective: bool) -> int:
    tensors = layer_saved_tensors(GPT3, MEGATRON_GPT3, FULL, seq_len=S, attention="eager")
    per_token = per_token_bytes(tensors, tp=tp, sequence_parallel=sp, selective=selective, statistics=False)
    return int(per_token * S * B)


def test_korthikanti_no_parallelism() -> None:
    assert _gpt3_layer_bytes(1, False, False) == S * B * H * 34 + 5 * A * S * S * B  # sbh(34 + 5as/h)


def test_korthikanti_tensor_parallel() -> None:
    assert _gpt3_layer_bytes(T, False, False) == S * B * H * 10 + S * B * H * 24 // T + 5 * A * S * S * B // T


def test_korthikanti_tensor_and_sequence_parallel() -> None:
    assert _gpt3_layer_bytes(T, True, False) == (S * B * H * 34 + 5 * A * S * S * B) // T  # sbh/t (34 + 5as/h)


def test_korthikanti_selective_recompute() -> None:
    assert _gpt3_layer_bytes(T, False, True) == S * B * H * 10 + S * B * H * 24 // T  # sbh(10 + 24/t)
    assert _gpt3_layer_bytes(T, True, True) == S * B * H * 34 // T  # sbh · 34/t


def test_korthikanti_full_recompute_keeps_the_layer_input() -> None:
    assert layer_input_bytes_per_token(GPT3, MEGATRON_GPT3) * S * B == 2 * S * B * H  # 2sbh


def test_korthikanti_left_out_only_the_layernorm_statistics() -> None:
    tensors = layer_saved_tensors(GPT3, MEGATRON_GPT3, FULL, seq_len=S, attention="eager")
    small = per_token_bytes(tensors) - per_token_bytes(tensors, statistics=False)
    assert small == 16  # two LayerNorms × fp32 mean and rstd


def _llama_1b() -> Architecture:
    arch = default_catalog().models.get("llama-3.2-1b").arch
    assert arch is not None
    return arch


def test_llama_layer_under_pytorch_amp() -> None:
    """30h + 4·kv + 8·ffn + 4a + 8 B per token: fp32 RMSNorm input and normalized (2 × 8h), one bf16 autocast copy
    per projection (3 × 2h for q,k,v; 2 × 2h for gate, up), SDPA's q, o (2 × 2h), k, v (2 × 2·kv), log-sum-exp
    (4a), four SwiGLU intermediates (4 × 2·ffn), two fp32 rstd (8)."""
    arch = _llama_1b()
    tensors = layer_saved_tensors(arch, hf_convention(arch, residual_bytes=4, compute_bytes=2), FULL, seq_len=2048,
                                  attention="sdpa")
    assert per_token_bytes(tensors) == 129_160  # 30×2048 + 4×512 + 8×8192 + 4×32 + 8


def test_llama_layer_in_pure_bf16() -> None:
    """20h: RMSNorm keeps an fp32 copy of its bf16 input (4h) and the bf16 normalized (2h); no autocast copies."""
    arch = _llama_1b()
    tensors = layer_saved_tensors(arch, hf_convention(arch, residual_bytes=2, compute_bytes=2), FULL, seq_len=2048,
                                  attention="sdpa")
    assert per_token_bytes(tensors) == 108_680  # 20×2048 + 4×512 + 8×8192 + 4×32 + 8


def test_eager_attention_adds_the_score_matrices() -> None:
    arch = _llama_1b()
    conv = hf_convention(arch, residual_bytes=2, compute_bytes=2)
    sdpa = per_token_bytes(layer_saved_tensors(arch, conv, FULL, seq_len=2048, attention="sdpa"))
    eager = per_token_bytes(layer_saved_tensors(arch, conv, FULL, seq_len=2048, attention="eager"))
    # + fp32 softmax and bf16 probs (6 × a × s), K and V repeated to 32 heads (2 × 2 × (2048 − 512)),
    # O saved by o_proj instead of the kernel (0), no log-sum-exp (−4a)
    assert eager - sdpa == 6 * 32 * 2048 + 4 * (2048 - 512) - 4 * 32


REFERENCE_STEADY_PEAK = 47_074_650_624  # h200-measured.jsonl, kind=train: llama-3.2-1b amp b4 s2048 sdpa AdamW


def test_reference_training_step_byte_by_byte() -> None:
    catalog = default_catalog()
    w = TrainingWorkload(batch=4, seq_len=2048, precision="amp-bf16", optimizer="adamw",
                         profile=catalog.profiles.get("hf"))
    m = estimate_training(catalog.models.get("llama-3.2-1b"), catalog.gpus.get("h200"), w).memory
    tokens, n, v, h = 4 * 2048, 1_235_814_400, 128_256, 2048
    assert m.weights_bytes == 4 * n  # fp32 parameters
    assert m.optimizer_bytes == 8 * n  # fp32 m and v (gradients were set to None before forward)
    assert m.autocast_copy_bytes == 2 * (973_078_528 + v * h)  # bf16 copies of the linears and the tied head
    assert m.activation_per_layer_bytes == 129_160 * tokens
    # output: final norm (8h + 4), head input (2h), log-softmax (4v), token ids (8) a token; rotary cos/sin
    # (2 × 64 × 4) a position, shared by the batch
    assert m.output_layer_bytes == tokens * (8 * h + 4 + 2 * h + 4 * v + 8) + 2048 * 512
    assert m.activation_bytes == 16 * 129_160 * tokens + m.output_layer_bytes
    assert m.loss_backward_bytes == 8 * v * tokens  # nll_loss and log_softmax gradients, fp32
    assert m.peak_phase == "forward-backward"
    assert m.peak_tensor_bytes == 47_007_522_816
    # the measurement less the backward thread's cuBLAS workspaces (64 MiB, runtime overhead) is the tensors' peak
    # to 18,944 bytes
    assert REFERENCE_STEADY_PEAK - 64 * 2**20 - m.peak_tensor_bytes == 18_944


def test_phases_sum_to_their_tensors_and_the_largest_is_the_peak() -> None:
    """The reference step's phases, term by term: the table's rows add up to each phase's total."""
    catalog = default_catalog()
    w = TrainingWorkload(batch=4, seq_len=2048, precision="amp-bf16", optimizer="adamw",
                         profile=catalog.profiles.get("hf"))
    m = estimate_training(catalog.models.get("llama-3.2-1b"), catalog.gpus.get("h200"), w).memory
    phases = {p.phase: {t.term: t.bytes for t in p.terms} for p in m.phases}
    assert list(phases) == ["forward-backward", "optimizer-step"]  # no recompute phase without full recompute
    # forward-backward: the weights, AdamW's m and v, the autocast copies, the activations and the loss gradients;
    # gradients were set to None before forward (accumulation 1), so they are not held
    assert phases["forward-backward"] == {
        "weights_bytes": m.weights_bytes, "optimizer_bytes": m.optimizer_bytes,
        "autocast_copy_bytes": m.autocast_copy_bytes, "activation_bytes": m.activation_bytes,
        "loss_backward_bytes": m.loss_backward_bytes}
    # the optimizer step: every model state plus the step's temporaries
    assert phases["optimizer-step"] == {
        "weights_bytes": m.weights_bytes, "gradient_bytes": m.gradient_bytes, "optimizer_bytes": m.optimizer_bytes,
        "optimizer_step_bytes": m.optimizer_step_bytes}
    for p in m.phases:
        assert p.tensor_bytes == sum(t.bytes for t in p.terms)
    assert max(p.tensor_bytes for p in m.phases) == m.peak_tensor_bytes == 47_007_522_816
    assert m.per_gpu_bytes == m.peak_tensor_bytes + m.overhead_bytes


def test_recompute_phase_holds_checkpoints_and_one_layer() -> None:
    catalog = default_catalog()
    w = TrainingWorkload(batch=4, seq_len=2048, recompute="full", profile=catalog.profiles.get("hf"))
    m = estimate_training(catalog.models.get("llama-3.2-1b"), catalog.gpus.get("h200"), w).memory
    recompute = {t.term: t.bytes for t in next(p for p in m.phases if p.phase == "recompute").terms}
    # the checkpoints without the output layer's tensors (freed before backward reaches the layers), one layer
    assert recompute["activation_bytes"] == m.activation_bytes - m.output_layer_bytes == 16 * 4 * 2048 * 8192
    assert recompute["recompute_bytes"] == m.recompute_bytes


def test_recompute_full_keeps_checkpoints_and_one_layer() -> None:
    catalog = default_catalog()
    w = TrainingWorkload(batch=4, seq_len=2048, recompute="full", profile=catalog.profiles.get("hf"))
    m = estimate_training(catalog.models.get("llama-3.2-1b"), catalog.gpus.get("h200"), w).memory
    assert m.activation_bytes - m.output_layer_bytes == 16 * 4 * 2048 * 8192  # 16 layers × fp32 h per token
    assert m.recompute_bytes == 129_160 * 8192


@pytest.mark.parametrize("tp", [1, 2, 4])
def test_tensor_parallel_divides_inside_regions(tp: int) -> None:
    arch = _llama_1b()
    tensors = layer_saved_tensors(arch, hf_convention(arch, residual_bytes=2, compute_bytes=2), FULL,
                                  seq_len=512, attention="sdpa")
    sequence = sum((t.bytes_per_token for t in tensors if t.sharding == "sequence"), Fraction(0))
    inside = sum((t.bytes_per_token for t in tensors if t.sharding == "tp"), Fraction(0))
    assert per_token_bytes(tensors, tp=tp) == sequence + inside / tp
    assert per_token_bytes(tensors, tp=tp, sequence_parallel=True) == (sequence + inside) / tp
