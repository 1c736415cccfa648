"""Readers for hybrid decoders whose layer layout no family file can say: Jamba (Mamba-1 + attention, MoE every
other layer, both placed by a period and an offset), LFM2 (gated short convolutions + attention, its MLP width
adjusted by a rule) and LFM2-MoE (LFM2's layers with MoE after the first dense ones).

Defaults, layouts and tensors follow transformers 5.25: ``configuration_jamba.py`` / ``modeling_jamba.py``
(JambaConfig.layers_block_type and layers_num_experts, JambaMambaMixer, JambaSparseMoeBlock),
``configuration_lfm2.py`` / ``modeling_lfm2.py`` (Lfm2Config.__post_init__, Lfm2MLP, Lfm2ShortConv,
Lfm2Attention) and ``modeling_lfm2_moe.py`` (Lfm2MoeDecoderLayer, Lfm2MoeSparseMoeBlock). Each reader names the
config fields it reads (`FIELDS_READ`) and those it knows and leaves aside (`FIELDS_IGNORED`: dropout,
initialisation, token ids, kernels, routing losses — nothing that shapes a tensor or a cache).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from estimator.catalog.architecture import Architecture, Attention, Mamba1, MixtureOfExperts, Mlp, ShortConv
from estimator.errors import SpecInvalid

Config = Mapping[str, Any]

# transformers 5.25 JambaConfig and Lfm2Config class defaults, for a field the config omits
JAMBA_DEFAULTS: dict[str, Any] = {
    "vocab_size": 65536, "tie_word_embeddings": False, "hidden_size": 4096, "intermediate_size": 14336,
    "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "hidden_act": "silu",
    "max_position_embeddings": 262144, "num_experts_per_tok": 2, "num_experts": 16, "expert_layer_period": 2,
    "expert_layer_offset": 1, "attn_layer_period": 8, "attn_layer_offset": 4, "mamba_d_state": 16,
    "mamba_d_conv": 4, "mamba_expand": 2, "mamba_dt_rank": "auto", "mamba_conv_bias": True,
    "mamba_proj_bias": False,
}
LFM2_DEFAULTS: dict[str, Any] = {
    "vocab_size": 65536, "hidden_size": 2560, "intermediate_size": 12288, "num_hidden_layers": 32,
    "num_attention_heads": 32, "num_key_value_heads": 8, "max_position_embeddings": 128_000,
    "tie_word_embeddings": True, "conv_bias": False, "conv_L_cache": 3, "block_multiple_of": 256,
    "block_ffn_dim_multiplier": 1.0, "block_auto_adjust_ff_dim": True,
}
LFM2_MOE_DEFAULTS: dict[str, Any] = {  # transformers 5.25 Lfm2MoeConfig
    "vocab_size": 65536, "hidden_size": 2048, "intermediate_size": 7168, "moe_intermediate_size": 1792,
    "num_hidden_layers": 32, "tie_word_embeddings": True, "max_position_embeddings": 128_000,
    "num_attention_heads": 32, "num_key_value_heads": 8, "conv_bias": False, "conv_L_cache": 3,
    "num_dense_layers": 2, "num_experts_per_tok": 4, "num_experts": 32,
}
# quantization_config is the checkpoint's format, read apart (estimator.catalog.checkpoint_quant)
_COMMON_IGNORED = ("architectures", "attention_dropout", "bos_token_id", "eos_token_id", "pad_token_id",
                   "initializer_range", "rms_norm_eps", "norm_eps", "use_cache", "torch_dtype", "dtype",
                   "transformers_version", "rope_theta", "rope_parameters", "rope_scaling", "_name_or_path",
                   "auto_map", "quantization_config")
FIELDS_READ: dict[str, tuple[str, ...]] = {
    "jamba": (*JAMBA_DEFAULTS, "head_dim", "num_local_experts"),
    "lfm2": (*LFM2_DEFAULTS, "head_dim", "block_ff_dim", "tie_embedding", "full_attn_idxs", "layer_types"),
    "lfm2_moe": (*LFM2_MOE_DEFAULTS, "head_dim", "tie_embedding", "layer_types"),
}
FIELDS_IGNORED: dict[str, tuple[str, ...]] = {
    # use_mamba_kernels / use_mambapy / use_associative_scan pick a kernel; sliding_window is unused by JambaAttention
    "jamba": (*_COMMON_IGNORED, "use_mamba_kernels", "use_mambapy", "use_associative_scan", "output_router_logits",
              "router_aux_loss_coef", "num_logits_to_keep", "sliding_window"),
    # the block_*/conv_* fields below are the original training code's; Lfm2Config reads none of them (its widths are
    # hidden_size and the MLP rule), nor use_pos_enc or num_heads
    "lfm2": (*_COMMON_IGNORED, "block_dim", "block_norm_eps", "block_mlp_init_scale", "block_out_init_scale",
             "block_use_swiglu", "block_use_xavier_init", "conv_dim", "conv_dim_out", "conv_use_xavier_init",
             "num_heads", "use_pos_enc", "model_name", "unsloth_version"),
    # use_expert_bias adds a routing-bias buffer (not a parameter); routing and scaling pick experts, no tensor
    "lfm2_moe": (*_COMMON_IGNORED, "use_expert_bias", "routed_scaling_factor", "norm_topk_prob",
                 "output_router_logits", "num_heads", "use_pos_enc"),
}


def _get(config: Config, defaults: Mapping[str, Any], name: str) -> Any:
    """The config's value, or transformers' default when the field is absent (a field set to null stays null)."""
    return config[name] if name in config else defaults.get(name)


def _int(config: Config, defaults: Mapping[str, Any], name: str, *, positive: bool = True) -> int:
    value = _get(config, defaults, name)
    if isinstance(value, bool) or not isinstance(value, int) or (positive and value <= 0) or value < 0:
        raise SpecInvalid(f"config.json field {name!r} must be a {'positive ' if positive else ''}integer, "
                          f"got {value!r}")
    return value


def _attention(config: Config, defaults: Mapping[str, Any], *, qk_norm: bool) -> Attention:
    hidden, heads = _int(config, defaults, "hidden_size"), _int(config, defaults, "num_attention_heads")
    kv_heads = _int(config, defaults, "num_key_value_heads")  # transformers 5.25 refuses a null here too
    # JambaAttention / Lfm2Attention: getattr(config, "head_dim", hidden // heads)
    head_dim = _int(config, defaults, "head_dim") if config.get("head_dim") is not None else hidden // heads
    return Attention(num_heads=heads, num_kv_heads=kv_heads, head_dim=head_dim, v_head_dim=head_dim,
                     qk_norm=qk_norm)


def _by_period(config: Config, period_field: str, offset_field: str, layers: int) -> list[bool]:
    """Layer i is marked when i % period == offset (JambaConfig.layers_block_type, layers_num_experts)."""
    period = _int(config, JAMBA_DEFAULTS, period_field)
    offset = _int(config, JAMBA_DEFAULTS, offset_field, positive=False)
    if offset >= period:  # JambaConfig.validate_architecture refuses it too
        raise SpecInvalid(f"config.json {offset_field} ({offset}) must be smaller than {period_field} ({period})")
    return [i % period == offset for i in range(layers)]


def read_jamba(config: Config) -> Architecture:
    """Jamba: attention where i % attn_layer_period == attn_layer_offset, Mamba-1 elsewhere; MoE feed-forward where
    i % expert_layer_period == expert_layer_offset (when num_experts > 1), a dense MLP of the same width elsewhere."""
    d = JAMBA_DEFAULTS
    hidden, layers = _int(config, d, "hidden_size"), _int(config, d, "num_hidden_layers")
    attention_layers = _by_period(config, "attn_layer_period", "attn_layer_offset", layers)
    experts = _int(config, {**d, "num_experts": config.get("num_local_experts", d["num_experts"])}, "num_experts")
    moe_layers = _by_period(config, "expert_layer_period", "expert_layer_offset", layers) if experts > 1 else []
    width = _int(config, d, "intermediate_size")
    rank = _get(config, d, "mamba_dt_rank")
    dt_rank = math.ceil(hidden / 16) if rank == "auto" else _int(config, d, "mamba_dt_rank")
    return Architecture(
        model_type="jamba", hidden_size=hidden, num_layers=layers, vocab_size=_int(config, d, "vocab_size"),
        tie_word_embeddings=bool(_get(config, d, "tie_word_embeddings")),
        attention=_attention(config, d, qk_norm=False),
        mlp=Mlp(intermediate_size=width, gated=True),
        moe=MixtureOfExperts(num_experts=experts, experts_per_token=_int(config, d, "num_experts_per_tok"),
                             expert_intermediate_size=width) if moe_layers else None,
        moe_layers=tuple(moe_layers),
        layer_mixers=tuple("attention" if a else "mamba1" for a in attention_layers),
        mamba1=Mamba1(inner=_int(config, d, "mamba_expand") * hidden, state_size=_int(config, d, "mamba_d_state"),
                      dt_rank=dt_rank, conv_kernel=_int(config, d, "mamba_d_conv"),
                      proj_bias=bool(_get(config, d, "mamba_proj_bias")),
                      conv_bias=bool(_get(config, d, "mamba_conv_bias")), dt_norms=True),
        max_position_embeddings=_int(config, d, "max_position_embeddings"),
        hidden_act=str(_get(config, d, "hidden_act")),
    )


def _lfm2_types(config: Config, layers: int, *, listed_only: bool = False) -> list[str]:
    """Lfm2Config.__post_init__: the config's layer_types, else "full_attention" at full_attn_idxs (every layer when
    that is absent too) and "conv" elsewhere; a layer is attention unless its type is "conv". Lfm2MoeConfig derives
    none (``listed_only``): its layers index the list."""
    types = config.get("layer_types")
    if types is None and listed_only:
        raise SpecInvalid("config.json lacks required field 'layer_types' for model_type 'lfm2_moe'")
    if types is None:
        listed = config.get("full_attn_idxs")
        attention = set(range(layers)) if listed is None else set(listed)
        types = ["full_attention" if i in attention else "conv" for i in range(layers)]
    if not isinstance(types, list) or len(types) != layers:
        raise SpecInvalid(f"config.json layer_types must list one type per layer ({layers}), got {types!r}")
    unknown = sorted({str(t) for t in types} - {"conv", "full_attention"})
    if unknown:
        raise SpecInvalid(f"config.json layer_types has unknown entries {unknown}; known: conv, full_attention")
    return list(types)


def _lfm2_width(config: Config) -> int:
    """Lfm2MLP: block_ff_dim over intermediate_size; with block_auto_adjust_ff_dim, int(2 × width / 3), then × the
    multiplier and rounded up to block_multiple_of (the same float arithmetic as transformers)."""
    d = {**LFM2_DEFAULTS, "block_ff_dim": config.get("intermediate_size", LFM2_DEFAULTS["intermediate_size"])}
    width = _int(config, d, "block_ff_dim")
    if not _get(config, d, "block_auto_adjust_ff_dim"):
        return width
    width = int(2 * width / 3)
    multiplier = _get(config, d, "block_ffn_dim_multiplier")
    if multiplier is not None:
        if isinstance(multiplier, bool) or not isinstance(multiplier, (int, float)) or multiplier <= 0:
            raise SpecInvalid(f"config.json field 'block_ffn_dim_multiplier' must be a positive number, "
                              f"got {multiplier!r}")
        multiple = _int(config, d, "block_multiple_of")
        width = multiple * ((int(multiplier * width) + multiple - 1) // multiple)
    return width


def read_lfm2(config: Config) -> Architecture:
    """LFM2: gated short-convolution layers and attention layers (per-head q/k RMSNorm, no biases), each followed by
    a SwiGLU MLP; two RMSNorms per layer and one after the last (Lfm2Model.embedding_norm)."""
    d = LFM2_DEFAULTS
    hidden, layers = _int(config, d, "hidden_size"), _int(config, d, "num_hidden_layers")
    types = _lfm2_types(config, layers)
    tie = config.get("tie_embedding", _get(config, d, "tie_word_embeddings"))  # Lfm2Config pops tie_embedding
    return Architecture(
        model_type="lfm2", hidden_size=hidden, num_layers=layers, vocab_size=_int(config, d, "vocab_size"),
        tie_word_embeddings=bool(tie),
        attention=_attention(config, d, qk_norm=True),
        mlp=Mlp(intermediate_size=_lfm2_width(config), gated=True),
        layer_mixers=tuple("short_conv" if t == "conv" else "attention" for t in types),
        short_conv=ShortConv(conv_kernel=_int(config, d, "conv_L_cache"), bias=bool(_get(config, d, "conv_bias"))),
        max_position_embeddings=_int(config, d, "max_position_embeddings"),
        hidden_act="silu",  # Lfm2MLP: F.silu(w1(x)) * w3(x), whatever the config says
    )


def read_lfm2_moe(config: Config) -> Architecture:
    """LFM2-MoE: LFM2's layers, the first num_dense_layers with a SwiGLU MLP of intermediate_size (no width rule),
    the rest a sparse MoE block (router, gate_up/down experts of moe_intermediate_size, no shared expert)."""
    d = LFM2_MOE_DEFAULTS
    layers = _int(config, d, "num_hidden_layers")
    types = _lfm2_types(config, layers, listed_only=True)
    dense = _int(config, d, "num_dense_layers", positive=False)
    tie = config.get("tie_embedding", _get(config, d, "tie_word_embeddings"))
    moe = [i >= dense for i in range(layers)]
    return Architecture(
        model_type="lfm2_moe", hidden_size=_int(config, d, "hidden_size"), num_layers=layers,
        vocab_size=_int(config, d, "vocab_size"), tie_word_embeddings=bool(tie),
        attention=_attention(config, d, qk_norm=True),
        mlp=Mlp(intermediate_size=_int(config, d, "intermediate_size"), gated=True),
        moe=MixtureOfExperts(num_experts=_int(config, d, "num_experts"),
                             experts_per_token=_int(config, d, "num_experts_per_tok"),
                             expert_intermediate_size=_int(config, d, "moe_intermediate_size")) if any(moe) else None,
        moe_layers=tuple(moe) if any(moe) else (),
        layer_mixers=tuple("short_conv" if t == "conv" else "attention" for t in types),
        short_conv=ShortConv(conv_kernel=_int(config, d, "conv_L_cache"), bias=bool(_get(config, d, "conv_bias"))),
        max_position_embeddings=_int(config, d, "max_position_embeddings"),
        hidden_act="silu",  # Lfm2MoeMLP and the experts: F.silu, whatever the config says
    )
