"""Systems: servers (and racks) as people buy them — GPUs per node, the link that joins them, the network out.

A system file (``specs/systems/<name>.yaml``, schema in specs/systems/README.md) names its GPU from specs/gpus and
describes two tiers of links:

- the **intra-node link** (NVSwitch, an NVLink bridge, Infinity Fabric, PCIe), which joins ``domain_gpus`` GPUs at
  ``link_gb_per_s`` per GPU per direction; GPUs of one node in different domains talk over PCIe
  (``pcie_gb_per_s`` per direction);
- the **scale-out network**: ``nics_per_node`` × ``nic_gbit_per_s`` (InfiniBand, Ethernet or RoCE) per node.

Keys carry the vendor's decimal units (GB/s = 10⁹ B/s, Gbit/s = 10⁹ bit/s, µs); the properties convert once, to
bytes/s and seconds. A mesh link (Infinity Fabric: one link to each peer) gives a group of g GPUs only g − 1 of its
domain − 1 links, so its bandwidth scales with the group; a switch gives every group the full per-GPU figure.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from estimator.catalog.specs import refuse
from estimator.errors import FieldInvalid
from estimator.units import GIGA

LinkKind = Literal["nvswitch", "nvlink-switch", "nvlink-bridge", "infinity-fabric", "gaudi-roce", "pcie"]
NetworkKind = Literal["infiniband", "ethernet", "roce"]
MICRO = 1e6  # µs per second (divide by it: 2.5 / 1e6 is exactly 2.5e-6, 2.5 × 1e-6 is not)


class SystemSpec(BaseModel):
    """One server (or one rack-scale system) as its datasheet describes it."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True, allow_inf_nan=False)

    name: str = Field(min_length=1, pattern=r"^[a-z0-9][a-z0-9.\-]*$")
    aliases: tuple[str, ...] = ()
    description: str = Field(min_length=1)
    gpu: str = Field(min_length=1)  # a name or alias in specs/gpus
    default_for_gpu: bool = False  # the server a GPU named alone is assumed to sit in (one per GPU)
    gpus_per_node: int = Field(ge=1, le=1024)
    intra_node_link: LinkKind
    link_topology: Literal["switch", "mesh"] = "switch"
    link_gb_per_s: float = Field(gt=0, le=100_000)  # per GPU, per direction, inside a domain
    link_latency_us: float = Field(gt=0, le=1_000)
    domain_gpus: int = Field(ge=1, le=1024)  # GPUs one link domain joins (8 NVSwitch, 72 NVL72, 2/4 bridge, 1 PCIe)
    # the smaller sizes the same server is also built or rented in (cloud shapes of 1, 2, 4 of its GPUs, a
    # single-card workstation): each below gpus_per_node and dividing it; none for a rack bought whole
    partial_gpus: tuple[Annotated[int, Field(ge=1, le=1024)], ...] = ()
    pcie_gb_per_s: float = Field(gt=0, le=1_000)  # per GPU, per direction, between domains of one node
    pcie_latency_us: float = Field(gt=0, le=1_000)
    network: NetworkKind
    nics_per_node: int = Field(ge=1, le=1024)
    nic_gbit_per_s: float = Field(gt=0, le=100_000)
    network_latency_us: float = Field(gt=0, le=10_000)
    host_memory_gb: float = Field(gt=0, le=1_000_000)
    server_power_w: float = Field(gt=0, le=10_000_000)
    price_usd: float | None = Field(default=None, gt=0, le=1_000_000_000)  # a whole system: an NVL72 rack is ~$3M
    price_date: str | None = Field(default=None, pattern=r"^\d{4}-\d{2}$")
    year: int | None = Field(default=None, ge=1990, le=2100)  # a release year, as a GPU's
    notes: str | None = None
    sources: tuple[str, ...] = Field(min_length=1)

    @model_validator(mode="after")
    def _check(self) -> SystemSpec:
        problems = []
        if self.domain_gpus > self.gpus_per_node or self.gpus_per_node % self.domain_gpus:
            problems.append(f"domain_gpus {self.domain_gpus} must divide gpus_per_node {self.gpus_per_node}")
        if any(k < 1 or k >= self.gpus_per_node or self.gpus_per_node % k for k in self.partial_gpus) \
                or list(self.partial_gpus) != sorted(set(self.partial_gpus)):
            problems.append(f"partial_gpus {list(self.partial_gpus)} must be distinct sizes in ascending order, each "
                            f"below gpus_per_node {self.gpus_per_node} and dividing it")
        if self.intra_node_link == "pcie" and self.domain_gpus != 1:
            problems.append("a PCIe-only system has domain_gpus 1 (no GPU-to-GPU link joins a group)")
        if (self.price_usd is None) != (self.price_date is None):
            problems.append("price_usd and price_date (YYYY-MM) go together")
        refuse(problems, self.sources)
        return self

    def bought_gpus(self, gpus: int) -> int:
        """GPUs paid for to hold ``gpus``: below one node, the smallest of ``partial_gpus`` that holds them; else
        (or with no smaller size) whole nodes."""
        fits = [k for k in self.partial_gpus if k >= gpus]
        if 0 < gpus < self.gpus_per_node and fits:
            return fits[0]
        return -(-gpus // self.gpus_per_node) * self.gpus_per_node

    @property
    def domains_per_node(self) -> int:
        return self.gpus_per_node // self.domain_gpus

    def group_link_bytes_per_s(self, group: int) -> float:
        """Per-GPU, per-direction bandwidth a group of ``group`` GPUs inside one domain gets from the link: the
        full figure through a switch, (group − 1) of (domain − 1) peer links in a mesh."""
        per_direction = self.link_gb_per_s * GIGA
        if self.link_topology == "mesh" and self.domain_gpus > 1:
            return per_direction * max(group - 1, 1) / (self.domain_gpus - 1)
        return per_direction

    @property
    def pcie_bytes_per_s(self) -> float:
        return self.pcie_gb_per_s * GIGA

    @property
    def network_bytes_per_s_per_gpu(self) -> float:
        """The node's scale-out bandwidth shared by its GPUs, per GPU per direction (Gbit/s ÷ 8 → bytes/s)."""
        return self.nics_per_node * self.nic_gbit_per_s * GIGA / 8 / self.gpus_per_node

    @property
    def link_latency_s(self) -> float:
        return self.link_latency_us / MICRO

    @property
    def pcie_latency_s(self) -> float:
        return self.pcie_latency_us / MICRO

    @property
    def network_latency_s(self) -> float:
        return self.network_latency_us / MICRO

    @property
    def host_memory_bytes(self) -> int:
        return round(self.host_memory_gb * GIGA)


_NETWORK_KINDS: dict[str, NetworkKind] = {"ib": "infiniband", "infiniband": "infiniband", "roce": "roce",
                                          "eth": "ethernet", "ethernet": "ethernet"}


def with_network(system: SystemSpec, text: str) -> SystemSpec:
    """``system`` with its scale-out network replaced by ``text``: NICS x GBIT[g][-KIND] per node, e.g.
    ``8x400g-ib``, ``4x200g-roce``, ``2x100-eth`` (KIND ib, roce or eth; the system's own when left out)."""
    head, _, kind = text.strip().lower().partition("-")
    nics, sep, speed = head.partition("x")
    speed = speed.removesuffix("g")
    if not sep or not nics.isdigit() or int(nics) < 1 or (kind and kind not in _NETWORK_KINDS):
        raise FieldInvalid("network", "{network} {text}: give NICS x Gbit/s per node, e.g. 8x400g-ib (kinds: ib, "
                           "roce, eth)", text=repr(text))
    try:
        gbit = float(speed)
    except ValueError:
        raise FieldInvalid("network", "{network} {text}: {speed} is not a speed in Gbit/s (e.g. 400g)",
                           text=repr(text), speed=repr(speed)) from None
    data = {**system.model_dump(), "nics_per_node": int(nics), "nic_gbit_per_s": gbit,
            "network": _NETWORK_KINDS[kind] if kind else system.network}
    return SystemSpec.model_validate(data)
