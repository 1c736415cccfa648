"""Per-GPU memory of an inference job: weights + KV cache + prefill activation peak + runtime overhead.

Each term is a function of `estimator.model.memory`; this module only adds them up for one tensor-parallel rank.
Like the terms, it evaluates on Python ints (one estimate) or elementwise on numpy int64 arrays (a sweep grid).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from estimator.catalog.architecture import Architecture, ModelSpec
from estimator.catalog.profiles import EfficiencyProfile
from estimator.catalog.specs import GpuSpec
from estimator.model.attention_kernels import prefill_masked_attention, runs_math_attention
from estimator.model.elementwise import as_float, is_array, where
from estimator.model.memory import (
    ActivationPeak,
    KvLayers,
    generic_weights_bytes,
    kv_cache_layers,
    kv_heads_divisor,
    prefill_activation_peak,
    runtime_overhead_bytes,
    sharded_weights_bytes,
)
from estimator.model.runtime import Runtime
from estimator.model.state import state_bytes

# Beyond any card (2^50 B = 1.1 PB per GPU) and far enough below 2^63 that no int64 intermediate overflows: the
# largest intermediate is a KV-cache product, the bytes × 8 × the bits' denominator (< 2^13 for every format).
SIZE_LIMIT_BYTES = 2**50


def prefill_shape(batch: int, prompt: int, chunk: int | None) -> tuple[int, int]:
    """(sequences, tokens each) that one prefill forward holds at once: everything, or one chunk of at most
    ``chunk`` tokens when the runtime prefills in chunks (whole sequences while they fit, else part of one)."""
    if chunk is None:
        return batch, prompt
    whole, one = batch * prompt <= chunk, prompt <= chunk  # all sequences fit a chunk; one sequence does
    return where(whole, batch, where(one, chunk // prompt, 1)), where(whole | one, prompt, chunk)


def rank_kv_layers(arch: Architecture, rt: Runtime, tp: int, batch: int, tokens: int, *,
                   hold_all: bool = False) -> list[KvLayers]:
    """The KV cache one of ``tp`` ranks holds for ``batch`` sequences of ``tokens``, by window (none: an encoder);
    ``hold_all``: every layer holding all ``tokens``, its window not applied yet."""
    if not arch.causal:
        return []
    return kv_cache_layers(arch, tokens, batch, rt.kv_format, decompressed_mla=rt.mla_layout == "decompressed",
                           kv_heads_divisor=kv_heads_divisor(arch, tp), hold_all=hold_all)


def rank_kv_bytes(arch: Architecture, rt: Runtime, tp: int, batch: int, tokens: int) -> int:
    """Total of `rank_kv_layers`."""
    return sum(g.bytes for g in rank_kv_layers(arch, rt, tp, batch, tokens))


def peak_kv_layers(arch: Architecture, rt: Runtime, tp: int, batch: int, prompt: int, output: int) -> list[KvLayers]:
    """The KV cache one rank holds at its largest, by window: the windowed cache of prompt + output tokens, or —
    where the runtime keeps every prompt token in every layer right after prefill (the profile's
    ``sliding_window_prefill_full``: transformers' DynamicCache crops windows only at its next update) and that
    is more — every layer holding the whole prompt. The parts always add up to the total the footprint counts."""
    windowed = rank_kv_layers(arch, rt, tp, batch, prompt + output)
    if not (rt.profile.sliding_window_prefill_full and arch.layer_windows):
        return windowed
    prefill = rank_kv_layers(arch, rt, tp, batch, prompt, hold_all=True)
    full = sum(g.bytes for g in prefill) > sum(g.bytes for g in windowed)
    return [KvLayers(a.window, a.layers, where(full, b.tokens, a.tokens), where(full, b.bytes, a.bytes))
            for a, b in zip(windowed, prefill, strict=True)]


@dataclass(frozen=True)
class GpuMemory:
    """Bytes on one tensor-parallel rank; ``kv`` and ``activation`` are None for a model known only by its size."""

    weights: int
    kv: int | None
    activation: int | None
    overhead: int
    per_gpu: int
    state: int = 0  # Mamba-2 / gated-DeltaNet state of every sequence (`estimator.model.state`), beside kv

    def across(self, tp: int) -> GpuMemory:
        """The same figures summed over ``tp`` identical ranks."""
        return GpuMemory(self.weights * tp, None if self.kv is None else self.kv * tp,
                         None if self.activation is None else self.activation * tp, self.overhead * tp,
                         self.per_gpu * tp, self.state * tp)


def activation_peak(arch: Architecture, profile: EfficiencyProfile, batch: int, tokens: int, *, element_bytes: int,
                    logits_all: bool, tensor_parallel: int = 1) -> ActivationPeak:
    """`memory.prefill_activation_peak` as ``profile``'s runtime runs the prefill: its logits upcast, its eager
    code's temporaries, and the attention kernel it reaches (`attention_kernels`: the math kernel's scores, the
    sliding mask once the prompt reaches a window)."""
    return prefill_activation_peak(
        arch, batch, tokens, element_bytes=element_bytes, logits_all=logits_all,
        logits_fp32=profile.logits_fp32_upcast, tensor_parallel=tensor_parallel,
        eager_activations=profile.eager_activation_temporaries,
        eager_attention=runs_math_attention(arch, profile, fp32=element_bytes == 4, tokens=tokens),
        explicit_mask=prefill_masked_attention(arch, profile, tokens))


def memory_per_gpu(model: ModelSpec, gpu: GpuSpec, rt: Runtime, tp: int, batch: int, prompt: int,
                   output: int) -> GpuMemory:
    """Memory on each of ``tp`` ranks of ``gpu`` for ``batch`` sequences of ``prompt`` + ``output`` tokens."""
    arch = model.arch
    if arch is None:
        assert model.generic_params is not None
        weights = math.ceil(generic_weights_bytes(model.generic_params, rt.weight_format) / tp)
        kv = activation = None
        dynamic = state = 0
    else:
        weights = sharded_weights_bytes(arch, rt.weight_format, tp)
        kv = sum(g.bytes for g in peak_kv_layers(arch, rt, tp, batch, prompt, output))
        shape_batch, shape_tokens = prefill_shape(batch, prompt, rt.profile.prefill_chunk_tokens)
        activation = activation_peak(arch, rt.profile, shape_batch, shape_tokens,
                                     element_bytes=rt.activation_bytes_per_element, logits_all=rt.logits == "all",
                                     tensor_parallel=tp).bytes
        # recurrent state: fixed per sequence; its heads split over the TP ranks as attention heads do (vLLM)
        state = -(-state_bytes(arch, batch, rt.activation_bytes_per_element) // tp)
        dynamic = kv + state + activation
    overhead = runtime_overhead_bytes(gpu.memory_bytes, rt.profile, tensor_parallel=tp, dynamic_bytes=dynamic)
    return GpuMemory(weights, kv, activation, overhead, weights + dynamic + overhead, state)


def within_size_limit(model: ModelSpec, gpu: GpuSpec, rt: Runtime, tp: int, batch: int, prompt: int,
                      output: int) -> bool:
    """Whether the per-GPU memory stays below `SIZE_LIMIT_BYTES`, judged by the same sum in float64 (which cannot
    wrap around): where it does, the int64 evaluation of the same point is exact. Always true for Python ints."""
    if not is_array(batch + prompt + output):
        return True
    size = memory_per_gpu(model, gpu, rt, tp, as_float(batch), as_float(prompt), as_float(output)).per_gpu
    return size < SIZE_LIMIT_BYTES


def fits_per_gpu(model: ModelSpec, gpu: GpuSpec, rt: Runtime, tp: int, batch: int, prompt: int,
                 output: int) -> bool:
    """Whether the per-GPU memory fits ``gpu``, exactly.

    On arrays (of one shape) the float64 sum decides every point more than `_NEAR` × capacity away from the
    capacity (its rounding error is below 10⁻¹⁰ of the sum's largest product, 2¹³ × the total at most, so it cannot
    flip those) and cannot wrap around; the exact int64 sum decides the rest, all far below `SIZE_LIMIT_BYTES`.
    """
    capacity = gpu.memory_bytes
    if not is_array(batch + prompt + output):
        return memory_per_gpu(model, gpu, rt, tp, batch, prompt, output).per_gpu <= capacity
    size = memory_per_gpu(model, gpu, rt, tp, as_float(batch), as_float(prompt), as_float(output)).per_gpu
    fits = size <= capacity
    if not is_array(fits):  # no term depends on the point (a model known only by its size): exact ints
        return fits
    near = (abs(size - capacity) <= capacity * _NEAR).nonzero()[0]  # type: ignore[attr-defined]
    if len(near):
        exact = memory_per_gpu(model, gpu, rt, tp, batch[near], prompt[near], output[near])  # type: ignore[index]
        fits[near] = exact.per_gpu <= capacity  # type: ignore[index]
    return fits


_NEAR = 2.0**-20  # a relative margin 10⁴ × wider than the float64 sum's error
