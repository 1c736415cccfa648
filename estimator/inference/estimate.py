"""`estimate`: model + GPU + workload → Report. Orchestration only; every formula lives in `estimator.model`."""

from __future__ import annotations

from estimator.catalog.architecture import ModelSpec
from estimator.catalog.specs import GpuSpec
from estimator.errors import WorkloadInvalid
from estimator.inference.report import (
    GpuInfo,
    KvPart,
    MemoryReport,
    ModelInfo,
    Report,
    TimeReport,
    WeightPart,
    WorkloadInfo,
)
from estimator.inference.workload import InferenceWorkload
from estimator.model.capacity import gpus_required, max_batch, max_context_tokens
from estimator.model.compute import decode_weight_bytes, expected_distinct_experts
from estimator.model.footprint import memory_per_gpu
from estimator.model.inventory import active_param_count, param_count
from estimator.model.memory import (
    generic_weights_bytes,
    kv_cache_bytes,
    kv_cache_layers,
    kv_heads_divisor,
    weight_shares,
    weights_bytes,
)
from estimator.model.parallel import valid_tensor_parallel
from estimator.model.phases import generic_costs, phase_costs
from estimator.model.timing import Hardware, PhaseCost, PhaseTime, peak_for, phase_time
from estimator.units import format_bytes, format_flops, format_rate_bytes, format_seconds


