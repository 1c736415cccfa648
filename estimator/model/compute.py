"""FLOPs and bytes moved by each inference phase (pure functions of an architecture and a workload).

Forward FLOPs per token ≈ 2 × (parameters a token passes through) + attention (Kaplan et al. 2020, §2.1);
causal attention costs 2 · pairs · heads · (d_qk + d_v) per layer, pairs = Σᵢ min(i, window).
A decode step reads every weight it uses once plus the KV cache (formulas.md, FLOPs and time).
The FLOP counts also evaluate elementwise on numpy arrays of batch and tokens (`estimator.model.elementwise`).
"""

from __future__ import annotations

import math
from fractions import Fraction

from estimator.catalog.architecture import Architecture
from estimator.catalog.specs import NumberFormat
from estimator.model.elementwise import per_distinct, where
from estimator.model.inventory import Role, lm_head_numel, tensor_inventory
from estimator.model.memory import bytes_of, tensor_bits, window_groups


def expected_distinct_experts(num_experts: int, top_k: int, tokens: int) -> float:
    """Expected experts hit per MoE layer when ``tokens`` each pick ``top_k`` of ``num_experts`` uniformly:
    E · (1 − (1 − k/E)^tokens)."""
    return num_experts * (1.0 - (1.0 - top_k / num_experts) ** tokens)


def linear_params_per_token(arch: Architecture) -> float:
    """Linear-layer parameters one token multiplies through (MoE: k of E experts), excluding the LM head."""
    total = 0.0
    for group in tensor_inventory(arch):
        if group.role is Role.EXPERT:
            assert arch.moe is not None
            total += group.total * arch.moe.experts_per_token / arch.moe.num_experts
        elif group.role.is_linear or group.role in (Role.ROUTER, Role.POOLER):
            total += group.total
    return total


def causal_pairs(tokens: int, window: int | None, *, past: int = 0) -> int:
    """Query–key pairs scored when ``tokens`` new tokens attend causally after ``past`` cached ones.

    Token i (1-based, counting the past) sees min(i, window) keys; a bidirectional encoder would see all.
    """
    first, last = past + 1, past + tokens
    every = (first + last) * tokens // 2
    if window is None:
        return every
    # tokens first..window see i keys; window+1..last see window keys
    ramp = (first + window) * (window - first + 1) // 2 + window * (last - window)
    return where(window >= last, every, where(window <= first, window * tokens, ramp))


def attention_flops(arch: Architecture, batch: int, tokens: int, *, past: int = 0,
                    ignore_windows: bool = False) -> int:
    """2 FLOPs per multiply–add for QKᵀ and PV over the scored pairs, summed over layers.

    ``ignore_windows``: a kernel that applies the sliding window as an explicit mask still scores every causal
    pair (PyTorch SDPA with a mask, as transformers calls it); kernels with native windows skip them."""
    attn = arch.attention
    width = attn.num_heads * (attn.head_dim + attn.v_head_dim)
    total = 0
    for window, layers in window_groups(arch, ignore_windows=ignore_windows):
        # a bidirectional encoder scores every pair
        pairs = causal_pairs(tokens, window, past=past) if arch.causal else tokens * (tokens + past)
        total += layers * 2 * pairs * width
    return total * batch


# Bytes PyTorch 2.11's math SDPA kernel (`_scaled_dot_product_attention_math`, is_causal) moves per score, pass by
# pass over the fp32 b × heads × s × s matrix, counted from its source: QKᵀ writes the scores (4); the causal bias is
# added (read 4, write 4; the s × s bias itself is shared by every head); `_safe_softmax` = softmax (read 4, write 4),
# the −inf test `eq` (read 4, write 1), `all` over each row (read 1) and `where` (read 4, write 4); PV reads the
# probabilities (4). 4 + 8 + 8 + 5 + 1 + 8 + 4 = 38.
MATH_SDPA_PASS_BYTES_PER_SCORE = 38


