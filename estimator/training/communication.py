"""A training step's communication, split by parallelism, each charged over the link its group crosses.

Megatron-LM's layout (Narayanan et al. 2021, "Efficient large-scale language model training on GPU clusters"):
tensor-parallel groups are the tp innermost GPUs (inside one NVLink domain), pipeline stages the next tp × pp,
data-parallel replicas the outermost, so a DP group spans every GPU of the job and crosses the network as soon as
the job spans nodes. Per step, on one GPU:

- TP: 4 all-reduces of the micro-batch's activations per layer (2 forward, 2 backward), for every micro-batch;
  full recompute runs the forward again, its 2 all-reduces with it (Korthikanti et al. 2022 §4);
- PP: each micro-batch's activation is sent forward and its gradient back across each stage boundary, split
  over the TP ranks (Narayanan et al. 2021 §4.1, scatter/gather: each of the t ranks sends 1/t of it to its
  counterpart, and the next stage all-gathers it over the TP group's link; with sequence parallelism the
  activation is already split and stays so); the interleaved schedule crosses v times as many boundaries
  (Narayanan et al. 2021 §2.2.2: its communication grows v-fold);
- DP: one all-reduce of the stage's gradients (ZeRO-3 / FSDP: two parameter gathers and a reduce-scatter).

Time = the collective's steps × the link's latency + its bytes on the wire ÷ (bandwidth × the profile's
interconnect efficiency) (`estimator.model.collectives`). Without a system every group uses the card's listed
interconnect, bandwidth only, as before systems existed.
"""

from __future__ import annotations

from dataclasses import dataclass

from estimator.catalog.specs import GpuSpec
from estimator.catalog.systems import SystemSpec
from estimator.errors import WorkloadInvalid
from estimator.model.collectives import Link, allgather_s, group_link, p2p_s, ring_allreduce_s
from estimator.training.workload import TrainingWorkload


@dataclass(frozen=True)
class Communication:
    """Seconds per step on one GPU, by parallelism (not overlapped with compute)."""

    tp_s: float
    pp_s: float
    dp_s: float

    @property
    def total_s(self) -> float:
        return self.tp_s + self.pp_s + self.dp_s


def _scaled(link: Link, efficiency: float) -> Link:
    return Link(link.tier, link.bytes_per_s * efficiency, link.latency_s)


def _card_link(gpu: GpuSpec, gpus: int) -> Link:
    if gpus > 1 and gpu.interconnect_bytes_per_s is None:
        raise WorkloadInvalid("this GPU's spec has no interconnect_gb_per_s; multi-GPU step time needs it")
    return Link("link", (gpu.interconnect_bytes_per_s or 1.0) / 2, 0.0)  # datasheets give bidirectional totals


def step_communication(w: TrainingWorkload, gpu: GpuSpec, system: SystemSpec | None, *, hidden: int,
                       stage_layers: int, shard_params: float, compute_bytes: int,
                       grad_wire_bytes: int) -> Communication:
    """TP, PP and DP seconds per step of ``w`` on ``gpu`` (in ``system`` when given; see the module docstring)."""
    eff = w.profile.interconnect_efficiency
    if system is None:
        tp_link = pp_link = dp_link = _scaled(_card_link(gpu, w.gpus), eff)
    else:
        tp_link = _scaled(group_link(system, w.tp), eff)
        pp_link = _scaled(group_link(system, w.tp * w.pp), eff)
        dp_link = _scaled(group_link(system, w.gpus), eff)
    activation = w.tokens_per_micro_batch * hidden * compute_bytes
    per_layer = 6 if w.recompute == "full" else 4
    tp_s = per_layer * stage_layers * w.grad_accum * ring_allreduce_s(activation, w.tp, tp_link) if w.tp > 1 else 0.0
    pp_s = 0.0
    if w.pp > 1:
        gather = allgather_s(activation, w.tp, tp_link) if not w.sequence_parallel else 0.0
        pp_s = 2 * w.grad_accum * w.virtual_stages * (p2p_s(activation / w.tp, pp_link) + gather)
    if w.dp <= 1:
        dp_s = 0.0
    elif w.shard_stage == 3:
        dp_s = 3 * allgather_s(shard_params * compute_bytes, w.dp, dp_link)
    else:
        dp_s = ring_allreduce_s(shard_params * grad_wire_bytes, w.dp, dp_link)
    return Communication(tp_s, pp_s, dp_s)
