"""Tables that fit the terminal: every name and figure whole, never cut with an ellipsis.

A table is printed as one when its columns fit the console at their natural width. Otherwise text columns (names,
reasons: ``wrap=True``) break between words, down to their longest word; and if that is still too wide the
columns are printed as several tables of consecutive columns (text then up to a quarter of the width wide), each
repeating the first ``key`` columns (the row's name), as pandas prints a frame wider than the terminal; the
caption follows the last as a line of text. A figure never breaks and never loses a digit.

Widths are counted as rich draws its default box: each column is its content plus one cell of padding either
side plus one rule, and the table one more rule at its left edge.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from rich.cells import cell_len
from rich.text import Text

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

Justify = Literal["left", "right", "center"]
_EDGE = 1  # the left rule of the box
_PER_COLUMN = 3  # one cell of padding either side and the rule after it


@dataclass(frozen=True)
class Column:
    header: str
    justify: Justify = "left"
    wrap: bool = False  # text that may break between words; figures (the default) never break


def _lines(cell: str) -> list[str]:
    return Text.from_markup(cell).plain.split("\n")


def _natural(header: str, cells: Sequence[str]) -> int:
    return max([cell_len(header), *(cell_len(line) for cell in cells for line in _lines(cell))])


def _narrowest(header: str, cells: Sequence[str]) -> int:
    words = [w for text in (header, *cells) for line in _lines(text) for w in line.split()]
    return max([1, *(cell_len(w) for w in words)])


def _groups(key: list[int], rest: list[int], need: list[int], width: int) -> list[list[int]]:
    """Consecutive columns after the key ones, as many to a table as fit ``width`` (at least one)."""
    base = _EDGE + sum(need[i] + _PER_COLUMN for i in key)
    groups: list[list[int]] = []
    used = width  # forces a first group
    for i in rest:
        cost = need[i] + _PER_COLUMN
        if used + cost > width:
            groups.append([])
            used = base
        groups[-1].append(i)
        used += cost
    return [key + g for g in groups] or [key]


def _widths(group: list[int], need: list[int], natural: list[int], wrap: list[bool], width: int) -> list[int]:
    """Each column's width in ``group``: figures at their natural width; the room left shared among the text
    columns, none past its natural width."""
    widths = [need[i] for i in group]
    room = width - _EDGE - sum(w + _PER_COLUMN for w in widths)
    growing = [k for k, i in enumerate(group) if wrap[i]]
    while room > 0 and growing:
        growing = [k for k in growing if widths[k] < natural[group[k]]]
        for k in growing[:room]:
            widths[k] += 1
            room -= 1
    return widths


def print_table(console: Console, columns: Sequence[Column], rows: Sequence[Sequence[str]], *, key: int = 1,
                **table: Any) -> None:
    """Print ``rows`` (rich markup) under ``columns`` in one table if it fits the console, else as described in the
    module docstring. ``table`` goes to every rich ``Table`` (``title`` to the first only)."""
    for part in fitted(console.width, columns, rows, key=key, **table):
        if isinstance(part, str):
            console.print(part, highlight=False)
        else:
            console.print(part)


def fitted(width: int, columns: Sequence[Column], rows: Sequence[Sequence[str]], *, key: int = 1,
           **table: Any) -> list[Table | str]:
    """What `print_table` prints for a console ``width`` wide: the tables, then the caption as text when the columns
    were split (a live view, `estimator monitor`, shows them as one group)."""
    from rich.table import Table

    n = len(columns)
    cells = [[row[i] for row in rows] for i in range(n)]
    natural = [_natural(c.header, cells[i]) for i, c in enumerate(columns)]
    if _EDGE + sum(w + _PER_COLUMN for w in natural) <= width:
        whole = Table(**table)
        for c in columns:
            whole.add_column(c.header, justify=c.justify)
        for row in rows:
            whole.add_row(*row)
        return [whole]
    wrap = [c.wrap for c in columns]
    narrow = [_narrowest(c.header, cells[i]) if c.wrap else natural[i] for i, c in enumerate(columns)]
    if _EDGE + sum(w + _PER_COLUMN for w in narrow) <= width:  # one table, its text broken between words
        need, groups = narrow, [list(range(n))]
    else:  # tables of fewer columns, their text at a quarter of the width where it is longer
        need = [min(natural[i], max(narrow[i], width // 4)) if wrap[i] else natural[i] for i in range(n)]
        groups = _groups(list(range(min(key, n))), list(range(min(key, n), n)), need, width)
    title, caption = table.pop("title", None), table.pop("caption", None)
    parts: list[Table | str] = []
    for number, group in enumerate(groups):
        part: Table = Table(**table, title=title if number == 0 else None)
        for i, w in zip(group, _widths(group, need, natural, wrap, width), strict=True):
            c = columns[i]
            part.add_column(c.header, justify=c.justify, width=w, no_wrap=not c.wrap, overflow="fold")
        for row in rows:
            part.add_row(*(row[i] for i in group))
        parts.append(part)
    return [*parts, caption] if caption else parts
