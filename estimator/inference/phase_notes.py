"""The assumptions a phase's time carries: a host-bound phase's span over the host's states (`host_state`), a decode
step whose profile's attention kernel walks the cache more than once per read of its bytes
(`estimator.model.decode_attention`: how many tiles per KV head, which head-dim width) or, in fp32, key by key, and
the kernels a prefill's or an fp32 decode's GEMMs are timed as."""

from __future__ import annotations

from estimator.catalog.architecture import Architecture
from estimator.catalog.profiles import EfficiencyProfile
from estimator.inference.host_state import host_state_notes
from estimator.model.attention_kernels import math_attention_layers, runs_unexpanded_math
from estimator.model.decode_attention import shares_view, tile_reads
from estimator.model.timing import PhaseCost, PhaseTime, cache_walk_kernel, cache_walk_waves, walks_cache
from estimator.notes import Note, NoteCode, note


def decode_attention_notes(arch: Architecture | None, profile: EfficiencyProfile, tp: int, cost: PhaseCost,
                           decode: PhaseTime | None) -> list[Note]:
    """One note where there is a decode step and the profile's tiles make its KV read cost more than one read (none
    for a model known only by its size, latent attention, a profile without tiles, or an fp32 step that walks its
    cache instead: `decode_kernel_notes`)."""
    tiles = profile.decode_attention
    reads = (None if arch is None or tiles is None or decode is None or runs_unexpanded_math(arch, profile)
             or walks_cache(cost, profile) else tile_reads(arch, tiles, tp, profile.repeats_kv))
    if tiles is None or reads is None or (reads.factor == 1 and reads.repeat is None):
        return []
    w = reads.walk
    return [note(NoteCode.DECODE_ATTENTION, profile=profile.name, group=reads.group, query_rows=tiles.query_rows,
                 tiles=w.tiles, reread=tiles.reread_fraction, head_dim=reads.head_dim, tile_head_dim=w.tile_head_dim,
                 full_width=w.full_width, efficiency=tiles.full_width_efficiency, factor=reads.factor,
                 repeat=reads.repeat)]


def prefill_kernel_notes(profile: EfficiencyProfile, cost: PhaseCost) -> list[Note]:
    """One note where the prefill's GEMMs are timed by shape or its elementwise operations by kernel path."""
    spec = profile.fp32_gemm if cost.fp32 else profile.gemm
    strided = float(cost.strided[1]) if profile.strided_elements_per_s is not None else 0.0
    if not cost.gemms and not strided:
        return []
    gemms = sum(g.count for g in cost.gemms)
    return [note(NoteCode.PREFILL_KERNELS, profile=profile.name, gemms=gemms, dtype="fp32" if cost.fp32 else "16-bit",
                 kernel_s=spec.kernel_s if spec and gemms else None,
                 flop_efficiency=spec.flop_efficiency if spec and gemms else None,
                 bandwidth_efficiency=spec.bandwidth_efficiency if spec and gemms else None,
                 strided_elements=strided, elements_per_s=profile.strided_elements_per_s)]


def prefill_attention_notes(arch: Architecture | None, profile: EfficiencyProfile, cost: PhaseCost) -> list[Note]:
    """One note where the profile takes sliding windows as masks and the model has them, or its fp32 grouped-query
    (or Falcon's unexpanded) heads leave some layers the math kernel: the rule `attention_kernels` applies (the
    same at every prompt length, so a sweep's rows share it)."""
    if arch is None:
        return []
    windows = [w for w in arch.layer_windows if w is not None]
    takes_masks = profile.masked_attention_flop_efficiency is not None and bool(windows)
    math = math_attention_layers(arch, profile, fp32=cost.fp32, tokens=0) > 0
    if not math and not takes_masks:
        return []
    return [note(NoteCode.PREFILL_ATTENTION, profile=profile.name, layers=arch.mixer_count("attention"),
                 sliding=len(windows), window=min(windows) if takes_masks else None,
                 masked_efficiency=float(profile.masked_attention_flop_efficiency or 0.0), math=math)]


def decode_math_notes(arch: Architecture | None, profile: EfficiencyProfile, cost: PhaseCost) -> list[Note]:
    """One note where the decode step's attention runs the math SDPA kernel on unexpanded KV heads
    (`attention_kernels.unexpanded_math_work`)."""
    rates, spec = profile.repeat_kv_elements_per_s, profile.fp32_gemm
    if arch is None or not cost.math_gemms or rates is None or spec is None:
        return []
    return [note(NoteCode.DECODE_MATH_ATTENTION, profile=profile.name, heads=arch.attention.num_heads,
                 layers=arch.mixer_count("attention"), copies=float(cost.math_kv_copy_elements),
                 elements_per_s=rates[1], gemms=sum(g.count for g in cost.math_gemms), kernel_s=spec.kernel_s,
                 bandwidth_efficiency=spec.bandwidth_efficiency)]


def decode_kernel_notes(arch: Architecture | None, profile: EfficiencyProfile, tp: int, cost: PhaseCost,
                        decode: PhaseTime | None) -> list[Note]:
    """One note where an fp32 decode step walks its cache on the memory-efficient kernel or times its GEMMs of more
    than one row by shape (docs/accuracy.md, "Decode time")."""
    walk = arch is not None and decode is not None and walks_cache(cost, profile)
    spec = profile.fp32_gemm
    gemms = sum(g.count for g in cost.gemms if g.m > 1) if decode is not None and cost.fp32 and spec else 0
    if not walk and not gemms:
        return []
    kernel = cache_walk_kernel(cost.cache_head_dim, profile) if walk else None
    shared = arch is not None and shares_view(arch, tp, profile.repeats_kv)
    heads = "copied" if cost.kv_copy_elements > 0 else "view" if shared else "own"
    return [note(NoteCode.DECODE_KERNELS, profile=profile.name, walk=walk,
                 max_head_dim=kernel.max_head_dim if kernel else None, fixed_s=kernel.fixed_s if kernel else 0.0,
                 key_s=kernel.key_s if kernel else 0.0, streams=float(cost.cache_streams),
                 streams_per_wave=kernel.streams_per_wave if kernel else 0.0,
                 waves=float(cache_walk_waves(cost, kernel)) if kernel else 0.0,
                 heads=heads, gemms=gemms,
                 kernel_s=spec.kernel_s if gemms and spec else None,
                 flop_efficiency=spec.flop_efficiency if gemms and spec else None,
                 bandwidth_efficiency=spec.bandwidth_efficiency if gemms and spec else None)]


def phase_notes(arch: Architecture | None, profile: EfficiencyProfile, tp: int, prefill_cost: PhaseCost,
                prefill: PhaseTime, decode_cost: PhaseCost, decode: PhaseTime | None) -> list[Note]:
    """Every phase's assumptions under ``profile`` on one of ``tp`` ranks."""
    return [*host_state_notes(profile, prefill_cost, prefill, decode_cost, decode),
            *decode_attention_notes(arch, profile, tp, decode_cost, decode), *decode_kernel_notes(arch, profile,
            tp, decode_cost, decode), *prefill_kernel_notes(profile, prefill_cost),
            *prefill_attention_notes(arch, profile, prefill_cost), *decode_math_notes(arch, profile, decode_cost)]
