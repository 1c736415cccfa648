"""Reconciling the card, the fit test beside what the estimate does not cover, and the ranking (exact integers)."""

from __future__ import annotations

from estimator.oom.explain import fits_after, rank, reconcile
from estimator.oom.parse import parse_message
from estimator.oom.report import Card, Evidence, Prediction, Suggestion, TermLine
from estimator.report import Cost

GIB = 2**30
MESSAGE = ("CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.00 GiB of which "
           "1.00 GiB is free. Process 7 has 10.00 GiB memory in use. Including non-PyTorch memory, this process has "
           "68.00 GiB memory in use. Of the allocated memory 60.00 GiB is allocated by PyTorch, and 7.50 GiB is "
           "reserved by PyTorch but unallocated.")


def _card() -> Card:
    return reconcile(Evidence(message=parse_message(MESSAGE), summary=None, nvidia_smi=None, snapshot=None))


def test_reconcile() -> None:
    card = _card()
    assert card.requested_bytes == 2 * GIB
    assert card.allocated_bytes == 60 * GIB and card.reserved_unallocated_bytes == 15 * GIB // 2
    assert card.outside_pytorch_bytes == GIB // 2  # 68 in use − (60 + 7.5) reserved by PyTorch
    assert card.other_processes_bytes == 10 * GIB
    assert card.fragmented  # 7.5 GiB cached ≥ the 2 GiB request


def _prediction(per_gpu: int, tensors: int, fits: bool) -> Prediction:
    return Prediction(options="", per_gpu_bytes=per_gpu, capacity_bytes=80 * GIB, fits=fits, peak_phase=None,
                      tensor_bytes=tensors, overhead_bytes=per_gpu - tensors, terms=(TermLine(name="w", bytes=1),))


def test_fits_after_a_workload_that_does_not_fit() -> None:
    card, p = _card(), _prediction(100 * GIB, 98 * GIB, fits=False)
    # nothing held beyond the estimate is assumed; other processes' 10 GiB are: 70 + 10 ≤ 80
    assert fits_after(card, p, 70 * GIB)
    assert not fits_after(card, p, 70 * GIB + 1)


def test_fits_after_a_workload_that_fits() -> None:
    card, p = _card(), _prediction(30 * GIB, 28 * GIB, fits=True)
    # held beyond the estimate: 60 + 2 − 28 = 34 GiB; fragmentation 7.5 GiB; other processes 10 GiB → 51.5 GiB
    assert fits_after(card, p, 80 * GIB - 103 * GIB // 2)
    assert not fits_after(card, p, 80 * GIB - 103 * GIB // 2 + 1)


def _s(change: str, fits: bool, cost: Cost, frees: int, time: float | None = 1.0) -> Suggestion:
    return Suggestion(change=change, frees_bytes=frees, per_gpu_bytes=None, fits=fits, cost=cost,
                      cost_detail="", time_factor=time, source="estimate")


def test_rank_fits_then_cost_then_time_then_freed() -> None:
    ranked = rank([_s("no-fit", False, "none", 99), _s("gpus", True, "hardware", 50), _s("slow", True, "time", 5, 2.0),
                   _s("fast", True, "time", 1, 1.1), _s("free", True, "none", 1), _s("free-more", True, "none", 2)])
    assert [s.change for s in ranked] == ["free-more", "free", "fast", "slow", "gpus", "no-fit"]
