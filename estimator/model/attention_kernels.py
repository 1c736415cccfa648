"""Which of PyTorch's SDPA kernels a prefill's attention reaches under a profile that runs transformers: the
masked kernel where a sliding layer's keys reach its window, the math kernel where fp32 grouped-query heads (or
Falcon's unexpanded KV heads) leave it no other. The peak (`memory.prefill_activation_peak`) and the time
(`phases.prefill_cost`, `training.eager_step`) of a prefill or training step follow the choice; on unexpanded KV
heads (Falcon's) the math kernel copies the KV head per query head in a prefill and a decode step alike
(`unexpanded_math_work`, `phases.prefill_cost`, `phases.decode_cost`)."""

from __future__ import annotations

from collections import Counter

from estimator.catalog.architecture import Architecture
from estimator.catalog.profiles import EfficiencyProfile
from estimator.model.elementwise import where
from estimator.model.gemms import Gemm


def masked_attention_layers(arch: Architecture, profile: EfficiencyProfile, tokens: int) -> int:
    """Layers whose prefill attention over ``tokens`` keys runs with an explicit mask, under a profile whose kernels
    take windows as masks (transformers' SDPA, ``masked_attention_flop_efficiency``): the sliding layers whose
    window the keys reach. transformers 5.17 skips a layer's mask (SDPA's ``is_causal``, flash in 16-bit) unless
    ``kv_length >= window`` (``masking_utils._ignore_causal_mask_sdpa``); full-attention layers never get one
    without padding. Measured: every random gemma2 prefill below its 4,096 window read exactly b × s² bytes high
    with the mask counted, and those at 4,096 tokens matched with it (docs/accuracy.md, "Prefill kernels")."""
    if profile.masked_attention_flop_efficiency is None:
        return 0
    masked = 0  # elementwise on a sweep's array of token counts
    for window, layers in Counter(w for w in arch.layer_windows if w is not None).items():
        masked = masked + where(window <= tokens, layers, 0)
    return masked


def prefill_masked_attention(arch: Architecture, profile: EfficiencyProfile, tokens: int) -> bool:
    """Whether a prefill of ``tokens`` builds the boolean b × s × s mask (`masked_attention_layers`)."""
    return masked_attention_layers(arch, profile, tokens) > 0


def math_attention_layers(arch: Architecture, profile: EfficiencyProfile, *, fp32: bool, tokens: int) -> int:
    """Layers whose prefill attention materialises its scores: PyTorch's SDPA is left only its math kernel.

    Under a profile that runs transformers (``math_attention_fallback``) that happens (a) where the model's code
    hands SDPA unexpanded KV heads with a mask (`Attention.unexpanded_kv_with_mask`, Falcon: every layer), and (b)
    for grouped-query attention in fp32 (``fp32``) in the layers without a mask: transformers 5.x calls SDPA with
    ``enable_gqa=True`` when it has no mask (``use_gqa_in_sdpa``), the flash kernel takes no fp32 and PyTorch's
    memory-efficient kernel takes no grouped-query heads, so the math kernel runs — measured on the H200 with
    PyTorch 2.11: fp32 with 2 of 8 KV heads runs only ``math``, with 8 of 8 ``efficient`` too; fp16 and bf16 run
    ``flash`` for both (tests/data/measured/random, ``kind=sdpa_probe``). A masked layer (`masked_attention_layers`)
    repeats its KV heads first and runs the memory-efficient kernel with the mask."""
    if not profile.math_attention_fallback:
        return 0
    layers = arch.mixer_count("attention")
    if arch.attention.unexpanded_kv_with_mask:
        return layers
    grouped = arch.attention.latent is None and arch.attention.num_kv_heads < arch.attention.num_heads
    return layers - masked_attention_layers(arch, profile, tokens) if fp32 and grouped else 0


def runs_math_attention(arch: Architecture, profile: EfficiencyProfile, *, fp32: bool = False,
                        tokens: int = 0) -> bool:
    """Whether any layer of a prefill over ``tokens`` runs the math kernel (`math_attention_layers`)."""
    return math_attention_layers(arch, profile, fp32=fp32, tokens=tokens) > 0


def runs_unexpanded_math(arch: Architecture, profile: EfficiencyProfile) -> bool:
    """Whether attention runs PyTorch's math SDPA kernel on unexpanded KV heads, timed as `unexpanded_math_work` in a
    prefill and a decode step alike: the model hands SDPA unexpanded KV heads with a mask
    (`Attention.unexpanded_kv_with_mask`, Falcon's multi-query attention) under a profile that runs transformers
    (``math_attention_fallback``) and times the pieces (``repeat_kv_elements_per_s``, ``fp32_gemm``). That kernel
    walks no decode-kernel tiles."""
    return (profile.math_attention_fallback and arch.attention.unexpanded_kv_with_mask
            and profile.fp32_gemm is not None and profile.repeat_kv_elements_per_s is not None)


def unexpanded_math_work(arch: Architecture, profile: EfficiencyProfile, tp: int, batch: int, context: int,
                     queries: int = 1) -> tuple[float, tuple[Gemm, ...]]:
    """Attention where it runs PyTorch's math SDPA kernel on unexpanded KV heads (`runs_unexpanded_math`): a decode step
    (``queries`` 1) or a prefill (``queries`` = ``context``, the prompt). The kernel upcasts q, k and v to fp32, and
    each of its two matmuls broadcasts the KV head over the query heads: ``expand`` then ``reshape`` copies K (then V)
    once per query head, in fp32, before a batched fp32 GEMM of ``queries`` rows per (sequence, head) — traced from
    ``_scaled_dot_product_attention_math`` (torch 2.13 on the CPU; the composite every device runs). Returns the fp32
    elements those copies write and the GEMMs, over every layer on one of ``tp`` ranks; (0, ()) where the attention
    runs another kernel."""
    att = arch.attention
    if not runs_unexpanded_math(arch, profile):
        return 0.0, ()
    layers, pairs = arch.mixer_count("attention"), batch * att.num_heads // tp
    copies = layers * pairs * context * (att.head_dim + att.v_head_dim)
    return copies, (Gemm(m=queries, k=att.head_dim, n=context, count=layers, batch=pairs),
                    Gemm(m=queries, k=context, n=att.v_head_dim, count=layers, batch=pairs))
