"""One name, one meaning in every command: plan's cards are --gpu as in estimate and sweep (--gpus there is the
tensor-parallel degree; plan's old --gpus still reads, with a deprecation line); -o/--output, --logits and
--group-size where they make sense; --explain and --units refused in one line naming where they apply."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import CliResult

Cli = Callable[..., CliResult]
PLAN = ("plan", "--model", "llama-3.1-8b", "--concurrency", "8", "--format", "json")


def _ranked(result: CliResult) -> list[tuple[str, str]]:
    assert result.exit_code == 0, result.stderr
    return [(o["system"], o["gpu"]) for o in json.loads(result.stdout)["options"]]


def test_plan_takes_gpu_repeated_or_comma_separated(cli: Cli) -> None:
    repeated = cli(*PLAN, "--gpu", "h100", "--gpu", "a100")
    listed = cli(*PLAN, "-g", "h100,a100")
    assert repeated.stderr == listed.stderr == ""
    ranked = _ranked(repeated)
    assert ranked == _ranked(listed)
    assert {gpu for _, gpu in ranked} == {"NVIDIA H100 SXM5 80GB", "NVIDIA A100 SXM4 80GB"}


def test_plan_gpus_still_reads_cards_with_a_deprecation_line(cli: Cli) -> None:
    old = cli(*PLAN, "--gpus", "h100,a100")
    assert _ranked(old) == _ranked(cli(*PLAN, "--gpu", "h100,a100"))
    assert old.stderr == ("warning: plan --gpus is deprecated and will be removed: use --gpu h100,a100 (--gpus is the "
                          "tensor-parallel degree in estimate and sweep)\n")


def test_plan_gpus_as_a_count_is_one_line(cli: Cli) -> None:
    result = cli(*PLAN, "--gpus", "4")
    assert result.exit_code != 0 and result.stdout == ""
    assert result.stderr == ("error: --gpus 4: plan searches the tensor-parallel degree and the GPU count itself; "
                             "name the cards to compare with --gpu (e.g. --gpu h100)\n")


@pytest.mark.parametrize(("command", "flag"), [("estimate", "--output-tokens"), ("plan", "--output-tokens"),
                                               ("sweep", "--output-tokens")])
def test_every_output_tokens_help_states_the_one_default(cli: Cli, command: str, flag: str) -> None:
    """One default for generated tokens, 256, in every command, said in its help (with what 0 means)."""
    text = " ".join(cli(command, "--help", columns=400).stdout.split())
    help_line = text[text.index(f"{flag} <str>"):][:400]  # the option, not an example that uses it
    assert ("[default: 256]" in help_line and "256, a typical reply" in help_line) or "default 256" in help_line
    assert "estimate" in help_line and "plan" in help_line, help_line


def test_the_reports_state_the_output_default(cli: Cli) -> None:
    estimate = json.loads(cli("estimate", "--model", "8b", "--gpu", "h100", "--format", "json").stdout)
    assert estimate["workload"]["output_tokens"] == 256
    assert any("256 by default in estimate, plan and sweep" in a["text"] for a in estimate["assumptions"])
    plan = json.loads(cli(*PLAN, "--gpu", "h100").stdout)
    assert any("256 by default in estimate, plan and sweep" in a["text"] for a in plan["assumptions"])


def test_train_writes_to_output(cli: Cli, tmp_path: Path) -> None:
    target = tmp_path / "train.json"
    result = cli("estimate", "--mode", "train", "--model", "llama-3.2-1b", "--gpu", "h100", "-f", "json", "-o",
                 str(target))
    assert result.exit_code == 0 and result.stdout == "", result.stderr
    assert result.stderr.startswith(f"wrote {target} (JSON, ")
    assert json.loads(target.read_text())["workload"]["mode"] == "train"


def test_logits_and_group_size_mean_the_same_in_estimate_sweep_and_plan(cli: Cli) -> None:
    args = ("--model", "llama-3.1-8b", "--gpu", "h100", "--dtype", "gptq-int4", "--group-size", "32",
            "--logits", "all", "--prompt-tokens", "1k", "--output-tokens", "256")
    estimate = json.loads(cli("estimate", *args, "--format", "json").stdout)
    sweep = json.loads(cli("sweep", *args, "--format", "json").stdout)[0]
    assert sweep["workload.logits"] == estimate["workload"]["logits"] == "all"
    assert sweep["memory.weights_bytes"] == estimate["memory"]["weights_bytes"]
    assert sweep["memory.activation_bytes"] == estimate["memory"]["activation_bytes"]
    last = json.loads(cli(*PLAN, "--gpu", "h100").stdout)["options"][0]["memory_per_gpu_bytes"]
    every_plan = json.loads(cli(*PLAN, "--gpu", "h100", "--logits", "all").stdout)
    every = every_plan["options"][0]["memory_per_gpu_bytes"]
    assert every > last  # every prompt position's logits in the prefill peak
    assert every_plan["logits"] == "all"  # and the report says which it computed
    grouped = cli(*PLAN, "--gpu", "h100", "--dtype", "bf16", "--group-size", "64")
    assert grouped.stderr.startswith("error: --group-size applies to grouped formats")


@pytest.mark.parametrize(("args", "message"), [
    (("plan", "--model", "8b", "--explain"), "error: plan does not take --explain: --explain prints one "
                                             "estimate's arithmetic: run `estimator estimate --explain`"),
    (("plan", "--model", "8b", "--units", "gib"), "error: plan does not take --units: --units chooses a table's "
                                                  "units in estimate; plan's table is in GB, and --format json"),
    (("sweep", "--model", "8b", "--gpu", "h100", "--explain"), "error: sweep does not take --explain"),
    (("sweep", "--model", "8b", "--gpu", "h100", "--units", "gb"), "error: sweep does not take --units: --units "
                                                                   "chooses a table's units; sweep writes bytes"),
])
def test_options_of_another_command_are_refused_in_one_line(cli: Cli, args: tuple[str, ...], message: str) -> None:
    result = cli(*args)
    assert result.exit_code != 0 and result.stdout == ""
    assert result.stderr.startswith(message) and result.stderr.count("\n") == 1, result.stderr


def test_every_catalog_listing_takes_format(cli: Cli, shipped_catalog: object) -> None:
    for listing in ("gpus", "models", "systems"):
        rows = json.loads(cli(listing, "--format", "json").stdout)
        assert rows and all("name" in row for row in rows), listing
        csv_lines = cli(listing, "--format", "csv").stdout.splitlines()
        assert len(csv_lines) == len(rows) + 1, listing  # a header and one line per entry
    hgx = next(r for r in json.loads(cli("systems", "-f", "json").stdout) if r["name"] == "hgx-h100")
    assert (hgx["gpus_per_node"], hgx["gpu_name"]) == (8, "NVIDIA H100 SXM5 80GB")


@pytest.mark.parametrize("model", ["13B", "llama-3.2-1b"])
@pytest.mark.parametrize("size", ["-1", "0"])
def test_group_size_negative_or_zero_is_refused(cli: Cli, model: str, size: str) -> None:
    """The long fuzz run (seed 3) found `--model 13B --dtype gptq-int4 --group-size -1` printing negative weights."""
    for command in (["estimate"], ["plan", "--concurrency", "1"]):
        result = cli(*command, "--model", model, "--gpu", "h100", "--dtype", "gptq-int4", "--group-size", size)
        assert result.exit_code != 0
        assert result.stdout == ""
        assert result.stderr.strip().splitlines() == [
            f"error: --group-size must be a positive number of weights per group, got {size}"]
