"""List the tensors alive at the peak of a Hugging Face MoE prefill (CUDA memory history), to find what the
estimator's MoE activation term misses. Run on a GPU:

    python -m lab.measure.peak_trace --model qwen3-30b-a3b --layers 2 --prompt 2048

Prints the allocations alive at the torch peak, grouped by the innermost transformers/torch frame, with bytes per
token. Diagnostic only; its output is quoted in docs/accuracy.md.
"""

from __future__ import annotations

import argparse
import collections
import json
from pathlib import Path
from typing import Any

import torch
import yaml
from transformers import AutoConfig, AutoModelForCausalLM

from lab.measure import needs_torch  # noqa: F401  (one line, not a traceback, without PyTorch)

SPECS = Path(__file__).resolve().parents[2] / "specs" / "models"


def frame_of(frames: list[dict[str, Any]]) -> str:
    for f in frames:
        name = f.get("filename", "")
        if "transformers" in name or "/nn/" in name:
            return f"{name.split('site-packages/')[-1]}:{f.get('line')} {f.get('name')}"
    return frames[0].get("name", "?") if frames else "?"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--prompt", type=int, default=2048)
    args = parser.parse_args()
    raw = yaml.safe_load((SPECS / f"{args.model}.yaml").read_text())["config"]
    fields = {k: v for k, v in raw.items() if k not in ("model_type", "transformers_version", "_name_or_path")}
    fields["num_hidden_layers"] = args.layers
    cfg = AutoConfig.for_model(raw["model_type"], **fields)
    with torch.device("cuda"):
        model = AutoModelForCausalLM.from_config(cfg, torch_dtype=torch.bfloat16)
    model.eval()
    ids = torch.randint(0, cfg.vocab_size, (1, args.prompt), device="cuda")
    with torch.no_grad():
        model(ids, logits_to_keep=1)  # warm-up
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    torch.cuda.memory._record_memory_history(max_entries=200_000)
    with torch.no_grad():
        model(ids, logits_to_keep=1)
    torch.cuda.synchronize()
    snap = torch.cuda.memory._snapshot()
    torch.cuda.memory._record_memory_history(enabled=None)
    peak = torch.cuda.max_memory_allocated() - before
    events = [e for trace in snap["device_traces"] for e in trace]
    live: dict[int, tuple[int, str]] = {}
    current = best = 0
    best_live: dict[int, tuple[int, str]] = {}
    for e in events:
        if e["action"] == "alloc":
            live[e["addr"]] = (e["size"], frame_of(e.get("frames", [])))
            current += e["size"]
            if current > best:
                best, best_live = current, dict(live)
        elif e["action"] in ("free_requested", "free_completed") and e["addr"] in live:
            current -= live.pop(e["addr"])[0]
    groups: collections.Counter[str] = collections.Counter()
    for size, where in best_live.values():
        groups[where] += size
    out = {"model": args.model, "layers": args.layers, "prompt": args.prompt, "peak_minus_before": peak,
           "traced_peak": best, "per_token_peak": peak / args.prompt,
           "top": [(where, size, size / args.prompt) for where, size in groups.most_common(25)]}
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
