"""Communication by collective, over the slowest link a group of GPUs crosses: latency + bandwidth.

A group of consecutive GPUs of a system (`SystemSpec`) crosses one of three tiers: the intra-node link while it
stays inside one link domain (NVSwitch, NVLink bridge, Infinity Fabric), PCIe while it stays inside one node, the
scale-out network beyond. Its collectives run at that tier's per-GPU, per-direction bandwidth and pay its latency
per step (NCCL's cost model, src/graph/tuning.cc: time = steps × latency + bytes on the wire ÷ bandwidth).

Costs (Thakur, Rabenseifner & Gropp 2005, "Optimization of collective communication operations in MPICH"):

- ring all-reduce of B bytes over n GPUs: 2 (n − 1) steps, 2 (n − 1) / n × B on the wire per GPU;
- all-gather or reduce-scatter: n − 1 steps, (n − 1) / n × B;
- all-to-all of B bytes per GPU (MoE dispatch or combine): n − 1 steps, (n − 1) / n × B;
- point-to-point (a pipeline stage handing activations on): 1 step, B;
- a ring over nodes of several GPUs each (NCCL's ring, one channel per rail): the same steps and bytes, split
  between the node's link and each GPU's NIC, both busy at once, so the slower of the two sets the time.

Every function is plain arithmetic on its arguments, so it takes floats or numpy arrays alike.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeVar

from estimator.catalog.specs import GpuSpec
from estimator.catalog.systems import SystemSpec
from estimator.units import GIGA

Tier = Literal["link", "pcie", "network"]
N = TypeVar("N", float, int)


@dataclass(frozen=True)
class Link:
    """One tier a collective runs over: per-GPU bandwidth per direction (bytes/s) and latency per step (s)."""

    tier: Tier
    bytes_per_s: float
    latency_s: float


def group_tier(system: SystemSpec, gpus: int) -> Tier:
    """The slowest tier a group of ``gpus`` consecutive GPUs of ``system`` crosses."""
    if gpus <= system.domain_gpus:
        return "link"
    return "pcie" if gpus <= system.gpus_per_node else "network"


def group_link(system: SystemSpec, gpus: int) -> Link:
    """The link a group of ``gpus`` consecutive GPUs talks over: its slowest tier's bandwidth and latency."""
    tier = group_tier(system, gpus)
    if tier == "link":
        return Link(tier, system.group_link_bytes_per_s(gpus), system.link_latency_s)
    if tier == "pcie":
        return Link(tier, system.pcie_bytes_per_s, system.pcie_latency_s)
    return Link(tier, system.network_bytes_per_s_per_gpu, system.network_latency_s)


def ring_allreduce_s(payload_bytes: N, gpus: int, link: Link) -> float:
    """2 (n − 1) × latency + 2 (n − 1) / n × bytes ÷ bandwidth; 0 for one GPU."""
    if gpus <= 1:
        return 0.0
    steps = 2 * (gpus - 1)
    return float(steps * link.latency_s + steps / gpus * payload_bytes / link.bytes_per_s)


def allgather_s(payload_bytes: N, gpus: int, link: Link) -> float:
    """(n − 1) × latency + (n − 1) / n × bytes ÷ bandwidth (the same for a reduce-scatter); 0 for one GPU."""
    if gpus <= 1:
        return 0.0
    return float((gpus - 1) * link.latency_s + (gpus - 1) / gpus * payload_bytes / link.bytes_per_s)


def all_to_all_s(bytes_per_gpu: N, gpus: int, link: Link) -> float:
    """Pairwise exchange of ``bytes_per_gpu`` (each GPU keeps 1/n of it): (n − 1) steps, (n − 1)/n × bytes."""
    return allgather_s(bytes_per_gpu, gpus, link)


def p2p_s(payload_bytes: N, link: Link) -> float:
    """One send: latency + bytes ÷ bandwidth."""
    return float(link.latency_s + payload_bytes / link.bytes_per_s)


def rail_ring_allgather_s(payload_bytes: N, inner: int, inner_link: Link, outer: int, outer_link: Link) -> float:
    """All-gather of ``payload_bytes`` over ``outer`` nodes of ``inner`` GPUs each, as NCCL's ring runs it (a
    reduce-scatter is the same in reverse): the payload splits over ``inner`` channels, each a ring through all
    n = inner × outer GPUs that leaves every node through one GPU's NIC (one rail per channel). Every link of a
    ring carries (n − 1)/n of its channel's bytes, and all of them at once, chunk by chunk, so per GPU
    (n − 1)/n × payload × (inner − 1)/inner cross the inner link and (n − 1)/n × payload/inner its share of the
    network, concurrently: the slower of the two sets the time (NCCL src/graph/tuning.cc, ncclTopoTuneModel: a
    ring's bus bandwidth is nChannels × the per-channel bandwidth of its slowest hop, the network's past two
    nodes). Its n − 1 steps pay the network's latency at the outer − 1 node crossings, the inner link's at the rest."""
    n = inner * outer
    wire = (n - 1) / n * payload_bytes
    inside = wire * (inner - 1) / inner / inner_link.bytes_per_s
    across = wire / inner / outer_link.bytes_per_s
    latency = (n - outer) * inner_link.latency_s + (outer - 1) * outer_link.latency_s
    return float(latency + (inside if inside > across else across))


def rail_ring_allreduce_s(payload_bytes: N, inner: int, inner_link: Link, outer: int, outer_link: Link) -> float:
    """Ring all-reduce over ``outer`` nodes of ``inner`` GPUs: a reduce-scatter and an all-gather, each
    `rail_ring_allgather_s` (NCCL's ring all-reduce: 2 (n − 1) steps, 2 (n − 1)/n of the bytes on every hop)."""
    return 2 * rail_ring_allgather_s(payload_bytes, inner, inner_link, outer, outer_link)


def gpu_in_group(gpu: GpuSpec, system: SystemSpec, gpus: int) -> GpuSpec:
    """``gpu`` as a member of a group of ``gpus`` GPUs of ``system``: its listed GPU-to-GPU bandwidth replaced by
    the link the group crosses (the timing model takes the bidirectional total, as datasheets list it)."""
    link = group_link(system, gpus)
    return gpu.model_copy(update={"interconnect_gb_per_s": 2 * link.bytes_per_s / GIGA})
