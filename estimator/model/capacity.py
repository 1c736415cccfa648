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
from estimator.model.elementwise import any_true, is_array, logical_not, maximum, minimum, where
from estimator.model.footprint import fits_per_gpu
from estimator.model.parallel import tensor_parallel_degrees
from estimator.model.runtime import Runtime

MAX_TOKENS = 100_000_000  # far beyond any context window; rejects typos such as 1e12
MAX_BATCH = 1_000_000


def largest_true(predicate: Callable[[int], bool], low: int, high: int) -> int:
    """Largest n in [low, high] with ``predicate(n)``, for a predicate that is true up to a point and false after;
    ``low - 1`` when it is false at ``low``. Elementwise on int64 arrays: one search for every element at once
    (``predicate`` maps an array of trial values to an array of answers).

    Doubling from ``low`` brackets the answer in log2(answer) steps (small answers stay cheap), then bisection
    narrows the bracket in as many again.
    """
    if not is_array(low) and low > high:
        return low - 1
    ok = predicate(low)
    good, bad = where(ok, low, low - 1), where(ok, high + 1, low)  # invariant: predicate(good), not predicate(bad)
    step = 1 + 0 * low
    doubling = ok & (good + step <= high)
    while any_true(doubling):  # find a failing point above the last passing one
        trial = where(doubling, good + step, low)  # settled elements ask at low, a valid input
        ok = predicate(trial)
        good = where(doubling & ok, trial, good)
        bad = where(doubling & logical_not(ok), trial, bad)
        step = where(doubling & ok, 2 * step, step)
        doubling = doubling & ok & (good + step <= high)
    unsettled = bad - good > 1
    while any_true(unsettled):  # bisection on (good, bad)
        mid = where(unsettled, (good + bad) // 2, low)
        ok = predicate(mid)
        good = where(unsettled & ok, mid, good)
        bad = where(unsettled & logical_not(ok), mid, bad)
        unsettled = bad - good > 1
    return good


def fewest_gpus(model: ModelSpec, gpu: GpuSpec, rt: Runtime, batch: int, prompt: int, output: int) -> int:
    """Fewest GPUs (a valid tensor-parallel degree) whose per-GPU memory fits the card; 0 if none does."""
    if is_array(batch):  # the points still without a group, at each degree
        required, todo = 0 * batch, (0 * batch == 0).nonzero()[0]  # type: ignore[attr-defined]
        for tp in tensor_parallel_degrees(model):
            if not len(todo):
                break
            fits = fits_per_gpu(model, gpu, rt, tp, batch[todo], prompt[todo], output[todo])  # type: ignore[index]
            fits = fits & (todo >= 0)  # an array even where no term depends on the point
            required[todo[fits]] = tp  # type: ignore[index]
            todo = todo[logical_not(fits)]
        return required
    for tp in tensor_parallel_degrees(model):
        if fits_per_gpu(model, gpu, rt, tp, batch, prompt, output):
            return tp
    return 0


def gpus_required(model: ModelSpec, gpu: GpuSpec, rt: Runtime, batch: int, prompt: int, output: int) -> int | None:
    """`fewest_gpus` of one point, None when no tensor-parallel group fits."""
    return fewest_gpus(model, gpu, rt, batch, prompt, output) or None


def max_batch(model: ModelSpec, gpu: GpuSpec, rt: Runtime, tp: int, prompt: int, output: int) -> int | None:
    """Largest batch whose per-GPU memory at ``prompt`` and ``output`` tokens fits ``gpu`` over ``tp`` ranks (0
    when not even one sequence fits); None for a model without an architecture (no KV cache or activations to
    grow)."""
    if model.arch is None:
        return None

    def fits(batch: int) -> bool:
        return fits_per_gpu(model, gpu, rt, tp, batch, prompt, output)

    return maximum(largest_true(fits, 1 + 0 * prompt, MAX_BATCH + 0 * prompt), 0)


def max_context_tokens(model: ModelSpec, gpu: GpuSpec, rt: Runtime, tp: int, batch: int, output: int) -> int | None:
    """Longest prompt + output that fits at ``batch`` over ``tp`` ranks, the output length held fixed and the
    prompt grown (the prompt sets both the KV cache and the prefill peak); 0 when a one-token prompt does not fit."""
    if model.arch is None:
        return None

    def fits(prompt: int) -> bool:
        return fits_per_gpu(model, gpu, rt, tp, batch, prompt, output)

    prompt = largest_true(fits, 1 + 0 * batch, MAX_TOKENS - output)
    return where(prompt < 1, 0, prompt + output)


def within_position_limit(model: ModelSpec, tokens: int | None) -> int | None:
    """``tokens`` (a `max_context_tokens` figure, memory alone) capped at the model's own context window, its
    config's ``max_position_embeddings``, where it has one: no engine serves past it (vLLM refuses a longer
    max_model_len), so memory room beyond it is no context a user can use."""
    limit = None if model.arch is None else model.arch.max_position_embeddings
    return tokens if tokens is None or not limit else minimum(tokens, limit + 0 * tokens)
