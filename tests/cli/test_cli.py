"""The command line: acceptance commands, output formats, golden tables, and one-line errors."""

from __future__ import annotations

import csv
import io
import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from rich.console import Console

from estimator import estimate
from estimator.catalog.files import default_specs_dir
from estimator.catalog.registry import Catalog
from estimator.render.formats import render_table
from estimator.report import SCHEMA_VERSION
from tests.conftest import CliResult

Cli = Callable[..., CliResult]


def test_acceptance_generic_70b_table(cli: Cli) -> None:
    result = cli("--model", "70b", "--dtype", "fp16", "--gpu", "a100", entry="estimate")
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert "NVIDIA A100 SXM4 80GB" in out and "(from 'a100')" in out
    assert "140.0 GB" in out
    assert "does not fit" in out
    assert "68.7 ms" in out


def test_acceptance_generic_70b_json(cli: Cli) -> None:
    result = cli("estimate", "--model", "70b", "--dtype", "fp16", "--gpu", "a100", "--format", "json")
    data = json.loads(result.stdout)
    assert data["schema_version"] == SCHEMA_VERSION == "2.0"
    assert data["memory"]["weights_bytes"] == 140_000_000_000
    assert data["memory"]["gpus_required"] == 2
    assert data["time"]["decode_step_bound_s"] == pytest.approx(0.0687, abs=5e-5)
    assert data["memory"]["kv_cache_bytes"] is None


def test_acceptance_llama_8b_json(cli: Cli) -> None:
    result = cli("--model", "llama-3.1-8b", "--gpu", "h200", "--batch", "64", "--prompt-tokens", "2048",
                 "--output-tokens", "1", "--format", "json", entry="estimate")
    data = json.loads(result.stdout)
    assert data["memory"]["kv_cache_bytes"] == 64 * 2049 * 131_072
    assert data["memory"]["weights_bytes"] == 16_060_522_496


def test_json_contract_fields(cli: Cli) -> None:
    data = json.loads(cli("--model", "llama-3.2-1b", "--gpu", "l4", "--format", "json", entry="estimate").stdout)
    assert set(data) >= {"schema_version", "model", "gpu", "workload", "memory", "time", "assumptions", "warnings"}
    assert set(data["model"]) >= {"name", "params"}
    assert set(data["gpu"]) >= {"name", "memory_bytes", "bandwidth_bytes_per_s"}
    assert set(data["memory"]) >= {"weights_bytes", "kv_cache_bytes", "activation_bytes", "overhead_bytes",
                                   "total_bytes", "per_gpu_bytes", "gpus_required", "fits", "headroom_bytes"}
    assert set(data["time"]) >= {"prefill_s", "decode_step_s", "decode_step_bound_s", "tokens_per_s", "bound"}


def test_csv_is_one_header_and_one_row(cli: Cli) -> None:
    result = cli("--model", "qwen2.5-7b", "--gpu", "a10", "--format", "csv", entry="estimate")
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert len(rows) == 1
    assert rows[0]["memory.weights_bytes"] == str(7_615_616_512 * 2)
    assert "time.decode_step_s" in rows[0]


def test_config_json_model(cli: Cli, tmp_path: Path, catalog: Catalog) -> None:
    import yaml

    config = yaml.safe_load((default_specs_dir() / "models" / "llama-3.2-3b.yaml").read_text())["config"]
    (tmp_path / "config.json").write_text(json.dumps(config))
    result = cli("--model", str(tmp_path / "config.json"), "--gpu", "rtx-4090", "--dtype", "bf16",
                 "--format", "json", entry="estimate")
    assert json.loads(result.stdout)["model"]["params"] == 3_212_749_824


def test_gib_units(cli: Cli) -> None:
    out = cli("--model", "llama-3.1-8b", "--gpu", "h200", "--units", "gib", entry="estimate").stdout
    assert "GiB (2³⁰ B)" in out and "15.0 GiB" in out  # 16,060,522,496 B


def test_explain_shows_arithmetic(cli: Cli) -> None:
    out = cli("--model", "70b", "--dtype", "fp16", "--gpu", "a100", "--explain", entry="estimate").stdout
    assert "140.0 GB ÷ 2,039 GB/s = 68.7 ms per token" in out


