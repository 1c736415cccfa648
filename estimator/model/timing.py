"""Time: the roofline bound (datasheet peaks) and the expected time (an efficiency profile applied).

bound    = max(FLOPs / peak FLOP/s, bytes / peak bandwidth)            — no implementation beats it
expected = max(Σ FLOPs / (peak × efficiency) + Σ bytes / (bandwidth × efficiency) + layers × per-layer cost
               + the host's preamble before the first kernel (eager prefill),
               layers × host dispatch per layer)                        — calibrated, see specs/profiles/
A prefill's GEMMs may instead be timed one by one by shape (model.gemms), its non-vectorized elementwise operations
by their elements (elementwise_time_s). Tensor parallelism adds two all-reduces of the activations per layer
(Megatron-LM, Shoeybi et al. 2019). Each peak × efficiency is an achievable rate (`model.rates`): `phase_rates` picks
them from the profile, and a training step gives its own for its GEMMs (`estimator.training`), which times each pass
by this same rule.
Costs and times may be numpy float arrays (a sweep grid): the functions evaluate elementwise.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from estimator.catalog.profiles import CacheWalkKernel, EfficiencyProfile
from estimator.catalog.specs import ComputeDType, GpuSpec
from estimator.errors import WorkloadInvalid
from estimator.model.elementwise import any_true, maximum, where
from estimator.model.gemms import Gemm, gemms_s
from estimator.model.grouped_experts import ExpertWork, experts_s
from estimator.model.rates import (
    Rates,
    achievable,
    achievable_bandwidth,
    attention_flop_fraction,
    kv_read_fraction,
    matmul_flop_fraction,
)

Bound = Literal["memory", "compute"]

# When a card lacks the kernel precision, what kernels fall back to (e.g. FP8 weights on an A100 are dequantized
# to fp16 by weight-only kernels such as Marlin; V100 has no bf16 tensor cores and runs bf16 models in fp16).
_FALLBACK: dict[ComputeDType, tuple[ComputeDType, ...]] = {
    "fp4": ("fp8", "fp16", "bf16"),
    "fp8": ("fp16", "bf16"),
    "int8": ("fp16", "bf16"),
    "bf16": ("fp16",),
    "fp16": ("bf16",),
    # A card whose spec lists no fp32 rate (Gaudi 2) is estimated at its 16-bit matrix rate, with the warning.
    "tf32": ("fp32", "bf16", "fp16"),
    "fp32": ("tf32", "bf16", "fp16"),
    "fp64": ("fp32", "tf32", "bf16", "fp16"),
}


def peak_for(gpu: GpuSpec, dtype: ComputeDType) -> tuple[ComputeDType, float]:
    """The card's dense peak at ``dtype``, or at the precision kernels fall back to where it lacks it."""
    for candidate in (dtype, *_FALLBACK.get(dtype, ())):
        peak = gpu.peak_flop_per_s(candidate)
        if peak is not None:
            return candidate, peak
    raise WorkloadInvalid(f"{gpu.name} lists no {dtype} (or fallback) FLOP/s in its spec")


