"""A multimodal wrapper's towers, counted from their config sections: the vision or audio encoder and the
projector that feeds its output to the text model.

The language model (``text_config``) drives the KV cache, the decode step and the times; the towers add their
parameters and weights, which stay in the checkpoint's 16-bit dtype (weight-only formats pack the text model's
linear layers), and run on images or audio in the prefill. Layouts and defaults follow transformers 5.24.0's
modules and configuration classes (tests compare the whole model with transformers' meta-device count):

- ``qwen3_vl`` / ``qwen3_vl_moe``: Qwen3VLVisionModel — Conv3d patch embedding with bias, learned position table,
  LayerNorm blocks with biased qkv/proj and a plain fc1/fc2 MLP, the patch merger and one deepstack merger per
  ``deepstack_visual_indexes`` entry (modeling_qwen3_vl.py).
- ``qwen2_5_vl``: Qwen2_5_VisionTransformerPretrainedModel — Conv3d without bias, RMSNorm blocks with biased
  qkv/proj and a biased gated MLP, the patch merger (modeling_qwen2_5_vl.py).
- ``exaone4_5``: Exaone4_5_VisionModel — Qwen2.5-VL's tower whose qkv holds fewer K/V heads than query heads
  (transformers 5.25 modeling_exaone4_5.py); its text model is EXAONE 4.0's (exaone4).
- ``mistral3``: PixtralVisionModel (patch conv, ln_pre, RMSNorm blocks, unbiased attention and gated MLP) and
  Mistral3MultiModalProjector (norm, patch merger, two linears) (modeling_pixtral.py, modeling_mistral3.py).
- ``voxtral``: VoxtralEncoder (Whisper's: two convs, a position table, LayerNorm blocks whose k_proj has no bias,
  a final LayerNorm) and VoxtralMultiModalProjector (two linears without bias) (modeling_voxtral.py).
- ``qwen3_5`` / ``qwen3_5_moe``: Qwen3_5VisionModel — Qwen3-VL's vision tower and patch merger without deepstack
  mergers (modeling_qwen3_5.py; its vision config has no deepstack field).
- ``gemma3``: SiglipVisionModel (biased Conv2d patch embedding, a position table of (image/patch)² entries,
  LayerNorm blocks with biased q/k/v/out and fc1/fc2, post LayerNorm, the attention-pooling head when
  ``vision_use_head``) and Gemma3MultiModalProjector (an input projection matrix and an RMSNorm over the vision
  width) (modeling_siglip.py, modeling_gemma3.py).

- ``mllama``: MllamaVisionModel — a Conv2d patch embedding without bias, a class embedding, the gated position
  embedding (a table of (image/patch)² + 1 positions and a tile table of max_aspect_ratio_id + 1 rows, one gate),
  two gated aspect-ratio embeddings, LayerNorms before and after, a local encoder of ``num_hidden_layers`` and a
  gated global encoder of ``num_global_layers`` (LayerNorm blocks, unbiased q/k/v/o, biased fc1/fc2), and the
  multi_modal_projector, a biased linear from ``vision_output_dim`` to the text width (modeling_mllama.py).

Other wrappers' towers (llama4's, kimi_k25's) are not counted here: the report names them as not counted
(`uncounted-towers`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from estimator.catalog.config_fields import Seen, unread
from estimator.errors import SpecInvalid

# (name, role, numel, count): the rows `estimator.model.inventory` turns into tensor groups (as model.state does)
TowerRow = tuple[str, str, int, int]
Config = Mapping[str, Any]


def _int(section: Config, name: str, default: int) -> int:
    value = section.get(name, default)
    if value is None:
        value = default
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise SpecInvalid(f"config.json vision/audio field {name!r} must be a positive integer, got {value!r}")
    return value


def _section(config: Config, key: str) -> Config:
    section = config.get(key)
    return section if isinstance(section, Mapping) else {}


def _text_hidden(config: Config, default: int) -> int:
    text = config.get("text_config")
    return _int(text if isinstance(text, Mapping) else config, "hidden_size", default)


def _qwen3_vl(config: Config, deepstack_default: tuple[int, ...] = (8, 16, 24)) -> list[TowerRow]:
    """Qwen3VLVisionConfig defaults: depth 27, hidden 1152, ffn 4304, patch 16, temporal 2, 3 channels,
    2,304 positions, merge 2, out 3584, deepstack (8, 16, 24)."""
    v = _section(config, "vision_config")
    h, ffn = _int(v, "hidden_size", 1152), _int(v, "intermediate_size", 4304)
    patch, temporal = _int(v, "patch_size", 16), _int(v, "temporal_patch_size", 2)
    merged = h * _int(v, "spatial_merge_size", 2) ** 2
    out = _int(v, "out_hidden_size", 3584)
    deepstack = v.get("deepstack_visual_indexes", deepstack_default) if deepstack_default else ()
    # per block: 2 LayerNorms (4h), qkv (3h² + 3h), proj (h² + h), fc1 (h·ffn + ffn), fc2 (ffn·h + h)
    block = 4 * h * h + 2 * h * ffn + 9 * h + ffn
    merger = merged * merged + merged + merged * out + out  # linear_fc1 and linear_fc2, both biased
    return [
        ("visual.patch_embed", "vision_tower", _int(v, "in_channels", 3) * temporal * patch * patch * h + h, 1),
        ("visual.pos_embed", "vision_tower", _int(v, "num_position_embeddings", 2304) * h, 1),
        ("visual.blocks.*", "vision_tower", block, _int(v, "depth", 27)),
        ("visual.merger", "projector", 2 * h + merger, 1),  # its LayerNorm is over one patch (h)
        ("visual.deepstack_merger_list.*", "projector", 2 * merged + merger, len(deepstack or ())),
    ]


def _qwen2_5_vl(config: Config, *, grouped_kv: bool = False) -> list[TowerRow]:
    """Qwen2_5_VLVisionConfig defaults: depth 32, hidden 3584, ffn 3420, patch 14, temporal 2, 3 channels,
    merge 2, out 3584. ``grouped_kv``: EXAONE 4.5's tower (Exaone4_5_VisionAttention), whose qkv yields K and V
    for num_key_value_heads (Exaone4_5_VisionConfig default 8) of the num_heads (default 16) head width."""
    v = _section(config, "vision_config")
    h, ffn = _int(v, "hidden_size", 3584), _int(v, "intermediate_size", 3420)
    patch, temporal = _int(v, "patch_size", 14), _int(v, "temporal_patch_size", 2)
    merged = h * _int(v, "spatial_merge_size", 2) ** 2
    out = _int(v, "out_hidden_size", 3584)
    qkv = h + 2 * _int(v, "num_key_value_heads", 8) * (h // _int(v, "num_heads", 16)) if grouped_kv else 3 * h
    # per block: 2 RMSNorms (2h), qkv (h·qkv + qkv), proj (h² + h), gate/up (2 × (h·ffn + ffn)), down (ffn·h + h)
    block = h * qkv + qkv + h * h + 4 * h + 3 * h * ffn + 2 * ffn
    return [
        ("visual.patch_embed", "vision_tower", _int(v, "in_channels", 3) * temporal * patch * patch * h, 1),
        ("visual.blocks.*", "vision_tower", block, _int(v, "depth", 32)),
        ("visual.merger", "projector", h + merged * merged + merged + merged * out + out, 1),
    ]


def _mistral3(config: Config) -> list[TowerRow]:
    """PixtralVisionConfig defaults: 24 layers, hidden 1024, ffn 4096, 16 heads of 64, patch 14, 3 channels;
    Mistral3Config: spatial_merge_size 2, one vision_feature_layer, multimodal_projector_bias false."""
    v = _section(config, "vision_config")
    h, ffn = _int(v, "hidden_size", 1024), _int(v, "intermediate_size", 4096)
    width = _int(v, "num_attention_heads", 16) * _int(v, "head_dim", 64)
    patch = _int(v, "patch_size", 14)
    text = _text_hidden(config, 4096)
    layers = config.get("vision_feature_layer", -1)
    feature = len(layers) if isinstance(layers, list | tuple) else 1
    bias = bool(config.get("multimodal_projector_bias", False))
    block = 2 * h + 4 * h * width + 3 * h * ffn  # attention_norm, ffn_norm, q/k/v/o, gate/up/down
    projector = (h + h * _int(config, "spatial_merge_size", 2) ** 2 * h  # norm, patch_merger.merging_layer
                 + h * feature * text + text * text + (2 * text if bias else 0))  # linear_1, linear_2
    return [
        ("vision_tower.patch_conv+ln_pre", "vision_tower", _int(v, "num_channels", 3) * patch * patch * h + h, 1),
        ("vision_tower.transformer.layers.*", "vision_tower", block, _int(v, "num_hidden_layers", 24)),
        ("multi_modal_projector", "projector", projector, 1),
    ]


def _voxtral(config: Config) -> list[TowerRow]:
    """VoxtralEncoderConfig defaults: 32 layers, hidden 1280, ffn 5120, 128 mel bins, 1,500 positions."""
    a = _section(config, "audio_config")
    h, ffn = _int(a, "hidden_size", 1280), _int(a, "intermediate_size", 5120)
    text = _text_hidden(config, 3072)
    # per layer: q/v/out with bias, k without (4h² + 3h), 2 LayerNorms (4h), fc1 (h·ffn + ffn), fc2 (ffn·h + h)
    block = 4 * h * h + 2 * h * ffn + 8 * h + ffn
    stem = _int(a, "num_mel_bins", 128) * h * 3 + h + h * h * 3 + h  # conv1, conv2 (kernel 3, biased)
    return [
        ("audio_tower.conv1+conv2", "audio_tower", stem, 1),
        ("audio_tower.embed_positions", "audio_tower", _int(a, "max_source_positions", 1500) * h, 1),
        ("audio_tower.layers.*", "audio_tower", block, _int(a, "num_hidden_layers", 32)),
        ("audio_tower.layer_norm", "audio_tower", 2 * h, 1),
        ("multi_modal_projector", "projector", ffn * text + text * text, 1),  # linear_1 (ffn → text), linear_2
    ]


def _qwen3_5(config: Config) -> list[TowerRow]:
    """Qwen3_5VisionConfig (and Qwen3_5MoeVisionConfig): Qwen3-VL's defaults, and no deepstack mergers."""
    return _qwen3_vl(config, deepstack_default=())


