"""Families as data: every family file validates, and real config.json files of today's models count exactly.

The configs under tests/data/configs/ are verbatim copies (SOURCES.yaml says from where); their `hf_params` are
transformers' own meta-device counts (tools/hf_param_count.py). The `hf`-marked tests recompute those counts,
and count a small config of every family, with transformers itself where it is installed (CI installs it).
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from estimator.catalog.families import Family, family, family_names
from estimator.catalog.files import read_yaml
from estimator.catalog.hf_config import architecture_from_config
from estimator.errors import SpecInvalid
from estimator.model.inventory import param_count

CONFIGS = Path(__file__).resolve().parents[1] / "data" / "configs"
SOURCES: dict[str, Any] = read_yaml(CONFIGS / "SOURCES.yaml")["configs"]
TOOLS = Path(__file__).resolve().parents[2] / "tools"
HAS_HF = importlib.util.find_spec("transformers") is not None and importlib.util.find_spec("torch") is not None
needs_hf = [pytest.mark.hf, pytest.mark.skipif(not HAS_HF, reason="torch and transformers not installed")]

# A small config per family (4 layers, the family's defaults for the rest), with the switches worth testing on.
# Families built by a checkpoint's remote code, which transformers has no class for: test_remote_code_families.py
# counts them by hand.
REMOTE_CODE = {"chatglm", "nemotron-nas"}
# The family's defaults are written into each small config: a config that leaves out a size-setting field is refused
# (test_partial_configs.py), and transformers builds the same model from the defaults given as from the defaults left
# out.


def _given(name: str, **fields: Any) -> dict[str, Any]:
    spec = family(name)
    assert spec is not None
    return {**spec.defaults, "model_type": name, **fields}


SMALL: dict[str, dict[str, Any]] = {name: _given(name, num_hidden_layers=4)
                                    for name in family_names() if name not in REMOTE_CODE}
SMALL["cohere"] |= {"use_qk_norm": True}
SMALL["glm4_moe"] |= {"use_qk_norm": True, "attention_bias": True, "first_k_dense_replace": 1}
SMALL["nemotron_h"] = _given("nemotron_h", hybrid_override_pattern="M-*E", num_hidden_layers=4)
SMALL["starcoder2"] |= {"sliding_window": 4096}
SMALL["qwen2_moe"] |= {"mlp_only_layers": [0], "decoder_sparse_step": 1}
SMALL["llama4_text"] |= {"interleave_moe_layer_step": 2}
SMALL["granitemoehybrid-hybrid"] = _given("granitemoehybrid", num_hidden_layers=4, num_key_value_heads=8,
                                          layer_types=["mamba", "mamba", "attention", "mamba"], mamba_proj_bias=True)
SMALL["falcon_h1-biased-auto-head"] = _given("falcon_h1", num_hidden_layers=2, hidden_size=512, mamba_d_ssm=None,
                                             mamba_n_heads=16, mamba_rms_norm=True, projectors_bias=True,
                                             mamba_proj_bias=True, attention_bias=True, mlp_bias=True,
                                             num_key_value_heads=None, tie_word_embeddings=True)
SMALL["mllama-small-vision"] = {"model_type": "mllama", "text_config": {
                                 **_given("mllama_text_model", num_hidden_layers=4, cross_attention_layers=[1]),
                                 "model_type": None}, "vision_config": {"image_size": 560,
                                 "num_hidden_layers": 2, "num_global_layers": 1, "max_num_tiles": 2,
                                 "supported_aspect_ratios": [[1, 1], [1, 2], [2, 1]]}}
SMALL["mistral3-text"] = {"model_type": "mistral3", "text_config": _given("ministral3", num_hidden_layers=2)}
SMALL["refinedweb-40b-layout"] = {"model_type": "RefinedWeb", "hidden_size": 512, "n_head": 8, "n_head_kv": 2,
                                  "n_layer": 2, "vocab_size": 1000, "parallel_attn": True, "bias": False}
SMALL["refinedweb-7b-layout"] = {"model_type": "RefinedWebModel", "hidden_size": 512, "n_head": 8, "n_layer": 2,
                                 "vocab_size": 1000, "multi_query": True, "parallel_attn": True, "bias": False}


def _tool() -> Any:
    sys.path.insert(0, str(TOOLS))
    try:
        import hf_param_count  # type: ignore[import-not-found]
    finally:
        sys.path.remove(str(TOOLS))
    return hf_param_count


@pytest.mark.parametrize("name", family_names())
def test_every_family_file_validates(name: str) -> None:
    spec = family(name)
    assert isinstance(spec, Family)
    assert spec.model_type == name
    assert spec.sources


def test_every_vendored_config_has_a_source() -> None:
    files = {p.stem for p in CONFIGS.glob("*.json")}
    assert files == set(SOURCES)
    for entry in SOURCES.values():
        assert entry["hub"].startswith("https://huggingface.co/") and entry["copied_from"].startswith("https://")


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_real_configs_count_as_transformers_does(name: str) -> None:
    # remote-code families (no transformers class): the hand count of their modeling file, in SOURCES.yaml
    expected = SOURCES[name]["hf_params"] if "hf_params" in SOURCES[name] else SOURCES[name]["remote_code_params"]
    arch = architecture_from_config(json.loads((CONFIGS / f"{name}.json").read_text()))
    assert param_count(arch) == expected


@pytest.mark.parametrize("name", sorted(n for n in SOURCES if "hf_params" in SOURCES[n]))
@pytest.mark.hf
@pytest.mark.skipif(not HAS_HF, reason="torch and transformers not installed")
def test_stored_counts_are_transformers_counts(name: str) -> None:
    assert _tool().count_file(CONFIGS / f"{name}.json") == SOURCES[name]["hf_params"]


@pytest.mark.parametrize("name", sorted(SMALL))
@pytest.mark.hf
@pytest.mark.skipif(not HAS_HF, reason="torch and transformers not installed")
def test_every_family_counts_as_transformers_does(name: str) -> None:
    config = SMALL[name]
    assert param_count(architecture_from_config(config)) == _tool().count_params(config), name


def test_gemma3_wrapper_takes_transformers_defaults() -> None:
    # the published Gemma 3 4B config leaves vocab_size and the head counts to Gemma3TextConfig:
    # vocab 262,208, 8 heads, 4 KV heads, head_dim 256 (transformers 5.24 configuration_gemma3.py)
    arch = architecture_from_config({"model_type": "gemma3", "text_config": {"hidden_size": 2560,
                                     "intermediate_size": 10240, "num_hidden_layers": 34}})
    assert (arch.vocab_size, arch.attention.num_heads, arch.attention.num_kv_heads) == (262_208, 8, 4)
    assert arch.attention.head_dim == 256
    assert arch.layer_windows[:6] == (4096,) * 5 + (None,)  # sliding_window 4096, pattern 6


def test_gpt_oss_layers_alternate_with_sinks() -> None:
    arch = architecture_from_config(json.loads((CONFIGS / "openai--gpt-oss-120b.json").read_text()))
    assert arch.layer_windows[:4] == (128, None, 128, None)
    assert arch.attention.sinks and arch.moe is not None and arch.moe.expert_bias and arch.moe.router_bias


def test_llama4_chunks_rope_layers_and_interleaves_moe() -> None:
    arch = architecture_from_config(json.loads((CONFIGS / "meta-llama--Llama-4-Maverick-17B-128E-Instruct.json")
                                               .read_text()))
    assert arch.layer_windows[:4] == (8192, 8192, 8192, None)  # attention_chunk_size; every 4th layer NoPE, global
    assert arch.moe_layers[:4] == (False, True, False, True)  # interleave_moe_layer_step 2


def test_nemotron_h_pattern_places_mixers_and_feed_forwards() -> None:
    arch = architecture_from_config(json.loads((CONFIGS / "nvidia--NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.json")
                                               .read_text()))
    pattern = "MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME"
    assert arch.mixer_count("mamba2") == pattern.count("M") == 23
    assert arch.mixer_count("attention") == pattern.count("*") == 6
    assert arch.num_moe_layers == pattern.count("E") == 23
    assert arch.mamba is not None and arch.mamba.state_dtype_bytes == 4  # mamba_ssm_cache_dtype float32


def test_unknown_layer_type_is_named() -> None:
    config = {"model_type": "olmo3", "num_hidden_layers": 2, "layer_types": ["full_attention", "mystery"]}
    with pytest.raises(SpecInvalid, match="mystery"):
        architecture_from_config(config)


def test_bad_pattern_is_named() -> None:
    config = {"model_type": "nemotron_h", "num_hidden_layers": 3, "hybrid_override_pattern": "MX*"}
    with pytest.raises(SpecInvalid, match="hybrid_override_pattern"):
        architecture_from_config(config)


def test_a_wrappers_uncounted_tower_is_said(cli: Any, tmp_path: Path) -> None:
    config = {"model_type": "llama4", "text_config": _given("llama4_text", num_hidden_layers=2),
              "vision_config": {"num_hidden_layers": 2}}
    (tmp_path / "config.json").write_text(json.dumps(config))
    result = cli("estimate", "--model", str(tmp_path), "--gpu", "h100", "--format", "json")
    codes = [w["code"] for w in json.loads(result.stdout)["warnings"]]
    assert "uncounted-towers" in codes  # never a silent drop


def test_an_uncached_hub_id_offline_is_one_line(cli: Any) -> None:
    """The tests run offline (conftest): a Hub id the cache lacks says so, and how to fill the cache."""
    result = cli("estimate", "--model", "some-org/some-model", "--gpu", "h100")
    assert result.exit_code != 0 and result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert "not in the cache" in result.stderr


def test_a_hugging_face_address_as_a_model_is_read_as_its_hub_id(cli: Any) -> None:
    result = cli("estimate", "--model", "https://huggingface.co/some-org/some-model", "--gpu", "h100")
    assert result.exit_code != 0 and result.stderr.count("\n") == 1
    assert "some-org/some-model is not in the cache" in result.stderr


@pytest.mark.parametrize("name", ["llama-3.1-8b" + "x" * 5000, "org/llama-3.1-8b-" + "x" * 5000])
def test_an_unknown_model_line_is_at_most_400_characters(cli: Any, name: str) -> None:
    result = cli("estimate", "--model", name, "--gpu", "h100")
    assert result.exit_code != 0 and result.stderr.count("\n") == 1
    assert len(result.stderr.rstrip("\n")) <= 400, result.stderr
    assert "x" * 100 not in result.stderr  # the name echoed at most 80 characters


def test_a_hugging_face_id_the_catalog_knows_is_accepted(cli: Any) -> None:
    result = cli("estimate", "--model", "openai/gpt-oss-120b", "--gpu", "h200", "--format", "json")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["model"]["params"] == 116_829_156_672


def test_granite_hybrid_layers_hold_mamba_state_beside_kv() -> None:
    config = _given("granitemoehybrid", num_hidden_layers=4, layer_types=["mamba", "mamba", "attention", "mamba"],
                    num_key_value_heads=8)
    arch = architecture_from_config(config)
    assert (arch.mixer_count("mamba2"), arch.mixer_count("attention"), arch.num_moe_layers) == (3, 1, 4)
    assert arch.mamba is not None and arch.mamba.inner == 128 * 64  # mamba_n_heads × mamba_d_head
    assert arch.moe is not None and arch.moe.shared_intermediate_size == 1024
    # transformers' own spelling of the same layout, and its default when no list is given: every layer Mamba-2
    same = architecture_from_config({**config, "layer_types": ["linear_attention", "linear_attention",
                                                                "full_attention", "linear_attention"]})
    assert same.layer_mixers == arch.layer_mixers
    assert architecture_from_config({**config, "num_hidden_layers": 2, "layer_types": None}).layer_mixers == (
        "mamba2", "mamba2")
