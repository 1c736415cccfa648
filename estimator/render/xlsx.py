"""The XLSX writer: rows as a sheet a person can read in a spreadsheet.

Each column's unit is in its header and its cells carry a number format: bytes as GB (10⁹ B), seconds as ms,
rates as GB/s, TFLOP/s or tokens/s, dollars as $, watts as W, fractions as %. The header row is frozen and
filtered, columns are as wide as their header and first rows. The assumptions, which a sweep repeats on every
row, go once to an "assumptions" sheet; each row's cell names the entry (A1, A2, …) that holds its text.

Write-only mode (constant memory): a sweep may hold a million rows.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from itertools import chain, islice
from pathlib import Path
from typing import Any, NamedTuple

from estimator.errors import FieldInvalid, MissingDependency
from estimator.render.output import atomic_path

XLSX_MAX_ROWS = 1_048_576  # Excel's sheet limit, header included
ASSUMPTIONS = "assumptions"  # the column moved to a sheet of its own
_SAMPLE = 200  # rows measured for the column widths
_MAX_WIDTH = 60


class Unit(NamedTuple):
    unit: str
    scale: float
    number_format: str


# Report fields carry their unit in their name (bytes, s, w, usd…). First match wins: a rate before the quantity
# it divides (``bandwidth_bytes_per_s`` before ``_bytes``, ``tokens_per_s`` before ``_s``).
_UNITS: list[tuple[str, Unit]] = [
    ("bytes_per_s", Unit("GB/s", 1e-9, "#,##0.0")),
    ("flop_per_s", Unit("TFLOP/s", 1e-12, "#,##0.0")),
    ("tokens_per_s", Unit("tokens/s", 1, "#,##0.0")),
    ("per_token_bytes", Unit("B", 1, "#,##0")),
    ("_bytes", Unit("GB", 1e-9, "#,##0.00")),
    ("_s", Unit("ms", 1e3, "#,##0.00")),
    ("usd_per_hour", Unit("$/h", 1, '"$"#,##0.00')),
    ("usd_per_million_tokens", Unit("$/Mtoken", 1, '"$"#,##0.00')),
    ("usd", Unit("$", 1, '"$"#,##0')),
    ("_w", Unit("W", 1, "#,##0")),
    ("_fraction", Unit("%", 1, "0.0%")),
    ("flops", Unit("FLOP", 1, "0.00E+00")),
]


def unit_of(key: str) -> Unit | None:
    """The unit a column's key names (by its suffix, as the report's field names carry units), or None."""
    for marker, unit in _UNITS:
        if (key.endswith(marker) if marker.startswith("_") else marker in key):
            return unit
    return None


def header(key: str) -> str:
    """``memory.weights_bytes`` → ``memory.weights_bytes (GB)``: the key (the JSON field) and the unit its cells
    are in."""
    unit = unit_of(key)
    return key if unit is None else f"{key} ({unit.unit})"


def _value(unit: Unit | None, value: Any) -> Any:
    if unit is None or unit.scale == 1 or isinstance(value, bool) or not isinstance(value, int | float):
        return value
    return value * unit.scale


def _width(key: str, sample: list[Mapping[str, Any]], unit: Unit | None) -> float:
    cells = [len(header(key))] + [len(f"{_value(unit, r[key]):,.2f}" if isinstance(r[key], float) else str(r[key]))
                                  for r in sample if r[key] is not None]
    return min(max(cells) + 2, _MAX_WIDTH)


def _column_letter(index: int) -> str:
    from openpyxl.utils import get_column_letter

    return str(get_column_letter(index + 1))


def write_xlsx(keys: Sequence[str], rows: Iterable[Mapping[str, Any]], path: Path, *, sheet: str,
               notes: Sequence[str] = (), said: bool = True) -> None:
    """``rows`` as sheet ``sheet`` (module docstring), ``notes`` (a report's assumptions) and every distinct
    ``assumptions`` cell on the "assumptions" sheet; refuses more rows than Excel holds. ``said``: the write is
    said on stderr (a command's file; not the server's scratch file of a response)."""
    try:
        from openpyxl import Workbook
        from openpyxl.cell import WriteOnlyCell
    except ImportError:
        raise MissingDependency("xlsx output needs openpyxl: pip install 'llm-estimator[xlsx]'") from None
    book = Workbook(write_only=True)
    ws = book.create_sheet(sheet)
    units = [unit_of(k) for k in keys]
    stream: Iterator[Mapping[str, Any]] = iter(rows)
    sample = list(islice(stream, _SAMPLE))
    for i, key in enumerate(keys):
        ws.column_dimensions[_column_letter(i)].width = _width(key, sample, units[i])
    ws.freeze_panes = "A2"
    ws.append([header(k) for k in keys])
    entries: dict[str, str] = {text: f"A{n}" for n, text in enumerate(notes, 1)}
    count = 1
    for row in chain(sample, stream):
        count += 1
        if count > XLSX_MAX_ROWS:
            raise FieldInvalid("output_format", "more than {count} rows do not fit an Excel sheet; use "
                               "{output_format} csv", count=f"{XLSX_MAX_ROWS - 1:,}")
        cells: list[Any] = []
        for key, unit in zip(keys, units, strict=True):
            value = row[key]
            if key == ASSUMPTIONS and value:
                value = entries.setdefault(str(value), f"A{len(entries) + 1}")
            elif unit is not None and value is not None and not isinstance(value, bool | str):
                cell = WriteOnlyCell(ws, value=_value(unit, value))
                cell.number_format = unit.number_format
                value = cell
            cells.append(value)
        ws.append(cells)
    ws.auto_filter.ref = f"A1:{_column_letter(max(len(keys), 1) - 1)}{count}"
    _assumptions_sheet(book, entries)
    with atomic_path(path, "Excel workbook" if said else "", lambda: count - 1) as temporary:
        book.save(temporary)


def _assumptions_sheet(book: Any, entries: Mapping[str, str]) -> None:
    """Each assumption text once, under the name the rows' cells give it."""
    from openpyxl.cell import WriteOnlyCell
    from openpyxl.styles import Alignment

    notes = book.create_sheet(ASSUMPTIONS)
    notes.column_dimensions["A"].width = 6
    notes.column_dimensions["B"].width = 120
    notes.freeze_panes = "A2"
    notes.append(["entry", "assumptions (one row of the first sheet names its entry)"])
    for text, name in entries.items():
        cell = WriteOnlyCell(notes, value=text)
        cell.alignment = Alignment(wrap_text=True, vertical="top")
        notes.append([name, cell])
