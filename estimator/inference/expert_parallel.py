"""Expert parallel in `estimate` (``--ep``): the layout `plan` deploys (`estimator.model.experts`), for one job.

``ep`` GPUs hold each MoE layer's routed experts, ⌈E / ep⌉ whole experts each; the job's ``--gpus`` (TP) GPUs form
one attention group and the EP group spans ep ÷ tp of them side by side (data-parallel attention), each group
serving ``batch`` ÷ groups of the sequences. At EP = TP the TP all-reduce sums the experts' outputs (no all-to-all);
beyond it every MoE layer dispatches each token to the GPUs of its experts and combines the results back, over the
slowest link the EP group's GPUs cross (`collectives.group_link`: NVLink inside a domain, PCIe inside a node, the
network across nodes), in the prefill and in every decode step. Each rank sends its 1/tp share of its group's
tokens (sequence parallel), as the planner's search does.

Not modelled, so refused: a dense model, an EP that does not divide the expert count (the routed experts would
not deal out evenly), an EP that is not a whole number of attention groups (EP a multiple of TP: vLLM's EP size is
TP × DP), a batch that does not split evenly over the groups, and an EP group with no system to say its link.
"""

from __future__ import annotations

from dataclasses import dataclass

from estimator.catalog.architecture import Architecture, ModelSpec
from estimator.catalog.specs import GpuSpec
from estimator.catalog.systems import SystemSpec
from estimator.errors import FieldInvalid
from estimator.inference.workload import InferenceWorkload
from estimator.model.capacity import largest_true, longest_prompt
from estimator.model.collectives import Link, group_link
from estimator.model.experts import (
    attention_groups,
    dispatch_bytes,
    expert_parallel_memory,
    expert_parallel_weights_bytes,
    experts_per_gpu,
    held_expert_bytes,
    moe_all_to_all_s,
    routed_expert_bytes,
)
from estimator.model.footprint import GpuMemory
from estimator.notes import Note, NoteCode, note
from estimator.report import MAX_BATCH, MAX_TOKENS


@dataclass(frozen=True)
class ExpertParallel:
    """``ep`` GPUs holding the experts, in attention groups of ``tp``; ``link``: what their all-to-all crosses
    (None at EP = TP: no all-to-all)."""

    arch: Architecture
    tp: int
    ep: int
    link: Link | None

    @property
    def groups(self) -> int:
        return attention_groups(self.tp, self.ep)

    @property
    def gpus(self) -> int:
        return self.tp * self.groups

    def all_to_all_s(self, group_tokens: float, element_bytes: float) -> float:
        """Every MoE layer's dispatch and combine when each attention group runs ``group_tokens`` tokens."""
        if self.link is None:
            return 0.0
        return moe_all_to_all_s(self.arch, group_tokens / self.tp, element_bytes, self.ep, self.link)


def expert_parallel(model: ModelSpec, w: InferenceWorkload, ep: int, system: SystemSpec | None,
                    nodes: int) -> ExpertParallel | None:
    """The EP layout of ``ep`` (None at EP 1), or FieldInvalid with the one line that says why not."""
    if ep == 1:
        return None
    arch, tp = model.arch, w.tensor_parallel
    if arch is None or arch.moe is None:
        raise FieldInvalid("ep", "{ep} {count}: {name} is not a mixture-of-experts model (no experts to deal out)",
                           count=ep, name=model.name)
    experts = arch.moe.num_experts
    if experts % ep:
        divisors = ", ".join(str(d) for d in range(1, experts + 1) if experts % d == 0)
        raise FieldInvalid("ep", "{ep} {count} does not divide {name}'s {experts} routed experts; give one of "
                           "{divisors}", count=ep, name=model.name, experts=experts, divisors=divisors)
    if ep % tp:
        raise FieldInvalid("ep", "{ep} {count} with {gpus} {tp_count}: expert parallel is modelled over whole "
                           "attention groups of the tensor-parallel GPUs; give an {ep} that {gpus} divides",
                           count=ep, tp_count=tp)
    groups = ep // tp
    if w.batch % groups:
        raise FieldInvalid("batch", "{batch} {count} does not split evenly over the {groups} attention groups of "
                           "{ep} {ep_count} ÷ {gpus} {tp_count}", count=w.batch, groups=groups, ep_count=ep,
                           tp_count=tp)
    if groups == 1:
        return ExpertParallel(arch, tp, ep, None)
    if system is None:
        raise FieldInvalid("ep", "{ep} {count} needs the link its all-to-all crosses: give {system}", count=ep)
    if ep > nodes * system.gpus_per_node:
        raise FieldInvalid("nodes", "expert parallel {count} needs {count} GPUs; {nodes_count} × {name} has "
                           "{gpus_count} (give {nodes})", count=ep, nodes_count=nodes, name=system.name,
                           gpus_count=nodes * system.gpus_per_node)
    return ExpertParallel(arch, tp, ep, group_link(system, ep))


