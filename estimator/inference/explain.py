"""`estimate --explain`: the arithmetic behind the headline numbers, as notes whose printed figures reproduce them.

Each line carries the factors it multiplies or adds (the KV cache's bytes per token per layer and what divides it
over the tensor-parallel GPUs, each per-GPU term and what stays whole on every GPU, each part of a phase's time and
the rule of `estimator.model.timing.phase_time` that combines them), so a reader can redo it by hand.
"""

from __future__ import annotations

from estimator.catalog.architecture import Architecture
from estimator.catalog.specs import GpuSpec
from estimator.inference.report import MemoryReport
from estimator.inference.workload import InferenceWorkload
from estimator.model.footprint import rank_kv_bytes
from estimator.model.memory import kv_elements_per_token, kv_groups, kv_heads_divisor, replicated_weights_bytes
from estimator.model.timing import Hardware, PhaseCost, PhaseTime, counts_gpu_ops
from estimator.notes import Note, NoteCode, note


def kv_elements_words(arch: Architecture, *, decompressed_mla: bool, layer: int = 0) -> str:
    """What one token's cache in ``layer`` holds, as the factors of `kv_elements_per_token`."""
    attn = arch.attention
    indexer = f" + {attn.indexer.head_dim} indexer key" if attn.indexer and arch.has_indexer(layer) else ""
    if attn.latent is not None and not decompressed_mla:
        return f"latent {attn.latent.kv_lora_rank} + RoPE key {attn.latent.qk_rope_head_dim}{indexer}"
    return f"{attn.num_kv_heads} KV heads × (K {attn.head_dim} + V {attn.v_head_dim}){indexer}"


def _kv_lines(arch: Architecture | None, memory: MemoryReport, w: InferenceWorkload) -> list[Note]:
    if arch is None:
        return []
    tp, decompressed = w.tensor_parallel, w.mla_layout == "decompressed"
    per_element = round(w.kv_format.bits_per_weight) // 8  # KV formats are whole bytes (fp32 … fp8, int8)
    # one layer of each part, in kv_cache_layers' order (a part's layers cache alike)
    groups = [layer for _, _, layer in kv_groups(arch)]
    layers = groups if len(groups) == len(memory.kv_by_window) else [0] * len(memory.kv_by_window)
    per_token_layer = kv_elements_per_token(arch, 0, decompressed_mla=decompressed) * per_element
    split = kv_heads_divisor(arch, tp)
    lines = []
    for kv, layer in zip(memory.kv_by_window, layers, strict=True):
        per_token = kv_elements_per_token(arch, layer, decompressed_mla=decompressed) * per_element
        lines.append(note(NoteCode.KV_PART, window=kv.window, layers=kv.layers, tokens=kv.tokens, sequences=w.batch,
                          bytes_per_token_layer=per_token,
                          elements=kv_elements_words(arch, decompressed_mla=decompressed, layer=layer),
                          kv_dtype=w.kv_format.name, total_bytes=kv.layers * kv.tokens * w.batch * per_token,
                          gpus=tp, split=split, bytes=kv.bytes))
    windowed = rank_kv_bytes(arch, w, tp, w.batch, w.context_tokens)
    if memory.kv_cache_per_gpu_bytes is not None and memory.kv_cache_per_gpu_bytes != windowed:
        # the profile's sliding_window_prefill_full: footprint.peak_kv_layers takes the larger of the two
        lines.append(note(NoteCode.KV_PREFILL_FULL, layers=sum(kv.layers for kv in memory.kv_by_window),
                          tokens=w.prompt_tokens, sequences=w.batch, bytes_per_token_layer=per_token_layer,
                          split=split, bytes=memory.kv_cache_per_gpu_bytes, windowed_bytes=windowed))
    return lines


def _per_gpu_line(arch: Architecture | None, memory: MemoryReport, w: InferenceWorkload) -> Note:
    replicated = 0 if arch is None or w.tensor_parallel == 1 else replicated_weights_bytes(arch, w.weight_format)
    return note(NoteCode.PER_GPU_TOTAL, gpus=w.tensor_parallel, weights_bytes=memory.weights_per_gpu_bytes,
                weights_total_bytes=memory.weights_bytes, replicated_bytes=replicated,
                kv_bytes=memory.kv_cache_per_gpu_bytes, state_bytes=memory.state_per_gpu_bytes,
                activation_bytes=memory.activation_per_gpu_bytes, overhead_bytes=memory.overhead_per_gpu_bytes,
                per_gpu_bytes=memory.per_gpu_bytes, capacity_bytes=memory.capacity_bytes, fits=memory.fits)


def _expected_line(code: NoteCode, t: PhaseTime, cost: PhaseCost, w: InferenceWorkload) -> Note:
    return note(code, profile=w.profile.name, compute_s=t.compute_s, weights_s=t.weights_s,
                elementwise_s=t.elementwise_s, kv_s=t.kv_s, layers=cost.layers,
                fixed_ops=cost.host_ops if counts_gpu_ops(cost, w.profile) else 0,
                fixed_s=t.fixed_s + t.prologue_s,  # the host's preamble (eager prefill) waits beside the layers'
                host_s=t.host_s, experts_s=t.experts_s, math_s=t.math_s,
                communication_s=t.communication_s, bound_s=t.bound_s, seconds=t.expected_s)


def explain(arch: Architecture | None, memory: MemoryReport, prefill_cost: PhaseCost, decode_cost: PhaseCost,
            hw: Hardware, decode: PhaseTime | None, prefill: PhaseTime, w: InferenceWorkload,
            gpu: GpuSpec) -> list[Note]:
    """The arithmetic behind the headline numbers, with the numbers in it."""
    tp = w.tensor_parallel
    lines = [note(NoteCode.WEIGHTS_PART, role=part.role, params=part.params, bits=part.bits_per_weight,
                  bytes=part.bytes) for part in memory.weights_by_role]
    lines += _kv_lines(arch, memory, w)
    lines.append(_per_gpu_line(arch, memory, w))
    lines.append(note(NoteCode.PREFILL_BOUND, flops=prefill_cost.flops * tp, gpus=tp,
                      peak_flop_per_s=hw.peak_flop_per_s, bytes=prefill_cost.bytes * tp,
                      bandwidth_bytes_per_s=hw.bandwidth_bytes_per_s, seconds=prefill.bound_s, bound=prefill.bound))
    lines.append(_expected_line(NoteCode.PREFILL_EXPECTED, prefill, prefill_cost, w))
    if decode is not None:
        lines.append(note(NoteCode.DECODE_BOUND, bytes=decode_cost.bytes,
                          bandwidth_bytes_per_s=gpu.bandwidth_bytes_per_s,
                          seconds=decode_cost.bytes / hw.bandwidth_bytes_per_s, gpus=tp))
        lines.append(_expected_line(NoteCode.DECODE_EXPECTED, decode, decode_cost, w))
    return lines
