"""The host's preamble and an fp32 graph decode's cache walk (docs/accuracy.md, "Host dispatch"; timing.phase_time):
the host's preamble before an eager prefill's first kernel (the hf profile's host_prologue_s, read from seed 5's kernel
timings) — a GPU-bound prefill waits through it, a host-bound one holds it in its host time, a decode step or a profile
without a host floor counted in operations takes none — and an fp32 CUDA-graph decode's walk over its cache
(hf-graph)."""

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
    """hf-graph's fp32 cache attention (timing.cache_attention_s; the memory-efficient kernel measured alone,
    docs/accuracy.md, "Decode attention kernels"): per layer the variant's fixed time, plus its time per key position
    once per wave of the blocks reading distinct memory, replacing the KV read."""
    graph = default_catalog().profiles.get("hf-graph")
    assert [(k.max_head_dim, k.fixed_s, k.key_s, k.streams_per_wave) for k in graph.fp32_cache_attention] == [
        (64, 1.21e-5, 1.09e-7, 198), (128, 6.69e-6, 1.03e-7, 132), (None, 2.34e-5, 1.51e-7, 198)]

    def walk(streams: float, head_dim: int, fp32: bool = True) -> float:
        # 2 layers × 1,000 positions = 2,000 keys; a 1 GB KV read beside them
        cost = PhaseCost(matmul_flops=0, attention_flops=0, weight_bytes=0, kv_bytes=1e9, elementwise_bytes=0,
                         layers=2, fp32=fp32, cache_keys=2_000, cache_streams=streams, cache_head_dim=head_dim)
        return phase_time(cost, HW, graph).kv_s

    # batch 4 × 8 heads = 32 blocks, one wave of the 64x128 kernel: 2 × 6.69 µs + 2,000 × 103 ns = 219.38 µs
    assert walk(32, 128) == pytest.approx(219.38e-6, rel=1e-12)
    # 300 blocks are ⌈300 ÷ 132⌉ = 3 waves: 13.38 µs + 3 × 206 µs
    assert walk(300, 128) == pytest.approx(631.38e-6, rel=1e-12)
    # head dim 64 and 256 run the other variants: 2 × 12.1 µs + 218 µs; 2 × 23.4 µs + 2 waves of 302 µs
    assert walk(32, 64) == pytest.approx(242.2e-6, rel=1e-12)
    assert walk(300, 256) == pytest.approx(650.8e-6, rel=1e-12)
    # in 16 bits the flash kernel runs: the KV read at the profile's rate stays (1 GB at 1 TB/s × 0.864)
    assert walk(32, 128, fp32=False) == pytest.approx(1e9 / (1e12 * graph.bandwidth_fraction("HBM3e")))
    # the eager hf profile runs the same kernels: the same figures
    hf = default_catalog().profiles.get("hf")
    cost = PhaseCost(0, 0, 0, 1e9, 0, 2, fp32=True, cache_keys=2_000, cache_streams=32, cache_head_dim=128)
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
