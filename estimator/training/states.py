"""Model states of a training run: weights, gradients, fp32 master weights and optimizer states, per GPU.

Bytes per parameter (formulas.md, Training memory):
- mixed precision with ZeRO (Rajbhandari et al. 2020, §3.1): 2 (16-bit weights) + 2 (16-bit grads) + K, K = 12 for
  Adam (fp32 master, m, v). Per GPU over N_d ranks: ZeRO-1 4Ψ + KΨ/N_d; ZeRO-2 2Ψ + (2+K)Ψ/N_d; ZeRO-3 (4+K)Ψ/N_d.
- PyTorch AMP (fp32 parameters + autocast): 4 + 4 + optimizer states in fp32, plus autocast's cache of 16-bit
  copies of the weights it casts (2 bytes per linear-layer parameter, alive from forward to backward).
- pure bf16 / fp32: weights, grads and optimizer states all in the parameter dtype (torch optimizers create
  their states like the parameter).
- FP8 (Transformer Engine under Megatron-LM): bf16 parameters (2), gradients accumulated and reduced in fp32
  (4: Megatron-LM's arguments.py sets accumulate_allreduce_grads_in_fp32 for bf16 parameters), an fp32 master
  copy (4) and fp32 optimizer states; the FP8 copy of each linear weight TE casts for its GEMMs (1 byte per
  parameter, kept from forward to backward) is `fp8_weight_numel`. TE's scaling state per FP8 tensor (amax
  history of 1,024 fp32 values, scale, inverse scale) is about 12 KB per linear layer: left out.
Optimizer states per parameter: AdamW 2 states; 8-bit Adam 2 bytes (Dettmers et al. 2022, block-wise 8-bit m, v);
SGD 0; SGD with momentum and Lion (Chen et al. 2023) 1 state; Adafactor (Shazeer & Stern 2018) row + column
second-moment factors per matrix, a full one per vector, no first moment (transformers' default beta1=None).
LoRA (Hu et al. 2021) / QLoRA (Dettmers et al. 2023): the base is frozen (no gradients, no optimizer states);
r × (in + out) adapter parameters per targeted matrix carry the states.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from estimator.catalog.architecture import Architecture
from estimator.model.inventory import Role, TensorGroup, lm_head_numel, tensor_inventory
from estimator.model.memory import bytes_of, tensor_bits
from estimator.training.workload import LoraTarget, Optimizer, Precision, TrainingWorkload


@dataclass(frozen=True)
class BytesPerParam:
    """Bytes each trainable parameter costs in each model-state term."""

    weights: int
    gradients: int
    master: int
    optimizer: Fraction


def state_dtype_bytes(precision: Precision) -> int:
    """Optimizer states follow the fp32 master/parameters, except in pure bf16 (states like the bf16 parameter)."""
    return 2 if precision == "bf16" else 4


def optimizer_state_bytes(optimizer: Optimizer, state_bytes: int) -> Fraction:
    """Bytes of optimizer state per parameter of a matrix-free (per-element) optimizer. Adafactor: see
    `adafactor_state_bytes` (factored; 0 here)."""
    table: dict[Optimizer, Fraction] = {
        "adamw": Fraction(2 * state_bytes),
        "adamw-fused": Fraction(2 * state_bytes),
        "adam-8bit": Fraction(2),
        "sgd": Fraction(0),
        "sgd-momentum": Fraction(state_bytes),
        "lion": Fraction(state_bytes),
        "adafactor": Fraction(0),
    }
    return table[optimizer]


def bytes_per_param(precision: Precision, optimizer: Optimizer, *, deepspeed: bool) -> BytesPerParam:
    """Per-parameter bytes of each state. ``deepspeed``: ZeRO's mixed precision keeps 16-bit weights and
    gradients plus an fp32 master copy (2 + 2 + 4 + states); PyTorch AMP keeps fp32 weights and gradients."""
    states = optimizer_state_bytes(optimizer, state_dtype_bytes(precision))
    if precision == "fp32":
        return BytesPerParam(4, 4, 0, states)
    if precision == "bf16":
        return BytesPerParam(2, 2, 0, states)
    if precision == "fp8":
        return BytesPerParam(2, 4, 4, states)
    if deepspeed:
        return BytesPerParam(2, 2, 4, states)
    return BytesPerParam(4, 4, 0, states)


def adafactor_state_bytes(arch: Architecture, state_bytes: int) -> int:
    """Adafactor's factored second moment: (rows + cols) per matrix, numel per vector, in the state dtype.
    Every matrix in the inventory has the hidden size as one side (low-rank MLA projections are approximated)."""
    h = arch.hidden_size
    total = 0
    for group in tensor_inventory(arch):
        if group.role in (Role.NORM, Role.BIAS):
            total += group.total
        else:
            total += group.count * (h + group.numel // h)
    return total * state_bytes


def _lora_widths(arch: Architecture) -> dict[LoraTarget, tuple[int, int, int]]:
    """(in, out, matrices per model) of every LoRA target."""
    a, h = arch.attention, arch.hidden_size
    layers = arch.num_layers
    dense_layers = layers - arch.num_moe_layers
    mlp_count = dense_layers
    ffn = arch.mlp.intermediate_size
    out: dict[LoraTarget, tuple[int, int, int]] = {
        "q": (h, a.num_heads * a.head_dim, layers),
        "k": (h, a.num_kv_heads * a.head_dim, layers),
        "v": (h, a.num_kv_heads * a.v_head_dim, layers),
        "o": (a.num_heads * a.v_head_dim, h, layers),
        "gate": (h, ffn, mlp_count if arch.mlp.gated else 0),
        "up": (h, ffn, mlp_count),
        "down": (ffn, h, mlp_count),
    }
    return out


def lora_params(arch: Architecture, rank: int, targets: tuple[LoraTarget, ...]) -> int:
    """Adapter parameters: r × (in + out) per targeted matrix (A is in × r, B is r × out; Hu et al. 2021).
    MoE layers: every routed and shared expert's MLP matrices are adapted."""
    widths = _lora_widths(arch)
    total = sum(rank * (widths[t][0] + widths[t][1]) * widths[t][2] for t in targets)
    moe = arch.moe
    if moe is not None and arch.num_moe_layers:
        # a routed expert reads its latent width where the MoE has one; the shared expert the hidden size
        routed = rank * (moe.expert_width_in(arch.hidden_size) + moe.expert_intermediate_size) * moe.num_experts
        shared = rank * (arch.hidden_size + moe.expert_intermediate_size) if moe.shared_intermediate_size else 0
        for t in targets:
            if t in ("gate", "up", "down") and (t != "gate" or arch.mlp.gated):
                total += (routed + shared) * arch.num_moe_layers
    return total


