"""Command line for ``estimator sweep``: a grid of points, each evaluated as `estimate` would, one row apiece.

Registered in estimator/cli/main.py. `sweep_grid` is the one conversion of its options (the command and
`estimator serve` share it): every value checked, the grid's size held to its limit before any model is read,
nothing computed; `sweep_result` evaluates it (numpy loads there).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, NamedTuple

import typer

from estimator.cli.options import (
    ForceOption,
    GroupSizeOption,
    Logits,
    LogitsOption,
    OutputFormat,
    OutputOption,
    PlotOption,
    SpecsDir,
    Units,
    catalog_for,
    check_format,
    count_list,
    inference_workload,
    positive,
    refuse,
    split_list,
)

if TYPE_CHECKING:
    from estimator.catalog.architecture import ModelSpec
    from estimator.catalog.registry import Catalog
    from estimator.catalog.specs import GpuSpec
    from estimator.inference.workload import InferenceWorkload
    from estimator.planning.sweep import SweepResult

app = typer.Typer()


@app.command("sweep")
def sweep_command(
    model: Annotated[str, typer.Option("--model", "-m", help="Models, comma-separated.")],
    gpu: Annotated[str, typer.Option("--gpu", "-g", help="Cards, comma-separated.")],
    dtype: Annotated[str, typer.Option(help="Weight formats, comma-separated.")] = "bf16",
    kv_dtype: Annotated[str | None, typer.Option(help="KV-cache format (default as estimate).")] = None,
    batch: Annotated[str, typer.Option(help="Batches, comma-separated (1,8,64).")] = "1",
    prompt_tokens: Annotated[str, typer.Option(help="Prompt lengths (1k,8k,32k).")] = "2048",
    output_tokens: Annotated[str, typer.Option(help="Generated tokens per sequence, comma-separated (default 256, "
                                               "as plan; estimate defaults to 0, the prompt alone).")] = "256",
    gpus: Annotated[str, typer.Option(help="Tensor-parallel degrees, comma-separated.")] = "1",
    profile: Annotated[str, typer.Option(help="Efficiency profile: optimized or hf.")] = "optimized",
    output_format: Annotated[OutputFormat, typer.Option("--format", "-f", help="csv, json or xlsx (table: csv).")]
    = OutputFormat.csv,
    output: OutputOption = None,
    logits: LogitsOption = Logits.last,
    group_size: GroupSizeOption = None,
    explain: Annotated[bool, typer.Option("--explain", help="Not taken here: see estimate --explain.")] = False,
    units: Annotated[Units | None, typer.Option(help="Not taken here: sweep writes bytes.")] = None,
    plot: PlotOption = None,
    force: ForceOption = False,
    max_points: Annotated[str | None, typer.Option(help="Largest grid evaluated (default 2,000,000 points, about "
                                                   "0.7 KB of memory each; 10m, 2.5e7 accepted).")] = None,
    progress: Annotated[bool, typer.Option(help="Progress bar (shown only in a terminal).")] = True,
    specs_dir: SpecsDir = None,
) -> None:
    """Evaluate a grid; one row per point with estimate's JSON fields flattened.

    \b
    Examples:
      estimator sweep --model llama-3.1-8b,llama-3.1-70b --gpu h100 --gpus 1,4 --batch 1,8,64 -o grid.csv
      estimator sweep --model qwen3-8b --gpu l4,rtx-4090 --dtype bf16,awq-int4 --prompt-tokens 1k,8k,32k
      estimator sweep --model llama-3.1-8b --gpu h100 --batch 1,16 --format json --plot sweep.png
    """
    from estimator.render.formats import write_report

    check_format(output_format, list(OutputFormat), output)
    catalog = catalog_for(specs_dir)
    params = {"model": model, "gpu": gpu, "dtype": dtype, "kv_dtype": kv_dtype, "batch": batch,
              "prompt_tokens": prompt_tokens, "output_tokens": output_tokens, "gpus": gpus, "profile": profile,
              "logits": logits, "group_size": group_size, "explain": explain, "units": units,
              "max_points": max_points}
    grid = sweep_grid(catalog, catalog.model, params)
    if progress and sys.stderr.isatty() and grid.total >= 100_000:
        from rich.progress import Progress

        with Progress(transient=True) as bar:
            task = bar.add_task("sweep", total=grid.total)
            result = sweep_result(grid, progress=lambda n: bar.advance(task, n))
    else:
        result = sweep_result(grid)
    if plot is not None:
        from estimator.render.plot import sweep_chart

        sweep_chart(result, plot)
    chosen = "csv" if output_format is OutputFormat.table else output_format.value  # sweep has no table: CSV
    write_report(chosen, result.rows(), output, table=(result.keys, result), sheet="sweep")


# The largest grid `sweep` evaluates unless --max-points says more, from its measured memory per point:
# `python benchmarks/sweep_memory.py` (peak resident memory, the kernel's maxrss, of `estimator sweep --model
# llama-3.1-8b --gpu h100` over 100 batches × 100 prompt lengths × 10 and 40 output lengths) printed on 2026-12-01
# 155 MB at 100,000 points and 309 MB at 400,000 as CSV (514 bytes per point), 198 and 408 MB as JSON (700 bytes
# per point). 2,000,000 points then peak near 1.5 GB in the hungriest format, on top of a ~90 MB process; 10^7
# points (13.8 GB before rows were listed a chunk at a time, issue 14) need --max-points.
DEFAULT_MAX_POINTS = 2_000_000
_GRID_AXES = ("model", "gpu", "dtype", "gpus", "batch", "prompt_tokens", "output_tokens")


def grid_points(p: dict[str, Any]) -> int:
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


def sweep_grid(catalog: Catalog, model_for: Callable[[str], ModelSpec], p: dict[str, Any]) -> SweepGrid:
    """The grid that `sweep` evaluates for its parameters ``p`` (as typed), every value checked, nothing computed
    yet: the one conversion of its options, which the command and `estimator serve` share (``model_for`` reads a
    model name: the catalog's, or the server's, which reads no path)."""
    refuse("sweep", {"--explain": bool(p.get("explain")), "--units": p.get("units") is not None})
    limit = DEFAULT_MAX_POINTS if p.get("max_points") is None else positive("--max-points", str(p["max_points"]))
    points = grid_points(p)
    if points > limit:  # before any model is read or anything is built
        from estimator.errors import WorkloadInvalid

        raise WorkloadInvalid(too_many_points(points, limit, f"pass --max-points {points} to raise the limit"
                                              if p.get("max_points") is None else "raise --max-points"))
    batches = count_list("--batch", p["batch"])
    prompts = count_list("--prompt-tokens", p["prompt_tokens"])
    outputs = count_list("--output-tokens", p["output_tokens"], allow_zero=True)
    items = []
    for model_name in split_list(p["model"]):
        model_spec = model_for(model_name)
        for gpu_name in split_list(p["gpu"]):
            gpu_spec = catalog.gpus.get(gpu_name)
            for fmt in split_list(p["dtype"]):
                for tp in count_list("--gpus", p["gpus"]):  # a degree the model cannot split: rows with their error
                    w = inference_workload(catalog, fmt, p["kv_dtype"], p["profile"], p, tensor_parallel=tp)
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
