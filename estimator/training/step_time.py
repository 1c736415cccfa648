"""A training step's time on one GPU: compute (three ways, by profile), optimizer step, communication, bubble.

Compute, as the profile says:

- ``train_flop_efficiency`` given (a step-level figure, fitted on a whole measured step): executed FLOPs ÷
  (peak × that fraction).
- host figures given (eager PyTorch, `estimator.training.eager_step`): each pass's GEMMs at that step-level
  figure, its attention and bytes, timed as a phase's work by inference's own rule (`timing.phase_time`), and
  the host's dispatch beside them.
- ``train_flop_efficiency: null`` (kernel by kernel, as a framework that runs fused kernels does — Megatron-LM,
  NeMo): every pass runs the same kernels as a prefill, the step's work timed as one phase's by `timing.phase_time`
  with the profile's kernel figures — linear layers at ``matmul_flop_efficiency``, attention at
  ``attention_flop_efficiency``, the elementwise passes (norms, activations, residual adds, dropout;
  ``elementwise_hidden_passes`` × h + ``elementwise_ffn_passes`` × ffn per token per layer) at the profile's
  bandwidth. Backward costs twice the forward of each (Kaplan et al. 2020's 2 + 4 accounting), full recompute adds
  one forward. Eager attention (scores materialised, as Megatron-LM before FlashAttention) also moves each layer's
  score matrix: written by QKᵀ, read and written by the softmax and by dropout, read by the PV product (6 passes of
  16-bit scores per forward).

FP8 training (Transformer Engine) runs the linear layers' GEMMs at the card's FP8 peak, attention and the
elementwise kernels in bf16; MFU stays against the bf16 peak, as NeMo and the Llama 3 report state it.

Either way the pipeline bubble stretches compute by 1 / (1 − (pp − 1) / (v·m + pp − 1)) for m micro-batches
(1F1B, v = 1; the interleaved schedule with v model chunks per GPU, Narayanan et al. 2021 §2.2.2: the bubble
shrinks v-fold in units of the ideal time), the optimizer step reads and writes every state once at the
profile's bandwidth, and the exposed part of the communication (`estimator.training.communication`) adds to it:
each collective less the part the profile's ``train_overlap_*`` fraction runs behind compute, at most the
compute of the phase it can hide behind (`exposed_s`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from estimator.catalog.architecture import Architecture
from estimator.catalog.specs import GpuSpec
from estimator.catalog.systems import SystemSpec
from estimator.errors import FieldInvalid
from estimator.model.compute import attention_flops, linear_params_per_token
from estimator.model.inventory import lm_head_numel
from estimator.model.phases import elementwise_elements_per_layer
from estimator.model.rates import achievable, achievable_bandwidth
from estimator.model.timing import PhaseCost, phase_rates, phase_time
from estimator.training.communication import Communication, step_communication
from estimator.training.eager_step import EagerPhases, eager_optimizer_s, eager_phases, one_gpu, uses_eager_step
from estimator.training.experts import routed_expert_params, stage_moe_layers
from estimator.training.pipeline import imbalance, stages
from estimator.training.stage_params import dense_share, expert_share
from estimator.training.states import ModelStates
from estimator.training.workload import TrainingWorkload

EAGER_SCORE_PASSES = 6  # QKᵀ writes; softmax reads, writes; dropout reads, writes; PV reads (module docstring)


@dataclass(frozen=True)
class StepTime:
    step_tokens: int  # per data-parallel replica
    executed_gpu: float
    bubble: float
    compute_s: float
    optimizer_s: float
    communication_s: float
    exposed_s: float  # of communication_s, what the step waits for (the rest runs behind compute)
    step_s: float
    bound_s: float
    model_flops_step: float
    mfu: float
    efficiency: float  # executed FLOPs ÷ (peak × compute time without the bubble): the profile's, or the kernels'
    communication: Communication
    eager: EagerPhases | None = None  # an eager step's micro-batch, phase by phase (training.eager_step)


@dataclass(frozen=True)
class StepInputs:
    """What the step-time model needs from the memory model: trainable parameters and the states' bytes."""

    trainable_params: int
    states: ModelStates
    step_transient: int
    compute_bytes: int
    deepspeed: bool
    stage_layers: int
    gemm_peak: float = 0.0  # FP8 training: the card's FP8 peak for the linear layers' GEMMs (0: the compute peak)


