"""Command line for capacity planning: ``estimator plan``, its options those of the request layer's definitions.

Thin: parse, hand the values to `estimator.request.plan.plan_report` (the conversion the HTTP API shares), render
with `estimator.render.plan_table`. Heavy imports (numpy, matplotlib, openpyxl) happen inside the command, so
`estimate`'s cold start does not pay for them.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from estimator.cli.command import PanelledCommand, command_function
from estimator.cli.shared import print_table
from estimator.request.choices import OutputFormat
from estimator.request.convert import format_for
from estimator.request.estimate import catalog_for
from estimator.request.plan import plan_notes, plan_report

if TYPE_CHECKING:
    from estimator.planning.plan import PlanReport

app = typer.Typer()


def plan(p: dict[str, Any]) -> None:
    """Rank servers and layouts for a serving workload.

    \b
    Examples:
      estimator plan --model llama-3.1-70b --prompt-tokens 4096 --output-tokens 512 --concurrency 32
      estimator plan --model llama-3.1-8b --target-tokens-per-s 50000 --gpu l40s --gpu h100
      estimator plan --model qwen3-32b --max-ttft-s 1 --max-tpot-s 0.05 --concurrency 64 -f xlsx -o plan.xlsx
    """
    output_format = format_for(p["output_format"], p["output"], OutputFormat.table, list(OutputFormat))
    catalog = catalog_for(p["specs_dir"])
    report = plan_report(catalog, catalog.model(p["model"]), p)
    _show_plan(report, output_format, p["output"], p["plot"])
    if p["gpus"] is not None:  # once all went well: a refused input stays one line, with no warning before it
        sys.stderr.write(f"warning: plan --gpus is deprecated and will be removed: use --gpu {p['gpus']} (--gpus is "
                         "the tensor-parallel degree in estimate and sweep)\n")


plan_command = app.command("plan", cls=PanelledCommand)(command_function("plan", plan, plan.__doc__ or ""))


def _show_plan(report: PlanReport, output_format: OutputFormat, output: Path | None, plot: Path | None) -> None:
    """The chart (--plot), then the table or the chosen file format."""
    from estimator.render.formats import write_report
    from estimator.render.plan_table import plan_rows, render_plan

    if plot is not None:
        from estimator.render.plot import plan_chart

        plan_chart(report, plot)
    if output_format is OutputFormat.table:
        print_table(output, lambda out: render_plan(report, out))  # -o FILE: the file alone, nothing on stdout
    else:
        write_report(output_format.value, report, output, table=plan_rows(report), sheet="plan",
                     notes=plan_notes(report))
