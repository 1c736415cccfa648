"""State memory beside KV: Mamba-2 and gated-DeltaNet layers hold a fixed state per sequence (hand counts)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from estimator.catalog.architecture import Architecture
from estimator.catalog.hf_config import architecture_from_config
from estimator.model.memory import kv_elements_per_token
from estimator.model.state import state_bytes, state_layers

CONFIGS = Path(__file__).resolve().parents[1] / "data" / "configs"


def _arch(name: str) -> Architecture:
    return architecture_from_config(json.loads((CONFIGS / f"{name}.json").read_text()))


def test_nemotron_h_mamba2_state_by_hand() -> None:
    arch = _arch("nvidia--NVIDIA-Nemotron-3-Nano-30B-A3B-BF16")
    (mamba,) = state_layers(arch, element_bytes=2)
    # 64 heads × 64 head_dim = 4,096 inner; conv channels 4,096 + 2 × 8 groups × 128 state = 6,144
    assert mamba.conv_elements == 3 * 6_144  # conv_kernel 4: the last 3 inputs
    assert mamba.recurrent_elements == 64 * 64 * 128  # heads × head_dim × state_size
    assert mamba.element_bytes == 4  # mamba_ssm_cache_dtype float32 wins over the activation dtype
    assert mamba.bytes_per_sequence == 23 * (18_432 + 524_288) * 4 == 49_930_240
    assert state_bytes(arch, 8, element_bytes=2) == 8 * 49_930_240
    # KV only in the 6 attention layers: 2 KV heads × (128 + 128) per token per layer
    assert kv_elements_per_token(arch, 0, decompressed_mla=False) * sum(arch.kv_window_groups().values()) == 3_072


def test_qwen3_5_deltanet_state_by_hand() -> None:
    arch = _arch("Qwen--Qwen3.5-27B")
    (deltanet,) = state_layers(arch, element_bytes=2)
    assert deltanet.layers == 48  # 64 layers, every 4th is full attention
    # key_dim 16 × 128 = 2,048, value_dim 48 × 128 = 6,144; conv over q, k, v: 2 × 2,048 + 6,144 = 10,240
    assert deltanet.conv_elements == 3 * 10_240
    assert deltanet.recurrent_elements == 48 * 128 * 128  # a d_k × d_v matrix per value head
    assert deltanet.bytes_per_sequence == 48 * (30_720 + 786_432) * 4 == 156_893_184  # mamba_ssm_dtype float32
    assert arch.kv_window_groups() == {None: 16}


def test_state_works_on_arrays() -> None:
    np = pytest.importorskip("numpy")
    arch = _arch("Qwen--Qwen3.5-27B")
    batch = np.array([1, 4, 16], dtype=np.int64)
    assert state_bytes(arch, batch, element_bytes=2).tolist() == [156_893_184 * b for b in (1, 4, 16)]


def test_pure_transformer_has_no_state() -> None:
    assert state_layers(_arch("Qwen--Qwen3-32B"), element_bytes=2) == []


def test_report_shows_state_beside_kv_and_capacity_counts_it(cli: Callable[..., Any], tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text((CONFIGS / "nvidia--NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.json").read_text())
    result = cli("estimate", "--model", str(tmp_path), "--gpu", "h100", "--batch", "8", "--prompt-tokens", "8192",
                 "--output-tokens", "0", "--format", "json")
    assert result.exit_code == 0, result.stderr
    memory = json.loads(result.stdout)["memory"]
    assert memory["state_bytes"] == 8 * 49_930_240
    assert memory["kv_cache_bytes"] == 6 * 2 * 256 * 2 * 8192 * 8  # layers × KV heads × (K + V) × bf16 × tokens × batch
    assert memory["state_by_kind"] == [{"kind": "mamba2", "layers": 23, "bytes_per_sequence": 49_930_240,
                                        "bytes": 8 * 49_930_240}]
    parts = ("weights_per_gpu_bytes", "kv_cache_per_gpu_bytes", "state_per_gpu_bytes", "activation_per_gpu_bytes",
             "overhead_per_gpu_bytes")
    assert memory["per_gpu_bytes"] == sum(memory[k] for k in parts)
    free = memory["capacity_bytes"] - memory["per_gpu_bytes"]
    assert memory["max_batch"] > 8 and free > 0


def test_falcon_h1_layers_hold_kv_and_mamba_state_both(cli: Callable[..., Any], tmp_path: Path) -> None:
    # a Falcon-H1-0.5B-sized config (the widths of the FALCON_H1_500M_CONFIG fixture in NVIDIA-NeMo/Megatron-Bridge
    # tests/unit_tests/models/falcon_h1/test_falcon_h1_bridge.py, with mamba_d_ssm 1536 = 24 heads × 64 as
    # transformers requires), at 36 layers: every layer is attention and Mamba-2 side by side
    config = {"model_type": "falcon_h1", "num_hidden_layers": 36, "hidden_size": 1024, "head_dim": 64,
              "num_attention_heads": 8, "num_key_value_heads": 2, "mamba_d_ssm": 1536, "mamba_n_heads": 24,
              "mamba_d_head": 64, "mamba_d_state": 128, "vocab_size": 32784, "intermediate_size": 2048}
    arch = architecture_from_config(config)
    assert arch.kv_window_groups() == {None: 36} and arch.mamba_layers == 36
    (mamba,) = state_layers(arch, element_bytes=2)
    # conv channels 1536 + 2 × 1 group × 128 state = 1,792; kernel 4 keeps 3; SSM 24 heads × 64 × 128
    assert (mamba.conv_elements, mamba.recurrent_elements) == (3 * 1_792, 24 * 64 * 128)
    assert mamba.bytes_per_sequence == 36 * (5_376 + 196_608) * 2 == 14_542_848  # no state dtype: bf16
    (tmp_path / "config.json").write_text(json.dumps(config))
    result = cli("estimate", "--model", str(tmp_path), "--gpu", "h100", "--batch", "4", "--prompt-tokens", "4096",
                 "--output-tokens", "0", "--format", "json")
    assert result.exit_code == 0, result.stderr
    memory = json.loads(result.stdout)["memory"]
    # KV: 36 layers × 2 KV heads × (64 + 64) × 2 B = 18,432 B per token, beside the fixed state
    assert memory["kv_cache_per_token_bytes"] == 36 * 2 * 128 * 2 == 18_432
    assert memory["kv_cache_bytes"] == 18_432 * 4096 * 4
    assert memory["state_by_kind"] == [{"kind": "mamba2", "layers": 36, "bytes_per_sequence": 14_542_848,
                                        "bytes": 4 * 14_542_848}]
