"""A job that does not fit ends with what would make it fit: each change with the memory per GPU it gives, ranked
as `estimator oom` ranks them, each figure the estimate re-run with that change (checked here by re-running it
through the command line), never a change that frees nothing."""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable
from typing import Any

import pytest

from tests.conftest import CliResult

Cli = Callable[..., CliResult]
# The README's first training example: a full fine-tune of an 8B model on one 80 GB card does not fit.
TRAIN = ("estimate", "--model", "llama-3.1-8b", "--mode", "train", "--batch", "4", "--seq-len", "4096", "--gpu",
         "h100")
LORA_24GB = ("estimate", "--model", "llama-3.1-8b", "--mode", "train", "--lora-rank", "16", "--batch", "1",
             "--seq-len", "2048", "--gpu", "rtx-4090")
SERVE_70B = ("estimate", "--model", "llama-3.1-70b", "--gpu", "h100")


def _json(cli: Cli, *args: str) -> dict[str, Any]:
    done = cli(*args, "--format", "json")
    assert done.exit_code == 0, done.stderr
    report: dict[str, Any] = json.loads(done.stdout)
    return report


def _flags(change: str) -> list[str]:
    """A change's flags as typed (``--batch 64 (2 passes)`` → ``--batch 64``)."""
    return shlex.split(change.split(" (", 1)[0])


@pytest.mark.parametrize("job", [TRAIN, LORA_24GB, SERVE_70B], ids=["train", "lora-24gb", "serve-70b"])
def test_each_fix_is_the_estimate_rerun_with_its_change(cli: Cli, job: tuple[str, ...]) -> None:
    report = _json(cli, *job)
    assert report["memory"]["fits"] is False
    fixes = report["fixes"]
    assert fixes and fixes[0]["fits"] is True
    for fix in fixes:
        assert fix["frees_bytes"] > 0 and fix["per_gpu_bytes"] == report["memory"]["per_gpu_bytes"] - fix["frees_bytes"]
        changed = _json(cli, *job, *_flags(fix["change"]))
        assert changed["memory"]["per_gpu_bytes"] == fix["per_gpu_bytes"], fix["change"]
        assert changed["memory"]["fits"] is fix["fits"]
        if fix["fits"]:
            assert changed["fixes"] == []


def test_the_readme_training_example_prints_what_would_fit(cli: Cli) -> None:
    """Each line names the change and the memory per GPU it gives; the first fits."""
    done = cli(*TRAIN, columns=200)
    assert done.exit_code == 0, done.stderr
    lines = done.stdout.splitlines()
    start = lines.index(next(line for line in lines if line.startswith("What would fit")))
    listed = [line for line in lines[start + 1:] if line.startswith("  ")]
    assert listed and all(" GB per GPU, " in line for line in listed)
    assert listed[0].startswith("  1. ") and " GB per GPU, fits;" in listed[0]
    fixes = _json(cli, *TRAIN)["fixes"]
    assert [line.split(": ", 1)[0].split(". ", 1)[1] for line in listed] == [f["change"] for f in fixes]


def test_a_lora_run_on_a_24gb_card_is_offered_qlora(cli: Cli) -> None:
    fixes = {fix["change"]: fix for fix in _json(cli, *LORA_24GB)["fixes"]}
    assert fixes["--qlora"]["fits"] is True and fixes["--qlora"]["cost"] == "quality"


def test_a_job_that_fits_lists_no_fix(cli: Cli) -> None:
    assert _json(cli, "estimate", "--model", "llama-3.1-8b", "--gpu", "h100")["fixes"] == []


def test_the_fits_come_first_then_by_cost(cli: Cli) -> None:
    """Where changes fit alone only those are listed, ranked none < time < quality < hardware."""
    fixes = _json(cli, *SERVE_70B)["fixes"]
    order = ["none", "time", "quality", "hardware"]
    assert all(fix["fits"] for fix in fixes)
    assert [order.index(f["cost"]) for f in fixes] == sorted(order.index(f["cost"]) for f in fixes)


PLAN_405B = ("plan", "--model", "llama-3.1-405b", "--gpu", "h100", "--concurrency", "8", "--max-nodes", "1")


def test_a_plan_no_server_holds_lists_what_would_let_one(cli: Cli) -> None:
    """405B in bf16 (810 GB of weights) is more than one HGX H100 holds (8 × 80 GB): plan lists the changes that
    let a server hold it, each with the memory per GPU of the best layout it then finds, cheapest first."""
    report = _json(cli, *PLAN_405B)
    assert not any(option["feasible"] for option in report["options"])
    fixes = report["fixes"]
    assert fixes and all(fix["fits"] for fix in fixes)
    order = ["none", "time", "quality", "hardware"]
    assert [order.index(f["cost"]) for f in fixes] == sorted(order.index(f["cost"]) for f in fixes)
    for fix in fixes:
        changed = _json(cli, *PLAN_405B, *_flags(fix["change"]))
        best = next(option for option in changed["options"] if option["feasible"])
        assert best["memory_per_gpu_bytes"] == fix["per_gpu_bytes"], fix["change"]
    table = cli(*PLAN_405B, columns=200).stdout
    assert f"  1. {fixes[0]['change']}: " in table and " GB per GPU, fits;" in table


def test_a_plan_a_server_holds_lists_no_fix(cli: Cli) -> None:
    assert _json(cli, "plan", "--model", "llama-3.1-8b", "--gpu", "h100", "--concurrency", "8")["fixes"] == []


def test_a_goal_past_what_a_plan_holds_lists_no_fix(cli: Cli) -> None:
    """A server holds the model; the goal is past any plan (more replicas than a plan holds): a lighter model or a
    shorter context is no answer, and plan does not re-run its search for each change."""
    report = _json(cli, "plan", "--model", "llama-3.1-8b", "--gpu", "h100", "--target-tokens-per-s", "1e11")
    assert not any(option["feasible"] for option in report["options"]) and report["fixes"] == []
