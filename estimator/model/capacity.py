"""Capacity: the fewest GPUs, the largest batch and the longest context that fit, found by solving, not scanning.

Memory grows monotonically with batch (weights are constant; the KV cache, the prefill activation peak and the
allocator slack on them only grow: under chunked prefill a chunk holds min(batch, chunk // prompt) whole sequences,
and that count stops growing exactly where the batch stops fitting in the chunk). So "fits" is true up to some
batch and false beyond it, and `largest_true` finds that batch with a doubling search and a bisection: about
2 × log2(answer) evaluations of the exact memory function, never a scan.

Memory is NOT monotonic in prompt length under chunked prefill: a chunk of C tokens holds C // prompt whole
sequences, so one more prompt token can drop a whole sequence from the chunk and the activation peak falls by more
than the KV cache grows (C = 8192, batch 2: 2 × 4096 tokens at prompt 4096, 1 × 4097 at 4097). It is monotonic on
each range of prompts where the chunk's shape keeps its sequence count, q = C // prompt (and past C, where the
chunk is one sequence's C tokens): `prompt_pieces` lists those ranges, and `max_context_tokens` searches the
highest range whose first prompt fits — O(√C) ranges, each one evaluation, then one bisection inside.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from estimator.catalog.architecture import ModelSpec
from estimator.catalog.specs import GpuSpec
from estimator.model.elementwise import any_true, distinct, is_array, logical_not, maximum, minimum, numpy_module, where
from estimator.model.footprint import fits_per_gpu
from estimator.model.parallel import tensor_parallel_degrees
from estimator.model.runtime import Runtime
from estimator.report import MAX_BATCH, MAX_TOKENS


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
        fits_at = _fits_by_batch(model, gpu, rt, batch, prompt, output)
        required, todo = 0 * batch, (0 * batch == 0).nonzero()[0]  # type: ignore[attr-defined]
        for tp in tensor_parallel_degrees(model):
            if not len(todo):
                break
            fits = fits_at(tp, todo) & (todo >= 0)  # an array even where no term depends on the point
            required[todo[fits]] = tp  # type: ignore[index]
            todo = todo[logical_not(fits)]
        return required
    for tp in tensor_parallel_degrees(model):
        if fits_per_gpu(model, gpu, rt, tp, batch, prompt, output):
            return tp
    return 0


_PER_PAIR = 32  # points per (prompt, output) pair from which `_fits_by_batch` searches the batch instead


def _fits_by_batch(model: ModelSpec, gpu: GpuSpec, rt: Runtime, batch: Any, prompt: Any,
                   output: Any) -> Callable[[int, Any], Any]:
    """``fits(tp, index)``: `fits_per_gpu` over ``tp`` ranks at the points ``index`` of the arrays. Where many
    points share a (prompt, output) pair (a sweep grid's batch axis), memory being monotonic in batch (this
    module's docstring says why), each pair's largest fitting batch among the points' distinct batches is found
    by `largest_true` over their sorted list: about 2 × log2(batches) evaluations on the pairs instead of one on
    every point, the same answers."""
    np = numpy_module()
    (up, ip), (uo, io) = distinct(prompt), distinct(output)
    pairs, pair = distinct(ip * len(uo) + io)
    batches, rank = distinct(batch)
    if len(batch) < _PER_PAIR * len(pairs) or len(batches) < 4:
        return lambda tp, index: fits_per_gpu(model, gpu, rt, tp, batch[index], prompt[index], output[index])
    pair_prompt, pair_output = up[pairs // len(uo)], uo[pairs % len(uo)]

    def fits(tp: int, index: Any) -> Any:
        def fits_batch(k: Any) -> Any:  # k: an index into the sorted batches, per pair
            return fits_per_gpu(model, gpu, rt, tp, batches[k], pair_prompt, pair_output)

        low = np.zeros(len(pairs), dtype=np.int64)
        largest: Any = largest_true(fits_batch, low, low + len(batches) - 1)  # -1: not even the smallest fits
        return rank[index] <= largest[pair[index]]

    return fits


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


def prompt_pieces(chunk: int | None, top: int) -> list[tuple[int, int, int]]:
    """(first, last, q) for each range of prompt lengths in [1, ``top``] on which per-GPU memory is monotonic,
    highest first. ``q`` is the chunk's sequence count C // prompt on the range (0 past the chunk: one sequence's
    C tokens); a batch of at most q sequences prefills whole in one chunk (batch × prompt ≤ C) on the range and on
    every range below it, so for that batch everything from 1 to ``last`` is one monotonic range.

    Why each range is monotonic: on it the prefill forward holds a fixed number of sequences of ``prompt`` tokens
    each (batch ≤ q: all of them; batch > q: q of them, since batch × prompt > C there), or past C one sequence's
    C tokens (`footprint.prefill_shape`); every term grows with the tokens a sequence holds.
    """
    if chunk is None:
        return [(1, top, 0)]
    pieces = [(chunk + 1, top, 0)] if top > chunk else []
    last = min(chunk, top)
    while last >= 1:
        q = chunk // last
        first = chunk // (q + 1) + 1  # the smallest prompt with chunk // prompt == q
        pieces.append((first, last, q))
        last = first - 1
    return pieces


_WALK = 4  # pieces tried one evaluation each (most answers lie in the first few); then pieces in growing batches
_BATCH_ENTRIES = 1 << 20  # (element, piece) pairs evaluated at once in `_walk_batched`: tens of MB at most


def longest_prompt(fits: Callable[[int], bool], batch: int, top: int, chunk: int | None,
                   fits_at: Callable[[Any, Any], Any] | None = None) -> int:
    """Largest prompt in [1, ``top``] with ``fits(prompt)`` at ``batch`` sequences, for a memory that is monotonic
    on each of `prompt_pieces` (not across them); 0 when a one-token prompt does not fit.

    The answer lies in the highest piece whose first prompt fits: the pieces are tried from the top, one
    evaluation each, until every element has one, then `largest_true` bisects inside it. Elementwise on arrays
    (``batch`` and ``top`` of one shape), as `largest_true` is. On arrays, with ``fits_at(index, prompt)`` (fits
    for the elements ``index`` at ``prompt``, arrays of one length), the pieces after the first `_WALK` are tried
    many at once for the elements still searching (`_walk_batched`): the same answers in a few evaluations instead
    of one per piece (O(√C) of them)."""
    top = top + 0 * batch
    first, last = 0 * top, 0 * top  # the piece each element's answer lies in; last = 0: none found yet
    open_ = first == 0
    highest = int(top.max() if is_array(top) else top)  # type: ignore[attr-defined]
    pieces = prompt_pieces(chunk, highest)
    for n, (low, high, q) in enumerate(pieces):
        if n == _WALK and fits_at is not None and is_array(top):
            first, last = _walk_batched(fits_at, pieces[n:], batch + 0 * top, top, open_, first, last)
            break
        low_e = where(batch <= q, 1, low)  # whole sequences fit the chunk here and below: one monotonic range
        high_e = minimum(high + 0 * top, top)
        trial = where(open_ & (low_e <= high_e), low_e, 1)
        found = open_ & (low_e <= high_e) & fits(trial)
        first, last = where(found, low_e, first), where(found, high_e, last)
        open_ = open_ & logical_not(found) & logical_not(batch <= q)  # batch ≤ q: nothing lower is left to try
        if not any_true(open_):
            break
    prompt = largest_true(fits, maximum(first, 1 + 0 * top), maximum(last, 1 + 0 * top))
    return where(last < 1, 0, prompt)


def _walk_batched(fits_at: Callable[[Any, Any], Any], pieces: list[tuple[int, int, int]], batch: Any, top: Any,
                  open_: Any, first: Any, last: Any) -> tuple[Any, Any]:
    """The rest of `longest_prompt`'s walk on arrays: for each element still open, the first of ``pieces`` (in
    order) whose first prompt fits, among those up to the piece where its batch prefills whole (``batch <= q``:
    nothing below is tried). Pieces go in batches of 8, 16, 32, … for the elements none has answered yet, each
    batch one `fits_at` call on every (element, piece) pair tried: the walk's answers, in a few calls."""
    np = numpy_module()
    table = np.asarray(pieces, dtype=np.int64)
    first, last = first.copy(), last.copy()
    todo = np.flatnonzero(open_)
    start, width = 0, 2 * _WALK
    while len(todo) and start < len(table):
        low, high, q = (table[start:start + width, i][None, :] for i in range(3))
        rows = max(1, _BATCH_ENTRIES // low.shape[1])
        left = []
        for part in range(0, len(todo), rows):
            index = todo[part:part + rows]
            b, t = batch[index][:, None], top[index][:, None]
            whole = b <= q
            low_e, high_e = np.where(whole, 1, low), np.minimum(high, t)
            tried = ((np.cumsum(whole, axis=1) - whole) == 0) & (low_e <= high_e)  # no whole piece before it
            at, piece = np.nonzero(tried)
            ok = np.zeros(tried.shape, dtype=bool)
            ok[at, piece] = fits_at(index[at], low_e[at, piece])
            hit, k = ok.any(axis=1), ok.argmax(axis=1)
            first[index[hit]], last[index[hit]] = low_e[hit, k[hit]], high_e[hit, k[hit]]
            left.append(index[~hit & ~whole.any(axis=1)])
        todo = np.concatenate(left)
        start, width = start + width, 2 * width
    return first, last


def max_context_tokens(model: ModelSpec, gpu: GpuSpec, rt: Runtime, tp: int, batch: int, output: int) -> int | None:
    """Longest prompt + output that fits at ``batch`` over ``tp`` ranks, the output length held fixed and the
    prompt grown (the prompt sets both the KV cache and the prefill peak); 0 when a one-token prompt does not fit.
    `longest_prompt` finds it without assuming memory monotonic in the prompt (it is not under chunked prefill)."""
    if model.arch is None:
        return None

    def fits(prompt: int) -> bool:
        return fits_per_gpu(model, gpu, rt, tp, batch, prompt, output)

    every_batch, every_output = batch + 0 * output, output + 0 * batch

    def fits_at(index: Any, prompt: Any) -> Any:
        return fits_per_gpu(model, gpu, rt, tp, every_batch[index], prompt, every_output[index])  # type: ignore[index]

    prompt = longest_prompt(fits, batch, MAX_TOKENS - output, rt.profile.prefill_chunk_tokens, fits_at)
    return where(prompt < 1, 0, prompt + output)


def within_position_limit(model: ModelSpec, tokens: int | None) -> int | None:
    """``tokens`` (a `max_context_tokens` figure, memory alone) capped at the model's own context window, its
    config's ``max_position_embeddings``, where it has one: no engine serves past it (vLLM refuses a longer
    max_model_len), so memory room beyond it is no context a user can use."""
    limit = None if model.arch is None else model.arch.max_position_embeddings
    return tokens if tokens is None or not limit else minimum(tokens, limit + 0 * tokens)
