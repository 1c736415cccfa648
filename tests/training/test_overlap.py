"""Communication behind compute: the profile's train_overlap_* fractions, each bounded by the compute of the phase
it can hide behind (estimator.training.step_time.exposed_s), and the DP traffic they act on."""

from __future__ import annotations

import pytest

from estimator.catalog.profiles import EfficiencyProfile
from estimator.catalog.registry import Catalog
from estimator.training.communication import Communication
from estimator.training.estimate import estimate_training
from estimator.training.step_time import exposed_s
from estimator.training.workload import TrainingWorkload


def _profile(catalog: Catalog, **overlap: float) -> EfficiencyProfile:
    return catalog.profiles.get("optimized").model_copy(update=overlap)


def _workload(catalog: Catalog, **fields: object) -> TrainingWorkload:
    return TrainingWorkload(profile=_profile(catalog, **fields.pop("overlap", {})), **fields)  # type: ignore[arg-type]


def test_no_overlap_waits_for_all_of_it(catalog: Catalog) -> None:
    w = _workload(catalog, dp=8, grad_accum=4)
    assert exposed_s(Communication(0.5, 0.25, 2.0), w, 6.0) == 2.75


def test_ddp_hides_the_reduction_behind_the_last_micro_batch_backward(catalog: Catalog) -> None:
    w = _workload(catalog, dp=8, grad_accum=4, overlap={"train_overlap_dp": 1.0})
    # 12 s of compute over 4 micro-batches: 3 s each, 2 of them backward (2 of 3 passes)
    assert exposed_s(Communication(0.0, 0.0, 1.5), w, 12.0) == 0.0  # 1.5 s fits behind 2 s
    assert exposed_s(Communication(0.0, 0.0, 5.0), w, 12.0) == 3.0  # 5 s less the 2 s window
    half = _workload(catalog, dp=8, grad_accum=4, overlap={"train_overlap_dp": 0.5})
    assert exposed_s(Communication(0.0, 0.0, 1.5), half, 12.0) == 0.75  # half of it runs behind
    # full recompute: the backward is 3 of 4 passes, 2.25 s of each micro-batch's 3
    full = _workload(catalog, dp=8, grad_accum=4, recompute="full", overlap={"train_overlap_dp": 1.0})
    assert exposed_s(Communication(0.0, 0.0, 5.0), full, 12.0) == 2.75


def test_fsdp_prefetch_hides_the_gathers_behind_forward_and_backward(catalog: Catalog) -> None:
    w = _workload(catalog, dp=8, fsdp="full", grad_accum=2,
                  overlap={"train_overlap_gather": 1.0, "train_overlap_dp": 1.0})
    # 9 s of compute: 3 s forward, 6 s backward. Gathers 4 s (2 forward, 2 backward), reduce-scatter 2 s: the
    # forward hides its 2 s, the backward its 2 + 2 s: nothing waits
    assert exposed_s(Communication(0.0, 0.0, 6.0, 4.0), w, 9.0) == 0.0
    # gathers 8 s: 4 forward (3 hidden), 4 backward + 2 reduce-scatter (6 hidden): 1 s waits
    assert exposed_s(Communication(0.0, 0.0, 10.0, 8.0), w, 9.0) == 1.0


def test_everything_together_hides_behind_no_more_than_the_compute(catalog: Catalog) -> None:
    w = _workload(catalog, dp=2, tp=2, pp=2, grad_accum=2,
                  overlap={"train_overlap_tp": 1.0, "train_overlap_pp": 1.0, "train_overlap_dp": 1.0})
    # TP 3 s and PP 3 s could each hide behind the 4 s of compute, but 6 s of traffic cannot hide behind 4 s
    assert exposed_s(Communication(3.0, 3.0, 0.0), w, 4.0) == 2.0


def test_fsdp_collectives_run_every_micro_batch(catalog: Catalog) -> None:
    """FULL_SHARD frees the gathered parameters after each forward and backward: 3 collectives per micro-batch."""
    model, gpu = catalog.models.get("llama-3.1-8b"), catalog.gpus.get("h100")
    prof = catalog.profiles.get("optimized")
    one, four = (estimate_training(model, gpu, TrainingWorkload(dp=8, fsdp="full", grad_accum=m, profile=prof))
                 for m in (1, 4))
    assert four.time.dp_communication_s == pytest.approx(4 * one.time.dp_communication_s, rel=1e-12)
    assert one.time.exposed_communication_s == one.time.communication_s  # optimized overlaps nothing


def test_an_overlapping_profile_says_so_and_shortens_the_step(catalog: Catalog) -> None:
    model, gpu = catalog.models.get("llama-3.1-8b"), catalog.gpus.get("h100")
    serial = TrainingWorkload(dp=8, grad_accum=1, profile=catalog.profiles.get("optimized"))
    hidden = serial.model_copy(update={"profile": _profile(catalog, train_overlap_dp=1.0)})
    a, b = (estimate_training(model, gpu, w) for w in (serial, hidden))
    assert b.time.communication_s == a.time.communication_s
    assert b.time.step_s == pytest.approx(a.time.step_s - a.time.communication_s + b.time.exposed_communication_s)
    assert b.time.exposed_communication_s < a.time.exposed_communication_s
    assert {n.code for n in a.assumptions} >= {"no-overlap"} and "overlap" in {n.code for n in b.assumptions}
