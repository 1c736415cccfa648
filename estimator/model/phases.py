"""The work of each inference phase on one tensor-parallel rank: FLOPs and bytes by kind (`timing.PhaseCost`).

FLOPs and weight reads come from `estimator.model.compute`; the KV read is the cache the phase sees; elementwise
kernels (norms, activations, residual adds) read and write the hidden and FFN widths a profile-given number of
times per token; tensor parallelism adds two all-reduces of the hidden states per layer (Megatron-LM).
Batch, prompt and context may be numpy float64 arrays (a sweep grid: floats, so FLOP counts never overflow).
"""

from __future__ import annotations

from dataclasses import dataclass

from estimator.catalog.architecture import Architecture, ModelSpec
from estimator.catalog.profiles import EfficiencyProfile
from estimator.model.attention_kernels import masked_attention_layers, math_attention_layers, unexpanded_math_work
from estimator.model.compute import (
    attention_flops,
    decode_matmul_flops,
    decode_weight_bytes,
    math_attention_flops,
    math_attention_scores,
    math_sdpa_pass_bytes,
    prefill_matmul_flops,
)
from estimator.model.decode_attention import kv_read_factor, repeat_kv_copies, walk_streams
from estimator.model.elementwise import maximum
from estimator.model.experts import expert_parallel_weights_bytes
from estimator.model.footprint import rank_kv_bytes
from estimator.model.gemms import Gemm, prefill_gemms
from estimator.model.grouped_experts import ExpertWork, expert_work, routed_expert_params
from estimator.model.inventory import Role
from estimator.model.memory import bytes_of, generic_weights_bytes, sharded_weights_bytes, tensor_bits
from estimator.model.runtime import Runtime
from estimator.model.timing import PhaseCost


def elementwise_elements_per_layer(arch: Architecture, profile: EfficiencyProfile, tp: int, *,
                                   hidden_shards: int = 1, fp32: bool = False) -> float:
    """Elements the elementwise kernels (norms, rotary, activations, residual adds, casts) move per token and layer
    on one of ``tp`` ranks: passes over the hidden width (÷ ``hidden_shards`` where sequence parallel splits the
    norms) and over the sharded FFN width (MoE: the k routed experts' and the shared expert's width) — the family's
    own count in the compute dtype where the profile traced it (``elementwise_passes_by_family``; ``fp32``: an fp32
    model, whose norms upcast nothing), else the profile's. Prefill, decode and a training step's forward all count
    them so."""
    ffn = arch.mlp.intermediate_size
    if arch.moe is not None and arch.num_moe_layers:
        ffn = arch.moe.experts_per_token * arch.moe.expert_intermediate_size + arch.moe.shared_intermediate_size
    hidden_passes, ffn_passes = elementwise_passes(arch, profile, fp32=fp32)
    return float(hidden_passes * arch.hidden_size / hidden_shards + ffn_passes * ffn / tp)


def elementwise_passes(arch: Architecture, profile: EfficiencyProfile, *, fp32: bool) -> tuple[float, float]:
    """(hidden, FFN) passes per token and layer: the family's own count in the compute dtype where the profile
    traced it, else the profile's."""
    counted = profile.elementwise_passes_by_family.get(arch.model_type)
    if counted is not None:
        hidden, ffn = counted[2:] if fp32 else counted[:2]
        return float(hidden), float(ffn)
    return float(profile.elementwise_hidden_passes), float(profile.elementwise_ffn_passes)


def grouped_expert_work(arch: Architecture, rt: Runtime, tp: int, tokens: int, expert_groups: int
                        ) -> tuple[ExpertWork | None, float, float, float]:
    """Where the profile runs a prefill's routed experts as grouped GEMMs (`grouped_experts`): their work, and the
    FLOPs, weight bytes and elementwise bytes the dense terms then leave to it (none under expert parallel)."""
    work = expert_work(arch, rt.weight_format, tp, tokens) if rt.profile.grouped_experts else None
    if work is None or expert_groups != 1 or arch.moe is None:
        return None, 0.0, 0.0, 0.0
    act = rt.activation_bytes_per_element
    routed_ffn = arch.moe.experts_per_token * arch.moe.expert_intermediate_size / tp
    counted = elementwise_passes(arch, rt.profile, fp32=act == 4)[1] * routed_ffn * act * arch.num_layers * tokens
    weights = bytes_of(routed_expert_params(arch), tensor_bits(Role.EXPERT, rt.weight_format)) / tp
    return work, work.flops, weights, counted


