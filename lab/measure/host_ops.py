"""What one transformers decode layer costs the host, by family and dtype, and what its operations cost one by one.

    python -m lab.measure.host_ops --out FILE.jsonl [--reps 15]
    python -m lab.measure.host_ops --out /tmp/x.jsonl --tiny     # the same code paths on the CPU

Eager HF decode is host-bound at small batch: the step takes as long as the host needs to dispatch its aten
operations. The random architectures' rows (tests/data/measured/random) show that a counted operation costs the host
less in fp32 than in 16-bit in every device call (docs/accuracy.md). This measures it apart from the GPU and from
the host's drift between cases:

- ``kind=layer``: the host issue time of one static-cache decode step and of one 128-token prefill forward (no cache,
  last logits) of a model at 2 and at 10 layers (random weights, small widths: the GPU keeps up), interleaved repeat
  by repeat so the host's state shows in both alike, for every family and dtype, MHA and GQA, at two widths; the
  marginal per layer, the operations counted at each depth (``TorchDispatchMode``, by name, and how many return a
  view of an input: no kernel, no allocation), the kernels one step launches (torch.profiler) and the bare probe
  (`estimator.live.host_cost.bare_op_s`) beside them.
- ``kind=op``: one operation of a decode layer at a real size (hidden 2,048, 16 heads of 128, 4 KV heads, 1,032
  cached positions) issued 200 times back to back: host seconds per call, per dtype, with the probe interleaved.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from estimator.live import device, measure
from estimator.live.host_cost import bare_op_s, host_issue_s
from lab.measure.dispatch_timing import kernel_times

FAMILIES = ("llama", "qwen2", "mistral", "gemma2", "gpt2")
DTYPES = ("fp32", "bf16", "fp16")
DEPTHS = (2, 10)
CACHE = 1032
PREFILL = 128
PHASES = ("decode", "prefill")


def layer_config(family: str, hidden: int, kv_ratio: int, layers: int, tiny: bool) -> dict[str, Any]:
    heads, head_dim = (4, 16) if tiny else (hidden // 64, 64)
    width = 64 if tiny else hidden
    if family == "gpt2":
        return {"n_embd": width, "n_head": heads, "n_layer": layers, "n_positions": 2048, "vocab_size": 512}
    config: dict[str, Any] = {"hidden_size": width, "intermediate_size": 3 * width, "num_hidden_layers": layers,
                              "num_attention_heads": heads, "num_key_value_heads": heads // kv_ratio,
                              "head_dim": head_dim, "vocab_size": 512, "max_position_embeddings": 2048,
                              "rms_norm_eps": 1e-5, "tie_word_embeddings": False}
    if family == "gemma2":
        config.update(sliding_window=4096, query_pre_attn_scalar=head_dim, final_logit_softcapping=30.0,
                      attn_logit_softcapping=None, hidden_activation="gelu_pytorch_tanh")
    return config


def phase_steps(family: str, config: dict[str, Any], dtype: Any, tiny: bool) -> dict[str, Callable[[], Any]]:
    """A static-cache decode step and a short prefill forward (no cache, last logits) of one model."""
    transformers, t = measure.require_transformers(), measure.require_cuda()
    cfg = transformers.AutoConfig.for_model(family, **config)
    cfg._attn_implementation = "sdpa"
    with t.device(device._device()):
        model = transformers.AutoModelForCausalLM.from_config(cfg).to(dtype).eval()
    cache = transformers.StaticCache(config=cfg, max_cache_len=CACHE)
    ids = t.randint(0, 512, (1, 1), device=device._device())
    position = t.tensor([CACHE - 8], device=device._device())

    prompt = t.randint(0, 512, (1, 16 if tiny else PREFILL), device=device._device())

    def step() -> Any:
        return model(input_ids=ids, past_key_values=cache, cache_position=position, use_cache=True,
                     position_ids=position.expand(1, 1))

    def prefill() -> Any:
        return model(input_ids=prompt, use_cache=False, logits_to_keep=1)

    return {"decode": step, "prefill": prefill}


def op_census(fn: Callable[[], Any]) -> tuple[Counter[str], int]:
    """Operations ``fn`` dispatches by name, and how many return a view of an input (no kernel, no allocation)."""
    t = measure.require_cuda()
    from torch.utils._python_dispatch import TorchDispatchMode

    names: Counter[str] = Counter()
    views = [0]

    def storages(values: Any) -> set[int]:
        flat = values if isinstance(values, (list, tuple)) else [values]
        return {v.untyped_storage().data_ptr() for v in flat if isinstance(v, t.Tensor) and v.numel()}

    class Census(TorchDispatchMode):
        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            out = func(*args, **(kwargs or {}))
            names[str(func)] += 1
            inputs = set().union(*(storages(a) for a in args)) if args else set()
            produced = storages(out)
            if produced and produced <= inputs and not str(func).endswith("_.default"):
                views[0] += 1
            return out

    with Census():
        fn()
    return names, views[0]


def layer_row(family: str, dtype_name: str, hidden: int, kv_ratio: int, reps: int, tiny: bool) -> dict[str, Any]:
    """Host issue time of each phase at both depths, interleaved repeat by repeat, with the census beside it."""
    t = measure.require_cuda()
    dtype = {"fp32": t.float32, "fp16": t.float16, "bf16": t.bfloat16}[dtype_name]
    steps = {n: phase_steps(family, layer_config(family, hidden, kv_ratio, n, tiny), dtype, tiny) for n in DEPTHS}
    row: dict[str, Any] = {"kind": "layer", "family": family, "dtype": dtype_name, "hidden": hidden,
                           "kv_ratio": kv_ratio, "depths": list(DEPTHS), "prefill_tokens": 16 if tiny else PREFILL,
                           "probe_before_s": bare_op_s()}
    times: dict[str, dict[int, list[float]]] = {p: {n: [] for n in DEPTHS} for p in PHASES}
    low, high = DEPTHS
    with t.inference_mode():
        for by_phase in steps.values():
            for fn in by_phase.values():
                fn(), fn()
        for _ in range(reps):
            for phase in PHASES:
                for n in DEPTHS:
                    times[phase][n].append(host_issue_s(steps[n][phase]))
        for phase in PHASES:
            census = {n: op_census(steps[n][phase]) for n in DEPTHS}
            row[phase] = {
                "host_s": {n: statistics.median(v) for n, v in times[phase].items()}, "host_reps": times[phase],
                "ops": {n: sum(c[0].values()) for n, c in census.items()},
                "views": {n: c[1] for n, c in census.items()},
                "layer_ops": {k: (census[high][0][k] - census[low][0][k]) / (high - low)
                              for k in census[high][0] if census[high][0][k] != census[low][0][k]},
                "kernels": {n: kernel_times(steps[n][phase]).get("kernels") for n in DEPTHS}}
            by = row[phase]
            by["layer_s"] = (by["host_s"][high] - by["host_s"][low]) / (high - low)
            by["layer_op_count"] = (by["ops"][high] - by["ops"][low]) / (high - low)
    row["probe_after_s"] = bare_op_s()
    del steps
    device.free_memory()
    return row


def per_call_s(fn: Callable[[], Any], calls: int = 200, repeats: int = 5) -> float:
    timings = []
    for _ in range(repeats):
        device.sync()
        began = time.perf_counter()
        for _ in range(calls):
            fn()
        timings.append((time.perf_counter() - began) / calls)
        device.sync()
    return statistics.median(timings)


def layer_ops(dtype: Any, tiny: bool) -> dict[str, Callable[[], Any]]:
    """One decode layer's kinds of operation at a real size, as transformers' Llama layer calls them."""
    t = measure.require_cuda()
    import torch.nn.functional as F

    h, heads, kv, d = (64, 4, 2, 16) if tiny else (2048, 16, 4, 128)
    on = {"device": device._device(), "dtype": dtype}
    x, w, scale = t.randn(1, 1, h, **on), t.randn(h, h, **on), t.randn(1, 1, 1, **on)
    q, k = t.randn(1, heads, 1, d, **on), t.randn(1, heads, CACHE, d, **on)
    mask = t.ones(1, 1, 1, CACHE, dtype=t.bool, device=device._device())
    cache, new = t.zeros(1, kv, CACHE, d, **on), t.randn(1, kv, 1, d, **on)
    index = t.tensor([5], device=device._device())
    half = t.randn(1, heads, 1, d // 2, **on)
    return {
        "add_ (probe)": lambda: x.add_(0),
        "linear": lambda: F.linear(x, w),
        "sdpa masked (static cache)": lambda: F.scaled_dot_product_attention(q, k, k, attn_mask=mask),
        "sdpa unmasked": lambda: F.scaled_dot_product_attention(q, k, k),
        "to float32": lambda: x.to(t.float32),
        "mul": lambda: x * x,
        "mul broadcast": lambda: x * scale,
        "rsqrt": lambda: t.rsqrt(scale),
        "pow": lambda: x.pow(2),
        "mean": lambda: x.mean(-1, keepdim=True),
        "silu": lambda: F.silu(x),
        "cat": lambda: t.cat((half, half), dim=-1),
        "index_copy_": lambda: cache.index_copy_(2, index, new),
        "transpose (view)": lambda: q.transpose(1, 2),
        "reshape (view)": lambda: x.reshape(1, 1, -1),
    }


def op_rows(dtype_name: str, tiny: bool) -> list[dict[str, Any]]:
    t = measure.require_cuda()
    dtype = {"fp32": t.float32, "fp16": t.float16, "bf16": t.bfloat16}[dtype_name]
    rows = []
    with t.inference_mode():
        for name, fn in layer_ops(dtype, tiny).items():
            try:
                fn()
                rows.append({"kind": "op", "op": name, "dtype": dtype_name, "host_s": per_call_s(fn),
                             "probe_s": bare_op_s()})
            except RuntimeError as error:
                rows.append({"kind": "op", "op": name, "dtype": dtype_name, "error": str(error)[:200]})
    device.free_memory()
    return rows


def cases(tiny: bool) -> list[tuple[str, str, int, int]]:
    out = []
    for family in FAMILIES:
        for dtype in DTYPES:
            for kv_ratio in ((1,) if family == "gpt2" else (1, 4)):
                out.append((family, dtype, 512, kv_ratio))
    out += [("llama", dtype, 2048, 4) for dtype in DTYPES]
    return out[:4] if tiny else out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--reps", type=int, default=15)
    parser.add_argument("--tiny", action="store_true", help="CPU dry run at toy sizes")
    args = parser.parse_args()
    if args.tiny:
        device.dry_run_on_cpu()
    t = measure.require_cuda()
    import transformers

    with args.out.open("w", encoding="utf-8") as out:
        out.write(json.dumps({"kind": "device", "torch": t.__version__, "transformers": transformers.__version__,
                              "gpu": None if args.tiny else t.cuda.get_device_name()}) + "\n")
        for dtype in DTYPES:
            for row in op_rows(dtype, args.tiny):
                out.write(json.dumps(row) + "\n")
        for family, dtype, hidden, kv_ratio in cases(args.tiny):
            try:
                row = layer_row(family, dtype, hidden, kv_ratio, 3 if args.tiny else args.reps, args.tiny)
            except Exception as error:  # one case's failure is a row, the rest still run
                row = {"kind": "layer", "family": family, "dtype": dtype, "error": f"{type(error).__name__}: {error}"}
            out.write(json.dumps(row) + "\n")
            out.flush()
            print(json.dumps({**{k: row.get(k) for k in ("family", "dtype", "hidden", "kv_ratio", "error")},
                              **{p: {k: row[p][k] for k in ("layer_s", "layer_op_count")} for p in PHASES
                                 if p in row}}), flush=True)


if __name__ == "__main__":
    main()
