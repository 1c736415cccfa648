"""`estimate_training`: model + GPU + TrainingWorkload → TrainingReport. Orchestration of the pure terms in
train_states (model states) and train_activations (saved tensors), plus the step-time model.

Peak memory per GPU is the largest of three phases of a steady-state step (the first step is lower: optimizer
states are created lazily during it):
  forward-backward  resident states + autocast copies + saved activations + the loss gradients at backward start
  recompute         (full recomputation) resident + layer checkpoints + one layer's activations rebuilt
  optimizer-step    weights + gradients + master + optimizer states + the step's temporaries
Gradients are resident during forward only when they persist between micro-batches (gradient accumulation);
otherwise ``zero_grad(set_to_none=True)`` (PyTorch ≥ 2.0 default; DeepSpeed and FSDP free reduced gradients
likewise) frees them before forward.

Step time = executed FLOPs / (peak × profile.train_flop_efficiency) / (1 − pipeline bubble) + optimizer step
(memory bound: every state read and written once) + data-parallel gradient synchronisation and tensor-parallel
all-reduces over the interconnect (not overlapped: conservative). Model FLOPs per token 6N + 3 × attention
forward (Kaplan et al. 2020; PaLM, Chowdhery et al. 2022, appendix B for MFU); full recompute adds one forward
(2N + attention); LoRA skips the frozen weights' gradients (4N + 6 N_adapter).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from estimator.catalog.architecture import ModelSpec
from estimator.catalog.specs import GpuSpec
from estimator.errors import WorkloadInvalid
from estimator.inference.report import GpuInfo, ModelInfo
from estimator.model.compute import attention_flops, linear_params_per_token
from estimator.model.inventory import active_param_count, lm_head_numel, param_count, tensor_inventory
from estimator.model.memory import runtime_overhead_bytes
from estimator.model.timing import peak_for
from estimator.notes import Note, NoteCode, note
from estimator.training.activations import (
    Trainable,
    bytes_for,
    hf_convention,
    layer_input_bytes_per_token,
    layer_saved_tensors,
    output_stage,
    per_token_bytes,
)
from estimator.training.report import (
    ActivationPart,
    PeakPhase,
    TrainingMemoryReport,
    TrainingReport,
    TrainingTimeReport,
    TrainingWorkloadInfo,
)
from estimator.training.states import (
    adafactor_state_bytes,
    autocast_weight_numel,
    frozen_base_bytes,
    lora_params,
    model_states,
    optimizer_step_transient_bytes,
    state_dtype_bytes,
)
from estimator.training.workload import ALL_LORA_TARGETS, TrainingWorkload, check_layout


@dataclass(frozen=True)
class _Phases:
    forward_backward: int
    recompute: int
    optimizer_step: int

    def peak(self) -> tuple[PeakPhase, int]:
        phases: list[tuple[PeakPhase, int]] = [("forward-backward", self.forward_backward),
                                               ("recompute", self.recompute), ("optimizer-step", self.optimizer_step)]
        return max(phases, key=lambda p: p[1])


def _ring_s(volume_bytes: float, n: int, link_bytes_per_s: float | None, efficiency: float, factor: float) -> float:
    """Ring collective: factor × (n − 1)/n × bytes over the per-direction link (all-reduce factor 2; ZeRO-3's
    gather + gather + reduce-scatter 3; Rajbhandari et al. 2020 §7)."""
    if n <= 1 or volume_bytes == 0:
        return 0.0
    if link_bytes_per_s is None:
        raise WorkloadInvalid("this GPU's spec has no interconnect_gb_per_s; multi-GPU step time needs it")
    return factor * (n - 1) / n * volume_bytes / (link_bytes_per_s / 2 * efficiency)


def estimate_training(model: ModelSpec, gpu: GpuSpec, workload: TrainingWorkload, *,
                      requested_gpu: str = "") -> TrainingReport:
    """Per-GPU memory and step time of ``workload`` training ``model`` on ``workload.gpus`` × ``gpu``."""
    w = workload
    arch = model.arch
    if arch is None:
        raise WorkloadInvalid(f"training estimates need an architecture; {model.name!r} is only a parameter count "
                              "(pass a catalog name or a config.json)")
    check_layout(arch, w)
    warnings: list[Note] = []
    assumptions: list[Note] = []
    prof = w.profile
    dtype, peak = peak_for(gpu, w.compute_dtype)
    if dtype != w.compute_dtype:
        warnings.append(note(NoteCode.TRAIN_COMPUTE_FALLBACK, gpu=gpu.name, wanted=w.compute_dtype, used=dtype))

    # --- model states ------------------------------------------------------------------------------------------
    n_params = param_count(arch)
    mp = w.tp * w.pp
    stage = w.shard_stage
    deepspeed = w.fsdp is None and stage > 0
    lora = w.lora_rank is not None
    trainable_params = lora_params(arch, w.lora_rank, w.lora_targets) if w.lora_rank is not None else n_params
    frozen = frozen_base_bytes(arch, w) if lora else 0
    s_bytes = state_dtype_bytes(w.precision)
    adafactor = adafactor_state_bytes(arch, s_bytes) if w.optimizer == "adafactor" and not lora else 0
    states = model_states(trainable_params, w.precision, w.optimizer, stage=stage, dp=w.dp, model_parallel=mp,
                          deepspeed=deepspeed, adafactor_bytes=adafactor, frozen_bytes=frozen)
    c_bytes = 4 if w.compute_dtype == "fp32" else 2
    autocast = 0
    if w.amp and stage == 0:
        cast = 2 * trainable_params if lora else 2 * autocast_weight_numel(arch)
        autocast = math.ceil(cast / mp)
    gathered = 0
    if stage == 3 or w.fsdp is not None:
        layer_params = sum(g.numel for g in tensor_inventory(arch) if g.count == arch.num_layers)
        unit = max(layer_params, arch.vocab_size * arch.hidden_size)
        gathered = math.ceil(2 * unit * c_bytes / w.tp)  # the unit in use and the one prefetched
        if w.fsdp == "grad-op":  # SHARD_GRAD_OP keeps unsharded parameters from forward to backward
            gathered = math.ceil(trainable_params * c_bytes / mp)
    ddp_buckets = states.gradient_bytes if w.dp > 1 and stage == 0 else 0
    grads_resident = w.grad_accum > 1
    resident = states.weights_bytes + states.master_bytes + states.optimizer_bytes + ddp_buckets
    if grads_resident:
        resident += states.gradient_bytes
    largest = max(g.numel for g in tensor_inventory(arch))
    opt_params = math.ceil(trainable_params / mp / (w.dp if stage >= 1 else 1))
    step_transient = optimizer_step_transient_bytes(w.optimizer, optimizer_params=opt_params, state_bytes=s_bytes,
                                                    largest_tensor=largest, foreach=not deepspeed)

    # --- activations ---------------------------------------------------------------------------------------------
    residual = 4 if (w.precision == "fp32" or (w.amp and not lora and not deepspeed and w.fsdp is None)) else 2
    conv = hf_convention(arch, residual_bytes=residual, compute_bytes=c_bytes)
    trainable = Trainable(linears=frozenset(w.lora_targets) if lora else frozenset(ALL_LORA_TARGETS), norms=not lora,
                          head=not lora)
    layer = layer_saved_tensors(arch, conv, trainable, seq_len=w.seq_len, attention=w.attention)
    tokens = w.tokens_per_micro_batch
    sp, selective = w.sequence_parallel, w.recompute == "selective"
    per_layer_token = per_token_bytes(layer, tp=w.tp, sequence_parallel=sp, selective=selective)
    per_layer = bytes_for(per_layer_token, tokens)
    stage_layers = arch.num_layers // w.pp
    in_flight = min(w.pp, w.grad_accum)
    if w.recompute == "full":
        kept_token = layer_input_bytes_per_token(arch, conv, tp=w.tp, sequence_parallel=sp)
        recompute = per_layer
    else:
        kept_token, recompute = per_layer_token, 0
    first_stage = bytes_for(kept_token * stage_layers * in_flight, tokens)
    last_stage = bytes_for(kept_token * stage_layers, tokens)
    out = output_stage(arch, conv, trainable)
    output_bytes = bytes_for(per_token_bytes(out.saved, tp=w.tp, sequence_parallel=sp), tokens)
    loss_bwd = bytes_for(out.loss_backward_bytes / w.tp, tokens)
    if w.pp == 1 or first_stage >= last_stage + output_bytes + loss_bwd:
        activation, on_last = first_stage + (output_bytes if w.pp == 1 else 0), w.pp == 1
    else:
        activation, on_last = last_stage + output_bytes, True
    loss_now = loss_bwd if on_last else 0
    base = resident + autocast + gathered
    phases = _Phases(
        forward_backward=base + activation + loss_now,
        recompute=(base + activation - (output_bytes if on_last else 0) + recompute) if recompute else 0,
        optimizer_step=states.total_bytes + ddp_buckets + step_transient,
    )
    peak_phase, peak_tensors = phases.peak()
    # allocator slack applies to what is allocated and freed every step, not to the long-lived states
    dynamic = autocast + gathered + max(activation + loss_now + recompute, step_transient)
    overhead = runtime_overhead_bytes(gpu.memory_bytes, prof, tensor_parallel=w.gpus, dynamic_bytes=dynamic)
    per_gpu = peak_tensors + overhead
    capacity = gpu.memory_bytes

    # --- time ------------------------------------------------------------------------------------------------------
    step_tokens = tokens * w.grad_accum  # per data-parallel replica
    linear = linear_params_per_token(arch) + lm_head_numel(arch)
    attn_fwd = attention_flops(arch, w.batch, w.seq_len) / tokens
    adapters = trainable_params if lora else 0
    base_train = 4 * linear if lora else 6 * linear
    model_flops_token = base_train + 6 * adapters + 3 * attn_fwd
    extra = (2 * linear + attn_fwd) if w.recompute == "full" else (attn_fwd if selective and
                                                                    w.attention == "eager" else 0)
    executed_gpu = (model_flops_token + extra) * step_tokens / mp
    bubble = (w.pp - 1) / (w.grad_accum + w.pp - 1)
    compute_s = executed_gpu / (peak * prof.train_flop_efficiency) / (1 - bubble)
    bandwidth = gpu.bandwidth_bytes_per_s * prof.bandwidth_fraction(gpu.memory_type)
    optimizer_s = 2 * (states.total_bytes + step_transient) / bandwidth
    link, eff = gpu.interconnect_bytes_per_s, prof.interconnect_efficiency
    grad_wire = 2 if deepspeed or w.precision == "bf16" else (4 if w.compute_dtype == "fp32" or w.amp else 2)
    shard_params = trainable_params / mp
    if stage == 3:
        dp_s = _ring_s(shard_params * c_bytes, w.dp, link, eff, 3)
    else:
        dp_s = _ring_s(shard_params * grad_wire, w.dp, link, eff, 2)
    tp_volume = 4 * stage_layers * w.grad_accum * tokens * arch.hidden_size * c_bytes
    tp_s = _ring_s(tp_volume, w.tp, link, eff, 2)
    communication_s = dp_s + tp_s
    step_s = compute_s + optimizer_s + communication_s
    bound_s = max(executed_gpu / peak, communication_s * eff)
    model_flops_step = model_flops_token * step_tokens * w.dp
    mfu = model_flops_step / step_s / (w.gpus * peak)

    # --- words -----------------------------------------------------------------------------------------------------
    if arch.max_position_embeddings and w.seq_len > arch.max_position_embeddings:
        warnings.append(note(NoteCode.SEQ_LEN_TOO_LONG, tokens=w.seq_len, limit=arch.max_position_embeddings))
    if selective and w.attention != "eager":
        warnings.append(note(NoteCode.SELECTIVE_RECOMPUTE_NOOP, attention=w.attention))
    if w.pp > 1 and w.grad_accum < w.pp:
        warnings.append(note(NoteCode.PIPELINE_BUBBLE, stages=w.pp, micro_batches=w.grad_accum, idle_fraction=bubble))
    if per_gpu > capacity:
        warnings.append(note(NoteCode.TRAIN_DOES_NOT_FIT, per_gpu_bytes=per_gpu, capacity_bytes=capacity))
    assumptions += [
        note(NoteCode.PROFILE, profile=prof.name, description=prof.description),
        note(NoteCode.SAVED_ACTIVATIONS, residual="fp32" if residual == 4 else "16-bit", attention=w.attention),
        note(NoteCode.LOSS_ONLY), note(NoteCode.STEADY_STATE), note(NoteCode.NO_OVERLAP),
    ]
    if w.amp and stage == 0 and w.fsdp is None:
        assumptions.append(note(NoteCode.AMP))
    if deepspeed:
        assumptions.append(note(NoteCode.DEEPSPEED))
    if w.lora_rank is not None:
        assumptions.append(note(NoteCode.LORA, rank=w.lora_rank, targets=",".join(w.lora_targets),
                                base=w.qlora.name if w.qlora else "16 bit"))
    if w.pp > 1:
        assumptions.append(note(NoteCode.PIPELINE_1F1B, in_flight=in_flight))

    explain = [
        note(NoteCode.MODEL_STATES, trainable_params=trainable_params, weights_bytes=states.weights_bytes,
             gradient_bytes=states.gradient_bytes, master_bytes=states.master_bytes,
             optimizer_bytes=states.optimizer_bytes, zero_stage=stage, dp=w.dp, model_parallel=mp),
        note(NoteCode.LAYER_ACTIVATIONS, bytes_per_token=float(per_layer_token), tokens=tokens, bytes=per_layer,
             layers=stage_layers, in_flight=in_flight, full_recompute=w.recompute == "full"),
        note(NoteCode.OUTPUT_AND_LOSS, saved_bytes=output_bytes, loss_gradient_bytes=loss_bwd),
        note(NoteCode.PEAK_PHASE, phase=peak_phase, tensor_bytes=peak_tensors, overhead_bytes=overhead,
             per_gpu_bytes=per_gpu),
        note(NoteCode.STEP_TIME, flops_per_gpu=executed_gpu, peak_flop_per_s=peak,
             efficiency=prof.train_flop_efficiency, compute_s=compute_s, optimizer_s=optimizer_s,
             communication_s=communication_s),
    ]
    parts = tuple(ActivationPart(name=t.name, bytes_per_token=float(t.bytes_per_token),
                                 bytes=bytes_for(per_token_bytes([t], tp=w.tp, sequence_parallel=sp), tokens))
                  for t in layer)
    memory = TrainingMemoryReport(
        weights_bytes=states.weights_bytes, gradient_bytes=states.gradient_bytes,
        master_weights_bytes=states.master_bytes, optimizer_bytes=states.optimizer_bytes,
        model_states_bytes=states.total_bytes, trainable_params=trainable_params, autocast_copy_bytes=autocast,
        gathered_params_bytes=gathered, ddp_bucket_bytes=ddp_buckets, activation_bytes=activation,
        activation_per_layer_bytes=per_layer, in_flight_micro_batches=in_flight, output_layer_bytes=output_bytes,
        loss_backward_bytes=loss_bwd, recompute_bytes=recompute, optimizer_step_bytes=step_transient,
        peak_phase=peak_phase, peak_tensor_bytes=peak_tensors, overhead_bytes=overhead, per_gpu_bytes=per_gpu,
        total_bytes=per_gpu * w.gpus, capacity_bytes=capacity, fits=per_gpu <= capacity,
        headroom_bytes=capacity - per_gpu, layer_tensors=parts,
    )
    time = TrainingTimeReport(
        step_s=step_s, step_bound_s=bound_s, compute_s=compute_s, optimizer_s=optimizer_s,
        communication_s=communication_s, pipeline_bubble_fraction=bubble,
        tokens_per_s=step_tokens * w.dp / step_s, mfu=mfu, model_flops_per_step=model_flops_step,
        executed_flops_per_gpu=executed_gpu,
    )
    return TrainingReport(
        model=ModelInfo(name=model.name, params=n_params, active_params=active_param_count(arch),
                        architecture=arch.model_type, layers=arch.num_layers, hidden_size=arch.hidden_size,
                        kv_cache_kind=arch.kv_cache_kind),
        gpu=GpuInfo(name=gpu.name, requested_as=requested_gpu or gpu.name, memory_type=gpu.memory_type,
                    memory_bytes=capacity, bandwidth_bytes_per_s=gpu.bandwidth_bytes_per_s, peak_flop_per_s=peak,
                    compute_dtype=dtype),
        workload=TrainingWorkloadInfo(
            batch=w.batch, seq_len=w.seq_len, grad_accum=w.grad_accum, tokens_per_step=step_tokens * w.dp,
            precision=w.precision, optimizer=w.optimizer, recompute=w.recompute, attention=w.attention,
            zero=w.zero, fsdp=w.fsdp, dp=w.dp, tp=w.tp, pp=w.pp, gpus=w.gpus, sequence_parallel=sp,
            lora_rank=w.lora_rank, lora_targets=w.lora_targets if lora else None,
            qlora=w.qlora.name if w.qlora else None, profile=prof.name),
        memory=memory, time=time, assumptions=tuple(assumptions), warnings=tuple(warnings), explain=tuple(explain),
    )