def _elementwise_bytes_per_token(arch: Architecture, rt: Runtime, tp: int) -> float:
    """Bytes elementwise kernels move per token over all layers (`elementwise_elements_per_layer`)."""
    act = rt.activation_bytes_per_element
    return elementwise_elements_per_layer(arch, rt.profile, tp, fp32=act == 4) * act * arch.num_layers


def eager_ops(arch: Architecture, rt: Runtime, *, decode: bool, math_layers: int = 0) -> int:
    """aten operations one step dispatches under the profile's `eager_ops_per_layer` (0 where it lists none): the
    layers', the ``math_layers`` that run the math SDPA kernel's further ones, and those outside the layers
    (`eager_ops_outside_layers`: the embedding, rotary tables, masks, final norm and head)."""
    profile = rt.profile
    counts = profile.eager_ops_per_layer.get(arch.model_type)
    if counts is None:
        return 0
    grouped = arch.attention.latent is None and arch.attention.num_kv_heads < arch.attention.num_heads
    outside = profile.eager_ops_outside_layers.get(arch.model_type, (0, 0))[1 if decode else 0]
    layers = arch.num_layers * (counts[2 if grouped else 1] if decode else counts[0])
    return outside + layers + math_layers * profile.eager_ops_per_math_layer


def prefill_cost(arch: Architecture, rt: Runtime, tp: int, batch: int, prompt: int, context: int,
                 kv_bytes: float, expert_groups: int = 1) -> PhaseCost:
    """The prefill of ``batch`` prompts on one of ``tp`` ranks, whose KV cache at ``context`` tokens is
    ``kv_bytes`` (the prefill writes the prompt's share of it); under expert parallel over ``expert_groups``
    attention groups a rank reads the experts it holds (`experts.expert_parallel_weights_bytes`)."""
    act, h, layers = rt.activation_bytes_per_element, arch.hidden_size, arch.num_layers
    prompt_tokens = batch * prompt
    positions = prompt if rt.logits == "all" else 1
    # layers given an explicit mask score every causal pair on the masked kernel; the math SDPA kernel's layers
    # (attention_kernels.math_attention_layers) score every pair in fp32 with its GEMMs and passes
    masked = masked_attention_layers(arch, rt.profile, prompt)
    math = math_attention_layers(arch, rt.profile, fp32=act == 4, tokens=prompt)
    scores = math_attention_scores(arch, batch, prompt, math) / tp
    # a profile that takes windows as masks scores every causal pair in every layer: a masked layer's mask, or a
    # window the prompt does not reach
    attention = attention_flops(arch, batch, prompt,
                                ignore_windows=rt.profile.masked_attention_flop_efficiency is not None) / tp
    every = max(arch.mixer_count("attention"), 1)
    fused = maximum(every - masked - math, 0) / every
    experts, routed_flops, routed_bytes, routed_elementwise = grouped_expert_work(arch, rt, tp, prompt_tokens,
                                                                                  expert_groups)
    # unexpanded KV heads (Falcon): the math kernel's KV copies and fp32 batched GEMMs, timed as a decode step's are
    math_copies, math_gemms = unexpanded_math_work(arch, rt.profile, tp, batch, prompt, queries=prompt)
    return PhaseCost(
        matmul_flops=prefill_matmul_flops(arch, batch, prompt, logits_positions=positions) / tp - routed_flops,
        attention_flops=attention * fused,
        masked_attention_flops=attention * masked / every,
        weight_bytes=(sharded_weights_bytes(arch, rt.weight_format, tp) if expert_groups == 1
                      else expert_parallel_weights_bytes(arch, rt.weight_format, tp, tp * expert_groups))
        - routed_bytes,
        kv_bytes=kv_bytes * prompt / maximum(context, 1),
        elementwise_bytes=prompt_tokens * _elementwise_bytes_per_token(arch, rt, tp)
        + scores * math_sdpa_pass_bytes(act) - routed_elementwise,
        experts=experts,
        layers=layers,
        allreduce_bytes=2 * layers * prompt_tokens * h * act,
        allreduces=2 * layers if tp > 1 else 0,
        host_ops=eager_ops(arch, rt, decode=False, math_layers=math),
        fp32=act == 4,
        math_attention_flops=math_attention_flops(arch, batch, prompt, math) / tp,
        host_prologue=True,
        gemms=_shaped_gemms(arch, rt, tp, batch, prompt, positions, math=0 if math_gemms else math),
        math_kv_copy_elements=math_copies,
        math_gemms=math_gemms,
        strided=strided_elementwise(arch, rt, tp, prompt_tokens) if experts is None else (0.0, 0.0),
    )


