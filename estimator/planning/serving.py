"""Serving as engines serve: continuous batching with a token budget per step (chunked prefill).

A serving engine (vLLM, SGLang, TensorRT-LLM) runs one forward pass per step over at most ``step_tokens`` tokens:
one decode token for each of the ``batch`` running sequences, and the rest of the budget for prompt chunks of
newly arrived requests (Agrawal et al. 2024, "Taming throughput-latency tradeoff in LLM inference with
Sarathi-Serve"; vLLM's chunked prefill, ``max_num_batched_tokens``). So no request waits for one giant prefill of
every prompt; a new prompt is prefilled a chunk per step while the others decode.

The model, for one replica in steady state at ``batch`` sequences of ``prompt`` + ``output`` tokens:

- chunk        c = min(step_tokens − batch, prompt) prompt tokens per step;
- prefill work  every sequence needs ``prompt`` prefill tokens per ``output`` decoded ones, so each round of
                decode steps (one token for every sequence) carries P = batch × prompt ÷ output prefill tokens;
- TPOT          = decode step at ``batch`` + P × (chunk time ÷ c)        (chunk time: a ``c``-token prefill);
- tokens/s      = batch ÷ TPOT;
- arrivals      λ = batch ÷ (output × TPOT) requests/s (a finished sequence is replaced by a new one), and the
                prefill server is busy ρ = λ × prompt × chunk time ÷ c of the time (must stay below 1);
- TTFT          = S × (1 + ρ ÷ (2 (1 − ρ))), S = ⌈prompt ÷ c⌉ × (decode step + chunk time): one prompt's chunks, each
                riding a step with the decodes, plus the mean wait of an M/D/1 queue (Pollaczek–Khinchine) for
                prompts that arrive while another is being prefilled.

Every input is a float (seconds, tokens), so the function is pure arithmetic; the planner measures the decode step
and the chunk time with `estimate` on the replica's GPUs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

DEFAULT_STEP_TOKENS = 8192  # vLLM's max_num_batched_tokens for its OpenAI server on data-center GPUs (vLLM ≥ 0.8)


@dataclass(frozen=True)
class Serving:
    """One replica's steady state under continuous batching."""

    batch: int
    chunk_tokens: int
    time_to_first_token_s: float
    time_per_output_token_s: float | None  # None without output tokens
    tokens_per_s: float | None
    prefill_busy_fraction: float
    requests_per_s: float | None


class Overloaded(Exception):
    """The replica cannot keep up: the batch fills the step budget, or prefill work exceeds the time it has."""


def chunk_tokens(step_tokens: int, batch: int, prompt: int) -> int:
    """Prompt tokens one step carries beside ``batch`` decode tokens: what is left of the budget, at most one prompt."""
    room = step_tokens - batch
    if room < 1:
        raise Overloaded(f"{batch} decoding sequences fill the {step_tokens}-token step budget (raise --step-tokens)")
    return min(room, prompt)


def serve(*, batch: int, prompt: int, output: int, step_tokens: int, decode_step_s: float,
          chunk_s: float) -> Serving:
    """TTFT, TPOT and tokens/s of one replica (see the module docstring); ``decode_step_s`` is one decode step of
    ``batch`` sequences and ``chunk_s`` one prefill of a chunk of `chunk_tokens` tokens, both on the replica."""
    c = chunk_tokens(step_tokens, batch, prompt)
    per_token_s = chunk_s / c
    service_s = math.ceil(prompt / c) * ((decode_step_s if output else 0.0) + chunk_s)
    if output == 0:  # prefill only (an encoder, or no generation): one prompt at a time per step budget
        return Serving(batch, c, service_s, None, None, 1.0, None)
    tpot = decode_step_s + batch * prompt / output * per_token_s
    arrivals = batch / (output * tpot)
    busy = arrivals * prompt * per_token_s
    if busy >= 1:
        raise Overloaded(f"prefill of new prompts would need {busy:.0%} of the replica's time")
    ttft = service_s * (1 + busy / (2 * (1 - busy)))
    return Serving(batch, c, ttft, tpot, batch / tpot, busy, arrivals)
