"""The `schema` command: the JSON Schema of a report, generated from its model (docs/schema/ ships the same)."""

from __future__ import annotations

import json
import sys
from enum import Enum
from typing import Annotated

import typer


class ReportName(str, Enum):
    """The reports with a schema; their keys in `estimator.render.schema.REPORTS`."""

    estimate = "estimate"
    train = "train"
    plan = "plan"
    sweep = "sweep"
    validate = "validate"
    gpu = "gpu"
    oom = "oom"


def schema_command(
    report: Annotated[ReportName, typer.Argument(help="estimate, train, plan, sweep, validate, gpu or oom.")],
) -> None:
    """Print the JSON Schema of a command's --format json output.

    \b
    Examples:
      estimator schema estimate
      estimator schema plan > plan.schema.json
    """
    from estimator.render.schema import json_schema

    sys.stdout.write(json.dumps(json_schema(report.value), indent=2, ensure_ascii=False) + "\n")
