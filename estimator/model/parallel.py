"""Tensor parallelism: which degrees split a model evenly.

Megatron-LM (Shoeybi et al. 2019) splits attention by heads, so the query heads must divide over the ranks; KV
heads either divide too or are replicated until every rank holds one (vLLM's rule for grouped-query attention).
"""

from __future__ import annotations

from estimator.catalog.architecture import Architecture, ModelSpec

# A model known only by its size has no heads to divide: powers of two, as clusters are built.
_GENERIC_TP = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)


def valid_tensor_parallel(arch: Architecture | None, tp: int) -> str | None:
    """Why ``tp`` cannot split ``arch`` (None when it can): heads must divide evenly over ranks."""
    if arch is None:
        return None
    heads, kv = arch.attention.num_heads, arch.attention.num_kv_heads
    if heads % tp:
        return f"tensor parallel {tp} does not divide {heads} attention heads"
    if kv % tp and tp % kv:
        return f"tensor parallel {tp} neither divides nor is a multiple of {kv} KV heads"
    return None


def tensor_parallel_degrees(model: ModelSpec) -> tuple[int, ...]:
    """Every tensor-parallel degree that splits ``model``'s heads evenly, smallest first (powers of two up to 1024
    for a model known only by its size)."""
    arch = model.arch
    if arch is None:
        return _GENERIC_TP
    return tuple(t for t in range(1, arch.attention.num_heads + 1) if valid_tensor_parallel(arch, t) is None)
