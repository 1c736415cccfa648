"""`estimator oom`: table and JSON from captured files, and one-line errors (a refused snapshot among them)."""

from __future__ import annotations

import io
import json
import os
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import CliResult

Cli = Callable[..., CliResult]
DATA = Path(__file__).resolve().parent.parent / "data" / "oom"
# The failed job of tests/data/oom/logits.*: one forward pass over the prompts (scoring), no generated tokens.
WORKLOAD = ("--model", "llama-3.2-1b", "--gpu", "h200", "--profile", "hf", "--batch", "256", "--prompt-tokens",
            "2048", "--output-tokens", "0", "--logits", "all")


def test_table_names_tensor_and_change(cli: Cli) -> None:
    result = cli("oom", "--from", str(DATA / "logits.message.txt"), *WORKLOAD)
    assert result.exit_code == 0, result.stderr
    assert "most likely the logits, in the estimate's activation (logits stage) term" in result.stdout
    assert "1. --logits last" in result.stdout


def test_json_report(cli: Cli) -> None:
    result = cli("oom", "--from", str(DATA / "logits.message.txt"), "--from", str(DATA / "logits.snapshot.pickle"),
                 "--format", "json", *WORKLOAD)
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["card"]["requested_bytes"] == 256 * 2048 * 128256 * 2  # exact, from the snapshot
    assert data["likely_tensor"]["term"] == "activation (logits stage)"
    assert data["suggestions"][0]["change"] == "--logits last" and data["suggestions"][0]["fits"]


def test_stdin(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    text = (DATA / "fragmentation.message.txt").read_text()
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(text.encode())))
    result = cli("oom", "--format", "json")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["card"]["fragmented"] is True


class _Exploit:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (os.system, (f"touch {self.marker}",))


def _one_line(result: CliResult, fragment: str) -> None:
    assert result.exit_code != 0
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("error: "), result.stderr
    assert fragment in result.stderr
    assert "Traceback" not in result.stderr


def test_refused_snapshot_is_one_line(cli: Cli, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    bad = tmp_path / "snapshot.pickle"
    bad.write_bytes(pickle.dumps({"segments": [_Exploit(marker)]}))
    _one_line(cli("oom", "--from", str(DATA / "batch.message.txt"), "--from", str(bad)), "nothing was executed")
    assert not marker.exists()


def test_bad_inputs_are_one_line(cli: Cli, tmp_path: Path) -> None:
    _one_line(cli("oom", "--from", str(tmp_path / "missing.txt")), "cannot read")
    empty = tmp_path / "empty.txt"
    empty.write_text("RuntimeError: something else\n")
    _one_line(cli("oom", "--from", str(empty)), "found no out-of-memory message")
    _one_line(cli("oom", "--from", str(DATA / "batch.message.txt"), "--model", "nope", "--gpu", "h200"),
              "unknown model")
    _one_line(cli("oom", "--from", str(DATA / "batch.message.txt"), "--format", "csv"), "not available")


def test_tensor_parallel_does_not_split_the_logits(cli: Cli) -> None:
    """Under TP the vocab-parallel head computes a ⌈vocab / tp⌉ shard, then gathers the whole logits for sampling
    (transformers' colwise_rep, vLLM's LogitsProcessor): the logits stage grows by the shard, so `oom` no longer
    offers --gpus as a fix for all-position logits (the README's example once showed --gpus 4 "fitting" 5 MB under
    the capacity with the full logits counted once)."""
    args = ("estimate", "--model", "llama-3.2-1b", "--gpu", "h200", "--profile", "hf", "--batch", "256",
            "--prompt-tokens", "2048", "--logits", "all", "--format", "json", "--gpus", "4")
    memory = json.loads(cli(*args).stdout)["memory"]
    # 256 × 2,048 = 524,288 tokens × (hidden states 2 × 2,048 + full logits 2 × 128,256 + the rank's shard
    # 2 × ⌈128,256 / 4⌉ = 2 × 32,064) B; the rotary tables are gone when the head runs (transformers' locals)
    assert memory["activation_per_gpu_bytes"] == 524_288 * 2 * (2_048 + 128_256 + 32_064) == 170_255_187_968
    assert memory["fits"] is False
    result = cli("oom", "--from", str(DATA / "logits.message.txt"), "--format", "json", *WORKLOAD)
    # more GPUs grow the logits stage by the shard: no fix, so not offered (a change that frees nothing is not)
    assert not any(s["change"].startswith("--gpus") for s in json.loads(result.stdout)["suggestions"])
    scoring = ("estimate", *WORKLOAD, "--format", "json")
    eight = json.loads(cli(*scoring, "--gpus", "8").stdout)["memory"]
    assert eight["per_gpu_bytes"] > json.loads(cli(*scoring).stdout)["memory"]["per_gpu_bytes"]


def test_oom_never_offers_a_change_that_frees_nothing(cli: Cli) -> None:
    """Every recorded failure (tests/data/oom), with the workload its record gives: each change listed frees
    memory (a change that adds some, such as more GPUs under all-position logits, is no fix)."""
    for case in ("logits", "batch", "eager-attention", "optimizer-step", "fragmentation"):
        args = json.loads((DATA / f"{case}.json").read_text())["estimator_args"]
        result = cli("oom", "--from", str(DATA / f"{case}.message.txt"), "--format", "json", *args)
        assert result.exit_code == 0, (case, result.stderr)
        assert all(s["frees_bytes"] > 0 for s in json.loads(result.stdout)["suggestions"]), case


def test_the_error_text_alone_says_which_options_to_add(cli: Cli) -> None:
    result = cli("oom", "--from", str(DATA / "logits.message.txt"), columns=200)
    assert result.exit_code == 0, result.stderr
    assert "for what to change, give the job after the input as estimate's options: --model NAME --gpu NAME" \
        in result.stdout


def test_snapshot_with_a_negative_reserved_size_is_one_line(cli: Cli, tmp_path: Path) -> None:
    bad = tmp_path / "snapshot.pickle"
    bad.write_bytes(pickle.dumps({"segments": [{"total_size": -5, "allocated_size": 0, "blocks": []}],
                                  "device_traces": [[{"action": "oom", "size": 1024}]]}))
    _one_line(cli("oom", "--from", str(bad), "--format", "json"), "segment 0 total_size -5 is negative")


def test_free_beyond_the_card_capacity_is_one_line(cli: Cli, tmp_path: Path) -> None:
    text = (DATA / "batch.message.txt").read_text().replace("16.33 GiB is free", f"{10**29} B is free")
    bad = tmp_path / "err.txt"
    bad.write_text(text)
    _one_line(cli("oom", "--from", str(bad)), "the message's free size")
