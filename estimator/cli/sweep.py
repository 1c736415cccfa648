"""Command line for ``estimator sweep``: a grid of points, each evaluated as `estimate` would, one row apiece.

Its options are those of the request layer's definitions; `estimator.request.sweep` converts them into the grid
(the HTTP API shares it) and evaluates it; this module shows the progress and writes the rows.
"""

from __future__ import annotations

import sys
from typing import Any

import typer

from estimator.cli.command import PanelledCommand, command_function
from estimator.request.choices import OutputFormat
from estimator.request.convert import format_for
from estimator.request.estimate import catalog_for
from estimator.request.sweep import sweep_grid, sweep_result

app = typer.Typer()


def sweep(p: dict[str, Any]) -> None:
    """Evaluate a grid; one row per point with estimate's JSON fields flattened.

    \b
    Examples:
      estimator sweep --model llama-3.1-8b,llama-3.1-70b --gpu h100 --gpus 1,4 --batch 1,8,64 -o grid.csv
      estimator sweep --model qwen3-8b --gpu l4,rtx-4090 --dtype bf16,awq-int4 --prompt-tokens 1k,8k,32k
      estimator sweep --model llama-3.1-8b --gpu h100 --batch 1,16 --format json --plot sweep.png
    """
    from estimator.render.formats import write_report

    output = p["output"]
    output_format = format_for(p["output_format"], output, OutputFormat.csv, list(OutputFormat))
    catalog = catalog_for(p["specs_dir"])
    grid = sweep_grid(catalog, catalog.model, p)
    if p["progress"] and sys.stderr.isatty() and grid.total >= 100_000:
        from rich.progress import Progress

        with Progress(transient=True) as bar:
            task = bar.add_task("sweep", total=grid.total)
            result = sweep_result(grid, progress=lambda n: bar.advance(task, n))
    else:
        result = sweep_result(grid)
    if p["plot"] is not None:
        from estimator.render.plot import sweep_chart

        sweep_chart(result, p["plot"])
    chosen = "csv" if output_format is OutputFormat.table else output_format.value  # sweep has no table: CSV
    write_report(chosen, result.rows(), output, table=(result.keys, result), sheet="sweep")


sweep_command = app.command("sweep", cls=PanelledCommand)(command_function("sweep", sweep, sweep.__doc__ or ""))
