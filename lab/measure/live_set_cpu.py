"""List the tensors alive at the peak of a Hugging Face prefill, on the CPU, op by op (a TorchDispatchMode that
follows every storage an operation returns until its last tensor dies). No GPU needed; the kernels' own scratch
(cuBLAS workspaces, a CUDA kernel's temporaries) is not seen, every tensor the model's Python code holds is.

    python -m lab.measure.live_set_cpu --config '{"model_type": "gemma2", ...}' --dtype bf16 --batch 1 \
        --prompt 512 --layers 2

Prints peak minus what the cache keeps (the measured ``peak_minus_before - kept_after`` of measure_prefill), per
token, and the storages alive at the peak grouped by the operation that made them. Diagnostic only; its output is
quoted in docs/accuracy.md. Runs the model as transformers runs it on the CPU (SDPA's CPU kernel, which takes masks
and grouped heads like the CUDA kernels the H200 rows ran).
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import weakref
from typing import Any

import torch
import transformers
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten
from transformers import AutoConfig, AutoModelForCausalLM

from lab.measure import needs_torch  # noqa: F401  (one line, not a traceback, without PyTorch)

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}


class LiveSet(TorchDispatchMode):
    """Bytes of the storages operations returned that some tensor still references; the largest total, and what
    made it up."""

    def __init__(self, external: set[int]) -> None:
        super().__init__()
        self.external = external
        self.owners: dict[int, list[Any]] = {}
        self.made: dict[int, tuple[int, str, tuple[int, ...], str]] = {}
        self.current = self.peak = 0
        self.at_peak: list[tuple[int, str, tuple[int, ...], str]] = []

    def _dead(self, key: int, ref: Any) -> None:
        refs = self.owners.get(key)
        if refs is None:
            return
        refs[:] = [r for r in refs if r is not ref]
        if not refs:
            del self.owners[key]
            self.current -= self.made.pop(key)[0]

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        for t in tree_flatten(out)[0]:
            if not isinstance(t, torch.Tensor) or t.device.type == "meta":
                continue
            storage = t.untyped_storage()
            key, size = storage.data_ptr(), storage.nbytes()
            if size == 0 or key in self.external:
                continue
            if key not in self.owners:
                self.owners[key] = []
                self.made[key] = (size, func.__name__, tuple(t.shape), str(t.dtype).removeprefix("torch."))
                self.current += size
            self.owners[key].append(weakref.ref(t, lambda ref, k=key: self._dead(k, ref)))
        if self.current > self.peak:
            self.peak, self.at_peak = self.current, list(self.made.values())
        return out


def grouped(at_peak: list[tuple[int, str, tuple[int, ...], str]], per: int = 1) -> list[list[Any]]:
    """The storages alive at the peak grouped by the operation, shape and dtype that made them, largest first:
    [operation, shape, dtype, how many, their bytes ÷ ``per``]."""
    groups: collections.Counter[tuple[str, tuple[int, ...], str]] = collections.Counter()
    sizes: dict[tuple[str, tuple[int, ...], str], int] = {}
    for size, op, shape, kind in at_peak:
        groups[(op, shape, kind)] += 1
        sizes[(op, shape, kind)] = size
    return sorted(([op, list(shape), kind, n, sizes[(op, shape, kind)] * n / per]
                   for (op, shape, kind), n in groups.items()), key=lambda row: -row[4])


def trace(config: dict[str, Any], dtype: str, batch: int, prompt: int, keep: int, *,
          math: bool = False) -> dict[str, Any]:
    """``math``: SDPA held to PyTorch's math kernel, the one CUDA leaves fp32 grouped-query heads (on the CPU its
    flash kernel takes them)."""
    fields = {k: v for k, v in config.items() if k != "model_type"}
    cfg = AutoConfig.for_model(config["model_type"], **fields)
    cfg._attn_implementation = "sdpa"
    model = AutoModelForCausalLM.from_config(cfg, dtype=DTYPES[dtype], attn_implementation="sdpa").eval()
    ids = torch.randint(0, cfg.vocab_size, (batch, prompt))
    external = {p.untyped_storage().data_ptr() for p in [*model.parameters(), *model.buffers(), ids]}
    with torch.inference_mode():
        mode = LiveSet(external)
        with mode, sdpa_kernel(SDPBackend.MATH) if math else contextlib.nullcontext():
            out = model(input_ids=ids, use_cache=True, logits_to_keep=keep)
            cache = out.past_key_values
            del out
        kept = mode.current
        del cache
    tokens = batch * prompt
    return {"peak": mode.peak, "kept": kept, "activation": mode.peak - kept,
            "per_token": (mode.peak - kept) / tokens,
            "at_peak": grouped(mode.at_peak, tokens)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", required=True, help="config.json fields as JSON")
    parser.add_argument("--dtype", default="bf16", choices=DTYPES)
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--prompt", type=int, default=512)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--keep", type=int, default=1, help="logits_to_keep (0: every position)")
    parser.add_argument("--math", action="store_true", help="hold SDPA to its math kernel (CUDA's for fp32 GQA)")
    parser.add_argument("--json", action="store_true", help="print one JSON row (tests/data/measured/peak-traces)")
    args = parser.parse_args()
    config = {**json.loads(args.config), "num_hidden_layers": args.layers}
    result = trace(config, args.dtype, args.batch, args.prompt, args.keep, math=args.math)
    if args.json:
        print(json.dumps({"config": json.loads(args.config), "layers": args.layers, "dtype": args.dtype,
                          "batch": args.batch, "prompt": args.prompt, "logits_to_keep": args.keep, "math": args.math,
                          "activation": result["activation"], "torch": torch.__version__,
                          "transformers": transformers.__version__}))
        return
    print(f"activation {result['activation']:,} B ({result['per_token']:,.1f} B per token); "
          f"peak {result['peak']:,}, kept {result['kept']:,}")
    for op, shape, kind, n, per_token in result["at_peak"]:
        print(f"  {per_token:10,.1f} B/token  {n:2d} x {op} {shape} {kind}")


if __name__ == "__main__":
    main()
