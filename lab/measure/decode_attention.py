"""The decode step's attention kernel alone, and the small kernels around it.

The lean CUDA-graph decode (``estimator.live.lean``, the `optimized` profile's measurement) runs attention as
PyTorch SDPA with one query per sequence (q: batch × heads × 1 × head_dim, ``enable_gqa``), bf16. Its rows at
batch 16 and a 4,096-token cache read 10–33% above the KV read at the profile's bandwidth where the head dim is
160 or 256 or one KV head serves many query heads. This script times that kernel by itself over a grid of shapes
drawn from a seed, so the kernel's own behaviour can be read apart from the weights' GEMVs:

- ``kind=attention``: one SDPA decode call, timed as 10 calls captured in one CUDA graph (median of 30 replays,
  per call), with the kernels one eager call launches (name, grid, block, registers, shared memory, duration;
  torch.profiler's CUDA activity): which kernel runs and how many thread blocks (CTAs) it launches.
- ``kind=gemv``: ``F.linear`` of a batch × in activation by an out × in bf16 weight, timed the same way.
- ``kind=device``: the SM count and clocks PyTorch reports.

Every shape's ``split`` is ``fit`` or ``check`` (alternating in draw order); the lean decode rows in
``tests/data/measured/random`` are not measured here and stay held out. Needs only torch:

    python -m lab.measure.decode_attention --out attention.jsonl [--seed 7] [--count 240] [--tiny]

``--tiny`` runs a few small shapes on the CPU (no graphs, no kernels) to test the code path.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from lab.measure import needs_torch  # noqa: F401  (one line, not a traceback, without PyTorch)

CALLS = 10  # calls captured in one graph: the per-call time excludes the graph's own launch
HEAD_DIMS = (64, 80, 96, 128, 160, 192, 256)
GROUPS = (1, 1, 2, 3, 4, 5, 6, 8, 12, 16, 23, 32, 46, 64)
KV_HEADS = (1, 1, 1, 2, 4, 8, 16, 32)
BATCHES = (1, 2, 4, 8, 16, 16, 32, 64)
CONTEXTS = (256, 512, 1024, 2048, 4096, 4096, 8192, 16384, 32768)
MAX_KV_BYTES = 4 * 2**30


def device() -> str:
    return "cuda" if torch.cuda.is_available() else "cpu"


def timed(fn: Any, reps: int = 30) -> dict[str, float]:
    """Per-call seconds of ``fn`` (median, min over ``reps``): CALLS calls in one CUDA graph on a GPU."""
    if device() == "cpu":
        times = []
        for _ in range(3):
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
        return {"median_s": statistics.median(times), "min_s": min(times)}
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(CALLS):
            fn()
    for _ in range(3):
        graph.replay()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3 / CALLS)
    del graph
    return {"median_s": statistics.median(times), "min_s": min(times)}


def kernels(fn: Any) -> list[dict[str, Any]]:
    """The CUDA kernels one eager call of ``fn`` launches, with their launch geometry (empty on the CPU)."""
    if device() == "cpu":
        return []
    from torch.profiler import ProfilerActivity, profile

    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    path = f"/tmp/attention-trace-{time.monotonic_ns()}.json"
    prof.export_chrome_trace(path)
    with open(path, encoding="utf-8") as handle:
        events = json.load(handle)["traceEvents"]
    out = []
    for event in events:
        if event.get("cat") != "kernel":
            continue
        args = event.get("args", {})
        out.append({"name": event["name"][:160], "dur_s": event["dur"] / 1e6, "grid": args.get("grid"),
                    "block": args.get("block"), "registers": args.get("registers per thread"),
                    "shared_bytes": args.get("shared memory"), "blocks_per_sm": args.get("blocks per SM")})
    return out


def attention_row(batch: int, heads: int, kv_heads: int, head_dim: int, context: int) -> dict[str, Any]:
    dev, bf16 = device(), torch.bfloat16
    q = torch.randn(batch, heads, 1, head_dim, device=dev, dtype=bf16)
    k = torch.randn(batch, kv_heads, context, head_dim, device=dev, dtype=bf16)
    v = torch.randn(batch, kv_heads, context, head_dim, device=dev, dtype=bf16)

    def call() -> Any:
        return F.scaled_dot_product_attention(q, k, v, enable_gqa=True)

    row = {"kind": "attention", "batch": batch, "heads": heads, "kv_heads": kv_heads, "head_dim": head_dim,
           "context": context, "kv_bytes": 2 * k.numel() * k.element_size(), "time": timed(call),
           "kernels": kernels(call)}
    return row  # q, k and v go with this frame


def gemv_row(batch: int, n_in: int, n_out: int) -> dict[str, Any]:
    dev, bf16 = device(), torch.bfloat16
    x = torch.randn(batch, n_in, device=dev, dtype=bf16)
    w = torch.randn(n_out, n_in, device=dev, dtype=bf16) * 0.02
    return {"kind": "gemv", "batch": batch, "in": n_in, "out": n_out, "weight_bytes": w.numel() * 2,
            "time": timed(lambda: F.linear(x, w)), "kernels": kernels(lambda: F.linear(x, w))}


def attention_shapes(rng: random.Random, count: int) -> list[tuple[int, int, int, int, int]]:
    shapes: list[tuple[int, int, int, int, int]] = []
    while len(shapes) < count:
        kv_heads, group = rng.choice(KV_HEADS), rng.choice(GROUPS)
        shape = (rng.choice(BATCHES), kv_heads * group, kv_heads, rng.choice(HEAD_DIMS), rng.choice(CONTEXTS))
        b, _, kv, d, ctx = shape
        if shape[1] <= 128 and 4 * b * kv * d * ctx <= MAX_KV_BYTES and shape not in shapes:
            shapes.append(shape)
    return shapes


def gemv_shapes(rng: random.Random, count: int) -> list[tuple[int, int, int]]:
    widths = (256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 14336)
    return [(rng.choice((1, 16)), rng.choice(widths), rng.choice(widths)) for _ in range(count)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--count", type=int, default=240)
    parser.add_argument("--gemvs", type=int, default=80)
    parser.add_argument("--tiny", action="store_true")
    parser.add_argument("--shapes", help="a JSON list of [batch, heads, kv_heads, head_dim, context] measured too,"
                        " as split 'extra' (e.g. the lean decode rows' own shapes, to read their attention apart)")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    count, gemvs = (4, 2) if args.tiny else (args.count, args.gemvs)
    with open(args.out, "w", encoding="utf-8") as out:
        def emit(row: dict[str, Any]) -> None:
            out.write(json.dumps(row) + "\n")
            out.flush()

        props = torch.cuda.get_device_properties(0) if device() == "cuda" else None
        emit({"kind": "device", "torch": torch.__version__, "name": props.name if props else "cpu",
              "sm_count": props.multi_processor_count if props else None, "seed": args.seed})
        for i, (b, h, kv, d, ctx) in enumerate(attention_shapes(rng, count)):
            batch, context = (min(b, 2), min(ctx, 64)) if args.tiny else (b, ctx)
            emit({**attention_row(batch, h, kv, d, context), "split": "fit" if i % 2 == 0 else "check"})
        extra = json.loads(Path(args.shapes).read_text(encoding="utf-8")) if args.shapes else []
        for b, h, kv, d, ctx in extra:
            emit({**attention_row(b, h, kv, d, min(ctx, 64) if args.tiny else ctx), "split": "extra"})
        for i, (b, n_in, n_out) in enumerate(gemv_shapes(rng, gemvs)):
            emit({**gemv_row(b, n_in if not args.tiny else 64, n_out if not args.tiny else 64),
                  "split": "fit" if i % 2 == 0 else "check"})
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
