"""Training steps under autocast with full recomputation: random small architectures of seed 13
on many tokens, where the forward and backward (not the optimizer step) set the steady peak, so that whether the
layers' bf16 copies are held at backward's start shows; each in the reference ``kind=train`` format
(`estimator.live.measure.measure_train`).

    python -m lab.measure.amp_recompute --out FILE.jsonl [--count 8]
    python -m lab.measure.amp_recompute --out /tmp/x.jsonl --tiny     # the same code on the CPU

Drawn after the rule for autocast's copies was committed, to judge it: nothing is fitted on these rows.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from estimator.live import device, measure
from lab.measure import needs_torch  # noqa: F401  (one line, not a traceback, without PyTorch)
from lab.measure.random_architectures import random_config, tiny_config

FAMILIES = ("llama", "qwen2", "gemma2", "qwen3")
# (batch, seq): enough tokens that the loss gradients outweigh an amp optimizer step's temporaries
SHAPES = ((4, 2048), (8, 1024), (2, 4096), (8, 2048))


def cases(seed: int, count: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    out = []
    for index in range(count):
        family = FAMILIES[index % len(FAMILIES)]
        hidden = 128 * rng.randint(5, 16)
        config = random_config(rng, family, hidden, rng.randint(4, 20))
        batch, seq = SHAPES[index % len(SHAPES)]
        out.append({"name": f"amp-ckpt-{index:02d}", "config": config, "batch": batch, "seq": seq})
    return out


def positive(text: str) -> int:
    """--count: a positive whole number."""
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"a positive whole number, got {text!r}")
    return int(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--count", type=positive, default=8)
    parser.add_argument("--tiny", action="store_true", help="CPU dry run at toy sizes")
    args = parser.parse_args()
    if args.tiny:
        device.dry_run_on_cpu()
    with args.out.open("w", encoding="utf-8") as out:
        for case in cases(args.seed, 2 if args.tiny else args.count):
            config = tiny_config(case["config"]) if args.tiny else case["config"]
            try:
                row = measure.measure_train(config, mode="amp", batch=case["batch"], seq=case["seq"],
                                            checkpointing=True)
            except Exception as error:  # one case's failure is a row, the rest still run
                row = {"kind": "train", "error": measure._why(error)}
            row.update(model=case["name"], config=config, seed=args.seed)
            out.write(json.dumps(row) + "\n")
            out.flush()
            print(json.dumps({k: row.get(k) for k in ("model", "batch", "seq", "steady_peak", "error")}), flush=True)
            device.free_memory()


if __name__ == "__main__":
    main()
