"""The tensors alive at the peak of one steady Hugging Face training step, on the CPU, op by op — the training
counterpart of trace_live_cpu.py (its LiveSet follows every storage an operation returns, gradients and the
optimizer's temporaries included, until its last tensor dies). No GPU needed.

    python -m lab.measure.train_live_set_cpu --config '{"model_type": "gemma2", ...}' --mode bf16 --batch 1 --seq 512 \
        --layers 2

One step as `estimator.live.measure.measure_train` runs it (AdamW, foreach; zero_grad with set_to_none, forward
with labels, backward, optimizer step), after one untraced step so that the optimizer's states exist. Prints the
steady peak (the parameters, buffers and optimizer states held before the step, plus the largest live set during
it: what ``steady_peak`` measures on a GPU, without the caching allocator's rounding), where in the step it fell
(the operation that reached it), and the storages alive then grouped by the operation that made them. bf16 and fp32
only: the CPU's autocast casts another list of operations than CUDA's. Diagnostic; quoted in docs/accuracy.md.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import torch
import transformers
from torch.utils._pytree import tree_flatten
from transformers import AutoConfig, AutoModelForCausalLM

from lab.measure import needs_torch  # noqa: F401  (one line, not a traceback, without PyTorch)
from lab.measure.live_set_cpu import LiveSet, grouped

DTYPES = {"bf16": torch.bfloat16, "fp32": torch.float32}


class StepLiveSet(LiveSet):
    """LiveSet that also records which operation the peak was reached in, and how many operations came before."""

    def __init__(self, external: set[int]) -> None:
        super().__init__(external)
        self.ops = 0
        self.peak_op = ("", 0)

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        before = self.peak
        out = super().__torch_dispatch__(func, types, args, kwargs)
        self.ops += 1
        if self.peak > before:
            self.peak_op = (func.__name__, self.ops)
        return out


def _storages(tensors: Any) -> set[int]:
    return {t.untyped_storage().data_ptr() for t in tree_flatten(tensors)[0] if isinstance(t, torch.Tensor)}


def _bytes(tensors: Any) -> int:
    seen: dict[int, int] = {}
    for t in tree_flatten(tensors)[0]:
        if isinstance(t, torch.Tensor):
            seen[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
    return sum(seen.values())


def trace(config: dict[str, Any], mode: str, batch: int, seq: int, *, checkpointing: bool = False) -> dict[str, Any]:
    fields = {k: v for k, v in config.items() if k != "model_type"}
    cfg = AutoConfig.for_model(config["model_type"], **fields)
    cfg._attn_implementation = "sdpa"
    model = AutoModelForCausalLM.from_config(cfg, dtype=DTYPES[mode], attn_implementation="sdpa")
    model.train()
    if checkpointing:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    model.config.use_cache = False
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5)
    ids = torch.randint(0, cfg.vocab_size, (batch, seq))

    def step() -> None:
        optimizer.zero_grad(set_to_none=True)
        loss = model(input_ids=ids, labels=ids, use_cache=False).loss
        loss.backward()
        del loss
        optimizer.step()

    step()  # the optimizer creates its states in its first step
    optimizer.zero_grad(set_to_none=True)
    held = [*model.parameters(), *model.buffers(), ids, optimizer.state_dict()["state"]]
    persistent = _bytes(held)
    live = StepLiveSet(_storages(held))
    with live:
        step()
    return {"persistent": persistent, "dynamic_peak": live.peak, "steady_peak": persistent + live.peak,
            "peak_op": live.peak_op, "ops": live.ops,
            "at_peak": grouped(live.at_peak)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", required=True, help="config.json fields as JSON")
    parser.add_argument("--mode", default="bf16", choices=DTYPES)
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--seq", type=int, default=512)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--checkpointing", action="store_true")
    parser.add_argument("--json", action="store_true", help="print one JSON row")
    args = parser.parse_args()
    config = {**json.loads(args.config), "num_hidden_layers": args.layers}
    result = trace(config, args.mode, args.batch, args.seq, checkpointing=args.checkpointing)
    if args.json:
        print(json.dumps({"config": json.loads(args.config), "layers": args.layers, "mode": args.mode,
                          "batch": args.batch, "seq": args.seq, "checkpointing": args.checkpointing,
                          "steady_peak": result["steady_peak"], "persistent": result["persistent"],
                          "torch": torch.__version__, "transformers": transformers.__version__}))
        return
    tokens = args.batch * args.seq
    print(f"steady peak {result['steady_peak']:,} B = held {result['persistent']:,} + step's live set "
          f"{result['dynamic_peak']:,} (reached in {result['peak_op'][0]}, op {result['peak_op'][1]:,} of "
          f"{result['ops']:,})")
    for op, shape, kind, n, size in result["at_peak"][:25]:
        print(f"  {size:16,.0f} B {size / tokens:12,.1f} B/token  {n:3d} x {op} {shape} {kind}")


if __name__ == "__main__":
    main()
