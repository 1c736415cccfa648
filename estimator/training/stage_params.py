"""The parameters each pipeline stage holds: not an even 1/pp of them.

The first stage holds the embedding (and a multimodal model's towers) beside its layers, the last the final norm
and the output layer — and, where the embedding is tied, a copy of it, which Megatron-core allocates on the last
stage and keeps equal to the first stage's by an all-reduce of their gradients
(megatron/core/models/common/language_module/language_module.py, setup_embeddings_and_output_layer). Model
states per GPU are the stage holding the most (`weight_share`), as are autocast's 16-bit copies and FP8 training's
weight copies. Layers are taken as equal in parameters: a model whose layers differ (dense-first MoE layers,
per-layer FFN widths) is counted at its average layer.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction

from estimator.catalog.architecture import Architecture
from estimator.model.inventory import Role, TensorGroup, tensor_inventory
from estimator.training.pipeline import stages
from estimator.training.states import autocast_cast_numel, linear_numel, tied_head_numel


def stage_share(arch: Architecture, pp: int, numel: Callable[[TensorGroup], int] = lambda g: g.total, *,
                tied_head: int = 0, tied_in_total: bool = False) -> Fraction:
    """The stage holding the most of ``numel``'s parameters ÷ (their total ÷ pp): what multiplies an even split's
    per-GPU share (1 for one stage). ``numel`` picks a subset (each group's elements in it); ``tied_head`` is a
    tied output layer the last stage holds beside them — a copy not in the total (the weights) or, with
    ``tied_in_total``, counted there once (autocast's cast of it)."""
    if pp == 1:
        return Fraction(1)
    first = last = layers = 0
    for group in tensor_inventory(arch):
        n = numel(group)
        if group.role in (Role.EMBEDDING, Role.POSITION) or group.role.is_tower:
            first += n
        elif group.role is Role.LM_HEAD or (group.role is Role.NORM and group.count == 1):
            last += n
        else:
            layers += n
    total = first + last + layers + (tied_head if tied_in_total else 0)
    if total == 0:
        return Fraction(1)
    held = [Fraction(layers * n, arch.num_layers) + (first if i == 0 else 0) + (last + tied_head if i == pp - 1 else 0)
            for i, n in enumerate(stages(arch.num_layers, pp))]
    return max(held) * pp / total


def weight_share(arch: Architecture, pp: int, numel: Callable[[TensorGroup], int] = lambda g: g.total) -> Fraction:
    """`stage_share` of parameters held as weights: a tied embedding's copy on the last stage included."""
    tied = sum(numel(g) for g in tensor_inventory(arch) if g.role is Role.EMBEDDING) if arch.tie_word_embeddings else 0
    return stage_share(arch, pp, numel, tied_head=tied)


def autocast_share(arch: Architecture, pp: int) -> Fraction:
    """`stage_share` of autocast's cached 16-bit weights: a tied output layer's cast is the last stage's."""
    return stage_share(arch, pp, autocast_cast_numel, tied_head=tied_head_numel(arch), tied_in_total=True)


def linear_share(arch: Architecture, pp: int) -> Fraction:
    """`stage_share` of the linear layers' weights (all inside the layers: the busiest stage's layers ÷ the
    average's), e.g. FP8 training's weight copies."""
    return stage_share(arch, pp, linear_numel)



def dense_share(arch: Architecture, pp: int) -> Fraction:
    """`weight_share` of every parameter but the routed experts (all of them for a dense model)."""
    return weight_share(arch, pp, lambda g: 0 if g.role is Role.EXPERT else g.total)


def expert_share(arch: Architecture, pp: int) -> Fraction:
    """`weight_share` of the routed experts (inside the layers)."""
    return weight_share(arch, pp, lambda g: g.total if g.role is Role.EXPERT else 0)
