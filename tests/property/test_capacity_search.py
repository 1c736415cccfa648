"""The reported max batch and max context are the largest that fit: n fits, n + 1 does not, and no larger value in
a scanned range fits. The scan is brute force on numpy arrays (`footprint.fits_per_gpu` elementwise),
independent of the search it checks; memory is not monotonic in the prompt under chunked prefill, so a search
that assumes it would fail here (`capacity.prompt_pieces` says why and where).
"""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from estimator import InferenceWorkload, estimate
from estimator.catalog.registry import Catalog, default_catalog
from estimator.model.capacity import max_context_tokens, prompt_pieces
from estimator.model.footprint import fits_per_gpu
from estimator.model.parallel import tensor_parallel_degrees
from estimator.report import MAX_BATCH, MAX_TOKENS

pytestmark = pytest.mark.property

SCAN = 3 * 8192 + 4096  # three prefill chunks of the optimized profile and more above the answer


@cache
def _catalog() -> Catalog:
    return default_catalog()


MODELS = sorted(m.name for m in _catalog().models if m.arch is not None)
GPUS = sorted(g.name for g in _catalog().gpus)

jobs = st.fixed_dictionaries({
    "model": st.sampled_from(MODELS), "gpu": st.sampled_from(GPUS), "pick": st.integers(0, 3),
    "batch": st.sampled_from([1, 2, 3, 5, 8, 13, 32, 64, 200, 1000]), "prompt": st.integers(1, 32_768),
    "output": st.sampled_from([0, 1, 16, 500, 4096]), "dtype": st.sampled_from(["bf16", "fp8", "awq-int4"]),
    "profile": st.sampled_from(["optimized", "optimized", "hf"]),
})


def _setup(job: dict[str, object]) -> tuple[object, object, InferenceWorkload]:
    c = _catalog()
    model, gpu = c.models.get(str(job["model"])), c.gpus.get(str(job["gpu"]))
    degrees = list(tensor_parallel_degrees(model))
    tp = degrees[int(str(job["pick"])) % min(len(degrees), 4)]
    w = InferenceWorkload(batch=job["batch"], prompt_tokens=job["prompt"], output_tokens=job["output"],
                          weight_format=c.formats.get(str(job["dtype"])), kv_format=c.formats.get("bf16"),
                          profile=c.profiles.get(str(job["profile"])), tensor_parallel=tp)
    return model, gpu, w


def _fits_anywhere(model: object, gpu: object, w: InferenceWorkload, batch: np.ndarray, prompt: np.ndarray,
                   output: np.ndarray) -> bool:
    ok = fits_per_gpu(model, gpu, w, w.tensor_parallel, batch, prompt, output)  # type: ignore[arg-type]
    return bool(np.any(ok))


@settings(max_examples=60, deadline=None)
@given(jobs)
def test_max_context_is_the_longest_that_fits(job: dict[str, object]) -> None:
    model, gpu, w = _setup(job)
    m = estimate(model, gpu, w).memory  # type: ignore[arg-type]
    n, b, o, tp = m.max_context_tokens_by_memory, w.batch, w.output_tokens, w.tensor_parallel
    assert n is not None
    prompt = max(n - o, 0)  # the longest prompt that fits (0: none)
    top = MAX_TOKENS - o
    if prompt > 0:
        assert fits_per_gpu(model, gpu, w, tp, b, prompt, o)  # type: ignore[arg-type]
    if prompt < top:
        assert not fits_per_gpu(model, gpu, w, tp, b, prompt + 1, o)  # type: ignore[arg-type]
    above = np.arange(prompt + 1, min(top, prompt + SCAN) + 1, dtype=np.int64)
    if len(above):
        assert not _fits_anywhere(model, gpu, w, np.full_like(above, b), above, np.full_like(above, o))


@settings(max_examples=60, deadline=None)
@given(jobs)
def test_max_batch_is_the_largest_that_fits(job: dict[str, object]) -> None:
    model, gpu, w = _setup(job)
    m = estimate(model, gpu, w).memory  # type: ignore[arg-type]
    n, p, o, tp = m.max_batch, w.prompt_tokens, w.output_tokens, w.tensor_parallel
    assert n is not None
    if n > 0:
        assert fits_per_gpu(model, gpu, w, tp, n, p, o)  # type: ignore[arg-type]
    if n < MAX_BATCH:
        assert not fits_per_gpu(model, gpu, w, tp, n + 1, p, o)  # type: ignore[arg-type]
    above = np.arange(n + 1, min(MAX_BATCH, n + 4096) + 1, dtype=np.int64)
    if len(above):
        assert not _fits_anywhere(model, gpu, w, above, np.full_like(above, p), np.full_like(above, o))


@settings(max_examples=40, deadline=None)
@given(chunk=st.integers(1, 20_000), top=st.integers(1, 50_000))
def test_prompt_pieces_cover_every_prompt_once_with_one_chunk_shape_each(chunk: int, top: int) -> None:
    pieces = prompt_pieces(chunk, top)
    covered = [p for first, last, _ in reversed(pieces) for p in range(first, last + 1)]
    assert covered == list(range(1, top + 1))  # every prompt in [1, top], in order, once
    for first, last, q in pieces:
        assert {chunk // p if p <= chunk else 0 for p in (first, last)} == {q}
    assert len(pieces) <= 2 * chunk**0.5 + 2  # distinct values of chunk // prompt: at most 2√C


def test_max_context_not_the_longest_that_fits_under_chunked_prefill(catalog: Catalog) -> None:
    """Regression (max_context_tokens was not the longest context that fits, memory not being monotonic
    in prompt length under chunked prefill, which bisection assumed). qwen3-30b-a3b in AWQ int4 on a 24 GB
    RX 7900 XTX, 64 sequences, the optimized profile's 8192-token chunk: prompts 1008-1024 do not fit (the chunk
    holds 8 sequences: 8192 // 1024 = 8), 1025-1028 do (7 sequences: 8192 // 1025 = 7, a smaller activation
    peak), so the answer is 1028 — bisection stopped at 1007."""
    c = default_catalog()
    model, gpu = c.models.get("qwen3-30b-a3b"), c.gpus.get("AMD Radeon RX 7900 XTX 24GB")
    w = InferenceWorkload(batch=64, prompt_tokens=1, weight_format=c.formats.get("awq-int4"),
                          kv_format=c.formats.get("bf16"), profile=c.profiles.get("optimized"))
    fits = [fits_per_gpu(model, gpu, w, 1, 64, p, 0) for p in (1007, 1008, 1024, 1025, 1028, 1029)]
    assert fits == [True, False, False, True, True, False]
    assert max_context_tokens(model, gpu, w, 1, 64, 0) == 1028
    both: Any = max_context_tokens(model, gpu, w, 1, np.array([64, 64]), np.array([0, 0]))  # type: ignore[arg-type]
    assert list(both) == [1028, 1028]  # the sweep's elementwise search agrees
