"""Per-GPU memory of an inference job: weights + KV cache + prefill activation peak + runtime overhead.

Each term is a function of `estimator.model.memory`; this module only adds them up for one tensor-parallel rank.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from estimator.catalog.architecture import ModelSpec
from estimator.catalog.specs import GpuSpec
from estimator.model.memory import (
    generic_weights_bytes,
    kv_cache_bytes,
    kv_heads_divisor,
    prefill_activation_peak,
    prefill_masked_attention,
    runs_math_attention,
    runtime_overhead_bytes,
    sharded_weights_bytes,
)
from estimator.model.runtime import Runtime


def prefill_shape(batch: int, prompt: int, chunk: int | None) -> tuple[int, int]:
    """(sequences, tokens each) that one prefill forward holds at once: everything, or one chunk of at most
    ``chunk`` tokens when the runtime prefills in chunks (whole sequences while they fit, else part of one)."""
    if chunk is None or batch * prompt <= chunk:
        return batch, prompt
    if prompt <= chunk:
        return chunk // prompt, prompt
    return 1, chunk


@dataclass(frozen=True)
class GpuMemory:
    """Bytes on one tensor-parallel rank; ``kv`` and ``activation`` are None for a model known only by its size."""

    weights: int
    kv: int | None
    activation: int | None
    overhead: int
    per_gpu: int


def memory_per_gpu(model: ModelSpec, gpu: GpuSpec, rt: Runtime, tp: int, batch: int, prompt: int,
                   output: int) -> GpuMemory:
    """Memory on each of ``tp`` ranks of ``gpu`` for ``batch`` sequences of ``prompt`` + ``output`` tokens."""
    arch = model.arch
    decompressed = rt.mla_layout == "decompressed"
    if arch is None:
        assert model.generic_params is not None
        weights = math.ceil(generic_weights_bytes(model.generic_params, rt.weight_format) / tp)
        kv = activation = None
    else:
        weights = sharded_weights_bytes(arch, rt.weight_format, tp)
        kv = kv_cache_bytes(arch, prompt + output, batch, rt.kv_format, decompressed_mla=decompressed,
                            kv_heads_divisor=kv_heads_divisor(arch, tp)) if arch.causal else 0
        shape_batch, shape_tokens = prefill_shape(batch, prompt, rt.profile.prefill_chunk_tokens)
        activation = prefill_activation_peak(
            arch, shape_batch, shape_tokens, element_bytes=rt.activation_bytes_per_element,
            logits_all=rt.logits == "all", logits_fp32=rt.profile.logits_fp32_upcast, tensor_parallel=tp,
            eager_activations=rt.profile.eager_activation_temporaries,
            eager_attention=runs_math_attention(arch, rt.profile),
            explicit_mask=prefill_masked_attention(arch, rt.profile),
        ).bytes
        if kv and rt.profile.sliding_window_prefill_full and arch.layer_windows:
            kv = max(kv, kv_cache_bytes(arch, prompt, batch, rt.kv_format, decompressed_mla=decompressed,
                                        kv_heads_divisor=kv_heads_divisor(arch, tp), ignore_windows=True))
    dynamic = (kv or 0) + (activation or 0)
    overhead = runtime_overhead_bytes(gpu.memory_bytes, rt.profile, tensor_parallel=tp, dynamic_bytes=dynamic)
    return GpuMemory(weights, kv, activation, overhead, weights + dynamic + overhead)
