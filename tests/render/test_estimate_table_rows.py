"""The estimate table's memory rows add up: every term of total_bytes has a row, and per-GPU weights are shown."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import CliResult

Cli = Callable[..., CliResult]
CONFIGS = Path(__file__).resolve().parents[1] / "data" / "configs"


def _cells(table: str, term: str) -> list[str]:
    line = next(row for row in table.splitlines() if row.startswith(f"│ {term} "))
    return [c.strip() for c in line.strip("│").split("│")]


@pytest.mark.parametrize("gpus", ["1", "4"])
def test_per_gpu_weights_and_recurrent_state_have_rows(cli: Cli, gpus: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "120")
    args = ["--model", str(CONFIGS / "nvidia--Nemotron-H-56B-Base-8K.json"), "--gpu", "h100", "--batch", "4",
            "--gpus", gpus]
    table = cli("estimate", *args)
    assert table.exit_code == 0, table.stderr
    mem = json.loads(cli("estimate", *args, "--format", "json").stdout)["memory"]
    assert mem["state_bytes"] > 0
    weights = _cells(table.stdout, "weights")
    state = _cells(table.stdout, "recurrent state")
    assert weights[2] and state[1] and state[2]  # no blank per-GPU cell under "Memory per GPU"
    shown = float(re.sub(r"[^\d.]", "", weights[2]))
    assert shown == pytest.approx(mem["weights_per_gpu_bytes"] / 1e9, abs=0.05)  # printed to one decimal in GB
    replicated = [row for row in table.stdout.splitlines() if "replicated" in row]
    assert bool(replicated) == (mem["weights_replicated_bytes"] > 0)
    assert mem["total_bytes"] == (mem["weights_bytes"] + mem["weights_replicated_bytes"] + mem["kv_cache_bytes"]
                                  + mem["activation_bytes"] + mem["overhead_bytes"] + mem["state_bytes"])
