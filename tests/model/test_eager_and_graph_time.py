"""Issue 15's fourth pass (docs/accuracy.md items 11 and 13, timing.phase_time): the host's preamble before an eager
prefill's first kernel (the hf profile's host_prologue_s, read from seed 5's kernel timings) — a GPU-bound prefill
waits through it, a host-bound one holds it in its host time, a decode step or a profile without a host floor
counted in operations takes none — and an fp32 CUDA-graph decode's walk over its cache (hf-graph)."""

from __future__ import annotations

import pytest

from estimator import default_catalog
from estimator.model.timing import Hardware, PhaseCost, PhaseTime, expected_time, phase_time

# 1 PFLOP/s and 1 TB/s, one GPU: round numbers whose quotients are exact in the comments below
HW = Hardware(peak_flop_per_s=1e15, bandwidth_bytes_per_s=1e12, memory_type="HBM3e", link_bytes_per_s=None,
              tensor_parallel=1)


def _cost(host_ops: float, *, prologue: bool) -> PhaseCost:
    # 1.3e14 matrix FLOPs at 0.65 of 1e15 = 0.2 s of GEMMs; no bytes, no attention
    return PhaseCost(matmul_flops=1.3e14, attention_flops=0, weight_bytes=0, kv_bytes=0, elementwise_bytes=0,
                     layers=2, host_ops=host_ops, host_prologue=prologue)


def test_a_gpu_bound_prefill_waits_through_the_preamble() -> None:
    hf = default_catalog().profiles.get("hf")
    assert hf.host_prologue_s == 1.527e-3  # seed 5's fit rows: wall − kernels' busy time, median
    t = phase_time(_cost(104, prologue=True), HW, hf)
    # GPU: 0.2 s of GEMMs + 2 layers × 41 µs + the preamble 1.527 ms; host: 104 operations × 16.09 µs = 1.67 ms
    assert t.prologue_s == 1.527e-3
    assert t.expected_s == pytest.approx(0.2 + 2 * 4.1e-5 + 1.527e-3, rel=1e-12)
    # the same phase as a decode step (no preamble modelled there: its GPU terms were fitted on step totals)
    assert phase_time(_cost(104, prologue=False), HW, hf).expected_s == pytest.approx(0.2 + 2 * 4.1e-5, rel=1e-12)


def test_a_host_bound_prefill_takes_the_host_time_which_holds_the_preamble() -> None:
    hf = default_catalog().profiles.get("hf")
    t = phase_time(_cost(20_000, prologue=True), HW, hf)
    # host: 20,000 operations × 16.09 µs = 0.3218 s, more than the GPU's 0.2 s + 82 µs + 1.527 ms
    assert t.expected_s == pytest.approx(20_000 * 1.609e-5, rel=1e-12)


def test_no_preamble_without_a_host_floor_counted_in_operations() -> None:
    catalog = default_catalog()
    for name in ("hf-graph", "optimized"):
        t = phase_time(_cost(104, prologue=True), HW, catalog.profiles.get(name))
        assert t.prologue_s == 0.0


def test_an_fp32_graph_decode_walks_its_cache_in_place_of_the_kv_read() -> None:
    """hf-graph's fp32 cache attention (timing.cache_attention_s; the memory-efficient kernel measured alone, item 19
    of docs/accuracy.md): 91.8 ns per key position of every layer plus 0.746 ns per key position × (sequence, head)
    pair, replacing the KV read."""
    graph = default_catalog().profiles.get("hf-graph")
    assert (graph.fp32_cache_attention_key_s, graph.fp32_cache_attention_pair_s) == (9.18e-8, 7.46e-10)
    # 2 layers × 1,000 positions = 2,000 keys; × batch 4 × 8 heads = 64,000 pairs; a 1 GB KV read beside them
    cost = PhaseCost(matmul_flops=0, attention_flops=0, weight_bytes=0, kv_bytes=1e9, elementwise_bytes=0,
                     layers=2, fp32=True, cache_keys=2_000, cache_key_pairs=64_000)
    # 2,000 × 91.8 ns + 64,000 × 0.746 ns = 183.6 µs + 47.744 µs = 231.344 µs
    assert phase_time(cost, HW, graph).kv_s == pytest.approx(231.344e-6, rel=1e-12)
    # in 16 bits the flash kernel runs: the KV read at the profile's rate stays (1 GB at 1 TB/s × 0.864)
    half = PhaseCost(matmul_flops=0, attention_flops=0, weight_bytes=0, kv_bytes=1e9, elementwise_bytes=0,
                     layers=2, cache_keys=2_000, cache_key_pairs=64_000)
    assert phase_time(half, HW, graph).kv_s == pytest.approx(1e9 / (1e12 * graph.bandwidth_fraction("HBM3e")))
    # the eager hf profile runs the same kernels: the same figures
    hf = default_catalog().profiles.get("hf")
    assert phase_time(cost, HW, hf).kv_s == phase_time(cost, HW, graph).kv_s


def test_added_communication_keeps_every_gpu_part() -> None:
    # The host's preamble is part of the GPU's time when more communication is added (an MoE all-to-all): the
    # expected time is recombined by phase_time's own rule, not a copy of it that could drop a term.
    t = PhaseTime(bound_s=0.001, bound="compute", expected_s=0.0, compute_s=0.004, memory_s=0.003,
                  communication_s=0.0005, weights_s=0.002, elementwise_s=0.0005, kv_s=0.0005, fixed_s=0.00025,
                  host_s=0.003, prologue_s=0.0015)
    assert t.gpu_s == 0.004 + 0.0005 + 0.0005 + 0.00025 + 0.0015  # max(compute, weights) + the rest
    later = t.with_communication(0.002)
    assert later.communication_s == 0.0025
    assert later.expected_s == expected_time(t.gpu_s, 0.003, 0.0025, 0.001) == t.gpu_s + 0.0025
    assert t.with_communication(0.0) is t