def ep_max_batch(model: ModelSpec, gpu: GpuSpec, w: InferenceWorkload, ex: ExpertParallel) -> int:
    """Largest batch the EP group holds at this prompt + output: the groups × the most one group holds (0: none)."""
    def fits(share: int) -> bool:
        return ep_memory(model, gpu, w, ex, share * ex.groups).per_gpu <= gpu.memory_bytes

    return max(largest_true(fits, 1, MAX_BATCH), 0) * ex.groups


def ep_max_context(model: ModelSpec, gpu: GpuSpec, w: InferenceWorkload, ex: ExpertParallel) -> int:
    """Longest prompt + output each sequence can have at this batch on the EP group (0: none fits)."""
    def fits(prompt: int) -> bool:
        return ep_memory(model, gpu, w.model_copy(update={"prompt_tokens": prompt}), ex, w.batch).per_gpu \
            <= gpu.memory_bytes

    out = w.output_tokens
    prompt = longest_prompt(fits, w.batch // ex.groups, MAX_TOKENS - out, w.profile.prefill_chunk_tokens)
    return 0 if prompt < 1 else prompt + out


def ep_memory(model: ModelSpec, gpu: GpuSpec, w: InferenceWorkload, ex: ExpertParallel, batch: int) -> GpuMemory:
    """One GPU's bytes for ``batch`` sequences over the EP group (`experts.expert_parallel_memory`)."""
    return expert_parallel_memory(model, gpu, w, ex.tp, ex.ep, batch, w.prompt_tokens, w.output_tokens)


def expert_notes(ex: ExpertParallel, w: InferenceWorkload, *, decoding: bool) -> tuple[list[Note], list[Note]]:
    """(the assumption that states the layout, the explain lines of its weights and all-to-all)."""
    arch, fmt = ex.arch, w.weight_format
    assert arch.moe is not None
    e, per_gpu, share = arch.moe.num_experts, experts_per_gpu(arch, ex.ep), w.batch // ex.groups
    held = held_expert_bytes(arch, fmt, ex.ep)
    weights = expert_parallel_weights_bytes(arch, fmt, ex.tp, ex.ep)
    assumptions = [note(NoteCode.EXPERT_PARALLEL, ep=ex.ep, tp=ex.tp, groups=ex.groups, experts=e, per_gpu=per_gpu,
                        sequences=share, training=False)]
    lines = [note(NoteCode.EXPERT_WEIGHTS, experts=e, per_gpu=per_gpu, routed_bytes=routed_expert_bytes(arch, fmt),
                  held_bytes=held, rest_bytes=weights - held, tp=ex.tp, weights_bytes=weights)]
    if ex.link is None:
        return assumptions, lines
    act = w.activation_bytes_per_element
    phases = [("prefill", share * w.prompt_tokens)] + ([("decode step", share)] if decoding else [])
    for phase, tokens in phases:
        rank_tokens = tokens / ex.tp
        lines.append(note(NoteCode.EXPERT_ALL_TO_ALL, phase=phase, tokens=rank_tokens,
                          per_token=arch.moe.experts_per_token, hidden=arch.hidden_size, element_bytes=act,
                          bytes=dispatch_bytes(arch, rank_tokens, act), gpus=ex.ep, tier=ex.link.tier,
                          gb_per_s=ex.link.bytes_per_s / 1e9, latency_s=ex.link.latency_s,
                          layers=arch.num_moe_layers, calls=2, what="dispatch, combine",
                          seconds=ex.all_to_all_s(tokens, act)))
    return assumptions, lines
