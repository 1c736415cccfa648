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
- CP (context parallel, ring attention): each of the cp − 1 steps of every layer hands this rank's K and V
  chunk to the next rank of the TP × CP group, in the forward, and K, V and their gradients in the backward;
- DP: one all-reduce of the stage's gradients per step (gradient accumulation reduces once, after the last
  micro-batch); ZeRO-3 / FSDP full shard: two parameter all-gathers (forward, backward) and a gradient
  reduce-scatter for every micro-batch, since the gathered parameters are freed after each forward and backward
  (Rajbhandari et al. 2020 §5.3 count 3 Ψ per step of one micro-batch; Zhao et al. 2023, "PyTorch FSDP", arXiv
  2304.11277 §3.2: FULL_SHARD reshards after forward and after backward).

A DP group that spans nodes with several of its ranks in each node runs NCCL's ring over rails: one channel per
rank of the node, each leaving the node through its own GPU's NIC, every hop of every channel busy at once, so
the slower of the node's link and each GPU's share of the network sets the time (`rail_ring_allreduce_s`,
`rail_ring_allgather_s`); with one rank per node (TP × PP filling the node) every hop is a network hop.

Time = the collective's steps × the link's latency + its bytes on the wire ÷ (bandwidth × the profile's
interconnect efficiency) (`estimator.model.collectives`). Without a system every group uses the card's listed
interconnect, bandwidth only, as before systems existed.
"""

from __future__ import annotations

from dataclasses import dataclass

from estimator.catalog.specs import GpuSpec
from estimator.catalog.systems import SystemSpec
from estimator.errors import WorkloadInvalid
from estimator.model.collectives import (
    Link,
    allgather_s,
    group_link,
    p2p_s,
    rail_ring_allgather_s,
    rail_ring_allreduce_s,
    ring_allreduce_s,
)
from estimator.model.rates import achievable
from estimator.training.experts import expert_link, step_all_to_all_s
from estimator.training.workload import TrainingWorkload


@dataclass(frozen=True)
class Communication:
    """Seconds per step on one GPU, by parallelism (not overlapped with compute)."""

    tp_s: float
    pp_s: float
    dp_s: float
    gather_s: float = 0.0  # of dp_s, the ZeRO-3 / FSDP parameter all-gathers (the rest reduces gradients)
    cp_s: float = 0.0
    ep_s: float = 0.0  # expert parallel: the MoE layers' all-to-all (`training.experts`)

    @property
    def total_s(self) -> float:
        return self.tp_s + self.pp_s + self.dp_s + self.cp_s + self.ep_s


def _scaled(link: Link, efficiency: float) -> Link:
    """``link`` at the bandwidth collectives reach on it (the profile's ``efficiency`` of its peak)."""
    return Link(link.tier, achievable(link.bytes_per_s, efficiency), link.latency_s)


def _card_link(gpu: GpuSpec, gpus: int) -> Link:
    if gpus > 1 and gpu.interconnect_bytes_per_s is None:
        raise WorkloadInvalid("this GPU's spec has no interconnect_gb_per_s; multi-GPU step time needs it")
    return Link("link", (gpu.interconnect_bytes_per_s or 1.0) / 2, 0.0)  # datasheets give bidirectional totals


@dataclass(frozen=True)
class _Hierarchy:
    """A node-spanning DP group: ``inner`` ranks per node over ``inner_link``, ``outer`` nodes over ``outer_link``."""

    inner: int
    inner_link: Link
    outer: int
    outer_link: Link


def _dp_hierarchy(w: TrainingWorkload, system: SystemSpec | None, eff: float) -> _Hierarchy | None:
    """The two levels of a DP group that spans nodes with several ranks in each; None where it does not."""
    if system is None or w.gpus <= system.gpus_per_node or system.gpus_per_node % (w.tp * w.pp):
        return None
    group = w.reduce_group
    inner = min(group, system.gpus_per_node // (w.tp * w.pp))
    if inner == 1 or group % inner:
        return None
    return _Hierarchy(inner, _scaled(group_link(system, w.tp * w.pp * inner), eff), group // inner,
                      _scaled(group_link(system, w.gpus), eff))


def _dp_s(w: TrainingWorkload, system: SystemSpec | None, dp_link: Link, eff: float, *, shard_params: float,
          compute_bytes: int, grad_wire_bytes: int) -> tuple[float, float]:
    """Seconds of DP traffic per step and, of them, the ZeRO-3 / FSDP parameter all-gathers."""
    n = w.reduce_group
    if n <= 1:
        return 0.0, 0.0
    h = _dp_hierarchy(w, system, eff)
    if w.shard_stage == 3:
        payload = shard_params * compute_bytes
        one = (allgather_s(payload, n, dp_link) if h is None
               else rail_ring_allgather_s(payload, h.inner, h.inner_link, h.outer, h.outer_link))
        return 3 * w.grad_accum * one, 2 * w.grad_accum * one
    payload = shard_params * grad_wire_bytes
    return (ring_allreduce_s(payload, n, dp_link) if h is None
            else rail_ring_allreduce_s(payload, h.inner, h.inner_link, h.outer, h.outer_link)), 0.0


def step_communication(w: TrainingWorkload, gpu: GpuSpec, system: SystemSpec | None, *, hidden: int,
                       stage_layers: int, shard_params: float, compute_bytes: int,
                       grad_wire_bytes: int, kv_width: int = 0, expert_params: float = 0.0,
                       moe_layers: int = 0, experts_per_token: int = 0) -> Communication:
    """TP, PP and DP seconds per step of ``w`` on ``gpu`` (in ``system`` when given; see the module docstring).
    Expert parallel: ``shard_params`` are the GPU's parameters but its ``expert_params``, whose gradients reduce over
    the dp ÷ ep ranks holding the same experts (that group's geometry: dp ÷ ep ranks strided by tp × ep), and its
    ``moe_layers`` exchange tokens by all-to-all (`training.experts.step_all_to_all_s`)."""
    eff = w.profile.interconnect_efficiency
    if system is None:
        tp_link = pp_link = dp_link = cp_link = _scaled(_card_link(gpu, w.gpus), eff)
    else:
        tp_link = _scaled(group_link(system, w.tp), eff)
        cp_link = _scaled(group_link(system, w.tp * w.cp), eff)
        pp_link = _scaled(group_link(system, w.tp * w.cp * w.pp), eff)
        dp_link = _scaled(group_link(system, w.gpus), eff)
    activation = w.tokens_per_micro_batch * hidden * compute_bytes
    per_layer = 6 if w.recompute == "full" else 4
    tp_s = per_layer * stage_layers * w.grad_accum * ring_allreduce_s(activation, w.tp, tp_link) if w.tp > 1 else 0.0
    pp_s = 0.0
    if w.pp > 1:
        gather = allgather_s(activation, w.tp, tp_link) if not w.sequence_parallel else 0.0
        pp_s = 2 * w.grad_accum * w.virtual_stages * (p2p_s(activation / w.tp, pp_link) + gather)
    dp_s, gather_s = _dp_s(w, system, dp_link, eff, shard_params=shard_params, compute_bytes=compute_bytes,
                           grad_wire_bytes=grad_wire_bytes)
    ep_s = 0.0
    if w.ep > 1:
        experts = w.model_copy(update={"dp": w.dp // w.ep, "tp": w.tp * w.ep})
        dp_s += _dp_s(experts, system, dp_link, eff, shard_params=expert_params, compute_bytes=compute_bytes,
                      grad_wire_bytes=grad_wire_bytes)[0]
        ep_link = _scaled(expert_link(w, gpu, system), eff)
        ep_s = step_all_to_all_s(w, moe_layers=moe_layers, experts_per_token=experts_per_token, hidden=hidden,
                                 element_bytes=compute_bytes, link=ep_link)
    # ring attention: each of the cp − 1 steps hands this rank's K and V chunk on; the backward hands K, V and
    # their gradients (twice the forward's bytes), full recompute runs the forward's ring again
    kv = w.tokens_per_micro_batch * kv_width * compute_bytes
    cp_s = ((4 if w.recompute == "full" else 3) * (w.cp - 1) * stage_layers * w.grad_accum * p2p_s(kv, cp_link)
            if w.cp > 1 else 0.0)
    return Communication(tp_s, pp_s, dp_s, gather_s, cp_s, ep_s)
