"""Achievable rates (`estimator.model.rates`, `timing.phase_rates`): the one product of a datasheet peak and a
profile's fraction, the figures a phase picks by its dtype, and a phase timed at rates its caller gives."""

from __future__ import annotations

from dataclasses import replace

from estimator.catalog.registry import default_catalog
from estimator.model.rates import achievable, achievable_bandwidth
from estimator.model.timing import Hardware, PhaseCost, phase_rates, phase_time

HW = Hardware(1e15, 4e12, "HBM3", None, 1, 6e13)


def _cost(fp32: bool = False) -> PhaseCost:
    return PhaseCost(matmul_flops=1e12, attention_flops=2e11, weight_bytes=0.0, kv_bytes=0.0,
                     elementwise_bytes=8e9, layers=0, masked_attention_flops=1e11, fp32=fp32)


def test_bandwidth_is_the_peak_times_the_profiles_fraction_for_the_memory() -> None:
    hf = default_catalog().profiles.get("hf")
    gddr = hf.model_copy(update={"bandwidth_efficiency_by_memory": {"GDDR6": 0.5}})
    assert achievable_bandwidth(4e12, gddr, "GDDR6") == 2e12
    assert achievable_bandwidth(4e12, gddr, "HBM3") == 4e12 * hf.bandwidth_efficiency
    assert achievable(1e15, 0.5) == 5e14


def test_a_phase_picks_its_figures_by_dtype() -> None:
    hf = default_catalog().profiles.get("hf")
    half, full = phase_rates(_cost(), HW, hf), phase_rates(_cost(fp32=True), HW, hf)
    assert hf.masked_attention_flop_efficiency is not None
    assert (half.matmul, half.attention, half.masked_attention) == (
        1e15 * hf.matmul_flop_efficiency, 1e15 * hf.attention_flop_efficiency,
        1e15 * hf.masked_attention_flop_efficiency)
    assert hf.fp32_matmul_flop_efficiency is not None and hf.fp32_attention_flop_efficiency is not None
    assert full.matmul == 1e15 * hf.fp32_matmul_flop_efficiency
    assert full.attention == full.masked_attention == 1e15 * hf.fp32_attention_flop_efficiency
    assert half.math_attention == 6e13 * hf.fp32_matmul_flop_efficiency  # the card's fp32 peak
    assert half.bandwidth == half.kv_bandwidth == 4e12 * hf.bandwidth_efficiency


def test_a_phase_is_timed_at_the_rates_its_caller_gives() -> None:
    """A training step times its GEMMs at its own figure: only the GEMM term moves."""
    hf = default_catalog().profiles.get("hf")
    own = phase_time(_cost(), HW, hf)
    rates = phase_rates(_cost(), HW, hf)
    given = phase_time(_cost(), HW, hf, replace(rates, matmul=2e14))
    assert given.gemm_s == 1e12 / 2e14
    assert own.gemm_s == 1e12 / rates.matmul
    assert given.attention_s == own.attention_s == 2e11 / rates.attention + 1e11 / rates.masked_attention
    assert given.elementwise_s == own.elementwise_s
    assert given.compute_s == 2e11 / rates.attention + 1e12 / 2e14 + 1e11 / rates.masked_attention