def _gemma3(config: Config) -> list[TowerRow]:
    """SiglipVisionConfig defaults (what Gemma3Config builds without a vision_config): hidden 768, ffn 3072,
    12 layers, 12 heads, 3 channels, image 224, patch 16, vision_use_head true."""
    v = _section(config, "vision_config")
    h, ffn = _int(v, "hidden_size", 768), _int(v, "intermediate_size", 3072)
    patch = _int(v, "patch_size", 16)
    side = _int(v, "image_size", 224) // patch
    # per block: 2 LayerNorms (4h), q/k/v/out with bias (4h² + 4h), fc1 (h·ffn + ffn), fc2 (ffn·h + h)
    block = 4 * h * h + 2 * h * ffn + 9 * h + ffn
    # attention-pooling head: probe (h), nn.MultiheadAttention (in_proj 3h² + 3h, out_proj h² + h), LayerNorm
    # (2h), an MLP like a block's (h·ffn + ffn + ffn·h + h)
    head = 4 * h * h + 2 * h * ffn + 8 * h + ffn
    embeddings = _int(v, "num_channels", 3) * patch * patch * h + h + side * side * h  # patch conv, positions
    return [
        ("vision_tower.embeddings", "vision_tower", embeddings, 1),
        ("vision_tower.encoder.layers.*", "vision_tower", block, _int(v, "num_hidden_layers", 12)),
        ("vision_tower.post_layernorm", "vision_tower", 2 * h, 1),
        ("vision_tower.head", "vision_tower", head, 1 if v.get("vision_use_head", True) else 0),
        ("multi_modal_projector", "projector", h * _text_hidden(config, 2304) + h, 1),  # input projection, RMSNorm
    ]


