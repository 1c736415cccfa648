"""The single tensors a job allocates, by name and estimate term, to match a failed request against.

An out-of-memory message gives the size of one allocation. The tensors that can be that large are few: logits,
an MLP intermediate, attention scores of a math kernel, the fp32 copy a norm or a loss makes, one layer's K or V,
one parameter-sized optimizer temporary. Their shapes come from the architecture and the workload; training
tensors come from the TrainingReport's own per-layer list (``layer_tensors``), so nothing here re-derives a term.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from estimator.catalog.architecture import Architecture
from estimator.model.inventory import tensor_inventory
from estimator.training.report import TrainingReport

MIB = 1 << 20
# PyTorch's caching allocator (c10/cuda/CUDACachingAllocator.cpp, get_allocation_size): requests up to 1 MiB take a
# 2 MiB segment, up to 10 MiB a 20 MiB one, larger ones are rounded up to a multiple of 2 MiB. The message's
# "Tried to allocate" is that segment size.
SMALL_SIZE, SMALL_BUFFER, MIN_LARGE_ALLOC, LARGE_BUFFER, ROUND_LARGE = MIB, 2 * MIB, 10 * MIB, 20 * MIB, 2 * MIB


def allocation_bytes(tensor_bytes: int) -> int:
    """The segment the allocator asks the driver for when no cached block can hold ``tensor_bytes``."""
    if tensor_bytes <= SMALL_SIZE:
        return SMALL_BUFFER
    if tensor_bytes < MIN_LARGE_ALLOC:
        return LARGE_BUFFER
    return math.ceil(tensor_bytes / ROUND_LARGE) * ROUND_LARGE


@dataclass(frozen=True)
class Tensor:
    """One tensor the job allocates: what it is, the estimate term it belongs to, its size and the arithmetic."""

    name: str
    term: str
    bytes: int
    arithmetic: str


def _t(name: str, term: str, dims: list[tuple[str, int]], element_bytes: int, dtype: str) -> Tensor:
    numel = math.prod(v for _, v in dims)
    shape = " × ".join(f"{v:,} {k}" for k, v in dims)
    return Tensor(name, term, numel * element_bytes, f"{shape} × {element_bytes} B ({dtype})")


def inference_tensors(arch: Architecture, *, batch: int, tokens: int, logits_all: bool, element_bytes: int,
                      tensor_parallel: int = 1) -> list[Tensor]:
    """Largest single tensors of one prefill forward (transformers' layer code; see model/memory.py)."""
    e, dtype = element_bytes, "fp32" if element_bytes == 4 else "16-bit"
    b, s, h, tp = ("batch", batch), ("tokens", tokens), ("hidden", arch.hidden_size), tensor_parallel
    ffn = ("ffn", math.ceil(arch.mlp.intermediate_size / tp))
    heads = ("heads", math.ceil(arch.attention.num_heads / tp))
    out = [
        _t("hidden states", "activation (layer stage)", [b, s, h], e, dtype),
        _t("hidden states in fp32 (norm upcast)", "activation (layer stage)", [b, s, h], 4, "fp32"),
        _t("MLP intermediate", "activation (layer stage)", [b, s, ffn], e, dtype),
        _t("attention scores (math kernel)", "activation (layer stage)", [b, heads, s, ("tokens", tokens)], 4,
           "fp32"),
    ]
    if arch.mlp.fused_gate_up:
        out.append(_t("fused gate_up output", "activation (layer stage)", [b, s, ("2·ffn", 2 * ffn[1])], e, dtype))
    if arch.lm_head:
        positions = ("positions", tokens if logits_all else 1)
        out += [_t("logits", "activation (logits stage)", [b, positions, ("vocab", arch.vocab_size)], e, dtype),
                _t("logits in fp32", "activation (logits stage)", [b, positions, ("vocab", arch.vocab_size)], 4,
                   "fp32")]
    if arch.kv_cache_kind == "standard":
        kv = ("kv heads × head_dim", math.ceil(arch.attention.num_kv_heads / tp) * arch.attention.head_dim)
        out.append(_t("one layer's K (or V) cache", "kv_cache", [b, s, kv], e, dtype))
    return out


def training_tensors(arch: Architecture, report: TrainingReport) -> list[Tensor]:
    """One layer's saved tensors (the report's list), the loss's fp32 logits, and parameter-sized tensors of the
    optimizer step (PyTorch's foreach AdamW allocates one per parameter)."""
    w = report.workload
    tokens = w.batch * w.seq_len
    out = [Tensor(f"saved {p.name}", "activations", p.bytes, f"{p.bytes_per_token:,.0f} B per token × {tokens:,} "
                  f"tokens") for p in report.memory.layer_tensors]
    if arch.lm_head:
        dims = [("batch", w.batch), ("tokens", w.seq_len), ("vocab", math.ceil(arch.vocab_size / w.tp))]
        out += [_t("logits in fp32 (loss upcast / log_softmax)", "output layer and loss", dims, 4, "fp32"),
                _t("logits", "output layer and loss", dims, 2, "16-bit")]
    state = 2 if w.precision == "bf16" else 4
    for group in tensor_inventory(arch):
        numel = math.ceil(group.numel / (w.tp * w.pp)) if group.count == arch.num_layers else group.numel
        out.append(Tensor(f"optimizer-step temporary of {group.name}", "optimizer step", numel * state,
                          f"{numel:,} parameters × {state} B"))
    return out
