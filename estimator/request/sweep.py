"""A sweep request: `sweep`'s option values (or /v1/sweep's fields) converted into a grid of points, every value
checked and the grid's size held to its limit before any model is read; `sweep_result` evaluates it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from estimator.request.choices import Logits
from estimator.request.convert import choice, count, count_list, refuse, split_list
from estimator.request.errors import FieldInvalid
from estimator.request.formats import inference_workload

if TYPE_CHECKING:
    from estimator.catalog.architecture import ModelSpec
    from estimator.catalog.registry import Catalog
    from estimator.catalog.specs import GpuSpec
    from estimator.inference.workload import InferenceWorkload
    from estimator.planning.sweep import SweepResult

# The largest grid `sweep` evaluates unless --max-points says more, from its measured memory per point:
# `python -m lab.speed.sweep_memory` (peak resident memory, the kernel's maxrss, of `estimator sweep --model
# llama-3.1-8b --gpu h100` over 100 batches × 100 prompt lengths × 10 and 40 output lengths) printed on 2026-12-01
# 155 MB at 100,000 points and 309 MB at 400,000 as CSV (514 bytes per point), 198 and 408 MB as JSON (700 bytes
# per point). 2,000,000 points then peak near 1.5 GB in the hungriest format, on top of a ~90 MB process; 10^7
# points (13.8 GB when the rows were all listed at once, not a chunk at a time) need --max-points.
DEFAULT_MAX_POINTS = 2_000_000
_GRID_AXES = ("model", "gpu", "dtype", "gpus", "batch", "prompt_tokens", "output_tokens")


def grid_points(p: Mapping[str, Any]) -> int:
    """Points of the grid that the sweep fields ``p`` name: the product of their comma-separated lists' lengths,
    counted from the text alone (no model read, no value parsed), so an oversized grid is refused first."""
    points = 1
    for name in _GRID_AXES:
        points *= max(1, len([t for t in str(p[name]).split(",") if t.strip()]))
    return points


def too_many_points(points: int, limit: int, advice: str) -> str:
    """The one line that refuses a grid over its limit (the CLI's and `estimator serve`'s alike)."""
    return f"the grid has {points:,} points, more than the limit of {limit:,}: {advice}"


class SweepGrid(NamedTuple):
    """A sweep's grid as parsed: (model, GPU, workload, name asked) per combination, and the axes."""

    items: list[tuple[ModelSpec, GpuSpec, InferenceWorkload, str]]
    batches: list[int]
    prompts: list[int]
    outputs: list[int]

    @property
    def total(self) -> int:
        """Points in the grid."""
        return len(self.items) * len(self.batches) * len(self.prompts) * len(self.outputs)


def sweep_grid(catalog: Catalog, model_for: Callable[[str], ModelSpec], p: Mapping[str, Any]) -> SweepGrid:
    """The grid for `sweep`'s option values ``p``, every value checked, nothing computed yet (``model_for`` reads
    a model name: the catalog's, or the server's, which reads no path)."""
    refuse("sweep", {"explain": bool(p.get("explain")), "units": p.get("units") is not None})
    limit = DEFAULT_MAX_POINTS if p.get("max_points") is None else count("max_points", p["max_points"])
    points = grid_points(p)
    if points > limit:  # before any model is read or anything is built
        advice = "pass {max_points} {count} to raise the limit" if p.get("max_points") is None else "raise {max_points}"
        raise FieldInvalid("max_points", too_many_points(points, limit, advice), count=points)
    batches = count_list("batch", p["batch"])
    prompts = count_list("prompt_tokens", p["prompt_tokens"])
    outputs = count_list("output_tokens", p["output_tokens"], allow_zero=True)
    logits = choice("logits", Logits, p.get("logits") or Logits.last)
    assert logits is not None
    items = []
    for model_name in split_list("model", p["model"]):
        model_spec = model_for(model_name)
        for gpu_name in split_list("gpu", p["gpu"]):
            gpu_spec = catalog.gpus.get(gpu_name)
            for fmt in split_list("dtype", p["dtype"]) if p.get("dtype") else [None]:
                for tp in count_list("gpus", p["gpus"]):  # a degree the model cannot split: rows with their error
                    w = inference_workload(catalog, fmt, p["kv_dtype"], p["profile"], group_size=p.get("group_size"),
                                           logits=logits.value, tensor_parallel=tp, model=model_spec)
                    items.append((model_spec, gpu_spec, w, gpu_name))
    return SweepGrid(items, batches, prompts, outputs)


def sweep_result(grid: SweepGrid, progress: Callable[[int], None] | None = None) -> SweepResult:
    """Evaluate a parsed grid (numpy loads here). A point the model cannot run is a row with its ``error``; a grid
    with no point that can run (a single invalid point included) is refused with the first point's reason."""
    from estimator.errors import WorkloadInvalid
    from estimator.planning.sweep import sweep

    result = sweep(grid.items, grid.batches, grid.prompts, grid.outputs, progress=progress)
    first = result.first_error()
    if result.valid == 0 and first is not None:
        raise WorkloadInvalid(f"{first[0]}: {first[1]}" + (f" (and no other point of the {result.size:,} can run)"
                                                             if result.size > 1 else ""))
    return result
