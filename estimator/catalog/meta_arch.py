"""The estimator's `Architecture` of a model transformers built on the ``meta`` device.

The tensors (and so the parameter count and the weights) are the model's own (`estimator.catalog.meta_tensors`);
the fields here describe what the tensors do not: which layers cache K and V and how wide (heads, KV heads, head
widths, windows), which hold a recurrent state (Mamba-2, gated DeltaNet), the feed-forward and expert widths and the
routing top-k, for the KV cache, the state, the activations and the times. Read from the modules
(`estimator.catalog.meta_layers`), with the config's own fields where a module does not say (the routing top-k of
a router without a ``top_k``). Whatever cannot be held is a note, not a guess.
"""

from __future__ import annotations

from typing import Any

from estimator.catalog.architecture import (
    MAX_WIDTH,
    Architecture,
    Attention,
    GatedDeltaNet,
    LatentAttention,
    Mamba2,
    Mixer,
    MixtureOfExperts,
    Mlp,
)
from estimator.catalog.meta_layers import (
    HELD_CACHE_KINDS,
    LayerKind,
    attention_widths,
    cache_layers,
    decoder_layers,
    layer_kinds,
    linear_widths,
)
from estimator.catalog.meta_tensors import meta_rows
from estimator.errors import SpecInvalid

_TOP_K = ("num_experts_per_tok", "moe_topk", "moe_k", "top_k", "num_experts_per_token", "moe_top_k",
          "router_top_k", "num_selected_experts", "top_k_experts")
_TOWER_KEYS = ("vision_config", "audio_config", "speech_config", "vision_tower_config")  # built with the model
_FFN = ("mlp", "feed_forward", "ffn", "block_sparse_moe", "moe")
_DTYPE_BYTES = {"float64": 8, "float32": 4, "float16": 2, "bfloat16": 2}
_FFN_CLASSES = ("mlp", "feedforward", "layerff", "densereludense")


def _int(value: Any) -> int:
    if isinstance(value, list | tuple) and value:
        value = value[0]
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _attr(config: Any, *names: str) -> int:
    for name in names:
        found = _int(getattr(config, name, None))
        if found:
            return found
    return 0


def _attention(kinds: list[LayerKind], text: Any, hidden: int, notes: list[str]) -> Attention:
    """The attention of the attention layers; where they differ in KV width, the widest (said in the notes)."""
    modules = [k.attention for k in kinds if k.attention is not None]
    heads_default = _attr(text, "num_attention_heads", "n_head", "num_heads") or 1
    if not modules:
        return Attention(num_heads=1, num_kv_heads=1, head_dim=hidden, v_head_dim=hidden)
    first = modules[0]
    if getattr(first, "kv_a_proj_with_mqa", None) is not None:
        return _latent(text, heads_default)
    shapes = [attention_widths(m, heads_default, hidden) for m in modules]
    widths = {shape[1:] for shape in shapes}  # (KV heads, head width, value width): what the cache holds
    kv, head_dim, v_head = max(widths, key=lambda w: w[0] * (w[1] + w[2]))
    heads = max(shape[0] for shape in shapes if shape[1:] == (kv, head_dim, v_head))
    if len(widths) > 1:
        notes.append(f"attention layers differ in their K/V widths ({len(widths)} kinds): the KV cache takes the "
                     "widest for every attention layer (an upper bound)")
    if heads % kv:
        kv = heads
    return Attention(num_heads=heads, num_kv_heads=kv, head_dim=head_dim, v_head_dim=v_head,
                     q_bias=_bias(first, "q_proj"), kv_bias=_bias(first, "k_proj"), o_bias=_bias(first, "o_proj"),
                     qk_norm=getattr(first, "q_norm", None) is not None)


def _has_weights(module: Any) -> bool:
    return module is not None and any(True for _ in module.parameters())


def _bias(module: Any, name: str) -> bool:
    return getattr(getattr(module, name, None), "bias", None) is not None


def _latent(text: Any, heads: int) -> Attention:
    latent = LatentAttention(q_lora_rank=_attr(text, "q_lora_rank") or None, kv_lora_rank=_attr(text, "kv_lora_rank"),
                             qk_nope_head_dim=_attr(text, "qk_nope_head_dim"),
                             qk_rope_head_dim=_attr(text, "qk_rope_head_dim"), v_head_dim=_attr(text, "v_head_dim"))
    return Attention(num_heads=heads, num_kv_heads=heads, head_dim=latent.qk_nope_head_dim + latent.qk_rope_head_dim,
                     v_head_dim=latent.v_head_dim, latent=latent)


def _state_bytes(text: Any) -> int | None:
    """The recurrent state's own dtype, where the config names one (``mamba_ssm_cache_dtype``, ``mamba_ssm_dtype``)."""
    for name in ("mamba_ssm_cache_dtype", "mamba_ssm_dtype"):
        value = str(getattr(text, name, "") or "").removeprefix("torch.")
        if value in _DTYPE_BYTES:
            return _DTYPE_BYTES[value]
    return None


