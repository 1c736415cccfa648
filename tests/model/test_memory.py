"""Memory terms: exact integers where the answer is exact."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from estimator import InferenceWorkload
from estimator.catalog.registry import Catalog
from estimator.model.inventory import Role
from estimator.model.memory import (
    generic_weights_bytes,
    kv_cache_bytes,
    kv_cache_layers,
    prefill_activation_peak,
    weight_shares,
    weights_bytes,
)
from tests.conftest import REFERENCE


def _arch(catalog: Catalog, name: str) -> Any:
    arch = catalog.models.get(name).arch
    assert arch is not None
    return arch


def test_weights_llama_8b_bf16(catalog: Catalog) -> None:
    bf16 = catalog.formats.get("bf16")
    assert weights_bytes(_arch(catalog, "llama-3.1-8b"), bf16) == 16_060_522_496  # 8,030,261,248 params × 2 B


def test_tied_embeddings_counted_once(catalog: Catalog) -> None:
    bf16 = catalog.formats.get("bf16")
    assert weights_bytes(_arch(catalog, "llama-3.2-1b"), bf16) == 2_471_628_800  # 1,235,814,400 × 2 B


def test_int4_is_half_a_byte_not_zero(catalog: Catalog) -> None:
    int4 = catalog.formats.get("int4")
    assert generic_weights_bytes(7_000_000_000, int4) == 3_500_000_000


def test_awq_packs_linear_layers_and_keeps_embeddings_16_bit(catalog: Catalog) -> None:
    awq = catalog.formats.get("awq-int4")
    shares = {s.role: s for s in weight_shares(_arch(catalog, "llama-3.1-8b"), awq)}
    assert float(shares[Role.MLP].bits) == 4.15625  # 4 + (16 + 4) / 128
    assert float(shares[Role.ATTENTION].bits) == 4.15625
    assert float(shares[Role.EMBEDDING].bits) == 16
    assert float(shares[Role.LM_HEAD].bits) == 16
    # 6,979,321,856 linear params × 133/32 bits / 8 = 3,625,975,808; plus (2 × 525,336,576 + 266,240) × 2 B
    assert shares[Role.MLP].bytes + shares[Role.ATTENTION].bytes == 3_625_975_808
    assert weights_bytes(_arch(catalog, "llama-3.1-8b"), awq) == 3_625_975_808 + 2_101_878_784


def test_group_size_changes_overhead(catalog: Catalog) -> None:
    gptq = catalog.formats.get("gptq-int4")
    assert gptq.with_group_size(32).bits_per_weight == 4 + 20 / 32


def test_kv_llama_8b_is_128_kib_per_token(catalog: Catalog) -> None:
    bf16 = catalog.formats.get("bf16")
    # 2 (K, V) × 32 layers × 8 KV heads × 128 dims × 2 B
    assert kv_cache_bytes(_arch(catalog, "llama-3.1-8b"), 1, 1, bf16) == 131_072
    assert kv_cache_bytes(_arch(catalog, "llama-3.1-70b"), 1, 1, bf16) == 327_680  # 320 KiB: 80 layers


def test_kv_gemma2_uses_head_dim_from_config(catalog: Catalog) -> None:
    bf16 = catalog.formats.get("bf16")
    layers = kv_cache_layers(_arch(catalog, "gemma-2-9b"), 8192, 16, bf16)
    per_token_layer = 2 * 8 * 256 * 2  # K and V × 8 KV heads × head_dim 256 (not 3584 / 16) × 2 B
    assert [(g.window, g.layers, g.tokens) for g in layers] == [(None, 21, 8192), (4096, 21, 4096)]
    assert layers[0].bytes == 21 * per_token_layer * 8192 * 16
    assert layers[1].bytes == 21 * per_token_layer * 4096 * 16


def test_kv_mistral_window_caps_every_layer(catalog: Catalog) -> None:
    bf16 = catalog.formats.get("bf16")
    arch = _arch(catalog, "mistral-7b-v0.1")
    assert kv_cache_bytes(arch, 32_768, 1, bf16) == kv_cache_bytes(arch, 4096, 1, bf16)


def test_kv_deepseek_v3_latent(catalog: Catalog) -> None:
    bf16 = catalog.formats.get("bf16")
    arch = _arch(catalog, "deepseek-v3")
    assert kv_cache_bytes(arch, 1, 1, bf16) == 70_272  # 61 layers × (512 + 64) × 2 B
    # transformers caches decompressed K and V: 61 × 128 heads × (192 + 128) × 2 B
    assert kv_cache_bytes(arch, 1, 1, bf16, decompressed_mla=True) == 4_997_120


def test_kv_fp8_halves(catalog: Catalog) -> None:
    arch = _arch(catalog, "llama-3.1-8b")
    assert kv_cache_bytes(arch, 100, 3, catalog.formats.get("fp8")) * 2 == kv_cache_bytes(
        arch, 100, 3, catalog.formats.get("bf16"))


def test_encoder_has_no_kv(catalog: Catalog) -> None:
    assert kv_cache_bytes(_arch(catalog, "bert-base"), 512, 8, catalog.formats.get("bf16")) == 0


def _prefill_rows() -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in REFERENCE.read_text().splitlines()]
    return [r for r in rows if r["kind"] == "model" and r["phase"] == "prefill"]


@pytest.mark.parametrize("row", _prefill_rows(), ids=lambda r: f"{r['model']}-b{r['batch']}-s{r['prompt']}-"
                         f"k{r['logits_to_keep']}")
def test_prefill_activation_peak_matches_h200(catalog: Catalog, row: dict[str, Any]) -> None:
    """Measured torch peak minus the KV cache kept after the forward
    (tests/data/measured/reference/h200-measured.jsonl).

    Tolerance 0.5%: the measurement includes a few allocator-rounded buffers (position ids, cache bookkeeping,
    up to 512 B rounding per block) that the live-tensor count leaves out; the layer-stage points match exactly.
    """
    arch = _arch(catalog, row["model"])
    peak = prefill_activation_peak(arch, row["batch"], row["prompt"], element_bytes=2,
                                   logits_all=row["logits_to_keep"] == 0, logits_fp32=False).bytes
    measured = row["peak_minus_before"] - row["kept_after"]
    assert abs(peak - measured) / measured < 0.005


def test_kv_cache_equals_measured_kept_bytes(catalog: Catalog, make_workload: Callable[..., InferenceWorkload]) -> None:
    for row in _prefill_rows():
        if row["logits_to_keep"] == 1:
            arch = _arch(catalog, row["model"])
            assert kv_cache_bytes(arch, row["prompt"], row["batch"], catalog.formats.get("bf16")) == row["kept_after"]