def test_catalog_listings(cli: Cli) -> None:
    gpus = cli("gpus", "--all")
    assert gpus.exit_code == 0 and "GDDR6X" in gpus.stdout
    show = cli("gpus", "show", "rtx-4090")
    assert "384 bit / 8 × 21 Gbps = 1,008.0 GB/s" in show.stdout
    models = cli("models")
    assert "llama-3.1-70b" in models.stdout
    detail = cli("models", "show", "mixtral-8x7b")
    assert "46,702,792,704 total, 12,879,925,248 active" in detail.stdout


BAD_INPUTS = [
    (("--model", "llama-3.1-8x", "--gpu", "h100"), "unknown model 'llama-3.1-8x'; did you mean"),
    (("--model", "llama-3.1-8b", "--gpu", "h1000"), "unknown GPU 'h1000'; did you mean"),
    (("--model", "llama-3.1-8b", "--gpu", "h100", "--dtype", "int3"), "unknown dtype 'int3'"),
    (("--model", "llama-3.1-8b", "--gpu", "h100", "--batch", "0"), "--batch must be positive"),
    (("--model", "llama-3.1-8b", "--gpu", "h100", "--batch", "-4"), "not a count"),
    (("--model", "llama-3.1-8b", "--gpu", "h100", "--prompt-tokens", "nan"), "not a count"),
    (("--model", "llama-3.1-8b", "--gpu", "h100", "--prompt-tokens", "inf"), "not a count"),
    (("--model", "llama-3.1-8b", "--gpu", "h100", "--prompt-tokens", "1e12"), "--prompt-tokens must be at most"),
    (("--model", "llama-3.1-8b", "--gpu", "h100", "--gpus", "3"), "does not divide 32 attention heads"),
    (("--model", "-70b", "--gpu", "h100"), "unknown model"),
    (("--model", "0b", "--gpu", "h100"), "positive parameter count"),
    (("--model", "./missing/config.json", "--gpu", "h100"), "config file not found"),
    (("--model", "llama-3.1-8b", "--gpu", "h100", "--kv-dtype", "awq-int4"), "not a KV-cache format"),
    (("--model", "llama-3.1-8b", "--gpu", "h100", "--format", "xml"), "xml"),
    (("--model", "llama-3.1-8b", "--gpu", "h100", "--group-size", "64"), "--group-size applies"),
    (("--model", "llama-3.1-8b",), "--gpu"),
    (("--model", "llama-3.1-8b", "--gpu", "h100", "--bogus"), "--bogus"),
]


@pytest.mark.parametrize(("args", "message"), BAD_INPUTS, ids=[" ".join(a) for a, _ in BAD_INPUTS])
def test_bad_input_is_one_line(cli: Cli, args: tuple[str, ...], message: str) -> None:
    result = cli(*args, entry="estimate")
    assert result.exit_code != 0
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith("error: ")
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_malformed_config_json(cli: Cli, tmp_path: Path) -> None:
    bad = tmp_path / "config.json"
    bad.write_text("{ nope")
    result = cli("--model", str(bad), "--gpu", "h100", entry="estimate")
    assert result.exit_code != 0 and result.stderr.count("\n") == 1 and "malformed JSON" in result.stderr


def test_unsupported_model_type(cli: Cli, tmp_path: Path) -> None:
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps({"model_type": "baichuan"}))  # no family file, and no transformers class either
    result = cli("--model", str(cfg), "--gpu", "h100", entry="estimate")
    assert "unsupported model_type 'baichuan'; supported:" in result.stderr


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda text: text + "\n  - : [unclosed\n", "malformed YAML"),
        (lambda text: text.replace("bandwidth_gb_per_s: 1008", "bandwidth_gb_per_s: 2016"), "differs from the vendor"),
        (lambda text: text.replace("sources:", "old_sources:"), "sources"),
        (lambda text: text.replace("memory_gb: 24", "memory_gb: -24"), "memory_gb"),
        (lambda text: text.replace("memory_gb: 24", "memory_gb: .nan"), "memory_gb"),
    ],
)
def test_bad_spec_files(cli: Cli, tmp_path: Path, edit: Callable[[str], str], message: str) -> None:
    specs = tmp_path / "specs"
    shutil.copytree(default_specs_dir(), specs)
    path = specs / "gpus" / "nvidia-rtx-4090.yaml"
    path.write_text(edit(path.read_text()))
    result = cli("--model", "gpt2", "--gpu", "4090", "--specs-dir", str(specs), entry="estimate")
    assert result.exit_code != 0
    assert result.stderr.count("\n") == 1, result.stderr
    assert message in result.stderr and "nvidia-rtx-4090.yaml" in result.stderr


