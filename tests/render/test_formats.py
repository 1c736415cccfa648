"""The one JSON, CSV and XLSX writer every report goes through."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from estimator.catalog.registry import Catalog
from estimator.errors import FieldInvalid
from estimator.inference.estimate import estimate
from estimator.inference.workload import InferenceWorkload
from estimator.render.formats import report_rows, to_csv, write_json, write_report
from estimator.render.xlsx import header as xlsx_header
from estimator.request.options import flag_of

ROWS = [{"a": 1, "b": {"c": [1, 2]}}, {"a": 2, "b": None}]


@pytest.mark.parametrize("rows", [[], ROWS[:1], ROWS])
def test_rows_are_streamed_as_json_dumps_writes_them(rows: list[dict[str, object]]) -> None:
    buffer = io.StringIO()
    write_json(iter(rows), buffer)
    assert buffer.getvalue() == json.dumps(rows, indent=1) + "\n"  # what `sweep --format json` printed before


def test_csv_is_the_report_flattened(catalog: Catalog, make_workload: Callable[..., InferenceWorkload]) -> None:
    report = estimate(catalog.models.get("llama-3.1-8b"), catalog.gpus.get("h100"), make_workload())
    keys, rows = report_rows([report])
    header, _values = to_csv([report]).splitlines()
    assert header.split(",") == keys
    assert keys[:3] == ["schema_version", "model.name", "model.params"]
    assert rows[0]["memory.weights_bytes"] == 16_060_522_496  # 8,030,261,248 params × 2 B


def test_xlsx_needs_a_file(catalog: Catalog, make_workload: Callable[..., InferenceWorkload]) -> None:
    report = estimate(catalog.models.get("llama-3.1-8b"), catalog.gpus.get("h100"), make_workload())
    with pytest.raises(FieldInvalid, match=r"^output_format xlsx needs output FILE\.xlsx$") as caught:
        write_report("xlsx", report)
    assert caught.value.worded(flag_of) == "--format xlsx needs --output FILE.xlsx"  # as the command line says it


def test_one_report_to_a_file_in_every_format(catalog: Catalog, make_workload: Callable[..., InferenceWorkload],
                                              tmp_path: Path) -> None:
    report = estimate(catalog.models.get("llama-3.1-8b"), catalog.gpus.get("h100"), make_workload())
    write_report("json", report, tmp_path / "r.json")
    write_report("csv", report, tmp_path / "r.csv")
    write_report("xlsx", report, tmp_path / "r.xlsx")
    assert json.loads((tmp_path / "r.json").read_text()) == report.model_dump(mode="json")
    assert (tmp_path / "r.csv").read_text() == to_csv([report])
    from openpyxl import load_workbook

    sheet = load_workbook(tmp_path / "r.xlsx").active
    assert sheet is not None
    header, values = list(sheet.values)
    assert list(header) == [xlsx_header(k) for k in report_rows([report])[0]]
    assert dict(zip(header, values, strict=True))["memory.weights_bytes (GB)"] == 16_060_522_496 * 1e-9