def autocast_cast_numel(group: TensorGroup) -> int:
    """Of a group, the elements autocast casts to 16 bit and caches for the step: every linear weight and the LM
    head. The embedding lookup and norms are not cast (PyTorch autocast op lists)."""
    return group.total if group.role.is_linear or group.role in (Role.ROUTER, Role.POOLER, Role.LM_HEAD) else 0


def tied_head_numel(arch: Architecture) -> int:
    """Elements of an output layer that is the embedding matrix itself (0 where it is its own tensor)."""
    return lm_head_numel(arch) if arch.tie_word_embeddings else 0


def autocast_weight_numel(arch: Architecture) -> int:
    """Parameters autocast casts and caches: `autocast_cast_numel`'s, and the embedding matrix when tied."""
    return sum(autocast_cast_numel(g) for g in tensor_inventory(arch)) + tied_head_numel(arch)


def checkpointed_autocast_numel(arch: Architecture) -> int:
    """Of `autocast_weight_numel`, the decoder layers' — all but the output layer and a pooler: what full
    recomputation leaves unsaved (`estimator.training.step_phases`)."""
    outside = sum(autocast_cast_numel(g) for g in tensor_inventory(arch) if g.role in (Role.LM_HEAD, Role.POOLER))
    return autocast_weight_numel(arch) - outside - tied_head_numel(arch)


