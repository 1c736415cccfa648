"""What vLLM's V1 engine does at start-up, computed from the estimate's own terms.

vLLM sizes its KV cache once: it takes ``gpu_memory_utilization`` of the memory the device reports, subtracts what
its profile run measured (weights, the activation peak of a ``max_num_batched_tokens`` dummy batch and a sampler
run over ``max_num_seqs`` rows, non-torch memory), cuts the rest into blocks of ``block_size`` tokens of every
layer, and refuses to start unless one ``max_model_len`` request fits. The policy (defaults, constants, the texts
vLLM prints) is data: specs/engines/vllm.yaml, each value naming the vLLM function it follows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from functools import cache
from typing import Any

from estimator.catalog.architecture import Architecture
from estimator.catalog.files import default_specs_dir, read_yaml
from estimator.catalog.specs import GpuSpec
from estimator.errors import SpecInvalid
from estimator.inference.workload import InferenceWorkload
from estimator.model.footprint import activation_peak
from estimator.model.memory import kv_elements_per_token, kv_heads_divisor, sharded_weights_bytes, window_groups
from estimator.report import Frozen
from estimator.units import GIB, MIB


@dataclass(frozen=True)
class VllmPolicy:
    """specs/engines/vllm.yaml, read: the defaults and constants of one vLLM version."""

    version: str
    gpu_memory_utilization: float
    block_size: int
    max_num_seqs: tuple[int, int]  # (cards below large_gpu_min_gib, cards at or above it)
    max_num_batched_tokens: tuple[int, int]
    large_gpu_min_gib: int
    sampler_bytes_per_element: int
    non_torch_bytes: tuple[int, int]  # (one GPU, several)
    device_total_below_reported_bytes: int
    cuda_graphs_in_budget: bool
    sliding_window_extra_blocks: int
    refusal: str
    no_memory: str


@cache
def vllm_policy() -> VllmPolicy:
    """The packaged vLLM policy; a missing or malformed key is SpecInvalid naming the file."""
    path = default_specs_dir() / "engines" / "vllm.yaml"
    data = read_yaml(path, "the vLLM engine policy")
    try:
        d, m, k = data["defaults"], data["memory"], data["kv_cache"]
        return VllmPolicy(
            str(data["version"]), float(d["gpu_memory_utilization"]), int(d["block_size"]),
            (int(d["max_num_seqs"]["small_gpu"]), int(d["max_num_seqs"]["large_gpu"])),
            (int(d["max_num_batched_tokens"]["small_gpu"]), int(d["max_num_batched_tokens"]["large_gpu"])),
            int(d["large_gpu_min_gib"]), int(m["sampler_logits_bytes_per_element"]),
            (int(m["non_torch_bytes"]["one_gpu"]), int(m["non_torch_bytes"]["several_gpus"])),
            int(m["device_total_below_reported_mib"]) * MIB, bool(m["cuda_graphs_in_budget"]),
            int(k["sliding_window_extra_blocks"]), str(k["refusal"]), str(k["no_memory"]))
    except (KeyError, TypeError, ValueError) as error:
        raise SpecInvalid(f"{path}: the vLLM policy lacks or misreads {error}") from None


@dataclass(frozen=True)
class VllmSettings:
    """The knobs of ``vllm serve`` as the user gave them (None: vLLM's default)."""

    gpu_memory_utilization: float | None = None
    max_model_len: int | None = None
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    block_size: int | None = None
    kv_cache_dtype: str = "auto"
    enforce_eager: bool = False


class VllmStartup(Frozen):
    """The figures vLLM prints at start-up, per GPU, and whether it starts."""

    engine: str = "vllm"
    version: str
    gpu_memory_utilization: float
    max_model_len: int
    max_num_seqs: int
    max_num_batched_tokens: int
    block_size: int
    kv_cache_dtype: str
    enforce_eager: bool
    total_memory_bytes: int  # what the device reports to CUDA, one GPU
    requested_memory_bytes: int  # total × gpu_memory_utilization
    weights_bytes: int  # "Model loading took"
    activation_peak_bytes: int  # torch peak of the profile run beyond the weights
    non_torch_bytes: int
    cuda_graph_bytes: int  # inside the budget (0 where this version captures graphs after sizing the cache)
    kv_cache_bytes: int  # "Available KV cache memory"
    kv_bytes_per_block: int  # one block of block_size tokens over every layer's cache tensor
    kv_blocks: int
    kv_tokens: int  # "GPU KV cache size: N tokens"
    max_concurrency: float  # "Maximum concurrency for max_model_len tokens per request"
    needed_kv_bytes: int  # one max_model_len request, the sum check_enough_kv_cache_memory compares
    starts: bool
    reason: str | None  # vLLM's own words when it refuses
    largest_max_model_len: int  # the longest max_model_len that starts at these settings (0: none)
    fix: str | None  # the smallest change that makes it start
    command: str


def _default(pair: tuple[int, int], gpu: GpuSpec, policy: VllmPolicy) -> int:
    return pair[1] if gpu.memory_bytes >= policy.large_gpu_min_gib * GIB and "a100" not in gpu.name.lower() \
        else pair[0]


def _layer_groups(arch: Architecture) -> list[tuple[int | None, int]]:
    """(window, layers) of the attention layers; vLLM merges every global window into full attention."""
    return list(window_groups(arch))


def _pages_per_layer(window: int | None, tokens: int, block_size: int, batched: int, extra: int) -> int:
    """Blocks one layer's cache holds for one ``tokens`` request (FullAttentionSpec / SlidingWindowSpec
    max_memory_usage_bytes)."""
    if window is None:
        return -(-tokens // block_size)
    return -(-min(window - 1 + batched, tokens) // block_size) + extra


def _needed(groups: list[tuple[int | None, int]], page: int, tokens: int, block_size: int, batched: int,
            extra: int) -> int:
    return sum(n * _pages_per_layer(w, tokens, block_size, batched, extra) * page for w, n in groups)


def _largest_len(groups: list[tuple[int | None, int]], page: int, available: int, block_size: int, batched: int,
                 extra: int, upper: int) -> int:
    """estimate_max_model_len: the largest length in [1, upper] whose one request fits (0: none), by bisection."""
    lo, hi = 0, upper
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if _needed(groups, page, mid, block_size, batched, extra) <= available:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _blocks(groups: list[tuple[int | None, int]], page: int, available: int) -> tuple[int, int, int]:
    """(blocks, KV cache groups, layers per group): get_num_blocks over the tensors vLLM allocates. One kind of
    layer: a tensor per layer. Several (sliding + full): groups of ``group_size`` layers share tensors, group_size
    the fewest layers of a kind, or the most where they differ by under 25 %
    (_get_kv_cache_config_uniform_page_size)."""
    counts = [n for _, n in groups]
    if len(counts) == 1:
        return max(available, 0) // page // counts[0], 1, counts[0]
    size = min(counts)
    if max(counts) < size * 1.25:
        size = max(counts)
    kv_groups = sum(-(-n // size) for n in counts)
    return max(available, 0) // (page * size), kv_groups, size


def _command(model_id: str, tp: int, s: VllmStartup, settings: VllmSettings, policy: VllmPolicy) -> str:
    """The ``vllm serve`` line of these settings: the defaults it changes spelled out, the rest left to vLLM."""
    words = [f"vllm serve {model_id}"]
    if tp > 1:
        words.append(f"--tensor-parallel-size {tp}")
    words += [f"--max-model-len {s.max_model_len}", f"--gpu-memory-utilization {s.gpu_memory_utilization:g}"]
    for flag, given in (("--max-num-seqs", settings.max_num_seqs),
                        ("--max-num-batched-tokens", settings.max_num_batched_tokens),
                        ("--block-size", settings.block_size)):
        if given is not None:
            words.append(f"{flag} {given}")
    if settings.kv_cache_dtype != "auto":
        words.append(f"--kv-cache-dtype {settings.kv_cache_dtype}")
    if settings.enforce_eager:
        words.append("--enforce-eager")
    return " ".join(words)


def _fix(s: VllmStartup, non_kv: int, total: int, tp: int) -> str | None:
    """The smallest changes that make a refused start start: a shorter max_model_len where one fits, or the
    gpu_memory_utilization that leaves room for one request (at most 1.0), else more GPUs."""
    if s.starts:
        return None
    needed_util = math.ceil((non_kv + s.needed_kv_bytes) / total * 100) / 100
    fixes = []
    if s.largest_max_model_len > 0:
        fixes.append(f"--max-model-len {s.largest_max_model_len} (the longest that fits at these settings)")
    if needed_util <= 1.0:
        fixes.append(f"--gpu-memory-utilization {needed_util:g}")
    if not fixes:
        fixes.append(f"more GPUs: --tensor-parallel-size {tp * 2} splits the weights and the KV heads further")
    return ", or ".join(fixes)


def _knobs(gpu: GpuSpec, settings: VllmSettings, policy: VllmPolicy) -> tuple[float, int, int, int]:
    """gpu_memory_utilization, block_size, max_num_seqs and max_num_batched_tokens: as given, else vLLM's."""
    util = policy.gpu_memory_utilization if settings.gpu_memory_utilization is None \
        else settings.gpu_memory_utilization
    block = settings.block_size or policy.block_size
    seqs = settings.max_num_seqs or _default(policy.max_num_seqs, gpu, policy)
    batched = settings.max_num_batched_tokens or _default(policy.max_num_batched_tokens, gpu, policy)
    return util, block, seqs, batched


def _profile_run(arch: Architecture, w: InferenceWorkload, seqs: int, batched: int,
                 policy: VllmPolicy) -> tuple[int, int, int]:
    """(weights, activation peak, non-torch bytes) on one rank, as vLLM's profile run measures them: the forward
    of a ``batched``-token dummy batch (the estimate's prefill activation peak, last-position logits), or the
    sampler over ``seqs`` rows of logits (the model's dtype and an fp32 copy), whichever is larger."""
    tp = w.tensor_parallel
    weights = sharded_weights_bytes(arch, w.weight_format, tp)
    element = w.activation_bytes_per_element
    forward = activation_peak(arch, w.profile, 1, batched, element_bytes=element, logits_all=False,
                              tensor_parallel=tp).bytes
    sampler = seqs * arch.vocab_size * (element + policy.sampler_bytes_per_element)
    return weights, max(forward, sampler), policy.non_torch_bytes[0 if tp == 1 else 1]


def vllm_startup(arch: Architecture, gpu: GpuSpec, w: InferenceWorkload, settings: VllmSettings, *,
                 model_id: str, max_position: int | None) -> VllmStartup:
    """What ``vllm serve`` prints on each of ``w.tensor_parallel`` × ``gpu`` for ``arch`` in ``w``'s formats
    (Worker.determine_available_memory, get_kv_cache_config, check_enough_kv_cache_memory, vLLM's version in the
    policy). ``max_position``: the model's max_position_embeddings, vLLM's default max_model_len."""
    policy = vllm_policy()
    tp = w.tensor_parallel
    util, block, seqs, batched = _knobs(gpu, settings, policy)
    length = settings.max_model_len or max_position or 2048
    total = gpu.memory_bytes - policy.device_total_below_reported_bytes
    requested = int(total * util)
    weights, activation, non_torch = _profile_run(arch, w, seqs, batched, policy)
    graphs = 0  # this version captures CUDA graphs after sizing the cache: outside the budget (policy)
    available = requested - weights - activation - non_torch - graphs
    elements = -(-kv_elements_per_token(arch, 0, decompressed_mla=False) // kv_heads_divisor(arch, tp))
    page = math.ceil(Fraction(elements * block) * Fraction(str(w.kv_format.bits_per_weight)) / 8)
    groups = _layer_groups(arch)
    extra = policy.sliding_window_extra_blocks
    blocks, kv_groups, per_group = _blocks(groups, page, available)
    tokens = blocks // kv_groups * block
    needed = _needed(groups, page, length, block, batched, extra)
    per_request = sum(-(-n // per_group) * per_group * _pages_per_layer(win, length, block, batched, extra)
                      for win, n in groups) / per_group
    largest = _largest_len(groups, page, available, block, batched, extra, length) if available > 0 else 0
    starts = available > 0 and needed <= available
    reason = None
    if available <= 0:
        reason = policy.no_memory
    elif not starts:
        reason = " ".join(policy.refusal.format(max_model_len=length, needed_gib=needed / GIB,
                                                available_gib=available / GIB, estimated_max_len=largest).split())
    values: dict[str, Any] = {
        "version": policy.version, "gpu_memory_utilization": util, "max_model_len": length, "max_num_seqs": seqs,
        "max_num_batched_tokens": batched, "block_size": block, "kv_cache_dtype": settings.kv_cache_dtype,
        "enforce_eager": settings.enforce_eager, "total_memory_bytes": total, "requested_memory_bytes": requested,
        "weights_bytes": weights, "activation_peak_bytes": activation, "non_torch_bytes": non_torch,
        "cuda_graph_bytes": graphs, "kv_cache_bytes": available, "kv_bytes_per_block": page * per_group,
        "kv_blocks": blocks, "kv_tokens": tokens, "needed_kv_bytes": needed,
        "max_concurrency": round(blocks / per_request, 2) if per_request else 0.0,
        "starts": starts, "reason": reason, "largest_max_model_len": largest, "fix": None, "command": ""}
    draft = VllmStartup(**values)
    values["fix"] = _fix(draft, requested - available, total, tp)
    values["command"] = _command(model_id, tp, draft, settings, policy)
    return VllmStartup(**values)


@dataclass(frozen=True)
class KvCapacity:
    """What a given amount of KV memory holds on one rank: vLLM's blocks and tokens, the KV one ``max_model_len``
    request needs, and the longest request that fits (estimate_max_model_len)."""

    blocks: int
    tokens: int
    needed_bytes: int
    largest_max_model_len: int


def kv_capacity(arch: Architecture, w: InferenceWorkload, available: int, *, max_model_len: int,
                block_size: int = 16, max_num_batched_tokens: int = 2048) -> KvCapacity:
    """The KV side of vLLM's start-up alone, from ``available`` bytes (what a log's "Available KV cache memory"
    says): the block arithmetic, without the memory budget before it."""
    elements = -(-kv_elements_per_token(arch, 0, decompressed_mla=False) // kv_heads_divisor(arch, w.tensor_parallel))
    page = math.ceil(Fraction(elements * block_size) * Fraction(str(w.kv_format.bits_per_weight)) / 8)
    groups = _layer_groups(arch)
    extra = vllm_policy().sliding_window_extra_blocks
    blocks, kv_groups, _ = _blocks(groups, page, available)
    needed = _needed(groups, page, max_model_len, block_size, max_num_batched_tokens, extra)
    largest = _largest_len(groups, page, available, block_size, max_num_batched_tokens, extra, max_model_len) \
        if available > 0 else 0
    return KvCapacity(blocks, blocks // kv_groups * block_size, needed, largest)
