"""Build an `Architecture` from a Hugging Face ``config.json`` (a dict), by ``model_type``.

Most decoder families are data: ``specs/families/<model_type>.yaml``, read by `estimator.catalog.family_reader`.
Code stays for what is truly different: multi-head latent attention (DeepSeek-V2/V3/V3.2, Kimi-K2, GLM-5), GPT-2's
and Falcon's own field names and layouts, BERT's encoder, the Jamba and LFM2 hybrids
(`estimator.catalog.hybrid_readers`) and Kimi Linear (`estimator.catalog.kimi_linear`). Defaults follow the
transformers configuration class of each family; a field a family needs and the config lacks is named in the error.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pydantic import ValidationError

from estimator.catalog.architecture import (
    Architecture,
    Attention,
    LatentAttention,
    MixtureOfExperts,
    Mlp,
    SparseIndexer,
)
from estimator.catalog.config_fields import Seen, unread
from estimator.catalog.families import family, family_names
from estimator.catalog.family_reader import read_family
from estimator.catalog.hybrid_readers import FIELDS_IGNORED as HYBRID_IGNORES
from estimator.catalog.hybrid_readers import read_jamba, read_lfm2, read_lfm2_moe
from estimator.catalog.kimi_linear import FIELDS_IGNORED as KIMI_LINEAR_IGNORES
from estimator.catalog.kimi_linear import read_kimi_linear
from estimator.catalog.suggest import closest_names
from estimator.catalog.towers import CROSS_ATTENTION_TOKENS, TOWER_READERS, WRAPPER_TIES, tower_rows, tower_unread
from estimator.catalog.unread_families import unread_reason
from estimator.catalog.validation_words import validation_message
from estimator.errors import SpecInvalid, echoed

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


def _moe_layers(config: Config, layers: int, *, first_dense: int = 0, step: int = 1) -> tuple[bool, ...]:
    return tuple(i >= first_dense and (i + 1) % step == 0 for i in range(layers))


def _indexer(config: Config) -> SparseIndexer | None:
    """DeepSeek-V3.2's lightning indexer (DeepseekV32Config index_n_heads, index_head_dim, index_topk)."""
    if config.get("index_head_dim") is None:
        return None
    return SparseIndexer(num_heads=_int(config, "index_n_heads"), head_dim=_int(config, "index_head_dim"),
                         topk=_int(config, "index_topk"))


def _listed(config: Config, name: str, layers: int, kinds: tuple[str, ...]) -> list[str] | None:
    """A per-layer list of ``kinds`` the config gives under ``name``, checked; None where it gives none."""
    value = config.get(name)
    if value is None:
        return None
    if not isinstance(value, list) or len(value) != layers or any(v not in kinds for v in value):
        raise SpecInvalid(f"config.json {name} must list one of {', '.join(kinds)} for each of the {layers} layers")
    return value


def _indexer_layers(config: Config, layers: int) -> tuple[bool, ...]:
    """Which layers run their own DSA indexer (GlmMoeDsaConfig indexer_types: "full" runs one, "shared" reuses the
    previous one's top-k); when the list is absent, as GlmMoeDsaConfig derives it from index_topk_pattern, or from
    index_topk_freq and index_skip_topk_offset. Empty: every layer (DeepSeek-V3.2, GLM-5)."""
    if config.get("model_type") != "glm_moe_dsa":
        return ()
    types = _listed(config, "indexer_types", layers, ("full", "shared"))
    pattern = config.get("index_topk_pattern")
    if types is None and isinstance(pattern, str):
        types = _listed({"p": [{"F": "full", "S": "shared"}.get(c, c) for c in pattern]}, "p", layers,
                        ("full", "shared"))
    if types is None:
        freq = max(_int(config, "index_topk_freq", default=1), 1)
        offset = _int(config, "index_skip_topk_offset", default=2)
        types = ["full" if max(i - offset + 1, 0) % freq == 0 else "shared" for i in range(layers)]
    return () if all(t == "full" for t in types) else tuple(t == "full" for t in types)


def _deepseek_moe_layers(config: Config, layers: int) -> tuple[bool, ...]:
    """The MoE layers: the config's mlp_layer_types ("sparse" MoE, "dense" MLP) where it lists them (DeepSeek-V3.2,
    GLM-5), else the first first_k_dense_replace layers dense and every moe_layer_freq-th after them MoE."""
    first, step = _int(config, "first_k_dense_replace", default=0), _int(config, "moe_layer_freq", default=1)
    listed = _listed(config, "mlp_layer_types", layers, ("dense", "sparse"))
    if listed is not None:  # the list wins over the rule (GlmMoeDsaConfig derives it from the rule only when absent)
        return tuple(t == "sparse" for t in listed)
    return _moe_layers(config, layers, first_dense=first, step=step)


