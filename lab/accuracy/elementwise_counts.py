"""Each family's elementwise passes, counted from a trace of transformers' forward (lab/measure/count_elementwise.py,
the `hf` profile's ``elementwise_passes_by_family``), judged on the random prefill and training rows with the
per-family counts and with one hand count for every family (docs/accuracy.md, *Prefill kernels*)."""

from __future__ import annotations

import statistics
from typing import Any

from estimator import default_catalog
from lab.accuracy.random_points import DATA, _model_points, _train_points, split_of

TRACE = DATA.parent / "elementwise-passes.json"
TERMS = ("prefill_s", "train step")


def errors(rows: list[dict[str, Any]], counted: bool) -> dict[tuple[str, str], list[tuple[float, dict[str, Any]]]]:
    """(term, split) → (error, row) with the shipped `hf` profile, or with its per-family counts removed."""
    catalog = default_catalog()
    hf = catalog.profiles.get("hf")
    # uncounted: the hand count for every family, and so no family's count of its non-vectorized operations
    profile = hf if counted else hf.model_copy(update={"elementwise_passes_by_family": {},
                                                       "elementwise_strided_by_family": {}})
    out: dict[tuple[str, str], list[tuple[float, dict[str, Any]]]] = {}
    for row in rows:
        if row.get("error") or row["kind"] not in ("model", "train") or row.get("phase") == "load":
            continue
        found = (_train_points(catalog, row, lambda _: profile) if row["kind"] == "train"
                 else _model_points(catalog, row, lambda _: profile))
        for _, term, predicted, measured in found:
            if term in TERMS:
                out.setdefault((term, split_of(row)), []).append(((predicted - measured) / measured, row))
    return out


def gpu_bound_16bit(found: dict[tuple[str, str], list[tuple[float, dict[str, Any]]]]) -> dict[str, float]:
    """The signed median prefill error per family over the 16-bit prefills the GPU sets (their host issue time under
    0.9 × their GPU time, where the rows time both), every split together."""
    by: dict[str, list[float]] = {}
    for (term, _), cases in found.items():
        for error, row in cases:
            issue = row.get("issue") or {}
            if term == "prefill_s" and row["dtype"] != "fp32" and issue and issue["host_s"] < 0.9 * issue["gpu_s"]:
                by.setdefault(row["config"]["model_type"], []).append(error)
    return {family: statistics.median(v) for family, v in sorted(by.items())}


