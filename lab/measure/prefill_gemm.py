"""A prefill's GEMMs, alone, at the shapes transformers runs them.

Seeds 5 and 6 time a prefill's kernels by kind: at 2,048 tokens and more the linear layers' GEMMs reach 0.8 of
the bf16 peak and 0.74 of the fp32 one, at fewer tokens and on narrow layers far less (18–40 TF/s in fp32, where
the time model takes 0.74 × 67), and the math kernel's batched GEMMs over the scores less again. This script
times those GEMMs alone, so the shape's effect can be read apart from the models' rows:

- ``kind=linear``: ``F.linear`` of ``rows`` × ``in`` activations by an ``out`` × ``in`` weight (a projection of
  a layer of width ``in``), in fp32 (TF32 off, PyTorch's default, as transformers leaves it), bf16 and fp16.
- ``kind=bmm``: the math SDPA kernel's two batched GEMMs in fp32, ``scores`` = Q Kᵀ ((b·heads) × s × d by d × s)
  and ``values`` = P V ((b·heads) × s × s by s × d), as ``torch.matmul`` runs them.
- ``kind=device``: the torch version and the SM count.

Each row has the time per call (``time``: median and min; calls in one CUDA graph where a call is short), the
kernels one call launches with their grid (``kernels``), and a ``split`` (``fit`` or ``check``, alternating by
layer width or head_dim), so a rule read off the ``fit`` rows is judged on the ``check`` ones. The models' rows
in ``tests/data/measured/random`` are not measured here. Needs only torch:

    python -m lab.measure.prefill_gemm --out gemm.jsonl [--tiny]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import torch
import torch.nn.functional as F

from lab.measure import needs_torch  # noqa: F401  (one line, not a traceback, without PyTorch)
from lab.measure.decode_attention import device, kernels

ROWS = (128, 256, 512, 1024, 2048, 4096, 8192, 16384)
WIDTHS = (512, 768, 1024, 1536, 2048, 2560, 3072, 4096)
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
HEAD_DIMS = (64, 80, 96, 128, 160, 256)
SEQS = (128, 512, 1024, 2048, 4096)
PAIRS = (8, 16, 40)  # batch × heads of the math kernel's batched GEMMs


def timed(fn: Callable[[], Any], budget_s: float = 0.25) -> dict[str, float]:
    """Per-call seconds of ``fn``: a short call is timed as 10 calls in one CUDA graph (no launch gaps between
    them, as in a GPU-bound prefill's queue), a long one as calls in a row; median and min of the repeats."""
    if device() == "cpu":
        start = time.perf_counter()
        fn()
        return {"median_s": time.perf_counter() - start, "min_s": time.perf_counter() - start, "reps": 1}
    for _ in range(2):
        fn()
    torch.cuda.synchronize()
    start = time.perf_counter()
    fn()
    torch.cuda.synchronize()
    first = time.perf_counter() - start
    calls = 10 if first < 1e-3 else 1
    run: Callable[[], Any] = fn
    if calls > 1:
        graph = torch.cuda.CUDAGraph()
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            fn()
        torch.cuda.current_stream().wait_stream(stream)
        with torch.cuda.graph(graph):
            for _ in range(calls):
                fn()
        run = graph.replay
        run()
    reps = max(3, min(30, int(budget_s / max(first * calls, 1e-6))))
    times = []
    for _ in range(reps):
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        begin.record()
        run()
        end.record()
        end.synchronize()
        times.append(begin.elapsed_time(end) / 1e3 / calls)
    return {"median_s": statistics.median(times), "min_s": min(times), "reps": reps}


def _kernels(fn: Callable[[], Any]) -> list[dict[str, Any]]:
    return [{k: v for k, v in kernel.items() if k in ("name", "dur_s", "grid", "block")} for kernel in kernels(fn)]


def linear_shapes(tiny: bool) -> Iterator[tuple[str, int, int, int, str]]:
    """(dtype, rows, in, out, split): each width's square projection, a grouped-query K/V projection (a quarter
    of the width), the MLP's up (3.5 × width, rounded to 128) and down projections; fp16 on every other width."""
    widths, rows = ((64, 96), (16, 32)) if tiny else (WIDTHS, ROWS)
    for index, width in enumerate(widths):
        ffn = 128 * round(3.5 * width / 128) if not tiny else 224
        split = "fit" if index % 2 == 0 else "check"
        for n_in, n_out in ((width, width), (width, width // 4), (width, ffn), (ffn, width)):
            for dtype in ("fp32", "bf16", "fp16") if index % 2 == 0 else ("fp32", "bf16"):
                for m in rows:
                    yield dtype, m, n_in, n_out, split


def linear_row(dtype: str, rows: int, n_in: int, n_out: int) -> dict[str, Any]:
    kind = DTYPES[dtype]
    x = torch.randn(rows, n_in, device=device(), dtype=kind)
    w = torch.randn(n_out, n_in, device=device(), dtype=kind) * 0.02

    def call() -> Any:
        return F.linear(x, w)

    return {"kind": "linear", "dtype": dtype, "rows": rows, "in": n_in, "out": n_out,
            "flops": 2 * rows * n_in * n_out, "time": timed(call), "kernels": _kernels(call)}


def bmm_rows(pairs: int, seq: int, head_dim: int) -> Iterator[dict[str, Any]]:
    q = torch.randn(pairs, seq, head_dim, device=device())
    k = torch.randn(pairs, seq, head_dim, device=device())
    p = torch.softmax(torch.randn(pairs, seq, seq, device=device()), dim=-1)

    def scores() -> Any:
        return torch.matmul(q, k.transpose(-2, -1))

    def values() -> Any:
        return torch.matmul(p, q)

    for name, call in (("scores", scores), ("values", values)):
        yield {"kind": "bmm", "gemm": name, "dtype": "fp32", "pairs": pairs, "seq": seq, "head_dim": head_dim,
               "flops": 2 * pairs * seq * seq * head_dim, "time": timed(call), "kernels": _kernels(call)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True)
    parser.add_argument("--tiny", action="store_true")
    args = parser.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    start = time.monotonic()
    with open(args.out, "w", encoding="utf-8") as out:
        props = torch.cuda.get_device_properties(0) if device() == "cuda" else None
        out.write(json.dumps({"kind": "device", "torch": torch.__version__, "name": props.name if props else "cpu",
                              "sm_count": props.multi_processor_count if props else None,
                              "allow_tf32": torch.backends.cuda.matmul.allow_tf32}) + "\n")
        for dtype, m, n_in, n_out, split in linear_shapes(args.tiny):
            out.write(json.dumps({**linear_row(dtype, m, n_in, n_out), "split": split}) + "\n")
        out.flush()
        print(f"linear done at {time.monotonic() - start:.0f} s", file=sys.stderr, flush=True)
        pairs, seqs, dims = ((2,), (16,), (8, 16)) if args.tiny else (PAIRS, SEQS, HEAD_DIMS)
        for d_index, head_dim in enumerate(dims):
            for seq in seqs:
                for pair in pairs:
                    for row in bmm_rows(pair, seq, head_dim):
                        out.write(json.dumps({**row, "split": "fit" if d_index % 2 == 0 else "check"}) + "\n")
            out.flush()
    print(f"wrote {args.out} in {time.monotonic() - start:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
