"""Model architecture: the normalised shape of a transformer, whatever family its config.json came from.

Everything that decides memory lives here: widths, layer count, attention layout (grouped-query, multi-query,
multi-head latent), per-layer sliding windows, MLP type and width, mixture-of-experts routing, norms, biases,
embeddings. `estimator.catalog.hf_config` builds one from a Hugging Face ``config.json``;
`estimator.model.inventory` lists its tensors. A model given only by its size (``--model 70b``) has no architecture:
`ModelSpec.arch` is ``None``.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from estimator.catalog.arch_base import MAX_LAYERS, MAX_PARAMS, MAX_WIDTH, Count, Width
from estimator.catalog.arch_base import ArchPart as _Arch
from estimator.catalog.checkpoint_files import StoredWeights
from estimator.catalog.checkpoint_quant import CheckpointQuant
from estimator.catalog.mixers import GatedDeltaNet, KimiDeltaAttention, Mamba1, Mamba2, ShortConv

__all__ = ["MAX_LAYERS", "MAX_PARAMS", "MAX_WIDTH", "Architecture", "Attention", "Count", "CrossAttention",
           "GatedDeltaNet", "KimiDeltaAttention", "LatentAttention", "Mamba1", "Mamba2", "MixtureOfExperts", "Mlp",
           "ModelSpec", "ShortConv", "SparseIndexer", "Width"]


class LatentAttention(_Arch):
    """Multi-head latent attention (DeepSeek-V2/V3): K and V are rebuilt from a compressed latent."""

    q_lora_rank: int | None = Field(default=None, gt=0, le=MAX_WIDTH)
    kv_lora_rank: Width
    qk_nope_head_dim: Width
    qk_rope_head_dim: Width
    v_head_dim: Width


class SparseIndexer(_Arch):
    """DeepSeek-V3.2's lightning indexer: small query heads over one cached key per token pick the top-k tokens."""

    num_heads: Width
    head_dim: Width
    topk: Width


class CrossAttention(_Arch):
    """Layers whose keys and values come from an encoder's tokens (Llama-3.2-Vision's image tokens), not from the
    text: each sequence holds a K/V cache of ``tokens`` entries per such layer, fixed whatever the text length."""

    tokens: Width  # encoder tokens one sequence attends to
    source: str  # where that count comes from, for the report's note


# "linear": one hidden × hidden projection in place of attention, holding no cache (DeciLM replace_with_linear);
# "cross_attention": attention over an encoder's tokens (`CrossAttention`), with the text attention's widths
# "mamba1": a Mamba-1 mixer (Jamba); "short_conv": a gated short convolution (LFM2); "kda": Kimi Delta Attention
Mixer = Literal["attention", "mamba2", "gated_deltanet", "linear", "cross_attention", "mamba1", "short_conv", "kda",
                "none"]


class Attention(_Arch):
    """Attention projections of one layer. ``head_dim`` is the query/key width, ``v_head_dim`` the value width."""

    num_heads: Width
    num_kv_heads: Width
    head_dim: Width
    v_head_dim: Width
    q_bias: bool = False
    kv_bias: bool = False
    o_bias: bool = False
    qk_norm: bool = False
    latent: LatentAttention | None = None
    qk_norm_full_width: bool = False  # q/k norms over the whole projection (OLMo 2, MiniMax-M2), not one head
    sinks: bool = False  # one learned sink logit per head (gpt-oss)
    output_gate: bool = False  # q_proj also yields a sigmoid gate of the output, doubling its width (Qwen3-Next)
    indexer: SparseIndexer | None = None
    # transformers' implementation hands SDPA fewer KV heads than query heads together with an explicit mask
    # (Falcon's multi-query attention): PyTorch can then only run its math kernel, which materialises the scores
    unexpanded_kv_with_mask: bool = False

    @model_validator(mode="after")
    def _check(self) -> Attention:
        if self.num_heads % self.num_kv_heads:
            raise ValueError(
                f"num_attention_heads ({self.num_heads}) is not a multiple of num_key_value_heads ({self.num_kv_heads})"
            )
        return self


