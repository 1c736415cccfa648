"""PyTorch's three elementwise kernel paths, timed alone.

A TensorIterator operation runs ``vectorized_elementwise_kernel`` where every operand is contiguous, of one shape
and one dtype; ``unrolled_elementwise_kernel`` where they are contiguous but a cast joins them (``.to(float32)``);
and the generic ``elementwise_kernel`` where an operand is strided or broadcast (rotary embedding's ``q * cos`` on
the transposed heads, RMSNorm's ``hidden * rsqrt(variance)`` and ``weight * hidden``). The prefills of seed 5 spend
much of their elementwise time in the last (lab/measure/prefill_kernels.py). This script times each path on the
shapes a decoder layer uses, with the bytes lab/measure/count_elementwise.py counts for them (every input of more
than one element at its own size, and the output):

- ``kind=path``: ``path`` (vectorized, cast, strided), ``op``, ``dtype``, ``tokens`` × ``width``, ``bytes``,
  ``time`` (10 calls in one CUDA graph), and the kernels one call launches.

    python -m lab.measure.elementwise_paths --out paths.jsonl [--tiny]
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Iterator
from typing import Any

import torch

from lab.measure import needs_torch  # noqa: F401  (one line, not a traceback, without PyTorch)
from lab.measure.decode_attention import device, kernels, timed

DTYPES = {"bf16": torch.bfloat16, "fp32": torch.float32}
TOKENS = (512, 2048, 8192, 32768)
WIDTH, HEAD_DIM = 2048, 128


def _bytes(inputs: tuple[torch.Tensor, ...], out: torch.Tensor) -> int:
    return sum(t.numel() * t.element_size() for t in inputs if t.numel() > 1) + out.numel() * out.element_size()


def cases(dtype: torch.dtype, tokens: int) -> Iterator[tuple[str, str, Callable[[], Any], tuple[torch.Tensor, ...]]]:
    """(path, op, call, inputs) on ``tokens`` × WIDTH activations of one sequence."""
    dev = device()
    x = torch.randn(tokens, WIDTH, device=dev, dtype=dtype)
    y = torch.randn(tokens, WIDTH, device=dev, dtype=dtype)
    yield "vectorized", "mul", lambda: x * y, (x, y)
    yield "vectorized", "add", lambda: x + y, (x, y)
    yield "vectorized", "silu", lambda: torch.nn.functional.silu(x), (x,)
    other = torch.float32 if dtype != torch.float32 else torch.bfloat16
    yield "cast", "to", lambda: x.to(other), (x,)
    heads = WIDTH // HEAD_DIM
    q = x.view(1, tokens, heads, HEAD_DIM).transpose(1, 2)  # (1, heads, tokens, head_dim), as transformers' q
    cos = torch.randn(1, 1, tokens, HEAD_DIM, device=dev, dtype=dtype)
    yield "strided", "rotary_mul", lambda: q * cos, (q, cos)
    half = HEAD_DIM // 2
    yield "strided", "rotate_half", lambda: torch.cat((-q[..., half:], q[..., :half]), dim=-1), (q,)
    weight = torch.randn(WIDTH, device=dev, dtype=dtype)
    yield "strided", "weight_mul", lambda: weight * x, (weight, x)
    xf = x.float()
    rstd = torch.randn(tokens, 1, device=dev, dtype=torch.float32)
    yield "strided", "norm_mul", lambda: xf * rstd, (xf, rstd)


def rows(tiny: bool) -> Iterator[dict[str, Any]]:
    for name, dtype in DTYPES.items():
        for tokens in (64, 128) if tiny else TOKENS:
            for path, op, call, inputs in cases(dtype, tokens):
                out = call()
                yield {"kind": "path", "path": path, "op": op, "dtype": name, "tokens": tokens, "width": WIDTH,
                       "bytes": _bytes(inputs, out), "time": timed(call),
                       "kernels": [k["name"][:120] for k in kernels(call)]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True)
    parser.add_argument("--tiny", action="store_true")
    args = parser.parse_args()
    with open(args.out, "w", encoding="utf-8") as out:
        props = torch.cuda.get_device_properties(0) if device() == "cuda" else None
        out.write(json.dumps({"kind": "device", "torch": torch.__version__,
                              "name": props.name if props else "cpu"}) + "\n")
        for row in rows(args.tiny):
            out.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
