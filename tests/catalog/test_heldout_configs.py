"""Held-out published configs (tests/data/heldout, verbatim; SOURCES.yaml says from where): every one is read exactly
— its parameter count is transformers' meta-device count — or refused in one line, or answered with a warning that
names the fields its reader does not read. None is a quiet wrong answer.

Three were quietly wrong before the readers declared their fields: Nemotron-3 Super's latent MoE (458.6 B for
120.7 B), Nemotron-3.5's per-layer block list (69.4 B for 31.6 B, no Mamba state, 9 × the KV cache), GLM-5.2's DSA
indexer in all 78 layers (21 have one). Their KV cache and recurrent state per token are checked here by hand.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from estimator.catalog.architecture import Architecture
from estimator.catalog.files import read_yaml
from estimator.catalog.hf_config import architecture_from_config
from estimator.errors import SpecInvalid
from estimator.model.inventory import param_count
from estimator.model.memory import kv_elements_per_token
from estimator.model.state import state_layers
from tests.catalog.test_families import HAS_HF, _tool

HELDOUT = Path(__file__).resolve().parents[1] / "data" / "heldout"
ENTRIES: dict[str, Any] = read_yaml(HELDOUT / "SOURCES.yaml")["configs"]
# Families read natively: these must be exact, without a warning
READ_EXACTLY = ("nvidia--NVIDIA-Nemotron-3-Super-120B-A12B-FP8", "nvidia--NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16",
                "nvidia--NVIDIA-Nemotron-3.5-Lightning-30B-A3B-NVFP4", "zai-org--GLM-5.2", "nvidia--GLM-5.2-NVFP4")


def _config(name: str) -> dict[str, Any]:
    config: dict[str, Any] = json.loads((HELDOUT / f"{name}.json").read_text())
    return config


def _arch(name: str) -> Architecture:
    return architecture_from_config(_config(name))


def test_heldout_set_is_ten_or_more_sourced_configs() -> None:
    assert {p.stem for p in HELDOUT.glob("*.json")} == set(ENTRIES)
    assert len(ENTRIES) >= 10
    for entry in ENTRIES.values():
        assert entry["hub"].startswith("https://huggingface.co/") and entry["copied_from"].startswith("https://")
        assert ("hf_params" in entry) != ("hf_unbuilt" in entry)


@pytest.mark.parametrize("name", sorted(ENTRIES))
def test_heldout_config_is_exact_or_refused_or_warned(name: str) -> None:
    refusal: str | None = None
    try:
        arch = _arch(name)
    except SpecInvalid as error:
        refusal = str(error)
    if refusal is not None:
        assert refusal and "\n" not in refusal  # refused in one line
        return
    if arch.unread_fields or arch.read_notes:  # answered, with a warning naming what the reader does not read
        return  # (read_notes: read by transformers on the meta device, which says what the architecture cannot hold)
    entry = ENTRIES[name]
    expected = entry.get("hf_params", entry.get("hand_params"))
    assert expected is not None, f"{name} is answered without a warning, and nothing to check its count against"
    assert param_count(arch) == expected


@pytest.mark.parametrize("name", READ_EXACTLY)
def test_natively_read_heldout_config_counts_as_transformers_does(name: str) -> None:
    arch = _arch(name)
    assert arch.unread_fields == () and arch.defaulted_fields == ()
    assert param_count(arch) == ENTRIES[name]["hf_params"]


@pytest.mark.parametrize("name", sorted(n for n in ENTRIES if "hf_params" in ENTRIES[n]))
@pytest.mark.hf
@pytest.mark.skipif(not HAS_HF, reason="torch and transformers not installed")
def test_heldout_counts_are_transformers_counts(name: str) -> None:
    assert _tool().count_file(HELDOUT / f"{name}.json") == ENTRIES[name]["hf_params"]


def test_nemotron_3_super_latent_moe_by_hand() -> None:
    arch = _arch("nvidia--NVIDIA-Nemotron-3-Super-120B-A12B-FP8")
    moe = arch.moe
    assert moe is not None and moe.latent_size == 1024
    # hybrid_override_pattern: 40 M, 8 *, 40 E of 88; experts up/down 2688 × 1024 (the latent width, not 4096)
    assert (arch.mixer_count("mamba2"), arch.mixer_count("attention"), arch.num_moe_layers) == (40, 8, 40)
    experts = 40 * 512 * 2 * 2688 * 1024
    latent_proj = 40 * 2 * 4096 * 1024  # fc1_latent_proj, fc2_latent_proj
    without = param_count(arch.model_copy(update={"moe": moe.model_copy(update={"latent_size": None})}))
    assert param_count(arch) == without - 40 * 512 * 2 * 2688 * (4096 - 1024) + latent_proj
    assert experts == 112_742_891_520
    # KV: 8 attention layers × 2 KV heads × (128 + 128); the 40 Mamba-2 layers hold a fixed state instead
    assert kv_elements_per_token(arch, 0, decompressed_mla=False) == 2 * 256
    (mamba,) = state_layers(arch, element_bytes=2)
    # conv over x, B, C: 128 × 64 + 2 × 8 × 128 = 10,240 channels, the last 3 inputs; SSM 128 heads × 64 × 128;
    # mamba_ssm_cache_dtype float32: 4 B an element
    assert (mamba.layers, mamba.conv_elements, mamba.recurrent_elements) == (40, 3 * 10_240, 128 * 64 * 128)
    assert mamba.bytes_per_sequence == 40 * (30_720 + 1_048_576) * 4 == 172_687_360


def test_nemotron_3_5_block_list_by_hand(cli: Callable[..., Any], tmp_path: Path) -> None:
    name = "nvidia--NVIDIA-Nemotron-3.5-Lightning-30B-A3B-NVFP4"
    blocks = _config(name)["layers_block_type"]
    arch = _arch(name)
    assert (arch.mixer_count("mamba2"), arch.mixer_count("attention"), arch.num_moe_layers) == (
        blocks.count("mamba"), blocks.count("attention"), blocks.count("moe")) == (23, 6, 23)
    (mamba,) = state_layers(arch, element_bytes=2)
    # conv: 64 × 64 + 2 × 8 × 128 = 6,144 channels × 3; SSM 64 heads × 64 × 128; float32
    assert mamba.bytes_per_sequence == 23 * (3 * 6_144 + 64 * 64 * 128) * 4 == 49_930_240
    (tmp_path / "config.json").write_bytes((HELDOUT / f"{name}.json").read_bytes())
    result = cli("estimate", "--model", str(tmp_path), "--gpu", "h200", "--prompt-tokens", "8192",
                 "--output-tokens", "0", "--dtype", "bf16", "--format", "json")
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    # 6 attention layers × 2 KV heads × (128 + 128) × 2 B = 6,144 B per token (not 52 layers' 53,248)
    assert report["memory"]["kv_cache_per_token_bytes"] == 6 * 2 * 256 * 2 == 6_144
    assert report["memory"]["kv_cache_bytes"] == 6_144 * 8_192
    assert report["memory"]["state_by_kind"] == [{"kind": "mamba2", "layers": 23, "bytes_per_sequence": 49_930_240,
                                                  "bytes": 49_930_240}]
    assert report["model"]["params"] == ENTRIES[name]["hf_params"]
    assert not [w for w in report["warnings"] if w["code"] in ("unread-fields", "defaulted-fields")]


def test_glm_5_2_indexer_only_where_its_layers_run_one(cli: Callable[..., Any], tmp_path: Path) -> None:
    name = "zai-org--GLM-5.2"
    types = _config(name)["indexer_types"]
    arch = _arch(name)
    assert arch.num_indexer_layers == types.count("full") == 21
    assert arch.has_indexer(0) and not arch.has_indexer(3) and arch.has_indexer(6)
    # the latent cache (kv_lora_rank 512 + RoPE key 64) in all 78 layers, the indexer key (128) in the 21 that run one
    assert kv_elements_per_token(arch, 0, decompressed_mla=False) == 512 + 64 + 128
    assert kv_elements_per_token(arch, 3, decompressed_mla=False) == 512 + 64
    (tmp_path / "config.json").write_bytes((HELDOUT / f"{name}.json").read_bytes())
    result = cli("estimate", "--model", str(tmp_path), "--gpu", "h200", "--prompt-tokens", "8192",
                 "--output-tokens", "0", "--dtype", "fp8", "--kv-dtype", "bf16", "--format", "json", "--explain")
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    per_token = (78 * (512 + 64) + 21 * 128) * 2
    assert report["memory"]["kv_cache_per_token_bytes"] == per_token == 95_232
    assert report["memory"]["kv_cache_bytes"] == per_token * 8_192
    parts = [(p["layers"], p["bytes"]) for p in report["memory"]["kv_by_window"]]
    assert parts == [(21, 21 * 704 * 2 * 8_192), (57, 57 * 576 * 2 * 8_192)]