# What sets a latent-attention MoE model's size: a config must give each (q_lora_rank may be null: no query
# compression). DeepseekV3Config's defaults for the last three (1,536, 1 shared expert, 3 dense layers) are the
# reference model's, not what a config that leaves them out means, so such a config is refused, naming them all.
_MLA_SIZE = ("hidden_size", "num_hidden_layers", "vocab_size", "num_attention_heads", "intermediate_size",
             "moe_intermediate_size", "num_experts_per_tok", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim",
             "v_head_dim", "q_lora_rank", "n_shared_experts", "first_k_dense_replace")


def _deepseek(config: Config) -> Architecture:
    experts_given = "n_routed_experts" in config or "num_experts" in config
    missing = [n for n in _MLA_SIZE if n not in config] + ([] if experts_given else ["n_routed_experts"])
    if missing:
        raise SpecInvalid(f"config.json lacks {', '.join(sorted(missing))}, which set the model's size (model_type "
                          f"{config.get('model_type')!r}); refused rather than filled in with transformers' defaults")
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
        indexer=_indexer(config),
    )
    # GlmMoeDsaConfig re-routes num_experts to n_routed_experts (NVIDIA's GLM-5.2 export writes both)
    glm = config.get("model_type") == "glm_moe_dsa"
    experts = _int(config, *(("num_experts", "n_routed_experts") if glm else ("n_routed_experts",)))
    config.get("n_routed_experts")  # read beside num_experts, which wins
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
        moe_layers=_deepseek_moe_layers(config, layers),
        indexer_layers=_indexer_layers(config, layers) if attention.indexer is not None else (),
        max_position_embeddings=config.get("max_position_embeddings"),
    )


def _layer_norm_decoder(config: Config, model_type: str, hidden: int, layers: int, *, attention: Attention, mlp: Mlp,
                        **more: Any) -> Architecture:
    """A decoder of the GPT-2 and Falcon kind: layer norms, a plain MLP, the vocabulary the config states, and the
    input and output embeddings tied unless the config says otherwise; ``more`` holds what the family adds."""
    return Architecture(model_type=model_type, hidden_size=hidden, num_layers=layers,
                        vocab_size=_int(config, "vocab_size"),
                        tie_word_embeddings=bool(config.get("tie_word_embeddings", True)), attention=attention,
                        mlp=mlp, norm="layer", **more)


