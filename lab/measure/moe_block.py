"""One MoE layer's feed-forward block of transformers alone, in a prefill.

The catalog's MoE prefills read 21–57% low (docs/accuracy.md): transformers 5.17 runs routed experts as
``grouped_mm_experts_forward`` (sort the token–expert pairs, gather, a grouped GEMM up, the gate, a grouped GEMM down,
weight, un-permute, sum), which the time model counts as dense GEMMs at the dense rate. This script times that block
by itself: the model's own MoE module, built from a config with random bf16 weights on the GPU, called on random
hidden states of ``tokens`` rows (one prefill's batch × prompt), eager as a prefill runs it:

- ``kind=moe_block``: the block's forward (CUDA events, median of 10 after 3 warm-ups), its kernels' busy time split
  into grouped GEMMs, other GEMMs (the router, shared experts) and the rest (torch.profiler's CUDA activity), and the
  experts implementation transformers chose.
- ``kind=device``: the versions and the SM count.

Random configs (the ``qwen3_moe`` family: router, top-k, grouped experts) are ``fit`` or ``check`` alternately; the
catalog's three MoE families are measured as ``split: catalog`` and fit nothing: their full-model prefills in
``tests/data/measured`` judge what is read from here. Needs torch and transformers:

    python -m lab.measure.moe_block --out moe.jsonl [--seed 10] [--count 24] [--tiny]
"""

from __future__ import annotations

import argparse
import functools
import json
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import torch

from lab.measure import needs_torch  # noqa: F401  (one line, not a traceback, without PyTorch)

ROOT = Path(__file__).resolve().parents[2]
CATALOG = {"qwen3-30b-a3b": 1, "mixtral-8x7b": 1, "deepseek-v2-lite": 2}  # model → layers built (its first MoE last)
TOKENS = (512, 2048, 8192)
MAX_EXPERT_BYTES = 8 * 2**30


def device() -> str:
    return "cuda" if torch.cuda.is_available() else "cpu"


def catalog_config(name: str) -> dict[str, Any]:
    import yaml

    spec = yaml.safe_load((ROOT / "specs" / "models" / f"{name}.yaml").read_text(encoding="utf-8"))
    return dict(spec["config"])


def random_config(rng: random.Random) -> dict[str, Any]:
    while True:
        experts, k = rng.choice((8, 16, 32, 64, 128, 256)), rng.choice((1, 2, 4, 6, 8))
        hidden, ffn = rng.choice((1024, 1536, 2048, 3072, 4096)), rng.choice((256, 512, 768, 1024, 1408, 2048, 4096))
        if k <= experts and 3 * experts * hidden * ffn * 2 <= MAX_EXPERT_BYTES:
            return {"model_type": "qwen3_moe", "hidden_size": hidden, "moe_intermediate_size": ffn,
                    "intermediate_size": ffn, "num_experts": experts, "num_experts_per_tok": k,
                    "num_hidden_layers": 1, "num_attention_heads": 8, "num_key_value_heads": 8, "head_dim": 64,
                    "vocab_size": 1024, "norm_topk_prob": True, "decoder_sparse_step": 1, "mlp_only_layers": []}


def moe_module(config: dict[str, Any], layers: int) -> tuple[Any, str]:
    """The last built layer's MoE block of ``config`` (random bf16 weights on the device) and the experts
    implementation transformers set."""
    from transformers import AutoConfig, AutoModelForCausalLM

    fields = {k: v for k, v in config.items() if k != "model_type"}
    fields.update(num_hidden_layers=layers, vocab_size=min(int(fields.get("vocab_size", 1024)), 1024))
    cfg = AutoConfig.for_model(config["model_type"], **fields)
    with torch.device(device()):
        model = AutoModelForCausalLM.from_config(cfg, torch_dtype=torch.bfloat16)
    block = model.model.layers[layers - 1].mlp
    assert hasattr(block, "experts") or hasattr(block, "gate"), type(block).__name__
    return block.eval(), str(getattr(model.config, "_experts_implementation", None))


def timed(fn: Any, reps: int = 10) -> dict[str, float]:
    for _ in range(3):
        fn()
    times = []
    for _ in range(reps):
        if device() == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) / 1e3)
        else:
            begin = time.perf_counter()
            fn()
            times.append(time.perf_counter() - begin)
    return {"median_s": statistics.median(times), "min_s": min(times)}


def kernel_split(fn: Any) -> dict[str, Any]:
    """Busy time of one call's kernels: grouped GEMMs, other GEMMs, the rest (empty on the CPU)."""
    if device() == "cpu":
        return {}
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    split = {"grouped_gemm_s": 0.0, "gemm_s": 0.0, "other_s": 0.0, "grouped_kernels": []}
    for event in prof.events():
        if event.device_type != torch.autograd.DeviceType.CUDA:
            continue
        name, dur = event.name.lower(), event.device_time / 1e6
        if "group" in name and ("gemm" in name or "mm" in name):
            split["grouped_gemm_s"] += dur
            if event.name[:120] not in split["grouped_kernels"]:
                split["grouped_kernels"].append(event.name[:120])
        elif "gemm" in name or "sm90_xmma" in name or "cutlass" in name:
            split["gemm_s"] += dur
        else:
            split["other_s"] += dur
    return split


def block_row(config: dict[str, Any], layers: int, tokens: int) -> dict[str, Any]:
    block, implementation = moe_module(config, layers)
    x = torch.randn(1, tokens, config["hidden_size"], device=device(), dtype=torch.bfloat16)
    call = functools.partial(block, x)
    with torch.inference_mode():
        row = {"kind": "moe_block", "model_type": config["model_type"], "tokens": tokens,
               "experts_implementation": implementation, "time": timed(call), "kernels": kernel_split(call)}
    del call, block, x
    if device() == "cuda":
        torch.cuda.empty_cache()
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True)
    parser.add_argument("--seed", type=int, default=10)
    parser.add_argument("--count", type=int, default=24)
    parser.add_argument("--tiny", action="store_true")
    args = parser.parse_args()
    import transformers

    rng = random.Random(args.seed)
    cases: list[tuple[str, str, dict[str, Any], int]] = [("catalog", m, catalog_config(m), n)
                                                         for m, n in CATALOG.items()]
    cases += [("fit" if i % 2 == 0 else "check", f"moe-{i:02d}", random_config(rng), 1) for i in range(args.count)]
    with open(args.out, "w", encoding="utf-8") as out:
        props = torch.cuda.get_device_properties(0) if device() == "cuda" else None
        out.write(json.dumps({"kind": "device", "torch": torch.__version__, "transformers": transformers.__version__,
                              "name": props.name if props else "cpu", "seed": args.seed,
                              "sm_count": props.multi_processor_count if props else None}) + "\n")
        for split, name, config, layers in cases[:4] if args.tiny else cases:
            for tokens in (64,) if args.tiny else TOKENS:
                small = {**config, "hidden_size": 256, "moe_intermediate_size": 128, "intermediate_size": 256,
                         "num_experts": min(int(config.get("num_experts", config.get("num_local_experts", 8))), 8),
                         "n_routed_experts": 8, "num_local_experts": 8} if args.tiny else config
                base = {"split": split, "name": name, "config": small}
                try:
                    out.write(json.dumps({**base, **block_row(small, layers, tokens)}) + "\n")
                except Exception as error:  # one case's failure (memory) must not end the call
                    out.write(json.dumps({**base, "kind": "moe_block", "tokens": tokens,
                                          "error": f"{type(error).__name__}: {str(error)[:200]}"}) + "\n")
                out.flush()
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
