"""Sweep speed: evaluate a 1,000,000-point grid and write it as CSV, and print both rates (targets: ≥ 1,000,000
configurations/s evaluated on one core, a million-row CSV in ≤ 10 s).

Run from the repository root:  python -m lab.speed.sweep_speed [--csv OUT.csv]
Grid: 2 models × 2 GPUs × 2 dtypes (8 combinations) × 250 batches × 50 prompt lengths × 10 output lengths.
A 100-point sweep runs first so that imports and first-call set-up are not timed. Evaluation (every number of every
row, in numpy columns) is timed apart from writing the CSV (to OUT.csv, default a temporary file, removed after).
Also times a 4× smaller grid to show the cost grows linearly. Wall and CPU seconds are both printed: on a shared
machine the CPU seconds are the single-core cost, the wall seconds include waiting for the core.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from estimator.catalog.registry import default_catalog
from estimator.inference.workload import InferenceWorkload
from estimator.planning.sweep import sweep
from estimator.render.formats import write_csv


def measure(csv: Path | None) -> dict[str, float]:
    """Print the evaluation and CSV figures; return the full grid's rates and the CSV's seconds."""
    catalog = default_catalog()
    items = []
    for model, tp in (("llama-3.1-8b", 1), ("llama-3.1-70b", 4)):
        for gpu in ("h100", "a100"):
            for dtype in ("bf16", "fp8"):
                w = InferenceWorkload(weight_format=catalog.formats.get(dtype), kv_format=catalog.formats.get("bf16"),
                                      profile=catalog.profiles.get("optimized"), tensor_parallel=tp)
                items.append((catalog.model(model), catalog.gpus.get(gpu), w, gpu))
    batches = list(range(1, 251))
    prompts = list(range(512, 512 * 51, 512))
    outputs = [128 * 2**k for k in range(10)]
    sweep(items, batches[:10], prompts[:10], outputs[:1])  # warm-up: imports, spec validation, first calls
    figures: dict[str, float] = {}
    for label, grid_items in (("1/4 grid", items[:2]), ("full grid", items)):
        start, cpu = time.perf_counter(), time.process_time()
        result = sweep(grid_items, batches, prompts, outputs)
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
        print(f"{label}: {result.size:,} configurations evaluated in {seconds:.2f} s wall, {cpu:.2f} s CPU = "
              f"{result.size / seconds:,.0f} configurations/s wall, {result.size / cpu:,.0f} per CPU second (one core)")
        figures.update(per_wall_s=result.size / seconds, per_cpu_s=result.size / cpu)
    with tempfile.TemporaryDirectory() as scratch:
        path = csv or Path(scratch) / "sweep.csv"
        start, cpu = time.perf_counter(), time.process_time()
        with path.open("w", encoding="utf-8", newline="") as handle:
            write_csv(result.keys, result, handle)
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
        print(f"CSV: {result.size:,} rows × {len(result.keys)} columns written in {seconds:.1f} s wall, {cpu:.1f} s CPU"
              f" = {result.size / seconds:,.0f} rows/s ({path.stat().st_size / 1e9:.2f} GB)")
        figures.update(csv_wall_s=seconds, csv_cpu_s=cpu)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--csv", type=Path, help="write the rows to this CSV file (default: a temporary file)")
    measure(parser.parse_args().csv)


if __name__ == "__main__":
    main()