def test_duplicate_alias_is_rejected(cli: Cli, tmp_path: Path) -> None:
    specs = tmp_path / "specs"
    shutil.copytree(default_specs_dir(), specs)
    path = specs / "gpus" / "nvidia-rtx-3090.yaml"
    path.write_text(path.read_text().replace("aliases: [", "aliases: [rtx4090, "))
    result = cli("--model", "gpt2", "--gpu", "t4", "--specs-dir", str(specs), entry="estimate")
    assert "used twice" in result.stderr


@pytest.mark.parametrize(
    ("name", "model", "gpu", "fields"),
    [
        ("llama-3.1-8b-h200", "llama-3.1-8b", "h200", {"batch": 8, "prompt_tokens": 4096, "output_tokens": 512}),
        ("gemma-2-9b-h200", "gemma-2-9b", "h200", {"batch": 16, "prompt_tokens": 8192}),
        ("generic-70b-a100", "70b", "a100", {}),
    ],
)
@pytest.mark.parametrize("width", [80, 110, 200])  # 110: the original files (NAME.txt); else NAME-WIDTH.txt
def test_golden_tables(catalog: Catalog, make_workload: Callable[..., object], golden: Callable[[str, str], None],
                       name: str, model: str, gpu: str, fields: dict[str, int], width: int) -> None:
    report = estimate(catalog.model(model), catalog.gpus.get(gpu), make_workload(**fields),  # type: ignore[arg-type]
                      requested_gpu=gpu)
    buffer = io.StringIO()
    render_table(report, Console(file=buffer, width=width, color_system=None, force_terminal=False), explain=True)
    golden(name if width == 110 else f"{name}-{width}", buffer.getvalue())


def test_every_command_is_documented_in_the_readme() -> None:
    import typer

    from estimator.cli.main import app

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    group = typer.main.get_command(app)
    names = list(group.commands)  # type: ignore[attr-defined]
    assert len(names) >= 9
    for name in names:
        assert f"estimator {name}" in readme or (name == "estimate" and "estimate --model" in readme), name


@pytest.mark.parametrize(("command", "allowed"), [
    (["estimate", "-m", "llama-3.1-8b", "-g", "h100", "--format", "xlsx"], "table, json, csv"),
    (["estimate", "-m", "llama-3.1-8b", "-g", "h100", "--mode", "train", "--format", "xlsx"], "table, json, csv"),
])
def test_a_format_the_command_does_not_write_is_one_line(cli: Cli, command: list[str], allowed: str) -> None:
    result = cli(*command)
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr == f"error: --format xlsx is not available for this command; use {allowed}\n"


def test_estimate_on_a_system(cli: Callable[..., CliResult]) -> None:
    done = cli("estimate", "--model", "llama-3.1-70b", "--system", "hgx-h100", "--gpus", "8", "--format", "json")
    assert done.exit_code == 0, done.stderr
    report = json.loads(done.stdout)
    assert (report["gpu"]["name"], report["gpu"]["system"], report["gpu"]["nodes"]) == (
        "NVIDIA H100 SXM5 80GB", "hgx-h100", 1)
    codes = [a["code"] for a in report["assumptions"]]
    assert "system" in codes
    crossing = cli("estimate", "--model", "llama-3.1-70b", "--system", "hgx-h100", "--nodes", "2", "--gpus", "16",
                   "--format", "json")
    assert crossing.exit_code == 0, crossing.stderr
    assert "tp-crosses-domain" in [w["code"] for w in json.loads(crossing.stdout)["warnings"]]


