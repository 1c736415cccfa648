"""The wording of the notes that say how a model was read: a checkpoint's file headers, a multimodal wrapper's
towers counted or not, the fixed state its layers hold per sequence, a family read by building it with transformers."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

Bytes = Callable[[float], str]  # a byte count → "140.0 GB" or "130.4 GiB"
HEADERS: dict[str, type | tuple[type, ...]] = {"source": str, "files": int, "tensors": int, "bytes": int}
TOWERS: dict[str, type | tuple[type, ...]] = {"model": str, "towers": str}
FIELDS: dict[str, type | tuple[type, ...]] = {"model": str, "fields": str}


def headers(v: Mapping[str, Any], b: Bytes) -> str:
    return (f"weights as the checkpoint's {v['files']} {v['source']} file(s) store them, read from their headers: "
            f"{v['tensors']} tensors, {b(v['bytes'])}; --dtype overrides")


def uncounted_towers(v: Mapping[str, Any], b: Bytes) -> str:
    return (f"{v['model']} is a multimodal wrapper: its {v['towers']} are not counted (parameters, weights and time "
            "are the language model's alone)")


def unread_fields(v: Mapping[str, Any], b: Bytes) -> str:
    return (f"{v['model']}'s config.json sets {v['fields']}, which the reader of its model_type does not read and "
            "which may change the architecture: the counts ignore them and may be wrong (specs/families/README.md "
            "says how a family declares a field)")


def defaulted_fields(v: Mapping[str, Any], b: Bytes) -> str:
    return (f"{v['model']}'s config.json leaves out fields transformers' configuration class fills in; the same "
            f"defaults are used: {v['fields']}")


def towers_counted(v: Mapping[str, Any], b: Bytes) -> str:
    return (f"{v['model']} is multimodal: its {v['towers']} are counted in the parameters and weights, in 16 bit; "
            "they run on images or audio in the prefill, and the text model alone drives the KV cache and decode")


def state_per_sequence(v: Mapping[str, Any], b: Bytes) -> str:
    what = ("K and V of one image's tokens, computed once, whatever the text length" if v["kind"] == "cross_attention"
            else "conv + recurrent state, whatever the context")
    return (f"{v['layers']} {v['kind']} layers hold a fixed state of {b(v['bytes_per_sequence'])} per sequence "
            f"({what}), beside the KV cache of the attention layers")


def read_by(v: Mapping[str, Any], b: Bytes) -> str:
    return (f"{v['model']} has no family file here: it was read by building it with {v['reader']} on the meta "
            "device (no weights): parameters and tensors are the model's own; layer kinds, KV heads, windows, experts "
            "and recurrent mixers as its modules are")


def not_held(v: Mapping[str, Any], b: Bytes) -> str:
    return f"{v['model']} (read by transformers): {v['what']}"


Spec = tuple[dict[str, type | tuple[type, ...]], Callable[[Mapping[str, Any], Bytes], str]]
# the codes' values (NoteCode) → (value types, wording), merged into the notes' table
SPECS: dict[str, Spec] = {
    "checkpoint-headers": (HEADERS, headers), "uncounted-towers": (TOWERS, uncounted_towers),
    "towers-counted": (TOWERS, towers_counted),
    "state-per-sequence": ({"layers": int, "kind": str, "bytes_per_sequence": int}, state_per_sequence),
    "unread-fields": (FIELDS, unread_fields), "defaulted-fields": (FIELDS, defaulted_fields),
    "model-source": ({"source": str}, lambda v, b: f"model read from {v['source']}"),
    "read-by-transformers": ({"model": str, "reader": str}, read_by),
    "read-not-held": ({"model": str, "what": str}, not_held),
}
