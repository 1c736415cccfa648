"""Fit and check the GEMM rooflines (`estimator.model.gemms`, the `hf` profiles' ``gemm`` for 16-bit and
``fp32_gemm``) on the GEMMs measured alone (
tests/data/measured/h200-2026-12-02-prefill-gemm.jsonl, from lab/measure/prefill_gemm.py).

Each row is timed by the estimator's own `gemms_s` on the H200's datasheet peaks (989.4 TFLOP/s dense bf16 and fp16,
66.9 TFLOP/s fp32, 4.8 TB/s); bf16 and fp16 rows are fitted together (the same tensor cores). A
grid over the kernel's fixed time, the FLOP share and the bandwidth share picks the triple with the least median
|error| over the ``fit`` rows (even widths and head dims; the mean of the linear rows' and the batched rows'
medians); the ``check`` rows (the others) are judged with it:

    python -m lab.fit.gemm            # per dtype class: the fit, then fit and check by kind
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from estimator.catalog.profiles import GemmRoofline
from estimator.model.gemms import Gemm, gemms_s

DATA = Path(__file__).resolve().parents[2] / "tests" / "data" / "measured" / "h200-2026-12-02-prefill-gemm.jsonl"
FP32_PEAK, BANDWIDTH = 66.9e12, 4.8e12  # specs/gpus/h200.yaml: fp32 (non-tensor) peak, HBM3e bandwidth
HALF_PEAK = 989.4e12  # specs/gpus/h200.yaml: dense bf16 / fp16 tensor-core peak
CLASSES = {"fp32": ("fp32",), "16-bit": ("bf16", "fp16")}
KERNEL_S = tuple(i * 0.5e-6 for i in range(17))
FLOP_EFFICIENCY = tuple(round(0.50 + 0.01 * i, 2) for i in range(51))
BANDWIDTH_EFFICIENCY = tuple(round(0.10 + 0.05 * i, 2) for i in range(19))


def rows(path: Path = DATA, dtypes: tuple[str, ...] = ("fp32",)) -> list[dict[str, Any]]:
    found = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [r for r in found if r["kind"] in ("linear", "bmm") and r["dtype"] in dtypes]


def gemm_of(row: dict[str, Any]) -> Gemm:
    if row["kind"] == "linear":
        return Gemm(row["rows"], row["in"], row["out"], 1)
    seq, dim = row["seq"], row["head_dim"]
    return Gemm(seq, dim, seq, 1, row["pairs"]) if row["gemm"] == "scores" else Gemm(seq, seq, dim, 1, row["pairs"])


def errors(measured: list[dict[str, Any]], spec: GemmRoofline) -> list[float]:
    return [gemms_s((gemm_of(r),), spec, *((FP32_PEAK, BANDWIDTH, 4) if r["dtype"] == "fp32" else
                                           (HALF_PEAK, BANDWIDTH, 2))) / r["time"]["median_s"] - 1 for r in measured]


def median_abs(values: list[float]) -> float:
    return statistics.median(abs(v) for v in values)


def fit(measured: list[dict[str, Any]]) -> GemmRoofline:
    """The grid's triple with the least mean of the two kinds' median |error| over ``measured`` (each kind counts
    alike, however many rows it has; ties: the first)."""
    kinds = [[r for r in measured if r["kind"] == kind] for kind in ("linear", "bmm")]
    best: tuple[float, GemmRoofline] | None = None
    for kernel_s in KERNEL_S:
        for flop in FLOP_EFFICIENCY:
            for band in BANDWIDTH_EFFICIENCY:
                spec = GemmRoofline(kernel_s=kernel_s, flop_efficiency=flop, bandwidth_efficiency=band)
                score = statistics.mean(median_abs(errors(rows, spec)) for rows in kinds if rows)
                if best is None or score < best[0]:
                    best = (score, spec)
    assert best is not None
    return best[1]


def summary(measured: list[dict[str, Any]], spec: GemmRoofline) -> str:
    errs = errors(measured, spec)
    ranked = sorted(abs(e) for e in errs)
    return (f"{len(errs)} rows, median |error| {100 * ranked[len(ranked) // 2]:.1f}%, 90th percentile "
            f"{100 * ranked[int(0.9 * len(ranked))]:.1f}%, worst {100 * max(errs, key=abs):+.1f}%")


def main() -> None:
    for name, dtypes in CLASSES.items():
        measured = rows(dtypes=dtypes)
        spec = fit([r for r in measured if r["split"] == "fit"])
        print(f"{name} GEMM roofline: kernel_s {spec.kernel_s:.2e}, flop_efficiency {spec.flop_efficiency}, "
              f"bandwidth_efficiency {spec.bandwidth_efficiency}")
        for split in ("fit", "check"):
            for kind in ("linear", "bmm"):
                chosen = [r for r in measured if r["split"] == split and r["kind"] == kind]
                if chosen:
                    print(f"  {split:5} {kind:6} {summary(chosen, spec)}")


if __name__ == "__main__":
    main()
