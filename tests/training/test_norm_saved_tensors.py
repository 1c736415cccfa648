"""What a training step's norms keep for backward, and the rotary tables the batch shares: Gemma's fp32-scaled RMSNorm,
the norms after each block (four a layer), q/k norms — against transformers' own steps traced on the CPU
(lab/measure/train_live_set_cpu.py; tests/data/measured/peak-traces/cpu-train-live-sets.jsonl) and against the H200's
Gemma 2 training rows (tests/data/measured/random), which read 5-11% low before."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from estimator import default_catalog
from estimator.catalog.registry import model_from_mapping
from estimator.model.inventory import tensor_inventory
from estimator.training.activations import Trainable, hf_convention, layer_saved_tensors
from estimator.training.activations import per_token_bytes as per_token
from estimator.training.estimate import estimate_training
from estimator.training.workload import ALL_LORA_TARGETS, TrainingWorkload
from tests.lab_modules import lab_module

TRACES = Path(__file__).resolve().parents[1] / "data" / "measured" / "peak-traces" / "cpu-train-live-sets.jsonl"
FULL = Trainable(linears=frozenset(ALL_LORA_TARGETS), norms=True, head=True)
GEMMA2 = {"model_type": "gemma2", "hidden_size": 1024, "num_attention_heads": 8, "num_key_value_heads": 4,
          "head_dim": 128, "intermediate_size": 4096, "vocab_size": 32000, "num_hidden_layers": 2,
          "final_logit_softcapping": 30.0, "query_pre_attn_scalar": 128}


def _arch(config: dict[str, Any]) -> Any:
    arch = model_from_mapping({"name": "traced", "config": config}, Path("traced")).arch
    assert arch is not None
    return arch


def _layer(config: dict[str, Any], dtype_bytes: int) -> Fraction:
    arch = _arch(config)
    conv = hf_convention(arch, residual_bytes=dtype_bytes, compute_bytes=dtype_bytes)
    return per_token(layer_saved_tensors(arch, conv, FULL, seq_len=1024, attention="sdpa"))


def test_gemma2_layer_in_bf16() -> None:
    # four norms, each an fp32 copy of its input and its fp32-scaled normalized input (8h) and an fp32 rstd (4);
    # q, k, v, out (2 × 1024 + 2 × 512 twice), log-sum-exp (4 × 8); qkv and gate/up inputs (2h each); 4 × 2 · ffn
    h, q, k, ffn = 1024, 1024, 512, 4096
    assert _layer(GEMMA2, 2) == 4 * (8 * h + 4) + 2 * h + 2 * h + 2 * (2 * q + 2 * k) + 4 * 8 + 4 * 2 * ffn


def test_the_post_norms_and_gemma_scaling_add_20h_in_bf16_and_16h_in_fp32() -> None:
    # a Llama-style layer of the same widths keeps two norms of (4h + r·h + 4); Gemma 2 two more (8h + 4 each),
    # and its pre-norms' normalized input in fp32: + 2 × 8h + 2 × (4 − r)h + 8 bytes a token
    llama = {**GEMMA2, "model_type": "llama", "tie_word_embeddings": False}
    assert _layer(GEMMA2, 2) - _layer(llama, 2) == 20 * 1024 + 8
    assert _layer(GEMMA2, 4) - _layer(llama, 4) == 16 * 1024 + 8


def test_qk_norms_save_a_norm_over_each_projection() -> None:
    qwen3 = {**GEMMA2, "model_type": "qwen3", "tie_word_embeddings": False}
    qwen2 = {**qwen3, "model_type": "qwen2"}
    # q_norm over 8 heads × 128, k_norm over 4 × 128: an fp32 copy and a bf16 normalized each (6 bytes an element),
    # one fp32 rstd per head; qwen2 has the same layer without them (and q/k/v biases, which save nothing)
    assert _layer(qwen3, 2) - _layer(qwen2, 2) == 6 * (1024 + 512) + 4 * (8 + 4)


def _traces() -> list[dict[str, Any]]:
    return [json.loads(line) for line in TRACES.read_text(encoding="utf-8").splitlines()]


@pytest.mark.parametrize("row", _traces(), ids=lambda r: f"{r['config']['model_type']}-{r['mode']}")
def test_traced_training_steps(row: dict[str, Any]) -> None:
    """The steady peak of transformers' own step (parameters, optimizer states and the step's largest live set,
    traced op by op on the CPU) against the estimate: equal but for what the model does not count — the fp32
    ``1 + weight`` each Gemma norm builds (4 bytes a weight element), the rotary module's two fp32 inverse-frequency
    buffers (``inv_freq`` and ``original_inv_freq``: head_dim / 2 floats each), AdamW's fp32 step counter per
    parameter tensor, and at most 16 bytes of scalars (the loss, its gradient seed, Gemma's embedding scale)."""
    catalog = default_catalog()
    config = {**row["config"], "num_hidden_layers": row["layers"]}
    arch = _arch(config)
    workload = TrainingWorkload(batch=row["batch"], seq_len=row["seq"], precision=row["mode"],
                                optimizer="adamw", attention="sdpa", profile=catalog.profiles.get("hf"))
    spec = model_from_mapping({"name": "traced", "config": config}, Path("traced"))
    predicted = estimate_training(spec, catalog.gpus.get("h200"), workload).memory.peak_tensor_bytes
    uncounted = 4 * arch.attention.head_dim + 4 * sum(g.count for g in tensor_inventory(arch))
    if arch.norm_scale_fp32 and arch.model_type.startswith("gemma"):
        qk = 2 * arch.attention.head_dim * arch.num_layers if arch.attention.qk_norm else 0
        uncounted += 4 * (arch.hidden_size * (arch.norm_count + 1) + qk)
    assert 0 <= row["steady_peak"] - predicted - uncounted <= 16


@pytest.mark.lab  # predicts every random row (about 25 s): lab-only
def test_gemma2_training_rows_on_the_h200() -> None:
    """Every Gemma 2 training row of the random architectures within ±5% of its steady peak (before the four norms
    and the fp32 scaling: 5 of 35 outside, −5.2% to −11.1%)."""
    random_points = lab_module("accuracy.random_points")
    rows = random_points.load(sorted(random_points.DATA.glob("*.jsonl")))
    gemma = [p for p in random_points.points(rows) if p.family == "gemma2" and p.term == "train steady peak"
             and not p.split.endswith(" cal")]
    assert len(gemma) >= 35
    assert max(abs(p.error) for p in gemma) < 0.05


SEED12 = TRACES.parents[1] / "random-h100" / "h100-2026-12-06-seed12.jsonl"


def test_seed12_training_peaks_measured_after_the_rule() -> None:
    """Seed 12 (an H100, measured after this count was committed; qwen3 and gemma3_text drawn too): every training
    steady peak within ±2% — the misses before it were qwen3 −2.5% and −4.1%, gemma3_text fp32 −5.2%; what is left
    (mistral fp32 −1.1% to −1.3%, as on the H200's seeds) is outside the tensors this counts."""
    random_points = lab_module("accuracy.random_points")
    rows = [json.loads(line) for line in SEED12.read_text(encoding="utf-8").splitlines()]
    train = [r for r in rows if r.get("kind") == "train" and not r.get("error")]
    families = {r["config"]["model_type"] for r in train}
    assert len(train) == 10 and {"qwen3", "gemma3_text", "gemma2"} <= families
    catalog = default_catalog()
    for row in train:
        (_, _, predicted, measured), *_ = random_points._train_points(catalog, row)
        assert abs(predicted / measured - 1) < 0.02, (row["model"], predicted, measured)


def test_autocast_with_full_recompute_frees_the_layers_copies() -> None:
    """Under autocast with full recomputation nothing saves the decoder layers' bf16 weight copies for backward
    (training.step_phases): llama-3.2-1b amp b4 s2048 checkpointed read +6.7% while every copy was held, and its
    measured peak is now the estimate to 18,432 bytes (tests/data/measured/h200-2026-11-30.jsonl)."""
    training_points = lab_module("accuracy.training_points")
    extra = TRACES.parents[1] / "h200-2026-11-30.jsonl"
    rows = [json.loads(line) for line in extra.read_text(encoding="utf-8").splitlines()]
    row = next(r for r in rows if r.get("kind") == "train" and r["model"] == "llama-3.2-1b" and r["mode"] == "amp"
               and r["checkpointing"])
    m = training_points.predict(row, "h200").memory
    held = {p.phase: {t.term: t.bytes for t in p.terms} for p in m.phases}
    layers = 2 * 973_078_528  # the 16 layers' linear weights in bf16; the tied head's copy (2 × 128,256 × 2,048) stays
    assert m.autocast_copy_bytes - held["forward-backward"]["autocast_copy_bytes"] == layers
    assert held["recompute"]["autocast_copy_bytes"] == m.autocast_copy_bytes - layers + layers // 16
    assert m.peak_phase == "forward-backward" and m.peak_tensor_bytes == 29_205_848_064
    assert row["steady_peak"] - m.peak_tensor_bytes == 18_432


AMP_RECOMPUTE = TRACES.parents[1] / "random-h100" / "h100-2026-12-06-amp-recompute.jsonl"


def test_amp_recompute_rows_measured_after_the_rule() -> None:
    """A blind check (lab/measure/amp_recompute.py, seed 13; an H100, measured after the rule was committed): eight
    checkpointed autocast steps of llama, qwen2, gemma2 and qwen3, seven of them peaking in the forward-backward.
    Every steady peak is within the ±5% target; they read −0.67% to −0.01%, where holding every layer's bf16 copy
    reads up to +4.9%. The peak is the card's allocator bytes, so the H100 judges it as the H200 would."""
    training_points = lab_module("accuracy.training_points")
    rows = [json.loads(line) for line in AMP_RECOMPUTE.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 8 and all(r["mode"] == "amp" and r["checkpointing"] and not r.get("error") for r in rows)
    errors, closer = [], 0
    for row in rows:
        m = training_points.predict(row, "h100").memory
        error = m.peak_tensor_bytes / row["steady_peak"] - 1
        errors.append(error)
        if m.peak_phase == "forward-backward":  # every layer's copy held instead
            kept = {t.term: t.bytes for p in m.phases if p.phase == "forward-backward" for t in p.terms}
            held = (m.peak_tensor_bytes + m.autocast_copy_bytes - kept["autocast_copy_bytes"]) / row["steady_peak"] - 1
            closer += abs(error) < abs(held)
    assert max(abs(e) for e in errors) < 0.05
    assert closer == 7  # each forward-backward peak nearer the measurement than with every copy held
