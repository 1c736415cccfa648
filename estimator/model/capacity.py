"""Capacity: the fewest GPUs, the largest batch and the longest context that fit, found by solving, not scanning.

Every memory term grows monotonically with batch and with tokens (weights are constant; the KV cache, the
prefill activation peak and the allocator slack on them only grow), so "fits" is true up to some integer and
false beyond it. `largest_true` finds that integer with a doubling search and a bisection: about
2 × log2(answer) evaluations of the exact memory function, never a scan.
"""

from __future__ import annotations

from collections.abc import Callable

from estimator.catalog.architecture import ModelSpec
from estimator.catalog.specs import GpuSpec
from estimator.model.footprint import memory_per_gpu
from estimator.model.parallel import tensor_parallel_degrees
from estimator.model.runtime import Runtime

MAX_TOKENS = 100_000_000  # far beyond any context window; rejects typos such as 1e12
MAX_BATCH = 1_000_000


def largest_true(predicate: Callable[[int], bool], low: int, high: int) -> int:
    """Largest n in [low, high] with ``predicate(n)``, for a predicate that is true up to a point and false after;
    ``low - 1`` when it is false at ``low``.

    Doubling from ``low`` brackets the answer in log2(answer) steps (small answers stay cheap), then bisection
    narrows the bracket in as many again.
    """
    if low > high or not predicate(low):
        return low - 1
    good, step = low, 1
    bad = high + 1
    while good + step <= high:  # doubling: find a failing point above the last passing one
        if predicate(good + step):
            good += step
            step *= 2
        else:
            bad = good + step
            break
    while bad - good > 1:  # bisection on (good, bad): predicate(good) holds, predicate(bad) does not (or bad > high)
        mid = (good + bad) // 2
        if predicate(mid):
            good = mid
        else:
            bad = mid
    return good


def gpus_required(model: ModelSpec, gpu: GpuSpec, rt: Runtime, batch: int, prompt: int, output: int) -> int | None:
    """Fewest GPUs (a valid tensor-parallel degree) whose per-GPU memory fits the card; None if none does."""
    for tp in tensor_parallel_degrees(model):
        if memory_per_gpu(model, gpu, rt, tp, batch, prompt, output).per_gpu <= gpu.memory_bytes:
            return tp
    return None


def max_batch(model: ModelSpec, gpu: GpuSpec, rt: Runtime, tp: int, prompt: int, output: int) -> int | None:
    """Largest batch whose per-GPU memory at ``prompt`` and ``output`` tokens fits ``gpu`` over ``tp`` ranks (0
    when not even one sequence fits); None for a model without an architecture (no KV cache or activations to
    grow)."""
    if model.arch is None:
        return None

    def fits(batch: int) -> bool:
        return memory_per_gpu(model, gpu, rt, tp, batch, prompt, output).per_gpu <= gpu.memory_bytes

    return max(largest_true(fits, 1, MAX_BATCH), 0)


def max_context_tokens(model: ModelSpec, gpu: GpuSpec, rt: Runtime, tp: int, batch: int, output: int) -> int | None:
    """Longest prompt + output that fits at ``batch`` over ``tp`` ranks, the output length held fixed and the
    prompt grown (the prompt sets both the KV cache and the prefill peak); 0 when a one-token prompt does not fit."""
    if model.arch is None:
        return None

    def fits(prompt: int) -> bool:
        return memory_per_gpu(model, gpu, rt, tp, batch, prompt, output).per_gpu <= gpu.memory_bytes

    prompt = largest_true(fits, 1, MAX_TOKENS - output)
    return 0 if prompt < 1 else prompt + output