def _shaped_gemms(arch: Architecture, rt: Runtime, tp: int, batch: int, prompt: int, positions: int, *,
                  math: int) -> tuple[Gemm, ...]:
    """The prefill's GEMMs by shape where the profile times this dtype's GEMMs so (model.gemms: ``fp32_gemm``, or
    ``gemm`` for 16-bit weights and activations); () otherwise."""
    fp32 = rt.activation_bytes_per_element == 4
    spec = rt.profile.fp32_gemm if fp32 else rt.profile.gemm
    if spec is None or (not fp32 and rt.weight_format.bits_per_weight != 16):
        return ()
    # the math kernel's batched GEMMs are fp32 ones (PyTorch upcasts 16-bit inputs): listed for an fp32 prefill only
    return prefill_gemms(arch, batch, prompt, logits_positions=positions, tp=tp, math_layers=math if fp32 else 0) or ()


def strided_elementwise(arch: Architecture, rt: Runtime, tp: int, tokens: int) -> tuple[float, float]:
    """(bytes, output elements) of a prefill's elementwise operations that CUDA runs on TensorIterator's
    non-vectorized kernels, over all layers on one of ``tp`` ranks (the profile's `elementwise_strided_by_family`;
    (0, 0) where it counts none for the family or gives no rate for them)."""
    counted = rt.profile.elementwise_strided_by_family.get(arch.model_type)
    if counted is None or rt.profile.strided_elements_per_s is None:
        return 0.0, 0.0
    act = rt.activation_bytes_per_element
    passes_h, passes_f, elements_h, elements_f = counted[4:] if act == 4 else counted[:4]
    h, ffn = arch.hidden_size, arch.mlp.intermediate_size / tp
    per_layer = tokens * arch.num_layers
    return (passes_h * h + passes_f * ffn) * act * per_layer, (elements_h * h + elements_f * ffn) * per_layer


