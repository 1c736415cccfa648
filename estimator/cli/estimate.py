"""The `estimate` command: its words parsed by the request layer's option definitions, the request built and run
by the library (`estimator.request`), the report rendered, errors worded with the CLI's flags (`run.guarded`).

The `estimate` console script (`estimate_main`) parses a plain command line itself, by the same definitions,
without importing typer (about a quarter of a cold start); anything else (``--help``, a usage error, a shell's
completion) goes to the typer command built from them (`estimate_command`), so help, usage errors and their exit
codes are typer's.
"""

from __future__ import annotations

import atexit
import gc
import os
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from estimator.cli.process import as_typer_invokes, signals_end_like_interrupts, without_pydantic_plugins
from estimator.cli.shared import print_table, writable
from estimator.request.choices import Mode, OutputFormat, Units
from estimator.request.options import options_of
from estimator.request.words import parse

if TYPE_CHECKING:
    from estimator.inference.report import Report
    from estimator.request.models import Output
    from estimator.training.report import TrainingReport

DOC = """Estimate memory and speed of a model on a GPU, or a tensor-parallel group of them.

    \b
    Examples:
      estimator estimate --model llama-3.1-8b --gpu h100 --batch 8 --prompt-tokens 8k --output-tokens 512
      estimator estimate --model 70b --dtype fp16 --gpu a100 --gpus 2 --explain
      estimator estimate --model llama-3.2-1b --gpu rtx-4090 --mode train --batch 4 --format json -o train.json
    """


def run_estimate(values: dict[str, Any]) -> None:
    """The estimate command for its option values (field → value as parsed): estimate, then print or write.
    The request layer's models load here, inside the script's settings (`process.without_pydantic_plugins`)."""
    from estimator.request.convert import estimate_request_of
    from estimator.request.estimate import estimate_request

    request = estimate_request_of(values)  # the format checked first, before any work (`convert.format_for`)
    show(estimate_request(request), request.output)


def show(report: Report | TrainingReport, out: Output) -> None:
    """The report as a table (terminal or file), JSON or CSV, and the chart when asked."""
    from estimator.inference.report import Report
    from estimator.render.formats import write_report

    binary = out.units is Units.gib
    if not isinstance(report, Report):
        from estimator.render.training_table import render_training_table

        if out.format is OutputFormat.table:
            print_table(out.output, lambda o: render_training_table(report, o, binary=binary, explain=out.explain))
        else:
            write_report(out.format.value, report, out.output)
        return
    if out.plot is not None:
        from estimator.render.plot import estimate_chart  # matplotlib loads only when asked

        estimate_chart(report, out.plot)
    if out.format is OutputFormat.table:
        from estimator.render.formats import render_table

        print_table(out.output, lambda o: render_table(report, o, binary=binary, explain=out.explain))
    else:
        write_report(out.format.value, report, out.output)


def estimate_command_function() -> Callable[..., None]:
    """The typer function of `estimate`, built from the option definitions."""
    from estimator.cli.command import command_function

    return command_function("estimate", run_estimate, DOC)


def estimate_params(args: Sequence[str]) -> dict[str, Any]:
    """``estimate ARGS`` parsed by the typer command built from the option definitions: field → value."""
    from estimator.cli.command import parsed

    return parsed("estimate", estimate_command_function(), args)


def report_for_params(values: dict[str, Any]) -> Report | TrainingReport:
    """The Report (or, with ``mode`` train, the TrainingReport) that `estimate` prints for these option values."""
    from estimator.request.convert import estimate_request_of
    from estimator.request.estimate import estimate_request

    return estimate_request(estimate_request_of(values))


def report_for_args(args: Sequence[str]) -> Report:
    """The inference Report that ``estimate ARGS`` would print (`monitor --expect`)."""
    from estimator.errors import WorkloadInvalid
    from estimator.inference.report import Report
    from estimator.request.convert import choice

    p = estimate_params(args)
    if choice("mode", Mode, p["mode"]) is not Mode.infer:
        raise WorkloadInvalid("--expect takes inference options of estimate, not --mode train")
    report = report_for_params(p)
    assert isinstance(report, Report)
    return report


def estimate_main() -> None:
    """`estimate` console script: the estimate command on its own, parsed here when the line is plain (no typer
    imported), by typer otherwise.

    The cyclic garbage collector is paused while it runs (and resumed after, for a caller in the same process):
    importing pydantic and building the models allocates enough to trigger some 60 collections that find almost
    nothing, about 7 % of a short process's time. When the process exits, the objects it holds are frozen
    (`gc.freeze`, registered with atexit, so it happens at exit only, after the exit handlers registered later,
    such as the built-spec cache's save): the interpreter's last collections then skip the ~300,000 objects of
    pydantic's and the estimator's classes and schemas, which the operating system frees with the process, instead
    of walking them all (about 6 % of a cold `estimate --format json`, docs/performance.md). pydantic's plugin
    search is off while it runs (`process.without_pydantic_plugins`). SIGTERM and SIGHUP end it like Ctrl-C
    (`process.signals_end_like_interrupts`).
    """
    atexit.unregister(gc.freeze)  # once, however often a caller in the same process runs the script
    atexit.register(gc.freeze)
    collecting = gc.isenabled()
    gc.disable()
    try:
        with signals_end_like_interrupts(), without_pydantic_plugins():
            _main(sys.argv[1:])
    finally:
        if collecting:
            gc.enable()


def typer_main() -> None:
    """The estimate command on its own, parsed by typer: what the script falls back to for what it does not parse
    itself (--help, a usage error, a shell's completion)."""
    from estimator.cli.command import click_command
    from estimator.cli.run import run

    run(click_command("estimate", estimate_command_function(), pretty_exceptions_enable=False,
                      rich_markup_mode=None))


def _main(args: list[str]) -> None:
    from estimator.cli.run import guarded

    if args == ["--version"]:  # as `estimator --version`
        from estimator.cli.version import package_version

        sys.stdout.write(f"estimator {package_version()}\n")
        return
    parsed = None if completing() else parse("estimate", args)
    if parsed is None:
        typer_main()
        return
    values, order = parsed
    guarded(lambda: as_typer_invokes(lambda: run_estimate(checked(values, order))))


def checked(values: dict[str, Any], order: list[str]) -> dict[str, Any]:
    """``values`` after the output options' checks, run as typer runs their callbacks while parsing: the eager
    ``--force`` first, then the given options in command-line order."""
    outputs = {o.name for o in options_of("estimate") if o.checked}
    for name in order:
        if name in outputs:
            writable(values[name], force=values["force"])
    return values


def completing() -> bool:
    """Whether a shell asks for completions (typer answers ``_ESTIMATE_COMPLETE=…``; any such variable counts)."""
    return any(name.startswith("_") and name.endswith("_COMPLETE") and value for name, value in os.environ.items())
