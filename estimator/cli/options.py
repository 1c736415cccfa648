"""What every command shares: option types, the catalog to read, and parsing of counts and number formats.

Commands import from here and never from each other, so the CLI's modules form no circle. The typer option types
are defined here; everything else lives in `shared.py` (no typer, so the `estimate` console script's fast path
imports it without typer) and is re-exported here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from estimator.cli.shared import (
    FILE_TABLE_COLUMNS,
    KV_FORMATS_HINT,
    Logits,
    OutputFormat,
    Units,
    catalog_for,
    check_format,
    console,
    count_list,
    hardware,
    inference_workload,
    kv_format,
    number_format,
    positive,
    print_table,
    refuse,
    split_list,
    weights_format,
    writable,
)

__all__ = ["FILE_TABLE_COLUMNS", "KV_FORMATS_HINT", "ForceOption", "GroupSizeOption", "Logits", "LogitsOption",
           "OutputFormat", "OutputOption", "PlotOption", "SpecsDir", "Units", "UnitsOption", "catalog_for",
           "check_format", "console", "count_list", "hardware", "inference_workload", "kv_format", "number_format",
           "positive", "print_table", "refuse", "split_list", "weights_format"]

# Options that mean the same in every command that takes them (estimate, plan, sweep).
LogitsOption = Annotated[Logits, typer.Option(help="Compute logits for the last position only, or all positions.")]
GroupSizeOption = Annotated[int | None, typer.Option(help="Quantization group size for grouped formats (gptq-int4, "
                                                          "awq-int4, nf4, mxfp4, nvfp4).")]
UnitsOption = Annotated[Units, typer.Option(help="Table units: gb (10⁹ B) or gib (2³⁰ B).")]
SpecsDir = Annotated[Path | None, typer.Option("--specs-dir", help="Read specs from this folder instead of the "
                                                "packaged catalog (same layout as specs/).")]


def _writable(ctx: typer.Context, path: Path | None) -> Path | None:
    """Option callback: an output path is checked before the command does any work (``--force`` is eager, so it
    is parsed before every path wherever it stands on the line)."""
    return writable(path, force=bool(ctx.params.get("force")))


# Every command that writes a file takes it: an existing file is replaced only when asked (the fuzz campaign found
# every output overwritten without a word). Eager: read before the output options whose callbacks consult it.
ForceOption = Annotated[bool, typer.Option("--force", is_eager=True,
                                           help="Replace what exists: an -o or --plot file, calibrate's "
                                                "entry for this card, a --save file of validate.")]


PlotOption = Annotated[Path | None, typer.Option(
    "--plot", callback=_writable,
    help="Also draw charts to FILE.png or FILE.svg (needs matplotlib: pip install 'estimator[plot]').")]
OutputOption = Annotated[Path | None, typer.Option(
    "--output", "-o", callback=_writable, help="Write to this file instead of stdout (required for xlsx).")]
