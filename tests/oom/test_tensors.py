"""Tensor sizes and the allocator's rounding of a request."""

from __future__ import annotations

from estimator.catalog.registry import Catalog
from estimator.oom.tensors import allocation_bytes, inference_tensors

MIB = 2**20


def test_allocation_rounding() -> None:
    # c10/cuda/CUDACachingAllocator.cpp get_allocation_size: ≤ 1 MiB → 2 MiB; < 10 MiB → 20 MiB; else 2 MiB steps
    assert allocation_bytes(512) == 2 * MIB
    assert allocation_bytes(MIB) == 2 * MIB
    assert allocation_bytes(MIB + 1) == 20 * MIB
    assert allocation_bytes(10 * MIB) == 10 * MIB
    assert allocation_bytes(10 * MIB + 1) == 12 * MIB


def test_inference_tensor_sizes(catalog: Catalog) -> None:
    arch = catalog.model("llama-3.2-1b").arch
    assert arch is not None
    sizes = {t.name: t.bytes for t in inference_tensors(arch, batch=4, tokens=1024, logits_all=True,
                                                          element_bytes=2)}
    assert sizes["MLP intermediate"] == 4 * 1024 * 8192 * 2
    assert sizes["logits"] == 4 * 1024 * 128256 * 2
    assert sizes["attention scores (math kernel)"] == 4 * 32 * 1024 * 1024 * 4
    assert sizes["one layer's K (or V) cache"] == 4 * 1024 * 8 * 64 * 2  # 8 KV heads × 64 head_dim
