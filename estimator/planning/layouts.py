"""Layouts people deploy: how one replica of a model is placed on the GPUs of a system, and what it costs per GPU.

- **Tensor parallel** (TP) splits every layer over GPUs of one link domain (NVSwitch, NVL72, an NVLink bridge):
  its two all-reduces per layer need the fast link. It crosses a domain only when asked (``allow_tp_across``).
- **Pipeline parallel** (PP) gives each of ``pp`` stages 1/pp of the layers (weights and KV cache), across domains
  and nodes: a stage hands one activation per token to the next (a point-to-point send over the link between them).
- **Expert parallel** (EP, MoE models): the experts of each stage are spread over its TP GPUs, whole experts per
  GPU, and tokens travel to them by all-to-all (dispatch and combine per MoE layer). Memory per GPU is the same as
  slicing every expert; the report states the experts each GPU holds.
- **Replicas**: independent data-parallel copies; a server's GPUs left over by one replica hold more replicas.

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
from estimator.model.capacity import MAX_BATCH, MAX_TOKENS, largest_true, longest_prompt
from estimator.model.collectives import Link, group_link
from estimator.model.footprint import memory_per_gpu
from estimator.model.parallel import tensor_parallel_degrees
from estimator.model.runtime import Runtime

DEFAULT_HEADROOM = 0.10  # vLLM's default gpu_memory_utilization = 0.9
PIPELINE_DEGREES = (1, 2, 3, 4, 6, 8, 12, 16)


@dataclass(frozen=True)
class Layout:
    """One replica's placement: TP × PP GPUs of ``system``."""

    tp: int
    pp: int

    @property
    def gpus(self) -> int:
        return self.tp * self.pp


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
    inside one link domain (or up to a node and beyond when ``allow_tp_across``), PP at most the model's layers."""
    limit = max_nodes * system.gpus_per_node
    tp_limit = limit if allow_tp_across else system.domain_gpus
    layers = model.arch.num_layers if model.arch is not None else PIPELINE_DEGREES[-1]
    found = [Layout(tp, pp) for tp in tensor_parallel_degrees(model) if tp <= tp_limit
             for pp in PIPELINE_DEGREES if pp <= layers and tp * pp <= limit]
    return sorted(found, key=lambda lay: (lay.gpus, lay.pp))


def stage_memory(model: ModelSpec, gpu: GpuSpec, rt: Runtime, layout: Layout, batch: int, prompt: int,
                 output: int) -> StageMemory:
    """Memory on one GPU of a stage of ``layout`` for ``batch`` sequences (see the module docstring)."""
    m = memory_per_gpu(model, gpu, rt, layout.tp, batch, prompt, output)
    pp = layout.pp
    return StageMemory(math.ceil(m.weights / pp), None if m.kv is None else math.ceil(m.kv / pp), m.activation,
                       m.overhead, math.ceil(m.state / pp))


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
    """Replicas that fit in the servers ``replicas`` × ``layout`` needs anyway (a server is bought whole)."""
    servers = servers_for(system, replicas * layout.gpus)
    return max(replicas, servers * system.gpus_per_node // layout.gpus)


def experts_per_gpu(model: ModelSpec, layout: Layout) -> int | None:
    """Experts each GPU holds of each of its MoE layers under expert parallel over the stage's TP GPUs."""
    if model.arch is None or model.arch.moe is None:
        return None
    return math.ceil(model.arch.moe.num_experts / layout.tp)