def estimate(model: ModelSpec, gpu: GpuSpec, workload: InferenceWorkload, *, requested_gpu: str = "") -> Report:
    """Memory and time of ``workload`` running ``model`` on ``workload.tensor_parallel`` × ``gpu``."""
    w = workload
    arch = model.arch
    tp = w.tensor_parallel
    reason = valid_tensor_parallel(arch, tp)
    if reason:
        raise WorkloadInvalid(reason)
    warnings: list[str] = []
    assumptions: list[str] = []
    explain: list[str] = []

    dtype, peak = peak_for(gpu, w.weight_format.compute_dtype)
    if dtype != w.weight_format.compute_dtype:
        warnings.append(f"{gpu.name} has no {w.weight_format.compute_dtype} tensor rate; compute uses its {dtype}"
                        " peak (kernels dequantize or cast)")
    if w.kv_format.name not in ("fp32", "fp16", "bf16", "fp8", "int8"):
        raise WorkloadInvalid(f"--kv-dtype {w.kv_format.name} is not a KV-cache format; use bf16, fp16, fp8 or int8")

    mem = memory_per_gpu(model, gpu, w, tp, w.batch, w.prompt_tokens, w.output_tokens)
    capacity = gpu.memory_bytes
    required = gpus_required(model, gpu, w, w.batch, w.prompt_tokens, w.output_tokens)
    if required is None:
        warnings.append(f"does not fit on any tensor-parallel group of {gpu.name} cards up to the model's head count")
    elif mem.per_gpu > capacity:
        warnings.append(f"does not fit on {tp} × {gpu.name}: needs {required}")

    if arch is None:
        assert model.generic_params is not None
        params = active = model.generic_params
        total_weights = generic_weights_bytes(params, w.weight_format)
        shares: tuple[WeightPart, ...] = (
            WeightPart(role="all", params=params, bits_per_weight=w.weight_format.bits_per_weight,
                       bytes=total_weights),)
        kv_parts: tuple[KvPart, ...] = ()
        kv_per_token = None
        prefill_cost, decode_cost = generic_costs(params, w, tp, w.batch, w.prompt_tokens)
        step_cost = decode_cost
        warnings.append("KV cache and activations not computed: a model given only by its size has no "
                        "architecture (pass a catalog name or a config.json)")
        warnings.append("max_batch and max_context_tokens not computed: they need the KV cache and activations")
        warnings.append("prefill time counts 2 × params FLOPs per token without attention; decode reads weights only")
    else:
        params, active = param_count(arch), active_param_count(arch)
        total_weights = weights_bytes(arch, w.weight_format)
        shares = tuple(WeightPart(role=s.role.value, params=s.numel, bits_per_weight=float(s.bits), bytes=s.bytes)
                       for s in weight_shares(arch, w.weight_format))
        decompressed = w.mla_layout == "decompressed"
        divisor = kv_heads_divisor(arch, tp)
        layers_kv = kv_cache_layers(arch, w.context_tokens, w.batch, w.kv_format, decompressed_mla=decompressed,
                                    kv_heads_divisor=divisor) if arch.causal else []
        kv_parts = tuple(KvPart(window=g.window, layers=g.layers, tokens=g.tokens, bytes=g.bytes) for g in layers_kv)
        kv_per_token = kv_cache_bytes(arch, 1, 1, w.kv_format, decompressed_mla=decompressed) if arch.causal else 0
        mean_context = w.prompt_tokens + w.output_tokens // 2
        read_full = decode_weight_bytes(arch, w.weight_format, w.batch)
        prefill_cost, decode_cost = phase_costs(arch, w, tp, w.batch, w.prompt_tokens, w.context_tokens, read_full,
                                                mem.kv or 0)
        mean_kv = kv_cache_bytes(arch, mean_context, w.batch, w.kv_format, decompressed_mla=decompressed,
                                 kv_heads_divisor=divisor) if arch.causal else 0
        _, step_cost = phase_costs(arch, w, tp, w.batch, w.prompt_tokens, mean_context, read_full, mean_kv)
        if not arch.causal:
            warnings.append(f"{model.name} is an encoder: no KV cache and no token-by-token decoding")
        if arch.attention.latent is not None:
            assumptions.append(
                "multi-head latent attention: KV cache holds " + (
                    "decompressed K and V per head (Hugging Face transformers' layout)" if decompressed else
                    "the compressed latent + RoPE key (kv_lora_rank + qk_rope_head_dim), as serving engines do"))
        if arch.max_position_embeddings and w.context_tokens > arch.max_position_embeddings:
            warnings.append(f"context {w.context_tokens:,} tokens exceeds the model's max_position_embeddings "
                            f"{arch.max_position_embeddings:,}")

    experts_read = None
    if arch is not None and arch.moe is not None:
        experts_read = expected_distinct_experts(arch.moe.num_experts, arch.moe.experts_per_token, w.batch)
    hw = Hardware(peak, gpu.bandwidth_bytes_per_s, gpu.memory_type, gpu.interconnect_bytes_per_s, tp)
    prefill = phase_time(prefill_cost, hw, w.profile)
    decoding = arch is None or arch.causal
    decode: PhaseTime | None = phase_time(decode_cost, hw, w.profile) if decoding else None
    step: PhaseTime | None = phase_time(step_cost, hw, w.profile) if decoding else None

    assumptions += [
        f"efficiency profile '{w.profile.name}': {w.profile.description}",
        f"capacity is what the device reports: {format_bytes(capacity, binary=True)} per GPU"
        if gpu.reported_memory_mib else f"capacity is the marketed {gpu.memory_gb:g} GB (reported figure unknown)",
        "KV cache holds prompt + output tokens for every sequence; decode_step_s is the step at that full context "
        "(the longest); tokens/s is at the mean context of generation (prompt + output / 2)",
        f"logits computed for {'every prompt position' if w.logits == 'all' else 'the last position only'}",
    ]
    if tp > 1:
        assumptions.append(f"tensor parallel over {tp} GPUs: linear layers and vocabulary split, norms replicated")

    memory = MemoryReport(
        weights_bytes=total_weights,
        kv_cache_bytes=None if mem.kv is None else mem.kv * (1 if tp == 1 else tp),
        activation_bytes=None if mem.activation is None else mem.activation * tp,
        overhead_bytes=mem.overhead * tp,
        total_bytes=mem.per_gpu * tp,
        per_gpu_bytes=mem.per_gpu,
        capacity_bytes=capacity,
        gpus_required=required,
        fits=mem.per_gpu <= capacity,
        headroom_bytes=capacity - mem.per_gpu,
        max_batch=max_batch(model, gpu, w, tp, w.prompt_tokens, w.output_tokens),
        max_context_tokens=max_context_tokens(model, gpu, w, tp, w.batch, w.output_tokens),
        kv_cache_per_token_bytes=kv_per_token,
        weights_by_role=shares,
        kv_by_window=kv_parts,
    )
    tokens_per_s = None if step is None else w.batch / step.expected_s
    time = TimeReport(
        prefill_s=prefill.expected_s,
        prefill_bound_s=prefill.bound_s,
        prefill_bound=prefill.bound,
        decode_step_s=None if decode is None else decode.expected_s,
        decode_step_bound_s=None if decode is None else decode.bound_s,
        bound=None if decode is None else decode.bound,
        time_to_first_token_s=prefill.expected_s,
        tokens_per_s=tokens_per_s,
        tokens_per_s_bound=None if step is None else w.batch / step.bound_s,
        tokens_per_s_per_sequence=None if tokens_per_s is None else tokens_per_s / w.batch,
        prefill_flops=prefill_cost.flops * tp,
        prefill_bytes=prefill_cost.bytes * tp,
        decode_bytes=None if decode is None else decode_cost.bytes * tp,
        decode_flops=None if decode is None else decode_cost.flops * tp,
        communication_s=prefill.communication_s + (0.0 if decode is None else decode.communication_s),
        experts_read_per_layer=experts_read,
    )
    explain += _explain(memory, prefill_cost, decode_cost, hw, decode, prefill, w, gpu)
    if experts_read is not None and arch is not None and arch.moe is not None:
        e, k = arch.moe.num_experts, arch.moe.experts_per_token
        explain.append(f"MoE decode: {e} × (1 − (1 − {k}/{e})^{w.batch}) = {experts_read:.2f} of {e} experts read "
                       "per layer per step")
    return Report(
        model=ModelInfo(
            name=model.name, params=params, active_params=active,
            architecture=None if arch is None else arch.model_type,
            layers=None if arch is None else arch.num_layers,
            hidden_size=None if arch is None else arch.hidden_size,
            kv_cache_kind=None if arch is None else arch.kv_cache_kind,
        ),
        gpu=GpuInfo(name=gpu.name, requested_as=requested_gpu or gpu.name, memory_type=gpu.memory_type,
                    memory_bytes=capacity, bandwidth_bytes_per_s=gpu.bandwidth_bytes_per_s, peak_flop_per_s=peak,
                    compute_dtype=dtype),
        workload=WorkloadInfo(batch=w.batch, prompt_tokens=w.prompt_tokens, output_tokens=w.output_tokens,
                              dtype=w.weight_format.name, kv_dtype=w.kv_format.name, gpus=tp, logits=w.logits,
                              profile=w.profile.name,
                              mla_cache=w.mla_layout if arch is not None and arch.attention.latent else None),
        memory=memory,
        time=time,
        assumptions=tuple(assumptions),
        warnings=tuple(warnings),
        explain=tuple(explain),
    )


