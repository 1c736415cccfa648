"""Sweeps: evaluate a grid of (batch, prompt, output) points per (model, GPU, dtype, GPU count) at numpy speed.

One `estimate` call per combination gives the row template (every field that does not depend on the grid point)
and validates the combination; every field that does is computed over the whole grid with numpy arrays, from
per-model constants taken from the same memory and compute functions `estimate` uses (called at unit sizes or
once per distinct value), so a sweep row equals ``flatten(estimate(...).model_dump())`` at that point
(tests/planning/test_sweep.py checks it; floats agree to rounding, integers exactly). ``explain`` is left out of rows.

Integer memory terms are exact int64 arithmetic; a point whose memory would exceed 2⁶⁰ bytes is refused.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from estimator.catalog.architecture import ModelSpec
from estimator.catalog.specs import GpuSpec
from estimator.errors import MissingDependency, WorkloadInvalid
from estimator.inference.estimate import estimate
from estimator.inference.workload import MAX_BATCH, MAX_TOKENS, InferenceWorkload
from estimator.model.compute import (
    attention_flops,
    decode_weight_bytes,
    expected_distinct_experts,
    linear_params_per_token,
)
from estimator.model.inventory import lm_head_numel
from estimator.model.memory import (
    generic_weights_bytes,
    kv_elements_per_token,
    kv_heads_divisor,
    prefill_activation_peak,
    prefill_masked_attention,
    runs_math_attention,
    sharded_weights_bytes,
)
from estimator.model.parallel import tensor_parallel_degrees
from estimator.model.timing import attention_flop_fraction, kv_read_fraction, peak_for
from estimator.notes import Note, NoteCode, word_values
from estimator.report import flatten

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Ints = npt.NDArray[np.int64]
    Floats = npt.NDArray[np.float64]

_BIG = 2**60  # sentinel for memory beyond exact int64 arithmetic (never fits any card)


def _numpy() -> Any:
    try:
        import numpy
    except ImportError:
        raise MissingDependency("sweep needs numpy: pip install 'estimator[sweep]'") from None
    return numpy


@dataclass
class SweepBlock:
    """The rows of one (model, GPU, dtype, GPU count) combination: constant fields and per-point columns."""

    constants: dict[str, Any]
    columns: dict[str, Any]  # name -> numpy array (or list) with one entry per point
    lazy: dict[str, Callable[[int], Any]]  # name -> value of point i, built only when written
    keys: list[str]  # column order: estimate's flattened JSON order
    size: int

    def row(self, i: int) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key in self.keys:
            if key in self.columns:
                value = self.columns[key][i]
                out[key] = value.item() if hasattr(value, "item") else value
            elif key in self.lazy:
                out[key] = self.lazy[key](i)
            else:
                out[key] = self.constants[key]
        return out

    def rows(self) -> Iterator[dict[str, Any]]:
        """Every row, fast: columns become Python lists once, text columns are formatted per row."""
        lists = {k: v.tolist() if hasattr(v, "tolist") else list(v) for k, v in self.columns.items()}
        constant = [(k, self.constants[k]) for k in self.keys if k in self.constants]
        varying = [(k, lists[k]) for k in self.keys if k in lists]
        lazy = [(k, self.lazy[k]) for k in self.keys if k in self.lazy]
        order = self.keys
        for i in range(self.size):
            row = dict(constant)
            for key, values in varying:
                row[key] = values[i]
            for key, make in lazy:
                row[key] = make(i)
            yield {k: row[k] for k in order}


@dataclass
class SweepResult:
    blocks: list[SweepBlock] = field(default_factory=list)

    @property
    def size(self) -> int:
        return sum(b.size for b in self.blocks)

    @property
    def keys(self) -> list[str]:
        return self.blocks[0].keys if self.blocks else []

    def rows(self) -> Iterator[dict[str, Any]]:
        for block in self.blocks:
            yield from block.rows()


class _Memory:
    """Per-GPU memory of the combination at any (batch, prompt, output) arrays and any tensor-parallel degree."""

    def __init__(self, model: ModelSpec, gpu: GpuSpec, w: InferenceWorkload) -> None:
        self.np = _numpy()
        self.model, self.gpu, self.w = model, gpu, w
        self.capacity = gpu.memory_bytes

    def _mul(self, a: Ints, coefficient: int) -> Ints:
        """a × coefficient exactly in int64, or the sentinel where the product would overflow."""
        np = self.np
        safe = a.astype(np.float64) * float(coefficient) < float(_BIG)
        return np.where(safe, np.where(safe, a, 0) * coefficient, _BIG)  # type: ignore[no-any-return]

    def kv_groups(self, tokens: Ints, batch: Ints, tp: int,
                  ignore_windows: bool = False) -> list[tuple[int | None, int, Ints, Ints]]:
        """(window, layers, held tokens, bytes per rank) per window group: memory.kv_cache_layers over arrays."""
        np, arch, w = self.np, self.model.arch, self.w
        assert arch is not None
        groups = arch.kv_window_groups(ignore_windows=ignore_windows)
        bits = Fraction(str(w.kv_format.bits_per_weight))
        elements = kv_elements_per_token(arch, 0, decompressed_mla=w.mla_layout == "decompressed")
        per_rank = math.ceil(elements / kv_heads_divisor(arch, tp))
        out = []
        for window, count in sorted(groups.items(), key=lambda kv: (kv[0] is not None, kv[0] or 0)):
            held = tokens if window is None else np.minimum(tokens, window)
            # memory.bytes_of: ceil(layers × elements × held × batch × bits / 8), in integers
            product = self._mul(_safe_product(np, held, batch), count * per_rank * bits.numerator)
            group_bytes = np.where(product >= _BIG, _BIG, -(-product // (8 * bits.denominator)))
            out.append((window, count, held, group_bytes))
        return out

    def kv(self, tokens: Ints, batch: Ints, tp: int, ignore_windows: bool = False) -> Ints:
        np = self.np
        arch = self.model.arch
        assert arch is not None
        if not arch.causal:
            return np.zeros_like(tokens)  # type: ignore[no-any-return]
        total = np.zeros_like(tokens)
        for _, _, _, group_bytes in self.kv_groups(tokens, batch, tp, ignore_windows):
            total = np.minimum(total + group_bytes, _BIG)
        return total  # type: ignore[no-any-return]

    def activation(self, batch: Ints, prompt: Ints, tp: int) -> Ints:
        """memory.prefill_activation_peak: linear in batch × prompt (layer stage) and in batch (logits)."""
        np, arch, w = self.np, self.model.arch, self.w
        assert arch is not None

        def peak(b: int, t: int) -> tuple[int, int]:
            p = prefill_activation_peak(arch, b, t, element_bytes=w.activation_bytes_per_element,
                                        logits_all=w.logits == "all", logits_fp32=w.profile.logits_fp32_upcast,
                                        tensor_parallel=tp, eager_activations=w.profile.eager_activation_temporaries)
            return p.layer_bytes, p.logits_bytes

        layer_per_token, stage11 = peak(1, 1)
        _, stage12 = peak(1, 2)
        # estimate.prefill_shape: a chunked prefill holds whole sequences while they fit in a chunk, else part of one
        chunk = w.profile.prefill_chunk_tokens
        if chunk is not None:
            whole = _safe_product(np, batch, prompt) <= chunk
            batch, prompt = (np.where(whole, batch, np.where(prompt <= chunk, chunk // np.maximum(prompt, 1), 1)),
                             np.where(whole | (prompt <= chunk), prompt, chunk))
        tokens = _safe_product(np, batch, prompt)
        layer = self._mul(tokens, layer_per_token)
        if w.logits == "all":  # every position's logits: the whole stage scales with batch × prompt
            stage = self._mul(tokens, stage11)
        else:  # hidden states scale with batch × prompt, last-position logits with batch
            per_token = stage12 - stage11
            stage = np.minimum(self._mul(tokens, per_token) + self._mul(batch, stage11 - per_token), _BIG)
        if runs_math_attention(arch, w.profile):  # scores grow with prompt²: memory.prefill_activation_peak
            heads = math.ceil(arch.attention.num_heads / tp)
            scores = self._mul(_safe_product(np, batch, _safe_product(np, prompt, prompt)), 2 * heads * 4)
            eager = np.minimum(self._mul(tokens, 4 * arch.hidden_size * w.activation_bytes_per_element) + scores, _BIG)
            layer = np.maximum(layer, eager)
        if prefill_masked_attention(arch, w.profile):  # the b × s × s boolean mask
            layer = np.minimum(layer + _safe_product(np, batch, _safe_product(np, prompt, prompt)), _BIG)
        return np.maximum(layer, stage)  # type: ignore[no-any-return]

    def per_gpu(self, batch: Ints, prompt: Ints, output: Ints, tp: int) -> tuple[int, Ints | None, Ints | None,
                                                                                 Ints, Ints]:
        """(weights, kv, activation, overhead, total) per GPU, as estimate._memory_per_gpu computes them."""
        np, arch, w, p = self.np, self.model.arch, self.w, self.w.profile
        if arch is None:
            assert self.model.generic_params is not None
            weights = math.ceil(generic_weights_bytes(self.model.generic_params, w.weight_format) / tp)
            kv = activation = None
            dynamic = np.zeros_like(batch)
        else:
            weights = sharded_weights_bytes(arch, w.weight_format, tp)
            kv = self.kv(prompt + output, batch, tp)
            if p.sliding_window_prefill_full and arch.layer_windows:  # estimate._memory_per_gpu
                kv = np.maximum(kv, self.kv(prompt, batch, tp, ignore_windows=True))
            activation = self.activation(batch, prompt, tp)
            dynamic = np.minimum(kv + activation, _BIG)
        reserved = round(self.capacity * p.driver_reserved_fraction)
        fixed = reserved + p.cuda_context_bytes + p.workspace_bytes + (p.nccl_buffer_bytes if tp > 1 else 0)
        slack = np.rint(dynamic.astype(np.float64) * p.allocator_slack_fraction).astype(np.int64)
        overhead = fixed + slack
        total = np.minimum(weights + dynamic + overhead, _BIG)
        return weights, kv, activation, overhead, total

    def fits(self, batch: Ints, prompt: Ints, output: Ints, tp: int) -> Any:
        return self.per_gpu(batch, prompt, output, tp)[4] <= self.capacity


def _safe_product(np: Any, a: Ints, b: Ints) -> Ints:
    safe = a.astype(np.float64) * b.astype(np.float64) < float(_BIG)
    return np.where(safe, np.where(safe, a, 0) * np.where(safe, b, 0), _BIG)  # type: ignore[no-any-return]


def _largest(np: Any, fits: Callable[[Ints], Any], low: Ints, high: Ints) -> Ints:
    """Vectorised capacity.largest_true: per element, the largest n in [low, high] where fits(n) (low − 1 if none)."""
    good = low - 1
    bad = high + 1
    while True:
        open_ = bad - good > 1
        if not open_.any():
            return good
        mid = np.where(open_, (good + bad) // 2, good + 1)
        ok = fits(np.maximum(mid, 1)) & open_
        good = np.where(ok, mid, good)
        bad = np.where(open_ & ~ok, mid, bad)


def _unique_map(np: Any, *arrays: Ints) -> tuple[list[Ints], Ints]:
    """Distinct tuples of ``arrays`` and the index of each point's tuple."""
    stacked = np.stack(arrays, axis=1)
    unique, inverse = np.unique(stacked, axis=0, return_inverse=True)
    return [unique[:, k] for k in range(len(arrays))], inverse.reshape(-1)


