"""Training invariants over every layout the estimate takes: ZeRO and FSDP, tensor, pipeline (interleaved), context,
expert and sequence parallelism, LoRA and QLoRA, each recompute and attention kernel.

- totals equal their parts, exactly (bytes);
- max batch and max sequence are the largest that fit: the answer fits, one more does not, and no larger value
  probed by doubling up to the ceiling fits either (a search that assumed memory grows with the batch or the
  sequence where it does not would fail here);
- more GPUs on any axis never raise per-GPU memory unless the report says which term grew (`gpu-buffers`).

A layout the estimate refuses (a degree that does not divide, an option the profile cannot run) is one line of
refusal, which is what the CLI shows; these properties are about the layouts it accepts.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from estimator.catalog.registry import Catalog, default_catalog
from estimator.errors import EstimatorError
from estimator.notes import Note, NoteCode
from estimator.report import MAX_BATCH, MAX_TOKENS
from estimator.training.estimate import estimate_training
from estimator.training.report import TrainingReport
from estimator.training.workload import TrainingWorkload

pytestmark = pytest.mark.property

MODELS = ["llama-3.2-1b", "qwen2.5-0.5b", "mixtral-8x7b", "gpt2", "qwen3-30b-a3b"]
loose = settings(max_examples=30, deadline=None,
                 suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])

layouts = st.fixed_dictionaries({
    "batch": st.integers(1, 8), "seq_len": st.sampled_from([256, 1024, 4096]), "grad_accum": st.integers(1, 4),
    "precision": st.sampled_from(["fp32", "amp-bf16", "bf16"]),
    "optimizer": st.sampled_from(["adamw", "adam-8bit", "sgd"]),
    "recompute": st.sampled_from(["none", "selective", "full"]), "attention": st.sampled_from(["sdpa", "eager"]),
    "zero": st.integers(0, 3), "fsdp": st.sampled_from([None, None, "full", "grad-op"]),
    "dp": st.sampled_from([1, 2, 4, 8]), "tp": st.sampled_from([1, 2, 4]), "pp": st.sampled_from([1, 2, 4]),
    "cp": st.sampled_from([1, 1, 2]), "ep": st.sampled_from([1, 1, 2]), "virtual_stages": st.sampled_from([1, 1, 2]),
    "sequence_parallel": st.booleans(), "lora_rank": st.sampled_from([None, None, 8, 64]),
    "qlora": st.sampled_from([None, None, "nf4"]),
    "profile": st.sampled_from(["hf", "megatron", "optimized"]),
})


@cache
def _catalog() -> Catalog:
    return default_catalog()


def _workload(layout: dict[str, Any]) -> TrainingWorkload:
    c = _catalog()
    fields = {**layout, "profile": c.profiles.get(layout["profile"])}
    if fields["qlora"] is not None:
        fields["qlora"] = c.formats.get(fields["qlora"])
        fields["lora_rank"] = fields["lora_rank"] or 16
    return TrainingWorkload(**fields)


def _report(model: str, layout: dict[str, Any]) -> TrainingReport:
    """The estimate of ``layout``, or, where the estimate refuses the layout in one line, no example."""
    c = _catalog()
    try:
        return estimate_training(c.models.get(model), c.gpus.get("h200"), _workload(layout))
    except (EstimatorError, ValueError):  # refused: a ValueError is pydantic's refusal of the workload
        assume(False)
        raise


def _fits(model: str, layout: dict[str, Any], **change: object) -> bool:
    return _report(model, {**layout, **change}).memory.fits


@loose
@given(model=st.sampled_from(MODELS), layout=layouts)
def test_training_totals_equal_their_parts_in_every_layout(model: str, layout: dict[str, Any]) -> None:
    r = _report(model, layout)
    m = r.memory
    assert m.model_states_bytes == m.weights_bytes + m.gradient_bytes + m.master_weights_bytes + m.optimizer_bytes
    assert m.per_gpu_bytes == m.peak_tensor_bytes + m.overhead_bytes
    w = r.workload
    assert m.total_bytes == m.per_gpu_bytes * w.gpus
    for phase in m.phases:
        assert phase.tensor_bytes == sum(t.bytes for t in phase.terms)
    assert m.peak_tensor_bytes == max(phase.tensor_bytes for phase in m.phases)
    assert m.peak_phase == next(p.phase for p in m.phases if p.tensor_bytes == m.peak_tensor_bytes)


def _probes(n: int, top: int) -> list[int]:
    """n + 1, then doubling steps above n up to ``top``: values a search that assumed monotonic memory skips."""
    out, step = [], 1
    while n + step <= top:
        out.append(n + step)
        step *= 2
    return out[:12] + ([top] if top > n and top not in out[:12] else [])


@loose
@given(model=st.sampled_from(MODELS), layout=layouts)
def test_training_max_batch_is_the_largest_that_fits(model: str, layout: dict[str, Any]) -> None:
    n = _report(model, layout).memory.max_batch
    if n > 0:
        assert _fits(model, layout, batch=n)
    assert not any(_fits(model, layout, batch=b) for b in _probes(n, MAX_BATCH))


@loose
@given(model=st.sampled_from(MODELS), layout=layouts)
def test_training_max_sequence_is_the_longest_that_fits(model: str, layout: dict[str, Any]) -> None:
    r = _report(model, layout)
    w = r.workload
    unit = (w.tp if w.sequence_parallel else 1) * (2 * w.cp if w.cp > 1 else 1)  # the lengths the layout allows
    n = r.memory.max_seq_len_by_memory
    assert n % unit == 0
    if n > 0:
        assert _fits(model, layout, seq_len=n)
    assert not any(_fits(model, layout, seq_len=k * unit) for k in _probes(n // unit, MAX_TOKENS // unit))


def _named(notes: tuple[Note, ...]) -> int:
    """Bytes per GPU the report says come from having more than one GPU."""
    return sum(int(str(n.values["nccl_bytes"])) + int(str(n.values["ddp_bytes"]))
               for n in notes if n.code is NoteCode.GPU_BUFFERS)


@loose
@given(model=st.sampled_from(MODELS), layout=layouts, axis=st.sampled_from(["dp", "tp", "pp", "cp", "ep"]))
def test_more_gpus_on_any_axis_never_raise_per_gpu_memory_unsaid(model: str, layout: dict[str, Any],
                                                                 axis: str) -> None:
    fewer = _report(model, layout)
    more = _report(model, {**layout, axis: layout[axis] * 2})
    said = _named(more.assumptions) - _named(fewer.assumptions)
    assert more.memory.per_gpu_bytes <= fewer.memory.per_gpu_bytes + max(said, 0)
