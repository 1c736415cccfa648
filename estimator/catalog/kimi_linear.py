"""Kimi Linear (``model_type: kimi_linear``): Kimi Delta Attention layers and multi-head latent attention layers,
a dense first layer and MoE (routed + shared experts) after it.

Defaults, field aliases and layouts follow transformers 5.25 ``configuration_kimi_linear.py`` (KimiLinearConfig: its
attribute_map, and __post_init__, which reads the checkpoint's ``linear_attn_config`` block with 1-indexed layer
lists) and ``modeling_kimi_linear.py`` (KimiLinearAttention, KimiLinearDeltaAttention, KimiLinearMoE).

Kimi-K3's text model publishes the same model_type with more architecture (a latent MoE, an output-gated MLA,
attention residual blocks, an indexer, a full-rank KDA gate): transformers' class would build a different, smaller
model from such a config and say nothing. This reader refuses those fields by name instead (`K3_FIELDS`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from estimator.catalog.architecture import (
    Architecture,
    Attention,
    KimiDeltaAttention,
    LatentAttention,
    MixtureOfExperts,
    Mlp,
)
from estimator.errors import SpecInvalid

Config = Mapping[str, Any]

DEFAULTS: dict[str, Any] = {  # transformers 5.25 KimiLinearConfig
    "vocab_size": 163840, "hidden_size": 2304, "intermediate_size": 9216, "moe_intermediate_size": 1024,
    "num_hidden_layers": 27, "num_attention_heads": 32, "n_shared_experts": 1, "kv_lora_rank": 512,
    "q_lora_rank": None, "qk_rope_head_dim": 64, "v_head_dim": 128, "qk_nope_head_dim": 128,
    "num_experts_per_tok": 8, "max_position_embeddings": 1048576,
    "attention_bias": False, "num_local_experts": 256, "linear_head_dim": 128, "linear_num_heads": 32,
    "linear_conv_kernel_dim": 4, "first_k_dense_replace": 1, "hidden_act": "silu",
}
# KimiLinearConfig.attribute_map: the checkpoint's names for transformers' fields
ALIASES: dict[str, str] = {"num_local_experts": "num_experts", "num_experts_per_tok": "num_experts_per_token",
                           "n_shared_experts": "num_shared_experts", "max_position_embeddings": "model_max_length"}
# linear_attn_config entries KimiLinearConfig.__post_init__ takes over its own fields
LINEAR_BLOCK = {"linear_head_dim": "head_dim", "linear_num_heads": "num_heads",
                "linear_conv_kernel_dim": "short_conv_kernel_size"}
# Kimi-K3's additions, each of which changes tensors transformers' KimiLinear class would not build
K3_FIELDS = ("routed_expert_hidden_size", "latent_moe_use_norm", "mla_use_output_gate", "attn_res_block_size",
             "indexer_types", "mhc")
FIELDS_READ = (*DEFAULTS, *ALIASES.values(), "layer_types", "mlp_layer_types", "linear_attn_config", "moe_layer_freq",
               *K3_FIELDS)
# routing and numerics (how experts are chosen and scaled, epsilons, NoPE), token ids, init, kernels; and
# tie_word_embeddings: KimiLinearForCausalLM ties nothing (its _tied_weights_keys is empty), whatever the config says
FIELDS_IGNORED = ("tie_word_embeddings", "num_key_value_heads", "head_dim", "routed_scaling_factor", "n_group",
                  "num_expert_group", "topk_group", "norm_topk_prob", "moe_renormalize", "moe_router_activation_func",
                  "use_grouped_topk", "mla_use_nope", "num_nextn_predict_layers", "rms_norm_eps", "rope_theta",
                  "rope_scaling", "initializer_range", "pretraining_tp", "use_cache", "output_router_logits",
                  "attention_dropout", "bos_token_id", "eos_token_id", "pad_token_id", "torch_dtype", "dtype",
                  "architectures", "auto_map", "transformers_version", "_name_or_path",
                  "quantization_config")  # the checkpoint's format, read apart (estimator.catalog.checkpoint_quant)


def _value(config: Config, name: str) -> Any:
    """The config's value under transformers' name or the checkpoint's alias, else transformers' default; a value
    the checkpoint's linear_attn_config block holds wins for the KDA fields, as __post_init__ does."""
    block = config.get("linear_attn_config")
    if name in LINEAR_BLOCK and isinstance(block, Mapping) and LINEAR_BLOCK[name] in block:
        return block[LINEAR_BLOCK[name]]
    for key in (name, ALIASES.get(name)):
        if key is not None and key in config:
            return config[key]
    return DEFAULTS.get(name)


def _int(config: Config, name: str) -> int:
    value = _value(config, name)
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise SpecInvalid(f"config.json field {name!r} must be a positive integer, got {value!r}")
    return value


