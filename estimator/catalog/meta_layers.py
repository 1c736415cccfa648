"""What each decoder layer of a meta-device model is: its token mixer (attention, Mamba-2, gated DeltaNet, another
recurrent kind), its sliding window, its attention widths, and whether its feed-forward is routed experts.

Read from the modules transformers built (`estimator.catalog.transformers_reader`), and the windows from the
cache layers transformers itself would build for the config (``transformers.cache_utils.get_layer_types_and_kwargs``,
what ``DynamicCache(config=...)`` dispatches on: ``full_attention``, ``sliding_attention``, ``chunked_attention``
with their windows). Attribute names follow transformers 5's modules: attention modules carry ``head_dim`` and
``num_key_value_groups``, Mamba-2 mixers ``num_heads``, ``head_dim``, ``ssm_state_size``, ``n_groups`` and
``conv_kernel_size``, gated DeltaNets ``num_k_heads``, ``num_v_heads``, ``head_k_dim``, ``head_v_dim``, experts
modules ``num_experts`` and ``intermediate_dim``, routers ``top_k``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

# words of a recurrent mixer's class name (JambaMambaMixer, Qwen3NextGatedDeltaNet, RwkvSelfAttention, Lfm2ShortConv)
_RECURRENT_WORDS = {"mamba", "delta", "rwkv", "retention", "lightning", "ssm", "recurrent", "xlstm", "mlstm"}
_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")


@dataclass(frozen=True)
class LayerKind:
    """One decoder layer as built: its mixer module(s), its experts module, its window."""

    attention: Any  # the self-attention module, or None
    recurrent: Any  # the recurrent mixer module (Mamba, DeltaNet, short conv, RWKV time mix), or None
    experts: Any  # the routed experts module, or None
    window: int | None


def _recurrent_name(name: str) -> bool:
    words = {w.lower() for w in _WORD.findall(name)}
    lower = name.lower()
    return bool(words & _RECURRENT_WORDS) or "shortconv" in lower or "linearattention" in lower


def _is_attention(module: Any) -> bool:
    name = type(module).__name__
    lower = name.lower()
    return lower.endswith("attention") and not _recurrent_name(name) and "cross" not in lower \
        and "encdec" not in lower and _has_linear(module)


def _is_recurrent(module: Any) -> bool:
    """A recurrent mixer: named so, or holding an SSM's state size or ``A_log`` (FalconH1Mixer)."""
    name = type(module).__name__
    lower = name.lower()
    if any(word in lower for word in ("norm", "model", "cache")) or lower.endswith(("decoderlayer", "block")):
        return False
    return _recurrent_name(name) or _int(getattr(module, "ssm_state_size", None)) > 0 \
        or "A_log" in dict(module.named_parameters(recurse=False))


def _has_linear(module: Any) -> bool:
    return any(type(child).__name__ == "Linear" for child in module.modules())


def _first(layer: Any, test: Any) -> Any:
    for child in layer.modules():
        if child is not layer and test(child):
            return child
    return None


def _experts(layer: Any) -> Any:
    """The routed experts: a ``*Experts`` module (transformers 5's fused experts) or a list named ``experts``."""
    for name, module in layer.named_modules():
        if type(module).__name__.lower().endswith("experts") or name.rsplit(".", 1)[-1] == "experts":
            return module
    return None


def decoder_layers(model: Any, count: int | None) -> list[Any]:
    """The decoder's layers: the ModuleList of ``count`` layers (the decoder's, for an encoder-decoder), else the
    longest ModuleList outside any experts module."""
    lists = [(name, m) for name, m in model.named_modules()
             if type(m).__name__ == "ModuleList" and "expert" not in name and len(m)]
    if not lists:
        return []
    decoders = [pair for pair in lists if "decoder" in pair[0]] or lists
    sized = [pair for pair in decoders if len(pair[1]) == count]
    return list(max(sized or decoders, key=lambda pair: len(pair[1]))[1])


# the cache layer kinds of transformers' DynamicCache this reader holds: attention (whole or windowed), recurrent
# state, and layers that cache nothing
HELD_CACHE_KINDS = frozenset({"full_attention", "sliding_attention", "chunked_attention", "hybrid", "hybrid_sliding",
                              "linear_attention", "conv", "dummy"})


def cache_layers(config: Any, layers: int) -> tuple[list[int | None], list[str]] | None:
    """Each layer's attention window as transformers' cache would keep it (None: the whole context) and its cache
    kind (``full_attention``, ``sliding_attention``, ``compressed_sparse_attention``...); None when transformers
    cannot say (an older version, or a config its helper does not read)."""
    try:
        from transformers.cache_utils import get_layer_types_and_kwargs

        types, kwargs = get_layer_types_and_kwargs(config)
    except Exception:
        return None
    windows = [extra.get("sliding_window") if kind in ("sliding_attention", "chunked_attention", "hybrid_sliding")
               else None for kind, extra in zip(types, kwargs, strict=False)]
    windows = [w if isinstance(w, int) and w > 0 else None for w in windows]
    return (windows + [None] * layers)[:layers], [str(kind) for kind in types][:layers]


def layer_kinds(layers: list[Any], windows: list[int | None] | None) -> list[LayerKind]:
    """Each layer's mixer, experts and window: the cache's window, or without one the module's ``sliding_window``."""
    kinds = []
    for at, layer in enumerate(layers):
        recurrent = _first(layer, _is_recurrent)
        attention = _first(layer, _is_attention)
        if attention is not None and recurrent is not None and _contains(recurrent, attention):
            attention = None  # a recurrent block named *Attention (RWKV's time mix)
        own = _int(getattr(attention, "sliding_window", None)) or None
        kinds.append(LayerKind(attention, recurrent, _experts(layer), own if windows is None else windows[at]))
    return kinds


def _contains(outer: Any, inner: Any) -> bool:
    return any(child is inner for child in outer.modules())


def attention_widths(module: Any, heads_default: int, hidden: int) -> tuple[int, int, int, int]:
    """(query heads, KV heads, query/key head width, value head width) of one attention module."""
    head_dim = _int(getattr(module, "head_dim", None)) or hidden // heads_default
    heads = _int(getattr(module, "num_heads", None)) or _int(getattr(module, "num_attention_heads", None)) \
        or heads_default
    groups = _int(getattr(module, "num_key_value_groups", None))
    k, v = getattr(module, "k_proj", None), getattr(module, "v_proj", None)
    if k is not None and _int(getattr(k, "out_features", None)):
        kv = k.out_features // head_dim
    elif groups:
        kv = heads // groups
    else:
        kv = _int(getattr(module, "num_key_value_heads", None)) or heads
    v_head = v.out_features // kv if v is not None and _int(getattr(v, "out_features", None)) else head_dim
    return heads, max(kv, 1), head_dim, v_head


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def linear_widths(module: Any, hidden: int) -> tuple[int, bool]:
    """A feed-forward module's (width, gated): the input width of its projection back to ``hidden``, gated when
    the other projections together are twice that wide (gate and up)."""
    linears = [m for m in module.modules() if type(m).__name__ == "Linear"]
    down = [m for m in linears if m.out_features == hidden and m.in_features != hidden] or \
        [m for m in linears if m.out_features == hidden]
    if not down:
        return 0, True
    width = sum(m.in_features for m in down)
    ups = sum(m.out_features for m in linears if m not in down)
    return width, ups >= 2 * width
