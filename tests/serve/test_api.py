"""The HTTP API answers what the CLI prints: the same bytes for the same options, in JSON, CSV and XLSX."""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from estimator.render.xlsx import header as xlsx_header
from tests.conftest import CliResult

if TYPE_CHECKING:
    from fastapi.testclient import TestClient

CONFIGS = Path(__file__).resolve().parent.parent / "data" / "configs"
Cli = Callable[..., CliResult]


def _flags(fields: dict[str, str]) -> list[str]:
    return [a for k, v in fields.items() for a in (f"--{k.replace('_', '-')}", v)]


ESTIMATES = [
    {"model": "70b", "dtype": "fp16", "gpu": "a100"},  # a generic 70B in fp16 on an A100
    {"model": "llama-3.1-8b", "gpu": "h100", "batch": "8", "prompt_tokens": "8k", "output_tokens": "512"},
    {"model": "llama-3.1-70b", "gpu": "h100", "gpus": "4", "kv_dtype": "fp8", "dtype": "fp8"},
    {"model": "llama-3.1-70b", "system": "hgx-h100", "gpus": "8", "nodes": "2"},
    {"model": "llama-3.1-8b", "gpu": "h100", "mode": "train", "seq_len": "4096", "zero": "3", "dp": "8"},
]


@pytest.mark.parametrize("fields", ESTIMATES, ids=lambda f: "-".join(f.values()))
def test_estimate_is_the_cli_json_byte_for_byte(client: TestClient, cli: Cli, fields: dict[str, str]) -> None:
    printed = cli("estimate", *_flags(fields), "--format", "json")
    assert printed.exit_code == 0, printed.stderr
    answer = client.get("/v1/estimate", params=fields)
    assert answer.status_code == 200
    assert answer.headers["content-type"] == "application/json"
    assert answer.text == printed.stdout


def test_a_job_that_does_not_fit_answers_what_would(client: TestClient, cli: Cli) -> None:
    """The API's estimate ends with the changes that would make it fit, as the CLI's JSON does."""
    answer = client.get("/v1/estimate", params={"model": "llama-3.1-70b", "gpu": "h100"})
    assert answer.status_code == 200
    fixes = answer.json()["fixes"]
    assert fixes and fixes[0]["fits"] is True and fixes[0]["per_gpu_bytes"] > 0
    printed = json.loads(cli("estimate", "--model", "llama-3.1-70b", "--gpu", "h100", "--format", "json").stdout)
    assert fixes == printed["fixes"]


def test_train_is_estimate_mode_train(client: TestClient, cli: Cli) -> None:
    fields = {"model": "llama-3.1-8b", "gpu": "h100", "batch": "2", "lora_rank": "16", "qlora": "true"}
    printed = cli("estimate", "--model", "llama-3.1-8b", "--gpu", "h100", "--batch", "2", "--lora-rank", "16",
                  "--qlora", "--mode", "train", "--format", "json")
    answer = client.get("/v1/train", params=fields)
    assert answer.status_code == 200
    assert answer.text == printed.stdout
    assert json.loads(answer.text)["workload"]["mode"] == "train"


def test_csv_by_query_or_accept_header_is_the_cli_csv(client: TestClient, cli: Cli) -> None:
    fields = {"model": "llama-3.1-8b", "gpu": "l40s"}
    printed = cli("estimate", *_flags(fields), "--format", "csv").stdout
    by_query = client.get("/v1/estimate", params={**fields, "format": "csv"})
    by_header = client.get("/v1/estimate", params=fields, headers={"Accept": "text/csv"})
    assert by_query.text == by_header.text == printed
    assert by_query.headers["content-type"].startswith("text/csv")


PLAN = {"model": "llama-3.1-70b", "gpu": "h100,a100,l40s", "concurrency": "32", "prompt_tokens": "4096",
        "output_tokens": "512"}