def sweep_block(model: ModelSpec, gpu: GpuSpec, w: InferenceWorkload, batch: Sequence[int] | Ints,
                prompt: Sequence[int] | Ints, output: Sequence[int] | Ints, *, requested_gpu: str = "") -> SweepBlock:
    """Evaluate every point (batch[i], prompt[i], output[i]) for one combination (``w`` gives everything else)."""
    np = _numpy()
    b = np.asarray(batch, dtype=np.int64)
    p = np.asarray(prompt, dtype=np.int64)
    o = np.asarray(output, dtype=np.int64)
    n = len(b)
    if not (len(p) == n == len(o)) or n == 0:
        raise WorkloadInvalid("sweep needs equally long, non-empty batch, prompt and output arrays")
    for name, arr, low, high in (("batch", b, 1, MAX_BATCH), ("prompt tokens", p, 1, MAX_TOKENS),
                                 ("output tokens", o, 0, MAX_TOKENS)):
        if int(arr.min()) < low or int(arr.max()) > high:
            raise WorkloadInvalid(f"sweep {name} must lie in [{low:,}, {high:,}]")
    first = w.model_copy(update={"batch": int(b[0]), "prompt_tokens": int(p[0]), "output_tokens": int(o[0])})
    template = estimate(model, gpu, first, requested_gpu=requested_gpu)
    flat = flatten(template.model_dump(mode="json"))
    flat.pop("explain")
    tp, arch = w.tensor_parallel, model.arch
    mem = _Memory(model, gpu, w)
    _weights, kv, activation, overhead, per_gpu = mem.per_gpu(b, p, o, tp)
    if int(per_gpu.max()) >= _BIG:
        raise WorkloadInvalid("a sweep point needs more than 2^60 bytes per GPU; shrink batch or tokens")
    cols: dict[str, Any] = {"workload.batch": b, "workload.prompt_tokens": p, "workload.output_tokens": o}
    if kv is not None and activation is not None:  # else the template's None (a model without an architecture)
        cols["memory.kv_cache_bytes"] = kv * tp
        cols["memory.activation_bytes"] = activation * tp
        cols["memory.kv_cache_per_gpu_bytes"] = kv
        cols["memory.activation_per_gpu_bytes"] = activation
    cols["memory.overhead_bytes"] = overhead * tp
    cols["memory.overhead_per_gpu_bytes"] = overhead
    cols["memory.total_bytes"] = per_gpu * tp
    cols["memory.per_gpu_bytes"] = per_gpu
    cols["memory.fits"] = per_gpu <= gpu.memory_bytes
    cols["memory.headroom_bytes"] = gpu.memory_bytes - per_gpu
    required = np.zeros(n, dtype=np.int64)  # 0 = no group fits
    for degree in tensor_parallel_degrees(model):
        todo = required == 0
        if not todo.any():
            break
        fits = mem.per_gpu(b, p, o, degree)[4] <= gpu.memory_bytes
        required = np.where(todo & fits, degree, required)
    cols["memory.gpus_required"] = [None if r == 0 else r for r in required.tolist()]
    if arch is not None:
        (up, uo), inverse = _unique_map(np, p, o)
        best = _largest(np, lambda x: mem.fits(x, up, uo, tp), np.ones_like(up), np.full_like(up, MAX_BATCH))
        cols["memory.max_batch"] = np.maximum(best, 0)[inverse]
        (ub, uo2), inverse2 = _unique_map(np, b, o)
        longest = _largest(np, lambda x: mem.fits(ub, x, uo2, tp), np.ones_like(ub), MAX_TOKENS - uo2)
        cols["memory.max_context_tokens"] = np.where(longest < 1, 0, longest + uo2)[inverse2]
    _time_columns(np, cols, model, gpu, w, b, p, o, kv)
    lazy = _lazy_columns(np, mem, template.warnings, gpu, model, w, b, p, o, cols, required)
    constants = {k: v for k, v in flat.items() if k not in cols and k not in lazy}
    return SweepBlock(constants, cols, lazy, list(flat), n)


