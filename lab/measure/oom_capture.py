"""Provoke real CUDA out-of-memory errors with random-weight models, keep what PyTorch said, and run the change that
`estimator oom` ranks first to show that it fits. Run on a GPU (the captures in tests/data/oom/ came from an H200):

    python -m lab.measure.oom_capture --out DIR            # every scenario, then DIR/oom-captures.tar.gz
    python -m lab.measure.oom_capture --check              # no GPU: build each model on the meta device

For each scenario it writes NAME.message.txt (str of the torch.OutOfMemoryError), NAME.summary.txt
(torch.cuda.memory_summary() inside the except block, while the failed step's tensors are still alive),
NAME.nvidia-smi.txt, NAME.snapshot.pickle (torch.cuda.memory._dump_snapshot, history recorded from just before
the failing phase) and NAME.json: the workload as `estimator` options, the change that was run, and what that
run allocated. Each scenario and each fix runs in a fresh process, so one's cache does not shape the next and
PYTORCH_CUDA_ALLOC_CONF can be set before CUDA starts.

The models are built from the catalog's config (specs/models/NAME.yaml) with random weights; nothing is
downloaded. Needs torch, transformers and PyYAML.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

SPECS = Path(__file__).resolve().parents[2] / "specs" / "models"
GIB = 1 << 30

# Each scenario: how the job runs, the same job as `estimator oom` options, and the change the tool ranks first
# (tests/live/test_oom_captures.py checks that the tool still ranks it first).
SCENARIOS: dict[str, dict[str, Any]] = {
    "batch": {"model": "llama-3.2-1b", "job": "infer", "batch": 1024, "prompt": 2048, "logits": "last",
              "fix": {"batch": 512}},
    "logits": {"model": "llama-3.2-1b", "job": "infer", "batch": 256, "prompt": 2048, "logits": "all",
               "fix": {"logits": "last"}},
    "eager-attention": {"model": "llama-3.2-1b", "job": "train", "batch": 2, "seq": 4096, "attention": "eager",
                        "optimizer": "adamw", "fix": {"attention": "sdpa"}},
    "optimizer-step": {"model": "llama-3.1-8b", "job": "train", "batch": 1, "seq": 512, "attention": "sdpa",
                       "optimizer": "adamw", "fix": {"optimizer": "adamw-fused"}},
    "fragmentation": {"model": "llama-3.2-1b", "job": "fragment", "batch": 64, "prompt": 4096, "logits": "last",
                      "fix": {"env": "expandable_segments:True"}},
}


def estimator_args(s: dict[str, Any]) -> list[str]:
    """The scenario's job as `estimator estimate` / `estimator oom` options."""
    args = ["--model", s["model"], "--gpu", "h200", "--profile", "hf", "--batch", str(s["batch"])]
    if s["job"] == "train":
        return [*args, "--mode", "train", "--seq-len", str(s["seq"]), "--attention", s["attention"],
                "--optimizer", s["optimizer"]]
    return [*args, "--prompt-tokens", str(s["prompt"]), "--logits", s["logits"]]


def build(name: str, *, attention: str = "sdpa", dtype: str = "bfloat16", device: str = "cuda") -> Any:
    import torch
    import yaml
    from transformers import AutoConfig, AutoModelForCausalLM

    raw = yaml.safe_load((SPECS / f"{name}.yaml").read_text())["config"]
    fields = {k: v for k, v in raw.items() if k not in ("model_type", "transformers_version", "_name_or_path")}
    cfg = AutoConfig.for_model(raw["model_type"], **fields)
    with torch.device(device):
        return AutoModelForCausalLM.from_config(cfg, dtype=getattr(torch, dtype),
                                                attn_implementation=attention), cfg


def record(torch: Any) -> None:
    torch.cuda.memory._record_memory_history(max_entries=2000, stacks="python")


def infer(s: dict[str, Any]) -> None:
    import torch

    model, cfg = build(s["model"])
    model.eval()
    ids = torch.randint(0, cfg.vocab_size, (s["batch"], s["prompt"]), device="cuda")
    record(torch)
    with torch.no_grad():
        model(ids, logits_to_keep=1 if s["logits"] == "last" else 0, use_cache=True)


def train(s: dict[str, Any], steps: int = 2) -> None:
    """amp-bf16 training as `estimate --mode train` assumes: fp32 weights, autocast, zero_grad(set_to_none)."""
    import torch

    model, cfg = build(s["model"], attention=s["attention"], dtype="float32")
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5, fused=s["optimizer"] == "adamw-fused",
                            foreach=None if s["optimizer"] == "adamw-fused" else True)
    ids = torch.randint(0, cfg.vocab_size, (s["batch"], s["seq"]), device="cuda")
    record(torch)
    for _ in range(steps):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)


