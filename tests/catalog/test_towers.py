"""Multimodal towers counted whole: a wrapper's vision or audio encoder and projector are in the parameters and the
weights by role, in 16 bit, said in the report; the text model alone drives the KV cache and decode.

Qwen3-VL, Qwen3.5 and Gemma 3 are checked on their published configs (tests/data/configs, verbatim); Qwen2.5-VL,
Voxtral, Mistral 3 (Pixtral), Qwen3.5 and Gemma 3 also on the configs transformers itself builds by default
(``Qwen2_5_VLConfig().to_dict()``...), whose towers are those of Qwen2.5-VL-72B-like, Voxtral-Mini-like,
Pixtral-12B-like models, Qwen3.5's and a SigLIP-base with its attention-pooling head (Gemma3Config's default).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from estimator.catalog.hf_config import architecture_from_config
from estimator.model.inventory import Role, param_count, tensor_inventory
from tests.catalog.test_families import CONFIGS, HAS_HF, _tool

QWEN3_VL_8B = CONFIGS / "Qwen--Qwen3-VL-8B-Instruct.json"


def _tower_params(config: dict[str, Any]) -> dict[str, int]:
    out: dict[str, int] = {}
    for group in tensor_inventory(architecture_from_config(config)):
        if group.role.is_tower:
            out[group.role.value] = out.get(group.role.value, 0) + group.total
    return out


def test_qwen3_vl_8b_towers_by_hand() -> None:
    # vision: hidden 1152, ffn 4304, 27 blocks of 4·1152² + 2·1152·4304 + 9·1152 + 4304 = 15,239,504;
    # patch embed 3·2·16·16·1152 + 1152 = 1,770,624; position table 2,304·1152 = 2,654,208 → 415,891,440.
    # projector: merged width 4·1152 = 4,608; each merger 4608² + 4608 + 4608·4096 + 4096 = 40,116,736, plus its
    # LayerNorm over 1,152 (merger) or 4,608 (each of 3 deepstack mergers): 40,119,040 + 3 × 40,125,952.
    towers = _tower_params(json.loads(QWEN3_VL_8B.read_text()))
    assert towers == {"vision_tower": 27 * 15_239_504 + 1_770_624 + 2_654_208,
                      "projector": 40_119_040 + 3 * 40_125_952}
    assert sum(towers.values()) == 576_388_336
    text = json.loads(QWEN3_VL_8B.read_text())["text_config"]
    arch = architecture_from_config(json.loads(QWEN3_VL_8B.read_text()))
    assert param_count(arch) - sum(towers.values()) == param_count(architecture_from_config(text))


def test_gemma_3_4b_siglip_tower_by_hand() -> None:
    config = json.loads((CONFIGS / "google--gemma-3-4b-it.json").read_text())
    # SigLIP: hidden 1152, ffn 4304, 27 blocks of 4·1152² + 2·1152·4304 + 9·1152 + 4304 = 15,239,504; patch conv
    # 3·14·14·1152 + 1152 = 678,528; positions (896 / 14)² · 1152 = 4,718,592; post LayerNorm 2·1152; no head
    # (vision_use_head false). Projector: 1152 × 2560 input projection + an RMSNorm over 1152.
    towers = _tower_params(config)
    assert towers == {"vision_tower": 27 * 15_239_504 + 678_528 + 4_718_592 + 2_304,
                      "projector": 1152 * 2560 + 1152}
    # the text model is unchanged by its towers, and the whole is transformers' Gemma3ForConditionalGeneration
    assert param_count(architecture_from_config(config)) - sum(towers.values()) == 3_880_263_168
    assert sum(towers.values()) == 419_816_304


def test_qwen3_5_vision_has_no_deepstack_mergers() -> None:
    config = json.loads((CONFIGS / "Qwen--Qwen3.5-27B.json").read_text())
    # Qwen3-VL's tower (27 blocks of 15,239,504, patch embed 1,770,624, positions 2,654,208) and its merger into
    # 5,120: LayerNorm over 1,152, then 4608² + 4608 + 4608·5120 + 5120; Qwen3_5VisionModel has no deepstack list
    assert _tower_params(config) == {"vision_tower": 27 * 15_239_504 + 1_770_624 + 2_654_208,
                                     "projector": 2 * 1152 + 4608 * 4608 + 4608 + 4608 * 5120 + 5120}


def _defaults(name: str) -> dict[str, Any]:
    transformers = pytest.importorskip("transformers")
    config: dict[str, Any] = getattr(transformers, name)().to_dict()
    return config


@pytest.mark.hf
@pytest.mark.skipif(not HAS_HF, reason="torch and transformers not installed")
@pytest.mark.parametrize("name", ["Qwen2_5_VLConfig", "VoxtralConfig", "Mistral3Config", "Qwen3VLConfig",
                                  "Qwen3VLMoeConfig", "Qwen3_5Config", "Qwen3_5MoeConfig", "Gemma3Config"])
def test_default_wrappers_count_as_transformers_does(name: str) -> None:
    config = _defaults(name)
    assert param_count(architecture_from_config(config)) == _tool().count_params(config)


def test_audio_tower_and_projector_roles() -> None:
    config = {"model_type": "voxtral", "text_config": {"model_type": "llama", "hidden_size": 3072,
              "intermediate_size": 8192, "num_hidden_layers": 2, "num_attention_heads": 32,
              "num_key_value_heads": 8, "vocab_size": 131072}, "audio_config": {"num_hidden_layers": 2}}
    # audio: hidden 1280, ffn 5120: 2 layers of 4·1280² + 2·1280·5120 + 8·1280 + 5120 = 19,676,160; convs
    # 128·1280·3 + 1280 + 1280²·3 + 1280 = 5,409,280; positions 1,500·1280 = 1,920,000; final LayerNorm 2,560.
    # projector: 5120·3072 + 3072² = 25,165,824.
    assert _tower_params(config) == {"audio_tower": 2 * 19_676_160 + 5_409_280 + 1_920_000 + 2_560,
                                     "projector": 25_165_824}


def test_a_vlm_estimate_counts_its_towers_and_says_so(cli: Callable[..., Any], tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(QWEN3_VL_8B.read_text())
    result = cli("estimate", "--model", str(tmp_path), "--gpu", "h100", "--format", "json")
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    roles = {part["role"]: part for part in report["memory"]["weights_by_role"]}
    assert roles["vision_tower"]["params"] == 415_891_440 and roles["vision_tower"]["bits_per_weight"] == 16
    assert roles["projector"]["params"] == 160_496_896
    assert report["model"]["params"] == 8_767_123_696
    assert report["model"]["active_params"] == 8_767_123_696 - 576_388_336  # a text token runs the text model
    assert "towers-counted" in [n["code"] for n in report["assumptions"]]
    assert "uncounted-towers" not in [n["code"] for n in report["warnings"]]
    # the KV cache is the text model's: 36 layers × 8 KV heads × (128 + 128) × 2 B = 147,456 B per token
    assert report["memory"]["kv_cache_per_token_bytes"] == 36 * 8 * 256 * 2 == 147_456


def test_a_quantized_format_leaves_the_towers_in_16_bit(cli: Callable[..., Any], tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(QWEN3_VL_8B.read_text())
    result = cli("estimate", "--model", str(tmp_path), "--gpu", "h100", "--dtype", "gptq-int4", "--format", "json")
    roles = {part["role"]: part for part in json.loads(result.stdout)["memory"]["weights_by_role"]}
    assert roles["vision_tower"]["bytes"] == 415_891_440 * 2 and roles["projector"]["bytes"] == 160_496_896 * 2


def test_tower_roles_are_not_linear() -> None:
    assert all(role.is_tower and not role.is_linear for role in (Role.VISION_TOWER, Role.AUDIO_TOWER,
                                                                 Role.PROJECTOR))
