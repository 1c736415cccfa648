"""Pipeline stages that do not split the layers evenly (``--pp`` not dividing the layer count).

Megatron-core splits L layers over pp stages evenly where pp divides L. Where it divides L + 2 instead, its
``--account-for-embedding-in-pipeline-split`` and ``--account-for-loss-in-pipeline-split`` count the embedding and
the output layer with its loss as one layer each (megatron/core/transformer/transformer_block.py,
get_num_layers_to_build): the first and the last stage run (L + 2) / pp − 1 layers beside them, every other stage
(L + 2) / pp. That is the split the Llama 3 report describes for 405B, 126 layers over 16 stages: one layer fewer
on the first and the last stage, which hold the embedding and the output layer (Dubey et al. 2024, "The Llama 3
Herd of Models", §3.3.2). Any other uneven count is refused.

In 1F1B every stage runs each micro-batch in turn, so the slowest stage sets the step: the step's compute is the
busiest stage's work, not the average stage's (`imbalance`), and stage i holds the activations of min(pp − i, m)
micro-batches at once (`held_layer_micro_batches`).

The parameters each stage holds: `training.stage_params`.
"""

from __future__ import annotations


def pipeline_split(layers: int, pp: int) -> tuple[int, ...] | None:
    """Layers of each of ``pp`` stages, first to last (None: no split is modelled)."""
    if layers % pp == 0:
        return (layers // pp,) * pp
    if pp > 2 and (layers + 2) % pp == 0:
        n = (layers + 2) // pp
        return (n - 1, *(n,) * (pp - 2), n - 1)
    return None


def held_layer_micro_batches(split: tuple[int, ...], micro_batches: int) -> int:
    """The most layer × micro-batch activations one stage holds in 1F1B: stage i keeps min(pp − i, m) in flight."""
    pp = len(split)
    return max(layers * min(pp - i, micro_batches) for i, layers in enumerate(split))


def imbalance(split: tuple[int, ...], layer_work: float, head_work: float) -> float:
    """The busiest stage's work ÷ the average stage's: each stage its layers × ``layer_work``, the last the output
    layer's ``head_work`` too (the embedding lookup is no GEMM). 1 for one stage."""
    work = [layers * layer_work + (head_work if i == len(split) - 1 else 0.0) for i, layers in enumerate(split)]
    return max(work) / (sum(work) / len(work))


def stages(layers: int, pp: int) -> tuple[int, ...]:
    """Layers of each of ``pp`` stages (`check_layout` has refused a split `pipeline_split` does not model)."""
    split = pipeline_split(layers, pp)
    assert split is not None, "check_layout refuses a pipeline split that is not modelled"
    return split
