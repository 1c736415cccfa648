"""Achievable rates: a datasheet peak × the fraction of it the efficiency profile says a kind of work reaches.

Every time in `estimator.model.timing` and `estimator.training` divides work by one of these: bytes by an achievable
bandwidth, FLOPs by an achievable FLOP rate. This module is the one place the peak meets the profile's fraction.
"""

from __future__ import annotations

from dataclasses import dataclass

from estimator.catalog.profiles import EfficiencyProfile
from estimator.catalog.specs import MemoryType


def achievable(peak: float, fraction: float) -> float:
    """A rate the kernels reach: the datasheet's ``peak`` (FLOP/s or bytes/s) × the profile's ``fraction`` of it."""
    return peak * fraction


def achievable_bandwidth(bandwidth_bytes_per_s: float, profile: EfficiencyProfile, memory_type: str) -> float:
    """Bytes per second streaming kernels reach on this memory technology (the profile's fraction of the peak)."""
    return achievable(bandwidth_bytes_per_s, profile.bandwidth_fraction(memory_type))  # type: ignore[arg-type]


def kv_read_fraction(profile: EfficiencyProfile, memory_type: MemoryType, *, grouped_kv: bool) -> float:
    """Achievable fraction of peak bandwidth for reading the KV cache in a decode step.

    A profile's ``kv_read_efficiency`` applies to grouped-query attention only (one rate for every group). No
    shipped profile states one: the `hf` profiles, which had 0.037 for transformers' repeat_kv, now time that copy
    and the kernel's reads of it apart (`timing.repeat_kv_s`, `decode_attention.repeated`; docs/accuracy.md,
    "Decode attention kernels").
    """
    if grouped_kv and profile.kv_read_efficiency is not None:
        return profile.kv_read_efficiency
    return profile.bandwidth_fraction(memory_type)


def attention_flop_fraction(profile: EfficiencyProfile, *, masked: bool) -> float:
    """Achievable fraction of peak FLOP/s for attention: the masked-kernel figure where the runtime passes a mask."""
    if masked and profile.masked_attention_flop_efficiency is not None:
        return profile.masked_attention_flop_efficiency
    return profile.attention_flop_efficiency


def matmul_flop_fraction(profile: EfficiencyProfile, *, fp32: bool) -> float:
    """Achievable fraction of peak FLOP/s for GEMMs: fp32 GEMMs (CUDA cores, no tensor cores) reach a larger share
    of their lower peak than 16-bit tensor-core GEMMs of theirs, where the profile gives the fp32 figure."""
    if fp32 and profile.fp32_matmul_flop_efficiency is not None:
        return profile.fp32_matmul_flop_efficiency
    return profile.matmul_flop_efficiency


@dataclass(frozen=True)
class Rates:
    """The achievable rates one phase's work runs at on one GPU (`timing.phase_rates` picks them from the profile;
    a training step puts its own figure for the GEMMs, `replace(rates, matmul=...)`)."""

    matmul: float  # FLOP/s of the linear layers' GEMMs timed by their FLOPs
    attention: float  # FLOP/s of the fused attention kernel
    masked_attention: float  # FLOP/s of the attention kernel given an explicit mask
    math_attention: float  # FLOP/s of the math SDPA kernel's GEMMs (fp32 whatever the model's dtype)
    bandwidth: float  # bytes/s of weights, activations and elementwise kernels
    kv_bandwidth: float  # bytes/s of a decode step's KV read