def _gpt2(config: Config) -> Architecture:
    hidden = _int(config, "n_embd", "hidden_size")
    heads = _int(config, "n_head", "num_attention_heads")
    return _layer_norm_decoder(
        config, "gpt2", hidden, _int(config, "n_layer", "num_hidden_layers"),
        attention=Attention(num_heads=heads, num_kv_heads=heads, head_dim=hidden // heads,
                            v_head_dim=hidden // heads, q_bias=True, kv_bias=True, o_bias=True),
        mlp=Mlp(intermediate_size=_field(config, "n_inner", default=4 * hidden), gated=False, bias=True),
        position_embeddings=_int(config, "n_positions", "max_position_embeddings"),
        max_position_embeddings=_int(config, "n_positions", "max_position_embeddings"),
        hidden_act=config.get("activation_function", "gelu_new"),
    )


def _falcon(config: Config) -> Architecture:
    hidden = _int(config, "hidden_size")
    heads = _int(config, "num_attention_heads", "n_head")
    # The 2023 RefinedWeb (Falcon-40B) code always used the new decoder (grouped KV heads, ln_attn + ln_mlp);
    # RefinedWebModel (Falcon-7B) the old one. transformers' FalconConfig spells that new_decoder_architecture.
    new_decoder = config.get("new_decoder_architecture", config.get("model_type") == "RefinedWeb")
    if new_decoder:
        kv_heads = _int(config, "num_kv_heads", "n_head_kv")
        norms = 2  # ln_attn and ln_mlp
    else:
        kv_heads = 1 if config.get("multi_query", True) else heads
        norms = 1 if config.get("parallel_attn", True) else 2
    bias = bool(config.get("bias", False))
    head_dim = hidden // heads
    return _layer_norm_decoder(
        config, "falcon", hidden, _int(config, "num_hidden_layers", "n_layer"),
        attention=Attention(num_heads=heads, num_kv_heads=kv_heads, head_dim=head_dim, v_head_dim=head_dim,
                            q_bias=bias, kv_bias=bias, o_bias=bias,
                            # FalconAttention: SDPA(query, key with 1 head, attn_mask=...) without enable_gqa
                            unexpanded_kv_with_mask=kv_heads < heads and not new_decoder),
        mlp=Mlp(intermediate_size=_field(config, "ffn_hidden_size", default=4 * hidden), gated=False, bias=bias),
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
    "gpt2": _gpt2,
    "falcon": _falcon,
    "RefinedWeb": _falcon,  # the 2023 Falcon checkpoints' own model_type (transformers reads them as falcon)
    "RefinedWebModel": _falcon,
    "bert": _bert,
    "deepseek_v2": _deepseek,
    "deepseek_v3": _deepseek,
    "deepseek_v32": _deepseek,
    "kimi_k2": _deepseek,  # Kimi-K2 ships DeepSeek-V3's architecture under its own model_type
    "glm_moe_dsa": _deepseek,  # GLM-5: DeepSeek-V3.2's layout (transformers GlmMoeDsa), indexer and all
    "jamba": read_jamba,  # Mamba-1 + attention by period and offset (estimator.catalog.hybrid_readers)
    "lfm2": read_lfm2,  # gated short convolutions + attention
    "lfm2_moe": read_lfm2_moe,
    "kimi_linear": read_kimi_linear,  # Kimi Delta Attention + latent attention (estimator.catalog.kimi_linear)
}
# Fields each code reader may leave unread beyond the shared ones (config_fields.IGNORED): they shape no tensor or
# cache in the family's transformers modeling code.
_MLA_IGNORES = ("num_key_value_heads",)  # latent attention rebuilds K and V for every head: no KV-head count
CODE_IGNORES: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(("deepseek_v2", "deepseek_v3", "kimi_k2"), _MLA_IGNORES),
    "deepseek_v32": (*_MLA_IGNORES, "layer_types"),  # every layer is DSA: the list picks the cache class
    # GlmMoeDsaConfig derives head_dim and qk_head_dim from the latent widths; the indexer's RoPE layout is values
    # layer_types: every layer is DSA, the list picks the cache class; moe_router_dtype: the router's precision
    "glm_moe_dsa": (*_MLA_IGNORES, "head_dim", "qk_head_dim", "indexer_rope_interleave", "layer_types",
                    "moe_router_dtype"),
    "falcon": ("apply_residual_connection_post_layernorm",),  # where the residual joins: values, not shapes
    **HYBRID_IGNORES, "kimi_linear": KIMI_LINEAR_IGNORES,  # each with its reasons beside it, in its reader's module
}
for _alias in ("RefinedWeb", "RefinedWebModel"):
    CODE_IGNORES[_alias] = CODE_IGNORES["falcon"]

# Multimodal wrappers whose language model sits in a nested config.
_NESTED_TEXT = ("text_config", "language_config", "llm_config")
# Wrappers whose nested text config may omit its own model_type: the text family transformers uses for it.
_TEXT_MODEL_TYPE = {"gemma3": "gemma3_text", "llama4": "llama4_text", "qwen3_5": "qwen3_5_text",
                    "qwen3_5_moe": "qwen3_5_moe_text", "mistral3": "mistral", "kimi_k25": "kimi_k2",
                    "qwen3_vl": "qwen3_vl_text", "qwen3_vl_moe": "qwen3_vl_moe_text", "qwen2_5_vl": "qwen2_5_vl_text",
                    "voxtral": "llama", "mllama": "mllama_text_model", "exaone4_5": "exaone4"}


def supported_model_types() -> list[str]:
    """Every model_type a reader (code or family file) exists for."""
    return sorted(set(READERS) | set(family_names()))


def unsupported_message(model_type: object) -> str:
    """The one line for a model_type no reader knows: the closest supported ones (not all of them, a line of over
    500 characters) and where the rest are; for a family known to be asked for, why it is not read yet."""
    reason = unread_reason(model_type)
    if reason is not None:  # a family people ask for, refused with what it has that no reader here holds
        return f"model_type {model_type!r} is not read yet: {reason}"
    supported = supported_model_types()
    shown = echoed(str(model_type))
    close = closest_names(shown, supported)
    return (f"unsupported model_type {shown!r}; supported: {', '.join(close)} and {len(supported) - len(close)} more "
            "(`estimator models` shows each catalog model's type; specs/families/README.md says how to add one)")


