"""Families that transformers has no class for, because each checkpoint's own modeling code builds them: ChatGLM
(modeling_chatglm.py) and Llama-Nemotron Super (DeciLM, model_type nemotron-nas). Their published configs
(tests/data/configs, SOURCES.yaml says from where) are counted by hand from that code, and their KV cache too.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from estimator.catalog.block_configs import ffn_width
from estimator.catalog.hf_config import architecture_from_config
from estimator.errors import SpecInvalid
from estimator.model.inventory import param_count
from estimator.model.memory import kv_elements_per_token
from tests.catalog.test_families import CONFIGS, HAS_HF, SOURCES, _tool

CHATGLM3 = "THUDM--chatglm3-6b"
SUPER_49B = "nvidia--Llama-3_3-Nemotron-Super-49B-v1"


def _config(name: str) -> dict[str, Any]:
    config: dict[str, Any] = json.loads((CONFIGS / f"{name}.json").read_text())
    return config


def _estimate(cli: Callable[..., Any], tmp_path: Path, config: dict[str, Any]) -> dict[str, Any]:
    (tmp_path / "config.json").write_text(json.dumps(config))
    result = cli("estimate", "--model", str(tmp_path), "--gpu", "h200", "--prompt-tokens", "8192",
                 "--output-tokens", "0", "--format", "json")
    assert result.exit_code == 0, result.stderr
    report: dict[str, Any] = json.loads(result.stdout)
    return report


def test_chatglm3_counts_as_its_modeling_code_builds_it() -> None:
    # modeling_chatglm.py, hidden 4,096, 28 layers, 32 heads of kv_channels 128, multi_query_group_num 2:
    # query_key_value 4,096 × (4,096 + 2 × 2 × 128 = 4,608) = 18,874,368 + its bias 4,608 (add_qkv_bias);
    # dense 4,096 × 4,096 = 16,777,216 (no bias: add_bias_linear false); dense_h_to_4h 4,096 × 2 × 13,696 =
    # 112,197,632; dense_4h_to_h 13,696 × 4,096 = 56,098,816; two RMSNorms 2 × 4,096 = 8,192
    layer = 18_874_368 + 4_608 + 16_777_216 + 112_197_632 + 56_098_816 + 8_192
    assert layer == 203_960_832
    # word_embeddings and output_layer (never tied) 65,024 × 4,096 = 266,338,304 each, final_layernorm 4,096
    total = 28 * layer + 2 * 266_338_304 + 4_096
    assert total == 6_243_584_000 == SOURCES[CHATGLM3]["remote_code_params"]
    assert param_count(architecture_from_config(_config(CHATGLM3))) == total


def test_chatglm3_kv_cache_by_hand(cli: Callable[..., Any], tmp_path: Path) -> None:
    arch = architecture_from_config(_config(CHATGLM3))
    assert arch.max_position_embeddings == 8_192  # seq_length of the hub's config since its "Update config" commit
    assert kv_elements_per_token(arch, 0, decompressed_mla=False) == 2 * (128 + 128)  # 2 groups × (K + V)
    report = _estimate(cli, tmp_path, _config(CHATGLM3))
    # 28 layers × 512 elements × 2 B (fp16 as torch_dtype says) = 28,672 B a token; 8,192 tokens
    assert report["memory"]["kv_cache_per_token_bytes"] == 28 * 512 * 2 == 28_672
    assert report["memory"]["kv_cache_bytes"] == 28_672 * 8_192
    assert report["model"]["params"] == 6_243_584_000


@pytest.mark.hf
@pytest.mark.skipif(not HAS_HF, reason="torch and transformers not installed")
def test_chatglm3_equals_transformers_glm_built_with_the_same_widths() -> None:
    # transformers' glm model_type is the converted ChatGLM (separate q/k/v with bias, o without, fused gate_up)
    glm = {"model_type": "glm", "vocab_size": 65024, "hidden_size": 4096, "intermediate_size": 13696,
           "num_hidden_layers": 28, "num_attention_heads": 32, "num_key_value_heads": 2, "head_dim": 128,
           "attention_bias": True, "tie_word_embeddings": False, "pad_token_id": 0}
    assert _tool().count_params(glm) == param_count(architecture_from_config(_config(CHATGLM3)))


def test_chatglm_switches_follow_the_modeling_code() -> None:
    small = {"model_type": "chatglm", "num_layers": 2, "ffn_hidden_size": 64, "hidden_size": 32,
             "num_attention_heads": 4, "kv_channels": 8, "padded_vocab_size": 100}
    arch = architecture_from_config(small)
    # multi_query_attention defaults to false: every head its own K and V; no qkv bias by default
    assert (arch.attention.num_kv_heads, arch.attention.q_bias) == (4, False)
    # per layer qkv 32 × 96 + dense 32 × 32 + h_to_4h 32 × 128 + 4h_to_h 64 × 32 + 2 norms of 32
    layer = 3_072 + 1_024 + 4_096 + 2_048 + 64
    assert param_count(arch) == 2 * layer + 2 * 100 * 32 + 32 == 27_040
    layered = architecture_from_config({**small, "rmsnorm": False, "post_layer_norm": False,
                                        "add_bias_linear": True})
    # LayerNorm adds a bias to each of the 4 layer norms (+ 4 × 32); no final norm (−32); add_bias_linear puts
    # biases on qkv (96), dense (32), h_to_4h (128) and 4h_to_h (32) of both layers
    assert param_count(layered) == 27_040 + 4 * 32 - 32 + 2 * (96 + 32 + 128 + 32) == 27_712


def test_first_chatglm_6b_layout_is_refused_not_misread() -> None:
    # ChatGLM-6B (2023) shares the model_type but has another layout (inner_hidden_size, GELU, 2D positions)
    v1 = {"model_type": "chatglm", "hidden_size": 4096, "inner_hidden_size": 16384, "num_layers": 28,
          "num_attention_heads": 32, "vocab_size": 130528, "position_encoding_2d": True}
    with pytest.raises(SpecInvalid, match="ffn_hidden_size"):
        architecture_from_config(v1)


def test_ffn_mult_widths_round_up_as_decilm_does() -> None:
    # int(2 × mult × 8,192 / 3) rounded up to a multiple of 256
    assert [ffn_width(m, 8192) for m in (5.25, 2.625, 3.28125, 1.3125, 1.0, 0.5)] == [
        28_672, 14_336, 17_920, 7_168, 5_632, 2_816]  # 5,461 → 5,632; 2,730 → 2,816


def test_nemotron_super_49b_counts_layer_by_layer() -> None:
    arch = architecture_from_config(_config(SUPER_49B))
    # 80 block_configs: 49 attention layers (n_heads_in_group 8: 64 / 8 = 8 KV heads of 128), 31 without
    assert (arch.mixer_count("attention"), arch.mixer_count("none"), arch.attention.num_kv_heads) == (49, 31, 8)
    # feed-forward widths per layer (ffn_mult 5.25 × 49 layers, 2.625 × 6, 3.28125 × 1, 1.3125 × 10, 1.0 × 8,
    # 0.5 × 6)
    assert arch.dense_mlp_widths() == {28_672: 49, 14_336: 6, 17_920: 1, 7_168: 10, 5_632: 8, 2_816: 6}
    # attention: q and o 8,192 × 8,192 each, k and v 8,192 × 1,024 each = 150,994,944 a layer
    attention = 49 * (2 * 67_108_864 + 2 * 8_388_608)
    # gated MLP: 3 × 8,192 × width
    mlp = 3 * 8_192 * (49 * 28_672 + 6 * 14_336 + 17_920 + 10 * 7_168 + 8 * 5_632 + 6 * 2_816)
    # norms: an input norm per attention layer (49), a post-attention norm per FFN (80), the final norm
    norms = (49 + 80 + 1) * 8_192
    embeddings = 2 * 128_256 * 8_192  # embed_tokens and lm_head (tie_word_embeddings false)
    total = attention + mlp + norms + embeddings
    assert total == 49_867_145_216 == SOURCES[SUPER_49B]["remote_code_params"]  # the model card's "49B"
    assert param_count(arch) == total


def test_nemotron_super_49b_kv_cache_by_hand(cli: Callable[..., Any], tmp_path: Path) -> None:
    report = _estimate(cli, tmp_path, _config(SUPER_49B))
    # only the 49 attention layers cache: 8 KV heads × (128 + 128) × 2 B = 4,096 B each
    assert report["memory"]["kv_cache_per_token_bytes"] == 49 * 4_096 == 200_704
    assert report["memory"]["kv_cache_bytes"] == 200_704 * 8_192
    assert report["model"]["params"] == 49_867_145_216


def test_block_configs_linear_attention_is_a_hidden_square() -> None:
    config = copy.deepcopy(_config(SUPER_49B))
    config["block_configs"][6]["attention"] = {"no_op": False, "replace_with_linear": True}  # was no_op
    arch = architecture_from_config(config)
    assert arch.mixer_count("linear") == 1
    # a linear_attn of 8,192 × 8,192 and the input norm it brings
    assert param_count(arch) == 49_867_145_216 + 8_192 * 8_192 + 8_192


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"attention": {"n_heads_in_group": 16}}, r"different KV-head counts \(\[4, 8\]\)"),
        ({"attention": {"n_heads_in_group": 3}}, "must divide num_attention_heads"),
        ({"attention": {"n_heads_in_group": 8, "window_length": 4096}}, "window_length: not read yet"),
        ({"ffn": {"replace_with_linear": True}}, "linear feed-forward"),
        ({"ffn": {"ffn_mult": "big"}}, "ffn_mult must be a positive number"),
        ({"ffn": {"ffn_mult": True}}, "ffn_mult must be a positive number"),
    ],
)
def test_block_configs_it_cannot_read_are_refused(change: dict[str, Any], message: str) -> None:
    config = copy.deepcopy(_config(SUPER_49B))
    for key, value in change.items():
        config["block_configs"][0][key] = value
    with pytest.raises(SpecInvalid, match=message):
        architecture_from_config(config)


def test_block_configs_must_cover_every_layer() -> None:
    config = _config(SUPER_49B) | {"num_hidden_layers": 81}
    with pytest.raises(SpecInvalid, match="block_configs has 80 entries for 81 layers"):
        architecture_from_config(config)