def _time_columns(np: Any, cols: dict[str, Any], model: ModelSpec, gpu: GpuSpec, w: InferenceWorkload, b: Ints,
                  p: Ints, o: Ints, kv: Ints | None) -> None:
    """estimate._phase_costs and timing.phase_time over arrays."""
    tp, arch, prof = w.tensor_parallel, model.arch, w.profile
    _, peak = peak_for(gpu, w.weight_format.compute_dtype)
    bw = gpu.bandwidth_bytes_per_s
    frac = prof.bandwidth_fraction(gpu.memory_type)
    grouped = arch is not None and arch.attention.latent is None and \
        arch.attention.num_kv_heads < arch.attention.num_heads
    decode_kv_frac = kv_read_fraction(prof, gpu.memory_type, grouped_kv=grouped)  # timing.phase_time
    bf = b.astype(np.float64)
    pf = p.astype(np.float64)
    ctx = p + o
    if arch is None:
        assert model.generic_params is not None
        params = model.generic_params
        weights = generic_weights_bytes(params, w.weight_format) / tp
        zero = np.zeros(len(b))
        prefill = _Cost(2 * params * bf * pf / tp, zero, np.full(len(b), weights), zero, zero, 0, zero, 0)
        decode = _Cost(2 * params * bf / tp, zero, np.full(len(b), weights), zero, zero, 0, zero, 0)
        step = decode
        decoding = True
    else:
        act = w.activation_bytes_per_element
        h, layers = arch.hidden_size, arch.num_layers
        ffn: float = arch.mlp.intermediate_size
        if arch.moe is not None and arch.num_moe_layers:
            ffn = arch.moe.experts_per_token * arch.moe.expert_intermediate_size + arch.moe.shared_intermediate_size
        pte = (prof.elementwise_hidden_passes * h + prof.elementwise_ffn_passes * ffn / tp) * act * layers
        lin, lm = linear_params_per_token(arch), lm_head_numel(arch)
        positions = pf if w.logits == "all" else np.ones(len(b))
        reduces = 2 * layers if tp > 1 else 0

        def per_value(values: Ints, fn: Callable[[int], float]) -> Floats:
            unique, inverse = np.unique(values, return_inverse=True)
            return np.array([float(fn(int(v))) for v in unique])[inverse.reshape(-1)]  # type: ignore[no-any-return]

        masked = prefill_masked_attention(arch, prof)
        prefill_att = per_value(p, lambda t: attention_flops(arch, 1, t, ignore_windows=masked))
        read_full = per_value(b, lambda x: decode_weight_bytes(arch, w.weight_format, x))
        kv_f = np.zeros(len(b)) if kv is None else kv.astype(np.float64)
        weights_tp = sharded_weights_bytes(arch, w.weight_format, tp)
        prefill = _Cost((2 * lin * bf * pf + 2 * lm * bf * positions) / tp, prefill_att * bf / tp,
                        np.full(len(b), float(weights_tp)), kv_f * pf / np.maximum(ctx, 1), bf * pf * pte, layers,
                        2 * layers * bf * pf * h * act, reduces)

        def decode_cost(context: Ints, kv_bytes: Floats) -> _Cost:
            att = per_value(context, lambda c: attention_flops(arch, 1, 1, past=c - 1))
            return _Cost(2 * (lin + lm) * bf / tp, att * bf / tp, read_full / tp, kv_bytes, bf * pte, layers,
                         2 * layers * bf * h * act, reduces)

        decode = decode_cost(ctx, kv_f)
        mean_ctx = p + o // 2
        mem = _Memory(model, gpu, w)
        mean_kv = mem.kv(mean_ctx, b, tp).astype(np.float64)
        step = decode_cost(mean_ctx, mean_kv)
        decoding = arch.causal
        if arch.moe is not None:
            moe = arch.moe
            cols["time.experts_read_per_layer"] = per_value(
                b, lambda x: expected_distinct_experts(moe.num_experts, moe.experts_per_token, x))
    link = gpu.interconnect_bytes_per_s
    pre = _phase(np, prefill, peak, bw, frac, frac, prof, tp, link,
                 attention_flop_fraction(prof, masked=arch is not None and prefill_masked_attention(arch, prof)))
    cols["time.prefill_s"] = pre[0]
    cols["time.prefill_bound_s"] = pre[1]
    cols["time.prefill_bound"] = pre[2]
    cols["time.time_to_first_token_s"] = pre[0]
    cols["time.prefill_flops"] = (prefill.matmul + prefill.attention) * tp
    cols["time.prefill_bytes"] = (prefill.weight + prefill.kv + prefill.elementwise) * tp
    if decoding:
        attention = prof.attention_flop_efficiency
        dec = _phase(np, decode, peak, bw, frac, decode_kv_frac, prof, tp, link, attention)
        stp = _phase(np, step, peak, bw, frac, decode_kv_frac, prof, tp, link, attention)
        cols["time.decode_step_s"] = dec[0]
        cols["time.decode_step_bound_s"] = dec[1]
        cols["time.bound"] = dec[2]
        cols["time.tokens_per_s"] = bf / stp[0]
        cols["time.tokens_per_s_bound"] = bf / stp[1]
        cols["time.tokens_per_s_per_sequence"] = 1 / stp[0]
        cols["time.decode_bytes"] = (decode.weight + decode.kv + decode.elementwise) * tp
        cols["time.decode_flops"] = (decode.matmul + decode.attention) * tp
        cols["time.communication_s"] = pre[3] + dec[3]
    else:
        cols["time.communication_s"] = pre[3]


