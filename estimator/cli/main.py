"""Command line: the `estimator` app, its commands registered from one module per group, and `run`, which maps
every error to one line on stderr and an exit code.

Two entry points share one implementation: ``estimate ...`` is ``estimator estimate ...``.
"""

from __future__ import annotations

import functools
from typing import Any

import typer

from estimator.cli import gpu as cli_gpu
from estimator.cli import oom as cli_oom
from estimator.cli import plan as cli_plan
from estimator.cli import sweep as cli_sweep
from estimator.cli.catalogs import gpus_app, models_app, systems_app
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
app.add_typer(gpus_app, name="gpus")
app.add_typer(models_app, name="models")
app.add_typer(systems_app, name="systems")
app.add_typer(cli_plan.app)  # plan
app.add_typer(cli_sweep.app)  # sweep
app.command("estimate")(estimate_command_function())
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
    """`estimator` console script."""
    run(command())