def _reader(model_type: object) -> Callable[[Config], Architecture] | None:
    if not isinstance(model_type, str):
        return None
    if model_type in READERS:
        return READERS[model_type]
    spec = family(model_type)
    if spec is None:
        return None
    return lambda config: read_family(spec, config)


def _unwrapped(config: Config) -> Config | None:
    """The nested text config of a multimodal wrapper, with a model_type a reader knows."""
    model_type = config.get("model_type")
    for key in _NESTED_TEXT:
        nested = config.get(key)
        if isinstance(nested, Mapping):
            inner = dict(nested)
            if _reader(inner.get("model_type")) is None and model_type in _TEXT_MODEL_TYPE:
                inner["model_type"] = _TEXT_MODEL_TYPE[str(model_type)]
            if model_type in WRAPPER_TIES:  # the whole model is built: the wrapper's word (or default) decides
                inner["tie_word_embeddings"] = config.get("tie_word_embeddings", WRAPPER_TIES[str(model_type)])
            elif "tie_word_embeddings" in config:  # the composite model ties by the wrapper's word
                inner.setdefault("tie_word_embeddings", config["tie_word_embeddings"])
            return inner
    return None


def architecture_from_config(config: Config) -> Architecture:
    """Read a config.json dict; nested text models (``text_config``) are unwrapped first, and a multimodal
    wrapper's towers (`estimator.catalog.towers`) are added to the text model's tensors."""
    if not isinstance(config, Mapping):
        raise SpecInvalid("config.json must hold a JSON object")
    model_type = config.get("model_type")
    reader = _reader(model_type)
    inner = _unwrapped(config) if reader is None or model_type in TOWER_READERS else None
    if inner is not None and reader is None and _reader(inner.get("model_type")) is None:
        inner = None  # no reader here for the wrapper nor its text model: transformers reads the whole model
    arch = architecture_from_config(inner) if inner is not None else _read(reader, config)
    rows, keys = tower_rows(config)
    towers_unread = tower_unread(config)
    if towers_unread:
        arch = arch.model_copy(update={"unread_fields": (*arch.unread_fields, *towers_unread)})
    tokens = CROSS_ATTENTION_TOKENS.get(str(model_type))
    if tokens is not None and arch.cross_attention is not None:  # the wrapper's vision config sizes the cross K/V
        source = f"{model_type} vision_config"
        cross = arch.cross_attention.model_copy(update={"tokens": tokens(config), "source": source})
        arch = arch.model_copy(update={"cross_attention": cross})
    return arch.model_copy(update={"towers": rows, "towers_read": keys}) if rows else arch


def _read(reader: Callable[[Config], Architecture] | None, config: Config) -> Architecture:
    model_type = config.get("model_type")
    if reader is None:
        if model_type is None:
            raise SpecInvalid("config.json lacks required field 'model_type'")
        from estimator.catalog.transformers_reader import read_with_transformers  # torch only on this path

        # transformers reads every field its config class knows: no field accounting on this path
        return _guarded(model_type, lambda: read_with_transformers(config, unsupported_message(model_type)))
    seen = Seen(config)
    arch = _guarded(model_type, lambda: reader(seen))
    fields = unread(config, seen.seen, _ignores(model_type))
    return arch.model_copy(update={"unread_fields": fields}) if fields else arch


def _guarded(model_type: object, read: Callable[[], Architecture]) -> Architecture:
    """``read()``, its errors made one line naming ``model_type``."""
    try:
        return read()
    except ValidationError as error:
        detail = validation_message(error)
        raise SpecInvalid(f"config.json for {model_type} is inconsistent: {detail}") from None
    except (TypeError, ValueError) as error:
        if isinstance(error, SpecInvalid):
            raise
        raise SpecInvalid(f"config.json for {model_type} has a malformed field: {error}") from None


def _ignores(model_type: object) -> tuple[str, ...]:
    """The fields the reader of ``model_type`` may leave unread beyond the shared ones (`config_fields.IGNORED`)."""
    spec = family(model_type) if isinstance(model_type, str) and model_type not in READERS else None
    return spec.ignores if spec is not None else CODE_IGNORES.get(str(model_type), ())