class Mlp(_Arch):
    """A feed-forward block: gated (SwiGLU/GeGLU: gate, up, down) or plain (up, down)."""

    intermediate_size: Width
    gated: bool
    bias: bool = False
    fused_gate_up: bool = False  # one gate_up projection (Phi-3): its 2·ffn output stays alive through the product


class MixtureOfExperts(_Arch):
    """Routed experts of a MoE layer, plus optional always-on shared experts."""

    num_experts: int = Field(gt=1, le=MAX_WIDTH)
    experts_per_token: Width
    expert_intermediate_size: Width
    shared_intermediate_size: int = Field(default=0, ge=0, le=MAX_WIDTH)
    shared_expert_gate: bool = False
    router_bias: bool = False  # gpt-oss: the router linear has a bias
    expert_bias: bool = False  # gpt-oss: every expert's gate_up and down projections have biases
    fp32_routing_weights: bool = False  # the router hands fp32 weights to the experts (DeepSeek's HF code)
    # latent MoE (Nemotron-3 Super and Ultra, NemotronHMoE): the routed experts work in this width; fc1_latent_proj
    # (hidden → latent) before them and fc2_latent_proj (latent → hidden) after, run for every token
    latent_size: int | None = Field(default=None, gt=0, le=MAX_WIDTH)

    def expert_width_in(self, hidden: int) -> int:
        """The width a routed expert reads and writes: the latent width where there is one, else the hidden size."""
        return self.latent_size or hidden

    @model_validator(mode="after")
    def _check(self) -> MixtureOfExperts:
        if self.experts_per_token > self.num_experts:
            raise ValueError(
                f"experts per token ({self.experts_per_token}) exceeds the number of experts ({self.num_experts})"
            )
        return self


# a mixer kind of `layer_mixers` → the Architecture field that describes it, and its name for an error
_MIXER_SPECS: dict[str, tuple[str, str]] = {
    "gated_deltanet": ("linear_attention", "gated DeltaNet"), "mamba1": ("mamba1", "Mamba-1"),
    "short_conv": ("short_conv", "short-convolution"), "kda": ("kda", "Kimi Delta Attention"),
    "cross_attention": ("cross_attention", "cross-attention"),
}


