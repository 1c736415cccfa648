"""Decoder families as data: ``specs/families/<model_type>.yaml`` says how one ``config.json`` family reads.

A family file names the config fields behind each width (aliases), the defaults transformers' configuration
class sets when a config leaves a field out, and the switches that shape the tensors: biases, tied embeddings,
QK-norm, gated MLP, MoE layout (shared experts, dense-first layers, interleaving), per-layer attention types
(sliding, chunked, linear attention, Mamba), attention sinks. `estimator.catalog.family_reader` turns a config
into an `Architecture` with it; specs/families/README.md documents the schema. A switch is a constant or the
name of a config field that holds it.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from estimator.catalog.files import default_specs_dir, read_yaml
from estimator.catalog.parse_cache import parse_all
from estimator.catalog.validation_words import validation_message
from estimator.errors import SpecInvalid

# What a family file's stem can be: transformers' model_type spellings (letters, digits, "_", "-", "."), not
# leading with a dot, at most 200 characters (a file name holds 255 bytes with ".yaml").
_PLAIN_NAME = re.compile(r"[A-Za-z0-9_\-][A-Za-z0-9_.\-]{0,199}")

Switch = bool | str | tuple[str, ...]  # a constant, the config field that holds it, or fields any of which turns it on
Width = int | str  # a constant, or the config field that holds it


class _Spec(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


class AttentionSpec(_Spec):
    q_bias: Switch = "attention_bias"
    kv_bias: Switch = "attention_bias"
    o_bias: Switch = "attention_bias"
    qk_norm: Switch = False
    qk_norm_full_width: bool = False
    sinks: bool = False
    output_gate: bool = False
    grouped_kv_by: str | None = None  # when this config field is false every query head has its own K and V (ChatGLM)


class MlpSpec(_Spec):
    width: str = "intermediate_size"
    gated: bool = True
    bias: Switch = "mlp_bias"
    fused_gate_up: bool = False


class MoeSpec(_Spec):
    experts: str
    per_token: str = "num_experts_per_tok"
    width: str = "moe_intermediate_size"
    shared_width: str | None = None  # one shared expert this wide
    shared_count: str | None = None  # or this many shared experts of the routed width
    shared_gate: bool = False
    first_dense: str | None = None  # the first N layers are dense
    step: str | None = None  # every step-th layer is MoE
    dense_layers: str | None = None  # listed layers are dense
    moe_layers: str | None = None  # or the config lists the MoE layers
    router_bias: bool = False
    expert_bias: bool = False
    fp32_routing_weights: bool = False
    latent: str | None = None  # the config field of the routed experts' latent width (Nemotron-3 moe_latent_size)


class MambaSpec(_Spec):
    num_heads: str = "mamba_num_heads"
    head_dim: str = "mamba_head_dim"
    state_size: str = "ssm_state_size"
    n_groups: str = "n_groups"
    conv_kernel: str = "conv_kernel"
    proj_bias: Switch = "use_bias"
    out_bias: Switch | None = None  # out_proj's own bias switch (Falcon-H1 projectors_bias); none: proj_bias
    conv_bias: Switch = "use_conv_bias"
    gated_norm: Switch = True  # the gated RMSNorm before out_proj (Falcon-H1: mamba_rms_norm)
    state_dtype: str | None = "mamba_ssm_cache_dtype"
    # head_dim "auto" (Falcon-H1): the inner width (this field, or expand × hidden when it is null) over num_heads
    inner: str | None = None
    expand: str | None = None
    parallel: bool = False  # a Mamba-2 mixer beside attention in every attention layer (Falcon-H1)


class DeltaNetSpec(_Spec):
    num_k_heads: str = "linear_num_key_heads"
    num_v_heads: str = "linear_num_value_heads"
    head_k_dim: str = "linear_key_head_dim"
    head_v_dim: str = "linear_value_head_dim"
    conv_kernel: str = "linear_conv_kernel_dim"
    state_dtype: str | None = "mamba_ssm_dtype"  # Qwen3.5 names the recurrent state's dtype


class CrossAttentionSpec(_Spec):
    """Layers that attend to an encoder's tokens (mllama): the config field listing them, and the tokens each
    sequence holds K/V for when no wrapper says (the vision defaults; a wrapper's vision_config overrides it)."""

    layers_field: str
    tokens: Annotated[int, Field(gt=0, le=2**24)]
    source: str


class PeriodSpec(_Spec):
    """transformers' default layer_types: layer i is ``kinds[0]`` unless (i + 1) is a multiple of the period."""

    period: Annotated[int, Field(gt=0, le=4096)] | str  # at most architecture.MAX_LAYERS layers, or a config field
    kinds: tuple[str, str] = ("sliding_attention", "full_attention")


class EveryLayerWindowSpec(_Spec):
    """Mistral-style: ``sliding_window`` on every layer (from ``from_layer`` on) unless ``enabled_by`` is false."""

    enabled_by: str | None = "use_sliding_window"
    from_layer: str | None = None


class LayersSpec(_Spec):
    types_field: str = "layer_types"
    period: PeriodSpec | None = None
    every_layer_window: EveryLayerWindowSpec | None = None
    pattern_field: str | None = None  # Nemotron-H: one character per layer (M Mamba-2, * attention, - MLP, E MoE)
    # Nemotron-3: one block kind per layer (mamba, attention, mlp, moe), read before the pattern; its length is the
    # layer count (NemotronHConfig.num_hidden_layers is len(layers_block_type))
    block_types_field: str | None = None
    block_configs_field: str | None = None  # DeciLM: one {attention, ffn} entry per layer (family_reader)
    window_field: str = "sliding_window"
    chunk_field: str = "attention_chunk_size"
    # the family's own meaning of layer_types entries over the shared one (Granite 4: linear_attention is Mamba-2)
    type_mixers: dict[str, Literal["attention", "mamba2", "gated_deltanet"]] = {}
    default_type: str | None = None  # every layer's type when the config lists none (transformers' default)


class Family(_Spec):
    model_type: str
    base: str | None = None  # another family file this one starts from
    sources: tuple[str, ...] = Field(min_length=1)
    notes: str | None = None
    defaults: dict[str, Any] = {}
    # size-setting fields beyond config_fields.SIZE_FIELDS that a config must give (its default is one reference
    # model's shape); every other default is one a config may rely on, and the report names it when filled in
    required: tuple[str, ...] = ()
    # size-setting fields whose transformers default the family's published configs rely on (Gemma 3's text_config
    # leaves vocab_size out): filled in, and named in the report, instead of refused
    real_defaults: tuple[str, ...] = ()
    # config fields this family's reader may leave unread: they shape no tensor or cache (config_fields.IGNORED
    # holds the ones every family shares)
    ignores: tuple[str, ...] = ()
    fields: dict[str, tuple[str, ...]] = {}
    tie_word_embeddings: Switch = "tie_word_embeddings"
    attention: AttentionSpec = AttentionSpec()
    mlp: MlpSpec = MlpSpec()
    moe: MoeSpec | None = None
    mamba: MambaSpec | None = None
    linear_attention: DeltaNetSpec | None = None
    cross_attention: CrossAttentionSpec | None = None
    layers: LayersSpec = LayersSpec()
    extra_embedding_rows: int = Field(default=0, ge=0, le=2**24)  # token embedding rows beyond vocab_size
    norm: Literal["rms", "layer", "layer_nobias"] = "rms"
    rms_norm_by: str | None = None  # this config field false: LayerNorm with weight and bias instead (ChatGLM rmsnorm)
    norms_per_layer: int = Field(default=2, ge=0, le=2**24)  # architecture.MAX_WIDTH, as the architecture's field
    norm_scale_fp32: bool = False  # the RMSNorm multiplies by its weight in fp32, then casts (Gemma, OLMo 2)
    block_norms: bool = False  # one norm before each block a layer has, none for an absent block (DeciLM)
    final_norm: Switch = True
    lm_head_bias: Switch = False
    final_logit_softcapping: str | None = None


def families_dir(root: Path | None = None) -> Path:
    return (root or default_specs_dir()) / "families"


def family_names(root: Path | None = None) -> list[str]:
    """Every model_type that has a family file."""
    return sorted(path.stem for path in families_dir(root).glob("*.yaml"))


def _merge(base: dict[str, Any], data: dict[str, Any]) -> dict[str, Any]:
    """``data`` over ``base``; nested mappings (defaults, attention, moe...) merge key by key."""
    out = dict(base)
    for key, value in data.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def _raw(model_type: str, root: Path | None, seen: tuple[str, ...] = ()) -> dict[str, Any]:
    path = families_dir(root) / f"{model_type}.yaml"
    data = parse_all([path], lambda file: read_yaml(file, "family"))[0]  # the parsed-spec cache serves cold starts
    if not isinstance(data, dict):
        raise SpecInvalid(f"{path}: a family file must be a mapping")
    base = data.get("base")
    if isinstance(base, str):
        if base in seen:
            raise SpecInvalid(f"{path}: family bases form a circle through {base!r}")
        data = _merge({k: v for k, v in _raw(base, root, (*seen, model_type)).items() if k != "notes"}, data)
    return dict(data)


@cache
def family(model_type: str, root: Path | None = None) -> Family | None:
    """The family of ``model_type`` from its file, with its base merged in; None when there is no file (a
    model_type that is no plain file name, such as ``../x`` or one longer than a file name may be, has none)."""
    if not _PLAIN_NAME.fullmatch(model_type) or not (families_dir(root) / f"{model_type}.yaml").is_file():
        return None
    data = _raw(model_type, root)
    try:
        spec = Family.model_validate(data)
    except ValidationError as error:
        detail = validation_message(error)
        raise SpecInvalid(f"family {model_type}: {detail}") from None
    if spec.model_type != model_type:
        raise SpecInvalid(f"family file {model_type}.yaml says model_type {spec.model_type!r}")
    return spec
