"""Every kernel of one eager prefill forward, by name.

Seeds 5 and 6 time a prefill's kernels only by kind (``issue``: GEMM, attention, other). Their 16-bit llama-family
prefills spend 1.2–2.1 × the modelled elementwise time in "other" kernels, their GPT-2 ones 0.6–1.0 ×, and the kind
alone does not say which kernels. This script rebuilds some of seed 5's ``fit`` architectures from their rows'
config.json (random weights, as random_architectures.py builds them) and lists, for one prefill forward (no cache, last
logits, as ``issue`` timed it), each kernel name's count and total busy time (torch.profiler, CUDA activity):

    python -m lab.measure.prefill_kernels --rows tests/data/measured/random/h200-2026-12-01-seed5.jsonl \
        --case rand-i16:fp16:8:2048 ... > kernels.json

Only ``fit`` architectures are asked for, so the held-out rows stay unread by what this finds. Needs torch and
transformers on a GPU (``--tiny``: the CPU, toy sizes).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from estimator.live import device, measure
from lab.measure.dispatch_timing import kernel_kind


def profile_prefill(model: Any, batch: int, prompt: int) -> list[dict[str, Any]]:
    t = measure.require_cuda()
    from torch.profiler import ProfilerActivity, profile

    ids = t.randint(0, model.config.vocab_size, (batch, prompt), device=device._device())
    with t.inference_mode():
        for _ in range(2):
            model(input_ids=ids, use_cache=False, logits_to_keep=1)
        device.sync()
        with profile(activities=[ProfilerActivity.CUDA, ProfilerActivity.CPU]) as prof:
            model(input_ids=ids, use_cache=False, logits_to_keep=1)
            device.sync()
    by_name: dict[str, list[float]] = defaultdict(list)
    for event in prof.events():
        if getattr(event, "device_type", None) == t.autograd.DeviceType.CUDA:
            by_name[event.name[:200]].append(event.time_range.elapsed_us() / 1e6)
    return sorted(({"name": name, "kind": kernel_kind(name), "count": len(d), "total_s": sum(d)}
                   for name, d in by_name.items()), key=lambda k: -k["total_s"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=Path, required=True)
    parser.add_argument("--case", action="append", required=True, help="model:dtype:batch:prompt")
    parser.add_argument("--tiny", action="store_true")
    args = parser.parse_args()
    configs = {}
    for line in args.rows.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if row.get("kind") == "model" and "config" in row:
            configs[row["model"]] = (row["config"], row.get("split"))
    if args.tiny:
        measure.dry_run_on_cpu()
    out = []
    for case in args.case:
        name, dtype, batch, prompt = case.split(":")
        config, split = configs[name]
        if split != "fit":
            raise SystemExit(f"{name} is {split}: only fit architectures are profiled")
        from lab.measure.random_architectures import tiny_config

        model, _ = measure.measure_load(tiny_config(config) if args.tiny else config, dtype)
        size = (1, 16) if args.tiny else (int(batch), int(prompt))
        out.append({"model": name, "dtype": dtype, "batch": size[0], "prompt": size[1], "config": config,
                    "kernels": profile_prefill(model, *size)})
        del model
        measure.free_memory()
    json.dump(out, sys.stdout, indent=1)


if __name__ == "__main__":
    main()
