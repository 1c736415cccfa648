"""`estimator gpus` as a table, JSON and CSV, and `estimate --gpu-memory`."""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import TEST_CATALOG, CliResult

Cli = Callable[..., CliResult]


def test_gpus_json_lists_the_whole_catalog(cli: Cli) -> None:
    done = cli("gpus", "--format", "json")
    assert done.exit_code == 0, done.stderr
    cards = {c["name"]: c for c in json.loads(done.stdout)}
    assert len(cards) >= 60
    mac = cards["Apple M4 Max (40-core GPU, 128GB)"]
    assert (mac["usable_memory_bytes"], mac["capacity_source"], mac["unified_memory"]) == (
        103_079_215_104, "unified-share", True)  # 98,304 MiB × 2²⁰
    h100 = cards["NVIDIA H100 SXM5 80GB"]
    assert h100["usable_memory_bytes"] == 85_520_809_984  # nvidia-smi 81,559 MiB × 2²⁰
    assert h100["bandwidth_bytes_per_s"] == 3_350_000_000_000  # 3,350 GB/s × 10⁹
    assert "NVIDIA H100 80GB HBM3" in h100["aliases"]
    assert cards["Google TPU v5e"]["tdp_w"] is None  # Google publishes none


def test_gpus_csv_has_one_row_per_card_and_every_precision(cli: Cli) -> None:
    done = cli("gpus", "--format", "csv")
    assert done.exit_code == 0, done.stderr
    rows = list(csv.DictReader(io.StringIO(done.stdout)))
    assert len(rows) >= 60
    by_name = {r["name"]: r for r in rows}
    assert by_name["NVIDIA B200 180GB"]["dense_tflop_per_s.fp4"] == "9000.0"
    assert by_name["NVIDIA H100 SXM5 80GB"]["dense_tflop_per_s.fp4"] == ""  # Hopper has none: left empty
    assert by_name["AMD Instinct MI325X 256GB"]["usable_memory_bytes"] == "274877906944"  # 256 × 2³⁰


def test_gpus_table_shows_usable_gib_beside_the_marketed_gb(cli: Cli) -> None:
    done = cli("gpus", "--all", columns=200)
    assert done.exit_code == 0, done.stderr
    h100 = next(line for line in done.stdout.splitlines() if "NVIDIA H100 SXM5 80GB" in line)
    assert "79.6 GiB" in h100 and "80 GB" in h100  # 81,559 MiB ÷ 1,024
    mac = next(line for line in done.stdout.splitlines() if "Apple M4 Max" in line)
    assert "96.0 GiB†" in mac and "128 GB" in mac


def test_gpus_refuses_xlsx(cli: Cli) -> None:
    done = cli("gpus", "--format", "xlsx")
    assert done.exit_code != 0 and done.stdout == ""
    assert "--format xlsx is not available for this command" in done.stderr


def test_gpu_memory_overrides_the_capacity(cli: Cli) -> None:
    done = cli("estimate", "--model", "llama-3.1-8b", "--gpu", "m4-max", "--gpu-memory", "120GiB", "--format", "json")
    assert done.exit_code == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["memory"]["capacity_bytes"] == 128_849_018_880  # 120 × 2³⁰
    assert "capacity is --gpu-memory: 120.0 GiB per GPU" in [a["text"] for a in report["assumptions"]]


@pytest.mark.parametrize(("value", "message"), [
    ("120", "not a size: '120'"),
    ("0GB", "a size must be positive"),
    ("200GiB", "at most the 128 GB installed"),
])
def test_bad_gpu_memory_is_one_line(cli: Cli, value: str, message: str) -> None:
    done = cli("estimate", "--model", "llama-3.1-8b", "--gpu", "m4-max", "--gpu-memory", value)
    assert done.exit_code != 0 and done.stdout == ""
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_models_format_json_and_csv(cli: Cli) -> None:
    """`models` takes --format json and csv as `gpus` does, through the same writer."""
    from estimator.catalog.registry import default_catalog

    done = cli("models", "--format", "json")
    assert done.exit_code == 0, done.stderr
    rows = {r["name"]: r for r in json.loads(done.stdout)}
    assert set(rows) == {m.name for m in default_catalog().models}
    bert = rows["bert-base"]
    # 109,482,240: Hugging Face's count for bert-base-uncased (embeddings, 12 layers, pooler)
    assert (bert["params"], bert["num_layers"], bert["hidden_size"], bert["max_position_embeddings"]) == (
        109_482_240, 12, 768, 512)
    table = cli("models", "--format", "csv")
    assert table.exit_code == 0, table.stderr
    parsed = list(csv.DictReader(io.StringIO(table.stdout)))
    assert [r["name"] for r in parsed] == list(rows)
    assert parsed[0]["params"] == str(rows[parsed[0]["name"]]["params"])
    refused = cli("models", "--format", "xlsx")
    assert refused.exit_code != 0 and "table, json, csv" in refused.stderr


def test_systems_show_of_a_system_whose_gpu_is_unknown_is_one_error_and_nothing_on_stdout(cli: Cli,
                                                                                         tmp_path: Path) -> None:
    spec = (TEST_CATALOG / "systems" / "hgx-h100.yaml").read_text(encoding="utf-8")
    odd = re.sub(r"(?m)^(aliases|default_for_gpu):.*\n", "", spec)
    odd = re.sub(r"(?m)^name: .*$", "name: odd-box", re.sub(r"(?m)^gpu: .*$", "gpu: nosuchcard", odd))
    (tmp_path / "systems").mkdir()
    (tmp_path / "systems" / "odd-box.yaml").write_text(odd, encoding="utf-8")
    result = cli("systems", "show", "odd-box", "--specs-dir", str(tmp_path))
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.startswith("error: system odd-box: unknown GPU 'nosuchcard'")
    assert result.stderr.count("\n") == 1
    shown = cli("systems", "show", "hgx-h100")
    assert shown.exit_code == 0 and shown.stdout.splitlines()[1] == "  GPU: NVIDIA H100 SXM5 80GB × 8 per node"


def test_gpus_fits_one_screen_and_names_every_card(cli: Cli) -> None:
    """At 80 columns the default listing is one screen (30 lines at most) and still names every card by alias,
    under the memory it is sold with; --all is the full table."""
    done = cli("gpus", columns=80)
    assert done.exit_code == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) <= 30 and max(len(line) for line in lines) <= 80, done.stdout
    listed = set(done.stdout.split())
    rows = json.loads(cli("gpus", "--format", "json").stdout)
    assert all(row["aliases"][0] in listed for row in rows)
    eighty = next(line for line in lines if line.startswith("80 GB"))
    assert {"h100", "a100"} <= set(eighty.split())
    assert "--all" in lines[-1]
