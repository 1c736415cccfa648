"""Published config.json files of today's models (tests/data/configs, verbatim; SOURCES.yaml says from where):
each is estimated, and its KV cache (and recurrent state) per token and per sequence equals a count by hand.

Their parameter counts against transformers' meta-device count are in test_families.py (every vendored config).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from estimator.catalog.architecture import Architecture
from estimator.catalog.hf_config import architecture_from_config
from estimator.model.memory import kv_elements_per_token
from estimator.model.state import state_layers
from tests.catalog.test_families import CONFIGS, SOURCES


def _arch(name: str) -> Architecture:
    return architecture_from_config(json.loads((CONFIGS / f"{name}.json").read_text()))


def _estimate(cli: Callable[..., Any], tmp_path: Path, name: str, *args: str) -> dict[str, Any]:
    (tmp_path / "config.json").write_bytes((CONFIGS / f"{name}.json").read_bytes())
    result = cli("estimate", "--model", str(tmp_path), "--gpu", "h200", "--prompt-tokens", "8192", "--output-tokens",
                 "0", "--format", "json", *args)
    assert result.exit_code == 0, result.stderr
    report: dict[str, Any] = json.loads(result.stdout)
    return report


@pytest.mark.parametrize(
    ("name", "groups", "per_layer", "per_token", "at_8192"),
    [
        # 34 layers, every 6th global (5), the rest sliding over 1,024; 4 KV heads × (256 + 256) × 2 B = 4,096 B
        # a layer: 34 × 4,096 = 139,264 B per token; 8,192 tokens: 5 × 4,096 × 8,192 + 29 × 4,096 × 1,024
        ("google--gemma-3-4b-it", {1024: 29, None: 5}, 4 * 512, 139_264, 167_772_160 + 121_634_816),
        # 62 layers: 10 global, 52 sliding 1,024; 16 KV heads × (128 + 128) × 2 B = 8,192 B a layer
        ("google--gemma-3-27b-it", {1024: 52, None: 10}, 16 * 256, 62 * 8_192,
         10 * 8_192 * 8_192 + 52 * 8_192 * 1_024),
        # layer_types: 3 sliding (4,096) then 1 full, 64 layers; 8 KV heads × (128 + 128) × 2 B = 4,096 B a layer
        ("allenai--Olmo-3.1-32B-Instruct", {4096: 48, None: 16}, 8 * 256, 64 * 4_096,
         16 * 4_096 * 8_192 + 48 * 4_096 * 4_096),
        # 40 full-attention layers of 8 KV heads × (128 + 128) × 2 B
        ("mistralai--Devstral-Small-2-24B-Instruct-2512", {None: 40}, 8 * 256, 40 * 4_096, 40 * 4_096 * 8_192),
        ("mistralai--Devstral-2-123B-Instruct-2512", {None: 88}, 8 * 256, 88 * 4_096, 88 * 4_096 * 8_192),
        ("mistralai--Mistral-Small-3.1-24B-Instruct-2503", {None: 40}, 8 * 256, 40 * 4_096, 40 * 4_096 * 8_192),
        # 48 layers, every 4th full attention (12), 2 KV heads × (256 + 256) × 2 B = 2,048 B a layer
        ("Qwen--Qwen3-Next-80B-A3B-Thinking", {None: 12}, 2 * 512, 12 * 2_048, 12 * 2_048 * 8_192),
        # 92 full-attention layers (GLM-4.7, glm4_moe), 8 KV heads × (128 + 128) × 2 B = 4,096 B a layer
        ("zai-org--GLM-4.7", {None: 92}, 8 * 256, 92 * 4_096, 92 * 4_096 * 8_192),
        # layer_types: 3 sliding (4,096) then 1 full, 64 layers; 8 KV heads × (128 + 128) × 2 B = 4,096 B a layer
        ("LGAI-EXAONE--EXAONE-4.0-32B", {4096: 48, None: 16}, 8 * 256, 64 * 4_096,
         16 * 4_096 * 8_192 + 48 * 4_096 * 4_096),
        # 32 layers, every 4th full attention (8), 4 KV heads × (256 + 256) × 2 B = 4,096 B a layer
        ("Qwen--Qwen3.5-9B", {None: 8}, 4 * 512, 8 * 4_096, 8 * 4_096 * 8_192),
        # 28 layers, 4 KV heads × (128 + 128) × 2 B = 2,048 B a layer (head_dim 3,584 / 28 heads = 128)
        ("Qwen--Qwen2.5-VL-7B-Instruct", {None: 28}, 4 * 256, 28 * 2_048, 28 * 2_048 * 8_192),
        # the text model: 30 layers, 8 KV heads × (128 + 128) × 2 B = 4,096 B a layer
        ("mistralai--Voxtral-Mini-3B-2507", {None: 30}, 8 * 256, 30 * 4_096, 30 * 4_096 * 8_192),
        # 62 full-attention layers (attn_type_list all 1), 8 KV heads × (128 + 128) × 2 B = 4,096 B a layer; the
        # fp8 quantization_config is the weights', the cache stays in the activation dtype
        ("MiniMaxAI--MiniMax-M2.7", {None: 62}, 8 * 256, 62 * 4_096, 62 * 4_096 * 8_192),
    ],
)
def test_kv_cache_by_hand(cli: Callable[..., Any], tmp_path: Path, name: str, groups: dict[int | None, int],
                          per_layer: int, per_token: int, at_8192: int) -> None:
    arch = _arch(name)
    assert arch.kv_window_groups() == groups
    assert kv_elements_per_token(arch, 0, decompressed_mla=False) == per_layer
    report = _estimate(cli, tmp_path, name)
    assert report["memory"]["kv_cache_per_token_bytes"] == per_token
    assert report["memory"]["kv_cache_bytes"] == at_8192  # batch 1, the prompt's 8,192 tokens


def test_qwen3_next_deltanet_state_by_hand(cli: Callable[..., Any], tmp_path: Path) -> None:
    (deltanet,) = state_layers(_arch("Qwen--Qwen3-Next-80B-A3B-Thinking"), element_bytes=2)
    assert deltanet.layers == 36  # 48 layers, every 4th is full attention
    # key_dim 16 × 128 = 2,048, value_dim 32 × 128 = 4,096; conv over q, k, v: 2 × 2,048 + 4,096 = 8,192 channels
    assert deltanet.conv_elements == 3 * 8_192  # linear_conv_kernel_dim 4: the last 3 inputs
    assert deltanet.recurrent_elements == 32 * 128 * 128  # a d_k × d_v matrix per value head
    # no mamba_ssm_dtype in this config: the state is held in the activation dtype (bf16)
    assert deltanet.bytes_per_sequence == 36 * (24_576 + 524_288) * 2 == 39_518_208
    report = _estimate(cli, tmp_path, "Qwen--Qwen3-Next-80B-A3B-Thinking", "--batch", "2")
    assert report["memory"]["state_by_kind"] == [{"kind": "gated_deltanet", "layers": 36,
                                                  "bytes_per_sequence": 39_518_208, "bytes": 2 * 39_518_208}]


def test_qwen3_5_9b_deltanet_state_in_float32_by_hand(cli: Callable[..., Any], tmp_path: Path) -> None:
    (deltanet,) = state_layers(_arch("Qwen--Qwen3.5-9B"), element_bytes=2)
    assert deltanet.layers == 24  # 32 layers, every 4th is full attention
    # key_dim 16 × 128 = 2,048, value_dim 32 × 128 = 4,096; conv over q, k, v: 2 × 2,048 + 4,096 = 8,192 channels
    assert deltanet.conv_elements == 3 * 8_192  # linear_conv_kernel_dim 4: the last 3 inputs
    assert deltanet.recurrent_elements == 32 * 128 * 128  # a d_k × d_v matrix per value head
    # mamba_ssm_dtype float32: 4 B an element, whatever the activation dtype
    assert deltanet.bytes_per_sequence == 24 * (24_576 + 524_288) * 4 == 52_690_944
    report = _estimate(cli, tmp_path, "Qwen--Qwen3.5-9B", "--batch", "3")
    assert report["memory"]["state_by_kind"] == [{"kind": "gated_deltanet", "layers": 24,
                                                  "bytes_per_sequence": 52_690_944, "bytes": 3 * 52_690_944}]
    assert report["model"]["params"] == SOURCES["Qwen--Qwen3.5-9B"]["hf_params"]  # vision tower counted whole


@pytest.mark.parametrize(("name", "tower"), [("Qwen--Qwen2.5-VL-7B-Instruct", "vision_tower"),
                                             ("mistralai--Voxtral-Mini-3B-2507", "audio_tower")])
def test_a_published_wrappers_tower_is_counted_whole(cli: Callable[..., Any], tmp_path: Path, name: str,
                                                     tower: str) -> None:
    report = _estimate(cli, tmp_path, name)
    roles = {part["role"]: part["params"] for part in report["memory"]["weights_by_role"]}
    assert roles[tower] > 0 and roles["projector"] > 0
    # the whole model, tower and projector included, is transformers' ForConditionalGeneration count
    assert sum(roles.values()) == report["model"]["params"] == SOURCES[name]["hf_params"]
    assert "towers-counted" in [n["code"] for n in report["assumptions"]]


def test_minimax_m2_7_fp8_blocks_leave_router_and_lm_head_in_bf16(cli: Callable[..., Any], tmp_path: Path) -> None:
    report = _estimate(cli, tmp_path, "MiniMaxAI--MiniMax-M2.7", "--gpus", "4")
    bits = {part["role"]: part["bits_per_weight"] for part in report["memory"]["weights_by_role"]}
    # quant_method fp8, weight_block_size [128, 128]: e4m3 + one fp32 scale per 128 × 128 block
    assert bits["expert"] == bits["attention"] == 8 + 32 / (128 * 128)
    # modules_to_not_convert: gate (the router), e_score_correction_bias, lm_head
    assert bits["router"] == bits["lm_head"] == bits["embedding"] == 16
    assert report["model"]["params"] == SOURCES["MiniMaxAI--MiniMax-M2.7"]["hf_params"]


def test_glm_4_7_moe_layout_by_hand() -> None:
    arch = _arch("zai-org--GLM-4.7")
    # first_k_dense_replace 3: layers 0-2 dense (intermediate_size 12,288), 89 MoE layers of 160 routed experts
    assert arch.moe_layers[:4] == (False, False, False, True) and arch.num_moe_layers == 89
    assert arch.moe is not None and arch.moe.num_experts == 160 and arch.moe.experts_per_token == 8
    assert arch.attention.qk_norm  # use_qk_norm true


def test_devstral_small_2_fp8_text_model_and_16_bit_towers(cli: Callable[..., Any], tmp_path: Path) -> None:
    report = _estimate(cli, tmp_path, "mistralai--Devstral-Small-2-24B-Instruct-2512")
    roles = {part["role"]: part for part in report["memory"]["weights_by_role"]}
    # quantization_config: fp8 for the text model's linear layers; vision tower, projector and lm_head not converted
    assert roles["attention"]["bits_per_weight"] == roles["mlp"]["bits_per_weight"] == 8
    assert {roles[r]["bits_per_weight"] for r in ("vision_tower", "projector", "lm_head", "embedding")} == {16}
    # Pixtral: 24 blocks of 2·1024 + 4·1024·1024 + 3·1024·4096 = 16,779,264, patch conv 3·14·14·1024 + ln_pre 1024
    assert roles["vision_tower"]["params"] == 24 * 16_779_264 + 602_112 + 1_024 == 403_305_472
    # projector: norm 1024, merger 4·1024·1024, linear_1 1024·5120, linear_2 5120·5120
    assert roles["projector"]["params"] == 1_024 + 4_194_304 + 5_242_880 + 26_214_400 == 35_652_608
    assert report["model"]["params"] == SOURCES["mistralai--Devstral-Small-2-24B-Instruct-2512"]["hf_params"]
    assert "towers-counted" in [n["code"] for n in report["assumptions"]]


def test_mistral_small_3_1_ties_as_transformers_builds_it() -> None:
    # this config sets no top-level tie_word_embeddings: Mistral3Config's default (true) ties lm_head to the
    # embedding, as transformers 5.24 builds it (SOURCES.yaml notes that the checkpoint stores its own lm_head)
    arch = _arch("mistralai--Mistral-Small-3.1-24B-Instruct-2503")
    assert arch.tie_word_embeddings
    untied = _arch("mistralai--Devstral-Small-2-24B-Instruct-2512")  # the same text widths, tie_word_embeddings false
    assert not untied.tie_word_embeddings


def test_llama_3_2_90b_vision_cross_attention_and_vision_tower_by_hand(cli: Callable[..., Any],
                                                                      tmp_path: Path) -> None:
    name = "meta-llama--Llama-3.2-90B-Vision-Instruct"
    arch = _arch(name)
    # 100 layers, cross_attention_layers 3, 8, …, 98 (20): 80 self-attention layers cache K and V per token
    assert (arch.mixer_count("attention"), arch.mixer_count("cross_attention")) == (80, 20)
    (cross,) = state_layers(arch, element_bytes=2)
    # one image: max_num_tiles 4 × ((560 / 14)² + 1 = 1,601) = 6,404 tokens; K and V of 8 heads × 128 each
    assert cross.recurrent_elements == 6_404 * 8 * 256
    assert cross.bytes_per_sequence == 20 * 6_404 * 8 * 256 * 2 == 524_615_680
    report = _estimate(cli, tmp_path, name, "--batch", "2")
    assert report["memory"]["kv_cache_per_token_bytes"] == 80 * 8 * 256 * 2 == 327_680
    assert report["memory"]["kv_cache_bytes"] == 2 * 327_680 * 8_192
    assert report["memory"]["state_by_kind"] == [{"kind": "cross_attention", "layers": 20,
                                                  "bytes_per_sequence": 524_615_680, "bytes": 2 * 524_615_680}]
    roles = {part["role"]: part["params"] for part in report["memory"]["weights_by_role"]}
    # MllamaVisionModel, hidden 1280, ffn 5120, 1,601 positions a tile, 4 tiles, 9 aspect-ratio rows:
    # patch conv 3·14·14·1280 = 752,640, class 1,280, position gate 1, positions 1,601·1280 = 2,049,280, tile
    # positions 9·4·1,601·1280 = 73,774,080, pre/post tile embeddings 2 × (9·4·1280 + 1) = 92,162, two LayerNorms
    # 4·1280 = 5,120
    embeddings = 752_640 + 1_280 + 1 + 2_049_280 + 73_774_080 + 92_162 + 5_120
    # a block: q/k/v/o 4·1280² = 6,553,600, fc1 + fc2 2·1280·5120 + 5120 + 1280 = 13,113,600, 2 LayerNorms 5,120
    block = 6_553_600 + 13_113_600 + 5_120
    assert roles["vision_tower"] == embeddings + 32 * block + 8 * (block + 2) == 863_567_379  # global: 2 gates
    assert roles["projector"] == (7_680 + 1) * 8_192 == 62_922_752  # vision_output_dim → text width, biased
    assert roles["embedding"] == (128_256 + 8) * 8_192  # 8 image-token rows beyond the vocabulary
    assert report["model"]["params"] == SOURCES[name]["hf_params"] == 88_593_355_323
    codes = [n["code"] for n in report["assumptions"]]
    assert "towers-counted" in codes and "state-per-sequence" in codes
    assert "uncounted-towers" not in [n["code"] for n in report["warnings"]]


def test_cross_attention_state_is_its_own_row_in_the_table(cli: Callable[..., Any], tmp_path: Path) -> None:
    (tmp_path / "config.json").write_bytes((CONFIGS / "meta-llama--Llama-3.2-90B-Vision-Instruct.json").read_bytes())
    result = cli("estimate", "--model", str(tmp_path), "--gpu", "h200", "--gpus", "2", "--batch", "2")
    assert result.exit_code == 0, result.stderr
    # not "recurrent state": the image K/V, 2 sequences × 524,615,680 B = 1.0 GB
    assert "fixed state (per sequence)" in result.stdout and "recurrent state" not in result.stdout
    assert re.search(r"20 cross_attention layers\s*│\s*1\.0 GB", result.stdout)