def decode_cost(arch: Architecture, rt: Runtime, tp: int, batch: int, context: int, weights_read: float,
                kv_bytes: float) -> PhaseCost:
    """One decode step at ``context`` tokens on one of ``tp`` ranks; ``weights_read`` is what the step reads of all
    ranks' weights, ``kv_bytes`` the rank's KV cache at ``context``."""
    act, h, layers = rt.activation_bytes_per_element, arch.hidden_size, arch.num_layers
    tiles, repeats = rt.profile.decode_attention, rt.profile.repeats_kv
    math_copies, math_gemms = unexpanded_math_work(arch, rt.profile, tp, batch, context)
    return PhaseCost(
        matmul_flops=decode_matmul_flops(arch, batch) / tp,
        attention_flops=attention_flops(arch, batch, 1, past=context - 1) / tp,
        weight_bytes=weights_read / tp,
        kv_bytes=kv_bytes,
        elementwise_bytes=batch * _elementwise_bytes_per_token(arch, rt, tp),
        layers=layers,
        allreduce_bytes=2 * layers * batch * h * act,
        allreduces=2 * layers if tp > 1 else 0,
        grouped_kv=arch.attention.latent is None and arch.attention.num_kv_heads < arch.attention.num_heads,
        host_ops=eager_ops(arch, rt, decode=True),
        fp32=act == 4,
        cache_keys=layers * context,
        cache_streams=walk_streams(arch, tp, batch, repeats),
        cache_head_dim=arch.attention.head_dim,
        # the math kernel reads the cache once, upcasting it, instead of walking it with the decode kernel's tiles
        kv_read_factor=1.0 if math_gemms else kv_read_factor(arch, tiles, tp, repeats),
        kv_copy_elements=kv_bytes * 8 / rt.kv_format.bits_per_weight * repeat_kv_copies(arch, tp, repeats),
        math_kv_copy_elements=math_copies,
        math_gemms=math_gemms,
        gemms=_decode_gemms(arch, rt, tp, batch),
        one_row_gemv=True,
    )


def _decode_gemms(arch: Architecture, rt: Runtime, tp: int, batch: int) -> tuple[Gemm, ...]:
    """An fp32 decode step's GEMMs by shape, one row per sequence, where the profile times fp32 GEMMs so: cuBLAS runs
    two rows or more on GEMM kernels (gemmSN, then SIMT SGEMM tiles) that read an fp32 weight at the fp32 GEMM's share
    of the bandwidth, as a prefill's do, and one row as a GEMV, which streams it at the bandwidth (the step's weight
    read; `timing.PhaseCost.one_row_gemv`; docs/accuracy.md, "Decode time")."""
    if rt.activation_bytes_per_element != 4 or rt.profile.fp32_gemm is None:
        return ()
    return prefill_gemms(arch, batch, 1, logits_positions=1, tp=tp) or ()


def generic_costs(params: int, rt: Runtime, tp: int, batch: int, prompt: int) -> tuple[PhaseCost, PhaseCost]:
    """A model known only by its size: 2 × params FLOPs per token, every weight read once, nothing else."""
    weights = generic_weights_bytes(params, rt.weight_format) / tp
    prefill = PhaseCost(2 * params * batch * prompt / tp, 0, weights, 0, 0, 0)
    decode = PhaseCost(2 * params * batch / tp, 0, weights, 0, 0, 0)
    return prefill, decode


@dataclass(frozen=True)
class JobCosts:
    """Work on one rank: the prefill, the decode step at the full context (the longest), and the decode step at
    the mean context of generation (prompt + output / 2), which sets tokens/s."""

    prefill: PhaseCost
    decode: PhaseCost
    step: PhaseCost


def job_costs(model: ModelSpec, rt: Runtime, tp: int, batch: int, prompt: int, output: int,
              kv_bytes: float, *, expert_groups: int = 1) -> JobCosts:
    """The phases of ``batch`` sequences of ``prompt`` + ``output`` tokens on one of ``tp`` ranks, whose KV cache
    at the full context is ``kv_bytes`` (see `footprint.memory_per_gpu`); ``expert_groups``: the attention groups
    an expert-parallel group spans (`compute.decode_weight_bytes`)."""
    arch = model.arch
    if arch is None:
        assert model.generic_params is not None
        prefill, decode = generic_costs(model.generic_params, rt, tp, batch, prompt)
        return JobCosts(prefill, decode, decode)
    read_full = decode_weight_bytes(arch, rt.weight_format, batch, expert_groups=expert_groups)
    context, mean_context = prompt + output, prompt + output // 2
    return JobCosts(prefill_cost(arch, rt, tp, batch, prompt, context, kv_bytes, expert_groups),
                    decode_cost(arch, rt, tp, batch, context, read_full, kv_bytes),
                    decode_cost(arch, rt, tp, batch, mean_context, read_full,
                                rank_kv_bytes(arch, rt, tp, batch, mean_context)))