def _recurrent(module: Any, state_bytes: int | None) -> Mamba2 | GatedDeltaNet | None:
    """A Mamba-2 or gated-DeltaNet mixer's fields from its module; None for another recurrent kind."""
    names = ("num_heads", "head_dim", "ssm_state_size", "n_groups", "conv_kernel_size")
    if all(_int(getattr(module, n, None)) for n in names):
        heads, head_dim, state, groups, kernel = (getattr(module, n) for n in names)
        return Mamba2(num_heads=heads, head_dim=head_dim, state_size=state, n_groups=groups, conv_kernel=kernel,
                      proj_bias=_bias(module, "in_proj"), out_bias=_bias(module, "out_proj"),
                      conv_bias=_bias(module, "conv1d"), gated_norm=_has_weights(getattr(module, "norm", None)),
                      state_dtype_bytes=state_bytes)
    names = ("num_k_heads", "num_v_heads", "head_k_dim", "head_v_dim", "conv_kernel_size")
    if all(_int(getattr(module, n, None)) for n in names):
        k_heads, v_heads, k_dim, v_dim, kernel = (getattr(module, n) for n in names)
        return GatedDeltaNet(num_k_heads=k_heads, num_v_heads=v_heads, head_k_dim=k_dim, head_v_dim=v_dim,
                             conv_kernel=kernel, state_dtype_bytes=state_bytes)
    return None


def _mixers(kinds: list[LayerKind], state_bytes: int | None,
            notes: list[str]) -> tuple[list[Mixer], Mamba2 | None, GatedDeltaNet | None, bool]:
    """Each layer's mixer, the Mamba-2 and DeltaNet fields, and whether Mamba-2 runs beside attention."""
    mixers: list[Mixer] = []
    mamba: Mamba2 | None = None
    deltanet: GatedDeltaNet | None = None
    parallel, unread = False, set()
    for kind in kinds:
        read = None if kind.recurrent is None else _recurrent(kind.recurrent, state_bytes)
        if kind.recurrent is not None and read is None:
            unread.add(type(kind.recurrent).__name__)
        if isinstance(read, Mamba2):
            mamba, parallel = read, parallel or kind.attention is not None
            mixers.append("attention" if kind.attention is not None else "mamba2")
        elif isinstance(read, GatedDeltaNet) and kind.attention is None:
            deltanet = read
            mixers.append("gated_deltanet")
        else:
            mixers.append("attention" if kind.attention is not None else "none")
    for name in sorted(unread):
        notes.append(f"{name} layers keep a recurrent state this reader has no formula for: it is not counted "
                     "(their tensors are)")
    return mixers, mamba, deltanet, parallel


def _ffn(layer: Any) -> Any:
    """A layer's feed-forward: a child of a usual name, else the first module of a feed-forward class (T5LayerFF)."""
    for name in _FFN:
        module = getattr(layer, name, None)
        if module is not None:
            return module
    return next((m for m in layer.modules() if any(w in type(m).__name__.lower() for w in _FFN_CLASSES)), None)


def _moe(model_layers: list[Any], kinds: list[LayerKind], text: Any, hidden: int,
         notes: list[str]) -> MixtureOfExperts | None:
    """The routed experts of the MoE layers (the first one's), top-k from its router or the config."""
    at = next((i for i, k in enumerate(kinds) if k.experts is not None), None)
    if at is None:
        return None
    experts, layer = kinds[at].experts, model_layers[at]
    count, width = _expert_shape(experts, hidden)
    if count < 2:
        return None
    router = next((m for m in layer.modules() if _int(getattr(m, "top_k", None))), None)
    top_k = _int(getattr(router, "top_k", None)) or _attr(text, *_TOP_K)
    if not top_k:
        notes.append("the routing top-k is in neither the router module nor the config: every expert is taken as "
                     "active (times are an upper bound)")
    shared = sum(linear_widths(m, hidden)[0] for name, m in layer.named_modules()
                 if name.rsplit(".", 1)[-1] in ("shared_expert", "shared_experts", "shared_mlp"))
    return MixtureOfExperts(num_experts=count, experts_per_token=min(top_k or count, count),
                            expert_intermediate_size=width or hidden, shared_intermediate_size=shared,
                            shared_expert_gate=any(n.endswith("shared_expert_gate") for n, _ in layer.named_modules()))


def _expert_shape(experts: Any, hidden: int) -> tuple[int, int]:
    """(experts, width) of an experts module: its attributes, a list's first expert, or a fused
    ``(experts, …)`` down projection's dimension that is not the hidden width."""
    count = _int(getattr(experts, "num_experts", None))
    width = _attr(experts, "intermediate_dim", "expert_dim", "intermediate_size")
    if type(experts).__name__ == "ModuleList":
        return count or len(experts), width or linear_widths(experts[0], hidden)[0]
    fused = [p for name, p in experts.named_parameters() if p.dim() == 3 and "down" in name] or \
        [p for p in experts.parameters() if p.dim() == 3]
    if fused:
        shape = tuple(int(d) for d in fused[0].shape)
        count = count or shape[0]
        width = width or next((d for d in shape[1:] if d != hidden), hidden)
    return count, width