def fragment(s: dict[str, Any]) -> None:
    """A job that fits on its own, after a program kept tensors of varying shapes and let every other one go.

    First 8 GiB blocks fill the card down to 3 GiB free and are freed (the allocator keeps their segments). Then
    logits-shaped tensors of one sequence each (positions × vocab, bf16) of varying lengths, 1 to 2 GiB, are
    carved from those segments and every other one is dropped: the holes are each smaller than a 4 GiB MLP
    intermediate, and no segment is wholly free, so emptying the cache returns nothing.
    """
    import torch

    model, cfg = build(s["model"])
    model.eval()
    ids = torch.randint(0, cfg.vocab_size, (s["batch"], s["prompt"]), device="cuda")
    blocks = []
    while torch.cuda.mem_get_info()[0] > 12 * GIB:
        blocks.append(torch.empty(8 * GIB, dtype=torch.uint8, device="cuda"))
    last = (torch.cuda.mem_get_info()[0] - 3 * GIB) // (2 << 20) * (2 << 20)  # leave 3 GiB: under one 4 GiB tensor
    if last > 0:
        blocks.append(torch.empty(last, dtype=torch.uint8, device="cuda"))
    del blocks
    kept, i = [], 0
    reserved = torch.cuda.memory_reserved()
    while True:
        positions = 4096 + (i * 2731) % 4096
        kept.append(torch.empty(positions, cfg.vocab_size, dtype=torch.bfloat16, device="cuda"))
        i += 1
        if torch.cuda.memory_reserved() > reserved:  # the last one needed a new segment: drop it, stop
            kept.pop()
            break
    kept = kept[::2]
    torch.cuda.empty_cache()
    record(torch)
    with torch.no_grad():
        model(ids, logits_to_keep=1, use_cache=True)
    del kept


def apply_fix(s: dict[str, Any]) -> dict[str, Any]:
    return {**s, **{k: v for k, v in s["fix"].items() if k != "env"}}


def run_one(name: str, fixed: bool, out: Path) -> int:
    """One scenario (or its fix) in this process; the OOM's message, summary, nvidia-smi and snapshot to ``out``."""
    import torch

    s = SCENARIOS[name]
    job = apply_fix(s) if fixed else s
    runner = {"infer": infer, "train": train, "fragment": fragment}[s["job"]]
    tag = f"{name}.fix" if fixed else name
    try:
        runner(job)
    except torch.OutOfMemoryError as error:
        (out / f"{tag}.message.txt").write_text(str(error) + "\n")
        (out / f"{tag}.summary.txt").write_text(torch.cuda.memory_summary())
        smi = subprocess.run(["nvidia-smi"], capture_output=True, text=True, check=False)
        (out / f"{tag}.nvidia-smi.txt").write_text(smi.stdout + smi.stderr)
        torch.cuda.memory._dump_snapshot(str(out / f"{tag}.snapshot.pickle"))
        result = {"oom": True, "message": str(error).splitlines()[0]}
    else:
        result = {"oom": False}
    result |= {"peak_allocated_bytes": torch.cuda.max_memory_allocated(),
               "peak_reserved_bytes": torch.cuda.max_memory_reserved()}
    (out / f"{tag}.result.json").write_text(json.dumps(result) + "\n")
    print(tag, json.dumps(result), flush=True)
    return 0


def run_all(out: Path, names: list[str]) -> None:
    import torch
    import transformers

    out.mkdir(parents=True, exist_ok=True)
    for name in names:
        s = SCENARIOS[name]
        outcome = {}
        for fixed in (False, True):
            env = dict(os.environ)
            if fixed and "env" in s["fix"]:
                env["PYTORCH_CUDA_ALLOC_CONF"] = s["fix"]["env"]
            cmd = [sys.executable, __file__, "--one", name, "--out", str(out)] + (["--fixed"] if fixed else [])
            try:
                subprocess.run(cmd, env=env, check=False, timeout=150)
            except subprocess.TimeoutExpired:
                print(name, "fix" if fixed else "", "ran past 150 s", flush=True)
            tag = f"{name}.fix" if fixed else name
            path = out / f"{tag}.result.json"
            outcome["fix_run" if fixed else "run"] = json.loads(path.read_text()) if path.exists() else None
            path.unlink(missing_ok=True)
        meta = {"scenario": name, "estimator_args": estimator_args(s), "fix": s["fix"],
                "fixed_estimator_args": estimator_args(apply_fix(s)), **outcome,
                "torch": torch.__version__, "transformers": transformers.__version__,
                "device": torch.cuda.get_device_name(0)}
        (out / f"{name}.json").write_text(json.dumps(meta, indent=1) + "\n")
    with tarfile.open(out / "oom-captures.tar.gz", "w:gz") as tar:
        for path in sorted(out.iterdir()):
            if path.name != "oom-captures.tar.gz":
                tar.add(path, arcname=path.name)
                path.unlink()


def check() -> None:
    """No GPU: every scenario's model builds on the meta device from the catalog's config."""
    for name, s in SCENARIOS.items():
        model, _ = build(s["model"], device="meta")
        print(name, s["model"], sum(p.numel() for p in model.parameters()), estimator_args(s),
              estimator_args(apply_fix(s)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path)
    parser.add_argument("--only", nargs="*", choices=sorted(SCENARIOS), default=sorted(SCENARIOS))
    parser.add_argument("--one", choices=sorted(SCENARIOS), help=argparse.SUPPRESS)
    parser.add_argument("--fixed", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    if args.check:
        check()
    elif args.one:
        raise SystemExit(run_one(args.one, args.fixed, args.out))
    elif args.out is None:
        parser.error("--out DIR is required")
    else:
        run_all(args.out, args.only)


if __name__ == "__main__":
    main()