@dataclass(frozen=True)
class PhaseCost:
    """Work of one phase on one GPU: FLOPs by kind and bytes by kind."""

    matmul_flops: float
    attention_flops: float
    weight_bytes: float
    kv_bytes: float
    elementwise_bytes: float
    layers: int
    allreduce_bytes: float = 0.0
    allreduces: int = 0
    grouped_kv: bool = False  # decode reads a grouped-query KV cache (fewer KV heads than query heads)
    # attention FLOPs of the layers that run with an explicit mask (profiles.masked_attention_flop_efficiency), beside
    # ``attention_flops`` of the others
    masked_attention_flops: float = 0.0
    host_ops: float = 0.0  # aten operations the host dispatches one by one (0: host time from layers alone)
    fp32: bool = False  # the phase computes in fp32: GEMMs and attention on CUDA cores (profile's fp32_* figures)
    # GEMM FLOPs of PyTorch's math SDPA kernel (QKᵀ and PV over every pair, in fp32 whatever the model's dtype)
    math_attention_flops: float = 0.0
    # the phase is one eager forward whose host preamble runs before its first kernel (profile's host_prologue_s)
    host_prologue: bool = False
    # a decode step's attention over its cache (profile's fp32_cache_attention: fp32 SDPA over the cache): the key
    # positions it walks over all layers, the thread blocks reading distinct memory in a layer
    # (decode_attention.walk_streams) and the head dim, which picks the kernel variant
    cache_keys: float = 0.0
    cache_streams: float = 0.0
    cache_head_dim: int = 0
    # a decode step's KV read time over one read of its cache at the bandwidth (model.decode_attention: the attention
    # kernel's query-row tiles and head-dim widths); the bound keeps kv_bytes alone
    kv_read_factor: float = 1.0
    # elements the runtime writes repeating grouped KV heads per query head before the decode's attention (repeat_kv;
    # the profile's repeat_kv_elements_per_s times them)
    kv_copy_elements: float = 0.0
    # PyTorch's math SDPA kernel on unexpanded KV heads (attention_kernels.unexpanded_math_work), in a prefill or a
    # decode step: the fp32 elements its matmuls write broadcasting the KV heads over the query heads, and its batched
    # fp32 GEMMs
    math_kv_copy_elements: float = 0.0
    math_gemms: tuple[Gemm, ...] = ()
    # a prefill's routed experts where the profile runs them as grouped GEMMs (model.grouped_experts), apart from
    # matmul_flops and weight_bytes, which then hold the rest
    experts: ExpertWork | None = None
    # a prefill's GEMMs by shape where the profile times them so (model.gemms: fp32_gemm); they then replace
    # matmul_flops and math_attention_flops in the compute time, which keep the FLOPs for the bound
    gemms: tuple[Gemm, ...] = ()
    # the GEMMs' rows are a decode's sequences: one row runs cuBLAS's GEMV, whose time is the weight read, not ``gemms``
    one_row_gemv: bool = False
    # (bytes, output elements) of the elementwise operations on TensorIterator's non-vectorized kernels, inside
    # elementwise_bytes (model.phases.strided_elementwise): timed by their elements at strided_elements_per_s
    strided: tuple[float, float] = (0.0, 0.0)

    @property
    def flops(self) -> float:
        routed = 0.0 if self.experts is None else self.experts.flops
        return (self.matmul_flops + self.attention_flops + self.masked_attention_flops + self.math_attention_flops
                + routed)

    @property
    def bytes(self) -> float:
        routed = 0.0 if self.experts is None else self.experts.weight_bytes
        return self.weight_bytes + self.kv_bytes + self.elementwise_bytes + routed

    @property
    def flop_per_byte(self) -> float:
        """Arithmetic intensity: FLOPs per byte moved, where the phase sits on the roofline's x axis."""
        return self.flops / self.bytes

    def flop_per_s(self, seconds: float) -> float:
        """FLOP/s this GPU executes when the phase takes ``seconds`` (the roofline's y axis)."""
        return self.flops / seconds


@dataclass(frozen=True)
class Hardware:
    """The rates one GPU offers: peak FLOP/s at the kernel precision, bandwidth, memory type, link."""

    peak_flop_per_s: float
    bandwidth_bytes_per_s: float
    memory_type: str
    link_bytes_per_s: float | None
    tensor_parallel: int
    fp32_flop_per_s: float | None = None  # the card's fp32 peak, for math-kernel attention (None: peak_flop_per_s)


@dataclass(frozen=True)
class PhaseTime:
    bound_s: float
    bound: Bound
    expected_s: float
    compute_s: float
    memory_s: float
    communication_s: float
    # the parts `phase_time` combines (memory_s = weights_s + elementwise_s + kv_s), for --explain:
    # expected = max(max(max(compute_s, weights_s) + elementwise_s + kv_s + fixed_s + prologue_s + experts_s + math_s,
    #                    host_s) + communication_s, bound)
    weights_s: float = 0.0
    elementwise_s: float = 0.0
    kv_s: float = 0.0
    fixed_s: float = 0.0  # operations × the profile's gpu_per_op_s, or layers × its per_layer_step_s (fixed_gpu_s)
    host_s: float = 0.0  # layers × the profile's host_per_layer_s (host dispatch, overlapped with the GPU)
    prologue_s: float = 0.0  # the host's preamble before the first kernel, which the GPU waits through
    experts_s: float = 0.0  # a prefill's routed experts run as grouped GEMMs with their dispatch (grouped_experts)
    math_s: float = 0.0  # the math SDPA kernel on unexpanded KV heads: its fp32 KV copies and GEMMs (math_kernel_s)
    # parts of compute_s: the linear GEMMs, and attention (the fused kernel's, unmasked and masked layers together)
    gemm_s: float = 0.0
    attention_s: float = 0.0

    @property
    def gpu_s(self) -> float:
        """The GPU's time: a GEMM streams its weights while it computes (the larger of the two), then the
        elementwise kernels, the KV read, the math kernel's copies and GEMMs, the fixed costs and the host's
        preamble."""
        return maximum(self.compute_s, self.weights_s) + self.elementwise_s + self.kv_s + self.fixed_s \
            + self.prologue_s + self.experts_s + self.math_s

    def with_communication(self, seconds: float) -> PhaseTime:
        """This phase with ``seconds`` more communication it waits for (e.g. MoE all-to-alls), its expected time
        combined again by `expected_time`'s rule."""
        if not seconds:
            return self
        communication = self.communication_s + seconds
        return replace(self, communication_s=communication,
                       expected_s=expected_time(self.gpu_s, self.host_s, communication, self.bound_s))