class Architecture(_Arch):
    """The whole network. Per-layer lists (`layer_windows`, `moe_layers`) have one entry per layer."""

    model_type: str
    hidden_size: Width
    num_layers: int = Field(gt=0, le=MAX_LAYERS)
    vocab_size: Width
    tie_word_embeddings: bool
    attention: Attention
    mlp: Mlp
    moe: MixtureOfExperts | None = None
    moe_layers: tuple[bool, ...] = ()
    layer_windows: tuple[Annotated[int, Field(le=MAX_WIDTH)] | None, ...] = ()
    norm: Literal["rms", "layer", "layer_nobias"] = "rms"  # layer_nobias: LayerNorm with a weight only (Cohere)
    norms_per_layer: int = Field(default=2, ge=0, le=MAX_WIDTH)
    # the RMSNorm scales by its weight in fp32 and casts after (Gemma's ``(1 + weight)``, OLMo 2, gpt-oss): the
    # normalized input it keeps for the weight's gradient is fp32 whatever the model's dtype
    norm_scale_fp32: bool = False
    final_norm: bool = True
    position_embeddings: int = Field(default=0, ge=0, le=MAX_WIDTH)
    token_type_embeddings: int = Field(default=0, ge=0, le=MAX_WIDTH)
    embedding_norm: bool = False
    pooler: bool = False
    lm_head: bool = True
    lm_head_bias: bool = False  # Phi-1/2
    layer_mixers: tuple[Mixer, ...] = ()  # per layer; empty: attention everywhere
    ffn_free_layers: tuple[bool, ...] = ()  # per layer: True where the layer has no feed-forward (Nemotron-H)
    # per layer: the dense feed-forward's own width, 0 where the layer has none (DeciLM block_configs); empty: every
    # dense layer is `mlp.intermediate_size` wide, which is then the widest layer's (the activation peak's) width
    layer_mlp_widths: tuple[Annotated[int, Field(ge=0, le=MAX_WIDTH)], ...] = ()
    block_norms: bool = False  # one norm before each block a layer has, none for an absent one (DeciLM no_op)
    mamba: Mamba2 | None = None
    parallel_mamba: bool = False  # every attention layer also runs a Mamba-2 mixer beside it (Falcon-H1)
    linear_attention: GatedDeltaNet | None = None
    mamba1: Mamba1 | None = None
    short_conv: ShortConv | None = None
    kda: KimiDeltaAttention | None = None
    cross_attention: CrossAttention | None = None
    extra_embedding_rows: int = Field(default=0, ge=0, le=MAX_WIDTH)  # token rows beyond vocab_size (mllama: 8)
    causal: bool = True
    max_position_embeddings: int | None = Field(default=None, gt=0, le=MAX_WIDTH)
    hidden_act: str | None = None  # config.json's activation name (e.g. gelu_new, silu)
    final_logit_softcapping: bool = False  # Gemma 2: logits ÷ cap → tanh → × cap
    # a multimodal wrapper's vision/audio towers and projector (estimator.catalog.towers): (name, role, numel,
    # count) rows, and the config keys they were read from
    towers: tuple[tuple[str, str, Count, Count], ...] = ()
    towers_read: tuple[str, ...] = ()
    # a model read by building it with transformers on the meta device (estimator.catalog.transformers_reader):
    # its tensors as (name, role, numel, count, in_features) rows, which are the inventory in place of the one the
    # fields above give; the reader ("transformers 5.25.0"); what it could not hold (said in the report)
    read_tensors: tuple[tuple[str, str, Count, Count, Count], ...] = ()
    read_by: str | None = None
    read_notes: tuple[str, ...] = ()
    # config fields no reader read whose names say they could shape tensors or caches (catalog/config_fields.py),
    # and the defaults filled in for fields the config leaves out ("name = value"): the report warns of both
    unread_fields: tuple[str, ...] = ()
    defaulted_fields: tuple[str, ...] = ()
    # per layer: whether it runs its own sparse-attention indexer (GLM-5.2's indexer_types "full"; a "shared" layer
    # reuses the previous one's top-k and holds no indexer weights or key cache); empty: every attention layer does,
    # where `attention.indexer` is set
    indexer_layers: tuple[bool, ...] = ()

    @model_validator(mode="after")
    def _check(self) -> Architecture:
        if self.layer_windows and len(self.layer_windows) != self.num_layers:
            raise ValueError(f"layer_windows has {len(self.layer_windows)} entries for {self.num_layers} layers")
        if self.moe_layers and len(self.moe_layers) != self.num_layers:
            raise ValueError(f"moe_layers has {len(self.moe_layers)} entries for {self.num_layers} layers")
        if any(self.moe_layers) and self.moe is None:
            raise ValueError("moe_layers marks MoE layers but no experts are described")
        if any(w is not None and w <= 0 for w in self.layer_windows):
            raise ValueError("sliding windows must be positive")
        for name in ("layer_mixers", "ffn_free_layers", "layer_mlp_widths", "indexer_layers"):
            if getattr(self, name) and len(getattr(self, name)) != self.num_layers:
                raise ValueError(f"{name} has {len(getattr(self, name))} entries for {self.num_layers} layers")
        if ("mamba2" in self.layer_mixers or self.parallel_mamba) and self.mamba is None:
            raise ValueError("layer_mixers names Mamba-2 layers but no Mamba-2 mixer is described")
        for kind, (spec, what) in _MIXER_SPECS.items():
            if kind in self.layer_mixers and getattr(self, spec) is None:
                raise ValueError(f"layer_mixers names {what} layers but no {what} mixer is described")
        if self.layer_mlp_widths and max(self.layer_mlp_widths) != self.mlp.intermediate_size:
            raise ValueError(f"mlp.intermediate_size ({self.mlp.intermediate_size}) must be the widest of "
                             f"layer_mlp_widths ({max(self.layer_mlp_widths)})")
        return self

    def mixer(self, layer: int) -> Mixer:
        """The token mixer of ``layer``: attention unless `layer_mixers` says otherwise."""
        return self.layer_mixers[layer] if self.layer_mixers else "attention"

    def has_indexer(self, layer: int) -> bool:
        """Whether ``layer`` runs its own sparse-attention indexer (weights, and a key per token in the cache)."""
        return self.attention.indexer is not None and (not self.indexer_layers or self.indexer_layers[layer])

    @property
    def num_indexer_layers(self) -> int:
        return sum(self.has_indexer(i) for i in range(self.num_layers) if self.mixer(i) == "attention")

    def mixer_count(self, kind: Mixer) -> int:
        return sum(self.mixer(layer) == kind for layer in range(self.num_layers))

    @property
    def mamba_layers(self) -> int:
        """Layers that run a Mamba-2 mixer: its Mamba-2 layers and, with `parallel_mamba`, every attention layer."""
        return self.mixer_count("mamba2") + (self.mixer_count("attention") if self.parallel_mamba else 0)

    def kv_window_groups(self, *, ignore_windows: bool = False) -> dict[int | None, int]:
        """Attention layers (the ones that cache K and V) counted per sliding window (None: global)."""
        groups: dict[int | None, int] = {}
        for layer in range(self.num_layers):
            if self.mixer(layer) == "attention":
                window = None if ignore_windows else self.window(layer)
                groups[window] = groups.get(window, 0) + 1
        return groups

    def mlp_width(self, layer: int) -> int:
        """The dense feed-forward width of ``layer`` (0: it has none of its own width; see `has_dense_mlp`)."""
        return self.layer_mlp_widths[layer] if self.layer_mlp_widths else self.mlp.intermediate_size

    def has_dense_mlp(self, layer: int) -> bool:
        return not self.is_moe_layer(layer) and not (self.ffn_free_layers and self.ffn_free_layers[layer])

    def dense_mlp_widths(self) -> dict[int, int]:
        """Dense feed-forward layers counted per width."""
        widths: dict[int, int] = {}
        for layer in range(self.num_layers):
            if self.has_dense_mlp(layer):
                widths[self.mlp_width(layer)] = widths.get(self.mlp_width(layer), 0) + 1
        return widths

    @property
    def norm_count(self) -> int:
        """Norms inside the decoder layers: `norms_per_layer` on every layer, or with `block_norms` one before each
        block a layer has (a mixer other than "none", a feed-forward)."""
        if not self.block_norms:
            return self.num_layers * self.norms_per_layer
        return sum((self.mixer(i) != "none") + (not (self.ffn_free_layers and self.ffn_free_layers[i]))
                   for i in range(self.num_layers))

    @property
    def num_dense_mlp_layers(self) -> int:
        """Layers with a dense feed-forward: neither MoE nor free of a feed-forward."""
        return sum(self.has_dense_mlp(i) for i in range(self.num_layers))

    def window(self, layer: int) -> int | None:
        """Sliding-window length of ``layer`` in tokens, or None for global attention."""
        return self.layer_windows[layer] if self.layer_windows else None

    def is_moe_layer(self, layer: int) -> bool:
        return bool(self.moe_layers) and self.moe_layers[layer]

    @property
    def num_moe_layers(self) -> int:
        return sum(self.moe_layers)

    @property
    def kv_cache_kind(self) -> Literal["none", "standard", "latent"]:
        if not self.causal:
            return "none"
        return "latent" if self.attention.latent is not None else "standard"


class ModelSpec(BaseModel):
    """A catalog or user model: an architecture, or (for ``--model 70b``) only a parameter count."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True, allow_inf_nan=False)

    name: str
    aliases: tuple[str, ...] = ()
    arch: Architecture | None = None
    generic_params: int | None = Field(default=None, gt=0, le=MAX_PARAMS)
    hf_params: int | None = Field(default=None, gt=0, le=MAX_PARAMS)
    notes: str | None = None
    sources: tuple[str, ...] = ()
    checkpoint: CheckpointQuant | None = None  # what the config's quantization_config says the weights are stored in
    checkpoint_error: str | None = None  # why that block could not be read (then --dtype must say)
    stored: StoredWeights | None = None  # a local checkpoint's tensors as its file headers give them
    uncounted_towers: tuple[str, ...] = ()  # a multimodal wrapper's vision/audio configs, not in the counts yet
    origin: str | None = None  # where a model named by Hub id was read (hub:org/name@<commit>, or the catalog's entry)

    @model_validator(mode="after")
    def _check(self) -> ModelSpec:
        if (self.arch is None) == (self.generic_params is None):
            raise ValueError("a model has either an architecture or a generic parameter count, not both")
        return self
