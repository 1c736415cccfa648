"""The `hf` profiles' grouped experts (docs/accuracy.md item 21) against the probe they were read from
(benchmarks/moe_block.py on tests/data/measured/h200-2026-12-02-moe-block.jsonl) and against the catalog's MoE
prefills, measured before it."""

from __future__ import annotations

import statistics

from estimator import default_catalog
from tests.benchmark_modules import benchmark


def test_the_shipped_figures_are_the_probe_fit() -> None:
    """At the profiles' precision: the grouped GEMMs' two rates (grid search on the fit rows) and the dispatch's
    passes and time per layer (least squares on the same rows), in both hf profiles."""
    probe = benchmark("moe_block")
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


def test_catalog_moe_prefills_measured_before() -> None:
    """The catalog's nine MoE prefills (three families; measured 2026-11-30): more within the target's ±15% and a
    lower median error with the grouped experts than with the routed experts as dense GEMMs."""
    tenth = benchmark("random_tenth")
    before, after = tenth.catalog_errors(False), tenth.catalog_errors(True)
    assert len(after) == 9
    assert sum(abs(e) <= 0.15 for _, e in after) > sum(abs(e) <= 0.15 for _, e in before)
    assert statistics.median(abs(e) for _, e in after) < statistics.median(abs(e) for _, e in before)