def expected_time(gpu_s: float, host_s: float, communication_s: float, bound_s: float) -> float:
    """The phase's expected time: the longer of the GPU's and the host's, then the communication it waits for;
    never below the roofline bound."""
    return maximum(maximum(gpu_s, host_s) + communication_s, bound_s)


def roofline_s(cost: PhaseCost, hw: Hardware) -> tuple[float, Bound]:
    """max(FLOPs / peak, bytes / bandwidth) and which one sets it."""
    compute = cost.flops / hw.peak_flop_per_s
    memory = cost.bytes / hw.bandwidth_bytes_per_s
    return maximum(compute, memory), where(compute >= memory, "compute", "memory")


def allreduce_s(cost: PhaseCost, hw: Hardware, profile: EfficiencyProfile) -> float:
    """Ring all-reduce: 2 (N − 1) / N × bytes over the per-direction link bandwidth, plus a latency per call."""
    n = hw.tensor_parallel
    if n == 1 or cost.allreduces == 0:
        return 0.0
    link = hw.link_bytes_per_s / 2 if hw.link_bytes_per_s else None  # datasheets give bidirectional totals
    if link is None:
        return cost.allreduces * profile.allreduce_latency_s
    volume = 2 * (n - 1) / n * cost.allreduce_bytes
    return volume / achievable(link, profile.interconnect_efficiency) + cost.allreduces * profile.allreduce_latency_s


def host_dispatch_s(cost: PhaseCost, profile: EfficiencyProfile) -> float:
    """Seconds the host needs to issue the phase's kernels one by one (eager runtimes; overlapped with the GPU):
    a fixed cost plus the phase's aten operations × the cost of one where the profile counts operations, else
    layers × the profile's per-layer figure."""
    if counts_host_ops(cost, profile):
        return profile.host_fixed_s + cost.host_ops * profile.host_per_op_s
    return cost.layers * profile.host_per_layer_s


def counts_host_ops(cost: PhaseCost, profile: EfficiencyProfile) -> bool:
    """Whether the phase's host dispatch is counted per operation (`host_dispatch_s`): the profile gives a cost per
    operation and the family's operations are counted (a sweep's array: counted in every cell)."""
    return bool(profile.host_per_op_s) and any_true(cost.host_ops > 0)


def counts_gpu_ops(cost: PhaseCost, profile: EfficiencyProfile) -> bool:
    """Whether the phase's fixed GPU cost is counted per operation (`fixed_gpu_s`)."""
    return bool(profile.gpu_per_op_s) and any_true(cost.host_ops > 0)


def fixed_gpu_s(cost: PhaseCost, profile: EfficiencyProfile) -> float:
    """The GPU's time beyond the phase's bytes and FLOPs: each small kernel's launch and tail, which a CUDA graph
    keeps. Where the profile gives a cost per operation and the family's operations are counted, the operations ×
    that cost (`gpu_per_op_s`: transformers' own kernels); else the layers × the profile's per-layer figure
    (`per_layer_step_s`: a lean engine's layer, whose kernels' floors it holds). Never both: the per-layer figure
    holds the floors of the kernels the count already counts (docs/accuracy.md, "Decode time")."""
    if counts_gpu_ops(cost, profile):
        return cost.host_ops * profile.gpu_per_op_s
    return cost.layers * profile.per_layer_step_s


def walks_cache(cost: PhaseCost, profile: EfficiencyProfile) -> bool:
    """Whether the profile times an fp32 decode step's attention as a walk over its cache (`cache_attention_s`): a
    phase with cache positions to walk (a prefill has none: it reads its KV at the bandwidth)."""
    return cost.fp32 and bool(profile.fp32_cache_attention) and any_true(cost.cache_keys > 0)


