"""The hardware a request names, resolved from the catalog: a card alone, a server (``system``) and how many of
them, GPUs per server, the scale-out network, the usable memory per GPU. The CLI, the HTTP API, the Python API,
plan and sweep all choose hardware here."""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from estimator.request.errors import FieldInvalid

if TYPE_CHECKING:
    from estimator.catalog.registry import Catalog
    from estimator.catalog.specs import GpuSpec
    from estimator.catalog.systems import SystemSpec
    from estimator.request.models import Hardware


class Resolved(NamedTuple):
    """The card, the server it sits in (None: a card alone), the servers, and whether the server was assumed (a
    card alone on more than one GPU sits in its common server)."""

    gpu: GpuSpec
    system: SystemSpec | None
    nodes: int
    assumed: bool


def resolve(catalog: Catalog, hw: Hardware, gpus: int) -> Resolved:
    """The hardware of ``hw`` for a job on ``gpus`` GPUs: a system names its GPU; a GPU alone on more than one GPU
    (or given nodes) sits in its common server; ``gpus_per_node`` and ``network`` override the server's."""
    if hw.system is not None:
        chosen: SystemSpec | None = catalog.systems.get(hw.system)
        assert chosen is not None
        card = catalog.system_gpu(chosen)
        if hw.gpu is not None and catalog.gpus.get(hw.gpu).name != card.name:
            raise FieldInvalid("gpu", "{gpu} {name} is not the GPU of {system} {system_name} ({card}); give one",
                               name=hw.gpu, system_name=chosen.name, card=card.name)
        assumed = False
    elif hw.gpu is not None:
        card = catalog.gpus.get(hw.gpu)
        wanted = gpus > 1 or hw.nodes is not None or hw.gpus_per_node is not None
        found = catalog.systems_for(card) if wanted else []
        chosen, assumed = (found[0], True) if found else (None, False)
        if chosen is None and (hw.nodes is not None or hw.gpus_per_node is not None):
            raise FieldInvalid("nodes", "no system in specs/systems holds {card}: {nodes} and {gpus_per_node} need "
                               "{system}", card=card.name)
    else:
        raise FieldInvalid("gpu", "give {gpu} (a card) or {system} (a server, e.g. hgx-h100)")
    if chosen is not None and hw.gpus_per_node is not None:
        chosen = _per_node(chosen, hw.gpus_per_node)
    if hw.network is not None:
        chosen = _network(chosen, hw.network)
    return Resolved(card, chosen, 1 if hw.nodes is None else hw.nodes, assumed)


def _per_node(system: SystemSpec, per_node: int) -> SystemSpec:
    from pydantic import ValidationError

    from estimator.catalog.registry import validation_message
    from estimator.catalog.systems import SystemSpec

    data = {**system.model_dump(), "gpus_per_node": per_node, "domain_gpus": min(system.domain_gpus, per_node)}
    try:
        return SystemSpec.model_validate(data)
    except ValidationError as error:
        raise FieldInvalid("gpus_per_node", "{gpus_per_node} {count}: {message}", count=per_node,
                           message=validation_message(error)) from None


def _network(system: SystemSpec | None, network: str) -> SystemSpec:
    from pydantic import ValidationError

    from estimator.catalog.registry import validation_message
    from estimator.catalog.systems import with_network

    if system is None:
        raise FieldInvalid("network", "{network} replaces a system's scale-out network; give {system}")
    try:
        return with_network(system, network)
    except ValidationError as error:
        raise FieldInvalid("network", "{network} {text}: {message}", text=network,
                           message=validation_message(error)) from None


def with_gpu_memory(gpu: GpuSpec, capacity: int | None) -> GpuSpec:
    """The card with ``capacity`` bytes as its usable memory, when given."""
    return gpu if capacity is None else gpu.with_memory(capacity)
