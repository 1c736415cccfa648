"""Build an `Architecture` from a Hugging Face ``config.json`` (a dict), one reader per ``model_type``.

Defaults follow the transformers configuration classes of each family (e.g. ``LlamaConfig`` unties embeddings,
``Gemma2Config`` ties them); a field a family needs and the config lacks is named in the error.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pydantic import ValidationError

from estimator.catalog.architecture import Architecture, Attention, LatentAttention, MixtureOfExperts, Mlp
from estimator.errors import SpecInvalid

Config = Mapping[str, Any]


def _field(config: Config, *names: str, default: Any = None, required: bool = True) -> Any:
    """The first of ``names`` present in ``config``; else ``default``; else (if required) an error naming it."""
    for name in names:
        if name in config and config[name] is not None:
            return config[name]
    if default is not None or not required:
        return default
    raise SpecInvalid(f"config.json lacks required field {names[0]!r} for model_type {config.get('model_type')!r}")


def _int(config: Config, *names: str, default: int | None = None) -> int:
    value = _field(config, *names, default=default)
    if isinstance(value, bool) or not isinstance(value, int):
        raise SpecInvalid(f"config.json field {names[0]!r} must be an integer, got {value!r}")
    return value


def _windows_from_layer_types(config: Config, layers: int) -> tuple[int | None, ...] | None:
    """Per-layer windows from the newer ``layer_types`` list ("sliding_attention" / "full_attention")."""
    layer_types = config.get("layer_types")
    if not layer_types:
        return None
    if len(layer_types) != layers:
        raise SpecInvalid(f"config.json layer_types has {len(layer_types)} entries for {layers} layers")
    window = _int(config, "sliding_window")
    return tuple(window if kind == "sliding_attention" else None for kind in layer_types)


def _standard_attention(config: Config, *, q_bias: bool, kv_bias: bool, o_bias: bool, qk_norm: bool) -> Attention:
    hidden = _int(config, "hidden_size")
    heads = _int(config, "num_attention_heads")
    kv_heads = _field(config, "num_key_value_heads", default=heads)
    head_dim = _field(config, "head_dim", default=hidden // heads)
    return Attention(
        num_heads=heads,
        num_kv_heads=kv_heads,
        head_dim=head_dim,
        v_head_dim=head_dim,
        q_bias=q_bias,
        kv_bias=kv_bias,
        o_bias=o_bias,
        qk_norm=qk_norm,
    )


def _llama_like(config: Config, *, tie_default: bool, qkv_bias: bool | None = None, qk_norm: bool = False,
                norms_per_layer: int = 2, windows: tuple[int | None, ...] = ()) -> dict[str, Any]:
    """Fields shared by the decoder-only RoPE/RMSNorm families (Llama, Mistral, Qwen, Gemma, Phi-3)."""
    layers = _int(config, "num_hidden_layers")
    attention_bias = bool(config.get("attention_bias", False))
    mlp_bias = bool(config.get("mlp_bias", False))
    q_kv_bias = attention_bias if qkv_bias is None else qkv_bias
    return {
        "model_type": str(config["model_type"]),
        "hidden_size": _int(config, "hidden_size"),
        "num_layers": layers,
        "vocab_size": _int(config, "vocab_size"),
        "tie_word_embeddings": bool(config.get("tie_word_embeddings", tie_default)),
        "attention": _standard_attention(
            config, q_bias=q_kv_bias, kv_bias=q_kv_bias, o_bias=attention_bias, qk_norm=qk_norm
        ),
        "mlp": Mlp(intermediate_size=_int(config, "intermediate_size"), gated=True, bias=mlp_bias),
        "norms_per_layer": norms_per_layer,
        "layer_windows": _windows_from_layer_types(config, layers) or windows,
        "max_position_embeddings": config.get("max_position_embeddings"),
        "hidden_act": config.get("hidden_activation") or config.get("hidden_act"),
    }


def _every_layer_window(config: Config) -> tuple[int | None, ...]:
    """Mistral-style: ``sliding_window`` applies to every layer when set (and not switched off)."""
    window = config.get("sliding_window")
    if window is None or config.get("use_sliding_window") is False:
        return ()
    return (int(window),) * _int(config, "num_hidden_layers")


def _llama(config: Config) -> Architecture:
    return Architecture(**_llama_like(config, tie_default=False))


def _mistral(config: Config) -> Architecture:
    return Architecture(**_llama_like(config, tie_default=False, windows=_every_layer_window(config)))


def _qwen2(config: Config) -> Architecture:
    # Qwen2 puts biases on q, k and v but not on o (transformers Qwen2Attention).
    windows = _every_layer_window(config)
    if windows:
        # Qwen2 slides only on layers at or above max_window_layers.
        first = _int(config, "max_window_layers", default=0)
        windows = tuple(w if i >= first else None for i, w in enumerate(windows))
    fields = _llama_like(config, tie_default=False, qkv_bias=True, windows=windows)
    fields["attention"] = fields["attention"].model_copy(update={"o_bias": False})
    return Architecture(**fields)


def _qwen3(config: Config) -> Architecture:
    return Architecture(**_llama_like(config, tie_default=False, qk_norm=True))


def _phi3(config: Config) -> Architecture:
    fields = _llama_like(config, tie_default=False, windows=_every_layer_window(config))
    fields["mlp"] = fields["mlp"].model_copy(update={"fused_gate_up": True})  # transformers Phi3MLP.gate_up_proj
    return Architecture(**fields)


def _gemma(config: Config) -> Architecture:
    return Architecture(**_llama_like(config, tie_default=True))


def _gemma2(config: Config) -> Architecture:
    # Gemma 2: layer i slides when i is even (transformers Gemma2DecoderLayer: is_sliding = not bool(i % 2)).
    layers = _int(config, "num_hidden_layers")
    window = _int(config, "sliding_window", default=4096)
    windows = tuple(window if i % 2 == 0 else None for i in range(layers))
    fields = _llama_like(config, tie_default=True, norms_per_layer=4, windows=windows)
    fields["final_logit_softcapping"] = config.get("final_logit_softcapping") is not None
    return Architecture(**fields)


def _gemma3_text(config: Config) -> Architecture:
    # Gemma 3: every sliding_window_pattern-th layer is global, the rest slide (5 local : 1 global).
    layers = _int(config, "num_hidden_layers")
    window = _int(config, "sliding_window", default=1024)
    pattern = _int(config, "sliding_window_pattern", default=6)
    windows = tuple(None if (i + 1) % pattern == 0 else window for i in range(layers))
    return Architecture(**_llama_like(config, tie_default=True, qk_norm=True, norms_per_layer=4, windows=windows))


def _moe_layers(config: Config, layers: int, *, first_dense: int = 0, step: int = 1,
                dense_layers: tuple[int, ...] = ()) -> tuple[bool, ...]:
    return tuple(i >= first_dense and (i + 1) % step == 0 and i not in dense_layers for i in range(layers))


def _mixtral(config: Config) -> Architecture:
    fields = _llama_like(config, tie_default=False, windows=_every_layer_window(config))
    fields["moe"] = MixtureOfExperts(
        num_experts=_int(config, "num_local_experts"),
        experts_per_token=_int(config, "num_experts_per_tok"),
        expert_intermediate_size=_int(config, "intermediate_size"),
    )
    fields["moe_layers"] = (True,) * fields["num_layers"]
    return Architecture(**fields)


def _qwen_moe(config: Config, *, qk_norm: bool, shared: bool) -> Architecture:
    fields = _llama_like(config, tie_default=False, qkv_bias=not qk_norm, qk_norm=qk_norm)
    if not qk_norm:
        fields["attention"] = fields["attention"].model_copy(update={"o_bias": False})
    fields["moe"] = MixtureOfExperts(
        num_experts=_int(config, "num_experts"),
        experts_per_token=_int(config, "num_experts_per_tok"),
        expert_intermediate_size=_int(config, "moe_intermediate_size"),
        shared_intermediate_size=_int(config, "shared_expert_intermediate_size") if shared else 0,
        shared_expert_gate=shared,
    )
    fields["moe_layers"] = _moe_layers(
        config, fields["num_layers"], step=_int(config, "decoder_sparse_step", default=1),
        dense_layers=tuple(config.get("mlp_only_layers") or ()),
    )
    return Architecture(**fields)


def _qwen3_moe(config: Config) -> Architecture:
    return _qwen_moe(config, qk_norm=True, shared=False)


def _qwen2_moe(config: Config) -> Architecture:
    return _qwen_moe(config, qk_norm=False, shared=True)


def _deepseek(config: Config) -> Architecture:
    layers = _int(config, "num_hidden_layers")
    heads = _int(config, "num_attention_heads")
    latent = LatentAttention(
        q_lora_rank=config.get("q_lora_rank"),
        kv_lora_rank=_int(config, "kv_lora_rank"),
        qk_nope_head_dim=_int(config, "qk_nope_head_dim"),
        qk_rope_head_dim=_int(config, "qk_rope_head_dim"),
        v_head_dim=_int(config, "v_head_dim"),
    )
    bias = bool(config.get("attention_bias", False))
    attention = Attention(
        num_heads=heads,
        num_kv_heads=heads,
        head_dim=latent.qk_nope_head_dim + latent.qk_rope_head_dim,
        v_head_dim=latent.v_head_dim,
        q_bias=bias,
        kv_bias=bias,
        o_bias=bias,
        latent=latent,
    )
    experts = _int(config, "n_routed_experts")
    expert_width = _int(config, "moe_intermediate_size")
    return Architecture(
        model_type=str(config["model_type"]),
        hidden_size=_int(config, "hidden_size"),
        num_layers=layers,
        vocab_size=_int(config, "vocab_size"),
        tie_word_embeddings=bool(config.get("tie_word_embeddings", False)),
        attention=attention,
        mlp=Mlp(intermediate_size=_int(config, "intermediate_size"), gated=True),
        moe=MixtureOfExperts(
            num_experts=experts,
            experts_per_token=_int(config, "num_experts_per_tok"),
            expert_intermediate_size=expert_width,
            shared_intermediate_size=expert_width * _int(config, "n_shared_experts", default=0),
            fp32_routing_weights=True,  # transformers DeepseekV2/V3 MoE: topk_weight stays fp32
        ),
        moe_layers=_moe_layers(
            config, layers, first_dense=_int(config, "first_k_dense_replace", default=0),
            step=_int(config, "moe_layer_freq", default=1),
        ),
        max_position_embeddings=config.get("max_position_embeddings"),
    )


def _gpt2(config: Config) -> Architecture:
    hidden = _int(config, "n_embd", "hidden_size")
    heads = _int(config, "n_head", "num_attention_heads")
    return Architecture(
        model_type="gpt2",
        hidden_size=hidden,
        num_layers=_int(config, "n_layer", "num_hidden_layers"),
        vocab_size=_int(config, "vocab_size"),
        tie_word_embeddings=bool(config.get("tie_word_embeddings", True)),
        attention=Attention(num_heads=heads, num_kv_heads=heads, head_dim=hidden // heads,
                            v_head_dim=hidden // heads, q_bias=True, kv_bias=True, o_bias=True),
        mlp=Mlp(intermediate_size=_field(config, "n_inner", default=4 * hidden), gated=False, bias=True),
        norm="layer",
        position_embeddings=_int(config, "n_positions", "max_position_embeddings"),
        max_position_embeddings=_int(config, "n_positions", "max_position_embeddings"),
        hidden_act=config.get("activation_function", "gelu_new"),
    )


def _falcon(config: Config) -> Architecture:
    hidden = _int(config, "hidden_size")
    heads = _int(config, "num_attention_heads", "n_head")
    if config.get("new_decoder_architecture"):
        kv_heads = _int(config, "num_kv_heads", "n_head_kv")
        norms = 2  # ln_attn and ln_mlp
    else:
        kv_heads = 1 if config.get("multi_query", True) else heads
        norms = 1 if config.get("parallel_attn", True) else 2
    bias = bool(config.get("bias", False))
    head_dim = hidden // heads
    return Architecture(
        model_type="falcon",
        hidden_size=hidden,
        num_layers=_int(config, "num_hidden_layers", "n_layer"),
        vocab_size=_int(config, "vocab_size"),
        tie_word_embeddings=bool(config.get("tie_word_embeddings", True)),
        attention=Attention(num_heads=heads, num_kv_heads=kv_heads, head_dim=head_dim, v_head_dim=head_dim,
                            q_bias=bias, kv_bias=bias, o_bias=bias,
                            # FalconAttention: SDPA(query, key with 1 head, attn_mask=...) without enable_gqa
                            unexpanded_kv_with_mask=kv_heads < heads and not config.get("new_decoder_architecture")),
        mlp=Mlp(intermediate_size=_field(config, "ffn_hidden_size", default=4 * hidden), gated=False, bias=bias),
        norm="layer",
        norms_per_layer=norms,
        max_position_embeddings=config.get("max_position_embeddings"),
    )


def _bert(config: Config) -> Architecture:
    hidden = _int(config, "hidden_size")
    heads = _int(config, "num_attention_heads")
    return Architecture(
        model_type="bert",
        hidden_size=hidden,
        num_layers=_int(config, "num_hidden_layers"),
        vocab_size=_int(config, "vocab_size"),
        tie_word_embeddings=False,
        attention=Attention(num_heads=heads, num_kv_heads=heads, head_dim=hidden // heads,
                            v_head_dim=hidden // heads, q_bias=True, kv_bias=True, o_bias=True),
        mlp=Mlp(intermediate_size=_int(config, "intermediate_size"), gated=False, bias=True),
        norm="layer",
        final_norm=False,
        position_embeddings=_int(config, "max_position_embeddings"),
        token_type_embeddings=_int(config, "type_vocab_size", default=2),
        embedding_norm=True,
        pooler=True,
        lm_head=False,
        causal=False,
        max_position_embeddings=_int(config, "max_position_embeddings"),
    )


READERS: dict[str, Callable[[Config], Architecture]] = {
    "llama": _llama,
    "mistral": _mistral,
    "mixtral": _mixtral,
    "qwen2": _qwen2,
    "qwen2_moe": _qwen2_moe,
    "qwen3": _qwen3,
    "qwen3_moe": _qwen3_moe,
    "gemma": _gemma,
    "gemma2": _gemma2,
    "gemma3_text": _gemma3_text,
    "phi3": _phi3,
    "gpt2": _gpt2,
    "falcon": _falcon,
    "bert": _bert,
    "deepseek_v2": _deepseek,
    "deepseek_v3": _deepseek,
}

# Multimodal wrappers whose language model sits in a nested config.
_NESTED_TEXT = ("text_config", "language_config", "llm_config")


def architecture_from_config(config: Config) -> Architecture:
    """Read a config.json dict; nested text models (``text_config``) are unwrapped first."""
    if not isinstance(config, Mapping):
        raise SpecInvalid("config.json must hold a JSON object")
    model_type = config.get("model_type")
    if model_type not in READERS:
        for key in _NESTED_TEXT:
            nested = config.get(key)
            if isinstance(nested, Mapping):
                inner = dict(nested)
                if inner.get("model_type") not in READERS and model_type == "gemma3":
                    inner["model_type"] = "gemma3_text"
                return architecture_from_config(inner)
    reader = READERS.get(str(model_type))
    if reader is None:
        if model_type is None:
            raise SpecInvalid("config.json lacks required field 'model_type'")
        supported = ", ".join(sorted(READERS))
        raise SpecInvalid(f"unsupported model_type {model_type!r}; supported: {supported}")
    try:
        return reader(config)
    except ValidationError as error:
        detail = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in error.errors())
        raise SpecInvalid(f"config.json for {model_type} is inconsistent: {detail}") from None
    except (TypeError, ValueError) as error:
        if isinstance(error, SpecInvalid):
            raise
        raise SpecInvalid(f"config.json for {model_type} has a malformed field: {error}") from None