def cache_walk_kernel(head_dim: int, profile: EfficiencyProfile) -> CacheWalkKernel:
    """The fp32 cache-walk kernel variant a head dim runs: the first that holds it, else the widest."""
    kernels = profile.fp32_cache_attention
    return next((k for k in kernels if k.max_head_dim is None or head_dim <= k.max_head_dim), kernels[-1])


def cache_attention_s(cost: PhaseCost, profile: EfficiencyProfile) -> float:
    """An fp32 decode step's attention over its cache where the profile times it (0 elsewhere): PyTorch's
    memory-efficient SDPA kernel, one thread block per (sequence, query head) with its one query, walks the cache key
    by key; a layer takes the variant's fixed time and its time per key position once per wave of the blocks reading
    distinct memory (`CacheWalkKernel`), in place of the KV read at a bandwidth (which that walk holds)."""
    if not walks_cache(cost, profile):
        return 0.0
    kernel = cache_walk_kernel(cost.cache_head_dim, profile)
    return cost.layers * kernel.fixed_s + cost.cache_keys * kernel.key_s * cache_walk_waves(cost, kernel)


def cache_walk_waves(cost: PhaseCost, kernel: CacheWalkKernel) -> float:
    """The waves of the walk's blocks that read distinct memory: ⌈streams ÷ streams per wave⌉ (elementwise on a
    sweep's arrays)."""
    return -(-cost.cache_streams // kernel.streams_per_wave)


def repeat_kv_s(cost: PhaseCost, profile: EfficiencyProfile) -> float:
    """The copy transformers makes of grouped KV heads before a masked decode's attention (repeat_kv: an elementwise
    kernel bound by the elements it writes, at the profile's rate for the dtype; docs/accuracy.md, "Decode attention
    kernels")."""
    rates = profile.repeat_kv_elements_per_s
    return 0.0 if rates is None else cost.kv_copy_elements / rates[1 if cost.fp32 else 0]


def math_kernel_s(cost: PhaseCost, hw: Hardware, profile: EfficiencyProfile) -> float:
    """Attention on the math SDPA kernel over unexpanded KV heads, prefill or decode (0 elsewhere): its fp32 KV copies
    at the profile's fp32 copy rate (repeat_kv's: the same expand-and-reshape) and its GEMMs by shape at the fp32 GEMM
    figures."""
    rates, spec = profile.repeat_kv_elements_per_s, profile.fp32_gemm
    if not cost.math_gemms or rates is None or spec is None:
        return 0.0
    return cost.math_kv_copy_elements / rates[1] + gemms_s(cost.math_gemms, spec, hw.fp32_flop_per_s or
                                                           hw.peak_flop_per_s, hw.bandwidth_bytes_per_s, 4)


def _gemm_s(cost: PhaseCost, hw: Hardware, profile: EfficiencyProfile, rates: Rates) -> float:
    """The phase's linear GEMMs: one by one by shape where the cost lists them (model.gemms), else their FLOPs at the
    matmul rate, as a decode's GEMMs of one row (a GEMV, whose weight read `phase_time` takes beside them)."""
    spec = profile.fp32_gemm if cost.fp32 else profile.gemm
    by_flops = cost.matmul_flops / rates.matmul
    if not cost.gemms or spec is None:
        return by_flops
    peak = (hw.fp32_flop_per_s or hw.peak_flop_per_s) if cost.fp32 else hw.peak_flop_per_s
    shaped = gemms_s(cost.gemms, spec, peak, hw.bandwidth_bytes_per_s, 4 if cost.fp32 else 2)
    return where(cost.gemms[0].m > 1, shaped, by_flops) if cost.one_row_gemv else shaped


def phase_rates(cost: PhaseCost, hw: Hardware, profile: EfficiencyProfile) -> Rates:
    """The rates the phase's work reaches on ``hw``: the profile's fraction of each peak (an fp32 phase: its fp32
    figures; a grouped-query decode: the KV read's own where the profile gives one)."""
    attention, masked = attention_flop_fraction(profile, masked=False), attention_flop_fraction(profile, masked=True)
    if cost.fp32 and profile.fp32_attention_flop_efficiency is not None:
        attention = masked = profile.fp32_attention_flop_efficiency
    kv = kv_read_fraction(profile, hw.memory_type, grouped_kv=cost.grouped_kv)  # type: ignore[arg-type]
    peak = hw.peak_flop_per_s
    return Rates(matmul=achievable(peak, matmul_flop_fraction(profile, fp32=cost.fp32)),
                 attention=achievable(peak, attention), masked_attention=achievable(peak, masked),
                 math_attention=achievable(hw.fp32_flop_per_s or peak, matmul_flop_fraction(profile, fp32=True)),
                 bandwidth=achievable_bandwidth(hw.bandwidth_bytes_per_s, profile, hw.memory_type),
                 kv_bandwidth=achievable(hw.bandwidth_bytes_per_s, kv))


def elementwise_time_s(cost: PhaseCost, profile: EfficiencyProfile, bandwidth: float) -> float:
    """The elementwise kernels: the vectorized ones' bytes at the bandwidth, the non-vectorized ones' (`strided`)
    the longer of their output elements at the profile's rate and their bytes."""
    strided_bytes, strided_elements = cost.strided
    if profile.strided_elements_per_s is None:
        return cost.elementwise_bytes / bandwidth
    return ((cost.elementwise_bytes - strided_bytes) / bandwidth
            + maximum(strided_elements / profile.strided_elements_per_s, strided_bytes / bandwidth))


def phase_time(cost: PhaseCost, hw: Hardware, profile: EfficiencyProfile, rates: Rates | None = None) -> PhaseTime:
    """Bound and expected time of one phase (see module docstring), its work at ``rates`` (default: the profile's,
    `phase_rates`)."""
    bound_s, bound = roofline_s(cost, hw)
    rates = rates or phase_rates(cost, hw, profile)
    bandwidth = rates.bandwidth
    unmasked_s = cost.attention_flops / rates.attention
    masked_s = cost.masked_attention_flops / rates.masked_attention
    gemm_s = _gemm_s(cost, hw, profile, rates)
    compute_s = (unmasked_s + gemm_s + masked_s
                 # the math kernel's GEMMs run in fp32 whatever the model's dtype: by shape in an fp32 prefill's
                 # list or in math_gemms (math_kernel_s), else by their FLOPs here
                 + (0.0 if (cost.gemms and cost.fp32) or cost.math_gemms else
                    cost.math_attention_flops / rates.math_attention))
    weights_s, elementwise_s = cost.weight_bytes / bandwidth, elementwise_time_s(cost, profile, bandwidth)
    # (a sweep's arrays are elementwise: which term applies is decided by the dtype and the profile, not the values)
    kv_s = ((cache_attention_s(cost, profile) if walks_cache(cost, profile)
             else cost.kv_bytes * cost.kv_read_factor / rates.kv_bandwidth) + repeat_kv_s(cost, profile))
    fixed_s = fixed_gpu_s(cost, profile)
    # A GEMM streams its weights while it computes: the larger of the two is the kernel time (roofline per
    # phase); elementwise kernels and the KV read add to it.
    # The host's work before the phase's first kernel overlaps no GPU work: the GPU starts only when it ends, so a
    # GPU-bound phase takes it plus the GPU's time; a host-bound one, the host's whole time (which holds it).
    prologue_s = profile.host_prologue_s if cost.host_prologue and counts_host_ops(cost, profile) else 0.0
    routed_s = 0.0 if cost.experts is None else experts_s(
        cost.experts, profile, hw.peak_flop_per_s, hw.bandwidth_bytes_per_s, 4 if cost.fp32 else 2, bandwidth)
    t = PhaseTime(bound_s, bound, 0.0, compute_s, weights_s + elementwise_s + kv_s, allreduce_s(cost, hw, profile),
                  weights_s, elementwise_s, kv_s, fixed_s, host_dispatch_s(cost, profile), prologue_s, routed_s,
                  math_kernel_s(cost, hw, profile), gemm_s, unmasked_s + masked_s)
    return replace(t, expected_s=expected_time(t.gpu_s, t.host_s, t.communication_s, bound_s))


def host_state_range(t: PhaseTime, profile: EfficiencyProfile) -> tuple[float, float] | None:
    """A host-bound phase's expected time at the fastest and the slowest host state its profile states: the host's
    figures (dispatch and preamble) at ``host_op_bare_ratio`` × each end of ``host_bare_op_range_s`` in place of
    ``host_per_op_s``. None where the GPU sets the phase's time or the profile states no range."""
    states, ratio, per_op = profile.host_bare_op_range_s, profile.host_op_bare_ratio, profile.host_per_op_s
    if states is None or ratio is None or not per_op or t.host_s <= t.gpu_s:
        return None

    def at(bare_s: float) -> float:
        factor = bare_s * ratio / per_op
        gpu_s = t.gpu_s + t.prologue_s * (factor - 1)
        return float(expected_time(gpu_s, t.host_s * factor, t.communication_s, t.bound_s))

    return at(states[0]), at(states[1])
