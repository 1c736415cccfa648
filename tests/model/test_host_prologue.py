"""The host's preamble before an eager prefill's first kernel (issue 15, fourth pass: timing.phase_time, the hf
profile's host_prologue_s, read from seed 5's kernel timings): a GPU-bound prefill waits through it, a host-bound
one holds it in its host time, and a decode step or a profile without a host floor counted in operations takes
none."""

from __future__ import annotations

import pytest

from estimator import default_catalog
from estimator.model.timing import Hardware, PhaseCost, phase_time

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
    # GPU: 0.2 s of GEMMs + 2 layers × 41 µs + the preamble 1.527 ms; host: 104 operations × 16.94 µs = 1.76 ms
    assert t.prologue_s == 1.527e-3
    assert t.expected_s == pytest.approx(0.2 + 2 * 4.1e-5 + 1.527e-3, rel=1e-12)
    # the same phase as a decode step (no preamble modelled there: its GPU terms were fitted on step totals)
    assert phase_time(_cost(104, prologue=False), HW, hf).expected_s == pytest.approx(0.2 + 2 * 4.1e-5, rel=1e-12)


def test_a_host_bound_prefill_takes_the_host_time_which_holds_the_preamble() -> None:
    hf = default_catalog().profiles.get("hf")
    t = phase_time(_cost(20_000, prologue=True), HW, hf)
    # host: 20,000 operations × 16.94 µs = 0.3388 s, more than the GPU's 0.2 s + 82 µs + 1.527 ms
    assert t.expected_s == pytest.approx(20_000 * 1.694e-5, rel=1e-12)


def test_no_preamble_without_a_host_floor_counted_in_operations() -> None:
    catalog = default_catalog()
    for name in ("hf-graph", "optimized"):
        t = phase_time(_cost(104, prologue=True), HW, catalog.profiles.get(name))
        assert t.prologue_s == 0.0