def test_a_gpu_alone_says_which_server_it_assumed(cli: Callable[..., CliResult]) -> None:
    done = cli("estimate", "--model", "llama-3.1-70b", "--gpu", "h100", "--gpus", "8", "--format", "json")
    system = [a for a in json.loads(done.stdout)["assumptions"] if a["code"] == "system"]
    assert system[0]["values"]["system"] == "hgx-h100" and system[0]["values"]["assumed"] is True
    none = cli("estimate", "--model", "llama-3.1-70b", "--gpu", "v100", "--gpus", "8", "--format", "json")
    assert "no-system" in [a["code"] for a in json.loads(none.stdout)["assumptions"]]
    one = cli("estimate", "--model", "llama-3.1-8b", "--gpu", "h100", "--format", "json")  # one GPU: no server
    assert json.loads(one.stdout)["gpu"]["system"] is None


@pytest.mark.parametrize(("args", "message"), [
    (("--system", "hgx-h100", "--gpus", "16"), "tensor parallel 16 needs 16 GPUs; 1 × hgx-h100 has 8"),
    (("--system", "hgx-h100", "--gpu", "a100"), "is not the GPU of --system hgx-h100"),
    (("--gpu", "v100", "--nodes", "2"), "no system in specs/systems holds"),
    (("--system", "hgx-h100", "--gpus-per-node", "0"), "--gpus-per-node must be positive"),
    (("--system", "pcie-h200-nvl", "--gpus-per-node", "6"), "domain_gpus 4 must divide gpus_per_node 6"),
    (("--system", "nope",), "unknown system 'nope'"),
    ((), "give --gpu"),
    (("--system", "hgx-h100", "--mode", "train", "--tp", "16"), "16 GPUs do not fit on 1 × hgx-h100"),
    (("--gpu", "h100", "--mode", "train", "--nodes", "2"), "with --mode train need --system"),
])
def test_bad_system_options(cli: Callable[..., CliResult], args: tuple[str, ...], message: str) -> None:
    done = cli("estimate", "--model", "llama-3.1-70b", *args)
    assert done.exit_code != 0
    assert message in done.stderr and "Traceback" not in done.stderr


def _names_printed_as_text(tmp_path: Path, cli: Callable[..., CliResult], name: str) -> list[str]:
    """Each table command's stdout for a config.json whose ``_name_or_path`` is ``name``."""
    (tmp_path / "config.json").write_text(json.dumps(
        {"_name_or_path": name, "model_type": "llama", "hidden_size": 64, "intermediate_size": 128,
         "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 100}))
    printed = []
    for args in (("estimate", "--model", str(tmp_path), "--gpu", "h100"), ("models", "show", str(tmp_path)),
                 ("estimate", "--model", str(tmp_path), "--gpu", "h100", "--mode", "train"),
                 ("plan", "--model", str(tmp_path), "--concurrency", "8", "--gpus", "h100")):
        result = cli(*args)
        assert result.exit_code == 0, result.stderr
        printed.append(result.stdout)
    return printed


def test_rich_markup_in_a_config_name_is_printed_as_text(tmp_path: Path, cli: Callable[..., CliResult]) -> None:
    """Fuzz class 'markup injection': a name such as '[/bold]' raised MarkupError, and '[red]' restyled output."""
    assert all("[/bold][red]evil" in out for out in _names_printed_as_text(tmp_path, cli, "[/bold][red]evil"))


def test_emoji_codes_in_a_config_name_are_printed_as_text(tmp_path: Path, cli: Callable[..., CliResult]) -> None:
    """The markup-injection class for rich's emoji codes, which markup escaping leaves alone: 'my:fire:model'
    printed as 'my🔥model'. Every table is drawn on `estimator.cli.shared.console`, emoji codes off."""
    printed = _names_printed_as_text(tmp_path, cli, "my:fire:model")
    assert all("my:fire:model" in out and "\N{FIRE}" not in out for out in printed)


@pytest.mark.parametrize("args", [("--format", "z" * 300), ("--attention", "z" * 300), ("--" + "z" * 300, "1")])
def test_a_usage_error_echoes_a_long_value_at_most_80_characters(cli: Cli, args: tuple[str, str]) -> None:
    result = cli("estimate", "--model", "llama-3.1-8b", "--gpu", "h100", *args)
    assert result.exit_code == 2 and result.stderr.count("\n") == 1
    echoed = max(result.stderr.replace("'", " ").split(), key=len)
    assert echoed.endswith("z…") and len(echoed) == 80, result.stderr
    assert len(result.stderr) <= 400
