"""Kimi Linear (kimi_linear): Kimi Delta Attention and latent-attention layers, counted as transformers 5.25 builds
KimiLinearForCausalLM, with the KV cache and the fixed state worked by hand.

No copy of moonshotai/Kimi-Linear-48B-A3B-Instruct's config.json was found in the reference index, so the large
case here is KimiLinearConfig's own defaults (its docstring names that checkpoint) with the checkpoint's
linear_attn_config layer lists, which several engines' sources quote alike: full attention at 1-indexed layers
4, 8, 12, 16, 20, 24, 27, KDA on the other 20, 32 heads of 128, a conv of 4. Its transformers count, 49,122,675,072,
came from

    python -c "import sys; sys.path.insert(0, 'tools'); import hf_param_count as h; \
print(h.count_params({'model_type': 'kimi_linear', 'linear_attn_config': {...}}))"
"""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest

from estimator.catalog.hf_config import architecture_from_config
from estimator.catalog.registry import Catalog
from estimator.errors import SpecInvalid
from estimator.model.inventory import param_count
from estimator.model.memory import kv_cache_bytes
from estimator.model.state import state_layers
from tests.catalog.test_families import _tool

HAS_HF = importlib.util.find_spec("transformers") is not None and importlib.util.find_spec("torch") is not None
LINEAR_48B = {"full_attn_layers": [4, 8, 12, 16, 20, 24, 27],
              "kda_layers": [1, 2, 3, 5, 6, 7, 9, 10, 11, 13, 14, 15, 17, 18, 19, 21, 22, 23, 25, 26],
              "head_dim": 128, "num_heads": 32, "short_conv_kernel_size": 4}
SHAPE_48B: dict[str, Any] = {"model_type": "kimi_linear", "linear_attn_config": LINEAR_48B}
HF_48B = 49_122_675_072
SMALL: dict[str, dict[str, Any]] = {
    "transformers-names": {"model_type": "kimi_linear", "num_hidden_layers": 5, "hidden_size": 256,
                           "intermediate_size": 512, "moe_intermediate_size": 64, "num_attention_heads": 4,
                           "vocab_size": 1000, "pad_token_id": 0, "kv_lora_rank": 32, "qk_rope_head_dim": 16,
                           "qk_nope_head_dim": 32, "v_head_dim": 32, "num_local_experts": 8,
                           "num_experts_per_tok": 2, "linear_head_dim": 32, "linear_num_heads": 4},
    # the checkpoint's own names (KimiLinearConfig.attribute_map), a query latent, two shared experts, tie asked for
    "checkpoint-names": {"model_type": "kimi_linear", "num_hidden_layers": 4, "hidden_size": 256,
                         "intermediate_size": 512, "moe_intermediate_size": 64, "num_attention_heads": 4,
                         "num_key_value_heads": 4, "vocab_size": 1000, "pad_token_id": 0, "kv_lora_rank": 32,
                         "q_lora_rank": 48, "qk_rope_head_dim": 16, "qk_nope_head_dim": 32, "v_head_dim": 32,
                         "num_experts": 8, "num_experts_per_token": 2, "num_shared_experts": 2,
                         "first_k_dense_replace": 2, "model_max_length": 4096, "tie_word_embeddings": True,
                         "linear_attn_config": {"full_attn_layers": [2, 4], "kda_layers": [1, 3], "head_dim": 16,
                                                "num_heads": 8, "short_conv_kernel_size": 3}},
    "listed-types": {"model_type": "kimi_linear", "num_hidden_layers": 3, "hidden_size": 128,
                     "intermediate_size": 256, "moe_intermediate_size": 64, "num_attention_heads": 4,
                     "vocab_size": 1000, "pad_token_id": 0, "kv_lora_rank": 32, "qk_rope_head_dim": 16,
                     "qk_nope_head_dim": 32, "v_head_dim": 32, "num_local_experts": 4, "num_experts_per_tok": 2,
                     "linear_head_dim": 16, "linear_num_heads": 8, "mlp_layer_types": ["sparse", "dense", "sparse"],
                     "layer_types": ["linear_attention", "full_attention", "linear_attention"]},
}


def test_the_48b_shape_places_latent_attention_where_the_checkpoint_lists_it() -> None:
    arch = architecture_from_config(SHAPE_48B)
    assert [i for i in range(27) if arch.mixer(i) == "attention"] == [3, 7, 11, 15, 19, 23, 26]  # 1-indexed lists
    assert arch.mixer_count("kda") == 20 and arch.num_moe_layers == 26  # first_k_dense_replace 1
    assert param_count(arch) == HF_48B


def test_the_48b_cache_and_state_by_hand(catalog: Catalog) -> None:
    arch = architecture_from_config(SHAPE_48B)
    # 7 latent-attention layers × (kv_lora_rank 512 + qk_rope_head_dim 64) × 2 bytes, per token
    assert kv_cache_bytes(arch, 1, 1, catalog.formats.get("bf16")) == 7 * 576 * 2 == 8_064
    # 20 KDA layers × ((conv 4 − 1) × q, k, v 3 × 32 × 128 × 2 bytes + 32 heads × 128 × 128 × 4 bytes fp32)
    [state] = state_layers(arch, 2)
    assert state.kind == "kda"
    assert state.bytes_per_sequence == 20 * (3 * 3 * 4096 * 2 + 32 * 128 * 128 * 4) == 43_417_600


def test_tie_word_embeddings_is_not_followed_as_transformers_does_not() -> None:
    # KimiLinearForCausalLM's _tied_weights_keys is empty: the LM head is its own whatever the config says
    assert not architecture_from_config(SMALL["checkpoint-names"]).tie_word_embeddings


@pytest.mark.parametrize("field", [{"routed_expert_hidden_size": 96}, {"mla_use_output_gate": True},
                                   {"attn_res_block_size": 4}, {"moe_layer_freq": 2},
                                   {"linear_attn_config": {**LINEAR_48B, "use_full_rank_gate": True}}])
def test_kimi_k3_fields_are_refused_by_name(field: dict[str, Any]) -> None:
    with pytest.raises(SpecInvalid, match="Kimi-K3 architecture fields not read yet: " + next(iter(field))):
        architecture_from_config({**SHAPE_48B, **field})


@pytest.mark.hf
@pytest.mark.skipif(not HAS_HF, reason="torch and transformers not installed")
def test_the_48b_count_is_transformers_count() -> None:
    assert _tool().count_params(SHAPE_48B) == HF_48B


@pytest.mark.parametrize("name", sorted(SMALL))
@pytest.mark.hf
@pytest.mark.skipif(not HAS_HF, reason="torch and transformers not installed")
def test_small_configs_count_as_transformers_does(name: str) -> None:
    assert param_count(architecture_from_config(SMALL[name])) == _tool().count_params(SMALL[name])
