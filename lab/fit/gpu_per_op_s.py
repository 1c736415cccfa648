"""Fit the `hf-graph` profile's ``gpu_per_op_s``: the CUDA-graph decode's fixed GPU cost, counted per operation the
host would have dispatched, from the random graph decodes of tests/data/measured/random (seed 0's `fit` rows).

The median over the fit rows of (graph time − the profile's GPU terms) ÷ the step's counted operations. Beside it,
the rule with a per-layer cost as well (``PER_OP_WITH_LAYER_S`` and the profile's per-layer figure, ``with_layer_s``),
which a least-squares fit of both terms (``both_terms``) shows the rows do not hold.

    python -m lab.fit.gpu_per_op_s      # the fitted figure beside the shipped one
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from estimator import default_catalog
from estimator.catalog.registry import Catalog
from lab.accuracy import random_points as rp

PER_OP_WITH_LAYER_S = 1.43e-6  # the cost per operation a fit beside the per-layer cost gives
TERM = "decode hf-graph"


@dataclass(frozen=True)
class GraphDecode:
    split: str
    family: str
    fp32: bool
    seed: int
    batch: int
    layers: int
    ops: float  # the step's counted operations (the layers' and those outside them)
    layer_ops: float  # the layers' alone, which the rule with a per-layer cost counts
    base_s: float  # the prediction without any fixed cost
    per_layer_s: float  # the per-layer figure the profile carried (41 µs, or the calibration's lean reading)
    after_s: float  # the shipped prediction
    measured_s: float

    @property
    def with_layer_s(self) -> float:
        return self.base_s + self.layers * self.per_layer_s + self.layer_ops * PER_OP_WITH_LAYER_S


def _tweaked(profiles: rp.Profiles, update: dict[str, Any]) -> rp.Profiles:
    return lambda name: profiles(name).model_copy(update=update) if name == "hf-graph" else profiles(name)


def _decode_s(catalog: Catalog, row: dict[str, Any], profiles: rp.Profiles) -> float:
    report = rp._inference(catalog, rp.model_of(row), row, "hf-graph", row["batch"], row["context"], 1,
                           profiles=profiles)
    return float(report.time.decode_step_s)


def _one(catalog: Catalog, row: dict[str, Any], profiles: rp.Profiles, split: str) -> GraphDecode:
    base = _decode_s(catalog, row, _tweaked(profiles, {"gpu_per_op_s": 0.0, "per_layer_step_s": 0.0}))
    unit = _decode_s(catalog, row, _tweaked(profiles, {"gpu_per_op_s": 1e-6, "per_layer_step_s": 0.0}))
    layers_only = _decode_s(catalog, row, _tweaked(profiles, {"gpu_per_op_s": 1e-6, "per_layer_step_s": 0.0,
                                                               "eager_ops_outside_layers": {},
                                                               "eager_ops_per_math_layer": 0}))
    arch = rp.model_of(row).arch
    assert arch is not None
    return GraphDecode(split, arch.model_type, row["dtype"] == "fp32", row.get("seed", 0), row["batch"],
                       arch.num_layers,
                       round((unit - base) / 1e-6), round((layers_only - base) / 1e-6), base,
                       profiles("hf-graph").per_layer_step_s,
                       _decode_s(catalog, row, profiles), row["graph"]["median_s"])


def graph_decodes(data: Path = rp.DATA) -> list[GraphDecode]:
    """Every graph decode of the random rows, a calibrated seed's twice (shipped, then its call's calibration)."""
    catalog = default_catalog()
    shipped: rp.Profiles = catalog.profiles.get
    out = []
    for row in rp.load(sorted(data.glob("*.jsonl"))):
        if row.get("error") or row["kind"] != "model" or row.get("phase") != "decode" or "graph" not in row:
            continue
        split, entry = rp.split_of(row), rp.calibration_of(row.get("seed", 0), data)
        out.append(_one(catalog, row, shipped, split))
        if entry is not None and split != "fit":
            out.append(_one(catalog, row, rp.calibrated(catalog, entry), f"{split} cal"))
    return out


def fit_rows(found: list[GraphDecode]) -> list[GraphDecode]:
    """Seed 0's 14 fit 16-bit graph decodes, on which the cost per operation is fitted."""
    return [d for d in found if d.split == "fit" and d.seed == 0 and not d.fp32]


def per_op_fit(found: list[GraphDecode]) -> float:
    """The median over the fit rows of (graph time − the GPU terms) ÷ counted operations."""
    return statistics.median((d.measured_s - d.base_s) / d.ops for d in fit_rows(found))


def both_terms(found: list[GraphDecode]) -> tuple[float, float]:
    """A per-layer and a per-operation cost together, least squares of the relative residual over the fit rows (the
    normal equations of two unknowns): whether the rows hold a per-layer cost beside the operations'."""
    xs = [(d.layers / d.measured_s, d.ops / d.measured_s, 1 - d.base_s / d.measured_s) for d in fit_rows(found)]
    aa, ab, bb = (sum(a * a for a, _, _ in xs), sum(a * b for a, b, _ in xs), sum(b * b for _, b, _ in xs))
    ay, by = sum(a * y for a, _, y in xs), sum(b * y for _, b, y in xs)
    det = aa * bb - ab * ab
    return (bb * ay - ab * by) / det, (aa * by - ab * ay) / det


def main() -> None:
    fitted = per_op_fit(graph_decodes())
    shipped = default_catalog().profiles.get("hf-graph").gpu_per_op_s
    print(f"gpu_per_op_s: fitted {fitted:.3g} s, shipped {shipped:.3g} s")


if __name__ == "__main__":
    main()
