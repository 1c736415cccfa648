"""FP8 training (Transformer Engine under Megatron-LM): states, FP8 weight copies, GEMMs at the FP8 peak, and the
refusals on cards and profiles it cannot run on."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from estimator.catalog.registry import Catalog
from estimator.errors import WorkloadInvalid
from estimator.training.estimate import estimate_training
from estimator.training.workload import TrainingWorkload
from tests.conftest import CliResult

LLAMA_8B = 8_030_261_248  # llama-3.1-8b parameters
EMBED = 128_256 * 4_096  # its embedding, and the untied head of the same size
NORMS = 65 * 4_096  # two norms in each of 32 layers and the final one


def _fp8(catalog: Catalog, **fields: object) -> TrainingWorkload:
    return TrainingWorkload(precision="fp8", profile=catalog.profiles.get("megatron"), **fields)


def test_fp8_states_and_weight_copies(shipped_catalog: Catalog) -> None:
    catalog = shipped_catalog  # the megatron profile ships in specs/profiles
    model, gpu = catalog.models.get("llama-3.1-8b"), catalog.gpus.get("h100")
    m = estimate_training(model, gpu, _fp8(catalog, dp=8, zero=1)).memory
    assert m.weights_bytes == 2 * LLAMA_8B  # bf16 parameters: 16,060,522,496
    assert m.gradient_bytes == 4 * LLAMA_8B  # fp32 main gradients: 32,121,045,024
    assert m.master_weights_bytes == 4 * LLAMA_8B // 8  # fp32 master, ZeRO-1 over 8: 4,015,130,624
    assert m.optimizer_bytes == 8 * LLAMA_8B // 8  # AdamW m and v in fp32 over 8: 8,030,261,248
    # one byte per linear weight: every parameter less the embedding, the head and the norms = 6,979,321,856
    assert m.fp8_weight_bytes == LLAMA_8B - 2 * EMBED - NORMS == 6_979_321_856
    assert m.autocast_copy_bytes == 0
    tp2 = estimate_training(model, gpu, _fp8(catalog, tp=2)).memory
    assert tp2.fp8_weight_bytes == 6_979_321_856 // 2


def test_fp8_gemms_run_at_the_fp8_peak(shipped_catalog: Catalog) -> None:
    catalog = shipped_catalog  # the megatron profile ships in specs/profiles
    model, gpu = catalog.models.get("llama-3.1-8b"), catalog.gpus.get("h100")
    prof = catalog.profiles.get("megatron")
    bf16 = estimate_training(model, gpu, TrainingWorkload(precision="bf16", profile=prof)).time
    fp8 = estimate_training(model, gpu, _fp8(catalog)).time
    # the same FLOPs; the linear layers at 1,979 instead of 989.4 TFLOP/s, attention and elementwise unchanged
    assert fp8.executed_flops_per_gpu == bf16.executed_flops_per_gpu
    assert 1.0 < bf16.compute_s / fp8.compute_s < 1979 / 989.4
    # MFU against the bf16 peak: higher in FP8 once the GEMMs outweigh the optimizer step, whose fp32 master and
    # gradients (16 B per parameter read) set a one-sequence step on one GPU (at batch 1 both are ~0.22 s)
    big = {"batch": 8, "seq_len": 4096}
    bf16_big = estimate_training(model, gpu, TrainingWorkload(precision="bf16", profile=prof, **big)).time
    assert estimate_training(model, gpu, _fp8(catalog, **big)).time.mfu > bf16_big.mfu


def test_fp8_is_refused_where_it_cannot_run(shipped_catalog: Catalog) -> None:
    catalog = shipped_catalog  # the megatron profile ships in specs/profiles
    model = catalog.models.get("llama-3.1-8b")
    with pytest.raises(WorkloadInvalid, match="lacks"):
        estimate_training(model, catalog.gpus.get("a100"), _fp8(catalog))
    hf = TrainingWorkload(precision="fp8", profile=catalog.profiles.get("hf"))
    with pytest.raises(WorkloadInvalid, match="eager PyTorch"):
        estimate_training(model, catalog.gpus.get("h100"), hf)
    with pytest.raises(ValueError, match="ZeRO-3"):
        _fp8(catalog, dp=2, fsdp="full")


def test_fp8_on_the_command_line(cli: Callable[..., CliResult]) -> None:
    base = ("estimate", "--model", "llama-3.1-8b", "--mode", "train", "--precision", "fp8", "--profile", "megatron")
    ok = cli(*base, "--gpu", "h100", "--format", "json")
    assert ok.exit_code == 0 and '"precision": "fp8"' in ok.stdout
    bad = cli(*base, "--gpu", "a100")
    assert bad.exit_code != 0 and bad.stderr.count("\n") == 1 and "FP8 tensor cores" in bad.stderr
    assert "Traceback" not in bad.stderr
