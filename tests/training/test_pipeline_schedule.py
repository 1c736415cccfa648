"""The interleaved 1F1B schedule (--virtual-stages): bubble, pipeline sends and first-stage activations."""

from __future__ import annotations

from fractions import Fraction

import pytest

from estimator.catalog.registry import Catalog
from estimator.errors import WorkloadInvalid
from estimator.training.estimate import estimate_training
from estimator.training.report import TrainingReport
from estimator.training.workload import TrainingWorkload


def _run(catalog: Catalog, v: int, *, pp: int = 4, accum: int = 8, profile: str = "optimized") -> TrainingReport:
    system = catalog.systems.get("hgx-h100")
    w = TrainingWorkload(batch=1, seq_len=2048, grad_accum=accum, precision="bf16", tp=2, pp=pp, dp=1,
                         virtual_stages=v, profile=catalog.profiles.get(profile))
    return estimate_training(catalog.model("llama-3.1-8b"), catalog.gpus.get("h100"), w, system=system, nodes=1)


def test_bubble_shrinks_v_fold(catalog: Catalog) -> None:
    plain, interleaved = _run(catalog, 1), _run(catalog, 2)
    # 1F1B: (p − 1) / (m + p − 1) = 3 / 11; interleaved, v = 2: (p − 1) / (v·m + p − 1) = 3 / 19
    assert plain.time.pipeline_bubble_fraction == pytest.approx(3 / 11)
    assert interleaved.time.pipeline_bubble_fraction == pytest.approx(3 / 19)
    assert interleaved.time.compute_s < plain.time.compute_s


def test_pipeline_sends_grow_v_fold(catalog: Catalog) -> None:
    # every micro-batch crosses v times as many stage boundaries: 2 × m × v sends of the same size
    assert _run(catalog, 2).time.pp_communication_s == pytest.approx(2 * _run(catalog, 1).time.pp_communication_s)


def test_first_stage_holds_more_activations(catalog: Catalog) -> None:
    plain, interleaved = _run(catalog, 1).memory, _run(catalog, 2).memory
    # min(p, m) = 4 micro-batches in flight either way; interleaved × (1 + (p − 1)/(p·v)) = 1 + 3/8 = 11/8
    assert plain.in_flight_micro_batches == interleaved.in_flight_micro_batches == 4
    ratio = Fraction(interleaved.activation_bytes, plain.activation_bytes)
    assert abs(ratio - Fraction(11, 8)) < Fraction(1, 10**6)  # each side is rounded up to whole bytes once
    assert any(n.code == "pipeline-1f1b" and n.values["virtual_stages"] == 2 for n in _run(catalog, 2).assumptions)


@pytest.mark.parametrize(("pp", "accum", "message"), [
    (1, 8, "virtual_stages interleaves pipeline stages; it needs pp > 1"),  # the library names fields
    (4, 6, "micro-batches (grad_accum 6) divisible by pipeline parallel 4"),
])
def test_bad_interleaving_is_refused(catalog: Catalog, pp: int, accum: int, message: str) -> None:
    with pytest.raises((WorkloadInvalid, ValueError), match=message.replace("(", "\\(").replace(")", "\\)")):
        _run(catalog, 2, pp=pp, accum=accum)


def test_layers_must_split_over_every_chunk(catalog: Catalog) -> None:
    # llama-3.1-8b has 32 layers: 4 stages × 16 chunks = 64 does not divide them
    with pytest.raises(WorkloadInvalid, match="pipeline parallel 4 × 16 virtual stages does not divide 32 layers"):
        _run(catalog, 16)
