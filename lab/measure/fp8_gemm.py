"""FP8 against bf16 GEMM throughput at the shapes of a Llama 2 7B / 70B training step (one GPU, PyTorch only).

Every linear layer of a training step runs three GEMMs on M = micro-batch × sequence tokens (Megatron-LM /
Transformer Engine): the forward (M × K by K × N), the input gradient (M × N by N × K) and the weight gradient
(N × M by M × K). Each is timed here in bf16 (``torch.mm``) and in FP8 (``torch._scaled_mm``, per-tensor scales,
bf16 output), with the formats and accumulation Transformer Engine's default recipe uses (DelayedScaling,
Format.HYBRID: E4M3 activations and weights, E5M2 gradients; the forward with fast accumulation, the two backward
GEMMs with split accumulation: transformer_engine/pytorch/module/base.py ``_2X_ACC_FPROP = False``,
``_2X_ACC_DGRAD = True``, ``_2X_ACC_WGRAD = True``). Timing: CUDA events around ``--repeat`` calls after
``--warmup`` calls, on random normal data (zeros run faster, 894 against 788 TFLOP/s on this H200 in bf16).

Each GEMM prints one JSON line (model, linear, pass, m, n, k, dtype, seconds, TFLOP/s); the last line sums a whole
step's linears per model (every layer's four linears × layers, and the head once): FLOPs ÷ seconds in each dtype,
and their ratio. tests/data/measured/README.md says how the profile value is derived from it.

    python3 -m lab.measure.fp8_gemm > tests/data/measured/h200-fp8-gemm.jsonl     # on the GPU
    python3 -m lab.measure.fp8_gemm --cpu-check                                   # shapes ÷ 64, on the CPU
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

# (hidden, intermediate, heads, kv heads, layers, vocab): the Llama 2 config.json files (meta-llama/Llama-2-7b-hf,
# meta-llama/Llama-2-70b-hf on the Hugging Face hub); head_dim = hidden / heads = 128
MODELS = {
    "llama-2-7b": (4096, 11008, 32, 32, 32, 32000),
    "llama-2-70b": (8192, 28672, 64, 8, 80, 32000),
}
TOKENS = 4096  # micro-batch 1 × sequence 4096: the NeMo 24.07 Llama 2 FP8 rows (tests/data/published/training.yaml)


def linears(hidden: int, inter: int, heads: int, kv_heads: int, vocab: int) -> dict[str, tuple[int, int, int]]:
    """linear → (out features N, in features K, times per layer; 0 for the head, run once per step)."""
    head_dim = hidden // heads
    return {"qkv": (hidden + 2 * kv_heads * head_dim, hidden, 1), "proj": (hidden, hidden, 1),
            "fc1": (2 * inter, hidden, 1), "fc2": (hidden, inter, 1), "head": (vocab, hidden, 0)}


def passes(m: int, n: int, k: int) -> dict[str, tuple[int, int, int, bool]]:
    """pass → (GEMM m, n, k, fast accumulation) for a linear of N outputs, K inputs on M tokens."""
    return {"fprop": (m, n, k, True), "dgrad": (m, k, n, False), "wgrad": (n, k, m, False)}


def timed(torch: Any, fn: Any, warmup: int, repeat: int, cuda: bool) -> float:
    for _ in range(warmup):
        fn()
    if not cuda:
        start = time.perf_counter()
        for _ in range(repeat):
            fn()
        return (time.perf_counter() - start) / repeat
    begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    begin.record()
    for _ in range(repeat):
        fn()
    end.record()
    torch.cuda.synchronize()
    return float(begin.elapsed_time(end)) / 1e3 / repeat


def gemm_seconds(torch: Any, m: int, n: int, k: int, fast: bool, device: str, warmup: int,
                 repeat: int) -> dict[str, Any]:
    """Seconds of one m × k by k × n GEMM in bf16 and in FP8 (A E4M3 forward, E5M2 backward; B E4M3)."""
    cuda = device == "cuda"
    a = torch.randn(m, k, device=device, dtype=torch.bfloat16)
    b = torch.randn(n, k, device=device, dtype=torch.bfloat16).t()  # column-major k × n, as cuBLASLt wants B
    out = {"bf16": timed(torch, lambda: torch.mm(a, b), warmup, repeat, cuda)}
    b8 = b.t().contiguous().to(torch.float8_e4m3fn).t()
    one = torch.ones((), device=device, dtype=torch.float32)
    formats = [torch.float8_e4m3fn] if fast else [torch.float8_e5m2, torch.float8_e4m3fn]  # gradients: E5M2
    for a_format in formats:
        a8 = a.to(a_format)
        try:
            out["fp8"] = timed(torch, lambda a8=a8: torch._scaled_mm(a8, b8, scale_a=one, scale_b=one,
                                                                      out_dtype=torch.bfloat16, use_fast_accum=fast),
                               warmup, repeat, cuda)
        except RuntimeError as error:  # a build without E5M2 × E4M3: said in the output, E4M3 timed instead
            print(json.dumps({"m": m, "n": n, "k": k, "a_format": str(a_format), "error": str(error)[:200]}))
            continue
        out["a_format"] = str(a_format).removeprefix("torch.")  # type: ignore[assignment]
        break
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cpu-check", action="store_true", help="every shape ÷ 64 on the CPU (the code path only)")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    import torch

    device, shrink = ("cpu", 64) if args.cpu_check else ("cuda", 1)
    if device == "cuda":
        name = torch.cuda.get_device_name()
        print(json.dumps({"device": name, "torch": torch.__version__, "cuda": torch.version.cuda,
                          "capability": list(torch.cuda.get_device_capability())}), flush=True)
    for model, (hidden, inter, heads, kv_heads, layers, vocab) in MODELS.items():
        totals = {"flops": 0.0, "bf16": 0.0, "fp8": 0.0}
        for linear, (n_out, k_in, per_layer) in linears(hidden, inter, heads, kv_heads, vocab).items():
            count = layers * per_layer or 1
            for name_, (m, n, k, fast) in passes(TOKENS // shrink, n_out // shrink, k_in // shrink).items():
                seconds = gemm_seconds(torch, m, n, k, fast, device, args.warmup, args.repeat)
                a_format = seconds.pop("a_format", None)
                flops = 2 * m * n * k
                for dtype, s in seconds.items():
                    print(json.dumps({"model": model, "linear": linear, "pass": name_, "m": m, "n": n, "k": k,
                                      "dtype": dtype, "fast_accum": fast if dtype == "fp8" else None,
                                      "a_format": a_format if dtype == "fp8" else "bfloat16",
                                      "seconds": s, "tflop_per_s": flops / s / 1e12}), flush=True)
                    totals[dtype] += count * s
                totals["flops"] += count * flops
        print(json.dumps({"model": model, "step_linears": True, "flops": totals["flops"],
                          "bf16_tflop_per_s": totals["flops"] / totals["bf16"] / 1e12,
                          "fp8_tflop_per_s": totals["flops"] / totals["fp8"] / 1e12,
                          "fp8_over_bf16": totals["bf16"] / totals["fp8"]}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
