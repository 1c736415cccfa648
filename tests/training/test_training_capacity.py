"""Training capacity: the largest micro-batch and the longest sequence that fit, and the times of a run
that does not fit marked hypothetical."""

from __future__ import annotations

import pytest

from estimator.catalog.registry import Catalog
from estimator.training.estimate import estimate_training
from estimator.training.workload import TrainingWorkload


def _fits(catalog: Catalog, gpu: str, **fields: object) -> bool:
    w = TrainingWorkload(profile=catalog.profiles.get("optimized"), **fields)
    return estimate_training(catalog.model("llama-3.2-1b"), catalog.gpus.get(gpu), w).memory.fits


@pytest.mark.parametrize("gpu", ["h100", "h200", "a100"])
def test_max_batch_and_seq_len_are_the_edge_of_fitting(catalog: Catalog, gpu: str) -> None:
    """The answer fits and one more does not: the exact edge, found by the search inference uses."""
    base = {"batch": 2, "seq_len": 2048, "recompute": "full"}
    w = TrainingWorkload(profile=catalog.profiles.get("optimized"), **base)
    m = estimate_training(catalog.model("llama-3.2-1b"), catalog.gpus.get(gpu), w).memory
    assert m.max_batch >= 1 and m.max_seq_len_by_memory >= 1
    assert _fits(catalog, gpu, **{**base, "batch": m.max_batch})
    assert not _fits(catalog, gpu, **{**base, "batch": m.max_batch + 1})
    assert _fits(catalog, gpu, **{**base, "seq_len": m.max_seq_len_by_memory})
    assert not _fits(catalog, gpu, **{**base, "seq_len": m.max_seq_len_by_memory + 1})
    # capped at the model's 131,072-token window, as inference's max_context_tokens is
    assert m.max_seq_len == min(m.max_seq_len_by_memory, 131_072)


def test_a_run_that_cannot_hold_its_states_has_no_batch_and_hypothetical_times(catalog: Catalog) -> None:
    """Llama-3.1-8B full fine-tune on one H100: 16 B/param of model states (128.5 GB) exceed the 85.5 GB card
    before any activation, so no micro-batch and no sequence fits; its times are what it would take if it did."""
    w = TrainingWorkload(batch=4, seq_len=4096, profile=catalog.profiles.get("optimized"))
    report = estimate_training(catalog.model("llama-3.1-8b"), catalog.gpus.get("h100"), w)
    assert (report.memory.max_batch, report.memory.max_seq_len, report.memory.max_seq_len_by_memory) == (0, 0, 0)
    assert report.time.hypothetical
    assert "time-hypothetical" in [n.code for n in report.warnings]


def test_a_run_that_fits_is_not_hypothetical(catalog: Catalog) -> None:
    w = TrainingWorkload(batch=1, seq_len=512, profile=catalog.profiles.get("optimized"))
    report = estimate_training(catalog.model("llama-3.2-1b"), catalog.gpus.get("h100"), w)
    assert report.memory.fits and not report.time.hypothetical
    assert "time-hypothetical" not in [n.code for n in report.warnings]


def test_sequence_parallel_searches_multiples_of_tp(catalog: Catalog) -> None:
    w = TrainingWorkload(batch=1, seq_len=2048, tp=4, sequence_parallel=True,
                         profile=catalog.profiles.get("optimized"))
    m = estimate_training(catalog.model("llama-3.1-8b"), catalog.gpus.get("h100"), w).memory
    assert m.max_seq_len_by_memory > 0 and m.max_seq_len_by_memory % 4 == 0
    w_next = w.model_copy(update={"seq_len": m.max_seq_len_by_memory + 4})
    assert not estimate_training(catalog.model("llama-3.1-8b"), catalog.gpus.get("h100"), w_next).memory.fits
