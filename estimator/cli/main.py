"""Command line: the `estimator` app, its commands registered from one module per group, and `run`, which maps
every error to one line on stderr and an exit code.

Two entry points share one implementation: ``estimate ...`` is ``estimator estimate ...``.
"""

from __future__ import annotations

import functools
import sys
from typing import Annotated, Any

import typer

from estimator.cli import gpu as cli_gpu
from estimator.cli import oom as cli_oom
from estimator.cli import plan as cli_plan
from estimator.cli import sweep as cli_sweep
from estimator.cli.catalogs import gpus_app, models_app, systems_app
from estimator.cli.command import PanelledCommand
from estimator.cli.estimate import estimate_command_function
from estimator.cli.run import run
from estimator.cli.schema import schema_command

app = typer.Typer(
    help="Will this model fit on that GPU, how fast will it run? Estimates from datasheets and model configs.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
USAGE = """usage: estimator COMMAND [OPTIONS]

  estimate   memory and speed of a model on a GPU, e.g.
             estimator estimate --model llama-3.1-8b --gpu h100
  plan       rank servers and layouts for a serving workload
  sweep      a grid of models, cards and sizes, one row per point
  oom        explain an out-of-memory error
  gpus, models, systems   the catalogs
  serve      the web page and HTTP API

estimator COMMAND --help: its options. estimator --help: every command.
"""


def _print_version(value: bool) -> None:
    from estimator.cli.version import package_version

    if value:
        sys.stdout.write(f"estimator {package_version()}\n")
        raise typer.Exit


@app.callback()
def _root(version: Annotated[bool, typer.Option("--version", callback=_print_version, is_eager=True,
                                                help="Print the version and exit.")] = False) -> None:
    """Will this model fit on that GPU, how fast will it run? Estimates from datasheets and model configs."""


app.add_typer(gpus_app, name="gpus")
app.add_typer(models_app, name="models")
app.add_typer(systems_app, name="systems")
app.add_typer(cli_plan.app)  # plan
app.add_typer(cli_sweep.app)  # sweep
app.command("estimate", cls=PanelledCommand)(estimate_command_function())
app.command("gpu")(cli_gpu.gpu_command)
app.command("monitor")(cli_gpu.monitor_command)
app.command("calibrate")(cli_gpu.calibrate_command)
app.command("validate")(cli_gpu.validate_command)
app.command("schema")(schema_command)
app.command("oom", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})(
    cli_oom.oom_command)


@functools.cache
def command() -> Any:
    """The app as a click command, built once per process. typer builds it from every command's annotated
    signature (37 signatures, each through typing.get_type_hints): about 60 % of a command's CPU time when one
    process runs many command lines (the fuzz campaign, the tests), and click keeps no state of a run on it."""
    return typer.main.get_command(app)


def main() -> None:
    """`estimator` console script; bare, it prints a short usage (`USAGE`), not the whole help, and exits 0, as
    ``--help`` does (nothing went wrong: the user asked what there is)."""
    if not sys.argv[1:]:
        sys.stdout.write(USAGE)
        return
    run(command())
