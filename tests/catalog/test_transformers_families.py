"""Every family file against the model transformers builds from the same config.

Each family file's small config (tests/catalog/test_families.py SMALL) and each vendored real config
(tests/data/configs/) is read twice: by the family file, and by building the model with transformers on the meta
device (`estimator.catalog.transformers_reader`, whose parameters are transformers' own). The two must agree on the
parameter count exactly, and, where the transformers reading holds the whole architecture (no `read_notes`), on
the KV cache per token, the sliding windows, the recurrent state's size and the experts. The family files stay the
fast path; this is their check against transformers, and the reader's check against them.
"""

from __future__ import annotations

import importlib.util
import json
from typing import Any

import pytest

from estimator.catalog.architecture import Architecture
from estimator.catalog.hf_config import architecture_from_config
from estimator.catalog.transformers_reader import read_with_transformers
from estimator.errors import SpecInvalid
from estimator.model.inventory import param_count
from estimator.model.memory import kv_elements_per_token
from estimator.model.state import state_layers
from tests.catalog.test_families import CONFIGS, SMALL, SOURCES

HAS_HF = importlib.util.find_spec("transformers") is not None and importlib.util.find_spec("torch") is not None
pytestmark = [pytest.mark.hf, pytest.mark.skipif(not HAS_HF, reason="torch and transformers not installed")]

CASES: dict[str, dict[str, Any]] = {**SMALL, **{name: json.loads((CONFIGS / f"{name}.json").read_text())
                                               for name in SOURCES}}
# Text configs of multimodal wrappers: transformers builds them only inside their wrapper (no causal-LM class), so
# the bare decoder is refused; the wrapper's own config is read whole instead (its count is checked below).
WRAPPED_ONLY = {"mllama_text_model", "qwen2_5_vl_text", "qwen3_vl_text", "qwen3_vl_moe_text"}
# What the transformers reading says it cannot hold, and the family file holds: DeepSeek-V3.2's indexer keys.
SAID = {"deepseek-ai--DeepSeek-V3.2": "indexer"}


def _shape(arch: Architecture) -> dict[str, Any]:
    """What the cache, the state and the routing depend on (state in elements: the dtype is compared apart)."""
    return {
        "kv_per_token": sum(kv_elements_per_token(arch, layer, decompressed_mla=True)
                            for layer in range(arch.num_layers) if arch.mixer(layer) == "attention"),
        "windows": arch.kv_window_groups(),
        "state": [(s.kind, s.layers, s.conv_elements, s.recurrent_elements) for s in state_layers(arch, 2)],
        "experts": None if arch.moe is None else (arch.moe.num_experts, arch.moe.experts_per_token,
                                                  arch.num_moe_layers),
    }


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_family_reads_as_transformers_builds_it(name: str) -> None:
    import transformers

    config = CASES[name]
    family = architecture_from_config(config)
    text = str(family.model_type)
    if str(config.get("model_type")) not in transformers.CONFIG_MAPPING:
        pytest.skip(f"{config.get('model_type')} is built by its checkpoint's remote code (counted by hand)")
    if text in WRAPPED_ONLY and config.get("model_type") == text:
        with pytest.raises(SpecInvalid, match=f"no .*class for {text}"):
            read_with_transformers(config, "")
        return
    read = read_with_transformers(config, "")
    if family.towers or not any(key in config for key in ("vision_config", "audio_config")):
        assert param_count(read) == param_count(family)
    if name in SAID:
        assert any(SAID[name] in note for note in read.read_notes)
    elif not read.read_notes:
        assert _shape(read) == _shape(family)
