"""Context parallel (--cp): each rank holds 1/cp of every sequence, ring attention hands K and V around the CP
group, and gradients reduce (and ZeRO shards) over data × context parallel ranks."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from estimator.catalog.registry import Catalog
from estimator.training.estimate import estimate_training
from estimator.training.report import TrainingReport
from estimator.training.workload import TrainingWorkload
from tests.conftest import CliResult


def _run(catalog: Catalog, **fields: object) -> TrainingReport:
    w = TrainingWorkload(seq_len=8192, attention="flash", zero=1, precision="bf16",
                         profile=catalog.profiles.get("megatron"), **fields)
    return estimate_training(catalog.models.get("llama-3.1-8b"), catalog.gpus.get("h100"), w)


def test_the_sequence_and_the_shards_split_over_cp(shipped_catalog: Catalog) -> None:
    one, two = _run(shipped_catalog), _run(shipped_catalog, cp=2)
    # a layer's saved activations at 4,096 of the 8,192 tokens: exactly half (1,645,281,280 B → 822,640,640 B)
    assert one.memory.activation_per_layer_bytes == 1_645_281_280
    assert two.memory.activation_per_layer_bytes == 822_640_640
    # ZeRO-1 shards AdamW's two bf16 states of 8,030,261,248 parameters over the 2 CP ranks: 16,060,522,496 B
    assert one.memory.optimizer_bytes == 2 * 2 * 8_030_261_248
    assert two.memory.optimizer_bytes == 2 * 8_030_261_248
    assert two.memory.weights_bytes == one.memory.weights_bytes  # every CP rank holds the whole model
    assert two.workload.gpus == 2 and two.workload.tokens_per_step == 8192  # one sequence over the two ranks


def test_ring_attention_traffic(shipped_catalog: Catalog) -> None:
    t = _run(shipped_catalog, cp=2).time
    # 4,096 tokens × 8 KV heads × (128 + 128) K and V widths × 2 bytes = 16,777,216 B a step of the ring, over the
    # card's NVLink (900 / 2 GB/s per direction × 0.8); cp − 1 = 1 step, 3 passes (K, V forward; K, V and their
    # gradients backward), 32 layers
    assert t.cp_communication_s == pytest.approx(3 * 32 * 16_777_216 / (450e9 * 0.8), rel=1e-12)
    assert t.communication_s == pytest.approx(t.cp_communication_s + t.dp_communication_s, rel=1e-12)
    full = _run(shipped_catalog, cp=2, recompute="full").time  # the recomputed forward runs the ring again
    assert full.cp_communication_s == pytest.approx(4 / 3 * t.cp_communication_s, rel=1e-12)


@pytest.mark.parametrize(("args", "message"), [
    (["--cp", "3", "--seq-len", "4096"], "context parallel 3 needs seq_len (4096) divisible by 2 × cp = 6"),
    (["--cp", "2", "--attention", "eager"], "--cp runs ring attention over flash kernels"),
    (["--cp", "2", "--profile", "hf"], "the hf profile times eager PyTorch steps"),
    (["--cp", "0"], "--cp"),
])
def test_bad_cp_is_one_line(cli: Callable[..., CliResult], args: list[str], message: str) -> None:
    result = cli("estimate", "--model", "llama-3.1-8b", "--gpu", "h100", "--mode", "train", "--profile", "megatron",
                 *args)
    assert result.exit_code != 0 and message in result.stderr and result.stderr.count("\n") == 1


def test_cp_is_refused_for_inference(cli: Callable[..., CliResult]) -> None:
    result = cli("estimate", "--model", "llama-3.1-8b", "--gpu", "h100", "--cp", "2")
    assert result.exit_code != 0 and "--cp applies to --mode train" in result.stderr


def test_cp_on_a_system(cli: Callable[..., CliResult]) -> None:
    result = cli("estimate", "--model", "llama-3.1-70b", "--system", "hgx-h100", "--nodes", "4", "--mode", "train",
                 "--tp", "8", "--cp", "2", "--dp", "2", "--seq-len", "32768", "--precision", "bf16", "--recompute",
                 "full", "--zero", "1", "--attention", "flash", "--profile", "megatron")
    assert result.exit_code == 0 and "context parallel" in result.stdout
    short = cli("estimate", "--model", "llama-3.1-70b", "--system", "hgx-h100", "--nodes", "3", "--mode", "train",
                "--tp", "8", "--cp", "2", "--dp", "2", "--seq-len", "32768", "--profile", "megatron")
    assert short.exit_code != 0 and "tp 8 × pp 1 × dp 2 × cp 2 = 32 GPUs do not fit" in short.stderr
