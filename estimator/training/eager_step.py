"""An eager PyTorch (Hugging Face) training step beside its matrix FLOPs: host dispatch, the loss stage's memory
traffic, autocast's weight casts and PyTorch's foreach AdamW — the path `step_time.step_time` takes for a profile
with host figures (``train_host_backward_per_layer_s`` > 0, the ``hf`` profile).

Measured on the H200 with PyTorch 2.11 and transformers 5.17 (tests/data/measured/random, ``kind=train_parts``:
forward, backward and optimizer step of 30 small random models, each with its host issue time and its GPU time):
the host issues a step's kernels one by one and the GPU runs them as they come, so each phase takes the longer of
the two. Small models are host-bound (0.05–1 B parameters; the host's issue time is `host_ops.host_s`: the
operations transformers dispatches, counted per family and precision, × the host's cost of one); large ones are
GPU-bound: matrix FLOPs at the profile's efficiency (fp32 has its own: no tensor cores), plus the
loss stage's and autocast's bytes, and, where PyTorch's math SDPA kernel runs, its fp32 GEMMs and score passes.
Each pass's GEMMs, fused attention and bytes are a phase's work (`timing.PhaseCost`) timed by inference's own rule
(`timing.phase_time`, at the step's GEMM figure); the backward's multiples, the layers' elementwise passes, the math
kernel and the host are what a training step adds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from estimator.catalog.architecture import Architecture
from estimator.catalog.profiles import EfficiencyProfile
from estimator.catalog.specs import GpuSpec
from estimator.model.attention_kernels import masked_attention_layers, math_attention_layers
from estimator.model.compute import (
    attention_flops,
    linear_params_per_token,
    math_attention_flops,
    math_attention_scores,
    math_sdpa_pass_bytes,
)
from estimator.model.inventory import lm_head_numel, tensor_inventory
from estimator.model.phases import elementwise_elements_per_layer
from estimator.model.rates import achievable, achievable_bandwidth
from estimator.model.timing import Hardware, PhaseCost, expected_time, phase_rates, phase_time
from estimator.notes import Note, NoteCode, note
from estimator.training.host_ops import MODES, host_s, step_ops, uncounted
from estimator.training.states import state_dtype_bytes
from estimator.training.workload import TrainingWorkload

# Bytes per logit element the loss stage moves (transformers' ForCausalLMLoss after the LM head, 16-bit logits),
# counted op by op: forward = head output (2) + fp32 upcast (2 + 4) + log_softmax (max and sum passes, 4 + 4, and
# its output 4 + 4) = 24; backward = nll_loss gradient (4) + log_softmax backward (4 + 4 + 4) + cast to 16 bit
# (4 + 2) + the head's two gradient GEMMs reading it (2 + 2) = 26. Final-logit soft-capping (÷ cap, tanh, × cap)
# adds three 16-bit elementwise passes forward (12) and their three backward (14).
LOSS_FORWARD_BYTES = 24
LOSS_BACKWARD_BYTES = 26
SOFTCAP_FORWARD_BYTES = 12
SOFTCAP_BACKWARD_BYTES = 14
# Autocast casts every fp32 weight to bf16 once per forward (and again when checkpointing recomputes): read 4,
# write 2 bytes per parameter.
AUTOCAST_CAST_BYTES = 6
# PyTorch's foreach AdamW (torch.optim.AdamW default, traced op by op): mul_(p), lerp_(m, g), mul_(v),
# addcmul_(v, g, g), sqrt(v), div_, add_(eps), addcdiv_(p, m, d) — 8 kernels, 13 reads and 8 writes of a state
# element per parameter.
ADAMW_FOREACH_ACCESSES = 21
ADAMW_FOREACH_KERNELS = 8
# The backward of PyTorch's math SDPA kernel per score, from its autograd formulas (fp32): PV's backward writes the
# probabilities' gradient (4) and reads the probabilities for V's gradient (4); `where` passes it through (read 4,
# write 4); softmax backward reads the gradient and the output and writes the scores' gradient (4 + 4 + 4); the
# gradients of Q and K read it (4 + 4). 8 + 8 + 12 + 8 = 36.
MATH_SDPA_BACKWARD_BYTES_PER_SCORE = 36


def loss_stage_bytes(arch: Architecture, tokens: int) -> tuple[float, float]:
    """(forward, backward) bytes the loss stage moves over ``tokens`` tokens (see `LOSS_FORWARD_BYTES`)."""
    logits = tokens * arch.vocab_size if arch.lm_head else 0
    capped = arch.final_logit_softcapping
    return (logits * (LOSS_FORWARD_BYTES + (SOFTCAP_FORWARD_BYTES if capped else 0)),
            logits * (LOSS_BACKWARD_BYTES + (SOFTCAP_BACKWARD_BYTES if capped else 0)))


def adamw_foreach_s(params: int, state_bytes: int, param_tensors: int, gpu: GpuSpec,
                    profile: EfficiencyProfile) -> float:
    """PyTorch's foreach AdamW step: its bytes at the datasheet bandwidth plus a cost per element per kernel (the
    fp32 arithmetic every element takes whatever its width), or the host's time to issue it if longer. Measured:
    23 ps per parameter with fp32 states, 14 with bf16 (tests/data/measured/random), which these two terms give."""
    gpu_s = params * (ADAMW_FOREACH_ACCESSES * state_bytes / gpu.bandwidth_bytes_per_s
                      + ADAMW_FOREACH_KERNELS * profile.foreach_element_pass_s)
    return max(gpu_s, profile.optimizer_host_s + param_tensors * profile.optimizer_host_per_tensor_s)



def uses_eager_step(profile: EfficiencyProfile) -> bool:
    """Whether the profile describes eager PyTorch training with a host floor (this module's model)."""
    return profile.train_host_backward_per_layer_s > 0


def math_attention_s(arch: Architecture, w: TrainingWorkload, gpu: GpuSpec) -> tuple[float, float]:
    """(forward, backward) seconds of PyTorch's math SDPA kernel where it runs (`attention_kernels`) on
    one GPU: its GEMMs over every pair in fp32 (forward QKᵀ and PV, backward twice that) at the fp32 training
    efficiency, and its passes over the scores (`math_sdpa_pass_bytes` of the dtype it is called in, and 36 bytes
    backward)."""
    prof = w.profile
    layers = math_attention_layers(arch, prof, fp32=w.compute_dtype == "fp32", tokens=w.seq_len)
    if w.attention != "sdpa" or not layers:
        return 0.0, 0.0
    mp, fp32_peak = w.tp * w.pp, gpu.peak_flop_per_s("fp32")
    efficiency = prof.train_fp32_flop_efficiency or prof.train_flop_efficiency
    if fp32_peak is None or efficiency is None:
        return 0.0, 0.0
    flops = math_attention_flops(arch, w.batch, w.seq_len, layers) / mp / achievable(fp32_peak, efficiency)
    scores = math_attention_scores(arch, w.batch, w.seq_len, layers) / mp
    bandwidth = achievable_bandwidth(gpu.bandwidth_bytes_per_s, prof, gpu.memory_type)
    forward = math_sdpa_pass_bytes(4 if w.compute_dtype == "fp32" else 2)
    return (flops + scores * forward / bandwidth,
            2 * flops + scores * MATH_SDPA_BACKWARD_BYTES_PER_SCORE / bandwidth)


def elementwise_s(arch: Architecture, w: TrainingWorkload, bandwidth: float) -> tuple[float, float]:
    """(forward, backward) seconds of one micro-batch's elementwise kernels (norms, rotary, activations, residual
    adds, casts) where the profile splits them from the GEMMs (``train_backward_elementwise_ratio`` set; else 0):
    the forward moves the prefill's passes (``elementwise_hidden_passes`` × h + ``elementwise_ffn_passes`` × ffn
    per token and layer), the backward that ratio of them, plus the forward again when checkpointing recomputes."""
    prof, ratio = w.profile, w.profile.train_backward_elementwise_ratio
    if ratio is None:
        return 0.0, 0.0
    element = 4 if w.compute_dtype == "fp32" else 2
    passes = elementwise_elements_per_layer(arch, prof, w.tp, fp32=element == 4)
    forward = passes * element * arch.num_layers / w.pp * w.tokens_per_micro_batch / bandwidth
    return forward, forward * (ratio + (1 if w.recompute == "full" else 0))


@dataclass(frozen=True)
class EagerPhases:
    """One micro-batch's forward and backward on one GPU: the GPU's time and the host's issue time of each, and the
    matrix efficiency the GPU's time used."""

    gpu_forward_s: float
    gpu_backward_s: float
    host_forward_s: float
    host_backward_s: float
    efficiency: float

    def seconds(self, micro_batches: int) -> float:
        """``micro_batches`` of these on one GPU without the bubble: forward and backward each the longer of the
        GPU's time and the host's issue time (`timing.expected_time`, a phase's rule, with nothing to wait for)."""
        return micro_batches * (expected_time(self.gpu_forward_s, self.host_forward_s, 0.0, 0.0)
                                + expected_time(self.gpu_backward_s, self.host_backward_s, 0.0, 0.0))


def eager_compute_s(arch: Architecture, w: TrainingWorkload, gpu: GpuSpec, peak: float, trainable_params: int,
                    stage_layers: int) -> tuple[float, float]:
    """(seconds of one replica's micro-batches on one GPU without the bubble, the matrix efficiency used)."""
    p = eager_phases(arch, w, gpu, peak, trainable_params, stage_layers)
    return p.seconds(w.grad_accum), p.efficiency


def eager_phases(arch: Architecture, w: TrainingWorkload, gpu: GpuSpec, peak: float, trainable_params: int,
                 stage_layers: int) -> EagerPhases:
    """One micro-batch's phases. Full recompute re-runs the checkpointed decoder layers, not the LM head
    (transformers checkpoints layers). Where the profile splits the GPU time (`elementwise_s`), attention runs at
    the profile's attention efficiency; else at the step share."""
    prof, mp, tokens = w.profile, w.tp * w.pp, w.tokens_per_micro_batch
    lora, fp32, full = w.lora_rank is not None, w.compute_dtype == "fp32", w.recompute == "full"
    efficiency = prof.train_fp32_flop_efficiency if fp32 and prof.train_fp32_flop_efficiency else \
        prof.train_flop_efficiency
    assert efficiency is not None  # a profile with host figures gives a step-level efficiency
    layers = linear_params_per_token(arch)
    linear = layers + lm_head_numel(arch)
    math_fwd, math_bwd = math_attention_s(arch, w, gpu)  # replaces the fused kernel's attention where it runs
    split = prof.train_backward_elementwise_ratio is not None
    # sliding layers whose window the sequence reaches get a mask: every causal pair scored, on the masked kernel
    masked = masked_attention_layers(arch, prof, w.seq_len) if split else 0
    math = math_attention_layers(arch, prof, fp32=fp32, tokens=w.seq_len) if math_fwd else 0
    every = max(arch.mixer_count("attention"), 1)
    pairs = attention_flops(arch, w.batch, w.seq_len,
                            ignore_windows=split and prof.masked_attention_flop_efficiency is not None) / tokens
    attention, masked_attention = pairs * max(every - masked - math, 0) / every, pairs * masked / every
    adapters = trainable_params if lora else 0
    lumped = 0 if split else attention  # one step share for GEMMs and attention alike
    forward = (2 * linear + 2 * adapters + lumped) * tokens / mp
    backward = ((2 if lora else 4) * linear + 4 * adapters + 2 * lumped) * tokens / mp
    if full:
        backward += (2 * layers + lumped) * tokens / mp
        math_bwd += math_fwd
    loss_fwd, loss_bwd = (b / w.tp for b in loss_stage_bytes(arch, tokens))
    cast = AUTOCAST_CAST_BYTES * trainable_params / mp if w.amp and not lora else 0
    # each pass's GEMMs (at the step share), fused attention (where split: fp32 on CUDA cores, as a prefill's) and
    # the loss stage's and casts' bytes, timed as a phase's; the backward's attention is 2 (3 with recompute) × the
    # forward's
    hw = one_gpu(gpu, peak)
    fwd_cost = _pass_cost(forward, attention * tokens / mp if split else 0.0,
                          masked_attention * tokens / mp if split else 0.0, loss_fwd + cast, fp32=fp32)
    rates = replace(phase_rates(fwd_cost, hw, prof), matmul=achievable(peak, efficiency))
    fwd = phase_time(fwd_cost, hw, prof, rates)
    bwd = phase_time(_pass_cost(backward, 0.0, 0.0, loss_bwd + (cast if full else 0), fp32=fp32), hw, prof, rates)
    ew_fwd, ew_bwd = elementwise_s(arch, w, rates.bandwidth)
    gpu_fwd = fwd.gemm_s + fwd.attention_s + fwd.elementwise_s + ew_fwd + math_fwd
    gpu_bwd = bwd.gemm_s + (3 if full else 2) * fwd.attention_s + bwd.elementwise_s + ew_bwd + math_bwd
    return EagerPhases(gpu_fwd, gpu_bwd, *host_s(arch, w, stage_layers), efficiency)


def one_gpu(gpu: GpuSpec, peak: float) -> Hardware:
    """The rates of one training GPU at the compute peak ``peak`` (no tensor-parallel all-reduce here: training's
    communication is `training.communication`'s)."""
    return Hardware(peak, gpu.bandwidth_bytes_per_s, gpu.memory_type, gpu.interconnect_bytes_per_s, 1,
                    gpu.peak_flop_per_s("fp32"))


def _pass_cost(gemm_flops: float, attention_flops: float, masked_flops: float, elementwise_bytes: float, *,
               fp32: bool) -> PhaseCost:
    """One pass of a training step as a phase's work on one GPU: GEMM and attention FLOPs, elementwise bytes."""
    return PhaseCost(matmul_flops=gemm_flops, attention_flops=attention_flops, weight_bytes=0.0, kv_bytes=0.0,
                     elementwise_bytes=elementwise_bytes, layers=0, masked_attention_flops=masked_flops, fp32=fp32)


def dispatch_notes(arch: Architecture, w: TrainingWorkload, phases: EagerPhases | None, stage_layers: int
                   ) -> tuple[Note, ...]:
    """The explain line of an eager step's ``phases`` (`step_time.StepTime.eager`): each one's GPU time beside its
    host dispatch and where that comes from (`host_ops`: counted operations, or the profile's figures per layer);
    none for a profile without an eager step."""
    if phases is None:
        return ()
    forward, backward = step_ops(arch, w, stage_layers) or (0, 0)
    return (note(NoteCode.TRAIN_DISPATCH, profile=w.profile.name, family=arch.model_type,
                 mode=MODES.get(w.precision, w.precision), checkpointed=w.recompute == "full", layers=stage_layers,
                 uncounted=uncounted(arch, w) or "", forward_ops=forward, backward_ops=backward,
                 forward_host_s=phases.host_forward_s, backward_host_s=phases.host_backward_s,
                 forward_gpu_s=phases.gpu_forward_s, backward_gpu_s=phases.gpu_backward_s),)


def eager_optimizer_s(arch: Architecture, w: TrainingWorkload, gpu: GpuSpec, trainable_params: int) -> float | None:
    """PyTorch's foreach AdamW (`adamw_foreach_s`) on this rank's share; None for other optimizers."""
    if w.optimizer != "adamw" or w.profile.foreach_element_pass_s == 0:
        return None
    mp = w.tp * w.pp
    params = math.ceil(trainable_params / mp / (w.dp if w.shard_stage >= 1 else 1))
    tensors = math.ceil(sum(g.count for g in tensor_inventory(arch)) / mp)
    return adamw_foreach_s(params, state_dtype_bytes(w.precision), tensors, gpu, w.profile)
