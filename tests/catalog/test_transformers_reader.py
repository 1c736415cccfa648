"""Families no family file reads, read by building them with transformers on the meta device.

Real published configs (tests/data/transformers_read/, SOURCES.yaml says from where) of model_types no family file
covers: the parameters are transformers' own count exactly, the KV cache per token and the windows are worked out by
hand from each config, and what the architecture cannot hold is said, never guessed. Without torch and transformers
the refusal names the extra that reads them. The `hf`-marked tests need both (CI installs them).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

from estimator.catalog import transformers_reader
from estimator.catalog.files import read_yaml
from estimator.catalog.hf_config import architecture_from_config, unsupported_message
from estimator.errors import SpecInvalid
from estimator.model.inventory import param_count, tensor_inventory
from estimator.model.memory import kv_elements_per_token

HERE = Path(__file__).resolve().parents[1] / "data" / "transformers_read"
SOURCES: dict[str, Any] = read_yaml(HERE / "SOURCES.yaml")["configs"]
HAS_HF = importlib.util.find_spec("transformers") is not None and importlib.util.find_spec("torch") is not None
hf_only = pytest.mark.skipif(not HAS_HF, reason="torch and transformers not installed")


def _config(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((HERE / f"{name}.json").read_text())
    return data


def _kv_per_token(arch: Any) -> int:
    """Cached K/V elements per token over every attention layer."""
    return sum(kv_elements_per_token(arch, layer, decompressed_mla=True) for layer in range(arch.num_layers)
               if arch.mixer(layer) == "attention")


def test_without_transformers_the_refusal_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(transformers_reader, "transformers_installed", lambda: False)
    with pytest.raises(SpecInvalid) as refused:
        architecture_from_config(_config("poolside--Laguna-XS.2-FP8"))
    line = str(refused.value)
    assert "unsupported model_type 'laguna'" in line
    assert "pip install 'llm-estimator[transformers]'" in line
    assert "\n" not in line and len(line) <= 400


def test_a_wrapper_neither_it_nor_its_text_model_read_here_is_refused_by_its_own_name(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(transformers_reader, "transformers_installed", lambda: False)
    with pytest.raises(SpecInvalid, match=r"unsupported model_type 'muse_glimmer'.*llm-estimator\[transformers\]"):
        architecture_from_config(_config("meta-models--Muse-Glimmer-30B"))


@pytest.mark.parametrize("name", sorted(n for n, s in SOURCES.items() if not (s.get("refused") or s.get("direct"))))
@pytest.mark.hf
@hf_only
def test_real_configs_count_exactly_as_transformers_builds_them(name: str) -> None:
    arch = architecture_from_config(_config(name))
    assert arch.read_by == f"transformers {importlib.metadata.version('transformers')}"
    assert param_count(arch) == SOURCES[name]["hf_params"] == _transformers_count(_config(name))
    assert not [g.name for g in tensor_inventory(arch) if g.role.value == "other"]


def _transformers_count(config: dict[str, Any]) -> int:
    """transformers' own count, built here as tools/hf_param_count.py does: sum(p.numel()), tied weights once."""
    import torch
    import transformers

    fields = {k: v for k, v in config.items() if k not in ("model_type", "transformers_version", "quantization_config")}
    built = transformers.AutoConfig.for_model(config["model_type"], **fields)
    autos = (transformers.AutoModelForCausalLM, transformers.AutoModelForImageTextToText)
    auto = next(a for a in (autos[::-1] if "vision_config" in config else autos) if type(built) in a._model_mapping)
    with torch.device("meta"):
        return sum(p.numel() for p in auto.from_config(built).parameters())  # type: ignore[no-untyped-call]


# KV cache per token and windows, by hand from each config.json:
# - Laguna-XS.2: 40 layers, layer_types full every 4th from layer 0 (10 full, 30 sliding of sliding_window 512);
#   num_key_value_heads 8 × (head_dim 128 + 128) = 2,048 elements per layer (its per-layer query heads, 48 or 64,
#   do not change the cache).
# - Muse-Glimmer-30B (text_config): 52 layers, full every 4th from layer 3 (13 full, 39 sliding of 2,048);
#   2 KV heads × (128 + 128) = 512 per layer. Its vision tower and projector are counted, in their own roles.
BY_HAND = {
    "poolside--Laguna-XS.2-FP8": (40 * 8 * (128 + 128), {None: 10, 512: 30}),
    "meta-models--Muse-Glimmer-30B": (52 * 2 * (128 + 128), {None: 13, 2048: 39}),
}


@pytest.mark.parametrize("name", sorted(BY_HAND))
@pytest.mark.hf
@hf_only
def test_kv_cache_per_token_and_windows_are_the_configs(name: str) -> None:
    arch = architecture_from_config(_config(name))
    per_token, windows = BY_HAND[name]
    assert _kv_per_token(arch) == per_token
    assert arch.kv_window_groups() == windows
    assert arch.read_notes == ()


@pytest.mark.hf
@hf_only
def test_layers_with_their_own_kv_heads_are_an_upper_bound_and_said() -> None:
    """MiMo-V2-Flash: hybrid_layer_pattern 0 = full attention (9 layers: 4 KV heads of 192 + 128), 1 = sliding
    (39 layers: swa_num_key_value_heads 8 of 192 + 128, window sliding_window_size 128 + 1 as transformers'
    MiMoV2FlashConfig keeps it). Exactly 9 × 1,280 + 39 × 2,560 = 111,360 elements per token; the architecture
    holds one KV width, so every attention layer takes the widest (48 × 2,560 = 122,880) and the notes say so."""
    arch = architecture_from_config(_config("XiaomiMiMo--MiMo-V2-Flash"))
    assert 9 * 4 * 320 + 39 * 8 * 320 == 111_360 < _kv_per_token(arch) == 48 * 8 * 320
    assert arch.kv_window_groups() == {None: 9, 129: 39}
    assert any("differ in their K/V widths" in note for note in arch.read_notes)