def _refuse_k3(config: Config) -> None:
    block = config.get("linear_attn_config")
    found = [name for name in K3_FIELDS if config.get(name) not in (None, False)]
    if isinstance(block, Mapping) and block.get("use_full_rank_gate"):
        found.append("linear_attn_config.use_full_rank_gate")
    freq = config.get("moe_layer_freq")
    if freq not in (None, 1):  # KimiLinearConfig places MoE by first_k_dense_replace alone
        found.append(f"moe_layer_freq {freq}")
    if found:
        raise SpecInvalid(f"kimi_linear config has Kimi-K3 architecture fields not read yet: {', '.join(found)} "
                          "(transformers' KimiLinear class builds none of them)")


def _types(config: Config, layers: int) -> list[str]:
    """KimiLinearConfig.__post_init__: layer_types, else linear_attn_config's 1-indexed full_attn_layers and
    kda_layers, else full attention on every 4th layer after the first."""
    types = config.get("layer_types")
    block = config.get("linear_attn_config")
    if types is None and isinstance(block, Mapping) and "full_attn_layers" in block and "kda_layers" in block:
        listed = {**{int(i) - 1: "linear_attention" for i in block["kda_layers"]},
                  **{int(i) - 1: "full_attention" for i in block["full_attn_layers"]}}
        types = [listed.get(i) for i in range(layers)]
    if types is None:
        types = ["full_attention" if i and i % 4 == 0 else "linear_attention" for i in range(layers)]
    if not isinstance(types, list) or len(types) != layers or not set(types) <= {"full_attention", "linear_attention"}:
        raise SpecInvalid(f"kimi_linear layer types must give full_attention or linear_attention for each of "
                          f"{layers} layers, got {types!r}")
    return types


def _moe_layers(config: Config, layers: int) -> list[bool]:
    """mlp_layer_types ("dense" / "sparse"), else the first first_k_dense_replace layers dense, the rest MoE."""
    listed = config.get("mlp_layer_types")
    if listed is None:
        first = config.get("first_k_dense_replace", DEFAULTS["first_k_dense_replace"])
        return [i >= first for i in range(layers)]
    if not isinstance(listed, list) or len(listed) != layers or not set(listed) <= {"dense", "sparse"}:
        raise SpecInvalid(f"config.json mlp_layer_types must give dense or sparse for each of {layers} layers")
    return [t == "sparse" for t in listed]


def read_kimi_linear(config: Config) -> Architecture:
    """The architecture of a Kimi Linear config (KimiLinearForCausalLM)."""
    _refuse_k3(config)
    if _value(config, "attention_bias"):
        raise SpecInvalid("kimi_linear config sets attention_bias, whose latent-attention biases are not read yet")
    layers, width = _int(config, "num_hidden_layers"), _int(config, "moe_intermediate_size")
    heads = _int(config, "num_attention_heads")
    q_rank = _value(config, "q_lora_rank")
    latent = LatentAttention(q_lora_rank=q_rank, kv_lora_rank=_int(config, "kv_lora_rank"),
                             qk_nope_head_dim=_int(config, "qk_nope_head_dim"),
                             qk_rope_head_dim=_int(config, "qk_rope_head_dim"), v_head_dim=_int(config, "v_head_dim"))
    moe = _moe_layers(config, layers)
    return Architecture(
        model_type="kimi_linear", hidden_size=_int(config, "hidden_size"), num_layers=layers,
        vocab_size=_int(config, "vocab_size"), tie_word_embeddings=False,
        attention=Attention(num_heads=heads, num_kv_heads=heads, head_dim=latent.qk_nope_head_dim +
                            latent.qk_rope_head_dim, v_head_dim=latent.v_head_dim, latent=latent),
        mlp=Mlp(intermediate_size=_int(config, "intermediate_size"), gated=True),
        moe=MixtureOfExperts(num_experts=_int(config, "num_local_experts"),
                             experts_per_token=_int(config, "num_experts_per_tok"), expert_intermediate_size=width,
                             shared_intermediate_size=width * _int(config, "n_shared_experts"),
                             fp32_routing_weights=True) if any(moe) else None,
        moe_layers=tuple(moe) if any(moe) else (),
        layer_mixers=tuple("attention" if t == "full_attention" else "kda" for t in _types(config, layers)),
        kda=KimiDeltaAttention(num_heads=_int(config, "linear_num_heads"), head_dim=_int(config, "linear_head_dim"),
                               conv_kernel=_int(config, "linear_conv_kernel_dim")),
        max_position_embeddings=_int(config, "max_position_embeddings"),
        hidden_act=str(_value(config, "hidden_act")),
    )