def _explain(memory: MemoryReport, prefill_cost: PhaseCost, decode_cost: PhaseCost, hw: Hardware,
             decode: PhaseTime | None, prefill: PhaseTime, w: InferenceWorkload, gpu: GpuSpec) -> list[str]:
    """The arithmetic behind the headline numbers, with the numbers in it."""
    def gb(n: float) -> str:
        return format_bytes(n, binary=False)

    lines = []
    for part in memory.weights_by_role:
        lines.append(f"weights[{part.role}]: {part.params:,} params × {part.bits_per_weight:g} bits ÷ 8 = "
                     f"{gb(part.bytes)}")
    for kv in memory.kv_by_window:
        span = "global" if kv.window is None else f"window {kv.window:,}"
        lines.append(f"KV cache[{span}]: {kv.layers} layers × {kv.tokens:,} tokens × {w.batch} sequences "
                     f"({w.kv_format.name}) = {gb(kv.bytes)}")
    lines.append(f"per GPU: weights + KV + activations + overhead = {gb(memory.per_gpu_bytes)} of "
                 f"{gb(memory.capacity_bytes)} ({'fits' if memory.fits else 'does not fit'})")
    tp = w.tensor_parallel
    lines.append(f"prefill bound: {prefill_cost.flops * tp:.3e} FLOP ÷ ({tp} GPU × {format_flops(hw.peak_flop_per_s)})"
                 f" = {format_seconds(prefill.bound_s)} ({prefill.bound})")
    if decode is not None:
        lines.append(f"decode bound: {gb(decode_cost.bytes)} ÷ {format_rate_bytes(gpu.bandwidth_bytes_per_s)} = "
                     f"{format_seconds(decode_cost.bytes / hw.bandwidth_bytes_per_s)} per token"
                     + (" (per GPU)" if tp > 1 else ""))
        lines.append(f"decode expected ({w.profile.name}): {format_seconds(decode.expected_s)} per step "
                     f"(memory {format_seconds(decode.memory_s)}, compute {format_seconds(decode.compute_s)}, "
                     f"communication {format_seconds(decode.communication_s)})")
    return lines
