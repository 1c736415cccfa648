"""Build an `Architecture` from a ``config.json`` with a data-described `Family` (specs/families/*.yaml).

The family's ``defaults`` stand in for fields the config leaves out, as transformers' configuration class
fills them; a field the config sets explicitly (even to null) wins. Layer layout comes from, in order: a
per-layer pattern string (Nemotron-H), the config's ``layer_types`` list, the family's period rule (how
transformers builds ``layer_types`` when a config has none), or a Mistral-style window on every layer.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from estimator.catalog.architecture import (
    Architecture,
    Attention,
    CrossAttention,
    GatedDeltaNet,
    Mamba2,
    Mixer,
    MixtureOfExperts,
    Mlp,
)
from estimator.catalog.block_configs import read_blocks
from estimator.catalog.config_fields import SIZE_FIELDS, Seen
from estimator.catalog.families import Family, MambaSpec, Switch, Width
from estimator.errors import SpecInvalid

# Canonical names and the config fields tried for them when a family names none (`Family.fields`).
DEFAULT_FIELDS: dict[str, tuple[str, ...]] = {
    "hidden_size": ("hidden_size",),
    "num_layers": ("num_hidden_layers",),
    "vocab_size": ("vocab_size",),
    "num_heads": ("num_attention_heads",),
    "num_kv_heads": ("num_key_value_heads",),
    "head_dim": ("head_dim",),
    "hidden_act": ("hidden_activation", "hidden_act"),
    "max_position_embeddings": ("max_position_embeddings",),
}
# Nemotron-H's hybrid_override_pattern: (mixer, feed-forward) per character (transformers NemotronHConfig).
PATTERN_CHARS: dict[str, tuple[Mixer, str]] = {
    "M": ("mamba2", "none"), "*": ("attention", "none"), "-": ("none", "dense"), "E": ("none", "moe"),
}
# Nemotron-3's layers_block_type entries as hybrid_override_pattern characters (NemotronHConfig: "mamba" and
# "attention" are the legacy spellings of "linear_attention" and "full_attention", remap_legacy_layer_types)
BLOCK_CHARS: dict[str, str] = {"mamba": "M", "linear_attention": "M", "attention": "*", "full_attention": "*",
                               "mlp": "-", "moe": "E"}
# layer_types entries and the mixer each one runs
LAYER_TYPE_MIXERS: dict[str, Mixer] = {
    "full_attention": "attention", "sliding_attention": "attention", "chunked_attention": "attention",
    "attention": "attention", "linear_attention": "gated_deltanet", "mamba": "mamba2",
}
DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2}


@dataclass
class _Config:
    """The config over the family's defaults, read through `Seen` (what the reader looked up is recorded). A
    size-setting field the config leaves out is collected in ``missing`` (the read is refused naming them all); any
    other family default filled in is collected in ``defaulted`` for the report."""

    family: Family
    raw: Mapping[str, Any]
    data: Seen = field(init=False)
    sizes: set[str] = field(init=False)  # config fields that set the size: a config must give them
    missing: list[str] = field(default_factory=list)
    defaulted: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        raw = self.raw if isinstance(self.raw, Seen) else Seen(self.raw)
        self.data = raw.merged(self.family.defaults)
        self.sizes = _size_fields(self.family)

    def get(self, name: str, default: Any = None) -> Any:
        value = self.data.get(name)
        return default if value is None else value

    def _names(self, canonical: str) -> tuple[str, ...]:
        return self.family.fields.get(canonical) or DEFAULT_FIELDS.get(canonical) or (canonical,)

    def optional(self, canonical: str) -> int | None:
        """The integer a config gives for ``canonical`` (or its aliases), None when it gives none."""
        return None if all(self.data.get(n) is None for n in self._names(canonical)) else self.integer(canonical)

    def integer(self, canonical: str, default: int | None = None) -> int:
        names = self._names(canonical)
        value = next((self.data[n] for n in names if self.data.get(n) is not None), default)
        if value is None:
            raise SpecInvalid(f"config.json lacks required field {names[0]!r} for model_type "
                              f"{self.family.model_type!r}")
        if isinstance(value, bool) or not isinstance(value, int):
            raise SpecInvalid(f"config.json field {names[0]!r} must be an integer, got {value!r}")
        if not any(self.raw.get(n) is not None for n in names) and any(n in self.family.defaults for n in names):
            self._filled(canonical, names[0], value)
        return value

    def _filled(self, canonical: str, name: str, value: int) -> None:
        """Record a family default used for a field the config leaves out: refused where it sets the size."""
        if (canonical in SIZE_FIELDS or name in self.sizes) and name not in self.family.real_defaults:
            if name not in self.missing:
                self.missing.append(name)
        elif f"{name} = {value}" not in self.defaulted:
            self.defaulted.append(f"{name} = {value}")

    def switch(self, value: Switch) -> bool:
        if isinstance(value, bool):
            return value
        return any(bool(self.get(name, False)) for name in ((value,) if isinstance(value, str) else value))

    def width(self, value: Width) -> int:
        return value if isinstance(value, int) else self.integer(value)


def _size_fields(family: Family) -> set[str]:
    """The config fields that set a model of ``family``'s size beyond `SIZE_FIELDS`: the family's ``required``, the
    expert counts and widths, the Mamba-2 and DeltaNet head counts and widths (a config that leaves one out is
    refused: the family default is one reference model's)."""
    out = set(family.required)
    if family.moe is not None:
        m = family.moe
        out |= {m.experts, m.per_token, m.width} | {f for f in (m.shared_width, m.shared_count) if f}
    if family.mamba is not None:
        out |= {family.mamba.num_heads, family.mamba.head_dim, family.mamba.state_size}  # n_groups: named when filled
    if family.linear_attention is not None:
        g = family.linear_attention
        out |= {g.num_k_heads, g.num_v_heads, g.head_k_dim, g.head_v_dim}
    return out


@dataclass
class _Layout:
    mixers: list[Mixer]
    windows: list[int | None]
    ffn: list[str]  # "dense", "moe" or "none"
    from_pattern: bool = False  # a per-layer pattern placed the MoE layers itself
    widths: list[int] = field(default_factory=list)  # per-layer dense widths (0: none), when the layers say
    kv_heads: int | None = None  # the KV heads the layers say, over the config's num_key_value_heads


def _from_types(c: _Config, types: list[str], layers: int) -> _Layout:
    if len(types) != layers:
        raise SpecInvalid(f"config.json layer_types has {len(types)} entries for {layers} layers")
    spec = c.family.layers
    mixers: dict[str, Mixer] = {**LAYER_TYPE_MIXERS, **spec.type_mixers}
    unknown = sorted(set(types) - set(mixers))
    if unknown:
        raise SpecInvalid(f"config.json layer_types has unknown entries {unknown}; known: {sorted(mixers)}")
    window = {"sliding_attention": spec.window_field, "chunked_attention": spec.chunk_field}
    windows = [c.integer(window[t]) if t in window else None for t in types]
    return _Layout([mixers[t] for t in types], windows, ["dense"] * layers)


def _block_list(c: _Config) -> list[str] | None:
    """The config's per-layer block kinds (Nemotron-3 layers_block_type), checked; None where it gives none."""
    name = c.family.layers.block_types_field
    blocks = c.get(name) if name else None
    if blocks is None:
        return None
    if not isinstance(blocks, list) or not blocks or any(b not in BLOCK_CHARS for b in blocks):
        shown = sorted({str(b) for b in blocks} - set(BLOCK_CHARS)) if isinstance(blocks, list) else blocks
        raise SpecInvalid(f"config.json {name} must list one of {sorted(BLOCK_CHARS)} per layer; got {shown!r}")
    return blocks


def _block_pattern(c: _Config) -> str | None:
    blocks = _block_list(c)
    return None if blocks is None else "".join(BLOCK_CHARS[b] for b in blocks)


def _layer_count(c: _Config) -> int:
    """num_hidden_layers, or the length of a per-layer block list, which transformers takes over it."""
    blocks = _block_list(c)
    if blocks is None:
        return c.integer("num_layers")
    c.get("num_hidden_layers")  # deprecated beside the list: NemotronHConfig keeps the list's length
    return len(blocks)


def _layout(c: _Config, layers: int) -> _Layout:
    spec = c.family.layers
    if spec.block_configs_field and c.get(spec.block_configs_field) is not None:
        blocks = read_blocks(c.get(spec.block_configs_field), layers, hidden=c.integer("hidden_size"),
                             heads=c.integer("num_heads"))
        return _Layout(list(blocks.mixers), [None] * layers, list(blocks.ffn), widths=list(blocks.widths),
                       kv_heads=blocks.kv_heads)
    pattern = _block_pattern(c) or (c.get(spec.pattern_field) if spec.pattern_field else None)
    if pattern:
        if len(pattern) != layers or set(pattern) - set(PATTERN_CHARS):
            raise SpecInvalid(f"config.json {spec.pattern_field} {pattern!r} must have one of "
                              f"{''.join(PATTERN_CHARS)} per layer ({layers})")
        return _Layout([PATTERN_CHARS[ch][0] for ch in pattern], [None] * layers,
                       [PATTERN_CHARS[ch][1] for ch in pattern], from_pattern=True)
    types = c.get(spec.types_field)
    if types:
        return _from_types(c, list(types), layers)
    if spec.default_type is not None:
        return _from_types(c, [spec.default_type] * layers, layers)
    if spec.period is not None:
        period = c.width(spec.period.period)
        first, other = spec.period.kinds
        return _from_types(c, [first if (i + 1) % period else other for i in range(layers)], layers)
    every = spec.every_layer_window
    window = c.get(spec.window_field)
    windows: list[int | None] = [None] * layers
    if every is not None:  # the switch and the first windowed layer are read even where no window is set
        enabled = every.enabled_by is None or c.get(every.enabled_by) is not False
        start = c.get(every.from_layer, 0) if every.from_layer else 0
        if window is not None and enabled:
            start = c.integer(every.from_layer) if every.from_layer else 0
            windows = [int(window) if i >= start else None for i in range(layers)]
    return _Layout(["attention"] * layers, windows, ["dense"] * layers)


def _cross_layers(c: _Config, layout: _Layout, layers: int) -> CrossAttention | None:
    """Mark the layers the config lists as attending to the encoder's tokens (mllama cross_attention_layers)."""
    spec = c.family.cross_attention
    if spec is None:
        return None
    listed = c.get(spec.layers_field, [])
    if not isinstance(listed, list) or any(isinstance(i, bool) or not isinstance(i, int) for i in listed):
        raise SpecInvalid(f"config.json {spec.layers_field} must list layer indices, got {listed!r}")
    # MllamaTextModel builds layer i as cross-attention when i is listed: an index past the last layer builds none
    marked = [i for i in range(layers) if i in set(listed)]
    for i in marked:
        layout.mixers[i] = "cross_attention"
    return CrossAttention(tokens=spec.tokens, source=spec.source) if marked else None


def _moe(c: _Config, layout: _Layout, layers: int) -> MixtureOfExperts | None:
    spec = c.family.moe
    if spec is None or (layout.from_pattern and "moe" not in layout.ffn):
        return None
    width = c.integer(spec.width)
    shared = c.integer(spec.shared_width) if spec.shared_width else 0
    if spec.shared_count:
        shared = width * c.integer(spec.shared_count, 0)
    if not layout.from_pattern:  # no pattern placed the MoE layers: the family's rule does
        listed = c.get(spec.moe_layers) if spec.moe_layers else None
        first = c.integer(spec.first_dense, 0) if spec.first_dense else 0
        step = c.integer(spec.step, 1) if spec.step else 1
        dense = set(c.get(spec.dense_layers, ()) if spec.dense_layers else ())
        for i in range(layers):
            moe = i in set(listed) if listed is not None else i >= first and (i + 1) % step == 0 and i not in dense
            layout.ffn[i] = "moe" if moe else layout.ffn[i]
    return MixtureOfExperts(
        num_experts=c.integer(spec.experts), experts_per_token=c.integer(spec.per_token),
        expert_intermediate_size=width,
        shared_intermediate_size=shared, shared_expert_gate=spec.shared_gate, router_bias=spec.router_bias,
        expert_bias=spec.expert_bias, fp32_routing_weights=spec.fp32_routing_weights,
        latent_size=c.optional(spec.latent) if spec.latent else None,
    )


def _attention(c: _Config, kv_heads: int | None) -> Attention:
    spec = c.family.attention
    heads = c.integer("num_heads")
    head_dim = c.integer("head_dim", c.integer("hidden_size") // heads)
    if kv_heads is None:
        grouped = spec.grouped_kv_by is None or c.switch(spec.grouped_kv_by)
        kv_heads = c.integer("num_kv_heads", heads) if grouped else heads
        if grouped and c.optional("num_kv_heads") is None:  # transformers: None means one KV head per query head
            c.defaulted.append(f"num_key_value_heads = num_attention_heads ({heads})")
    return Attention(
        num_heads=heads, num_kv_heads=kv_heads, head_dim=head_dim, v_head_dim=head_dim,
        q_bias=c.switch(spec.q_bias), kv_bias=c.switch(spec.kv_bias), o_bias=c.switch(spec.o_bias),
        qk_norm=c.switch(spec.qk_norm), qk_norm_full_width=spec.qk_norm_full_width, sinks=spec.sinks,
        output_gate=spec.output_gate,
    )


def _mamba_head_dim(c: _Config, m: MambaSpec) -> int:
    """The config's Mamba-2 head width, or for "auto" (Falcon-H1) the inner width over the heads, as
    FalconH1Config.__post_init__ derives it: mamba_d_ssm, or mamba_expand × hidden_size when that is null."""
    if c.get(m.head_dim) != "auto" or m.inner is None:
        return c.integer(m.head_dim)
    inner = c.get(m.inner)
    if inner is None:
        inner = c.integer(m.expand or "mamba_expand") * c.integer("hidden_size")
    if isinstance(inner, bool) or not isinstance(inner, int):
        raise SpecInvalid(f"config.json field {m.inner!r} must be an integer, got {inner!r}")
    return inner // c.integer(m.num_heads)


def _mixers(c: _Config) -> dict[str, Any]:
    out: dict[str, Any] = {}
    m, g = c.family.mamba, c.family.linear_attention
    if m is not None:
        dtype = c.get(m.state_dtype) if m.state_dtype else None
        out["mamba"] = Mamba2(
            num_heads=c.integer(m.num_heads), head_dim=_mamba_head_dim(c, m), state_size=c.integer(m.state_size),
            n_groups=c.integer(m.n_groups), conv_kernel=c.integer(m.conv_kernel), proj_bias=c.switch(m.proj_bias),
            out_bias=c.switch(m.out_bias) if m.out_bias is not None else None, conv_bias=c.switch(m.conv_bias),
            gated_norm=c.switch(m.gated_norm), state_dtype_bytes=DTYPE_BYTES.get(str(dtype)) if dtype else None,
        )
        out["parallel_mamba"] = m.parallel
    if g is not None:
        dtype = c.get(g.state_dtype) if g.state_dtype else None
        out["linear_attention"] = GatedDeltaNet(
            num_k_heads=c.integer(g.num_k_heads), num_v_heads=c.integer(g.num_v_heads),
            head_k_dim=c.integer(g.head_k_dim), head_v_dim=c.integer(g.head_v_dim),
            conv_kernel=c.integer(g.conv_kernel),
            state_dtype_bytes=DTYPE_BYTES.get(str(dtype)) if dtype else None,
        )
    return out


def read_family(family: Family, config: Mapping[str, Any]) -> Architecture:
    """The architecture ``config`` describes, read the way ``family`` says. A config that leaves out a field that
    sets the model's size is refused, naming every such field; the other defaults filled in are listed in the
    architecture's ``defaulted_fields``."""
    c = _Config(family, config)
    try:
        arch = _build(c, family, config)
    except (SpecInvalid, ValueError, TypeError):
        if c.missing:
            raise SpecInvalid(_missing_message(c)) from None
        raise
    if c.missing:
        raise SpecInvalid(_missing_message(c))
    return arch.model_copy(update={"defaulted_fields": tuple(c.defaulted)}) if c.defaulted else arch


def _missing_message(c: _Config) -> str:
    return (f"config.json lacks {', '.join(sorted(c.missing))}, which set the model's size (model_type "
            f"{c.family.model_type!r}); refused rather than filled in with transformers' defaults")


def _build(c: _Config, family: Family, config: Mapping[str, Any]) -> Architecture:
    layers = _layer_count(c)
    layout = _layout(c, layers)
    cross = _cross_layers(c, layout, layers)
    moe = _moe(c, layout, layers)
    # a model whose every feed-forward is MoE may leave the dense width out (Qwen3.5-MoE); per-layer widths
    # (DeciLM) make the widest one the MLP's
    width = max(layout.widths) if layout.widths else c.integer(
        family.mlp.width, moe.expert_intermediate_size if moe is not None else None)
    mixers = tuple(layout.mixers) if set(layout.mixers) != {"attention"} else ()
    softcap = family.final_logit_softcapping
    layer_norm = family.rms_norm_by is not None and c.get(family.rms_norm_by) is False
    return Architecture(
        model_type=str(config.get("model_type", family.model_type)),
        hidden_size=c.integer("hidden_size"),
        num_layers=layers,
        vocab_size=c.integer("vocab_size"),
        tie_word_embeddings=c.switch(family.tie_word_embeddings),
        attention=_attention(c, layout.kv_heads),
        mlp=Mlp(intermediate_size=width, gated=family.mlp.gated, bias=c.switch(family.mlp.bias),
                fused_gate_up=family.mlp.fused_gate_up),
        moe=moe,
        moe_layers=tuple(f == "moe" for f in layout.ffn) if moe is not None else (),
        ffn_free_layers=tuple(f == "none" for f in layout.ffn) if "none" in layout.ffn else (),
        layer_windows=tuple(layout.windows) if any(w is not None for w in layout.windows) else (),
        layer_mixers=mixers,
        cross_attention=cross,
        extra_embedding_rows=family.extra_embedding_rows,
        layer_mlp_widths=tuple(layout.widths) if len(set(layout.widths)) > 1 else (),
        norm="layer" if layer_norm else family.norm,
        norms_per_layer=family.norms_per_layer,
        norm_scale_fp32=family.norm_scale_fp32,
        block_norms=family.block_norms,
        final_norm=c.switch(family.final_norm),
        lm_head_bias=c.switch(family.lm_head_bias),
        max_position_embeddings=c.optional("max_position_embeddings"),
        hidden_act=c.get("hidden_activation") or c.get("hidden_act"),
        final_logit_softcapping=softcap is not None and c.get(softcap) is not None,
        **_mixers(c),
    )
