"""Layouts people deploy: how one replica of a model is placed on the GPUs of a system, and what it costs per GPU.

- **Tensor parallel** (TP) splits every layer over GPUs of one link domain (NVSwitch, NVL72, an NVLink bridge):
  its two all-reduces per layer need the fast link. It crosses a domain only when asked (``allow_tp_across``).
- **Pipeline parallel** (PP) gives each of ``pp`` stages 1/pp of the layers (weights and KV cache), across domains
  and nodes: a stage hands one activation per token to the next (a point-to-point send over the link between them).
- **Expert parallel** (EP, MoE models, `estimator.model.experts`): each stage deals its routed experts out whole,
  ⌈E / ep⌉ to a GPU. At EP = TP (one attention group) every rank holds every token, so the experts' outputs are
  summed by the TP all-reduce as before (vLLM's expert parallel without data parallel). At EP = TP × g, g > 1,
  the stage runs g attention groups of TP GPUs side by side (data-parallel attention, each with its own share of
  the batch; attention, dense layers and shared experts replicated per group) and every MoE layer sends each
  token to its experts and back by all-to-all over the EP group's slowest link (DeepSeek-V3's deployment). Such
  layouts take no pipeline parallel (DeepSeek's EP 32 prefill and EP 320 decode units use none).
- **Replicas**: independent data-parallel copies; the GPUs bought and left over by one replica hold more
  replicas.

Memory per GPU of a stage: (weights + KV cache + recurrent state) ÷ pp + the prefill activation peak + runtime
overhead of the TP group (the peak is one layer's and the logits', which the last stage holds), and it must leave
the ``headroom`` fraction of capacity free, as serving engines do (vLLM's gpu_memory_utilization 0.9 keeps 10 %).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from estimator.catalog.architecture import ModelSpec
from estimator.catalog.specs import GpuSpec
from estimator.catalog.systems import SystemSpec
from estimator.model.capacity import largest_true, longest_prompt
from estimator.model.collectives import Link, group_link
from estimator.model.experts import expert_parallel_weights_bytes
from estimator.model.experts import experts_per_gpu as experts_held
from estimator.model.footprint import memory_per_gpu
from estimator.model.parallel import tensor_parallel_degrees
from estimator.model.runtime import Runtime
from estimator.report import MAX_BATCH, MAX_TOKENS

DEFAULT_HEADROOM = 0.10  # vLLM's default gpu_memory_utilization = 0.9
PIPELINE_DEGREES = (1, 2, 3, 4, 6, 8, 12, 16)
ATTENTION_GROUPS = (2, 4, 8, 16, 32, 64)  # data-parallel attention groups of an expert-parallel stage


@dataclass(frozen=True)
class Layout:
    """One replica's placement: PP stages of ``groups`` attention groups of TP GPUs each of ``system``; ``ep``:
    the GPUs a stage's experts are dealt out over (1: a dense model; TP × groups for a MoE model)."""

    tp: int
    pp: int
    ep: int = 1

    @property
    def groups(self) -> int:
        """Attention groups per stage (data-parallel attention beside expert parallel): EP ÷ TP, at least 1."""
        return max(1, self.ep // self.tp)

    @property
    def gpus(self) -> int:
        return self.tp * self.groups * self.pp


@dataclass(frozen=True)
class StageMemory:
    """Bytes on one GPU of a stage."""

    weights: int
    kv: int | None
    activation: int | None
    overhead: int
    state: int = 0  # the recurrent state of this stage's Mamba / DeltaNet layers (`estimator.model.state`)

    @property
    def total(self) -> int:
        return self.weights + (self.kv or 0) + (self.activation or 0) + self.overhead + self.state


def layouts(model: ModelSpec, system: SystemSpec, *, max_nodes: int, allow_tp_across: bool) -> list[Layout]:
    """Every TP × PP a replica can take on up to ``max_nodes`` × ``system``, fewest GPUs first: TP a valid degree
    inside one link domain (or up to a node and beyond when ``allow_tp_across``), PP at most the model's layers;
    a MoE model's experts over each stage's TP GPUs, and also over g attention groups of them (PP 1, EP at most
    the experts)."""
    limit = max_nodes * system.gpus_per_node
    tp_limit = limit if allow_tp_across else system.domain_gpus
    arch = model.arch
    layers = arch.num_layers if arch is not None else PIPELINE_DEGREES[-1]
    experts = 0 if arch is None or arch.moe is None else arch.moe.num_experts
    degrees = [tp for tp in tensor_parallel_degrees(model) if tp <= tp_limit]
    found = [Layout(tp, pp, tp if experts else 1) for tp in degrees
             for pp in PIPELINE_DEGREES if pp <= layers and tp * pp <= limit]
    found += [Layout(tp, 1, tp * g) for tp in degrees for g in ATTENTION_GROUPS if tp * g <= min(limit, experts)]
    return sorted(found, key=lambda lay: (lay.gpus, lay.pp, lay.groups))


def stage_memory(model: ModelSpec, gpu: GpuSpec, rt: Runtime, layout: Layout, batch: int, prompt: int,
                 output: int) -> StageMemory:
    """Memory on one GPU of a stage of ``layout`` for ``batch`` sequences (see the module docstring): an attention
    group's share of them, ⌈batch ÷ groups⌉, and the experts EP deals it."""
    m = memory_per_gpu(model, gpu, rt, layout.tp, group_batch(layout, batch), prompt, output)
    weights = m.weights
    if layout.ep > 1 and model.arch is not None:
        weights = expert_parallel_weights_bytes(model.arch, rt.weight_format, layout.tp, layout.ep)
    pp = layout.pp
    return StageMemory(math.ceil(weights / pp), None if m.kv is None else math.ceil(m.kv / pp), m.activation,
                       m.overhead, math.ceil(m.state / pp))


def group_batch(layout: Layout, batch: int) -> int:
    """Sequences one attention group of ``layout`` runs of the replica's ``batch``: ⌈batch ÷ groups⌉."""
    return -(-batch // layout.groups)


def usable_bytes(gpu: GpuSpec, headroom: float) -> int:
    """Capacity a serving engine lets itself use: the rest is headroom."""
    return math.floor(gpu.memory_bytes * (1 - headroom))


def max_replica_batch(model: ModelSpec, gpu: GpuSpec, rt: Runtime, layout: Layout, prompt: int, output: int,
                      headroom: float) -> int:
    """Largest batch one replica holds at ``prompt`` + ``output`` tokens within the usable memory (0: none)."""
    limit = usable_bytes(gpu, headroom)

    def fits(batch: int) -> bool:
        return stage_memory(model, gpu, rt, layout, batch, prompt, output).total <= limit

    return max(largest_true(fits, 1, MAX_BATCH), 0)


def max_replica_context(model: ModelSpec, gpu: GpuSpec, rt: Runtime, layout: Layout, batch: int, output: int,
                        headroom: float) -> int | None:
    """Longest prompt + output each of ``batch`` sequences can have within the usable memory (None: no arch)."""
    if model.arch is None:
        return None
    limit = usable_bytes(gpu, headroom)

    def fits(prompt: int) -> bool:
        return stage_memory(model, gpu, rt, layout, batch, prompt, output).total <= limit

    prompt = longest_prompt(fits, batch, MAX_TOKENS - output, rt.profile.prefill_chunk_tokens)
    return 0 if prompt < 1 else prompt + output


def stage_link(system: SystemSpec, layout: Layout) -> Link:
    """The link between pipeline stages: the slowest a replica of ``layout`` crosses."""
    return group_link(system, layout.gpus)


def servers_for(system: SystemSpec, gpus: int) -> int:
    """Whole servers that hold ``gpus`` GPUs."""
    return math.ceil(gpus / system.gpus_per_node)


def replicas_filling(system: SystemSpec, layout: Layout, replicas: int) -> int:
    """Replicas that fit in the GPUs ``replicas`` × ``layout`` needs bought anyway (`SystemSpec.bought_gpus`: a
    smaller size of the server where one holds them, else whole servers)."""
    return max(replicas, system.bought_gpus(replicas * layout.gpus) // layout.gpus)


def experts_per_gpu(model: ModelSpec, layout: Layout) -> int | None:
    """Experts each GPU holds of each of its MoE layers under the layout's expert parallel."""
    if model.arch is None or model.arch.moe is None:
        return None
    return experts_held(model.arch, layout.ep)
