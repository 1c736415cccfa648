"""The prefills traced on the CPU (tests/data/measured/peak-traces/cpu-live-sets.jsonl, lab/measure/live_set_cpu.py)
run again on a GPU, built the same way (2 layers, random weights), recording both what the caching allocator's blocks
hold at the peak (``peak_minus_before``) and what the tensors requested (``requested_peak_minus_before``, before the
allocator's rounding): whether the GPU's live set is the traced one, and how much the blocks add.

    python -m lab.measure.peak_checks --out /tmp/peak-checks.jsonl
    python -m lab.measure.peak_checks --out /tmp/x.jsonl --cpu    # the code path on the CPU (reads 0 bytes)

Each row: the trace's config, layers, dtype, batch, prompt and ``traced`` activation, beside measure_prefill's row.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from estimator.live import measure

TRACES = Path(__file__).resolve().parents[2] / "tests" / "data" / "measured" / "peak-traces" / "cpu-live-sets.jsonl"


def cases() -> list[dict[str, Any]]:
    return [json.loads(line) for line in TRACES.read_text(encoding="utf-8").splitlines() if line.strip()]


def run(out: Path) -> None:
    with out.open("w", encoding="utf-8") as handle:
        for case in cases():
            config = {**case["config"], "num_hidden_layers": case["layers"]}
            base = {"config": case["config"], "layers": case["layers"], "dtype": case["dtype"],
                    "batch": case["batch"], "prompt": case["prompt"], "logits_to_keep": case["logits_to_keep"],
                    "traced": case["activation"]}
            try:
                model, _ = measure.measure_load(config, case["dtype"])
                row = measure.measure_prefill(model, case["batch"], case["prompt"], case["logits_to_keep"],
                                              latency=False)
                del model
                measure.free_memory()
                handle.write(json.dumps({**base, **row}) + "\n")
            except Exception as error:  # one case's failure is recorded, the others still run
                handle.write(json.dumps({**base, "error": f"{type(error).__name__}: {str(error)[:200]}"}) + "\n")
            handle.flush()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--cpu", action="store_true", help="dry run on the CPU")
    args = parser.parse_args()
    if args.cpu:
        measure.dry_run_on_cpu()
    run(args.out)


if __name__ == "__main__":
    main()
