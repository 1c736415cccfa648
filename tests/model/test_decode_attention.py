"""The decode attention kernel's tiles (`estimator.model.decode_attention`): exact factors on the time of one read of
the cache, the invariants the rule keeps, and where the `optimized` profile's decode step and its notes use it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from estimator import default_catalog
from estimator.catalog.architecture import Architecture
from estimator.catalog.profiles import DecodeAttentionTiles
from estimator.catalog.registry import model_from_mapping
from estimator.inference.estimate import estimate
from estimator.inference.workload import InferenceWorkload
from estimator.model.decode_attention import kv_read_factor, tile_reads

# round figures, so every factor below is exact in binary floating point
TILES = DecodeAttentionTiles(query_rows=16, head_dims=(64, 128, 256), full_width_from=256, full_width_efficiency=0.5,
                             reread_fraction=0.5)


def _arch(heads: int, kv_heads: int, head_dim: int) -> Architecture:
    config = {"model_type": "llama", "hidden_size": 2048, "intermediate_size": 5632, "num_hidden_layers": 4,
              "num_attention_heads": heads, "num_key_value_heads": kv_heads, "head_dim": head_dim,
              "vocab_size": 32000}
    arch = model_from_mapping({"name": "t", "config": config}, Path("t")).arch
    assert arch is not None
    return arch


@pytest.mark.parametrize(("heads", "kv_heads", "head_dim", "tp", "tiles", "tile_dim", "factor"), [
    (32, 8, 128, 1, 1, 128, 1.0),  # llama-3.1-8b's shape: 4 query heads per KV head, a narrow tile
    (16, 16, 80, 1, 1, 128, 1.0),  # a narrow tile pays only the head dim's bytes
    (16, 8, 256, 1, 1, 256, 2.0),  # gemma-2's: the wide tile at half the rate
    (16, 16, 160, 1, 1, 256, 3.2),  # 160 pays the wide tile's whole width: 256 / 160 / 0.5
    (46, 1, 256, 1, 3, 256, 4.0),  # 46 query heads on one KV head: 3 tiles, 1 + 2 × 0.5 reads, at 2 ×
    (32, 2, 128, 1, 1, 128, 1.0),  # 16 query heads fill one tile exactly
    (34, 2, 128, 1, 2, 128, 1.5),  # 17 do not
    (64, 4, 128, 4, 1, 128, 1.0),  # tensor parallel 4: 16 query heads and 1 KV head on a rank
    (64, 2, 128, 4, 1, 128, 1.0),  # KV heads replicated over 4 ranks: 16 query heads with 1 KV head each
    (32, 1, 512, 1, 2, 512, 3.0),  # wider than every tile: its own width at the wide rate, 2 tiles
])
def test_the_factor_counts_tiles_and_widths(heads: int, kv_heads: int, head_dim: int, tp: int, tiles: int,
                                            tile_dim: int, factor: float) -> None:
    reads = tile_reads(_arch(heads, kv_heads, head_dim), TILES, tp)
    assert reads is not None
    assert (reads.group, reads.walk.tiles, reads.walk.tile_head_dim, reads.walk.factor) == (
        -(-(heads // tp) // max(kv_heads // tp, 1)), tiles, tile_dim, factor)


def test_no_tiles_or_latent_attention_reads_the_cache_once() -> None:
    assert kv_read_factor(_arch(46, 1, 256), None, 1) == 1.0
    deepseek = default_catalog().models.get("deepseek-v3").arch
    assert deepseek is not None and deepseek.attention.latent is not None
    assert tile_reads(deepseek, TILES, 1) is None and kv_read_factor(deepseek, TILES, 1) == 1.0


@given(st.integers(1, 8), st.integers(1, 64), st.sampled_from((64, 80, 96, 128, 160, 192, 256, 320)),
       st.floats(0.1, 1.0), st.floats(0.0, 1.0))
def test_the_factor_is_at_least_one_and_grows_with_the_group(kv_heads: int, group: int, head_dim: int,
                                                             efficiency: float, reread: float) -> None:
    tiles = TILES.model_copy(update={"full_width_efficiency": efficiency, "reread_fraction": reread})
    fewer = kv_read_factor(_arch(kv_heads * group, kv_heads, head_dim), tiles, 1)
    more = kv_read_factor(_arch(kv_heads * (group + 1), kv_heads, head_dim), tiles, 1)
    assert 1.0 <= fewer <= more


@pytest.mark.parametrize("dims", [(128, 64), (64, 64, 128)])
def test_tile_widths_are_given_once_narrowest_first(dims: tuple[int, ...]) -> None:
    with pytest.raises(ValidationError, match="narrowest first"):
        DecodeAttentionTiles(query_rows=16, head_dims=dims, full_width_from=128, full_width_efficiency=0.8,
                             reread_fraction=0.5)


def test_the_full_width_tile_is_one_of_the_tiles_or_none() -> None:
    with pytest.raises(ValidationError, match="not one of head_dims"):
        TILES.model_validate({**TILES.model_dump(), "full_width_from": 512})
    none = TILES.model_copy(update={"full_width_from": None})
    assert kv_read_factor(_arch(16, 16, 160), none, 1) == 1.0  # the 256-wide tile then reads the head dim's bytes


def _report(model: str, profile: str, tiles: DecodeAttentionTiles | str | None = "shipped") -> Any:
    catalog = default_catalog()
    chosen = catalog.profiles.get(profile)
    if tiles != "shipped":
        chosen = chosen.model_copy(update={"decode_attention": tiles})
    fmt = catalog.formats.get("bf16")
    workload = InferenceWorkload(batch=16, prompt_tokens=4096, output_tokens=1, weight_format=fmt, kv_format=fmt,
                                 profile=chosen)
    return estimate(catalog.models.get(model), catalog.gpus.get("h200"), workload)


def _notes(report: Any) -> list[dict[str, Any]]:
    return [n.values for n in report.assumptions if n.code.value == "decode-attention"]


def test_the_optimized_decode_step_pays_the_factor_on_its_kv_read_and_says_so() -> None:
    shipped, once = _report("gemma-2-9b", "optimized"), _report("gemma-2-9b", "optimized", None)
    catalog = default_catalog()
    optimized, h200 = catalog.profiles.get("optimized"), catalog.gpus.get("h200")
    tiles = optimized.decode_attention
    assert tiles is not None
    (note,) = _notes(shipped)
    assert note["factor"] == 1 / tiles.full_width_efficiency and note["tiles"] == 1 and note["full_width"]
    assert not _notes(once)
    # the KV read grows by the factor; the roofline bound, bytes at the datasheet peak, does not move
    kv_s = shipped.memory.kv_cache_per_gpu_bytes / (h200.bandwidth_bytes_per_s * optimized.bandwidth_efficiency)
    assert shipped.time.decode_step_s - once.time.decode_step_s == pytest.approx(kv_s * (note["factor"] - 1))
    assert shipped.time.decode_step_bound_s == once.time.decode_step_bound_s


@pytest.mark.parametrize(("model", "profile", "tiles"), [("llama-3.1-8b", "optimized", "shipped"),
                                                          ("gemma-2-9b", "hf", None)])
def test_no_note_where_the_cache_is_read_once_or_the_profile_states_no_tiles(model: str, profile: str,
                                                                             tiles: str | None) -> None:
    assert not _notes(_report(model, profile, tiles))