def test_plan_json_and_csv_are_the_cli_s(client: TestClient, cli: Cli) -> None:
    for output_format in ("json", "csv"):
        printed = cli("plan", *_flags(PLAN), "--format", output_format)
        assert printed.exit_code == 0, printed.stderr
        answer = client.get("/v1/plan", params={**PLAN, "format": output_format})
        assert answer.status_code == 200
        assert answer.text == printed.stdout
    rows = list(csv.reader(io.StringIO(answer.text)))
    assert rows[0][:3] == ["model", "dtype", "kv_dtype"]  # the header row, then one row per option
    assert len(rows) == 1 + len(json.loads(client.get("/v1/plan", params=PLAN).text)["options"])


def test_plan_xlsx_is_the_cli_s_workbook(client: TestClient, cli: Cli, tmp_path: Path) -> None:
    """Every sheet and cell of `plan --format xlsx -o FILE` (the rows, the assumptions sheet)."""
    openpyxl = pytest.importorskip("openpyxl")
    written = tmp_path / "plan.xlsx"
    assert cli("plan", *_flags(PLAN), "--format", "xlsx", "-o", str(written)).exit_code == 0
    answer = client.get("/v1/plan", params={**PLAN, "format": "xlsx"})

    def cells(book: Any) -> dict[str, list[tuple[Any, ...]]]:
        return {name: list(book[name].iter_rows(values_only=True)) for name in book.sheetnames}

    served = cells(openpyxl.load_workbook(io.BytesIO(answer.content)))
    assert served == cells(openpyxl.load_workbook(written))
    assert set(served) >= {"plan", "assumptions"}


def test_an_xlsx_response_writes_no_line_on_the_server_s_stderr(client: TestClient,
                                                                 capfd: pytest.CaptureFixture[str]) -> None:
    """The workbook of a response is a scratch file: the server does not say it wrote it, as a command does."""
    pytest.importorskip("openpyxl")
    capfd.readouterr()
    assert client.get("/v1/plan", params={**PLAN, "format": "xlsx"}).status_code == 200
    assert capfd.readouterr().err == ""


def test_plan_xlsx_holds_the_csv_rows(client: TestClient) -> None:
    openpyxl = pytest.importorskip("openpyxl")
    answer = client.get("/v1/plan", params={**PLAN, "format": "xlsx"})
    assert answer.status_code == 200
    assert answer.headers["content-disposition"] == 'attachment; filename="plan.xlsx"'
    workbook = openpyxl.load_workbook(io.BytesIO(answer.content), read_only=True)
    header = [cell.value for cell in next(workbook["plan"].iter_rows())]
    workbook.close()
    csv_header = next(csv.reader(io.StringIO(client.get("/v1/plan", params={**PLAN, "format": "csv"}).text)))
    assert header == [xlsx_header(key) for key in csv_header]  # the same columns, each with its unit


SWEEP = {"model": "llama-3.1-8b,qwen2.5-7b", "gpu": "h100,a100", "batch": "1,8,64", "prompt_tokens": "1k,8k"}


def test_sweep_json_and_csv_are_the_cli_s(client: TestClient, cli: Cli) -> None:
    pytest.importorskip("numpy")
    for output_format in ("json", "csv"):
        printed = cli("sweep", *_flags(SWEEP), "--format", output_format)
        assert printed.exit_code == 0, printed.stderr
        answer = client.get("/v1/sweep", params={**SWEEP, "format": output_format})
        assert answer.status_code == 200
        assert answer.text == printed.stdout
    # 2 models x 2 cards x 3 batches x 2 prompts = 24 points, one row each after the header
    assert len(answer.text.splitlines()) == 1 + 24


def test_sweep_error_rows_are_the_cli_s(client: TestClient, cli: Cli) -> None:
    """A point the model cannot split (qwen2.5-7b at TP 8) is a row with its error in /v1/sweep too."""
    pytest.importorskip("numpy")
    fields = {"model": "qwen2.5-7b,llama-3.1-8b", "gpu": "h100", "gpus": "1,8"}
    printed = cli("sweep", *_flags(fields), "--format", "json")
    answer = client.get("/v1/sweep", params={**fields, "format": "json"})
    assert answer.status_code == 200 and printed.exit_code == 0
    assert answer.text == printed.stdout
    assert [r["error"] for r in answer.json()] == [None, "tensor parallel 8 does not divide 28 attention heads",
                                                   None, None]
    refused = client.get("/v1/sweep", params={"model": "qwen2.5-7b", "gpu": "h100", "gpus": "8"})
    assert refused.status_code == 422  # no point that can run: refused (WorkloadInvalid), as the CLI refuses it
    assert "tensor parallel 8 does not divide 28 attention heads" in refused.text


