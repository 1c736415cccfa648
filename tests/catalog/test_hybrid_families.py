"""Jamba (Mamba-1 + attention + MoE), LFM2 (gated short convolutions + attention), LFM2-MoE and the EXAONE 4.5
wrapper (EXAONE 4.0's text model beside a Qwen2.5-VL-style vision tower with grouped K/V heads), read natively.

Parameter counts are transformers 5.25's on the meta device, produced by

    python -c "import sys; sys.path.insert(0, 'tools'); import hf_param_count as h; from pathlib import Path; \
print(h.count_file(Path('tests/data/configs/NAME.json')))"

(tests/data/configs/SOURCES.yaml stores them; test_families.py checks the stored count against ours for every
vendored config, and its `hf` test recomputes it). The KV cache and the fixed state below are worked by hand from each
config, so a wrong layer layout or state shape cannot hide behind a right parameter count.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from estimator.catalog.hf_config import architecture_from_config
from estimator.catalog.hybrid_readers import FIELDS_IGNORED, FIELDS_READ
from estimator.catalog.registry import Catalog
from estimator.errors import SpecInvalid
from estimator.model.inventory import param_count
from estimator.model.memory import kv_cache_bytes
from estimator.model.state import state_layers

CONFIGS = Path(__file__).resolve().parents[1] / "data" / "configs"
TOOLS = Path(__file__).resolve().parents[2] / "tools"
HAS_HF = importlib.util.find_spec("transformers") is not None and importlib.util.find_spec("torch") is not None
JAMBA = "ai21labs--AI21-Jamba-1.5-Mini"
LFM2 = "FlameF0X--LFM2.5-1.2B-Distilled-Claude-4.6"

# Small configs with the switches worth testing on: biases, no MoE, tied embeddings, the MLP rule off, the
# full_attn_idxs spelling of the layout, head_dim set apart from hidden / heads.
SMALL: dict[str, dict[str, Any]] = {
    "jamba-default-layout": {"model_type": "jamba", "num_hidden_layers": 8, "hidden_size": 256,
                             "intermediate_size": 512, "num_attention_heads": 8, "num_key_value_heads": 2,
                             "vocab_size": 1000},
    "jamba-biased-dense-tied": {"model_type": "jamba", "num_hidden_layers": 4, "hidden_size": 256,
                                "intermediate_size": 512, "num_attention_heads": 8, "num_key_value_heads": 8,
                                "vocab_size": 1000, "mamba_proj_bias": True, "mamba_conv_bias": False,
                                "attn_layer_period": 2, "attn_layer_offset": 1, "num_experts": 1,
                                "tie_word_embeddings": True, "mamba_dt_rank": 24},
    "lfm2-attention-indexes": {"model_type": "lfm2", "num_hidden_layers": 4, "hidden_size": 256,
                               "intermediate_size": 1000, "num_attention_heads": 8, "num_key_value_heads": 2,
                               "vocab_size": 1000, "full_attn_idxs": [1, 3], "head_dim": 16},
    "lfm2-biased-unadjusted": {"model_type": "lfm2", "num_hidden_layers": 3, "hidden_size": 256, "block_ff_dim": 999,
                               "num_attention_heads": 8, "num_key_value_heads": 2, "vocab_size": 1000,
                               "conv_bias": True, "block_auto_adjust_ff_dim": False, "tie_embedding": False,
                               "layer_types": ["conv", "full_attention", "conv"]},
    "lfm2_moe-dense-first": {"model_type": "lfm2_moe", "num_hidden_layers": 4, "hidden_size": 256,
                             "intermediate_size": 512, "moe_intermediate_size": 64, "num_attention_heads": 8,
                             "num_key_value_heads": 2, "vocab_size": 1000, "num_experts": 4,
                             "num_experts_per_tok": 2, "num_dense_layers": 1,
                             "layer_types": ["conv", "full_attention", "conv", "full_attention"]},
    "lfm2_moe-biased-untied": {"model_type": "lfm2_moe", "num_hidden_layers": 3, "hidden_size": 256,
                               "intermediate_size": 512, "moe_intermediate_size": 64, "num_attention_heads": 8,
                               "num_key_value_heads": 2, "vocab_size": 1000, "num_experts": 4,
                               "num_experts_per_tok": 2, "conv_bias": True, "tie_embedding": False,
                               "use_expert_bias": False, "layer_types": ["conv", "full_attention", "conv"]},
    # the published wrapper's shape (text_config "exaone4_5_text", a vision_config with num_key_value_heads), small
    "exaone4_5-wrapper": {"model_type": "exaone4_5",
                          "text_config": {"model_type": "exaone4_5_text", "hidden_size": 256, "intermediate_size": 512,
                                          "num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 2,
                                          "vocab_size": 1000, "sliding_window": 64,
                                          "layer_types": ["sliding_attention"] * 3 + ["full_attention"]},
                          "vision_config": {"model_type": "exaone4_5_vision", "depth": 2, "hidden_size": 128,
                                            "intermediate_size": 256, "num_heads": 8, "num_key_value_heads": 2,
                                            "out_hidden_size": 256, "fullatt_block_indexes": [1]}},
    "exaone4_5-tied-tower-defaults": {"model_type": "exaone4_5", "tie_word_embeddings": True,
                                      "text_config": {"model_type": "exaone4_5_text", "hidden_size": 256,
                                                      "intermediate_size": 512, "num_hidden_layers": 2,
                                                      "num_attention_heads": 8, "num_key_value_heads": 2,
                                                      "vocab_size": 1000},
                                      "vision_config": {"depth": 1, "hidden_size": 128, "intermediate_size": 256,
                                                        "out_hidden_size": 256, "fullatt_block_indexes": [0]}},
}


def _read(name: str) -> Any:
    return architecture_from_config(json.loads((CONFIGS / f"{name}.json").read_text()))


def test_jamba_places_attention_and_experts_by_period_and_offset() -> None:
    arch = _read(JAMBA)
    # attn_layer_period 8, offset 4: layers 4, 12, 20, 28; expert_layer_period 2, offset 1: every odd layer
    assert [i for i in range(32) if arch.mixer(i) == "attention"] == [4, 12, 20, 28]
    assert arch.mixer_count("mamba1") == 28
    assert [i for i in range(32) if arch.is_moe_layer(i)] == list(range(1, 32, 2))
    assert arch.moe is not None and arch.moe.expert_intermediate_size == arch.mlp.intermediate_size == 14336
    assert arch.mamba1 is not None and (arch.mamba1.inner, arch.mamba1.dt_rank) == (8192, 256)


def test_jamba_cache_and_state_by_hand(catalog: Catalog) -> None:
    arch = _read(JAMBA)
    bf16 = catalog.formats.get("bf16")
    # 4 attention layers × 8 KV heads × (128 + 128) × 2 bytes, per token
    assert kv_cache_bytes(arch, 1, 1, bf16) == 4 * 8 * 256 * 2 == 16_384
    # 28 Mamba-1 layers × ((d_conv 4 − 1) × inner 8192 + inner 8192 × d_state 16) × 2 bytes, per sequence
    [state] = state_layers(arch, 2)
    assert (state.kind, state.layers) == ("mamba1", 28)
    assert state.bytes_per_sequence == 28 * (3 * 8192 + 8192 * 16) * 2 == 8_716_288


def test_lfm2_conv_layers_and_mlp_rule() -> None:
    arch = _read(LFM2)
    assert [i for i in range(16) if arch.mixer(i) == "attention"] == [2, 5, 8, 10, 12, 14]
    assert arch.mlp.intermediate_size == 8192  # int(2 × 12288 / 3), × 1.0, rounded up to 256
    assert arch.tie_word_embeddings and arch.attention.qk_norm and arch.attention.head_dim == 64


def test_lfm2_cache_and_state_by_hand(catalog: Catalog) -> None:
    arch = _read(LFM2)
    bf16 = catalog.formats.get("bf16")
    # 6 attention layers × 8 KV heads × (64 + 64) × 2 bytes, per token
    assert kv_cache_bytes(arch, 1, 1, bf16) == 6 * 8 * 128 * 2 == 12_288
    # 10 conv layers × (conv_L_cache 3 − 1) × hidden 2048 × 2 bytes, per sequence; no recurrent matrix
    [state] = state_layers(arch, 2)
    assert (state.kind, state.layers, state.recurrent_elements) == ("short_conv", 10, 0)
    assert state.bytes_per_sequence == 10 * 2 * 2048 * 2 == 81_920


def test_lfm2_moe_places_experts_after_the_dense_layers() -> None:
    arch = architecture_from_config(SMALL["lfm2_moe-dense-first"])
    assert arch.moe_layers == (False, True, True, True) and arch.mixer_count("short_conv") == 2
    assert arch.moe is not None and arch.moe.shared_intermediate_size == 0


def test_lfm2_without_a_layout_is_attention_everywhere() -> None:
    arch = architecture_from_config({"model_type": "lfm2", "num_hidden_layers": 3})  # Lfm2Config: every layer
    assert arch.mixer_count("attention") == 3 and not state_layers(arch, 2)


def test_exaone4_5_reads_its_text_model_and_counts_its_tower() -> None:
    arch = architecture_from_config(SMALL["exaone4_5-wrapper"])
    assert arch.model_type == "exaone4" and arch.layer_windows == (64, 64, 64, None)
    assert arch.towers_read == ("vision_config",)
    # 2 blocks of: 2 RMSNorms, qkv 128 → 128 + 2 × 2 KV heads × 16 = 192 with bias, proj, gated MLP with biases
    block = 2 * 128 + (128 * 192 + 192) + (128 * 128 + 128) + 2 * (128 * 256 + 256) + (256 * 128 + 128)
    assert [rows[2] * rows[3] for rows in arch.towers if rows[0] == "visual.blocks.*"] == [2 * block]


@pytest.mark.parametrize(("config", "words"), [
    ({"model_type": "lfm2", "num_hidden_layers": 2, "layer_types": ["conv", "mamba"]}, "mamba"),
    ({"model_type": "lfm2", "num_hidden_layers": 2, "layer_types": ["conv"]}, "one type per layer"),
    ({"model_type": "jamba", "num_hidden_layers": 2, "attn_layer_offset": 8}, "attn_layer_offset"),
    ({"model_type": "lfm2_moe", "num_hidden_layers": 2}, "layer_types"),  # Lfm2MoeConfig derives no layout
    ({"model_type": "jamba", "num_hidden_layers": 2, "mamba_d_state": 0}, "mamba_d_state"),
])
def test_a_layout_transformers_refuses_is_refused_by_name(config: dict[str, Any], words: str) -> None:
    with pytest.raises(SpecInvalid, match=words):
        architecture_from_config(config)


@pytest.mark.parametrize("name", sorted(SMALL))
@pytest.mark.hf
@pytest.mark.skipif(not HAS_HF, reason="torch and transformers not installed")
def test_small_configs_count_as_transformers_does(name: str) -> None:
    sys.path.insert(0, str(TOOLS))
    try:
        import hf_param_count  # type: ignore[import-not-found]
    finally:
        sys.path.remove(str(TOOLS))
    assert param_count(architecture_from_config(SMALL[name])) == hf_param_count.count_params(SMALL[name])


@pytest.mark.parametrize(("config", "words"), [
    ({"model_type": "gemma4_text"}, "global_head_dim"),
    ({"model_type": "gemma4", "text_config": {"model_type": "gemma4_text"}}, "num_kv_shared_layers"),
    ({"model_type": "deepseek_v4"}, "compress_rates"),
    ({"model_type": "minimax_m3_vl"}, "block-sparse indexer"),
    ({"model_type": "rwkv"}, "no attention"),
    ({"model_type": "t5"}, "encoder-decoder"),
])
def test_a_family_not_read_yet_is_refused_with_why(config: dict[str, Any], words: str,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Without transformers (with it, the meta-device reader reads what it can: test_transformers_reader.py)."""
    from estimator.catalog import transformers_reader

    monkeypatch.setattr(transformers_reader, "transformers_installed", lambda: False)
    with pytest.raises(SpecInvalid, match=f"is not read yet: .*{words}") as refused:
        architecture_from_config(config)
    assert "\n" not in str(refused.value) and len(str(refused.value)) <= 400  # one line, as every refusal


@pytest.mark.parametrize(("name", "family"), [(JAMBA, "jamba"), (LFM2, "lfm2")])
def test_every_field_of_the_real_configs_is_read_or_knowingly_left_aside(name: str, family: str) -> None:
    config = json.loads((CONFIGS / f"{name}.json").read_text())
    known = {"model_type", *FIELDS_READ[family], *FIELDS_IGNORED[family]}
    assert sorted(set(config) - known) == []
