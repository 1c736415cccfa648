"""A prefill's routed experts as transformers' grouped_mm forward runs them (the profile's `GroupedExperts`).

transformers 5.17 (``integrations.moe.grouped_mm_experts_forward``) sorts the token–expert pairs by expert, gathers
their hidden states, runs one grouped GEMM up (gate and up together) and one down over every expert a token picked,
applies the gate, weights the rows, puts them back in token order and sums each token's k rows. Measured alone on the
H200 (docs/accuracy.md, "Prefill kernels"), the grouped GEMMs take the hit experts' weight reads and their FLOPs one
after the other — many small per-expert GEMMs hide neither behind the other — and the dispatch around them moves far
more than the dense MLP's elementwise passes: it is bound by the routed pairs' width. `expert_work` counts that work on
one rank; `experts_s` times it. The roofline bound keeps the FLOPs and the weights alone.
"""

from __future__ import annotations

from dataclasses import dataclass

from estimator.catalog.architecture import Architecture
from estimator.catalog.profiles import EfficiencyProfile
from estimator.catalog.specs import NumberFormat
from estimator.model.compute import expected_distinct_experts
from estimator.model.inventory import Role, tensor_inventory
from estimator.model.memory import bytes_of, tensor_bits
from estimator.model.rates import achievable


@dataclass(frozen=True)
class ExpertWork:
    """One rank's routed experts in a prefill, summed over the MoE layers."""

    flops: float  # the grouped GEMMs' FLOPs
    weight_bytes: float  # the hit experts' weights, which the grouped GEMMs read
    pair_hidden: float  # routed (token, expert) pairs × the hidden width
    pair_ffn: float  # routed pairs × the expert's intermediate width on this rank
    token_hidden: float  # tokens × the hidden width
    layers: int  # MoE layers


def routed_expert_params(arch: Architecture) -> int:
    """Every routed expert's parameters over all MoE layers (the shared experts run as a dense MLP)."""
    return sum(group.total for group in tensor_inventory(arch) if group.role is Role.EXPERT)


def expert_work(arch: Architecture, fmt: NumberFormat, tp: int, tokens: int) -> ExpertWork | None:
    """The routed experts of a prefill of ``tokens`` (batch × prompt) on one of ``tp`` ranks; None without them."""
    moe = arch.moe
    if moe is None or not arch.num_moe_layers:
        return None
    params = routed_expert_params(arch)
    hit = expected_distinct_experts(moe.num_experts, moe.experts_per_token, tokens) / moe.num_experts
    pairs = tokens * moe.experts_per_token * arch.num_moe_layers
    return ExpertWork(flops=2 * params * moe.experts_per_token / moe.num_experts * tokens / tp,
                      weight_bytes=bytes_of(params, tensor_bits(Role.EXPERT, fmt)) * hit / tp,
                      pair_hidden=pairs * moe.expert_width_in(arch.hidden_size),
                      pair_ffn=pairs * moe.expert_intermediate_size / tp,
                      token_hidden=tokens * arch.hidden_size * arch.num_moe_layers, layers=arch.num_moe_layers)


def experts_s(work: ExpertWork, profile: EfficiencyProfile, peak_flop_per_s: float, bandwidth_bytes_per_s: float,
              act_bytes: int, bandwidth: float) -> float:
    """The grouped GEMMs' weight reads and FLOPs one after the other, the dispatch's passes at ``bandwidth`` (the
    profile's achievable one), and a fixed cost per MoE layer (0 where the profile states no grouped experts)."""
    spec = profile.grouped_experts
    if spec is None:
        return 0.0
    gemm_s = (work.weight_bytes / achievable(bandwidth_bytes_per_s, spec.weight_efficiency)
              + work.flops / achievable(peak_flop_per_s, spec.flop_efficiency))
    passes = (spec.pair_hidden_passes * work.pair_hidden + spec.pair_ffn_passes * work.pair_ffn
              + spec.token_hidden_passes * work.token_hidden)
    return gemm_s + passes * act_bytes / bandwidth + work.layers * spec.per_layer_s
