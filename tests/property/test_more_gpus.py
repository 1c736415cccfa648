"""More GPUs never raise per-GPU memory unless the report says which term grew, and by how much.

What can grow with the GPU count is named by one note with its bytes (`gpu-buffers`): the NCCL buffers every GPU
of a group holds (in the overhead) and DDP's gradient buckets. Per-GPU memory may rise by no more than the bytes
that note adds.
"""

from __future__ import annotations

from functools import cache

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from estimator import InferenceWorkload, estimate
from estimator.catalog.registry import Catalog, default_catalog
from estimator.model.parallel import tensor_parallel_degrees
from estimator.notes import Note, NoteCode
from estimator.training.estimate import estimate_training
from estimator.training.workload import TrainingWorkload

pytestmark = pytest.mark.property



@cache
def _catalog() -> Catalog:
    return default_catalog()


def _named(notes: tuple[Note, ...]) -> int:
    """Bytes per GPU the report says come from having more than one GPU."""
    return sum(int(str(n.values["nccl_bytes"])) + int(str(n.values["ddp_bytes"]))
               for n in notes if n.code is NoteCode.GPU_BUFFERS)


MODELS = sorted(m.name for m in _catalog().models)


@settings(max_examples=60, deadline=None)
@given(model=st.sampled_from(MODELS), pick=st.integers(0, 4), batch=st.integers(1, 64),
       prompt=st.integers(1, 40_000), output=st.integers(0, 2048),
       dtype=st.sampled_from(["bf16", "fp8", "awq-int4"]), profile=st.sampled_from(["optimized", "hf"]))
def test_more_tensor_parallel_gpus_never_raise_per_gpu_memory_unsaid(model: str, pick: int, batch: int, prompt: int,
                                                                     output: int, dtype: str, profile: str) -> None:
    c = _catalog()
    spec = c.models.get(model)
    degrees = list(tensor_parallel_degrees(spec))
    if len(degrees) < 2:
        return
    k = pick % (min(len(degrees), 6) - 1)
    runs = [estimate(spec, c.gpus.get("h100"), InferenceWorkload(
        batch=batch, prompt_tokens=prompt, output_tokens=output, weight_format=c.formats.get(dtype),
        kv_format=c.formats.get("bf16"), profile=c.profiles.get(profile), tensor_parallel=tp))
        for tp in degrees[k:k + 2]]
    fewer, more = runs
    said = _named(more.assumptions) - _named(fewer.assumptions)
    assert more.memory.per_gpu_bytes <= fewer.memory.per_gpu_bytes + max(said, 0)


layouts = st.fixed_dictionaries({
    "batch": st.integers(1, 8), "seq_len": st.sampled_from([128, 1024, 4096]),
    "precision": st.sampled_from(["fp32", "amp-bf16", "bf16"]),
    "optimizer": st.sampled_from(["adamw", "sgd", "adam-8bit"]), "zero": st.integers(0, 3),
    "grad_accum": st.integers(1, 8), "dp": st.sampled_from([1, 2, 4]), "tp": st.sampled_from([1, 2]),
    "pp": st.sampled_from([1, 2]), "recompute": st.sampled_from(["none", "selective", "full"]),
})


@settings(max_examples=60, deadline=None)
@given(model=st.sampled_from(["llama-3.2-1b", "llama-3.1-8b", "qwen2.5-7b", "mixtral-8x7b", "gpt2"]),
       layout=layouts, axis=st.sampled_from(["dp", "tp", "pp"]))
def test_more_training_gpus_never_raise_per_gpu_memory_unsaid(model: str, layout: dict[str, int],
                                                              axis: str) -> None:
    c = _catalog()
    spec, gpu, profile = c.models.get(model), c.gpus.get("h100"), c.profiles.get("hf")
    fewer = estimate_training(spec, gpu, TrainingWorkload(profile=profile, **layout))
    doubled = {**layout, axis: layout[axis] * 2}
    more = estimate_training(spec, gpu, TrainingWorkload(profile=profile, **doubled))
    said = _named(more.assumptions) - _named(fewer.assumptions)
    assert more.memory.per_gpu_bytes <= fewer.memory.per_gpu_bytes + max(said, 0)


def test_data_parallel_buckets_are_said_when_a_second_replica_raises_memory(catalog: Catalog) -> None:
    """Regression (more GPUs raised per-GPU memory with no word on which term grew). gpt2 in fp32 with
    AdamW, no ZeRO: a second data-parallel replica adds DDP's gradient buckets (one fp32 copy of every gradient,
    124,439,808 parameters × 4 bytes) and the NCCL buffers; both notes say so with their bytes."""
    c = default_catalog()
    spec, gpu, profile = c.models.get("gpt2"), c.gpus.get("h100"), c.profiles.get("hf")
    one = estimate_training(spec, gpu, TrainingWorkload(profile=profile, precision="fp32", optimizer="adamw"))
    two = estimate_training(spec, gpu, TrainingWorkload(profile=profile, precision="fp32", optimizer="adamw", dp=2))
    assert two.memory.per_gpu_bytes > one.memory.per_gpu_bytes
    said = [n.values for n in two.assumptions if n.code is NoteCode.GPU_BUFFERS]
    assert said == [{"gpus": 2, "nccl_bytes": profile.nccl_buffer_bytes, "ddp_bytes": 124_439_808 * 4}]
    assert two.memory.ddp_bucket_bytes == 124_439_808 * 4
    assert _named(one.assumptions) == 0
    assert two.memory.per_gpu_bytes - one.memory.per_gpu_bytes <= _named(two.assumptions)
