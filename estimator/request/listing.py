"""A catalog listing request: the rows of `gpus`, `models` and `systems --format json` (and /v1/gpus, /v1/models,
/v1/systems, /v1/formats), and their flat CSV rows."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from estimator.model.inventory import active_param_count, param_count
from estimator.report import flatten

if TYPE_CHECKING:
    from estimator.catalog.architecture import ModelSpec
    from estimator.catalog.registry import Catalog
    from estimator.catalog.specs import GpuSpec
    from estimator.catalog.systems import SystemSpec

KINDS = ("gpus", "systems", "models", "formats")


def gpu_row(g: GpuSpec) -> dict[str, Any]:
    """One card as the JSON that `gpus --format json` lists: every spec key as the file gives it, then the figures
    the estimator uses in base units (bytes, bytes/s) and where the usable capacity comes from."""
    return {**g.model_dump(mode="json"), "usable_memory_bytes": g.memory_bytes, "capacity_source": g.capacity_source,
            "bandwidth_bytes_per_s": g.bandwidth_bytes_per_s,
            "derived_bandwidth_gb_per_s": round(g.derived_bandwidth_gb_per_s, 3)}


def table_rows(rows: list[dict[str, Any]]) -> tuple[list[str], list[dict[str, Any]]]:
    """CSV rows: each entry flattened with dots (``dense_tflop_per_s.fp16``); columns are every key any entry has,
    in first-seen order, and an entry without one leaves it empty."""
    flat = [flatten(r) for r in rows]
    keys = list(dict.fromkeys(k for r in flat for k in r))
    return keys, [{k: r.get(k) for k in keys} for r in flat]


def model_row(m: ModelSpec) -> dict[str, Any]:
    """One model as `models --format json` lists it: the table's figures, counts exact (parameters, not billions)."""
    a = m.arch
    assert a is not None  # catalog models carry an architecture
    return {"name": m.name, "aliases": list(m.aliases), "model_type": a.model_type, "params": param_count(a),
            "active_params": active_param_count(a), "num_layers": a.num_layers, "hidden_size": a.hidden_size,
            "num_heads": a.attention.num_heads, "num_kv_heads": a.attention.num_kv_heads,
            "max_position_embeddings": a.max_position_embeddings}


def system_row(catalog: Catalog, s: SystemSpec) -> dict[str, Any]:
    """One server as `systems --format json` lists it (and /v1/systems): every spec key, and its GPU's name."""
    return {**s.model_dump(mode="json"), "gpu_name": catalog.system_gpu(s).name}


def catalog_rows(catalog: Catalog, kind: str) -> list[dict[str, Any]]:
    """Every entry of one catalog (``kind``: gpus, systems, models or formats) as its listing's JSON rows."""
    if kind == "gpus":
        return [gpu_row(g) for g in sorted(catalog.gpus, key=lambda g: (g.vendor, g.name))]
    if kind == "models":
        return [model_row(m) for m in sorted(catalog.models, key=lambda m: m.name)]
    if kind == "systems":
        return [system_row(catalog, s) for s in sorted(catalog.systems, key=lambda s: s.name)]
    if kind == "formats":
        return [f.model_dump(mode="json") for f in sorted(catalog.formats, key=lambda f: f.name)]
    from estimator.errors import WorkloadInvalid

    raise WorkloadInvalid(f"no catalog {kind!r}")  # a caller's bug: the routes name each
