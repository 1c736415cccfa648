"""XLSX for plan and sweep, read back with openpyxl: units in the header, number formats, a frozen and
filtered header, widths from the content, assumptions once on their own sheet, per-card and total power."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from estimator.render.xlsx import header, unit_of
from tests.conftest import CliResult

openpyxl = pytest.importorskip("openpyxl")
Cli = Callable[..., CliResult]


def _sheet(path: Path, name: str) -> tuple[Any, dict[str, Any], list[str]]:
    book = openpyxl.load_workbook(path)
    assert book.sheetnames == [name, "assumptions"]
    ws = book[name]
    heads = [c.value for c in ws[1]]
    return book, dict(zip(heads, ws[2], strict=True)), heads


@pytest.mark.parametrize(("key", "expected"), [
    ("memory.weights_bytes", "memory.weights_bytes (GB)"), ("time.prefill_s", "time.prefill_s (ms)"),
    ("time.tokens_per_s", "time.tokens_per_s (tokens/s)"), ("gpu.bandwidth_bytes_per_s",
                                                             "gpu.bandwidth_bytes_per_s (GB/s)"),
    ("memory.kv_cache_per_token_bytes", "memory.kv_cache_per_token_bytes (B)"),
    ("owned_usd_per_hour", "owned_usd_per_hour ($/h)"), ("usd_per_million_tokens", "usd_per_million_tokens ($/Mtoken)"),
    ("power_per_card_w", "power_per_card_w (W)"), ("headroom_fraction", "headroom_fraction (%)"),
    ("time.prefill_bound", "time.prefill_bound"), ("model", "model"), ("workload.gpus", "workload.gpus"),
])
def test_headers_name_the_field_and_its_unit(key: str, expected: str) -> None:
    assert header(key) == expected


def test_plan_xlsx(cli: Cli, tmp_path: Path) -> None:
    out = tmp_path / "plan.xlsx"
    done = cli("plan", "--model", "llama-3.1-70b", "--dtype", "bf16", "--prompt-tokens", "4096", "--output-tokens",
               "512", "--concurrency", "32", "--gpus", "h100", "--format", "xlsx", "-o", str(out))
    assert done.exit_code == 0, done.stderr
    json_done = cli("plan", "--model", "llama-3.1-70b", "--dtype", "bf16", "--prompt-tokens", "4096",
                    "--output-tokens", "512", "--concurrency", "32", "--gpus", "h100", "--format", "json")
    import json

    option = json.loads(json_done.stdout)["options"][0]
    book, row, heads = _sheet(out, "plan")
    ws = book["plan"]
    assert ws.freeze_panes == "A2"
    assert ws.auto_filter.ref == f"A1:{ws.cell(1, len(heads)).column_letter}{ws.max_row}"
    mem = row["memory_per_gpu_bytes (GB)"]
    assert mem.value == option["memory_per_gpu_bytes"] * 1e-9 and mem.number_format == "#,##0.00"
    ttft = row["time_to_first_token_s (ms)"]
    assert ttft.value == option["time_to_first_token_s"] * 1e3 and ttft.number_format == "#,##0.00"
    cost = row["usd_per_million_tokens ($/Mtoken)"]
    stored = float(f"{option['usd_per_million_tokens']:.16g}")  # openpyxl writes a number with 16 digits ("%.16g")
    assert cost.value == stored and cost.number_format == '"$"#,##0.00'
    # per card and total: an HGX H100 option, 8 boards at the H100's 700 W, its server's whole draw beside
    assert row["power_per_card_w (W)"].value == 700
    assert row["power_w (W)"].value == 700 * option["cards"] == option["power_w"]
    assert row["server_power_w (W)"].value == option["server_power_w"]
    for i, key in enumerate(heads):
        width = ws.column_dimensions[ws.cell(1, i + 1).column_letter].width
        assert min(len(key) + 2, 60) <= width <= 60  # the header fits, no column wider than 60
    texts = [r[1] for r in book["assumptions"].iter_rows(min_row=2, values_only=True)]
    assert texts == [a["text"] for a in json.loads(json_done.stdout)["assumptions"]]


def test_sweep_xlsx_keeps_each_assumption_text_once(cli: Cli, tmp_path: Path) -> None:
    pytest.importorskip("numpy")
    out = tmp_path / "sweep.xlsx"
    done = cli("sweep", "--model", "llama-3.1-8b", "--gpu", "h100,a100", "--batch", "1,8,64", "--prompt-tokens",
               "1k,8k", "--format", "xlsx", "-o", str(out))
    assert done.exit_code == 0, done.stderr
    book, row, heads = _sheet(out, "sweep")
    ws = book["sweep"]
    assert ws.max_row == 1 + 2 * 3 * 2
    column = heads.index("assumptions") + 1
    names = [ws.cell(r, column).value for r in range(2, ws.max_row + 1)]
    entries = dict(book["assumptions"].iter_rows(min_row=2, values_only=True))
    assert set(names) == set(entries) == {"A1", "A2"}  # one text per card (its capacity differs), six rows each
    assert all(len(str(text)) > 100 for text in entries.values())
    assert row["gpu.tdp_w (W)"].value == 700 and row["gpu.power_w (W)"].value == 700  # one H100
    assert unit_of("memory.per_gpu_bytes") is not None and row["memory.per_gpu_bytes (GB)"].number_format == "#,##0.00"
