"""`estimate_training`: model + GPU + TrainingWorkload → TrainingReport. Orchestration of the pure terms in
train_states (model states) and train_activations (saved tensors), plus the step-time model.

Peak memory per GPU is the largest of three phases of a steady-state step (`estimator.training.step_phases`; the
first step is lower: optimizer states are created lazily during it). Gradients are resident during forward only when
they persist between micro-batches (gradient accumulation); otherwise ``zero_grad(set_to_none=True)`` (PyTorch ≥ 2.0
default; DeepSpeed and FSDP free reduced gradients likewise) frees them before forward.

Step time (`estimator.training.step_time`) = compute (eager: `eager_step`'s kernels beside the host's dispatch)
÷ (1 − pipeline bubble) + optimizer step + the traffic the profile does not run behind compute (its
``train_overlap_*``). Model FLOPs per token 6N + 3 × attention forward (Kaplan et al. 2020; PaLM, appendix B for
MFU); full recompute adds one forward (2N + attention); LoRA skips the frozen weights' gradients (4N + 6 N_adapter).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from fractions import Fraction

from estimator.catalog.architecture import Architecture, ModelSpec
from estimator.catalog.specs import GpuSpec
from estimator.catalog.systems import SystemSpec
from estimator.errors import FieldInvalid
from estimator.model.attention_kernels import runs_math_attention
from estimator.model.capacity import largest_true, within_position_limit
from estimator.model.inventory import active_param_count, param_count, tensor_inventory
from estimator.model.memory import runtime_overhead_bytes
from estimator.model.timing import peak_for
from estimator.notes import Note, NoteCode, note
from estimator.notes.config_notes import config_notes
from estimator.report import MAX_BATCH, MAX_TOKENS, GpuInfo, ModelInfo
from estimator.training.activations import (
    SavedTensor,
    Trainable,
    bytes_for,
    hf_convention,
    layer_input_bytes_per_token,
    layer_saved_tensors,
    output_stage,
    per_token_bytes,
)
from estimator.training.eager_step import dispatch_notes
from estimator.training.experts import expert_notes, held_params, sharded_states
from estimator.training.pipeline import held_layer_micro_batches, stages
from estimator.training.report import (
    ActivationPart,
    PeakPhase,
    PhaseMemory,
    PhaseTerm,
    TrainingMemoryReport,
    TrainingReport,
    TrainingTimeReport,
    TrainingWorkloadInfo,
)
from estimator.training.stage_params import autocast_share, linear_share, weight_share
from estimator.training.states import (
    ModelStates,
    adafactor_state_bytes,
    autocast_weight_numel,
    checkpointed_autocast_numel,
    fp8_weight_numel,
    frozen_base_bytes,
    lora_params,
    optimizer_step_transient_bytes,
    state_dtype_bytes,
)
from estimator.training.step_phases import Held, Phases, step_phases
from estimator.training.step_time import StepInputs, StepTime, fp8_gemm_peak, step_time
from estimator.training.workload import ALL_LORA_TARGETS, TrainingWorkload, check_layout


@dataclass(frozen=True)
class _States:
    """Model states on one GPU and the state-sized buffers a step holds beside them."""

    trainable_params: int
    states: ModelStates
    autocast: int  # 16-bit weight copies autocast keeps from forward to backward
    autocast_layers: int  # of those, the recomputed layers' (full recompute: not saved for backward)
    gathered: int  # ZeRO-3/FSDP parameters gathered for the unit in use and the one prefetched
    fp8_weights: int  # FP8 training: the FP8 copy of every linear weight, kept from forward to backward
    ddp_buckets: int
    step_transient: int  # the optimizer step's temporaries
    compute_bytes: int  # bytes per element of the 16- or 32-bit compute dtype
    deepspeed: bool


def _model_states(arch: Architecture, w: TrainingWorkload) -> _States:
    mp, stage = w.tp * w.pp, w.shard_stage
    deepspeed = w.fsdp is None and stage > 0 and not w.fp8  # FP8: Megatron-LM's distributed optimizer
    lora = w.lora_rank is not None
    trainable_params = lora_params(arch, w.lora_rank, w.lora_targets) if w.lora_rank is not None else param_count(arch)
    s_bytes = state_dtype_bytes(w.precision)
    adafactor = adafactor_state_bytes(arch, s_bytes) if w.optimizer == "adafactor" and not lora else 0
    states = sharded_states(arch, w, trainable_params, deepspeed=deepspeed, adafactor_bytes=adafactor,
                            frozen_bytes=frozen_base_bytes(arch, w) if lora else 0)
    c_bytes = 4 if w.compute_dtype == "fp32" else 2
    autocast = autocast_layers = 0
    if w.amp and stage == 0:
        cast = 2 * trainable_params if lora else 2 * held_params(arch, w, autocast_weight_numel(arch))
        autocast = math.ceil(cast * autocast_share(arch, w.pp) / mp)
        if w.recompute == "full" and not lora:  # step_phases: nothing saves the recomputed layers' copies
            layers = 2 * held_params(arch, w, checkpointed_autocast_numel(arch))
            autocast_layers = math.ceil(layers * autocast_share(arch, w.pp) / mp)
    gathered = 0
    if stage == 3 or w.fsdp is not None:
        layer_params = sum(g.numel for g in tensor_inventory(arch) if g.count == arch.num_layers)
        unit = max(layer_params, arch.vocab_size * arch.hidden_size)
        gathered = math.ceil(2 * unit * c_bytes / w.tp)  # the unit in use and the one prefetched
        if w.fsdp == "grad-op":  # SHARD_GRAD_OP keeps unsharded parameters from forward to backward
            gathered = math.ceil(trainable_params * c_bytes / mp)
    ddp_buckets = states.gradient_bytes if w.reduce_group > 1 and stage == 0 else 0
    largest = max(g.numel for g in tensor_inventory(arch))
    held = held_params(arch, w, trainable_params)  # expert parallel: the experts on 1/ep of the GPUs
    opt_params = math.ceil((trainable_params / w.reduce_group if stage >= 1 else held) * weight_share(arch, w.pp) / mp)
    step_transient = optimizer_step_transient_bytes(w.optimizer, optimizer_params=opt_params, state_bytes=s_bytes,
                                                    largest_tensor=largest, foreach=not deepspeed)
    fp8 = math.ceil(held_params(arch, w, fp8_weight_numel(arch)) * linear_share(arch, w.pp) / mp) if w.fp8 else 0
    return _States(trainable_params, states, autocast, autocast_layers, gathered, fp8, ddp_buckets, step_transient,
                   c_bytes, deepspeed)


@dataclass(frozen=True)
class _Activations:
    """Saved activations on the busiest pipeline stage, per GPU."""

    residual_bytes: int  # bytes per element of the residual stream
    layer: list[SavedTensor]
    per_layer_token: Fraction
    per_layer: int
    stage_layers: int
    in_flight: int
    recompute: int  # one layer's activations rebuilt under full recompute (0 otherwise)
    output_bytes: int
    loss_backward: int
    loss_forward: int  # the logits at the loss in the forward (step_phases: the forward's end)
    activation: int
    on_last_stage: bool  # the peak stage holds the output layer and the loss


def _activations(arch: Architecture, w: TrainingWorkload, st: _States) -> _Activations:
    lora = w.lora_rank is not None
    residual = 4 if (w.precision == "fp32" or (w.amp and not lora and not st.deepspeed and w.fsdp is None)) else 2
    conv = hf_convention(arch, residual_bytes=residual, compute_bytes=st.compute_bytes)
    trainable = Trainable(linears=frozenset(w.lora_targets) if lora else frozenset(ALL_LORA_TARGETS), norms=not lora,
                          head=not lora)
    attention = w.attention
    if attention == "sdpa" and runs_math_attention(arch, w.profile, fp32=st.compute_bytes == 4, tokens=w.seq_len):
        # the math SDPA kernel saves what eager attention does: scaled query, repeated K and V, 16-bit probabilities
        attention, conv = "eager", replace(conv, softmax_fp32=False, repeat_kv=True)
    layer = layer_saved_tensors(arch, conv, trainable, seq_len=w.seq_len, attention=attention)
    tokens, sp = w.tokens_per_micro_batch, w.sequence_parallel
    per_layer_token = per_token_bytes(layer, tp=w.tp, sequence_parallel=sp, selective=w.recompute == "selective")
    per_layer = bytes_for(per_layer_token, tokens)
    split = stages(arch.num_layers, w.pp)  # layers per pipeline stage; the busiest sets the step (`training.pipeline`)
    stage_layers, in_flight = max(split), min(w.pp, w.grad_accum)
    if w.recompute == "full":
        kept_token = layer_input_bytes_per_token(arch, conv, tp=w.tp, sequence_parallel=sp)
        recompute = per_layer
    else:
        kept_token, recompute = per_layer_token, 0
    # interleaved: the first stage holds (1 + (pp − 1) / (pp · v)) × as many layers' activations (Korthikanti et al.
    # 2022 §4.2.3)
    interleaved = 1 + Fraction(w.pp - 1, w.pp * w.virtual_stages) if w.virtual_stages > 1 else Fraction(1)
    first_stage = bytes_for(kept_token * held_layer_micro_batches(split, w.grad_accum) * interleaved, tokens)
    last_stage = bytes_for(kept_token * split[-1], tokens)
    out = output_stage(arch, conv, trainable)
    output_bytes = out.bytes(tokens, w.seq_len // w.cp, tp=w.tp, sequence_parallel=sp)
    loss_bwd = bytes_for(out.loss_backward_bytes / w.tp, tokens)
    if w.pp == 1 or first_stage >= last_stage + output_bytes + loss_bwd:
        activation, on_last = first_stage + (output_bytes if w.pp == 1 else 0), w.pp == 1
    else:
        activation, on_last = last_stage + output_bytes, True
    return _Activations(residual, layer, per_layer_token, per_layer, stage_layers, in_flight, recompute, output_bytes,
                        loss_bwd, bytes_for(out.loss_forward_bytes / w.tp, tokens), activation, on_last)


@dataclass(frozen=True)
class _Peak:
    phase: PeakPhase
    tensors: int
    overhead: int
    per_gpu: int
    phases: Phases


def _phases(st: _States, act: _Activations, w: TrainingWorkload) -> Phases:
    s, last = st.states, act.on_last_stage
    return step_phases(Held(
        weights=s.weights_bytes, gradients=s.gradient_bytes, master=s.master_bytes, optimizer=s.optimizer_bytes,
        ddp_buckets=st.ddp_buckets, autocast=st.autocast, autocast_layers=st.autocast_layers, gathered=st.gathered,
        fp8_weights=st.fp8_weights, step_transient=st.step_transient, gradients_persist=w.grad_accum > 1,
        activation=act.activation, output=act.output_bytes if last else 0,
        loss_backward=act.loss_backward if last else 0, loss_forward=act.loss_forward if last else 0,
        recompute=act.recompute, recompute_layers=act.stage_layers))


def _peak(st: _States, act: _Activations, gpu: GpuSpec, w: TrainingWorkload) -> _Peak:
    """The largest of the three phases of a steady-state step, plus the runtime overhead."""
    loss_now = act.loss_backward if act.on_last_stage else 0
    phases = _phases(st, act, w)
    phase, tensors = phases.peak()
    # allocator slack applies to what is allocated and freed every step, not to the long-lived states
    dynamic = (st.autocast + st.gathered + st.fp8_weights
               + max(act.activation + loss_now + act.recompute, st.step_transient))
    overhead = runtime_overhead_bytes(gpu.memory_bytes, w.profile, tensor_parallel=w.gpus, dynamic_bytes=dynamic)
    return _Peak(phase, tensors, overhead, tensors + overhead, phases)


def _fits(arch: Architecture, gpu: GpuSpec, w: TrainingWorkload) -> bool:
    states = _model_states(arch, w)
    return _peak(states, _activations(arch, w, states), gpu, w).per_gpu <= gpu.memory_bytes


def _capacity(model: ModelSpec, arch: Architecture, gpu: GpuSpec, w: TrainingWorkload) -> tuple[int, int, int]:
    """The largest micro-batch at this sequence length, and the longest sequence at this micro-batch (capped at the
    model's own limit, then memory's figure), that fit; 0 where not even one does. `largest_true` finds them, the
    search inference's max_batch and max_context use: a step's memory only grows with either. Under sequence
    parallelism the sequence is searched in multiples of TP (it must divide)."""
    batch = largest_true(lambda b: _fits(arch, gpu, w.model_copy(update={"batch": b})), 1, MAX_BATCH)
    unit = (w.tp if w.sequence_parallel else 1) * (2 * w.cp if w.cp > 1 else 1)  # check_layout's divisibility
    steps = largest_true(lambda k: _fits(arch, gpu, w.model_copy(update={"seq_len": k * unit})), 1,
                         MAX_TOKENS // unit)
    by_memory = max(steps, 0) * unit
    return max(batch, 0), within_position_limit(model, by_memory) or 0, by_memory


def _warnings(arch: Architecture, w: TrainingWorkload, gpu: GpuSpec, dtype: str, time: StepTime,
              peak: _Peak) -> list[Note]:
    warnings = []
    if dtype != w.compute_dtype:
        warnings.append(note(NoteCode.TRAIN_COMPUTE_FALLBACK, gpu=gpu.name, wanted=w.compute_dtype, used=dtype))
    if arch.max_position_embeddings and w.seq_len > arch.max_position_embeddings:
        warnings.append(note(NoteCode.SEQ_LEN_TOO_LONG, tokens=w.seq_len, limit=arch.max_position_embeddings))
    if w.recompute == "selective" and w.attention != "eager":
        warnings.append(note(NoteCode.SELECTIVE_RECOMPUTE_NOOP, attention=w.attention))
    if w.pp > 1 and w.grad_accum < w.pp:
        warnings.append(note(NoteCode.PIPELINE_BUBBLE, stages=w.pp, micro_batches=w.grad_accum,
                             idle_fraction=time.bubble))
    if peak.per_gpu > gpu.memory_bytes:
        warnings.append(note(NoteCode.TRAIN_DOES_NOT_FIT, per_gpu_bytes=peak.per_gpu, capacity_bytes=gpu.memory_bytes))
        warnings.append(note(NoteCode.TIME_HYPOTHETICAL))
    return warnings


def _assumptions(w: TrainingWorkload, st: _States, act: _Activations) -> list[Note]:
    prof = w.profile
    assumptions = [
        note(NoteCode.PROFILE, profile=prof.name, description=prof.description),
        note(NoteCode.SAVED_ACTIVATIONS, residual="fp32" if act.residual_bytes == 4 else "16-bit",
             attention=w.attention),
        note(NoteCode.LOSS_ONLY), note(NoteCode.STEADY_STATE),
        note(NoteCode.OVERLAP, tp=prof.train_overlap_tp, pp=prof.train_overlap_pp, dp=prof.train_overlap_dp,
             gather=prof.train_overlap_gather) if prof.overlaps else note(NoteCode.NO_OVERLAP),
    ]
    if w.amp and w.shard_stage == 0 and w.fsdp is None:
        assumptions.append(note(NoteCode.AMP))
    if st.deepspeed:
        assumptions.append(note(NoteCode.DEEPSPEED))
    if w.fp8:
        assumptions.append(note(NoteCode.FP8_TRAINING))
    if w.lora_rank is not None:
        assumptions.append(note(NoteCode.LORA, rank=w.lora_rank, targets=",".join(w.lora_targets),
                                base=w.qlora.name if w.qlora else "16 bit"))
    if w.pp > 1:
        assumptions.append(note(NoteCode.PIPELINE_1F1B, in_flight=act.in_flight, virtual_stages=w.virtual_stages))
    if w.gpus > 1:  # what more GPUs add to each GPU's memory
        assumptions.append(note(NoteCode.GPU_BUFFERS, gpus=w.gpus, nccl_bytes=prof.nccl_buffer_bytes,
                                ddp_bytes=st.ddp_buckets))
    return assumptions


def _explain(w: TrainingWorkload, st: _States, act: _Activations, peak: _Peak, time: StepTime,
             peak_flop_per_s: float) -> list[Note]:
    s = st.states
    return [
        note(NoteCode.MODEL_STATES, trainable_params=st.trainable_params, weights_bytes=s.weights_bytes,
             gradient_bytes=s.gradient_bytes, master_bytes=s.master_bytes, optimizer_bytes=s.optimizer_bytes,
             zero_stage=w.shard_stage, dp=w.dp, model_parallel=w.tp * w.pp),
        note(NoteCode.LAYER_ACTIVATIONS, bytes_per_token=float(act.per_layer_token), tokens=w.tokens_per_micro_batch,
             bytes=act.per_layer, layers=act.stage_layers, in_flight=act.in_flight,
             full_recompute=w.recompute == "full"),
        note(NoteCode.OUTPUT_AND_LOSS, saved_bytes=act.output_bytes, loss_gradient_bytes=act.loss_backward),
        note(NoteCode.PEAK_PHASE, phase=peak.phase, tensor_bytes=peak.tensors, overhead_bytes=peak.overhead,
             per_gpu_bytes=peak.per_gpu),
        note(NoteCode.STEP_TIME, flops_per_gpu=time.executed_gpu, peak_flop_per_s=peak_flop_per_s,
             efficiency=time.efficiency, compute_s=time.compute_s, optimizer_s=time.optimizer_s,
             communication_s=time.communication_s),
    ]


def _memory_report(w: TrainingWorkload, gpu: GpuSpec, st: _States, act: _Activations, peak: _Peak,
                   capacity: tuple[int, int, int]) -> TrainingMemoryReport:
    s, tokens, card = st.states, w.tokens_per_micro_batch, gpu.memory_bytes
    parts = tuple(ActivationPart(name=t.name, bytes_per_token=float(t.bytes_per_token),
                                 bytes=bytes_for(per_token_bytes([t], tp=w.tp, sequence_parallel=w.sequence_parallel),
                                                 tokens))
                  for t in act.layer)
    return TrainingMemoryReport(
        weights_bytes=s.weights_bytes, gradient_bytes=s.gradient_bytes, master_weights_bytes=s.master_bytes,
        optimizer_bytes=s.optimizer_bytes, model_states_bytes=s.total_bytes, trainable_params=st.trainable_params,
        autocast_copy_bytes=st.autocast, gathered_params_bytes=st.gathered, fp8_weight_bytes=st.fp8_weights,
        ddp_bucket_bytes=st.ddp_buckets,
        activation_bytes=act.activation, activation_per_layer_bytes=act.per_layer,
        in_flight_micro_batches=act.in_flight, output_layer_bytes=act.output_bytes,
        loss_backward_bytes=act.loss_backward, loss_forward_bytes=act.loss_forward, recompute_bytes=act.recompute,
        optimizer_step_bytes=st.step_transient,
        peak_phase=peak.phase, peak_tensor_bytes=peak.tensors, overhead_bytes=peak.overhead,
        per_gpu_bytes=peak.per_gpu, total_bytes=peak.per_gpu * w.gpus, capacity_bytes=card,
        fits=peak.per_gpu <= card, headroom_bytes=card - peak.per_gpu, layer_tensors=parts,
        max_batch=capacity[0], max_seq_len=capacity[1], max_seq_len_by_memory=capacity[2],
        phases=tuple(PhaseMemory(phase=name, terms=tuple(PhaseTerm(term=k, bytes=v) for k, v in terms),
                                 tensor_bytes=sum(v for _, v in terms)) for name, terms in peak.phases.all()),
    )


def _workload_info(w: TrainingWorkload, time: StepTime, arch: Architecture) -> TrainingWorkloadInfo:
    return TrainingWorkloadInfo(
        batch=w.batch, seq_len=w.seq_len, grad_accum=w.grad_accum, tokens_per_step=time.step_tokens * w.dp * w.cp,
        precision=w.precision, optimizer=w.optimizer, recompute=w.recompute, attention=w.attention,
        zero=w.zero, fsdp=w.fsdp, dp=w.dp, tp=w.tp, pp=w.pp, virtual_stages=w.virtual_stages, cp=w.cp, ep=w.ep,
        pipeline_layers=stages(arch.num_layers, w.pp),
        gpus=w.gpus,
        sequence_parallel=w.sequence_parallel,
        lora_rank=w.lora_rank, lora_targets=w.lora_targets if w.lora_rank is not None else None,
        qlora=w.qlora.name if w.qlora else None, profile=w.profile.name)


def estimate_training(model: ModelSpec, gpu: GpuSpec, workload: TrainingWorkload, *, requested_gpu: str = "",
                      system: SystemSpec | None = None, nodes: int = 1) -> TrainingReport:
    """Per-GPU memory and step time of ``workload`` training ``model`` on ``workload.gpus`` × ``gpu`` (on ``nodes``
    × ``system`` when given: each parallel group's traffic over the link it crosses)."""
    w = workload
    arch = model.arch
    if arch is None:
        raise FieldInvalid("model", "training estimates need an architecture; {name} is only a parameter count "
                           "(pass a catalog name or a config.json)", name=repr(model.name))
    check_layout(arch, w)
    if system is not None and w.gpus > nodes * system.gpus_per_node:
        cp = f" × cp {w.cp}" if w.cp > 1 else ""
        raise FieldInvalid("nodes", "{layout} = {count} GPUs do not fit on {nodes_count} × {name} ({held} GPUs): give "
                           "{nodes} {needed} or a smaller layout", layout=f"tp {w.tp} × pp {w.pp} × dp {w.dp}{cp}",
                           count=w.gpus, nodes_count=nodes, name=system.name, held=nodes * system.gpus_per_node,
                           needed=-(-w.gpus // system.gpus_per_node))
    dtype, peak_flop_per_s = peak_for(gpu, w.compute_dtype)
    gemm_peak = fp8_gemm_peak(gpu, w)
    states = _model_states(arch, w)
    act = _activations(arch, w, states)
    peak = _peak(states, act, gpu, w)
    time = step_time(arch, w, gpu, peak_flop_per_s,
                     StepInputs(states.trainable_params, states.states, states.step_transient, states.compute_bytes,
                                states.deepspeed, act.stage_layers, gemm_peak), system)
    experts = expert_notes(arch, w, gpu, system, time.communication.ep_s)
    return TrainingReport(
        model=ModelInfo(name=model.name, params=param_count(arch), active_params=active_param_count(arch),
                        architecture=arch.model_type, layers=arch.num_layers, hidden_size=arch.hidden_size,
                        kv_cache_kind=arch.kv_cache_kind),
        gpu=GpuInfo(name=gpu.name, requested_as=requested_gpu or gpu.name, memory_type=gpu.memory_type,
                    memory_bytes=gpu.memory_bytes, memory_gb=gpu.memory_gb,
                    bandwidth_bytes_per_s=gpu.bandwidth_bytes_per_s,
                    peak_flop_per_s=peak_flop_per_s, compute_dtype=dtype,
                    system=None if system is None else system.name, nodes=None if system is None else nodes,
                    tdp_w=gpu.tdp_w, power_w=None if gpu.tdp_w is None else gpu.tdp_w * w.gpus),
        workload=_workload_info(w, time, arch),
        memory=_memory_report(w, gpu, states, act, peak, _capacity(model, arch, gpu, w)),
        time=TrainingTimeReport(
            step_s=time.step_s, step_bound_s=time.bound_s, compute_s=time.compute_s, optimizer_s=time.optimizer_s,
            communication_s=time.communication_s, tp_communication_s=time.communication.tp_s,
            pp_communication_s=time.communication.pp_s, dp_communication_s=time.communication.dp_s,
            cp_communication_s=time.communication.cp_s, ep_communication_s=time.communication.ep_s,
            exposed_communication_s=time.exposed_s,
            bubble_s=time.compute_s * time.bubble, pipeline_bubble_fraction=time.bubble,
            tokens_per_s=time.step_tokens * w.dp * w.cp / time.step_s, mfu=time.mfu,
            model_flops_per_step=time.model_flops_step, executed_flops_per_gpu=time.executed_gpu,
            hypothetical=peak.per_gpu > gpu.memory_bytes),
        assumptions=(*([note(NoteCode.MODEL_SOURCE, source=model.origin)] if model.origin is not None else []),
                     *_assumptions(w, states, act), *experts[0],
                     *([note(NoteCode.READ_BY_TRANSFORMERS, model=model.name, reader=arch.read_by)] if arch.read_by
                       else [])),
        warnings=(*_warnings(arch, w, gpu, dtype, time, peak),
                  *(note(NoteCode.READ_NOT_HELD, model=model.name, what=what) for what in arch.read_notes),
                  *config_notes(model.name, arch.unread_fields, arch.defaulted_fields)),
        explain=(*_explain(w, states, act, peak, time, peak_flop_per_s), *experts[1],
                 *dispatch_notes(arch, w, time.eager, act.stage_layers)),
    )
