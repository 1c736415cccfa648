"""Hugging Face's decode attention over a static cache, alone.

transformers 5.17's static-cache decode (the `hf` and `hf-graph` profiles' measurement: ``StaticCache``, one new
token per sequence) hands ``sdpa_attention_forward`` a boolean mask of batch × 1 × 1 × cache length, so
``use_gqa_in_sdpa`` is false and a grouped-query model's keys and values go through ``repeat_kv`` (an expand and a
reshape) before SDPA runs with that mask. This script times that call by itself over shapes drawn from a seed, with
transformers' own ``sdpa_attention_forward`` and ``repeat_kv``:

- ``kind=hf_attention``: one layer's call (``whole``: repeat_kv of K and V, then SDPA with the mask), and its two
  parts apart — ``copy``: the two repeat_kv calls alone; ``sdpa``: SDPA with the mask over K and V already repeated
  (as the call hands it) — each timed as 10 calls in one CUDA graph (``measure_decode_attention.timed``), with the
  kernels one eager ``whole`` call launches (name, grid, duration).
- ``kind=device``: the torch and transformers versions and the SM count.

Every shape's ``split`` is ``fit`` or ``check`` (alternating in draw order); the graph and eager decode rows in
``tests/data/measured/random`` are not measured here and stay held out. Needs torch and transformers:

    python -m lab.measure.hf_decode_attention --out hf-attention.jsonl [--seed 9] [--count 240] [--tiny]

``--tiny`` runs a few small shapes on the CPU (no graphs, no kernels) to test the code path.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from typing import Any

import torch

from lab.measure import needs_torch  # noqa: F401  (one line, not a traceback, without PyTorch)
from lab.measure.decode_attention import device, kernels, timed

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}
DTYPE_DRAW = ("bf16", "bf16", "fp16", "fp32", "fp32")
HEAD_DIMS = (64, 80, 96, 128, 160, 256)
GROUPS = (1, 1, 2, 2, 3, 4, 5, 6, 8, 12, 16, 23, 48)
KV_HEADS = (1, 1, 2, 3, 4, 8, 12, 16, 32)
BATCHES = (1, 2, 4, 8, 16, 16, 32, 32, 64)
CONTEXTS = (256, 512, 1024, 1024, 2048, 4096)
CACHE_EXTRA = 8  # random_architectures.py's StaticCache holds context + 8 positions
MAX_REPEATED_BYTES = 3 * 2**30


class _Layer(torch.nn.Module):
    """What ``sdpa_attention_forward`` reads of an attention module."""

    def __init__(self, groups: int) -> None:
        super().__init__()
        self.num_key_value_groups = groups
        self.is_causal = True


def hf_attention_row(dtype: str, batch: int, heads: int, kv_heads: int, head_dim: int, context: int
                     ) -> dict[str, Any]:
    from transformers.integrations.sdpa_attention import repeat_kv, sdpa_attention_forward

    dev, kind = device(), DTYPES[dtype]
    length = context + CACHE_EXTRA
    q = torch.randn(batch, heads, 1, head_dim, device=dev, dtype=kind)
    k = torch.randn(batch, kv_heads, length, head_dim, device=dev, dtype=kind)
    v = torch.randn(batch, kv_heads, length, head_dim, device=dev, dtype=kind)
    mask = torch.zeros(batch, 1, 1, length, device=dev, dtype=torch.bool)
    mask[..., : context + 1] = True
    layer, groups = _Layer(heads // kv_heads), heads // kv_heads
    k_rep, v_rep = repeat_kv(k, groups), repeat_kv(v, groups)

    def whole() -> Any:
        return sdpa_attention_forward(layer, q, k, v, mask, scaling=head_dim ** -0.5)

    def copy() -> Any:
        return repeat_kv(k, groups), repeat_kv(v, groups)

    def sdpa() -> Any:
        return torch.nn.functional.scaled_dot_product_attention(q, k_rep, v_rep, attn_mask=mask,
                                                                scale=head_dim ** -0.5)

    return {"kind": "hf_attention", "dtype": dtype, "batch": batch, "heads": heads, "kv_heads": kv_heads,
            "head_dim": head_dim, "context": context, "cache_len": length,
            "kv_bytes": 2 * k.numel() * k.element_size(), "repeated_view": k_rep.data_ptr() == k.data_ptr(),
            "whole": timed(whole), "copy": timed(copy) if groups > 1 else None, "sdpa": timed(sdpa),
            "kernels": kernels(whole)}


def shapes(rng: random.Random, count: int) -> list[tuple[str, int, int, int, int, int]]:
    out: list[tuple[str, int, int, int, int, int]] = []
    while len(out) < count:
        kv_heads, group = rng.choice(KV_HEADS), rng.choice(GROUPS)
        dtype, batch, head_dim, context = (rng.choice(DTYPE_DRAW), rng.choice(BATCHES), rng.choice(HEAD_DIMS),
                                           rng.choice(CONTEXTS))
        heads = kv_heads * group
        size = 4 if dtype == "fp32" else 2
        repeated = 2 * batch * heads * (context + CACHE_EXTRA) * head_dim * size
        shape = (dtype, batch, heads, kv_heads, head_dim, context)
        if heads <= 64 and repeated <= MAX_REPEATED_BYTES and shape not in out:
            out.append(shape)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True)
    parser.add_argument("--seed", type=int, default=9)
    parser.add_argument("--count", type=int, default=240)
    parser.add_argument("--tiny", action="store_true")
    args = parser.parse_args()
    import transformers

    rng = random.Random(args.seed)
    with open(args.out, "w", encoding="utf-8") as out:
        props = torch.cuda.get_device_properties(0) if device() == "cuda" else None
        out.write(json.dumps({"kind": "device", "torch": torch.__version__, "transformers": transformers.__version__,
                              "name": props.name if props else "cpu",
                              "sm_count": props.multi_processor_count if props else None, "seed": args.seed}) + "\n")
        for i, (dtype, b, h, kv, d, ctx) in enumerate(shapes(rng, 4 if args.tiny else args.count)):
            batch, context = (min(b, 2), min(ctx, 64)) if args.tiny else (b, ctx)
            try:
                row = {**hf_attention_row(dtype, batch, h, kv, d, context), "split": "fit" if i % 2 == 0 else "check"}
            except Exception as error:  # one shape's failure (memory) must not end the call
                row = {"kind": "hf_attention", "dtype": dtype, "batch": batch, "heads": h, "kv_heads": kv,
                       "head_dim": d, "context": context, "error": f"{type(error).__name__}: {str(error)[:200]}"}
            out.write(json.dumps(row) + "\n")
            out.flush()
            if device() == "cuda":
                torch.cuda.empty_cache()
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
