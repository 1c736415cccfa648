"""FLOPs and bytes per phase."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from estimator.catalog.registry import Catalog
from estimator.model.compute import (
    attention_flops,
    causal_pairs,
    decode_weight_bytes,
    expected_distinct_experts,
    linear_params_per_token,
)
from estimator.model.memory import weights_bytes


@pytest.mark.property
@given(tokens=st.integers(1, 300), past=st.integers(0, 300), window=st.one_of(st.none(), st.integers(1, 400)))
def test_causal_pairs_equals_brute_force(tokens: int, past: int, window: int | None) -> None:
    brute = sum(min(i, window) if window else i for i in range(past + 1, past + tokens + 1))
    assert causal_pairs(tokens, window, past=past) == brute


def test_mixtral_experts_hit_per_layer() -> None:
    assert expected_distinct_experts(8, 2, 1) == pytest.approx(2.0)  # one token reads exactly top-2
    assert expected_distinct_experts(8, 2, 64) > 7.99  # 8 × (1 − 0.75⁶⁴): nearly all 8


def test_decode_reads_embedding_rows_not_the_table(catalog: Catalog) -> None:
    arch = catalog.models.get("llama-3.1-8b").arch
    assert arch is not None
    bf16 = catalog.formats.get("bf16")
    table = 128_256 * 4096 * 2
    assert decode_weight_bytes(arch, bf16, 1) == weights_bytes(arch, bf16) - table + 4096 * 2


def test_moe_decode_reads_only_routed_experts(catalog: Catalog) -> None:
    arch = catalog.models.get("mixtral-8x7b").arch
    assert arch is not None
    bf16 = catalog.formats.get("bf16")
    one = decode_weight_bytes(arch, bf16, 1)
    many = decode_weight_bytes(arch, bf16, 64)
    assert one < 0.3 * weights_bytes(arch, bf16)  # ≈ 2 of 8 experts
    assert many > 0.99 * (weights_bytes(arch, bf16) - 32_000 * 4096 * 2)


def test_prefill_uses_active_parameters(catalog: Catalog) -> None:
    arch = catalog.models.get("mixtral-8x7b").arch
    assert arch is not None
    lm_head = 4096 * 32_000
    # 12,879,925,248 active − embedding table − lm head (both 131,072,000)
    assert linear_params_per_token(arch) == 12_879_925_248 - 2 * lm_head - 65 * 4096


def test_attention_flops_full_square_halved(catalog: Catalog) -> None:
    arch = catalog.models.get("llama-3.1-8b").arch
    assert arch is not None
    s = 2048
    # 32 layers × 2 FLOP × s(s+1)/2 pairs × 32 heads × (128 + 128)
    assert attention_flops(arch, 1, s) == 32 * 2 * (s * (s + 1) // 2) * 32 * 256
