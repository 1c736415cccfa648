"""`estimate --mode train`: the reference commands and bad input, through the real entry point."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import CliResult

ROOT = Path(__file__).resolve().parents[2]
BASE = ["--model", "llama-3.1-8b", "--mode", "train", "--precision", "amp-bf16", "--optimizer", "adamw",
        "--batch", "4", "--seq-len", "4096", "--gpu", "h100"]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "estimator", "estimate", *args], capture_output=True, text=True,
                          cwd=ROOT, check=False, env={"PYTHONPATH": str(ROOT), "PATH": ""})


def _json(*args: str) -> dict[str, Any]:
    result = _run(*args, "--format", "json")
    assert result.returncode == 0, result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def test_acceptance_fields() -> None:
    data = _json(*BASE)
    for key in ("weights_bytes", "gradient_bytes", "optimizer_bytes", "activation_bytes", "overhead_bytes",
                "total_bytes", "per_gpu_bytes", "fits"):
        assert key in data["memory"]
    for key in ("step_s", "tokens_per_s", "mfu"):
        assert data["time"][key] > 0
    assert data["workload"]["mode"] == "train"


def test_zero3_over_8_ranks_divides_model_states_by_8() -> None:
    alone = _json(*BASE)["memory"]["model_states_bytes"]
    sharded = _json(*BASE, "--zero", "3", "--dp", "8")["memory"]["model_states_bytes"]
    assert alone == 16 * 8_030_261_248  # 4 + 4 + 8 bytes per parameter
    assert sharded * 8 == alone


def test_qlora_fits_a_4090_and_full_fine_tune_does_not() -> None:
    small = ["--model", "llama-3.1-8b", "--mode", "train", "--recompute", "full", "--batch", "1", "--seq-len", "2048",
             "--gpu", "rtx-4090"]
    assert _json(*small, "--lora-rank", "16", "--qlora")["memory"]["fits"] is True
    assert _json(*small)["memory"]["fits"] is False


def test_table_and_csv() -> None:
    table = _run(*BASE)
    assert table.returncode == 0
    assert "total per GPU" in table.stdout
    csv = _run(*BASE, "--format", "csv")
    header, row = csv.stdout.splitlines()
    assert "memory.per_gpu_bytes" in header.split(",")
    assert len(row.split(",")) >= len(header.split(","))


@pytest.mark.parametrize(("args", "message"), [
    (["--tp", "3"], "tensor parallel 3 does not divide 32 attention heads"),
    (["--pp", "5"], "pipeline parallel 5 divides neither the 32 layers nor 32 + 2"),
    (["--zero", "4"], "--zero must be 0, 1, 2 or 3"),
    (["--zero", "2", "--fsdp", "full"], "pick one"),
    (["--qlora"], "give --lora-rank"),
    (["--sequence-parallel"], "needs --tp > 1"),
    (["--seq-len", "0"], "--seq-len must be positive"),
    (["--lora-rank", "8", "--lora-targets", "q,x"], "unknown LoRA target 'x'"),
    (["--precision", "fp4"], "fp4"),
])
def test_bad_training_input_is_one_line(args: list[str], message: str) -> None:
    result = _run(*BASE, *args)
    assert result.returncode != 0
    assert result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1
    assert message in result.stderr


def test_training_option_in_inference_mode_is_rejected() -> None:
    result = _run("--model", "llama-3.1-8b", "--gpu", "h100", "--zero", "3")
    assert result.returncode != 0
    assert result.stderr.strip() == "error: --zero applies to --mode train"


def test_size_only_model_cannot_train() -> None:
    result = _run("--model", "7b", "--gpu", "h100", "--mode", "train")
    assert result.returncode != 0
    assert "need an architecture" in result.stderr


@pytest.mark.parametrize(("args", "message"), [
    (["--gpus", "8"], "error: --gpus applies to inference; use --tp, --pp and --dp in --mode train"),
    (["--prompt-tokens", "8k"], "error: --prompt-tokens applies to inference; use --seq-len in --mode train"),
    (["--dtype", "fp8"], "error: --dtype applies to inference; use --precision, or --qlora for a 4-bit NF4 base, "
                         "in --mode train"),
    (["--plot", "chart.png"], "error: --plot applies to inference; no chart is drawn for --mode train; use "
                              "--format json for its figures"),
    (["--kv-dtype", "fp8", "--logits", "all"], "error: --kv-dtype applies to inference; --mode train keeps no KV "
                                              "cache. --logits applies to inference; --mode train computes logits "
                                              "at every position"),
])
def test_train_mode_refuses_inference_options(args: list[str], message: str, tmp_path: Path) -> None:
    """Under --mode train, --gpus 8 and --plot would be ignored (`1 GPU`, no file, exit 0), so each such option is
    refused in one line that names the training equivalent, and no file is written."""
    result = subprocess.run([sys.executable, "-m", "estimator", "estimate", *BASE, *args], capture_output=True,
                            text=True, cwd=tmp_path, check=False, env={"PYTHONPATH": str(ROOT), "PATH": ""})
    assert result.returncode != 0
    assert result.stdout == ""
    assert result.stderr.strip() == message
    assert list(tmp_path.iterdir()) == []


def test_train_mode_refuses_inference_options_through_params() -> None:
    """The same refusal where `oom` builds the report from parsed options (report_for_params): in the library's
    terms, located at the field, worded with the flags where the CLI prints it."""
    from estimator.cli.estimate import estimate_params, report_for_params
    from estimator.request.errors import FieldInvalid
    from estimator.request.options import flag_of

    with pytest.raises(FieldInvalid) as caught:
        report_for_params(estimate_params([*BASE, "--gpus", "8"]))
    assert str(caught.value) == "gpus applies to inference; use tp, pp and dp in mode train"
    assert caught.value.field == "gpus"
    assert caught.value.worded(flag_of) == "--gpus applies to inference; use --tp, --pp and --dp in --mode train"


def test_training_on_two_servers_splits_the_step(cli: Callable[..., CliResult]) -> None:
    """Per-GPU memory, step time split into compute / TP / PP / DP / bubble, and MFU."""
    args = ("estimate", "--model", "llama-3.1-70b", "--system", "hgx-h100", "--mode", "train", "--tp", "8",
            "--pp", "2", "--dp", "2", "--batch", "1", "--seq-len", "4096", "--grad-accum", "16", "--precision", "bf16",
            "--recompute", "full", "--zero", "1")
    done = cli(*args, "--nodes", "4", "--format", "json")
    assert done.exit_code == 0, done.stderr
    report = json.loads(done.stdout)
    t = report["time"]
    assert (report["gpu"]["system"], report["gpu"]["nodes"]) == ("hgx-h100", 4)
    assert t["tp_communication_s"] > 0 and t["pp_communication_s"] > 0 and t["dp_communication_s"] > 0
    assert t["communication_s"] == pytest.approx(t["tp_communication_s"] + t["pp_communication_s"]
                                                 + t["dp_communication_s"], rel=1e-12)
    # 1F1B bubble: (pp − 1) / (micro-batches + pp − 1) = 1/17 of the compute time
    assert t["pipeline_bubble_fraction"] == pytest.approx(1 / 17)
    assert t["bubble_s"] == pytest.approx(t["compute_s"] / 17)
    assert 0 < t["mfu"] < 1 and report["memory"]["per_gpu_bytes"] > 0
    table = cli(*args, "--nodes", "4")
    assert "tensor parallel" in table.stdout and "pipeline bubble" in table.stdout
    one = cli(*args)  # 32 GPUs on one 8-GPU server
    assert one.exit_code != 0
    assert "32 GPUs do not fit on 1 × hgx-h100 (8 GPUs): give --nodes 4" in one.stderr


def test_dp_across_nodes_is_slower_than_inside_one(cli: Callable[..., CliResult]) -> None:
    base = ("estimate", "--model", "llama-3.1-8b", "--mode", "train", "--dp", "16", "--batch", "1", "--seq-len",
            "2048", "--precision", "bf16", "--format", "json")
    card = json.loads(cli(*base, "--gpu", "h100").stdout)["time"]  # every group on the card's NVLink
    cluster = json.loads(cli(*base, "--system", "hgx-h100", "--nodes", "2").stdout)["time"]
    # NCCL's ring over rails: a reduce-scatter and an all-gather over the 16 GPUs, 15/16 of the bytes on every
    # hop, 7/8 of each GPU's over the node's NVSwitch (450 GB/s per direction, 1.9 µs) and 1/8 over its own 400
    # Gb/s NIC (50 GB/s, 4 µs) at once, the slower setting the time; 8,030,261,248 bf16 gradients, links at the
    # profile's interconnect efficiency 0.8; 14 NVSwitch steps and 1 node crossing per pass
    grads, nvlink, nic = 8_030_261_248 * 2, 450e9 * 0.8, 50e9 * 0.8
    inside, across = 15 / 16 * 7 / 8 * grads / nvlink, 15 / 16 * grads / 8 / nic  # 36.6 ms and 47.1 ms
    assert across > inside
    assert cluster["dp_communication_s"] == pytest.approx(2 * (14 * 1.9e-6 + 4e-6 + across), rel=1e-9)
    # the NIC's 1/8 at 50 GB/s is a bus bandwidth of 400 GB/s per GPU, a little under the card's NVLink alone
    assert cluster["dp_communication_s"] > 1.1 * card["dp_communication_s"]


def test_memory_table_has_a_column_per_phase_that_sums_to_its_tensors(cli: Callable[..., CliResult]) -> None:
    """No "model states" row indented under the optimizer states, and the peak is the sum of its column:
    32.1 + 64.2 + 15.0 + 135.9 + 16.8 = 264.0 GB (weights, AdamW states, autocast copies, activations, loss
    gradients) in forward-backward; 32.1 + 32.1 + 64.2 + 32.1 = 160.6 GB in the optimizer step."""
    result = cli(*BASE, entry="estimate", columns=200)
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert not any("  model states" in line for line in lines)
    header = next(line for line in lines if "forward-backward" in line and "optimizer-step" in line)
    assert header.index("forward-backward") < header.index("optimizer-step")
    tensors = next(line for line in lines if line.startswith("│ tensors"))
    assert [cell.strip() for cell in tensors.split("│")[2:4]] == ["264.0 GB", "160.6 GB"]
    assert "the largest (forward-backward) sets the peak" in " ".join(result.stdout.split())  # caption wraps


def test_max_batch_longest_sequence_and_hypothetical_in_json_csv_and_table(cli: Callable[..., CliResult]) -> None:
    """Training reports the largest micro-batch and the longest sequence that fit in every output, and a
    run that does not fit says its times are hypothetical (the H100 full fine-tune: states alone exceed the card)."""
    qlora = ["--model", "llama-3.1-8b", "--mode", "train", "--lora-rank", "16", "--qlora", "--recompute", "full",
             "--batch", "1", "--seq-len", "2048", "--gpu", "rtx-4090"]
    memory = _json(*qlora)["memory"]
    assert memory["max_batch"] >= 1 and memory["max_seq_len"] >= 2048  # it fits at batch 1 × 2,048
    rows = list(csv.DictReader(io.StringIO(_run(*qlora, "--format", "csv").stdout)))
    assert int(rows[0]["memory.max_batch"]) == memory["max_batch"]
    assert int(rows[0]["memory.max_seq_len"]) == memory["max_seq_len"]
    assert rows[0]["time.hypothetical"] == "False"
    table = cli(*qlora, entry="estimate", columns=200).stdout
    batch_line = next(line for line in table.splitlines() if "max micro-batch (this seq len)" in line)
    assert batch_line.split("│")[2].strip() == f"{memory['max_batch']:,}"
    assert f"{memory['max_seq_len']:,} tok" in next(line for line in table.splitlines() if "longest sequence" in line)
    assert "Step time (hypothetical" not in table
    too_big = cli(*BASE, entry="estimate", columns=200).stdout
    assert "Step time (hypothetical: does not fit)" in too_big
    assert "times and tokens/s are hypothetical" in too_big
    assert _json(*BASE)["time"]["hypothetical"] is True
