"""A config.json that leaves out a field is never completed in silence: a field that sets the model's size is
refused, naming every one missing; a default transformers' configuration class really applies (one KV head per query
head, a family's literal default) is filled in and named in the report's warnings. A field no reader reads that
could shape the model is named too (estimator/catalog/config_fields.py)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from estimator.catalog.config_fields import IGNORED, unread
from estimator.catalog.hf_config import architecture_from_config
from estimator.errors import SpecInvalid
from estimator.model.inventory import param_count
from tests.catalog.test_families import CONFIGS
from tests.conftest import CliResult

Cli = Callable[..., CliResult]
QWEN3_32B = json.loads((CONFIGS / "Qwen--Qwen3-32B.json").read_text())


def _write(tmp_path: Path, config: dict[str, Any]) -> Path:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    return path


def test_partial_llama_config_names_missing_fields(cli: Cli, tmp_path: Path) -> None:
    # {"model_type": "llama"} alone was read as LlamaConfig's 6.74 B defaults, rc 0, no warning
    result = cli("estimate", "--model", str(_write(tmp_path, {"model_type": "llama"})), "--gpu", "h100")
    assert result.exit_code == 2 and result.stdout == "" and result.stderr.count("\n") == 1
    for name in ("hidden_size", "intermediate_size", "num_attention_heads", "num_hidden_layers", "vocab_size"):
        assert name in result.stderr
    assert "set the model's size" in result.stderr


@pytest.mark.parametrize("dropped", ["intermediate_size", "vocab_size", "hidden_size", "num_hidden_layers",
                                     "num_attention_heads"])
def test_config_without_a_size_field_is_refused_naming_it(dropped: str) -> None:
    # removing intermediate_size from a real config moved the count -16 %, vocab_size -10 %, silently
    config = {k: v for k, v in QWEN3_32B.items() if k != dropped}
    with pytest.raises(SpecInvalid, match=f"lacks {dropped}, which set the model's size"):
        architecture_from_config(config)


def test_config_without_kv_heads_warns_of_the_default(cli: Cli, tmp_path: Path) -> None:
    # LlamaConfig: num_key_value_heads None → num_attention_heads (multi-head attention, 4 × Llama-3's KV cache)
    config = {"model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
              "num_attention_heads": 32, "vocab_size": 128256}
    arch = architecture_from_config(config)
    assert arch.attention.num_kv_heads == 32
    assert arch.defaulted_fields == ("num_key_value_heads = num_attention_heads (32)", "max_position_embeddings = 2048")
    result = cli("estimate", "--model", str(_write(tmp_path, config)), "--gpu", "h100", "--format", "json")
    assert result.exit_code == 0, result.stderr
    warnings = {w["code"]: w["text"] for w in json.loads(result.stdout)["warnings"]}
    assert "num_key_value_heads = num_attention_heads (32)" in warnings["defaulted-fields"]
    table = cli("estimate", "--model", str(_write(tmp_path, config)), "--gpu", "h100")
    assert "num_key_value_heads = num_attention_heads (32)" in " ".join(table.stdout.split())


def test_family_literal_default_is_named() -> None:
    # Gemma 3's published 4B text_config leaves the heads and vocabulary to Gemma3TextConfig; they are real defaults
    arch = architecture_from_config({"model_type": "gemma3_text", "hidden_size": 2560, "intermediate_size": 10240,
                                     "num_hidden_layers": 34})
    assert {"vocab_size = 262208", "num_attention_heads = 8", "num_key_value_heads = 4"} <= set(arch.defaulted_fields)


def test_an_unknown_architectural_field_is_named_in_every_output(cli: Cli, tmp_path: Path) -> None:
    config = {**QWEN3_32B, "moe_latent_size": 1024, "experimental_layer_kinds": ["a"], "my_note": "x"}
    arch = architecture_from_config(config)
    assert arch.unread_fields == ("experimental_layer_kinds", "moe_latent_size")  # my_note shapes nothing
    assert param_count(arch) == param_count(architecture_from_config(QWEN3_32B))
    result = cli("estimate", "--model", str(_write(tmp_path, config)), "--gpu", "h200", "--format", "json")
    texts = {w["code"]: w["text"] for w in json.loads(result.stdout)["warnings"]}
    assert "experimental_layer_kinds, moe_latent_size" in texts["unread-fields"]
    train = cli("estimate", "--model", str(_write(tmp_path, config)), "--gpu", "h200", "--mode", "train",
                "--format", "json")
    assert "unread-fields" in {w["code"] for w in json.loads(train.stdout)["warnings"]}


def test_generic_fields_are_never_named() -> None:
    config = dict.fromkeys(IGNORED, 1)
    assert unread(config, seen=()) == ()


def test_an_unknown_tower_field_is_named() -> None:
    # a counted tower's section is accounted for as the text config is: a field its reader does not know is named
    config = json.loads((CONFIGS / "Qwen--Qwen3-VL-8B-Instruct.json").read_text())
    assert architecture_from_config(config).unread_fields == ()
    config["vision_config"] = {**config["vision_config"], "num_register_tokens": 4}
    assert architecture_from_config(config).unread_fields == ("vision_config.num_register_tokens",)


def test_partial_latent_attention_config_names_missing_fields() -> None:
    # DeepseekV3Config would fill in q_lora_rank 1,536, one shared expert and three dense layers: not what a config
    # that leaves them out means; every size-setting field missing is named at once
    config = json.loads((CONFIGS / "deepseek-ai--DeepSeek-R1.json").read_text())
    for dropped in ("q_lora_rank", "n_shared_experts", "first_k_dense_replace", "n_routed_experts"):
        partial = {k: v for k, v in config.items() if k != dropped}
        with pytest.raises(SpecInvalid, match=f"lacks {dropped}, which set the model's size"):
            architecture_from_config(partial)
    with pytest.raises(SpecInvalid, match="lacks first_k_dense_replace, hidden_size, intermediate_size"):
        architecture_from_config({"model_type": "deepseek_v3"})


@pytest.mark.parametrize("dropped", ["n_routed_experts", "moe_intermediate_size", "mamba_num_heads",
                                     "ssm_state_size"])
def test_config_without_an_expert_or_mamba_width_is_refused_naming_it(dropped: str) -> None:
    # NemotronHConfig's defaults (8 experts of 7,688, 128 Mamba heads) are the reference model's, not Nemotron-3's
    config = json.loads((CONFIGS / "nvidia--NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.json").read_text())
    with pytest.raises(SpecInvalid, match=f"lacks {dropped}, which set the model's size"):
        architecture_from_config({k: v for k, v in config.items() if k != dropped})


@pytest.mark.parametrize("path", sorted(CONFIGS.glob("*.json")), ids=lambda p: p.stem)
def test_every_published_config_is_read_without_an_unknown_field(path: Path) -> None:
    # a family file declares every field of its published configs, by reading it or ignoring it with a reason
    assert architecture_from_config(json.loads(path.read_text())).unread_fields == ()


def test_every_catalog_model_is_read_without_an_unknown_field() -> None:
    from estimator.catalog.registry import default_catalog

    models = list(default_catalog().models)
    assert len(models) > 50
    assert {m.name: m.arch.unread_fields for m in models if m.arch is not None and m.arch.unread_fields} == {}