_MLLAMA_ASPECT_RATIOS = 8  # MllamaVisionConfig's default supported_aspect_ratios: 8 pairs for max_num_tiles 4


def _mllama_patches(v: Config) -> int:
    """Positions per tile: (image_size / patch_size)² patches and the class token (MllamaVisionModel)."""
    return (_int(v, "image_size", 448) // _int(v, "patch_size", 14)) ** 2 + 1


def mllama_image_tokens(config: Config) -> int:
    """Image tokens one sequence's cross-attention layers attend to: one image at its largest tiling,
    max_num_tiles × positions per tile (the cross-attention states MllamaModel hands the text model)."""
    v = _section(config, "vision_config")
    return _int(v, "max_num_tiles", 4) * _mllama_patches(v)


def _mllama(config: Config) -> list[TowerRow]:
    """MllamaVisionConfig defaults: hidden 1280, ffn 5120, 32 local and 8 global layers, 3 channels, image 448,
    patch 14, 4 tiles, 8 aspect ratios, vision_output_dim 7680."""
    v = _section(config, "vision_config")
    h, ffn = _int(v, "hidden_size", 1280), _int(v, "intermediate_size", 5120)
    patch, tiles, positions = _int(v, "patch_size", 14), _int(v, "max_num_tiles", 4), _mllama_patches(v)
    ratios = v.get("supported_aspect_ratios")
    rows = (len(ratios) if isinstance(ratios, list) else _MLLAMA_ASPECT_RATIOS) + 1  # max_aspect_ratio_id + 1
    # per block: 2 LayerNorms (4h), q/k/v/o without bias (4h²), fc1 (h·ffn + ffn), fc2 (ffn·h + h)
    block = 4 * h * h + 2 * h * ffn + 5 * h + ffn
    # patch conv, class embedding, gated positions (gate, table, tile table), pre/post tile embeddings + gates,
    # layernorm_pre and layernorm_post
    embeddings = (_int(v, "num_channels", 3) * patch * patch * h + h + 1 + positions * h + rows * tiles * positions * h
                  + 2 * (rows * tiles * h + 1) + 4 * h)
    return [
        ("vision_model.embeddings+layernorms", "vision_tower", embeddings, 1),
        ("vision_model.transformer.layers.*", "vision_tower", block, _int(v, "num_hidden_layers", 32)),
        ("vision_model.global_transformer.layers.*", "vision_tower", block + 2, _int(v, "num_global_layers", 8)),
        ("multi_modal_projector", "projector", (_int(v, "vision_output_dim", 7680) + 1) * _text_hidden(config, 4096),
         1),
    ]


# wrapper model_type → the reader of its vision tower (under the config's vision_config)
_VISION_READERS: dict[str, Callable[[Config], list[TowerRow]]] = {
    "qwen3_vl": _qwen3_vl,
    "qwen3_vl_moe": _qwen3_vl,
    "qwen2_5_vl": _qwen2_5_vl,
    "exaone4_5": lambda config: _qwen2_5_vl(config, grouped_kv=True),
    "mistral3": _mistral3,
    "qwen3_5": _qwen3_5,
    "qwen3_5_moe": _qwen3_5,
    "gemma3": _gemma3,
    "mllama": _mllama,
}
# Tower fields a tower reader may leave unread: head counts split a width the reader takes whole (fused or square
# projections), and per wrapper, fields its transformers modules build no tensor from
_HEADS = ("num_heads", "num_attention_heads", "attention_heads")
TOWER_IGNORES: dict[str, tuple[str, ...]] = {
    # Qwen2.5-VL: which blocks attend in full and the window of the others; spatial_patch_size repeats patch_size
    "qwen2_5_vl": ("fullatt_block_indexes", "window_size", "spatial_patch_size"),
    "mistral3": ("image_size",),  # Pixtral's 2-D RoPE: no position table sized by the image
    # VoxtralEncoder is Whisper's: heads of d_model / heads, no KV heads and no vocabulary (the decoder's), layerdrop
    "voxtral": ("num_key_value_heads", "head_dim", "vocab_size", "layerdrop"),
    # which local layers' outputs the projector reads: vision_output_dim, which the reader takes, is their width
    "mllama": ("intermediate_layers_indices",),
}
# wrapper model_type → (the config key of its tower, the reader)
TOWER_READERS: dict[str, tuple[str, Callable[[Config], list[TowerRow]]]] = {
    **{model_type: ("vision_config", reader) for model_type, reader in _VISION_READERS.items()},
    "voxtral": ("audio_config", _voxtral),
}


# the wrapper configuration class's tie_word_embeddings, which decides for the whole model over its text config's
# (transformers 5.24.0 Qwen3VLConfig, Qwen3VLMoeConfig, Qwen2_5_VLConfig: false; Mistral3Config: true; VoxtralConfig
# sets none and leaves it to its text config; Qwen3_5Config, Qwen3_5MoeConfig: false; Gemma3Config: true;
# MllamaForConditionalGeneration ties nothing: its embedding has 8 rows more than its lm_head)
WRAPPER_TIES: dict[str, bool] = {"qwen3_vl": False, "qwen3_vl_moe": False, "qwen2_5_vl": False, "mistral3": True,
                                 "qwen3_5": False, "qwen3_5_moe": False, "gemma3": True, "mllama": False,
                                 "exaone4_5": False}  # transformers 5.25 Exaone4_5_Config: false
# wrapper model_type → the encoder tokens each sequence's cross-attention layers hold K/V for, from its config
CROSS_ATTENTION_TOKENS: dict[str, Callable[[Config], int]] = {"mllama": mllama_image_tokens}


def tower_unread(config: Config) -> tuple[str, ...]:
    """The fields of a counted tower's section (``vision_config.…``) its reader does not read that could shape the
    tower (`config_fields.unread`), beside the generic ones and `TOWER_IGNORES`."""
    found = TOWER_READERS.get(str(config.get("model_type")))
    section = config.get(found[0]) if found is not None else None
    if found is None or not isinstance(section, Mapping):
        return ()
    seen = Seen(section)
    found[1]({**config, found[0]: seen})
    ignores = (*_HEADS, *TOWER_IGNORES.get(str(config.get("model_type")), ()))
    return tuple(f"{found[0]}.{name}" for name in unread(section, seen.seen, ignores))


def tower_rows(config: Config) -> tuple[tuple[TowerRow, ...], tuple[str, ...]]:
    """The tower tensors of a wrapper config and the config key they were read from (none if not a known one).
    A known wrapper without the key builds its towers from the defaults, as transformers does."""
    found = TOWER_READERS.get(str(config.get("model_type")))
    if found is None:
        return (), ()
    try:
        rows = tuple(row for row in found[1](config) if row[3] > 0)
    except (TypeError, ValueError) as error:
        if isinstance(error, SpecInvalid):
            raise
        raise SpecInvalid(f"config.json {found[0]} is malformed: {error}") from None
    return rows, (found[0],)