def math_sdpa_pass_bytes(element_bytes: int) -> int:
    """Bytes the math SDPA kernel moves per score for inputs of ``element_bytes``: `MATH_SDPA_PASS_BYTES_PER_SCORE`,
    and where the inputs are 16-bit, the probabilities converted back to their dtype (read 4, write 2) — the kernel
    returns them beside its output (``attn.to(origin_dtype)`` before PV, in PyTorch 2.11-2.13's
    `_scaled_dot_product_attention_math`; torch.profiler's CPU trace of a bf16 call shows the copy), though SDPA
    drops them."""
    return MATH_SDPA_PASS_BYTES_PER_SCORE + (4 + element_bytes if element_bytes < 4 else 0)


def math_attention_scores(arch: Architecture, batch: int, tokens: int, layers: int | None = None) -> int:
    """Scores PyTorch's math SDPA kernel materialises over ``layers`` layers of a prefill (all by default): every
    query–key pair of every head (it masks the upper triangle after computing it; windows are masks too)."""
    return (arch.num_layers if layers is None else layers) * batch * arch.attention.num_heads * tokens * tokens


def math_attention_flops(arch: Architecture, batch: int, tokens: int, layers: int | None = None) -> int:
    """GEMM FLOPs of the math SDPA kernel: QKᵀ and PV over every scored pair, 2 per multiply–add."""
    attn = arch.attention
    return 2 * math_attention_scores(arch, batch, tokens, layers) * (attn.head_dim + attn.v_head_dim)


def prefill_matmul_flops(arch: Architecture, batch: int, tokens: int, *, logits_positions: int) -> float:
    """2 × linear parameters × tokens, plus the LM head for the positions whose logits are computed."""
    return 2 * linear_params_per_token(arch) * batch * tokens + 2 * lm_head_numel(arch) * batch * logits_positions


def decode_matmul_flops(arch: Architecture, batch: int) -> float:
    """One decode step: every sequence's new token through the linear layers and the LM head."""
    return 2 * (linear_params_per_token(arch) + lm_head_numel(arch)) * batch


def decode_weight_bytes(arch: Architecture, fmt: NumberFormat, batch: int, *, expert_groups: int = 1) -> int:
    """Weights one decode step reads: every tensor once, except the token-embedding table (only ``batch`` rows
    are gathered) and the routed experts no token in the batch picked (expected distinct experts per layer).
    Exact rationals, rounded up once; on an array of batches, evaluated once per distinct batch.

    ``expert_groups`` g > 1: expert parallel over g attention groups that each decode ``batch`` sequences
    (`estimator.model.experts`): the experts are spread over g times as many GPUs and hit by g × ``batch``
    tokens, so the routed part is hit(g × batch) ÷ g (what one group's ranks read between them)."""
    fixed = Fraction(0)  # bytes every step reads whatever the batch
    per_batch: list[tuple[Role, int, Fraction]] = []  # (role, numel, bits) of the tensors the batch decides
    for group in tensor_inventory(arch):
        bits = tensor_bits(group.role, fmt)
        if group.role.is_tower:  # a multimodal model's encoders run on images and audio, not on decoded tokens
            continue
        if group.role is Role.EMBEDDING and arch.tie_word_embeddings and arch.lm_head:
            fixed += group.total * bits / 8  # the table is read whole as the LM head
        elif group.role in (Role.EMBEDDING, Role.POSITION, Role.EXPERT):
            per_batch.append((group.role, group.total, bits))
        else:
            fixed += Fraction(bytes_of(group.total, bits))

    def read(sequences: int) -> int:
        total = fixed
        for role, numel, bits in per_batch:
            if role is Role.EMBEDDING:
                total += min(sequences, arch.vocab_size) * arch.hidden_size * bits / 8
            elif role is Role.POSITION:
                total += min(sequences, numel // arch.hidden_size) * arch.hidden_size * bits / 8
            else:
                assert arch.moe is not None
                hit = expected_distinct_experts(arch.moe.num_experts, arch.moe.experts_per_token,
                                                sequences * expert_groups)
                total += Fraction(bytes_of(numel, bits)) * Fraction(hit / arch.moe.num_experts) / expert_groups
        return math.ceil(total)

    return per_distinct(read, batch)
