"""16-bit prefills on PyTorch's math SDPA kernel: random Falcon-style architectures, whose attention
hands SDPA one KV head beside every query head with an explicit mask, so PyTorch upcasts to fp32 and scores every
pair (falcon-7b's prefill time read 19–31% low). Each architecture's ``split`` (``fit`` or ``held-out``) is drawn
from the seed: a mechanism is read from the ``fit`` rows and judged on the others.

    python -m lab.measure.math_prefill --out FILE.jsonl [--seed 14] [--count 12] [--budget-s 300]
    python -m lab.measure.math_prefill --out /tmp/x.jsonl --tiny     # the same code on the CPU

Rows: ``kind=model`` as lab/measure/random_architectures.py writes its prefill rows (load; prefill peak, ``latency``,
``issue`` with the kernels' busy time by kind), plus ``kernels_by_name`` (every CUDA kernel of one forward: name,
count, seconds); ``kind=sdpa_math``: the SDPA call alone on Falcon's operands (bf16 or fp16 query with every
head, key and value with one, a 16-bit additive mask) and, in fp32, on a grouped-query model's (is_causal,
enable_gqa), at several shapes, with its kernels by name.
"""

from __future__ import annotations

import argparse
import functools
import json
import random
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from estimator.live import device, measure
from lab.measure import needs_torch  # noqa: F401  (one line, not a traceback, without PyTorch)
from lab.measure.amp_recompute import positive
from lab.measure.dispatch_timing import host_probe, kernel_times, timed_reps

# falcon-7b's vocabulary (tiiuae/falcon-7b config.json)
FALCON_VOCAB = 65024
SDPA_SHAPES = ((1, 16, 1024, 64), (1, 71, 2048, 64), (1, 32, 4096, 128), (4, 24, 2048, 64), (2, 64, 2048, 64))


def falcon_config(rng: random.Random) -> dict[str, Any]:
    """A Falcon-7B-style decoder (old decoder, multi-query, parallel attention) of random width and depth."""
    head_dim = rng.choice((64, 128))
    heads = rng.randint(8, 72) if head_dim == 64 else rng.randint(8, 40)
    return {"model_type": "falcon", "hidden_size": heads * head_dim, "num_attention_heads": heads,
            "num_hidden_layers": rng.randint(3, 10), "vocab_size": FALCON_VOCAB, "multi_query": True,
            "parallel_attn": True, "new_decoder_architecture": False, "bias": False, "alibi": False,
            "max_position_embeddings": 8192}


