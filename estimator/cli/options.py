"""Typer option types of the commands whose signatures are written out (catalog listings, the live GPU, oom):
each an option of the request layer's definitions where one means the same, so its flags and help are said once.
estimate, plan and sweep are built whole from the definitions (`estimator.cli.command`)."""

from __future__ import annotations

from estimator.cli.command import annotation
from estimator.cli.shared import FILE_TABLE_COLUMNS, console, print_table
from estimator.request.choices import Logits, OutputFormat, Units
from estimator.request.convert import check_format, count
from estimator.request.estimate import catalog_for
from estimator.request.options import OPTIONS

__all__ = ["FILE_TABLE_COLUMNS", "ForceOption", "Logits", "OutputFormat", "OutputOption", "SpecsDir",
           "Units", "catalog_for", "check_format", "console", "count", "print_table"]

SpecsDir = annotation(OPTIONS["specs_dir"])
ForceOption = annotation(OPTIONS["force"])
OutputOption = annotation(OPTIONS["output"])

