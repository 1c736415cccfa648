"""Reading Hugging Face config.json files: every catalog family, nested text configs, and clear errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from estimator.catalog.files import default_specs_dir, read_yaml
from estimator.catalog.hf_config import architecture_from_config, supported_model_types
from estimator.catalog.registry import Catalog, model_from_config_file
from estimator.errors import SpecInvalid
from estimator.model.inventory import param_count

MODEL_FILES = sorted((default_specs_dir() / "models").glob("*.yaml"))


def _config(name: str) -> dict[str, Any]:
    data = read_yaml(default_specs_dir() / "models" / f"{name}.yaml")
    return dict(data["config"])


@pytest.mark.parametrize("path", MODEL_FILES, ids=lambda p: p.stem)
def test_every_catalog_config_reads_from_a_json_file(path: Path, tmp_path: Path) -> None:
    data = read_yaml(path)
    file = tmp_path / "config.json"
    file.write_text(json.dumps(data["config"]))
    model = model_from_config_file(tmp_path)  # a folder holding config.json
    assert model.arch is not None
    assert param_count(model.arch) == data["hf_params"]


def test_families_required_by_the_core_issue_are_supported() -> None:
    assert {"llama", "mistral", "qwen2", "gemma2", "phi3", "gpt2"} <= set(supported_model_types())


def test_nested_text_config_is_unwrapped() -> None:
    wrapped = _config("gemma-3-27b")  # the published Gemma3ForConditionalGeneration config
    assert wrapped["model_type"] == "gemma3" and "vision_config" in wrapped
    arch = architecture_from_config(wrapped)
    assert arch.model_type == "gemma3_text"
    assert arch.num_layers == 62


def test_missing_field_is_named() -> None:
    config = _config("deepseek-v3")
    del config["kv_lora_rank"]
    with pytest.raises(SpecInvalid, match="kv_lora_rank"):
        architecture_from_config(config)


def test_missing_field_without_a_family_default_is_named() -> None:
    config = _config("qwen3-30b-a3b")
    del config["hidden_size"]
    family_defaults = {"hidden_size": None}  # an explicit null is the config's word: no family default fills it
    with pytest.raises(SpecInvalid, match="hidden_size"):
        architecture_from_config(config | family_defaults)


@pytest.fixture
def _no_transformers(monkeypatch: pytest.MonkeyPatch) -> None:
    """As without the transformers extra: a model_type no family file reads is refused here, not built."""
    from estimator.catalog import transformers_reader

    monkeypatch.setattr(transformers_reader, "transformers_installed", lambda: False)


@pytest.mark.usefixtures("_no_transformers")
def test_unsupported_model_type_lists_the_closest_supported() -> None:
    # jamba, one letter away from mamba, comes first; llama next
    with pytest.raises(SpecInvalid, match=r"unsupported model_type 'mamba'; supported: jamba, llama, .* and \d+ more "
                                          r"\(`estimator models`"):
        architecture_from_config({"model_type": "mamba"})


@pytest.mark.usefixtures("_no_transformers")
def test_unsupported_model_type_line_is_cut_to_400_characters_and_its_echo_to_80() -> None:
    """Every supported model_type in one line was over 500 characters; a hostile model_type could be any length."""
    supported = supported_model_types()
    assert len(", ".join(supported)) > 400  # what the line would be if it listed them all
    for model_type in ("mamba", "q" * 5000, ["a", "list"], 7):
        with pytest.raises(SpecInvalid) as refused:
            architecture_from_config({"model_type": model_type})
        line = str(refused.value)
        assert "\n" not in line and len(line) <= 400, line
        assert f"and {len(supported) - 5} more" in line
    with pytest.raises(SpecInvalid) as refused:
        architecture_from_config({"model_type": "q" * 5000})
    assert "'" + "q" * 79 + "…'" in str(refused.value)


@pytest.mark.usefixtures("_no_transformers")
def test_a_model_type_that_is_a_path_reads_no_file() -> None:
    for model_type in ("../../../etc/passwd", "/etc/passwd", ".hidden", "x" * 300):
        with pytest.raises(SpecInvalid, match="unsupported model_type"):
            architecture_from_config({"model_type": model_type})


def test_inconsistent_heads_are_reported() -> None:
    config = _config("llama-3.1-8b") | {"num_key_value_heads": 7}
    with pytest.raises(SpecInvalid, match="not a multiple"):
        architecture_from_config(config)


@pytest.mark.parametrize("text", ["{not json", "[1, 2]", '"a string"'])
def test_malformed_json_file(tmp_path: Path, text: str) -> None:
    file = tmp_path / "config.json"
    file.write_text(text)
    with pytest.raises(SpecInvalid):
        model_from_config_file(file)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(SpecInvalid, match="not found"):
        model_from_config_file(tmp_path / "nope.json")


def test_windows_per_family(catalog: Catalog) -> None:
    mistral = catalog.models.get("mistral-7b-v0.1").arch
    gemma2 = catalog.models.get("gemma-2-9b").arch
    gemma3 = catalog.models.get("gemma-3-27b").arch
    llama = catalog.models.get("llama-3.1-8b").arch
    assert mistral is not None and gemma2 is not None and gemma3 is not None and llama is not None
    assert set(mistral.layer_windows) == {4096}
    assert gemma2.layer_windows[:4] == (4096, None, 4096, None)
    assert gemma3.layer_windows[:6] == (1024,) * 5 + (None,)
    assert llama.layer_windows == ()
