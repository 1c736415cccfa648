"""The serving engine's own knobs (their names, vLLM's KV-cache words, the utilization fraction) and its start-up
laid onto an inference Report; `convert.engine_of` converts the options at the door."""

from __future__ import annotations

from typing import TYPE_CHECKING

from estimator.request.errors import FieldInvalid

if TYPE_CHECKING:
    from estimator.catalog.architecture import ModelSpec
    from estimator.catalog.specs import GpuSpec
    from estimator.inference.report import Report
    from estimator.inference.workload import InferenceWorkload
    from estimator.request.models import EngineKnobs

KNOBS = ("gpu_memory_utilization", "max_model_len", "max_num_seqs", "max_num_batched_tokens", "block_size",
         "kv_cache_dtype", "enforce_eager")
# vLLM's --kv-cache-dtype words (vllm/config/cache.py CacheDType) → the estimate's KV formats (None: the model's)
KV_CACHE_DTYPES = {"auto": None, "fp8": "fp8", "fp8_e4m3": "fp8", "fp8_e5m2": "fp8", "bfloat16": "bf16",
                   "float16": "fp16"}


def fraction(value: str | float | None) -> float | None:
    """``--gpu-memory-utilization`` as a number above 0 and at most 1 (None: not given)."""
    if value is None:
        return None
    try:
        number = float(value)
    except ValueError:
        raise FieldInvalid("gpu_memory_utilization", "{gpu_memory_utilization} must be a fraction such as 0.9, "
                           "got {text}", text=repr(value)) from None
    if not 0 < number <= 1:
        raise FieldInvalid("gpu_memory_utilization", "{gpu_memory_utilization} must be above 0 and at most 1, "
                           "got {text}", text=repr(value))
    return number


def with_engine(report: Report, knobs: EngineKnobs, model: ModelSpec, gpu: GpuSpec,
                workload: InferenceWorkload) -> Report:
    """``report`` with its ``engine`` section: what vLLM prints at start-up for this model, card and workload."""
    from estimator.inference.engine_vllm import VllmSettings, vllm_startup

    if model.arch is None:
        raise FieldInvalid("engine", "{engine} needs the model's architecture (its layers and KV heads); a size "
                           "alone does not say them")
    settings = VllmSettings(knobs.gpu_memory_utilization, knobs.max_model_len, knobs.max_num_seqs,
                            knobs.max_num_batched_tokens, knobs.block_size, knobs.kv_cache_dtype, knobs.enforce_eager)
    hub_id = next((a for a in (model.origin or "", *model.aliases) if "/" in a and ":" not in a), model.name)
    startup = vllm_startup(model.arch, gpu, workload, settings, model_id=hub_id,
                           max_position=model.arch.max_position_embeddings)
    return report.model_copy(update={"engine": startup})
