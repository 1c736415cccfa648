"""Reports → the bytes of a response: JSON, CSV or XLSX, through the render layer's one writer of each."""

from __future__ import annotations

import io
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from estimator.errors import WorkloadInvalid
from estimator.render.formats import table_of, write_csv, write_json
from estimator.render.xlsx import write_xlsx

FORMATS = ("json", "csv", "xlsx")
MEDIA_TYPES = {"json": "application/json", "csv": "text/csv; charset=utf-8",
               "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"}
Table = tuple[Sequence[str], Iterable[Mapping[str, Any]]]


def chosen_format(query_format: str | None, accept: str | None) -> str:
    """``?format=`` when given, else the Accept header's CSV or XLSX, else JSON."""
    if query_format is not None:
        if query_format not in FORMATS:
            raise WorkloadInvalid(f"--format {query_format!r} is not available here; use {', '.join(FORMATS)}")
        return query_format
    accepted = (accept or "").lower()
    for name in ("csv", "xlsx"):
        if MEDIA_TYPES[name].split(";")[0] in accepted:
            return name
    return "json"


def document_bytes(output_format: str, document: BaseModel | Iterable[Mapping[str, Any]], *,
                   table: Table | None = None, sheet: str = "report", notes: Sequence[str] = ()) -> bytes:
    """What ``--format FORMAT`` writes for ``document`` (``table``: its rows for CSV and XLSX, as `write_report`
    takes them; left out, the report flattened is one row; ``notes``: the XLSX's assumptions sheet)."""
    if output_format == "json":
        text = io.StringIO()
        write_json(document, text)
        return text.getvalue().encode()
    keys, rows = table_of(document, table)
    if output_format == "csv":
        text = io.StringIO()
        write_csv(keys, rows, text)
        return text.getvalue().encode()
    with tempfile.TemporaryDirectory(prefix="estimator-serve-") as folder:
        path = Path(folder) / "report.xlsx"
        write_xlsx(keys, rows, path, sheet=sheet, notes=notes, said=False)  # a response: no line on the server's stderr
        return path.read_bytes()
