"""The wording of expert parallel (`estimator.model.experts`): how the experts are dealt out, what one GPU holds,
and the all-to-all of each MoE layer, with the factors that reproduce each figure."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from estimator.notes.arithmetic import TIERS, Bytes
from estimator.units import format_seconds

Values = dict[str, type | tuple[type, ...]]

LAYOUT: Values = {"ep": int, "tp": int, "groups": int, "experts": int, "per_gpu": int, "sequences": int,
                  "training": bool}
WEIGHTS: Values = {"experts": int, "per_gpu": int, "routed_bytes": int, "held_bytes": int, "rest_bytes": int,
                   "tp": int, "weights_bytes": int}
ALL_TO_ALL: Values = {"phase": str, "tokens": float, "per_token": int, "hidden": int, "element_bytes": float,
                      "bytes": float, "gpus": int, "tier": str, "gb_per_s": float, "latency_s": float, "layers": int,
                      "calls": int, "what": str, "seconds": float}


def layout(v: Mapping[str, Any], b: Bytes) -> str:
    groups = v["groups"]
    if v["training"]:
        return (f"expert parallel {v['ep']} (Megatron-LM's --expert-model-parallel-size, inside data parallel): "
                f"each MoE layer's {v['experts']} routed experts dealt out whole, {v['per_gpu']} per GPU and sliced "
                f"over TP {v['tp']}; their weights, gradients and optimizer states held by 1/{v['ep']} of the GPUs, "
                f"reduced and ZeRO-sharded over the {groups} ranks holding the same experts; every other parameter "
                "over all data-parallel ranks; tokens sent to their experts and back by all-to-all, routing balanced")
    where = (f"tensor-parallel over {v['tp']} GPU{'s' if v['tp'] > 1 else ''}"
             + (f" and held again by each of {groups} attention groups, each serving {v['sequences']:,} of the "
                "sequences (data-parallel attention: SGLang --enable-dp-attention, vLLM --data-parallel-size "
                "with --enable-expert-parallel)" if groups > 1 else ", whose all-reduce sums the experts' outputs"))
    return (f"expert parallel {v['ep']}: each MoE layer's {v['experts']} routed experts dealt out whole, "
            f"{v['per_gpu']} per GPU; attention, dense layers, shared experts, embeddings and head {where}")


def weights(v: Mapping[str, Any], b: Bytes) -> str:
    return (f"weights per GPU under expert parallel: {v['per_gpu']} of {v['experts']} experts × "
            f"{b(v['routed_bytes'])} routed ÷ {v['experts']} = {b(v['held_bytes'])} + the rest "
            f"{b(v['rest_bytes'])} (÷ TP {v['tp']}, norms and routers whole) = {b(v['weights_bytes'])}")


def all_to_all(v: Mapping[str, Any], b: Bytes) -> str:
    n = v["gpus"]
    return (f"{v['phase']} all-to-all: {v['tokens']:,.6g} tokens per GPU × {v['per_token']} experts × "
            f"{v['hidden']:,} hidden × {v['element_bytes']:g} B = {b(v['bytes'])} per MoE layer each way, "
            f"({n} − 1)/{n} of it over {TIERS[v['tier']]} at {v['gb_per_s']:g} GB/s + {n - 1} × "
            f"{format_seconds(v['latency_s'])}; {v['layers']} MoE layers × {v['calls']} ({v['what']}) = "
            f"{format_seconds(v['seconds'])}")


SPECS: dict[str, tuple[Values, Any]] = {
    "expert-parallel": (LAYOUT, layout), "expert-weights": (WEIGHTS, weights),
    "expert-all-to-all": (ALL_TO_ALL, all_to_all),
}