def _mlp(model_layers: list[Any], kinds: list[LayerKind], moe: MixtureOfExperts | None, text: Any,
         hidden: int) -> Mlp:
    """The widest dense feed-forward (the activation peak's), or the experts' shape where every layer is MoE."""
    dense = [linear_widths(_ffn(layer), hidden) for layer, kind in zip(model_layers, kinds, strict=True)
             if kind.experts is None and _ffn(layer) is not None]
    dense = [d for d in dense if d[0]]
    if dense:
        width, gated = max(dense)
        return Mlp(intermediate_size=min(width, MAX_WIDTH), gated=gated)
    width = moe.expert_intermediate_size if moe else (_attr(text, "intermediate_size") or 4 * hidden)
    return Mlp(intermediate_size=width, gated=True)


def _model_notes(model: Any, config: Any, model_type: str, unclassified: list[str], *, has_head: bool) -> list[str]:
    """What the architecture cannot hold of the model as a whole: tensors in no role, an encoder-decoder's or a
    decoder's cross-attention, a missing LM head (refused for a decoder), a sparse-attention indexer's keys."""
    notes = []
    if unclassified:
        notes.append(f"{len(unclassified)} tensor kinds fit no role and are counted as 'other': "
                     + ", ".join(unclassified[:6]) + (" …" if len(unclassified) > 6 else ""))
    classes = {type(m).__name__.lower() for m in model.modules()}
    if getattr(config, "is_encoder_decoder", False):
        notes.append("an encoder-decoder: the KV cache is the decoder's self-attention; the cross-attention K/V of "
                     "the encoder's tokens and the encoder's own run are not counted")
    elif not has_head and any(getattr(m, "is_causal", False) for m in model.modules()):
        raise SpecInvalid(f"transformers has no causal-LM or image-text-to-text class for {model_type}: its bare "
                          "decoder, without an LM head, cannot be read exactly")
    elif not has_head:
        notes.append(f"transformers has no LM class for {model_type}: the bare model was built and is read as an "
                     "encoder (no LM head, no KV cache)")
    elif any("crossattention" in name for name in classes):
        notes.append("its cross-attention layers' K/V of the encoder's (image) tokens are not counted")
    if any(name.endswith(".indexer") for name, _ in model.named_modules()):
        notes.append("the sparse-attention indexer's cached keys are not in the KV cache")
    return notes


def architecture_of(model: Any, config: Any, model_type: str, reader: str) -> Architecture:
    """The whole architecture of ``model`` (built from ``config``), its tensors, and how it was read."""
    text = config.get_text_config(decoder=True)
    rows, unclassified = meta_rows(model)
    output = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    notes = _model_notes(model, config, model_type, unclassified, has_head=output is not None)
    embedding = model.get_input_embeddings()
    hidden = _attr(text, "hidden_size", "d_model", "n_embd") or int(embedding.weight.shape[1])
    layers = decoder_layers(model, _attr(text, "num_hidden_layers", "num_layers", "n_layer", "n_layers") or None)
    cached = cache_layers(text, len(layers))
    kinds = layer_kinds(layers, None if cached is None else cached[0])
    for kind in sorted(set(cached[1] if cached else ()) - HELD_CACHE_KINDS):
        count = cached[1].count(kind) if cached else 0
        notes.append(f"{count} layers cache as transformers' {kind}, which this reader holds as full attention "
                     "(an upper bound)")
    mixers, mamba, deltanet, parallel = _mixers(kinds, _state_bytes(text), notes)
    moe = _moe(layers, kinds, text, hidden, notes)
    windows = tuple(k.window if m == "attention" else None for k, m in zip(kinds, mixers, strict=True))
    position = _int(getattr(text, "max_position_embeddings", None))
    return Architecture(
        model_type=model_type, hidden_size=hidden, num_layers=max(len(layers), 1),
        vocab_size=int(embedding.weight.shape[0]),
        tie_word_embeddings=output is not None and output.weight is embedding.weight,
        attention=_attention(kinds, text, hidden, notes), mlp=_mlp(layers, kinds, moe, text, hidden), moe=moe,
        moe_layers=tuple(k.experts is not None for k in kinds) if moe else (),
        layer_windows=windows if any(w is not None for w in windows) else (),
        layer_mixers=tuple(mixers) if set(mixers) != {"attention"} and layers else (),
        mamba=mamba, parallel_mamba=parallel, linear_attention=deltanet,
        norm="rms" if any("rmsnorm" in type(m).__name__.lower() for m in model.modules()) else "layer",
        causal=output is not None, lm_head=output is not None,
        max_position_embeddings=position if 0 < position <= MAX_WIDTH else None,
        hidden_act=getattr(text, "hidden_act", None) if isinstance(getattr(text, "hidden_act", None), str) else None,
        read_tensors=tuple(rows), read_by=reader, read_notes=tuple(notes),
        towers_read=tuple(k for k in _TOWER_KEYS if getattr(config, k, None) is not None))
