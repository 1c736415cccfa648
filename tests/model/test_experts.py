"""Expert parallel: whole experts per GPU, per-GPU weights, and the all-to-all of dispatch and combine, by hand."""

from __future__ import annotations

from fractions import Fraction

import pytest

from estimator.catalog.registry import Catalog
from estimator.model.collectives import Link, all_to_all_s
from estimator.model.compute import decode_weight_bytes, expected_distinct_experts
from estimator.model.experts import (
    dispatch_bytes,
    expert_parallel_weights_bytes,
    experts_per_gpu,
    moe_all_to_all_s,
    routed_expert_bytes,
)
from estimator.model.memory import weights_bytes

NVLINK = Link("link", 450e9, 1.9e-6)  # HGX H100: 450 GB/s per direction, NCCL's 1.9 µs per step


def test_whole_experts_per_gpu(catalog: Catalog) -> None:
    arch = catalog.model("deepseek-v3").arch
    assert arch is not None and arch.moe is not None
    assert (experts_per_gpu(arch, 8), experts_per_gpu(arch, 3), experts_per_gpu(arch, 320)) == (32, 86, 1)
    # DeepSeek's online service (open-infra-index, 202502OpenSourceWeek day 6, "Inference System Overview"):
    # 256 routed + 32 redundant experts; "each GPU handles 9 routed experts" at EP32 and "manages 2" at EP144
    redundant = arch.model_copy(update={"moe": arch.moe.model_copy(update={"num_experts": 256 + 32})})
    assert (experts_per_gpu(redundant, 32), experts_per_gpu(redundant, 144)) == (9, 2)  # ⌈288/32⌉, ⌈288/144⌉
    assert experts_per_gpu(catalog.model("llama-3.1-8b").arch, 8) == 0  # type: ignore[arg-type]


def test_expert_parallel_weights_per_gpu_exactly(catalog: Catalog) -> None:
    arch = catalog.model("deepseek-v3").arch
    assert arch is not None
    fp8 = catalog.formats.get("fp8")
    # 58 MoE layers × 256 experts × 3 × 7168 × 2048 weights, 1 byte each in fp8
    assert routed_expert_bytes(arch, fp8) == 58 * 256 * 3 * 7168 * 2048 == 653_908_770_816
    rest = weights_bytes(arch, fp8) - 653_908_770_816  # attention, dense MLPs, shared experts, router, norms, vocab
    assert rest == 19_078_428_672
    # TP 1 × EP 8: everything else whole, 32 of 256 experts
    assert expert_parallel_weights_bytes(arch, fp8, 1, 8) == rest + 653_908_770_816 // 8 == 100_817_025_024
    # TP 4 × EP 32 (DeepSeek-V3 report §3.4's prefill unit): embedding, attention, dense MLP, shared expert and
    # head ÷ 4; norms (2,013,184 B) and the bf16 router (212,860,928 B) replicated; 8 of 256 experts
    sliced = (1_853_358_080 + 11_413_422_080 + 1_189_085_184 + 2_554_331_136 + 1_853_358_080) // 4
    assert expert_parallel_weights_bytes(arch, fp8, 4, 32) == (sliced + 2_013_184 + 212_860_928
                                                                + 653_908_770_816 // 32) == 25_365_411_840
    # 60 experts at EP 8 (not a divisor): ⌈60/8⌉ = 8 whole experts, more than 60/8 slices
    odd = arch.model_copy(update={"moe": arch.moe.model_copy(update={"num_experts": 60})})  # type: ignore[union-attr]
    experts = 58 * 60 * 3 * 7168 * 2048
    others = weights_bytes(odd, fp8) - experts  # the router is 60 wide now
    assert others == rest - 58 * 7168 * (256 - 60) * 2
    assert expert_parallel_weights_bytes(odd, fp8, 1, 8) == others + experts * 8 // 60 > others + experts // 8


def test_dispatch_volume_and_all_to_all_by_hand(catalog: Catalog) -> None:
    arch = catalog.model("deepseek-v3").arch
    assert arch is not None
    # 128 tokens × top-8 × 7168 hidden × 2 bytes (bf16) = 14,680,064 B each way per GPU
    assert dispatch_bytes(arch, 128, 2) == 128 * 8 * 7168 * 2 == 14_680_064
    # EP 8 over NVLink: per MoE layer dispatch + combine, each 7 steps × 1.9 µs + 7/8 of the bytes ÷ 450 GB/s
    one = 7 * 1.9e-6 + 7 / 8 * 14_680_064 / 450e9
    assert all_to_all_s(14_680_064, 8, NVLINK) == pytest.approx(one, rel=1e-12)
    assert moe_all_to_all_s(arch, 128, 2, 8, NVLINK) == pytest.approx(58 * 2 * one, rel=1e-12)
    assert moe_all_to_all_s(arch, 128, 2, 1, NVLINK) == 0.0  # one GPU sends nothing
    dense = catalog.model("llama-3.1-8b").arch
    assert dense is not None and moe_all_to_all_s(dense, 128, 2, 8, NVLINK) == 0.0


def test_decode_reads_the_experts_its_share_of_the_ep_group_holds(catalog: Catalog) -> None:
    """g attention groups of b sequences: the experts are hit by g × b tokens and spread over g times the GPUs."""
    arch = catalog.model("deepseek-v3").arch
    assert arch is not None
    fp8 = catalog.formats.get("fp8")
    alone = decode_weight_bytes(arch, fp8, 8)
    hit8, hit64 = (expected_distinct_experts(256, 8, n) for n in (8, 64))
    experts = Fraction(653_908_770_816)
    fixed = alone - experts * Fraction(hit8 / 256)  # everything but the routed experts (to within rounding up)
    grouped = decode_weight_bytes(arch, fp8, 8, expert_groups=8)
    assert abs(grouped - (fixed + experts * Fraction(hit64 / 256) / 8)) <= 1
    assert grouped < alone  # 1/8 of the experts, hit by 8 × the tokens: fewer bytes per rank
