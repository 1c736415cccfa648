"""The lean CUDA-graph decode (what a serving engine runs) and the fit of its bandwidth and per-layer cost, which
`calibrate` records with the device facts."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from estimator.live.device import (
    _device,
    bandwidth_and_flops,
    device_facts,
    free_memory,
    graph_kernel_cost,
    graph_time,
    require_cuda,
)


def _lean_layers(t: Any, config: Mapping[str, Any], batch: int, context: int,
                 rnd: Callable[..., Any]) -> tuple[list[dict[str, Any]], list[tuple[Any, Any]]]:
    """Each layer's random bf16 weights (fused qkv and gate_up) and its K and V cache of the tokens it holds."""
    h = int(config["hidden_size"])
    heads = int(config["num_attention_heads"])
    kv_heads = int(config.get("num_key_value_heads") or heads)
    d = int(config.get("head_dim") or h // heads)
    ffn = int(config["intermediate_size"])
    qkv_bias = bool(config.get("attention_bias") or config.get("model_type") == "qwen2")
    window = config.get("sliding_window") if config.get("use_sliding_window", True) else None
    weights: list[dict[str, Any]] = []
    kv: list[tuple[Any, Any]] = []
    for layer in range(int(config["num_hidden_layers"])):
        held = context
        if window and (config.get("model_type") != "gemma2" or layer % 2 == 0):
            held = min(context, int(window))
        weights.append({"ln1": t.ones(h, device=_device(), dtype=t.bfloat16), "qkv": rnd((heads + 2 * kv_heads) * d, h),
                        "qkv_b": rnd((heads + 2 * kv_heads) * d) if qkv_bias else None,
                        "o": rnd(h, heads * d), "ln2": t.ones(h, device=_device(), dtype=t.bfloat16),
                        "gate_up": rnd(2 * ffn, h), "down": rnd(h, ffn)})
        kv.append((rnd(batch, kv_heads, held, d), rnd(batch, kv_heads, held, d)))
    return weights, kv


def lean_decode(config: Mapping[str, Any], batch: int, context: int, reps: int = 50,
                attention: str = "flash") -> dict[str, Any]:
    """One decode step of a Llama-shaped dense model as a serving engine runs it: RMSNorm, fused qkv GEMV,
    attention over a ``context``-token cache, o GEMV, RMSNorm, fused gate_up GEMV, SiLU-gate, down GEMV, LM head;
    captured in a CUDA graph. Random bf16 weights; sliding-window layers hold ``window`` tokens. As in the reference
    lean decode, rotary embedding and the cache write are left out (engines fuse them into one small kernel).

    ``attention``: ``flash`` = PyTorch SDPA (q as b × heads × 1, ``enable_gqa``); ``matmul`` = q·Kᵀ, softmax, ·V
    as batched GEMMs with the query heads of a KV group as rows (split over the context like flash-decoding)."""
    t = require_cuda()
    import torch.nn.functional as F  # type: ignore[import-not-found,unused-ignore]

    free_memory()
    h = int(config["hidden_size"])
    heads = int(config["num_attention_heads"])
    kv_heads = int(config.get("num_key_value_heads") or heads)
    d = int(config.get("head_dim") or h // heads)
    vocab = int(config["vocab_size"])
    group = heads // kv_heads
    bf16 = t.bfloat16

    def rnd(*shape: int) -> Any:
        return t.randn(*shape, device=_device(), dtype=bf16) * 0.02

    weights, kv = _lean_layers(t, config, batch, context, rnd)
    final_norm = t.ones(h, device=_device(), dtype=bf16)
    lm_head = rnd(vocab, h)
    x = rnd(batch, h)
    weights_bytes = sum(v.numel() * 2 for w in weights for v in w.values() if v is not None) + h * 2 + vocab * h * 2
    kv_bytes = sum(k.numel() * 2 + v.numel() * 2 for k, v in kv)

    def attend(q: Any, k_cache: Any, v_cache: Any) -> Any:
        if attention == "flash":
            out = F.scaled_dot_product_attention(q.view(batch, heads, 1, d), k_cache, v_cache, enable_gqa=True)
            return out.reshape(batch, heads * d)
        # the 1/sqrt(d) scale is folded into the (random) q weights
        scores = t.matmul(q.view(batch, kv_heads, group, d), k_cache.transpose(-1, -2))
        probs = F.softmax(scores, dim=-1, dtype=t.float32).to(bf16)
        return t.matmul(probs, v_cache).reshape(batch, heads * d)

    def step() -> Any:
        hidden = x
        for w, (k_cache, v_cache) in zip(weights, kv, strict=True):
            qkv = F.linear(F.rms_norm(hidden, (h,), w["ln1"]), w["qkv"], w["qkv_b"])
            hidden = hidden + F.linear(attend(qkv[:, : heads * d], k_cache, v_cache), w["o"])
            gate, up = F.linear(F.rms_norm(hidden, (h,), w["ln2"]), w["gate_up"]).chunk(2, dim=-1)
            hidden = hidden + F.linear(F.silu(gate) * up, w["down"])
        return F.linear(F.rms_norm(hidden, (h,), final_norm), lm_head)

    with t.inference_mode():
        timing = graph_time(step, reps=reps)
    return {"kind": "lean_decode", "batch": batch, "context": context, "attention": attention,
            "weights_bytes": weights_bytes, "kv_bytes": kv_bytes, "experts": 1, "topk": 1, "graph": timing}


def fit_lean_decode() -> dict[str, Any]:
    """Fit time = weight bytes / bandwidth + layers × per-layer cost on synthetic Llama-shaped lean decodes.

    Two shapes: narrow layers (fixed cost dominates) and wide ones (bandwidth dominates), batch 1, 1k context.
    """
    shapes = [
        {"hidden_size": 1024, "num_attention_heads": 16, "num_key_value_heads": 4, "head_dim": 64,
         "intermediate_size": 2816, "num_hidden_layers": 48, "vocab_size": 32000},
        {"hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128,
         "intermediate_size": 14336, "num_hidden_layers": 16, "vocab_size": 32000},
    ]
    points = []
    for shape in shapes:
        rows = [lean_decode(shape, batch=1, context=1024, attention=a) for a in ("flash", "matmul")]
        best = min(r["graph"]["median_s"] for r in rows)
        points.append((rows[0]["weights_bytes"] + rows[0]["kv_bytes"], shape["num_hidden_layers"], best))
    (b1, l1, t1), (b2, l2, t2) = points
    # Two equations, two unknowns: t = b / bw + l × c
    det = b1 * l2 - b2 * l1
    inv_bw = (t1 * l2 - t2 * l1) / det
    per_layer = (b1 * t2 - b2 * t1) / det
    return {"graph_bandwidth_bytes_per_s": 1 / inv_bw if inv_bw > 0 else b2 / t2,
            "graph_layer_s": max(per_layer, 0.0), "lean_fit_points": points}


def calibrate() -> dict[str, Any]:
    """Everything `estimator calibrate` records (raw; `estimator.live.calibration` derives the profile values)."""
    facts = device_facts()
    before, context = facts["nvml_used_before_cuda_init"], facts["nvml_used_after_context"]
    cublas = facts["nvml_used_after_cublas"]
    raw: dict[str, Any] = {**facts}
    raw["driver_reserved_bytes"] = facts["nvml_reserved"] if facts["nvml_reserved"] is not None else (before or 0)
    raw["cuda_context_bytes"] = max(0, (context or 0) - (before or 0))
    raw["workspace_bytes"] = max(0, (cublas or 0) - (context or 0))
    raw.update(bandwidth_and_flops())
    raw["graph_kernel_s"] = graph_kernel_cost()
    raw.update(fit_lean_decode())
    free_memory()
    raw.update(host_costs())
    return raw


def host_costs() -> dict[str, Any]:
    """The host's cost per operation (`estimator.live.host_cost`): the bare probe always, the cost per operation
    of a transformers layer where transformers is installed (without it, eager profiles keep their own figure)."""
    import contextlib

    from estimator.errors import MissingDependency
    from estimator.live import host_cost

    out: dict[str, Any] = {"host_bare_op_s": host_cost.bare_op_s()}
    with contextlib.suppress(MissingDependency):
        out.update(host_cost.transformers_op_s())
    return out
