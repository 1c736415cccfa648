"""Expert parallel (EP) for mixture-of-experts models: which experts a GPU holds, and the all-to-all that sends
tokens to them.

Under expert parallel over ``ep`` GPUs each MoE layer's E routed experts are dealt out whole, ⌈E / ep⌉ to a GPU
(DeepSeek-V3 report §3.4: "each GPU hosts only one expert" at EP 320 of 256 + redundant experts; vLLM's
``--enable-expert-parallel`` and SGLang's ``--ep-size`` place whole experts). Everything else — attention, dense
layers, shared experts, embeddings and head — is tensor-parallel over the ``tp`` GPUs of an attention group and
replicated over the ep ÷ tp groups (data-parallel attention: SGLang ``--enable-dp-attention``, vLLM
``--data-parallel-size`` with expert parallel), as `sharded_weights_bytes` slices it.

Each MoE layer sends every token to the GPUs of its top-k experts and back (dispatch and combine: DeepEP,
pplx-kernels): per GPU, tokens × k × hidden × bytes each way (a token picking two experts on one GPU is counted
twice: DeepEP sends one copy per GPU, so this is an upper bound of k copies), of which (ep − 1)/ep leave the GPU
with balanced routing, over the slowest link the EP group crosses (`collectives.all_to_all_s`).
"""

from __future__ import annotations

import math
from dataclasses import replace
from fractions import Fraction

from estimator.catalog.architecture import Architecture, ModelSpec
from estimator.catalog.specs import GpuSpec, NumberFormat
from estimator.model.collectives import Link, all_to_all_s
from estimator.model.footprint import GpuMemory, memory_per_gpu
from estimator.model.inventory import Role
from estimator.model.memory import sharded_weights_bytes, weight_shares
from estimator.model.runtime import Runtime


def experts_per_gpu(arch: Architecture, ep: int) -> int:
    """Routed experts of each MoE layer one of ``ep`` GPUs holds: ⌈E / ep⌉ (0 for a dense model)."""
    return 0 if arch.moe is None else -(-arch.moe.num_experts // ep)


def routed_expert_bytes(arch: Architecture, fmt: NumberFormat) -> int:
    """Bytes of every routed expert of every MoE layer in ``fmt`` (0 for a dense model)."""
    return sum(s.bytes for s in weight_shares(arch, fmt) if s.role is Role.EXPERT)


def expert_parallel_weights_bytes(arch: Architecture, fmt: NumberFormat, tp: int, ep: int) -> int:
    """Weights on one GPU under EP ``ep`` with attention (and the rest) tensor-parallel over ``tp``: the non-expert
    roles as `sharded_weights_bytes` slices them, plus ⌈E / ep⌉ whole experts of each MoE layer (all experts
    have one size, so that is ⌈E / ep⌉ / E of the routed bytes, rounded up once)."""
    rest = sharded_weights_bytes(arch, fmt, tp) - -(-routed_expert_bytes(arch, fmt) // tp)
    return rest + held_expert_bytes(arch, fmt, ep)


def held_expert_bytes(arch: Architecture, fmt: NumberFormat, ep: int) -> int:
    """Routed-expert bytes one of ``ep`` GPUs holds: ⌈E / ep⌉ whole experts of every MoE layer, all experts of one
    size, so ⌈E / ep⌉ / E of `routed_expert_bytes`, rounded up once (0 for a dense model)."""
    if arch.moe is None:
        return 0
    return math.ceil(Fraction(routed_expert_bytes(arch, fmt) * experts_per_gpu(arch, ep), arch.moe.num_experts))


def dispatch_bytes(arch: Architecture, tokens: float, element_bytes: float) -> float:
    """Bytes one GPU sends in one MoE layer's dispatch (and again in its combine): tokens × k × hidden × bytes."""
    k = 0 if arch.moe is None else arch.moe.experts_per_token
    return tokens * k * arch.hidden_size * element_bytes


def moe_all_to_all_s(arch: Architecture, tokens: float, element_bytes: float, ep: int, link: Link) -> float:
    """Dispatch + combine of ``tokens`` tokens per GPU in every MoE layer over ``ep`` GPUs joined by ``link``:
    MoE layers × 2 × all-to-all of `dispatch_bytes` (0 at EP 1 or for a dense model)."""
    if ep <= 1 or arch.moe is None:
        return 0.0
    return arch.num_moe_layers * 2 * all_to_all_s(dispatch_bytes(arch, tokens, element_bytes), ep, link)


def attention_groups(tp: int, ep: int) -> int:
    """Attention groups of ``tp`` GPUs an EP group of ``ep`` GPUs spans: ep ÷ tp, at least 1."""
    return max(1, ep // tp)


def expert_parallel_memory(model: ModelSpec, gpu: GpuSpec, rt: Runtime, tp: int, ep: int, batch: int, prompt: int,
                           output: int) -> GpuMemory:
    """Bytes on one GPU of an EP group of ``ep`` GPUs in ep ÷ tp attention groups of ``tp`` GPUs serving ``batch``
    sequences: each group's share, ⌈batch ÷ groups⌉, sets its KV cache, state, activation peak and overhead
    (`footprint.memory_per_gpu`), and the weights are `expert_parallel_weights_bytes` (whole experts)."""
    m = memory_per_gpu(model, gpu, rt, tp, -(-batch // attention_groups(tp, ep)), prompt, output)
    if ep <= 1 or model.arch is None:
        return m
    weights = expert_parallel_weights_bytes(model.arch, rt.weight_format, tp, ep)
    return replace(m, weights=weights, per_gpu=m.per_gpu - m.weights + weights)
