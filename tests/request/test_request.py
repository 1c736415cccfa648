"""The request layer: one definition of every option drives the typer commands, the `estimate` script's parser and
the HTTP API's fields; strings are converted once at the door into typed requests; an error names the request
field it is about (the CLI and the HTTP API word and locate it); the Python API chooses hardware as the CLI does."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from typing import Any

import pydantic
import pytest

import estimator
from estimator.cli.command import click_command
from estimator.cli.estimate import estimate_command_function
from estimator.cli.plan import plan_command
from estimator.cli.sweep import sweep_command
from estimator.render.formats import write_json
from estimator.request.choices import Logits, Mode, OutputFormat, Precision
from estimator.request.convert import estimate_request_of
from estimator.request.errors import FieldInvalid
from estimator.request.estimate import estimate_for, estimate_request
from estimator.request.models import EstimateRequest, Hardware, Job
from estimator.request.options import COMMANDS, flag_of, options_of
from estimator.request.words import parse, parse_fields
from estimator.serve.fields import SERVER_ONLY, fields_of
from estimator.serve.openapi import parameters
from tests.conftest import CliResult

Cli = Callable[..., CliResult]
FUNCTIONS: dict[str, Callable[..., Any]] = {"estimate": estimate_command_function(), "plan": plan_command,
                                            "sweep": sweep_command}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_the_typer_command_s_options_are_the_definitions(command: str) -> None:
    built = click_command(command, FUNCTIONS[command])
    seen = [(p.name, p.opts[0] if p.opts else None, p.required, p.help, p.is_eager) for p in built.params]
    wanted = [(o.name, o.flags[0].split("/")[0], o.required, o.help, o.eager) for o in options_of(command)]
    assert seen == wanted
    for param, option in zip(built.params, options_of(command), strict=True):
        default = param.default if param.default is not None else None
        assert default == option.default, option.name
        if option.takes == "texts":
            assert param.multiple, option.name


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_the_http_fields_are_the_definitions_less_the_server_s_own(command: str) -> None:
    names = [o.name for o in options_of(command) if o.name not in SERVER_ONLY]
    assert list(fields_of(command)) == names
    documented = [p["name"] for p in parameters(command)]
    assert documented == [*names, "format"]
    described = {p["name"]: p for p in parameters(command)}
    for option in options_of(command):
        if option.name in names:
            field = described[option.name]
            assert field["x-topic"] == option.topic and field["required"] == option.required
            assert field["description"] == option.help or option.name == "model"  # model: never a path here


def test_the_script_s_parser_takes_every_option_of_estimate_by_every_flag() -> None:
    for option in options_of("estimate"):
        value = {"flag": None, "text": "8k", "int": "64", "path": "out.json"}.get(str(option.takes))
        if isinstance(option.takes, type):
            value = list(option.takes)[-1].value
        for flag in option.flags:
            words = ["--model", "m"] if option.name != "model" else []
            words += [flag] if value is None else [flag, value]
            parsed = parse("estimate", words)
            assert parsed is not None, words
            got = parsed[0][option.name]
            assert (got is True) if value is None else str(getattr(got, "value", got)) == value, words


def test_strings_are_converted_once_at_the_door() -> None:
    request = estimate_request_of({"model": "llama-3.1-8b", "gpu": "h100", "batch": "32Ki", "prompt_tokens": "8k",
                                   "output_tokens": "512", "gpus": "8", "gpu_memory": "96GiB", "nodes": "2",
                                   "logits": "all", "output_format": "json"})
    assert (request.job.batch, request.job.prompt_tokens, request.job.output_tokens) == (32 * 1024, 8000, 512)
    assert (request.hardware.gpus, request.hardware.nodes, request.hardware.gpu_memory) == (8, 2, 96 * 2**30)
    assert request.job.logits is Logits.all and request.output.format is OutputFormat.json
    assert request.job.mode is Mode.infer and request.job.training.given() == []
    with pytest.raises(pydantic.ValidationError):
        request.job.batch = 2  # type: ignore[misc]  # frozen: the typed request is what the library reads


def test_training_options_are_typed_in_train_mode() -> None:
    request = estimate_request_of({"model": "llama-3.1-8b", "gpu": "h100", "mode": "train", "zero": "3",
                                   "precision": "fp8", "lora_rank": "16", "lora_targets": "q_proj,v", "dp": "8"})
    t = request.job.training
    assert (t.zero, t.precision, t.lora_rank, t.lora_targets, t.dp) == (3, Precision.fp8, 16, ("q", "v"), 8)
    assert t.given() == ["precision", "zero", "dp", "lora_rank", "lora_targets"]


@pytest.mark.parametrize(("values", "field", "library", "cli"), [
    ({"batch": "0"}, "batch", "batch must be positive, got '0'", "--batch must be positive, got '0'"),
    ({"prompt_tokens": "x"}, "prompt_tokens", "prompt_tokens: not a count: 'x' (expected e.g. 2048, 32k, 70b, 7.5e9)",
     "--prompt-tokens: not a count: 'x' (expected e.g. 2048, 32k, 70b, 7.5e9)"),
    ({"output_format": "yaml"}, "output_format", "output_format 'yaml' is not one of 'table', 'json', 'csv', 'xlsx'",
     "--format 'yaml' is not one of 'table', 'json', 'csv', 'xlsx'"),
    ({"seq_len": "4096"}, "seq_len", "seq_len applies to mode train", "--seq-len applies to --mode train"),
    ({"mode": "train", "zero": "5"}, "zero", "zero must be 0, 1, 2 or 3, got '5'",
     "--zero must be 0, 1, 2 or 3, got '5'"),
])
def test_an_error_names_its_field_and_the_cli_words_it_with_the_flag(values: dict[str, str], field: str,
                                                                      library: str, cli: str) -> None:
    with pytest.raises(FieldInvalid) as caught:
        estimate_request_of({"model": "llama-3.1-8b", "gpu": "h100", **values})
    assert (caught.value.field, str(caught.value), caught.value.worded(flag_of)) == (field, library, cli)


def test_hardware_errors_name_their_field() -> None:
    cases: list[tuple[dict[str, str | None], str, str]] = [
             ({"gpu": None}, "gpu", "give gpu (a card) or system (a server, e.g. hgx-h100)"),
             ({"gpu": "a100", "system": "hgx-h100"}, "gpu",
              "gpu a100 is not the GPU of system hgx-h100 (NVIDIA H100 SXM5 80GB); give one"),
             ({"network": "8x400g-ib"}, "network", "network replaces a system's scale-out network; give system")]
    for values, field, message in cases:
        with pytest.raises(FieldInvalid) as caught:
            estimate_for(None, model="llama-3.1-8b", **{"gpu": "h100", **values})
        assert (caught.value.field, str(caught.value)) == (field, message)


def test_the_cli_prints_the_flag_and_the_http_api_locates_the_field(cli: Cli) -> None:
    printed = cli("estimate", "--model", "llama-3.1-8b", "--gpu", "a100", "--system", "hgx-h100")
    assert printed.stderr == ("error: --gpu a100 is not the GPU of --system hgx-h100 (NVIDIA H100 SXM5 80GB); give "
                              "one\n")
    pytest.importorskip("fastapi", reason="the HTTP API needs the [serve] extra")
    from fastapi.testclient import TestClient

    from estimator.serve.app import create_app

    answer = TestClient(create_app(estimator.default_catalog())).get(
        "/v1/estimate", params={"model": "llama-3.1-8b", "gpu": "a100", "system": "hgx-h100"})
    assert answer.status_code == 422
    assert answer.json()["detail"] == [{"loc": ["query", "gpu"], "msg": printed.stderr[len("error: "):-1],
                                        "type": "value_error"}]


def test_query_fields_are_read_by_the_same_definitions() -> None:
    values = parse_fields("estimate", [("model", "llama-3.1-8b"), ("prompt-tokens", "8k"), ("qlora", "yes"),
                                       ("precision", "fp8")])
    assert (values["prompt_tokens"], values["qlora"], values["precision"]) == ("8k", True, Precision.fp8)
    assert set(values) == set(COMMANDS["estimate"])


def _json(report: pydantic.BaseModel) -> Any:
    text = io.StringIO()
    write_json(report, text)
    return json.loads(text.getvalue())


def test_the_python_api_chooses_the_server_as_the_cli_does(cli: Cli) -> None:
    printed = cli("estimate", "--model", "llama-3.1-8b", "--gpu", "h100", "--gpus", "8", "--prompt-tokens", "8k",
                  "--format", "json")
    by_values = estimator.estimate_for(model="llama-3.1-8b", gpu="h100", gpus=8, prompt_tokens="8k")
    typed = estimator.estimate_request(EstimateRequest(job=Job(model="llama-3.1-8b", prompt_tokens=8000),
                                                       hardware=Hardware(gpu="h100", gpus=8)))
    assert _json(by_values) == _json(typed) == json.loads(printed.stdout)
    assert json.loads(printed.stdout)["gpu"]["system"] == "hgx-h100"  # a card alone on 8 GPUs sits in its server


def test_the_python_api_is_exported() -> None:
    assert {"estimate_request", "estimate_for", "EstimateRequest", "Hardware", "Job", "Output", "Training",
            "FieldInvalid"} <= set(estimator.__all__)
    assert estimator.estimate_request is estimate_request


def test_an_error_from_below_is_located_at_the_option_it_names(cli: Cli) -> None:
    """inference words its refusals with flags; the request layer hands them on in fields, and the CLI prints
    them exactly as before."""
    with pytest.raises(FieldInvalid) as caught:
        estimate_for(None, model="llama-3.1-8b", gpu="h100", ep="2")
    assert caught.value.field == "ep"
    assert str(caught.value) == "ep 2: llama-3.1-8b is not a mixture-of-experts model (no experts to deal out)"
    printed = cli("estimate", "--model", "llama-3.1-8b", "--gpu", "h100", "--ep", "2")
    assert printed.stderr == f"error: {caught.value.worded(flag_of)}\n"
    assert printed.stderr == "error: --ep 2: llama-3.1-8b is not a mixture-of-experts model (no experts to deal out)\n"
