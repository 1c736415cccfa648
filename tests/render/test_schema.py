"""The JSON Schemas: generated from the report models, shipped in docs/schema/, and true of real output.

``pytest --update-schema`` rewrites docs/schema/*.json from the models (then review the diff: a removed or renamed
field means a new major schema_version, see estimator/report.py).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from estimator.cli.schema import ReportName
from estimator.live.probe import FakeProbe, LiveGpu
from estimator.planning.sweep_row import SweepRow
from estimator.render.schema import REPORTS, json_schema
from estimator.report import SCHEMA_VERSION
from tests.cli.test_cli_gpu import MEASURED, h200, recorded_validate, snapshot, use_probe
from tests.conftest import CliResult
from tests.render.shipped import assert_shipped_schema

Cli = Callable[..., CliResult]
SHIPPED = Path(__file__).resolve().parents[2] / "docs" / "schema"


def shipped_text(name: str) -> str:
    return json.dumps(json_schema(name), indent=2, ensure_ascii=False) + "\n"


def check(name: str, document: Any) -> None:
    """``document`` is valid under the shipped schema ``name``; every error is listed when it is not."""
    schema = json.loads((SHIPPED / f"{name}.json").read_text(encoding="utf-8"))
    errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
              for e in Draft202012Validator(schema).iter_errors(document)]
    assert errors == []


def test_every_report_has_a_schema_and_a_command_name() -> None:
    assert [n.value for n in ReportName] == list(REPORTS)


@pytest.mark.parametrize("name", list(REPORTS))
def test_shipped_schema_is_the_generated_one(name: str, update_schema: bool) -> None:
    assert_shipped_schema(SHIPPED / f"{name}.json", shipped_text(name), update_schema)


@pytest.mark.parametrize("name", list(REPORTS))
def test_schema_command_prints_the_shipped_file(cli: Cli, name: str) -> None:
    result = cli("schema", name)
    assert result.exit_code == 0, result.stderr
    assert result.stdout == shipped_text(name)


@pytest.mark.parametrize("args", [
    ["--model", "llama-3.1-8b", "--gpu", "h100", "--batch", "8", "--output-tokens", "512"],
    ["--model", "70b", "--gpu", "a100"],  # size only: architecture, layers and KV are null
    ["--model", "deepseek-v3", "--gpu", "h200", "--dtype", "fp8", "--gpus", "8", "--prompt-tokens", "32k"],
    ["--model", "llama-3.1-70b", "--gpu", "rtx-4090"],  # does not fit: warnings
])
def test_estimate_output_follows_its_schema(cli: Cli, args: list[str]) -> None:
    result = cli("estimate", *args, "--format", "json")
    assert result.exit_code == 0, result.stderr
    check("estimate", json.loads(result.stdout))


@pytest.mark.parametrize("args", [
    ["--model", "llama-3.1-8b", "--gpu", "h100", "--zero", "3", "--dp", "8"],
    ["--model", "llama-3.1-70b", "--gpu", "h100", "--lora-rank", "16", "--qlora", "--recompute", "full"],
])
def test_train_output_follows_its_schema(cli: Cli, args: list[str]) -> None:
    result = cli("estimate", *args, "--mode", "train", "--format", "json")
    assert result.exit_code == 0, result.stderr
    check("train", json.loads(result.stdout))


def test_plan_output_follows_its_schema(cli: Cli) -> None:
    result = cli("plan", "--model", "llama-3.1-70b", "--concurrency", "32", "--max-tpot-s", "0.05",
                 "--gpu", "h100,a100,l4,rtx-4090", "--format", "json")
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert {o["feasible"] for o in data["options"]} == {True, False}  # both kinds of row are checked
    check("plan", data)


def test_sweep_output_follows_its_schema(cli: Cli) -> None:
    result = cli("sweep", "--model", "llama-3.1-8b,70b,gemma-2-9b", "--gpu", "h100,rtx-4090", "--batch", "1,64",
                 "--prompt-tokens", "1k,128k", "--format", "json")
    assert result.exit_code == 0, result.stderr
    rows = json.loads(result.stdout)
    assert len(rows) == 3 * 2 * 2 * 2  # models × cards × batches × prompts
    assert list(rows[0]) == [f.alias for f in SweepRow.model_fields.values()]  # the model names the row's keys
    assert {r["memory.fits"] for r in rows} == {True, False}
    check("sweep", rows)


def test_sweep_error_rows_follow_the_schema(cli: Cli) -> None:
    """A point the model cannot split (qwen2.5-7b's 28 heads at TP 8) is a row with its error."""
    result = cli("sweep", "--model", "qwen2.5-7b,llama-3.1-8b", "--gpu", "h100", "--gpus", "1,8", "--format", "json")
    assert result.exit_code == 0, result.stderr
    rows = json.loads(result.stdout)
    assert [r["error"] for r in rows] == [None, "tensor parallel 8 does not divide 28 attention heads", None, None]
    assert rows[1]["memory.total_bytes"] is None and rows[1]["workload.gpus"] == 8
    check("sweep", rows)
    schema = json.loads((SHIPPED / "sweep.json").read_text(encoding="utf-8"))
    wrong = {**rows[1], "memory.total_bytes": 1}  # an error row with a figure is neither kind of row
    assert not Draft202012Validator(schema).is_valid([wrong])


def test_validate_output_follows_its_schema(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    recorded_validate(monkeypatch)
    result = cli("validate", "--model", "llama-3.2-1b", "--format", "json")
    assert result.exit_code == 0, result.stderr
    check("validate", json.loads(result.stdout))


def test_gpu_output_follows_its_schema(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    odd = h200().model_copy(update={"index": 1, "name": "NVIDIA Quadro P400", "bus_width_bits": None,
                                    "unavailable": ("memory bus width: Not Supported",)})
    use_probe(monkeypatch, FakeProbe([snapshot(h200(), odd)]))
    result = cli("gpu", "--format", "json")
    assert result.exit_code == 0, result.stderr
    check("gpu", json.loads(result.stdout))


def test_recorded_h200_gpu_output_follows_its_schema() -> None:
    recorded = json.loads((MEASURED / "h200-2026-11-30-gpu.json").read_text())  # `estimator gpu` on a real H200
    # Recorded at schema 1.0; the gpu report's fields did not change in 2.0 (only notes, which it has none of,
    # changed type), so the recording must follow today's schema once its version is today's.
    assert recorded["schema_version"] == "1.0"
    check("gpu", {**recorded, "schema_version": SCHEMA_VERSION})


def test_a_wrong_document_fails_its_schema() -> None:
    gpu = LiveGpu.model_validate({k: v for k, v in json.loads((MEASURED / "h200-2026-11-30-gpu.json").read_text())
                                  ["gpus"][0].items() if k in LiveGpu.model_fields})
    good: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "driver_version": None, "cuda_driver_version": None,
                            "gpus": [{**gpu.model_dump(mode="json"), "catalog_match": None, "comparison": []}]}
    check("gpu", good)
    schema = json.loads((SHIPPED / "gpu.json").read_text(encoding="utf-8"))
    extra = {**good, "gpus": [{**good["gpus"][0], "memory_total_gb": 150.75}]}  # a field no model has
    assert not Draft202012Validator(schema).is_valid(extra)
    missing = {k: v for k, v in good.items() if k != "driver_version"}
    assert not Draft202012Validator(schema).is_valid(missing)
    assert not Draft202012Validator(schema).is_valid({**good, "gpus": [{**good["gpus"][0], "index": "0"}]})


def test_oom_output_follows_its_schema(cli: Cli) -> None:
    data = Path(__file__).resolve().parent.parent / "data" / "oom"
    result = cli("oom", "--from", str(data / "batch.message.txt"), "--from", str(data / "batch.snapshot.pickle"),
                 "--format", "json", "--model", "llama-3.2-1b", "--gpu", "h200", "--profile", "hf", "--batch", "1024")
    assert result.exit_code == 0, result.stderr
    check("oom", json.loads(result.stdout))
