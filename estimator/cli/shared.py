"""What the commands share for the terminal, without typer: the output check, rich consoles, tables to a file.

The `estimate` console script's fast path imports this without typer (nor rich, nor the catalog: those load when
a table is drawn); `options.py` holds the typer option types of the commands not built from the request layer's
definitions.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console


def writable(path: Path | None, *, force: bool = False) -> Path | None:
    """What the output options' callback does: an output path is checked before the command does any work (and
    refused when it exists, unless ``force``)."""
    if path is not None:
        from estimator.render.output import check_target

        check_target(path, force=force)
    return path


def console(**options: Any) -> Console:
    """A rich console for tables (rich loads only here, so JSON and CSV start faster). Every command's tables are
    drawn on one of these: emoji codes are off, as markup is escaped, so a name such as ``my:fire:model`` (from a
    config.json, a spec, NVML) prints as written, not as an emoji."""
    from rich.console import Console

    return Console(emoji=False, **options)


FILE_TABLE_COLUMNS = 200  # a table written to a file (-o) has no terminal: laid out as plan lays out its file


def print_table(output: Path | None, draw: Callable[[Console], None]) -> None:
    """A table to the terminal, or (``-o FILE``) to ``output``, written atomically, without terminal colours."""
    if output is None:
        draw(console())
        return
    from estimator.render.output import write_text_atomically

    write_text_atomically(output, lambda handle: draw(console(file=handle, width=FILE_TABLE_COLUMNS,
                                                              color_system=None)), "table")