@dataclass
class _Cost:
    matmul: Floats
    attention: Floats
    weight: Floats
    kv: Floats
    elementwise: Floats
    layers: int
    allreduce: Floats
    allreduces: int


def _phase(np: Any, c: _Cost, peak: float, bw: float, frac: float, kv_frac: float, prof: Any, tp: int,
           link: float | None, attention_fraction: float) -> tuple[Floats, Floats, Any, Floats]:
    """timing.phase_time over arrays: (expected, bound, bound label, communication)."""
    compute = (c.matmul + c.attention) / peak
    memory = (c.weight + c.kv + c.elementwise) / bw
    bound_s = np.maximum(compute, memory)
    label = np.where(compute >= memory, "compute", "memory")
    bandwidth = bw * frac
    kv_bandwidth = bw * kv_frac
    compute_s = c.matmul / (peak * prof.matmul_flop_efficiency) + c.attention / (peak * attention_fraction)
    gpu_s = np.maximum(compute_s, c.weight / bandwidth) + c.elementwise / bandwidth
    gpu_s = gpu_s + c.kv / kv_bandwidth + c.layers * prof.per_layer_step_s
    host_s = c.layers * prof.host_per_layer_s
    if tp == 1 or c.allreduces == 0:
        comm = np.zeros_like(compute)
    elif link is None:
        comm = np.full_like(compute, c.allreduces * prof.allreduce_latency_s)
    else:
        volume = 2 * (tp - 1) / tp * c.allreduce
        comm = volume / (link / 2 * prof.interconnect_efficiency) + c.allreduces * prof.allreduce_latency_s
    expected = np.maximum(np.maximum(gpu_s, host_s) + comm, bound_s)
    return expected, bound_s, label, comm


