"""PyTorch's math SDPA kernel: when transformers leaves it the only one (fp32 grouped-query attention, Falcon's
unexpanded KV heads with a mask) and what it holds at its peak (memory.math_attention_bytes), against the kernel
probe measured on the H200 (tests/data/measured/random, kind=sdpa_probe)."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

from estimator import default_catalog
from estimator.catalog.architecture import Architecture, Attention, Mlp
from estimator.model.attention_kernels import runs_math_attention
from estimator.model.memory import math_attention_bytes
from estimator.training.activations import output_stage
from estimator.training.estimate import estimate_training
from estimator.training.workload import TrainingWorkload
from tests.training.test_training_activations import FULL

PROBE = Path(__file__).resolve().parents[1] / "data" / "measured" / "random" / "h200-2026-12-01-seed0.jsonl"


def _arch(heads: int, kv_heads: int, head_dim: int = 64, hidden: int = 512, softcap: bool = False) -> Architecture:
    return Architecture(model_type="llama", hidden_size=hidden, num_layers=2, vocab_size=1000,
                        tie_word_embeddings=False, final_logit_softcapping=softcap,
                        attention=Attention(num_heads=heads, num_kv_heads=kv_heads, head_dim=head_dim,
                                            v_head_dim=head_dim),
                        mlp=Mlp(intermediate_size=1024, gated=True))


def test_math_kernel_only_for_grouped_fp32_under_transformers() -> None:
    hf, optimized = default_catalog().profiles.get("hf"), default_catalog().profiles.get("optimized")
    assert runs_math_attention(_arch(8, 2), hf, fp32=True)
    assert not runs_math_attention(_arch(8, 8), hf, fp32=True)  # the memory-efficient kernel takes MHA in fp32
    assert not runs_math_attention(_arch(8, 2), hf, fp32=False)  # flash takes 16-bit grouped heads
    assert not runs_math_attention(_arch(8, 2), optimized, fp32=True)  # a serving engine's own kernels


def test_math_kernel_bytes_equal_the_probe() -> None:
    """8 heads, 2 KV heads, 4,096 tokens, fp32: 9 × 8 × 4,096² (scores + bias, softmax, all-−inf test) + 4 × 4,096²
    (causal bias) + 2 × 8 × d × 4 × 4,096 (scaled query, repeated values); d = 64 gives 1,291,845,632 B = 1,232 MiB.
    The probe measured that plus 33,280 B (SDPA's scalars and the allocator's 512-byte rounding) at head_dim 64, 80,
    128, 160 and 256, and 1 MiB more at 96 (a caching-allocator block split): within 2 MiB of 1.3 GB at each."""
    probe = [json.loads(line) for line in PROBE.read_text().splitlines() if '"sdpa_probe"' in line]
    rows = [r for r in probe if r["dtype"] == "fp32" and r["kv_heads"] == 2]
    assert len(rows) == 6
    for row in rows:
        d = row["head_dim"]
        arch = _arch(8, 2, head_dim=d)
        residual = 4096 * (4 * 512 * 4 + 8 * d * 4)  # the layer's residual stream (4 × h) and rotated query, fp32
        kernel = math_attention_bytes(arch, 1, 4096, 4) - residual
        assert row["backends_that_run"] == ["math"]
        assert 0 <= row["call_bytes_beyond_output"] - kernel <= 2 * 2**20  # allocator rounding (docstring)
    assert math_attention_bytes(_arch(8, 2), 1, 4096, 4) - 4096 * (4 * 512 * 4 + 8 * 64 * 4) == 1_291_845_632


def test_fp32_grouped_training_saves_the_probabilities() -> None:
    """fp32 training of qwen2.5-0.5b (14 query heads, 2 KV heads, head_dim 64) under the hf profile: SDPA runs the
    math kernel, which saves the repeated K and V and the fp32 probabilities; flash would save K and V unrepeated,
    its output and a log-sum-exp. Per token per layer: 4 × (896 − 128) × 2 + 4 × 14 × 1,024 − 4 × 14 = 63,432 B."""
    catalog = default_catalog()
    model = catalog.models.get("qwen2.5-0.5b")
    workload = TrainingWorkload(batch=1, seq_len=1024, precision="fp32", optimizer="adamw", recompute="none",
                                attention="sdpa", profile=catalog.profiles.get("hf"))
    math = estimate_training(model, catalog.gpus.get("h200"), workload).memory.activation_per_layer_bytes
    flash = estimate_training(model, catalog.gpus.get("h200"),
                              workload.model_copy(update={"attention": "flash"})).memory.activation_per_layer_bytes
    assert math - flash == 63_432 * 1024


def test_softcapped_logits_save_their_tanh() -> None:
    conv_bytes = 2
    from estimator.training.activations import hf_convention

    plain, capped = _arch(8, 8), _arch(8, 8, softcap=True)
    saved = {t.name: t.bytes_per_token for t in output_stage(capped, hf_convention(capped, residual_bytes=4,
                                                                                   compute_bytes=2), FULL).saved}
    assert saved["softcap_tanh"] == Fraction(conv_bytes * 1000)  # the vocabulary in the compute dtype
    assert "softcap_tanh" not in {t.name for t in output_stage(plain, hf_convention(plain, residual_bytes=4,
                                                                                    compute_bytes=2), FULL).saved}
