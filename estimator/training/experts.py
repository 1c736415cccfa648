"""Expert parallel in training (``--ep`` with ``--mode train``): Megatron-LM's expert-model-parallel layout.

Megatron-LM (``--expert-model-parallel-size``, megatron/core/parallel_state.py) deals each MoE layer's routed
experts out over ``ep`` of the data-parallel ranks: an expert's weights, gradients, master weights and optimizer
states live on 1/ep of the GPUs (sliced over TP as the dense layers are: expert tensor parallel defaults to TP),
and its gradients are reduced, and ZeRO shards its states, over the dp ÷ ep ranks that hold the same experts (the
expert data-parallel group). Every other parameter is held by all dp ranks and reduced over them, as without EP.
Each MoE layer sends every token to the GPUs of its top-k experts and back (dispatch and combine, the all-to-all
of `estimator.model.experts`) in the forward and again in the backward (the gradients of both), and full
recompute repeats the forward's. Megatron-core orders ranks tp-cp-ep-dp-pp (initialize_model_parallel), so the
all-to-all crosses the slowest link of tp × cp × ep consecutive GPUs, and the expert gradients reduce over the
dp ÷ ep ranks strided by tp × ep. With TP > 1 Megatron-LM runs MoE with sequence parallel, so each TP rank
dispatches its 1/tp of the micro-batch's tokens. Routing is taken as balanced (NVIDIA's MoE benchmarks
force-balance it: Megatron-Bridge docs/performance-summary.md), so each GPU computes and saves as much as without
expert parallel.
"""

from __future__ import annotations

import math

from estimator.catalog.architecture import Architecture
from estimator.catalog.specs import GpuSpec
from estimator.catalog.systems import SystemSpec
from estimator.model.collectives import Link, all_to_all_s, group_link
from estimator.model.experts import dispatch_bytes
from estimator.model.inventory import Role, tensor_inventory
from estimator.notes import Note, NoteCode, note
from estimator.training.stage_params import dense_share, expert_share, weight_share
from estimator.training.states import ModelStates, model_states
from estimator.training.workload import TrainingWorkload


def routed_expert_params(arch: Architecture) -> int:
    """Parameters of every routed expert of every MoE layer (0 for a dense model)."""
    return sum(g.total for g in tensor_inventory(arch) if g.role is Role.EXPERT)


def held_params(arch: Architecture, w: TrainingWorkload, numel: int) -> int:
    """Of ``numel`` parameters that include every routed expert, those one EP rank holds: the experts ÷ ep."""
    if w.ep == 1:
        return numel
    experts = routed_expert_params(arch)
    return numel - experts + -(-experts // w.ep)


def sharded_states(arch: Architecture, w: TrainingWorkload, trainable: int, *, deepspeed: bool,
                   adafactor_bytes: int, frozen_bytes: int) -> ModelStates:
    """Model states on one GPU (`states.model_states`): the routed experts' over TP × PP × EP GPUs and sharded by
    ZeRO over the dp ÷ ep expert data-parallel ranks, the rest as without expert parallel."""
    mp, stage = w.tp * w.pp, w.shard_stage
    if w.ep == 1:  # the busiest pipeline stage's parameters (`training.pipeline.weight_share`)
        return model_states(trainable, w.precision, w.optimizer, stage=stage, dp=w.reduce_group,
                            model_parallel=mp / weight_share(arch, w.pp), deepspeed=deepspeed,
                            adafactor_bytes=adafactor_bytes, frozen_bytes=frozen_bytes)
    experts = routed_expert_params(arch)
    dense = model_states(trainable - experts, w.precision, w.optimizer, stage=stage, dp=w.reduce_group,
                         model_parallel=mp / dense_share(arch, w.pp), deepspeed=deepspeed)
    held = model_states(experts, w.precision, w.optimizer, stage=stage, dp=w.reduce_group // w.ep,
                        model_parallel=mp * w.ep / expert_share(arch, w.pp), deepspeed=deepspeed)
    return ModelStates(dense.weights_bytes + held.weights_bytes, dense.gradient_bytes + held.gradient_bytes,
                       dense.master_bytes + held.master_bytes, dense.optimizer_bytes + held.optimizer_bytes,
                       trainable)


def passes(w: TrainingWorkload) -> int:
    """All-to-alls per MoE layer per micro-batch: dispatch and combine, forward and backward (+ the forward again
    under full recompute)."""
    return 6 if w.recompute == "full" else 4


def step_all_to_all_s(w: TrainingWorkload, *, moe_layers: int, experts_per_token: int, hidden: int,
                      element_bytes: int, link: Link) -> float:
    """Seconds of one step's expert all-to-alls on one GPU: the stage's MoE layers × `passes` × micro-batches,
    each of its 1/tp of the micro-batch's tokens × k × hidden × bytes over the ep GPUs (0 at EP 1)."""
    if w.ep == 1 or not moe_layers:
        return 0.0
    payload = w.tokens_per_micro_batch / w.tp * experts_per_token * hidden * element_bytes
    return moe_layers * passes(w) * w.grad_accum * all_to_all_s(payload, w.ep, link)


def expert_link(w: TrainingWorkload, gpu: GpuSpec, system: SystemSpec | None) -> Link:
    """What the EP group's all-to-all crosses, before the profile's interconnect efficiency: the slowest link of
    tp × cp × ep consecutive GPUs (Megatron-core's rank order tp-cp-ep-dp-pp, parallel_state.py), or without a
    system the card's own link (half its bidirectional datasheet figure)."""
    if system is None:
        return Link("link", (gpu.interconnect_bytes_per_s or 1.0) / 2, 0.0)
    return group_link(system, w.tp * w.cp * w.ep)


def stage_moe_layers(arch: Architecture, w: TrainingWorkload) -> int:
    """MoE layers on the busiest pipeline stage: ⌈MoE layers ÷ pp⌉."""
    return math.ceil(arch.num_moe_layers / w.pp)


def expert_notes(arch: Architecture, w: TrainingWorkload, gpu: GpuSpec, system: SystemSpec | None,
                 seconds: float) -> tuple[list[Note], list[Note]]:
    """(the assumption that states the layout, the explain line of its all-to-all); none at EP 1."""
    if w.ep == 1 or arch.moe is None:
        return [], []
    e, k, eff = arch.moe.num_experts, arch.moe.experts_per_token, w.profile.interconnect_efficiency
    layout = [note(NoteCode.EXPERT_PARALLEL, ep=w.ep, tp=w.tp, groups=w.reduce_group // w.ep, experts=e,
                   per_gpu=e // w.ep, sequences=w.batch, training=True)]
    link = expert_link(w, gpu, system)
    tokens, element = w.tokens_per_micro_batch / w.tp, 4 if w.compute_dtype == "fp32" else 2
    what = "dispatch and combine, forward and backward" + (", forward again" if passes(w) == 6 else "")
    line = note(NoteCode.EXPERT_ALL_TO_ALL, phase="training step", tokens=tokens, per_token=k,
                hidden=arch.hidden_size, element_bytes=float(element), bytes=dispatch_bytes(arch, tokens, element),
                gpus=w.ep, tier=link.tier, gb_per_s=link.bytes_per_s * eff / 1e9, latency_s=link.latency_s,
                layers=stage_moe_layers(arch, w), calls=passes(w) * w.grad_accum,
                what=f"{what}, × {w.grad_accum} micro-batch{'es' if w.grad_accum > 1 else ''}", seconds=seconds)
    return layout, [line]
