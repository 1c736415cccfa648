"""DeciLM's per-layer ``block_configs`` (Llama-3.1/3.3-Nemotron Super and Ultra, model_type ``nemotron-nas``).

Each layer's entry says what its attention is — absent (``no_op``), one bias-free hidden × hidden linear in its
place (``replace_with_linear``), or grouped-query attention with ``num_attention_heads / n_heads_in_group`` KV
heads — and how wide its gated feed-forward is: ``ffn_mult``, turned into a width as the checkpoint's
modeling_decilm.py does (``_ffn_mult_to_intermediate_size``: int(2 · ffn_mult · hidden / 3) rounded up to a
multiple of 256; the same function in vLLM's nemotron_nas.py), or absent (``no_op``). A layer without attention
has no input norm, one without a feed-forward no post-attention norm.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from estimator.catalog.architecture import Mixer
from estimator.errors import SpecInvalid

FFN_WIDTH_MULTIPLE = 256  # modeling_decilm.py _find_multiple(intermediate_size, 256)
# attention keys of block_configs that change the layer beyond what is read here; null or false in the published
# Super-49B config (tests/data/configs), refused when set
_UNREAD_ATTENTION = ("window_length", "num_sink_tokens", "sparsify")


@dataclass(frozen=True)
class Blocks:
    mixers: tuple[Mixer, ...]
    ffn: tuple[str, ...]  # "dense" or "none" per layer
    widths: tuple[int, ...]  # the dense width per layer, 0 where it has none
    kv_heads: int | None  # the KV heads of every attention layer (None: no attention layer)


def _part(blocks: list[Any], layer: int, key: str) -> Mapping[str, Any]:
    block = blocks[layer]
    part = block.get(key, {}) if isinstance(block, Mapping) else None
    if not isinstance(part, Mapping):
        raise SpecInvalid(f"config.json block_configs[{layer}].{key} must be an object")
    return part


def _number(part: Mapping[str, Any], where: str, name: str) -> float:
    value = part.get(name)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 2**24:
        raise SpecInvalid(f"config.json {where}.{name} must be a positive number, got {value!r}")
    return value


def ffn_width(ffn_mult: float, hidden: int) -> int:
    """modeling_decilm.py's _ffn_mult_to_intermediate_size: int(2 · ffn_mult · hidden / 3), rounded up to 256."""
    width = int(2 * ffn_mult * hidden / 3)
    return width if width % FFN_WIDTH_MULTIPLE == 0 else width + FFN_WIDTH_MULTIPLE - width % FFN_WIDTH_MULTIPLE


def _mixer(attn: Mapping[str, Any], where: str, heads: int) -> tuple[Mixer, int | None]:
    unread = [key for key in _UNREAD_ATTENTION if attn.get(key)]
    if unread:
        raise SpecInvalid(f"config.json {where} sets {', '.join(unread)}: not read yet")
    if attn.get("no_op"):
        return "none", None
    if attn.get("replace_with_linear"):
        return "linear", None
    group = int(_number(attn, where, "n_heads_in_group"))
    if group != attn["n_heads_in_group"] or heads % group:
        raise SpecInvalid(f"config.json {where}.n_heads_in_group ({attn['n_heads_in_group']!r}) must divide "
                          f"num_attention_heads ({heads})")
    return "attention", heads // group


def _ffn(ffn: Mapping[str, Any], where: str, hidden: int) -> int:
    if ffn.get("replace_with_linear"):
        raise SpecInvalid(f"config.json {where}.replace_with_linear (a linear feed-forward) is not read yet")
    if ffn.get("no_op"):
        return 0
    if ffn.get("intermediate_size") is not None:  # vLLM reads an explicit width where a checkpoint gives one
        return int(_number(ffn, where, "intermediate_size"))
    return ffn_width(_number(ffn, where, "ffn_mult"), hidden)


def read_blocks(blocks: Any, layers: int, *, hidden: int, heads: int) -> Blocks:
    """The layers ``blocks`` (a config's block_configs list) describe."""
    if not isinstance(blocks, list) or len(blocks) != layers:
        count = len(blocks) if isinstance(blocks, list) else "no list of"
        raise SpecInvalid(f"config.json block_configs has {count} entries for {layers} layers")
    mixers: list[Mixer] = []
    widths: list[int] = []
    kv_heads: set[int] = set()
    for layer in range(layers):
        mixer, kv = _mixer(_part(blocks, layer, "attention"), f"block_configs[{layer}].attention", heads)
        mixers.append(mixer)
        kv_heads |= {kv} if kv is not None else set()
        widths.append(_ffn(_part(blocks, layer, "ffn"), f"block_configs[{layer}].ffn", hidden))
    if len(kv_heads) > 1:
        raise SpecInvalid(f"config.json block_configs gives attention layers different KV-head counts "
                          f"({sorted(kv_heads)}): one count per model is read, not per layer yet")
    return Blocks(tuple(mixers), tuple("dense" if w else "none" for w in widths), tuple(widths),
                  next(iter(kv_heads), None))
