"""Continuous batching with a step token budget: exact arithmetic of the scheduler model."""

from __future__ import annotations

import pytest

from estimator.planning.serving import Overloaded, chunk_tokens, serve


def test_chunk_is_what_the_budget_leaves() -> None:
    assert chunk_tokens(8192, 64, 4096) == 4096  # 8,128 tokens left: the whole prompt in one step
    assert chunk_tokens(2048, 48, 4096) == 2000  # 2,048 − 48 decodes
    with pytest.raises(Overloaded, match="fill the 512-token step budget"):
        chunk_tokens(512, 512, 100)


def test_tpot_ttft_and_throughput() -> None:
    s = serve(batch=10, prompt=1000, output=100, step_tokens=510, decode_step_s=0.02, chunk_s=0.05)
    # chunk c = 500; prefill per token 0.05 / 500 = 1e-4 s; per round 10 × 1000 / 100 = 100 prefill tokens
    assert s.chunk_tokens == 500
    assert s.time_per_output_token_s == pytest.approx(0.02 + 100 * 1e-4)  # 0.03 s
    assert s.tokens_per_s == pytest.approx(10 / 0.03)
    # arrivals 10 / (100 × 0.03) = 3.333/s; busy = 3.333 × 1000 × 1e-4 = 1/3
    assert s.prefill_busy_fraction == pytest.approx(1 / 3)
    # service 2 chunks × (0.02 + 0.05) = 0.14 s; M/D/1 wait ρ/(2(1 − ρ)) = 0.25 of it
    assert s.time_to_first_token_s == pytest.approx(0.14 * 1.25)


def test_no_output_is_prefill_only() -> None:
    s = serve(batch=1, prompt=300, output=0, step_tokens=101, decode_step_s=0.0, chunk_s=0.01)
    assert s.time_per_output_token_s is None and s.tokens_per_s is None
    assert s.time_to_first_token_s == pytest.approx(3 * 0.01)  # 300 tokens in chunks of 100
