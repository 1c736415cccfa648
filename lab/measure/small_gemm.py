"""A decode step's linear layers at a few rows, alone.

An HF decode step multiplies batch × in activations by each out × in weight (``F.linear``). In fp32 seed 5's graph
decodes spent 2–4 × the weights' read time in GEMMs at batch 8–16 (``issue.gemm_kernel_s``), where the time model
takes the larger of the weights' read and the FLOPs at the fp32 GEMM rate. This script times ``F.linear`` alone over
row counts 1–256 and a few layer shapes, in fp32 (TF32 off, PyTorch's default, as transformers leaves it) and bf16,
with the kernel each call launches (name, grid), so the kernel's tile can be read beside its time:

- ``kind=gemm``: one call, timed as 10 calls in one CUDA graph (``measure_decode_attention.timed``), and its kernels.
- ``kind=device``: the torch version and the SM count.

Every shape's ``split`` is ``fit`` or ``check`` (alternating by layer shape); the decode rows in
``tests/data/measured/random`` are not measured here and stay held out. Needs only torch:

    python -m lab.measure.small_gemm --out gemm.jsonl [--tiny] [--narrow]
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import torch
import torch.nn.functional as F

from lab.measure import needs_torch  # noqa: F401  (one line, not a traceback, without PyTorch)
from lab.measure.decode_attention import device, kernels, timed

ROWS = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256)
# (in, out) of decode linears: square attention projections and FFN up/down of common widths
LAYERS = ((1024, 1024), (2048, 2048), (2048, 8192), (8192, 2048), (2944, 2944), (4096, 4096), (4096, 14336),
          (768, 3072), (3072, 768), (1536, 1536))
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}
# --narrow: every linear of seed 5's rand-i07 and rand-i12 (640 and 1,024 wide, one KV head of 160, vocabularies of
# 151,936 and 32,000), whose fp32 GEMM kernels at batch 8 took 2.4 × the by-shape rule (docs/accuracy.md): each
# timed as a decode calls it (a batch × 1 × in input) over enough weight copies that none stays in L2 between calls
NARROW = ((640, 800), (640, 160), (800, 640), (640, 1536), (1536, 640), (640, 151936), (1024, 1280), (1024, 160),
          (1280, 1024), (1024, 2816), (2816, 1024), (1024, 32000))
NARROW_ROWS = (1, 2, 8, 16, 32)
COLD_BYTES = 256 * 2**20  # more than the H200's 60 MiB L2, several times over


def gemm_row(dtype: str, rows: int, n_in: int, n_out: int) -> dict[str, Any]:
    dev, kind = device(), DTYPES[dtype]
    x = torch.randn(rows, n_in, device=dev, dtype=kind)
    w = torch.randn(n_out, n_in, device=dev, dtype=kind) * 0.02

    def call() -> Any:
        return F.linear(x, w)

    return {"kind": "gemm", "dtype": dtype, "rows": rows, "in": n_in, "out": n_out,
            "weight_bytes": w.numel() * w.element_size(), "flops": 2 * rows * n_in * n_out,
            "time": timed(call), "kernels": kernels(call)}


def cold_row(rows: int, n_in: int, n_out: int) -> dict[str, Any]:
    """fp32 ``F.linear`` of a ``rows`` × 1 × ``n_in`` input over weight copies cycled so each call reads from memory."""
    dev = device()
    x = torch.randn(rows, 1, n_in, device=dev)
    copies = max(1, min(64, COLD_BYTES // (4 * n_in * n_out)))
    weights = [torch.randn(n_out, n_in, device=dev) * 0.02 for _ in range(copies)]

    def every() -> Any:
        return [F.linear(x, w) for w in weights]

    seconds = timed(every, reps=10)
    return {"kind": "gemm", "dtype": "fp32", "rows": rows, "in": n_in, "out": n_out, "cold_copies": copies,
            "weight_bytes": 4 * n_in * n_out, "flops": 2 * rows * n_in * n_out,
            "time": {k: v / copies for k, v in seconds.items()},
            "kernels": kernels(lambda: F.linear(x, weights[0])), "split": "check"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True)
    parser.add_argument("--tiny", action="store_true")
    parser.add_argument("--narrow", action="store_true", help="only the narrow decode shapes, fp32, L2-cold")
    args = parser.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    layers, rows = (((64, 64), (64, 128)), (1, 8)) if args.tiny else (LAYERS, ROWS)
    with open(args.out, "w", encoding="utf-8") as out:
        props = torch.cuda.get_device_properties(0) if device() == "cuda" else None
        out.write(json.dumps({"kind": "device", "torch": torch.__version__, "name": props.name if props else "cpu",
                              "sm_count": props.multi_processor_count if props else None,
                              "allow_tf32": torch.backends.cuda.matmul.allow_tf32}) + "\n")
        if args.narrow:
            found = (cold_row(m, n_in, n_out) for n_in, n_out in NARROW for m in (rows if args.tiny else NARROW_ROWS))
        else:
            found = ({**gemm_row(dtype, m, n_in, n_out), "split": "fit" if i % 2 == 0 else "check"}
                     for i, (n_in, n_out) in enumerate(layers) for dtype in DTYPES for m in rows)
        for row in found:
            out.write(json.dumps(row) + "\n")
            out.flush()
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