def fp8_weight_numel(arch: Architecture) -> int:
    """Parameters Transformer Engine casts to FP8 for its GEMMs: the linear layers' weights. The embedding, the
    output layer (Megatron-LM's ColumnParallelLinear outside TE), routers and norms stay in bf16."""
    return sum(linear_numel(g) for g in tensor_inventory(arch))


def linear_numel(group: TensorGroup) -> int:
    """Of a group, the elements of linear layers' weights."""
    return group.total if group.role.is_linear else 0


def frozen_base_bytes(arch: Architecture, w: TrainingWorkload) -> int:
    """A LoRA base: 16-bit (fp32 for fp32 runs), or with --qlora its linear layers in the 4-bit format and the
    embeddings, head and norms in 16 bit (as bitsandbytes loads them)."""
    plain = Fraction(32 if w.precision == "fp32" else 16)
    total = 0
    for group in tensor_inventory(arch):
        bits = tensor_bits(group.role, w.qlora) if w.qlora is not None else plain
        total += bytes_of(group.total, bits)
    return total


@dataclass(frozen=True)
class ModelStates:
    """Per-GPU bytes of each model-state term, and the parameter counts behind them."""

    weights_bytes: int
    gradient_bytes: int
    master_bytes: int
    optimizer_bytes: int
    trainable_params: int

    @property
    def total_bytes(self) -> int:
        return self.weights_bytes + self.gradient_bytes + self.master_bytes + self.optimizer_bytes


def _share(total: int | Fraction, divisor: int) -> int:
    return math.ceil(Fraction(total) / divisor)


def model_states(params: int, precision: Precision, optimizer: Optimizer, *, stage: int, dp: int,
                 model_parallel: int | Fraction = 1, deepspeed: bool = True, adafactor_bytes: int = 0,
                 frozen_bytes: int = 0) -> ModelStates:
    """Model states on one GPU: ``params`` trainable parameters split over ``model_parallel`` (TP × PP) ranks (TP ×
    PP ÷ the busiest stage's share where stages hold unequal parameters, `training.pipeline.weight_share`),
    then ZeRO ``stage`` shards optimizer + master (≥ 1), gradients (≥ 2) and weights (3) over ``dp`` ranks.
    ``frozen_bytes`` (a LoRA base) is sharded like weights. ZeRO paper, 7.5B at N_d = 64: 120 / 31.4 / 16.6 /
    1.9 GB for stages 0–3 (tests/training/test_training_states.py)."""
    per = bytes_per_param(precision, optimizer, deepspeed=deepspeed and stage > 0)
    mp = model_parallel
    weights = Fraction(per.weights * params + frozen_bytes, mp)
    grads = Fraction(per.gradients * params, mp)
    master = Fraction(per.master * params, mp)
    opt = Fraction(per.optimizer * params + adafactor_bytes, mp)
    return ModelStates(
        weights_bytes=_share(weights, dp if stage >= 3 else 1),
        gradient_bytes=_share(grads, dp if stage >= 2 else 1),
        master_bytes=_share(master, dp if stage >= 1 else 1),
        optimizer_bytes=_share(opt, dp if stage >= 1 else 1),
        trainable_params=params,
    )


def optimizer_step_transient_bytes(optimizer: Optimizer, *, optimizer_params: int, state_bytes: int,
                                   largest_tensor: int, foreach: bool) -> int:
    """Temporaries of one optimizer step on one GPU.

    PyTorch's default (foreach) AdamW computes sqrt(v) into a new list of parameter-sized tensors before the
    addcdiv (torch/optim/adamw.py ``_multi_tensor_adamw``): one state-dtype buffer per parameter it updates
    (formulas.md). ``adamw-fused``, 8-bit Adam and DeepSpeed's fused Adam update in place. Per-tensor optimizers
    (Lion, Adafactor) build one update the size of the tensor they are on: the largest tensor bounds it.
    """
    if optimizer == "adamw" and foreach:
        return optimizer_params * state_bytes
    if optimizer in ("lion", "adafactor"):
        return largest_tensor * state_bytes
    return 0