@pytest.mark.hf
@hf_only
def test_experts_and_routing_are_read_from_the_modules() -> None:
    """Laguna-XS.2: mlp_layer_types dense then 39 sparse; 256 experts of 512, top 8, one shared expert of 512."""
    arch = architecture_from_config(_config("poolside--Laguna-XS.2-FP8"))
    assert arch.moe is not None and arch.num_moe_layers == 39 and not arch.moe_layers[0]
    assert (arch.moe.num_experts, arch.moe.experts_per_token, arch.moe.expert_intermediate_size,
            arch.moe.shared_intermediate_size) == (256, 8, 512, 512)
    assert arch.mlp.intermediate_size == 8192  # the dense first layer's


@pytest.mark.hf
@hf_only
def test_a_wrappers_text_fields_at_the_top_level_are_refused_not_read_as_defaults() -> None:
    """Step3p7Config builds its language model from text_config; this config.json is flat, so transformers would
    build the default text model (every layer full attention, no window) whatever the file says."""
    with pytest.raises(SpecInvalid, match=r"step3p7 config reads its language model from text_config; this "
                                          r"config.json states layer_types, .*sliding_window"):
        architecture_from_config(_config("stepfun-ai--Step-3.7-Flash"))


# What the architecture cannot hold of today's families, as the reader says it (the parameters stay exact):
# DeepSeek-V4's compressed attention layers and indexer keys, its hyper-connection tensors (hc_head.*), which fit no
# role; Gemma 4's global layers, whose K/V heads and widths are not the sliding layers'.
NOT_HELD = {"deepseek-ai--DeepSeek-V4-Flash": ("compressed_sparse_attention", "heavily_compressed_attention",
                                               "indexer", "hc_head.hc_base"),
            "google--gemma-4-26B-A4B": ("differ in their K/V widths",)}


@pytest.mark.parametrize("name", sorted(NOT_HELD))
@pytest.mark.hf
@hf_only
def test_todays_families_count_exactly_and_say_what_they_do_not_hold(name: str) -> None:
    config = _config(name)
    arch = transformers_reader.read_with_transformers(config, unsupported_message(config["model_type"]))
    assert param_count(arch) == SOURCES[name]["hf_params"] == _transformers_count(config)
    notes = " ".join(arch.read_notes)
    assert all(said in notes for said in NOT_HELD[name]), notes


@pytest.mark.hf
@hf_only
def test_a_wrapper_transformers_does_not_know_falls_back_to_its_text_model_or_one_line() -> None:
    """Kimi-K3: transformers knows neither kimi_k3 nor, from this config, how to build its kimi_linear text model
    (an activation it has no function for): one line, never a guess."""
    config = _config("moonshotai--Kimi-K3")
    with pytest.raises(SpecInvalid) as refused:
        transformers_reader.read_with_transformers(config, unsupported_message("kimi_k3"))
    assert "could not build kimi_linear" in str(refused.value) and "\n" not in str(refused.value)


@pytest.mark.hf
@hf_only
def test_a_model_type_transformers_does_not_know_is_said() -> None:
    with pytest.raises(SpecInvalid, match=r"unsupported model_type 'baichuan'.*transformers \S+ does not know it"):
        architecture_from_config({"model_type": "baichuan", "hidden_size": 4096})


@pytest.mark.hf
@hf_only
def test_a_read_architecture_is_cached_on_disk(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("ESTIMATOR_CACHE_DIR", str(tmp_path))
    first = architecture_from_config(_config("poolside--Laguna-XS.2-FP8"))
    assert list((tmp_path / "transformers-read").glob("*.json"))

    def no_build(*args: Any) -> Any:
        raise AssertionError("built again")

    monkeypatch.setattr(transformers_reader, "_read", no_build)
    assert architecture_from_config(_config("poolside--Laguna-XS.2-FP8")) == first


@pytest.mark.hf
@hf_only
def test_a_tensor_in_no_role_is_counted_as_other_and_named() -> None:
    import torch

    from estimator.catalog.meta_tensors import meta_rows

    class Tiny(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed_tokens = torch.nn.Embedding(10, 4, device="meta")
            self.mystery = torch.nn.Parameter(torch.empty(3, 5, device="meta"))

        def get_input_embeddings(self) -> torch.nn.Module:
            return self.embed_tokens

        def get_output_embeddings(self) -> None:
            return None

    rows, unclassified = meta_rows(Tiny())
    assert ("mystery", "other", 15, 1, 0) in rows and unclassified == ["mystery"]
    assert sum(numel * count for _, _, numel, count, _ in rows) == 10 * 4 + 15


@pytest.mark.hf
@hf_only
def test_the_report_says_how_the_model_was_read(cli: Any, tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text((HERE / "XiaomiMiMo--MiMo-V2-Flash.json").read_text())
    result = cli("--model", str(tmp_path), "--gpu", "h100", "--format", "json", entry="estimate")
    report = json.loads(result.stdout)
    assert "read-by-transformers" in [n["code"] for n in report["assumptions"]]
    assert "read-not-held" in [n["code"] for n in report["warnings"]]
    assert report["model"]["params"] == SOURCES["XiaomiMiMo--MiMo-V2-Flash"]["hf_params"]