def _elementwise_bytes_per_token(arch: Architecture, w: TrainingWorkload, compute_bytes: int) -> float:
    """Forward bytes of the elementwise passes and (eager) attention scores per token, all layers, one GPU."""
    tp = w.tp
    # norms are replicated over TP without sequence parallel
    passes = elementwise_elements_per_layer(arch, w.profile, tp, hidden_shards=tp if w.sequence_parallel else 1,
                                            fp32=compute_bytes == 4)
    scores = EAGER_SCORE_PASSES * arch.attention.num_heads / tp * w.seq_len if w.attention == "eager" else 0.0
    return (passes + scores) * compute_bytes * arch.num_layers


def _kernel_compute_s(arch: Architecture, w: TrainingWorkload, gpu: GpuSpec, peak: float, linear_flops: float,
                      attention_fwd: float, passes: int, compute_bytes: int, gemm_peak: float) -> float:
    """Seconds of one replica's step on one GPU, kernel by kernel (module docstring), without the bubble: the
    step's GEMMs (FP8 training: at the FP8 peak), attention and elementwise passes timed as one phase's work."""
    prof, mp, tokens = w.profile, w.tp * w.pp, w.tokens_per_micro_batch * w.grad_accum
    cost = PhaseCost(matmul_flops=linear_flops * tokens / mp, attention_flops=passes * attention_fwd * tokens / mp,
                     weight_bytes=0.0, kv_bytes=0.0, layers=0,
                     elementwise_bytes=passes * _elementwise_bytes_per_token(arch, w, compute_bytes) * tokens / w.pp)
    hw = one_gpu(gpu, peak)
    fp8 = prof.fp8_matmul_flop_efficiency if w.fp8 else None  # measured at FP8 (specs/profiles/megatron.yaml)
    rates = replace(phase_rates(cost, hw, prof), matmul=achievable(gemm_peak, fp8 or prof.matmul_flop_efficiency))
    return phase_time(cost, hw, prof, rates).gpu_s


def step_time(arch: Architecture, w: TrainingWorkload, gpu: GpuSpec, peak: float, inputs: StepInputs,
              system: SystemSpec | None = None) -> StepTime:
    prof, mp, tokens = w.profile, w.tp * w.pp, w.tokens_per_micro_batch
    lora = w.lora_rank is not None
    step_tokens = tokens * w.grad_accum
    linear = linear_params_per_token(arch) + lm_head_numel(arch)
    attn_fwd = attention_flops(arch, w.batch, w.seq_len) / (w.batch * w.seq_len)  # per token of a whole sequence
    adapters = inputs.trainable_params if lora else 0
    base_train = 4 * linear if lora else 6 * linear
    model_flops_token = base_train + 6 * adapters + 3 * attn_fwd
    full = w.recompute == "full"
    extra_attention = 1 if full or (w.recompute == "selective" and w.attention == "eager") else 0
    linear_executed = base_train + 6 * adapters + (2 * linear if full else 0)
    executed_gpu = (linear_executed + (3 + extra_attention) * attn_fwd) * step_tokens / mp
    bubble = (w.pp - 1) / (w.virtual_stages * w.grad_accum + w.pp - 1)
    gemm_peak = inputs.gemm_peak or peak
    linear_gpu = linear_executed * step_tokens / mp
    speedup = 1.0 if gemm_peak == peak else executed_gpu / (linear_gpu * peak / gemm_peak + executed_gpu - linear_gpu)
    eager = eager_phases(arch, w, gpu, peak, inputs.trainable_params, inputs.stage_layers) \
        if uses_eager_step(prof) else None
    if eager is not None:  # what the step achieves, host floor and loss included
        efficiency = executed_gpu / (peak * eager.seconds(w.grad_accum))
    elif prof.train_flop_efficiency is not None:
        efficiency = prof.train_flop_efficiency * speedup
    else:
        kernels_s = _kernel_compute_s(arch, w, gpu, peak, linear_executed, attn_fwd, 3 + extra_attention,
                                      inputs.compute_bytes, gemm_peak)
        efficiency = executed_gpu / (peak * kernels_s)
    # the busiest stage's share of the work sets every micro-batch's pace (`training.pipeline.imbalance`)
    layer_work = (6 * linear_params_per_token(arch) + 3 * attn_fwd) / arch.num_layers  # per token, as above
    skew = imbalance(stages(arch.num_layers, w.pp), layer_work, 6 * lm_head_numel(arch))
    compute_s = executed_gpu / achievable(peak, efficiency) / (1 - bubble) * skew
    bandwidth = achievable_bandwidth(gpu.bandwidth_bytes_per_s, prof, gpu.memory_type)
    optimizer_s = 2 * (inputs.states.total_bytes + inputs.step_transient) / bandwidth
    if not inputs.deepspeed and (adamw := eager_optimizer_s(arch, w, gpu, inputs.trainable_params)) is not None:
        optimizer_s = adamw
    comm = _communication(arch, w, gpu, inputs, system)
    communication_s = comm.total_s
    exposed = exposed_s(comm, w, compute_s * (1 - bubble))
    step_s = compute_s + optimizer_s + exposed
    bound_s = max(executed_gpu / (peak * speedup), communication_s * prof.interconnect_efficiency)
    model_flops_step = model_flops_token * step_tokens * w.dp * w.cp
    return StepTime(step_tokens, executed_gpu, bubble, compute_s, optimizer_s, communication_s, exposed, step_s,
                    bound_s, model_flops_step, model_flops_step / step_s / (w.gpus * peak), efficiency, comm, eager)


