"""The `hf` profiles' grouped experts (docs/accuracy.md, *Prefill kernels*) against the probe they were read from
(lab/fit/grouped_experts.py on tests/data/measured/h200-2026-12-02-moe-block.jsonl)."""

from __future__ import annotations

import statistics

from estimator import default_catalog
from tests.lab_modules import lab_module


def test_the_shipped_figures_are_the_probe_fit() -> None:
    """At the profiles' precision: the grouped GEMMs' two rates (grid search on the fit rows) and the dispatch's
    passes and time per layer (least squares on the same rows), in both hf profiles."""
    probe = lab_module("fit.grouped_experts")
    rows = probe.rows_of()
    assert len(rows) == 81 and {r["split"] for r in rows} == {"fit", "check", "catalog"}
    a, b, gemm = probe.gemm_fit(rows)
    catalog = default_catalog()
    coef, dispatch = probe.dispatch_fit(rows, catalog.profiles.get("hf").bandwidth_efficiency)
    for name in ("hf", "hf-graph"):
        spec = catalog.profiles.get(name).grouped_experts
        assert spec is not None
        assert (spec.weight_efficiency, spec.flop_efficiency) == (a, b)
        assert (spec.pair_hidden_passes, spec.pair_ffn_passes, spec.token_hidden_passes) == tuple(
            round(float(x), 1) for x in coef[:3])
        assert spec.per_layer_s == float(f"{coef[3]:.3g}")
    # the configs not fitted: the dispatch within 5% in median, the grouped GEMMs within 15%
    assert statistics.median(abs(x) for x in dispatch["check"]) < 0.05
    assert statistics.median(abs(x) for x in gemm["check"]) < 0.15