@pytest.mark.parametrize("kind", ["gpus", "models"])
def test_catalog_lists_are_the_cli_s(client: TestClient, cli: Cli, kind: str) -> None:
    for output_format in ("json", "csv"):
        answer = client.get(f"/v1/{kind}", params={"format": output_format})
        assert answer.text == cli(kind, "--format", output_format).stdout


def test_systems_and_formats_list_the_catalog(client: TestClient) -> None:
    from estimator.catalog.registry import default_catalog

    catalog = default_catalog()
    systems = json.loads(client.get("/v1/systems").text)
    assert sorted(s["name"] for s in systems) == sorted(s.name for s in catalog.systems)
    hgx = next(s for s in systems if s["name"] == "hgx-h100")
    assert (hgx["gpus_per_node"], hgx["gpu_name"]) == (8, catalog.system_gpu(catalog.systems.get("hgx-h100")).name)
    formats = json.loads(client.get("/v1/formats").text)
    assert {f["name"] for f in formats} == {f.name for f in catalog.formats}
    assert client.get("/v1/formats", params={"format": "csv"}).text.startswith("name,")


def _config(name: str) -> bytes:
    return (CONFIGS / name).read_bytes()


def test_a_config_json_body_reads_as_the_file_does(client: TestClient, cli: Cli) -> None:
    """The body goes through the reader of ``--model path/config.json``: every figure equal; only the name (the
    file's, or the upload's) and the source differ."""
    path = CONFIGS / "Qwen--Qwen3-0.6B.json"
    printed = json.loads(cli("estimate", "--model", str(path), "--gpu", "rtx-4090", "--format", "json").stdout)
    answer = client.post("/v1/estimate", params={"gpu": "rtx-4090"}, content=_config(path.name))
    assert answer.status_code == 200, answer.text
    sent = json.loads(answer.text)
    assert sent["model"]["name"] == "uploaded-config"
    assert {**sent["model"], "name": ""} == {**printed["model"], "name": ""}
    for section in ("memory", "time", "workload", "gpu", "warnings"):
        assert sent[section] == printed[section], section
    described = json.loads(client.post("/v1/models/config", content=_config(path.name)).text)
    assert described[0]["params"] == printed["model"]["params"]


def test_plan_takes_a_config_json_body(client: TestClient) -> None:
    answer = client.post("/v1/plan", params={"gpu": "h100", "concurrency": "4"},
                         content=_config("Qwen--Qwen3-0.6B.json"))
    assert answer.status_code == 200, answer.text
    assert json.loads(answer.text)["model"] == "uploaded-config"


def test_openapi_documents_each_field_with_the_cli_s_help(client: TestClient) -> None:
    schema = client.get("/openapi.json").json()
    assert {"/v1/estimate", "/v1/train", "/v1/plan", "/v1/sweep", "/v1/gpus", "/v1/systems", "/v1/models",
            "/v1/formats", "/v1/models/config"} <= set(schema["paths"])
    fields = {p["name"]: p for p in schema["paths"]["/v1/estimate"]["get"]["parameters"]}
    assert fields["precision"]["schema"]["enum"] == ["fp32", "amp-bf16", "amp-fp16", "bf16", "fp8"]
    assert fields["batch"]["schema"]["default"] == "1"
    assert "specs_dir" not in fields and "calibration" not in fields  # server paths are no fields
    assert "mode" not in {p["name"] for p in schema["paths"]["/v1/train"]["get"]["parameters"]}
    docs = client.get("/docs")
    assert docs.status_code == 200
    assert "cdn" not in docs.text.lower() and "https://" not in docs.text  # its script and style are served here
    scripts = re.findall(r'(?:src|href)="([^"]+\.(?:js|css))"', docs.text)
    assert len(scripts) == 2 and all(client.get(url).status_code == 200 for url in scripts)
