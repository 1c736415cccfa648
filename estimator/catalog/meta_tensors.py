"""The tensors of a model transformers builds on the ``meta`` device, grouped by name and classified by role.

`estimator.catalog.transformers_reader` builds the model (no weights, no memory for tensors); this module walks
its parameters. ``model.named_parameters()`` yields a tied weight once (a tied LM head is the embedding), so the
rows' total is ``sum(p.numel() for p in model.parameters())`` exactly. Layer indices become ``*``, and the same
tensor in every layer is one row with a count; a fused expert tensor (transformers 5 keeps a MoE layer's experts in
one ``(experts, out, in)`` parameter) is one row per expert.

A role is read from the owning module's class and the parameter's path, in this order: the model's input and
output embeddings; a multimodal wrapper's projector and vision or audio towers (by their path); norms (a module
class named ``*Norm*``); routed experts (``.experts.``), shared experts, routers (a ``gate``/``router`` module,
``*Router``); recurrent mixers' small tensors (``A_log``, ``D``, ``dt_bias``, convolutions); then attention or
feed-forward by the block's name; a bias outside norms and towers is a bias. A tensor none of these places is
``other``, counted in the weights and named in the report, never dropped.
"""

from __future__ import annotations

import re
from typing import Any

# (name, role, numel, count, in_features): the rows `estimator.model.inventory` turns into tensor groups
MetaRow = tuple[str, str, int, int, int]

_LAYER_INDEX = re.compile(r"\.\d+(?=\.|$)")
_ATTENTION_WORDS = ("self_attn", "attention", "attn", "mixer", "mamba", "linear_attn", "token_mixer", "conv",
                    "time_mix", "cross_attn", "encdecattention", "selfattention")
_MLP_WORDS = ("mlp", "feed_forward", "ffn", "channel_mix", "densereludense", "layer.1.dense", "fc1", "fc2")
_VISION = ("vision", "visual", "image_encoder", "vit")
_AUDIO = ("audio", "speech", "whisper")
_PROJECTOR = ("multi_modal", "mm_proj", "multimodal")
_PROJECTOR_WORDS = ("projector", "projection", "adapter", "merger")
_SSM_NAMES = {"A_log", "D", "dt_bias", "A", "dt_proj_bias"}


def _role(path: str, local: str, module: Any, embeddings: tuple[Any, Any]) -> str:
    """The role of parameter ``local`` of ``module`` at ``path`` (see the module docstring for the order)."""
    if module is embeddings[0]:
        return "embedding"
    words = path.lower()
    parents = words.split(".")[:-1]
    cls = type(module).__name__.lower()
    rules = (
        (module is embeddings[1], "lm_head"),
        # a multimodal wrapper's projector into the text model, and its encoders
        (any(p.startswith(_PROJECTOR) or any(w in p for w in _PROJECTOR_WORDS) for p in parents), "projector"),
        (any(p.startswith(_VISION) for p in parents), "vision_tower"),
        (any(p.startswith(_AUDIO) for p in parents), "audio_tower"),
        ("embedding" in cls, "position_embedding"),  # a position, token-type or relative-position table
        ("norm" in cls, "norm"),
        (".experts." in words or cls.endswith("experts"), "expert"),
        (any(word in words for word in ("shared_expert_gate", "correction_bias", "moe_statics")), "router"),
        ("shared_expert" in words or "shared_mlp" in words, "shared_expert"),
        ("router" in cls or bool({"gate", "router"} & set(parents[-2:])), "router"),
        (local in _SSM_NAMES or "conv" in cls, "ssm"),
        (any(word in words for word in _ATTENTION_WORDS), "attention"),
        (any(word in words for word in _MLP_WORDS), "mlp"),
    )
    role = next((role for hit, role in rules if hit), "other")
    if role.endswith(("_tower", "projector")):
        return role  # a tower's rows are the tower's, biases and norms included (as estimator.catalog.towers)
    if local.endswith("bias") and role != "norm" and local not in _SSM_NAMES and "correction_bias" not in local:
        return "bias"  # as the inventory counts a linear's or a router's bias
    return role


def _in_features(module: Any, shape: tuple[int, ...], role: str) -> int:
    """A linear weight's input width: the module's ``in_features``, a fused expert tensor's last dimension."""
    if role not in ("attention", "mlp", "expert", "shared_expert", "router", "lm_head"):
        return 0
    width = getattr(module, "in_features", None)
    if isinstance(width, int) and len(shape) == 2:
        return width
    return shape[-1] if len(shape) >= 2 else 0


def meta_rows(model: Any) -> tuple[list[MetaRow], list[str]]:
    """The model's parameters as grouped rows, and the grouped names of those placed in no role."""
    embeddings = (model.get_input_embeddings(), _output_embeddings(model))
    modules = dict(model.named_modules())
    groups: dict[tuple[str, str, int, int], int] = {}
    for path, parameter in model.named_parameters():
        owner, _, local = path.rpartition(".")
        module = modules.get(owner)
        shape = tuple(int(d) for d in parameter.shape)
        role = _role(path, local, module, embeddings)
        name = _LAYER_INDEX.sub(".*", path.removeprefix("model."))
        numel, count = int(parameter.numel()), 1
        if role == "expert" and len(shape) == 3:  # (experts, out, in): one row per expert
            numel, count = numel // shape[0], shape[0]
            name = name.replace(".experts.", ".experts.*.", 1) if ".experts." in name else f"{name}[*]"
        key = (name, role, numel, _in_features(module, shape[1:] if len(shape) == 3 else shape, role))
        groups[key] = groups.get(key, 0) + count
    rows = [(name, role, numel, count, width) for (name, role, numel, width), count in groups.items()]
    return rows, sorted({name for name, role, *_ in rows if role == "other"})


def _output_embeddings(model: Any) -> Any:
    try:
        return model.get_output_embeddings()
    except (AttributeError, NotImplementedError):  # an encoder-only model has no LM head
        return None