_PER_POINT = (NoteCode.NO_FITTING_GROUP, NoteCode.NEEDS_MORE_GPUS, NoteCode.CONTEXT_TOO_LONG)


def _lazy_columns(np: Any, mem: _Memory, template_warnings: Sequence[Note], gpu: GpuSpec, model: ModelSpec,
                  w: InferenceWorkload, b: Ints, p: Ints, o: Ints, cols: dict[str, Any],
                  required: Ints) -> dict[str, Callable[[int], Any]]:
    """Text columns built per row only when written: KV by window (JSON) and warnings (estimate's, in its order:
    the point's own warnings selected by code and worded as estimate's JSON words them)."""
    tp, arch = w.tensor_parallel, model.arch
    fallback = [x.text for x in template_warnings if x.code is NoteCode.COMPUTE_FALLBACK]
    rest = [x.text for x in template_warnings if x.code not in (*_PER_POINT, NoteCode.COMPUTE_FALLBACK)]
    fits = cols["memory.fits"]
    limit = None if arch is None else arch.max_position_embeddings

    def warnings(i: int) -> str:
        out = list(fallback)
        if required[i] == 0:
            out.append(word_values(NoteCode.NO_FITTING_GROUP, {"gpu": gpu.name}, binary=False))
        elif not fits[i]:
            out.append(word_values(NoteCode.NEEDS_MORE_GPUS, {"gpus": tp, "gpu": gpu.name,
                                                              "required": int(required[i])}, binary=False))
        out += rest
        context = int(p[i] + o[i])
        if limit and context > limit:
            out.append(word_values(NoteCode.CONTEXT_TOO_LONG, {"tokens": context, "limit": limit}, binary=False))
        return "; ".join(out)

    lazy: dict[str, Callable[[int], Any]] = {"warnings": warnings}
    if arch is not None and arch.causal:
        groups: list[tuple[str, int, list[int], list[int]]] = []  # filled on the first row written

        def kv_by_window(i: int) -> str:
            if not groups:
                groups.extend((json.dumps(win), layers, held.tolist(), size.tolist())
                              for win, layers, held, size in mem.kv_groups(p + o, b, tp))
            return "[" + ",".join(f'{{"window":{win},"layers":{layers},"tokens":{held[i]},"bytes":{size[i]},'
                                  f'"total_bytes":{size[i] * tp}}}'
                                  for win, layers, held, size in groups) + "]"

        lazy["memory.kv_by_window"] = kv_by_window
    return lazy


def sweep(items: Sequence[tuple[ModelSpec, GpuSpec, InferenceWorkload, str]], batches: Sequence[int],
          prompts: Sequence[int], outputs: Sequence[int], *,
          progress: Callable[[int], None] | None = None) -> SweepResult:
    """The full grid batches × prompts × outputs for every (model, gpu, workload, requested name) item."""
    np = _numpy()
    grid_b, grid_p, grid_o = (a.reshape(-1) for a in np.meshgrid(np.asarray(batches, dtype=np.int64),
                                                                 np.asarray(prompts, dtype=np.int64),
                                                                 np.asarray(outputs, dtype=np.int64),
                                                                 indexing="ij"))
    result = SweepResult()
    for model, gpu, w, name in items:
        result.blocks.append(sweep_block(model, gpu, w, grid_b, grid_p, grid_o, requested_gpu=name))
        if progress is not None:
            progress(len(grid_b))
    return result
