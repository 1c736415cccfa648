"""Uneven pipeline stages: Megatron-core's split counting the embedding and the output layer as a layer each, the
busiest stage setting the step."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from estimator.catalog.registry import Catalog
from estimator.errors import WorkloadInvalid
from estimator.model.compute import attention_flops, linear_params_per_token
from estimator.training.estimate import estimate_training
from estimator.training.pipeline import held_layer_micro_batches, imbalance, pipeline_split
from estimator.training.workload import TrainingWorkload
from tests.conftest import CliResult


def test_llama_3_405b_splits_as_its_report_describes() -> None:
    # 126 + 2 = 128 = 16 × 8: the first and last stages run 7 layers beside the embedding and the output layer
    assert pipeline_split(126, 16) == (7, *(8,) * 14, 7)
    assert sum(pipeline_split(126, 16) or ()) == 126
    assert pipeline_split(96, 16) == (6,) * 16  # even where pp divides the layers
    assert pipeline_split(125, 16) is None and pipeline_split(30, 2) == (15, 15) and pipeline_split(31, 2) is None


def test_held_activations_and_imbalance_by_hand() -> None:
    split = (7, *(8,) * 14, 7)
    # 1F1B: stage i keeps min(16 − i, m) micro-batches; at m = 32 stage 0 holds 7 × 16 = 112, stage 1 8 × 15 = 120
    assert held_layer_micro_batches(split, 32) == 120
    assert held_layer_micro_batches((6,) * 16, 4) == 24  # 6 layers × 4 micro-batches, as before
    # work: 7 + 8 × 14 + 7 layers of 1 unit and the output layer's 0.5 unit on the last; busiest 8 of mean 126.5/16
    assert imbalance(split, 1.0, 0.5) == pytest.approx(8 / (126.5 / 16), rel=1e-15)
    assert imbalance((6,) * 16, 1.0, 0.0) == 1.0 and imbalance((32,), 1.0, 0.7) == 1.0


def test_the_busiest_stage_sets_the_step(shipped_catalog: Catalog, monkeypatch: pytest.MonkeyPatch) -> None:
    model, gpu = shipped_catalog.models.get("llama-3.1-405b"), shipped_catalog.gpus.get("h100")
    hgx, arch = shipped_catalog.systems.get("hgx-h100"), model.arch
    assert arch is not None
    w = TrainingWorkload(tp=8, pp=16, dp=1, grad_accum=32, seq_len=8192, precision="bf16", zero=1,
                         attention="flash", profile=shipped_catalog.profiles.get("megatron"))
    report = estimate_training(model, gpu, w, system=hgx, nodes=16)
    assert report.workload.pipeline_layers == (7, *(8,) * 14, 7)
    monkeypatch.setattr("estimator.training.step_time.imbalance", lambda *args: 1.0)  # the average stage
    average = estimate_training(model, gpu, w, system=hgx, nodes=16).time.compute_s
    # per token: a layer 6 × its linear weights + 3 × its attention forward FLOPs, the output layer 6 × 128,256 ×
    # 16,384 (12.6 GFLOP against a layer's 19.9): a middle stage's 8 layers are the busiest, the last stage's 7 + head
    # less
    layer = (6 * linear_params_per_token(arch) + 3 * attention_flops(arch, 1, 8192) / 8192) / 126
    head = 6 * 128_256 * 16_384
    assert 7 * layer + head < 8 * layer
    busiest = 8 * layer
    assert report.time.compute_s / average == pytest.approx(busiest / ((126 * layer + head) / 16), rel=1e-12)


def test_an_uneven_split_that_is_not_modelled_is_refused(shipped_catalog: Catalog,
                                                         cli: Callable[..., CliResult]) -> None:
    model = shipped_catalog.models.get("llama-3.1-405b")
    w = TrainingWorkload(pp=5, profile=shipped_catalog.profiles.get("megatron"))
    with pytest.raises(WorkloadInvalid, match="pipeline parallel 5 divides neither the 126 layers nor 126 \\+ 2"):
        estimate_training(model, shipped_catalog.gpus.get("h100"), w)
    w = TrainingWorkload(pp=16, virtual_stages=2, grad_accum=32, profile=shipped_catalog.profiles.get("megatron"))
    with pytest.raises(WorkloadInvalid, match="16 × 2 virtual stages does not divide 126"):
        estimate_training(model, shipped_catalog.gpus.get("h100"), w)
    shown = cli("estimate", "--model", "llama-3.1-405b", "--system", "hgx-h100", "--nodes", "16", "--mode", "train",
                "--tp", "8", "--pp", "16", "--grad-accum", "32", "--profile", "megatron")
    assert shown.exit_code == 0, shown.stderr
    assert "pp 16 (7 + 8 × 14 + 7 layers)" in " ".join(shown.stdout.split())  # as wrapped at any width
