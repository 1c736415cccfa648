"""The rate of PyTorch's non-vectorized elementwise kernels, read from the probe of
lab/measure/elementwise_paths.py (tests/data/measured/h200-2026-12-02-elementwise-paths.jsonl, the H200).

TensorIterator's generic kernels (``elementwise_kernel`` for strided or broadcast operands, ``unrolled_elementwise_
kernel`` for a cast to a wider type) process a fixed number of output elements per second whatever the dtype, far
below what the bandwidth would allow; the vectorized kernels run at the bandwidth. The rate is the median over the
probe's strided and cast rows of 2,048 tokens and more (smaller ones hold a kernel's fixed time) of output elements ÷
time; each row's output elements are counted as lab/measure/count_elementwise.py counts them (rotate_half is a negation
over half the heads' width and a concatenation over all of it):

    python -m lab.fit.strided_elements_per_s
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

DATA = (Path(__file__).resolve().parents[2] / "tests" / "data" / "measured"
        / "h200-2026-12-02-elementwise-paths.jsonl")
ELEMENTS_PER_OUTPUT = {"rotate_half": 1.5}  # neg over half the width, then cat over all of it
MIN_TOKENS = 2048


def rows(path: Path = DATA) -> list[dict[str, Any]]:
    found = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [r for r in found if r["kind"] == "path"]


def elements(row: dict[str, Any]) -> float:
    return row["tokens"] * row["width"] * ELEMENTS_PER_OUTPUT.get(row["op"], 1.0)


def is_strided(row: dict[str, Any]) -> bool:
    """The non-vectorized rows: strided ones, and casts that ran the unrolled kernel (16-bit to fp32)."""
    return row["path"] == "strided" or (row["path"] == "cast" and "unrolled" in row["kernels"][0])


def rate(measured: list[dict[str, Any]]) -> float:
    """Output elements per second of the non-vectorized kernels: the median over the rows of MIN_TOKENS and more."""
    return statistics.median(elements(r) / r["time"]["median_s"] for r in measured
                             if is_strided(r) and r["tokens"] >= MIN_TOKENS)


def main() -> None:
    measured = rows()
    found = rate(measured)
    print(f"non-vectorized elementwise kernels: {found:.3g} output elements/s (median of "
          f"{sum(is_strided(r) and r['tokens'] >= MIN_TOKENS for r in measured)} rows)")
    for r in measured:
        kind = "strided" if is_strided(r) else "vectorized"
        per_s = elements(r) / r["time"]["median_s"]
        print(f"  {kind:10} {r['op']:12} {r['dtype']:5} {r['tokens']:6}  {per_s:.3g} elements/s  "
              f"{r['bytes'] / r['time']['median_s'] / 1e12:.2f} TB/s")


if __name__ == "__main__":
    main()
