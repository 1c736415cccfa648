"""transformers' grouped_mm MoE block in a prefill, read from the probe of that block alone.

``tests/data/measured/h200-2026-12-02-moe-block.jsonl`` (``lab/measure/moe_block.py`` on the H200: PyTorch
2.11, transformers 5.17) times one MoE layer's feed-forward block, with its kernels' busy time split into grouped
GEMMs and the rest, for 24 random configs (``fit`` / ``check``) and the catalog's three MoE families (``catalog``,
fitted on nothing) at 512, 2,048 and 8,192 tokens. This script reads from the ``fit`` rows what the `hf` profiles'
``grouped_experts`` states, with the estimator's own count of each block's work (`estimator.model.grouped_experts.
expert_work`):

- the grouped GEMMs: their busy time = the hit experts' weights / (peak bandwidth × a) + their FLOPs / (peak × b), a
  and b by grid search (0.02 steps) on the relative error (``gemm_fit``);
- the dispatch: the other kernels' busy time = passes over the pairs' hidden width, their expert width and the
  tokens' hidden width at the profile's bandwidth, plus a time per layer: least squares of the relative error
  (``dispatch_fit``). The block's wall time beside its kernels' is left to the profile's host figures.

    pip install '.[test]'                           # numpy, for the least squares
    python -m lab.fit.grouped_experts                 # the figures and their residuals by split
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

import numpy as np

from estimator import default_catalog
from estimator.catalog.architecture import Architecture
from estimator.catalog.registry import model_from_mapping
from estimator.model.grouped_experts import ExpertWork, expert_work

PROBE = Path(__file__).resolve().parents[2] / "tests" / "data" / "measured" / "h200-2026-12-02-moe-block.jsonl"
PEAK_FLOP_PER_S = 989.4e12  # H200 SXM dense bf16 (specs/gpus/nvidia-h200-sxm.yaml)
PEAK_BYTES_PER_S = 4.8e12
STEPS = tuple(round(0.30 + 0.02 * i, 2) for i in range(36))


def rows_of(path: Path = PROBE) -> list[dict[str, Any]]:
    return [r for r in (json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip())
            if r["kind"] == "moe_block" and "error" not in r]


def arch_of(row: dict[str, Any]) -> Architecture:
    config = {**row["config"], "num_hidden_layers": 1}
    arch = model_from_mapping({"name": row["name"], "config": config}, Path("moe")).arch
    assert arch is not None and arch.moe is not None
    return arch


def work_of(row: dict[str, Any]) -> ExpertWork:
    """One MoE layer's routed work at the row's tokens (a 1-layer build: deepseek's dense first layer left out)."""
    arch = arch_of(row)
    found = expert_work(arch.model_copy(update={"moe_layers": (True,)}), default_catalog().formats.get("bf16"), 1,
                        row["tokens"])
    assert found is not None and found.layers == 1
    return found


def gemm_fit(rows: list[dict[str, Any]]) -> tuple[float, float, dict[str, list[float]]]:
    """(a, b, residuals by split) of grouped GEMM time = weights / (peak bandwidth × a) + FLOPs / (peak × b)."""
    works = {id(r): work_of(r) for r in rows}

    def errors(chosen: list[dict[str, Any]], a: float, b: float) -> list[float]:
        return [(works[id(r)].weight_bytes / (PEAK_BYTES_PER_S * a) + works[id(r)].flops / (PEAK_FLOP_PER_S * b)
                 - r["kernels"]["grouped_gemm_s"]) / r["kernels"]["grouped_gemm_s"] for r in chosen]

    fit = [r for r in rows if r["split"] == "fit"]
    _, a, b = min((sum(e * e for e in errors(fit, a, b)), a, b) for a in STEPS for b in STEPS)
    return a, b, {s: errors([r for r in rows if r["split"] == s], a, b) for s in ("fit", "check", "catalog")}


def dispatch_fit(rows: list[dict[str, Any]], bandwidth_fraction: float) -> tuple[np.ndarray, dict[str, list[float]]]:
    """(pair-hidden, pair-FFN and token-hidden passes and seconds per layer; residuals by split) of the other
    kernels' busy time, 2-byte elements at the profile's bandwidth."""
    rate = PEAK_BYTES_PER_S * bandwidth_fraction / 2

    def design(r: dict[str, Any]) -> list[float]:
        w = work_of(r)
        return [w.pair_hidden / rate, w.pair_ffn / rate, w.token_hidden / rate, 1.0]

    fit = [r for r in rows if r["split"] == "fit"]
    x, y = np.array([design(r) for r in fit]), np.array([r["kernels"]["other_s"] for r in fit])
    coef, *_ = np.linalg.lstsq(x / y[:, None], np.ones(len(y)), rcond=None)
    return coef, {s: [(float(np.array(design(r)) @ coef) - r["kernels"]["other_s"]) / r["kernels"]["other_s"]
                      for r in rows if r["split"] == s] for s in ("fit", "check", "catalog")}


def _line(res: list[float]) -> str:
    return (f"{len(res):3} rows  median |error| {statistics.median(abs(x) for x in res):.1%}  worst "
            f"{max(res, key=abs):+.1%}")


def main() -> None:
    rows = rows_of()
    a, b, residuals = gemm_fit(rows)
    print(f"grouped GEMMs: weights at {a:.2f} of the bandwidth, then FLOPs at {b:.2f} of the peak")
    for split, res in residuals.items():
        print(f"  {split:7} {_line(res)}")
    hf = default_catalog().profiles.get("hf")
    coef, residuals = dispatch_fit(rows, hf.bandwidth_efficiency)
    print(f"dispatch: {coef[0]:.1f} passes per pair x hidden, {coef[1]:.1f} per pair x expert width, {coef[2]:.1f} "
          f"per token x hidden, {coef[3] * 1e6:.1f} us per layer")
    for split, res in residuals.items():
        print(f"  {split:7} {_line(res)}")


if __name__ == "__main__":
    main()