def fp8_gemm_peak(gpu: GpuSpec, w: TrainingWorkload) -> float:
    """FP8 training's GEMM peak: the card's FP8 tensor-core rate (0 without fp8 precision); refused on cards
    without one and under the eager PyTorch profiles (Transformer Engine is not eager PyTorch)."""
    if not w.fp8:
        return 0.0
    peak = gpu.peak_flop_per_s("fp8")
    if peak is None:
        raise FieldInvalid("precision", "{precision} fp8 runs its GEMMs on FP8 tensor cores, which {name} lacks "
                           "(its spec lists no fp8 FLOP/s): use {precision} bf16 or amp-bf16", name=gpu.name)
    if uses_eager_step(w.profile):
        raise FieldInvalid("precision", "{precision} fp8 is Transformer Engine's recipe; the {name} profile times "
                           "eager PyTorch steps: use {profile} megatron", name=w.profile.name)
    return peak


def exposed_s(comm: Communication, w: TrainingWorkload, compute_s: float) -> float:
    """Seconds of ``comm`` the step waits for, given ``compute_s`` of compute without the bubble.

    A collective hides ``fraction`` × its time behind compute, at most the compute it can run beside: TP and PP
    traffic the whole step's compute; parameter all-gathers the forward (half of them) or backward (the other half)
    of every micro-batch; the gradient reduction the backward of the last micro-batch (ZeRO-3 / FSDP reduce-scatter
    every micro-batch's, beside the backward gathers). Forward is 1 of 3 passes (4 with full recompute, which runs
    inside the backward). All of it together hides behind no more than the compute."""
    prof = w.profile
    passes = 4 if w.recompute == "full" else 3
    forward, backward = compute_s / passes, compute_s * (passes - 1) / passes
    reduce_s, half = comm.dp_s - comm.gather_s, comm.gather_s / 2
    hidden_forward = min(prof.train_overlap_gather * half, forward)
    hidden_backward = min(prof.train_overlap_gather * half + prof.train_overlap_dp * reduce_s,
                          backward if w.shard_stage == 3 else backward / w.grad_accum)
    hidden = (min(prof.train_overlap_tp * comm.tp_s, compute_s) + min(prof.train_overlap_pp * comm.pp_s, compute_s)
              + hidden_forward + hidden_backward)
    return comm.total_s - min(hidden, compute_s)


def _communication(arch: Architecture, w: TrainingWorkload, gpu: GpuSpec, inputs: StepInputs,
                   system: SystemSpec | None) -> Communication:
    """Data-parallel gradient synchronisation (ZeRO-3: parameter gathers too), tensor-parallel all-reduces and,
    on a system, pipeline sends (`estimator.training.communication`)."""
    deepspeed = inputs.deepspeed
    grad_wire = 2 if deepspeed or w.precision == "bf16" else (4 if w.compute_dtype == "fp32" or w.amp or w.fp8 else 2)
    a = arch.attention
    kv_width = -(-a.num_kv_heads // w.tp) * (a.head_dim + a.v_head_dim)  # K and V of one token on a TP rank
    experts = routed_expert_params(arch) if w.ep > 1 else 0  # held by 1/ep of the GPUs (`training.experts`)
    dense = float((inputs.trainable_params - experts) * dense_share(arch, w.pp))  # the busiest stage's (stage_params)
    comm = step_communication(w, gpu, system, hidden=arch.hidden_size, stage_layers=inputs.stage_layers,
                              kv_width=kv_width, shard_params=dense / (w.tp * w.pp),
                              compute_bytes=inputs.compute_bytes, grad_wire_bytes=grad_wire,
                              expert_params=float(experts * expert_share(arch, w.pp)) / (w.tp * w.pp * w.ep),
                              moe_layers=stage_moe_layers(arch, w),
                              experts_per_token=0 if arch.moe is None else arch.moe.experts_per_token)
    # no PP sends without a system
    return comm if system is not None else Communication(comm.tp_s, 0.0, comm.dp_s, comm.gather_s, comm.cp_s,
                                                         comm.ep_s)
