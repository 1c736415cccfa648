"""Check the `hf` profiles' ``eager_ops_per_layer`` and ``eager_ops_outside_layers`` against the counts they come
from: lab/measure/count_eager_ops.py's CPU count (tests/data/measured/eager-ops-cpu.json), which must give the five
families the H200 rows counted (tests/data/measured/random) exactly as those rows did.

    python -m lab.fit.eager_ops_per_layer      # how many of the GPU-counted numbers the CPU count matches
"""

from __future__ import annotations

import json
from pathlib import Path

from estimator import default_catalog

MEASURED = Path(__file__).resolve().parents[2] / "tests" / "data" / "measured"
COUNTS = MEASURED / "eager-ops-cpu.json"
GPU_COUNTED = ("llama", "qwen2", "mistral", "gemma2", "gpt2")  # counted on the H200 (tests/data/measured/random)


def counted() -> dict[str, dict[str, list[float]]]:
    return dict(json.loads(COUNTS.read_text(encoding="utf-8"))["families"])


def cpu_matches_gpu() -> tuple[int, int]:
    """(numbers the CPU count gives exactly as the H200 rows did, numbers compared) over the five GPU-counted
    families: each family's three per-layer and two outside counts."""
    hf = default_catalog().profiles.get("hf")
    found = counted()
    pairs = [(a, b) for family in GPU_COUNTED
             for a, b in zip([*found[family]["per_layer"], *found[family]["outside"]],
                             [*hf.eager_ops_per_layer[family], *hf.eager_ops_outside_layers[family]], strict=True)]
    return sum(a == b for a, b in pairs), len(pairs)


def main() -> None:
    same, compared = cpu_matches_gpu()
    print(f"the CPU count gives {same} of {compared} GPU-counted numbers exactly")


if __name__ == "__main__":
    main()