def tiny(config: dict[str, Any]) -> dict[str, Any]:
    return {**config, "hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 2, "vocab_size": 512}


def cases(seed: int, count: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    out = []
    for index in range(count):
        config = falcon_config(rng)
        out.append({"name": f"math-{index:02d}", "config": config, "dtype": rng.choice(("bf16", "bf16", "fp16")),
                    "split": rng.choice(("fit", "held-out")),
                    "prefills": [(1, rng.choice((512, 1024))), (1, rng.choice((2048, 4096))),
                                 (rng.choice((2, 4)), 2048)]})
    return out


def kernels_by_name(fn: Any) -> list[dict[str, Any]]:
    """Every CUDA kernel of one call of ``fn`` (torch.profiler): name (first 160 characters), count and seconds,
    longest first. Empty on the CPU dry run."""
    t = measure.require_cuda()
    if device._cpu():
        return []
    from torch.profiler import ProfilerActivity, profile

    fn()
    device.sync()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        device.sync()
    totals: dict[str, list[float]] = {}
    for event in prof.events():
        if getattr(event, "device_type", None) != t.autograd.DeviceType.CUDA:
            continue
        entry = totals.setdefault(event.name[:160], [0, 0.0])
        entry[0] += 1
        entry[1] += event.time_range.elapsed_us() / 1e6
    return [{"name": name, "count": int(n), "s": s}
            for name, (n, s) in sorted(totals.items(), key=lambda item: -item[1][1])]


def prefill_rows(model: Any, base: dict[str, Any], prefills: list[tuple[int, int]], emit: Any) -> None:
    t = measure.require_cuda()
    for batch, prompt in prefills:
        try:
            row = measure.measure_prefill(model, batch, prompt, 1, latency=True)
            ids = t.randint(0, model.config.vocab_size, (batch, prompt), device=device._device())
            forward = functools.partial(model, input_ids=ids, use_cache=False, logits_to_keep=1)
            with t.inference_mode():
                probe = host_probe()
                row["issue"] = {**timed_reps(forward, 5), "host_op_s": probe, **kernel_times(forward)}
                row["kernels_by_name"] = kernels_by_name(forward)
            emit({**base, **row})
        except Exception as error:
            emit({**base, "phase": "prefill", "batch": batch, "prompt": prompt, "logits_to_keep": 1,
                  "error": measure._why(error)})


def sdpa_rows(dtype_name: str, tiny_run: bool, emit: Any) -> None:
    """SDPA alone as transformers calls it where PyTorch runs the math kernel: in 16 bits on Falcon's operands (one
    KV head, an additive mask, no enable_gqa), in fp32 on a grouped-query model's (``kv_heads`` of every 4 query
    heads, is_causal and enable_gqa, no mask); its kernels and time without the model around them."""
    t = measure.require_cuda()
    dtype = {"bf16": t.bfloat16, "fp16": t.float16, "fp32": t.float32}[dtype_name]
    sdpa = t.nn.functional.scaled_dot_product_attention
    for batch, heads, prompt, head_dim in ((1, 4, 32, 16),) if tiny_run else SDPA_SHAPES:
        dev = device._device()
        # fp32: the most KV heads up to a quarter of the query heads that divide them (71 heads: 1)
        kv_heads = max(d for d in range(1, max(heads // 4, 1) + 1) if heads % d == 0) if dtype_name == "fp32" else 1
        q = t.randn(batch, heads, prompt, head_dim, device=dev, dtype=dtype)
        k, v = (t.randn(batch, kv_heads, prompt, head_dim, device=dev, dtype=dtype) for _ in range(2))
        if dtype_name == "fp32":
            call = functools.partial(sdpa, q, k, v, is_causal=True, enable_gqa=True)
        else:
            causal = t.ones(prompt, prompt, device=dev, dtype=t.bool).tril()
            mask = t.zeros(batch, 1, prompt, prompt, device=dev, dtype=dtype).masked_fill(~causal,
                                                                                           t.finfo(dtype).min)
            call = functools.partial(sdpa, q, k, v, attn_mask=mask)
        with t.inference_mode():
            emit({"kind": "sdpa_math", "dtype": dtype_name, "batch": batch, "heads": heads, "kv_heads": kv_heads,
                  "prompt": prompt, "head_dim": head_dim, **timed_reps(call, 5), **kernel_times(call),
                  "kernels_by_name": kernels_by_name(call)})
        del q, k, v, call
        device.free_memory()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--count", type=positive, default=12)
    parser.add_argument("--budget-s", type=float, default=300.0)
    parser.add_argument("--tiny", action="store_true", help="CPU dry run at toy sizes")
    args = parser.parse_args()
    start = time.monotonic()
    if args.tiny:
        device.dry_run_on_cpu()
    with args.out.open("w", encoding="utf-8") as out:
        def emit(row: dict[str, Any]) -> None:
            row = {**row, "seed": args.seed, "elapsed_s": round(time.monotonic() - start, 1)}
            out.write(json.dumps(row) + "\n")
            out.flush()
            print(f"[{row['elapsed_s']:6.1f}s] {row.get('model', row['kind'])} {row.get('phase', '')} "
                  f"{'ERROR ' + row['error'] if row.get('error') else 'ok'}", flush=True)

        if not args.tiny:
            emit(measure.device_facts())
        for dtype in ("bf16", "fp16", "fp32"):
            sdpa_rows(dtype, args.tiny, emit)
        for case in cases(args.seed, 2 if args.tiny else args.count):
            if time.monotonic() - start > args.budget_s:
                emit({"kind": "skipped", "model": case["name"], "error": f"budget {args.budget_s:.0f} s spent"})
                break
            config = tiny(case["config"]) if args.tiny else case["config"]
            base = {"kind": "model", "model": case["name"], "dtype": case["dtype"], "split": case["split"],
                    "config": case["config"]}
            try:
                model, load = measure.measure_load(config, case["dtype"])
            except Exception as error:
                emit({**base, "phase": "load", "error": measure._why(error)})
                continue
            emit({**base, **load})
            prefill_rows(model, base, [(1, 32)] if args.tiny else case["prefills"], emit)
            del model
            device.free_memory()


if __name__ == "__main__":
    main()
