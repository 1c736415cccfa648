"""Command line: the `estimator` app, its commands registered from one module per group, and `run`, which maps
every error to one line on stderr and an exit code.

Two entry points share one implementation: ``estimate ...`` is ``estimator estimate ...``.
"""

from __future__ import annotations

import sys
from typing import Any, NoReturn

import typer
from pydantic import ValidationError

from estimator.catalog.registry import validation_message
from estimator.cli import gpu as cli_gpu
from estimator.cli import plan as cli_plan
from estimator.cli.catalogs import gpus_app, models_app
from estimator.cli.estimate import estimate_command
from estimator.errors import EstimatorError

app = typer.Typer(
    help="Will this model fit on that GPU, how fast will it run? Estimates from datasheets and model configs.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
app.add_typer(gpus_app, name="gpus")
app.add_typer(models_app, name="models")
app.add_typer(cli_plan.app)  # plan and sweep
app.command("estimate")(estimate_command)
app.command("gpu")(cli_gpu.gpu_command)
app.command("monitor")(cli_gpu.monitor_command)
app.command("calibrate")(cli_gpu.calibrate_command)
app.command("validate")(cli_gpu.validate_command)


def _fail(message: str, code: int) -> NoReturn:
    sys.stderr.write(f"error: {message}\n")
    raise SystemExit(code)


def run(command: Any, args: list[str] | None = None) -> None:
    """Run a (typer) click command with every error reduced to one line on stderr and a non-zero exit."""
    try:
        code = command.main(args=args, standalone_mode=False)
    except EstimatorError as error:
        _fail(str(error), error.exit_code)
    except typer.Abort:
        _fail("aborted", 130)
    except ValidationError as error:
        _fail(validation_message(error), 2)
    except KeyboardInterrupt:
        _fail("interrupted", 130)
    except (OverflowError, ZeroDivisionError) as error:  # numbers beyond what the formulas can carry
        _fail(f"numbers out of range: {error}", 2)
    except Exception as error:
        # Usage errors (missing or unknown option, bad choice) are click exceptions; typer vendors click, so they
        # are recognised by their interface rather than their class.
        if hasattr(error, "format_message") and hasattr(error, "exit_code"):
            _fail(" ".join(str(error.format_message()).split()).replace("Value error, ", ""), int(error.exit_code) or 2)
        raise
    if isinstance(code, int) and code:
        raise SystemExit(code)


def main() -> None:
    """`estimator` console script."""
    run(typer.main.get_command(app))


def estimate_main() -> None:
    """`estimate` console script: the estimate command on its own. It gets a Typer app of its own, so a cold start
    does not build the other eight commands (about a third of `estimate`'s own run time)."""
    alone = typer.Typer(add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=None)
    alone.command()(estimate_command)
    run(typer.main.get_command(alone))


