"""Golden tables of `estimate --mode train`, `plan`, `validate`, `gpus` and `models`, each at 80 and 200 columns
(`estimate`'s own: tests/cli/test_cli.py); and no table of any command cut with an ellipsis at 80 columns.

The tables are what a user reads; a change to any of them shows up here as a diff of the file in tests/data/golden
(rewrite them with ``pytest --update-golden`` when the change is meant, and review the diff).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from estimator.catalog import registry
from estimator.live import measure
from tests.conftest import DATA, TEST_CATALOG, CliResult

Cli = Callable[..., CliResult]
WIDTHS = [80, 200]

# README commands: training (its first and third examples) and plan (its first example, over four cards so the
# table stays short).
TRAIN = {
    "train-llama-3.1-8b-h100": ["--model", "llama-3.1-8b", "--mode", "train", "--precision", "amp-bf16",
                                "--optimizer", "adamw", "--batch", "4", "--seq-len", "4096", "--gpu", "h100",
                                "--explain"],
    "train-qlora-llama-3.1-8b-rtx-4090": ["--model", "llama-3.1-8b", "--mode", "train", "--lora-rank", "16",
                                          "--qlora", "--recompute", "full", "--batch", "1", "--seq-len", "2048",
                                          "--gpu", "rtx-4090"],
    # the hf profile's eager step: each phase's GPU time beside its counted host dispatch
    "train-hf-qwen2.5-0.5b-h200": ["--model", "qwen2.5-0.5b", "--mode", "train", "--precision", "bf16",
                                   "--recompute", "full", "--batch", "4", "--seq-len", "2048", "--gpu", "h200",
                                   "--profile", "hf", "--explain"],
}
PLAN = ["plan", "--model", "llama-3.1-70b", "--dtype", "bf16", "--prompt-tokens", "4096", "--output-tokens", "512",
        "--concurrency", "32", "--gpu", "h100,h200,a100,rtx-4090"]
VALIDATE_SOURCE = "estimator validate --model llama-3.1-8b --batch 1 --prompt-tokens 2048"


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", sorted(TRAIN))
def test_training_table(cli: Cli, golden: Callable[[str, str], None], name: str, width: int) -> None:
    result = cli(*TRAIN[name], entry="estimate", columns=width)
    assert result.exit_code == 0, result.stderr
    golden(f"{name}-{width}", result.stdout)


@pytest.mark.parametrize("width", WIDTHS)
def test_plan_table(cli: Cli, golden: Callable[[str, str], None], width: int) -> None:
    result = cli(*PLAN, columns=width)
    assert result.exit_code == 0 and result.stderr == "", result.stderr  # the current option names: no warning
    golden(f"plan-llama-3.1-70b-{width}", result.stdout)


def _validate_rows() -> list[dict[str, Any]]:
    """The rows `estimator validate` measured on the H200 (tests/data/measured/README.md, call 2)."""
    lines = (DATA / "measured" / "h200-2026-11-30.jsonl").read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in lines if line.strip()]
    return [r for r in rows if r.get("source") == VALIDATE_SOURCE]


@pytest.mark.parametrize("width", WIDTHS)
def test_validate_table(cli: Cli, monkeypatch: pytest.MonkeyPatch, golden: Callable[[str, str], None],
                        width: int) -> None:
    """The command's table over its recorded H200 rows: the GPU part (torch, CUDA, the model run) is replaced by
    what it returned on the H200, so the table is the one the command prints there today."""
    rows = _validate_rows()
    assert [r["kind"] for r in rows] == ["model"] * 4 + ["lean_decode"] * 2  # load, 2 prefills, decode; 2 kernels
    for name in ("require_torch", "require_cuda", "require_transformers"):
        monkeypatch.setattr(measure, name, lambda: None)
    monkeypatch.setattr(measure, "inference_rows", lambda *args, **kwargs: rows)
    result = cli("validate", "--model", "llama-3.1-8b", "--batch", "1", "--prompt-tokens", "2048", "--gpu", "h200",
                 columns=width)
    assert result.exit_code == 0, result.stderr
    golden(f"validate-llama-3.1-8b-h200-{width}", result.stdout)


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("command", [("gpus",), ("gpus", "--all"), ("models",)], ids=" ".join)
def test_catalog_tables(cli: Cli, golden: Callable[[str, str], None], command: tuple[str, ...], width: int,
                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The lists over the test catalog alone (tests/data/catalog: it changes only with the tests): gpus' one-screen
    list of names by memory, and its full table (--all). A specs folder adds to the packaged one, so the packaged
    folder is pointed at the test catalog too."""
    monkeypatch.setattr(registry, "default_specs_dir", lambda: TEST_CATALOG)
    result = cli(*command, "--specs-dir", str(TEST_CATALOG), columns=width)
    assert result.exit_code == 0, result.stderr
    golden("-".join(c.lstrip("-") for c in command) + f"-{width}", result.stdout)


NARROW = {  # every command that prints a table, over the shipped catalog (its longest names)
    "estimate": ["estimate", "--model", "llama-3.1-70b", "--gpu", "h100", "--gpus", "4", "--batch", "16",
                 "--prompt-tokens", "8k", "--output-tokens", "1k", "--explain"],
    "estimate does not fit": ["estimate", "--model", "deepseek-v3", "--gpu", "rtx-4090"],
    "gemma windows": ["estimate", "--model", "gemma-3-27b", "--gpu", "h200", "--prompt-tokens", "128k"],
    "train": ["estimate", *TRAIN["train-llama-3.1-8b-h100"]],
    "train qlora": ["estimate", *TRAIN["train-qlora-llama-3.1-8b-rtx-4090"]],
    "plan": PLAN,
    "plan every system": ["plan", "--model", "llama-3.1-8b", "--concurrency", "16"],
    "gpus": ["gpus"], "models": ["models"], "systems": ["systems"],
}


@pytest.mark.parametrize("name", sorted(NARROW))
def test_no_table_is_cut_at_80_columns(cli: Cli, name: str) -> None:
    """At 80 columns a table is laid out for the width (text broken between words, or its columns
    over several tables with the row's name repeated), never a name or figure cut with an ellipsis."""
    result = cli(*NARROW[name], columns=80)
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines and all(len(line) <= 80 for line in lines)
    assert "…" not in result.stdout


def test_readme_shows_the_plan_table_as_it_prints_at_80_columns() -> None:
    """docs/planning.md's plan block is the 80-column golden table, line for line (trailing blanks aside)."""
    readme = (DATA.parents[1] / "docs" / "planning.md").read_text(encoding="utf-8")
    block = readme.split("<!-- plan-80:", 1)[1].split("```\n", 1)[1].split("\n```", 1)[0].splitlines()
    command = (block[0] + block[1]).replace("\\", " ").split()
    assert command == ["$", "COLUMNS=80", "estimator", *PLAN]  # the golden table's own command
    golden = (DATA / "golden" / "plan-llama-3.1-70b-80.txt").read_text(encoding="utf-8").splitlines()
    assert block[2:] == [line.rstrip() for line in golden]
    assert max(len(line) for line in block[2:]) <= 80
