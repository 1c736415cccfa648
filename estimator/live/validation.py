"""Predicted vs measured: the estimator's figure for every measured row (format of h200-measured.jsonl).

Used by `estimator validate` (rows just measured) and by ``lab/accuracy/report.py`` (rows on disk). Each
`Point` is one term of one case with its accuracy target: weights ≤ 0.5%, KV cache ≤ 1%, NVML used after load
≤ 3%, prefill activation peak ≤ 10%, prefill time ≤ 15%, optimized decode ≤ 10%; ``bound`` points check that the
roofline bound never exceeds the measured time. Pure: no torch, no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from estimator.catalog.architecture import ModelSpec
from estimator.catalog.profiles import EfficiencyProfile
from estimator.catalog.registry import Catalog
from estimator.catalog.specs import GpuSpec
from estimator.inference.estimate import estimate
from estimator.inference.report import Report
from estimator.inference.workload import InferenceWorkload
from estimator.model.footprint import activation_peak
from estimator.model.memory import kv_cache_bytes, runtime_overhead_bytes, weights_bytes
from estimator.report import Frozen, Versioned

TARGETS: dict[str, float] = {
    "weights_bytes": 0.005,
    "kv_cache_bytes": 0.01,
    "static_cache_bytes": 0.01,
    "nvml_used_after_load": 0.03,
    "activation_bytes": 0.10,
    "prefill_s": 0.15,
    "decode_step_s optimized": 0.10,
    "train_steady_peak": 0.10,
}


@dataclass(frozen=True)
class Point:
    """One term of one measured case. ``kind='bound'``: ``predicted`` is the bound, which must not exceed it."""

    model: str
    case: str
    term: str
    predicted: float
    measured: float
    kind: Literal["error", "bound"] = "error"

    @property
    def error(self) -> float:
        """(predicted − measured) / measured."""
        return (self.predicted - self.measured) / self.measured if self.measured else float("inf")

    @property
    def fraction_of_measured(self) -> float:
        """predicted / measured: how close a bound comes to the measurement (1 = equal)."""
        return self.predicted / self.measured if self.measured else float("inf")

    @property
    def target(self) -> float | None:
        return None if self.kind == "bound" else TARGETS.get(self.term)

    @property
    def ok(self) -> bool | None:
        """Within target (error points with a target), not above the measurement (bound points), else None."""
        if self.kind == "bound":
            return self.predicted <= self.measured
        target = self.target
        return None if target is None else abs(self.error) <= target

    def as_dict(self) -> dict[str, Any]:
        return self.record().model_dump(mode="json")

    def record(self) -> PointRecord:
        """The point as the validate report carries it, its derived figures included."""
        return PointRecord(model=self.model, case=self.case, term=self.term, predicted=self.predicted,
                           measured=self.measured, error=self.error if self.measured else None, target=self.target,
                           ok=self.ok, kind=self.kind)


class PointRecord(Frozen):
    """One compared term in `estimator validate --format json` (see `Point`)."""

    model: str
    case: str
    term: str
    predicted: float
    measured: float
    error: float | None  # (predicted − measured) / measured; None when nothing was measured (JSON has no infinity)
    target: float | None  # the |error| this term's accuracy target allows; None for bound points and untargeted terms
    ok: bool | None  # within target, or (bound points) not above the measurement; None without a target
    kind: Literal["error", "bound"]


class ValidateReport(Versioned):
    """The measured rows as `estimator.live.measure` records them (the format of tests/data/measured/*.jsonl) and
    every comparison they allow."""

    model: str
    gpu: str  # the catalog card the predictions were made for
    rows: tuple[dict[str, Any], ...]
    points: tuple[PointRecord, ...]


@dataclass(frozen=True)
class Predictor:
    """The catalog, card and profiles predictions are made with."""

    catalog: Catalog
    gpu: GpuSpec
    hf: EfficiencyProfile
    optimized: EfficiencyProfile
    extra: ModelSpec | None = None  # a model the catalog does not hold (validate --model config.json)

    @classmethod
    def default(cls, catalog: Catalog, gpu: GpuSpec, extra: ModelSpec | None = None) -> Predictor:
        return cls(catalog, gpu, catalog.profiles.get("hf"), catalog.profiles.get("optimized"), extra)

    def model(self, name: str) -> ModelSpec:
        """The model a measured row names: the extra one, else the catalog's."""
        return self.extra if self.extra is not None and self.extra.name == name else self.catalog.models.get(name)

    def report(self, model: ModelSpec, profile: EfficiencyProfile, batch: int, prompt: int, output: int,
               logits: str = "last") -> Report:
        bf16 = self.catalog.formats.get("bf16")
        workload = InferenceWorkload(batch=batch, prompt_tokens=prompt, output_tokens=output, weight_format=bf16,
                                     kv_format=bf16, logits=logits, profile=profile)
        return estimate(model, self.gpu, workload)


def points(rows: Iterable[Mapping[str, Any]], predictor: Predictor) -> Iterator[Point]:
    """Every comparison the rows allow; rows of other kinds (device, train without a predictor) are skipped."""
    for row in rows:
        if row.get("kind") in ("model", "lean_decode") and not row.get("error"):
            yield from _row_points(row, predictor)


def _row_points(row: Mapping[str, Any], p: Predictor) -> Iterator[Point]:
    model = p.model(row["model"])
    arch = model.arch
    assert arch is not None
    bf16 = p.catalog.formats.get("bf16")
    name = model.name
    if row["kind"] == "lean_decode":
        ctx, batch = row["context"], row["batch"]
        report = p.report(model, p.optimized, batch, ctx - 1, 1)
        assert report.time.decode_step_s is not None
        assert report.time.decode_step_bound_s is not None
        case = f"lean decode b{batch} ctx{ctx}" + (f" {row['attention']}" if "attention" in row else "")
        measured = row["graph"]["median_s"]
        yield Point(name, case, "decode_step_s optimized", report.time.decode_step_s, measured)
        yield Point(name, case, "decode bound", report.time.decode_step_bound_s, measured, "bound")
        return
    phase = row["phase"]
    if phase == "load":
        weights = weights_bytes(arch, bf16)
        yield Point(name, "load", "weights_bytes", weights, row["param_bytes"])
        overhead = runtime_overhead_bytes(p.gpu.memory_bytes, p.hf, tensor_parallel=1, dynamic_bytes=0)
        # Random initialisation leaves temporaries in PyTorch's cache; a checkpoint load does not. Newer rows
        # record NVML after emptying that cache: that is the figure the target applies to.
        settled = row.get("nvml_used_after_empty_cache")
        if settled:
            yield Point(name, "load", "nvml_used_after_load", weights + overhead, settled)
        if row.get("nvml_used"):
            yield Point(name, "load", "nvml_used_after_init" if settled else "nvml_used_after_load",
                        weights + overhead, row["nvml_used"])
    elif phase == "prefill":
        batch, prompt, keep = row["batch"], row["prompt"], row["logits_to_keep"]
        logits = "last" if keep == 1 else "all"
        case = f"prefill b{batch} s{prompt} logits={logits}"
        # right after an HF prefill, DynamicCache holds the whole prompt in sliding layers too (hf profile)
        kept = kv_cache_bytes(arch, prompt, batch, bf16, ignore_windows=p.hf.sliding_window_prefill_full,
                              decompressed_mla=p.hf.decompressed_mla_cache)
        yield Point(name, case, "kv_cache_bytes", kept, row["kept_after"])
        peak = activation_peak(arch, p.hf, batch, prompt, element_bytes=2, logits_all=logits == "all").bytes
        yield Point(name, case, "activation_bytes", peak, row["peak_minus_before"] - row["kept_after"])
        if "latency" in row:
            report = p.report(model, p.hf, batch, prompt, 0, logits)
            measured = row["latency"]["median_s"]
            yield Point(name, case, "prefill_s", report.time.prefill_s, measured)
            yield Point(name, case, "prefill bound", report.time.prefill_bound_s, measured, "bound")
    elif phase == "decode":
        batch, ctx = row["batch"], row["context"]
        case = f"hf decode b{batch} ctx{ctx}"
        yield Point(name, case, "static_cache_bytes",
                    kv_cache_bytes(arch, row["cache_len"], batch, bf16, decompressed_mla=p.hf.decompressed_mla_cache),
                    row["static_cache_bytes"])
        report = p.report(model, p.hf, batch, ctx, 1)
        assert report.time.decode_step_s is not None
        assert report.time.decode_step_bound_s is not None
        measured = row["eager"]["median_s"]
        yield Point(name, case, "decode_step_s hf", report.time.decode_step_s, measured)
        yield Point(name, case, "decode bound", report.time.decode_step_bound_s, measured, "bound")


@dataclass(frozen=True)
class TermSummary:
    term: str
    target: float | None
    cases: int
    within: int
    worst: Point | None
    median_abs_error: float | None


def summarize(pts: Iterable[Point]) -> list[TermSummary]:
    """Per term: cases, how many meet the target, the worst case and the median |error|."""
    by_term: dict[str, list[Point]] = {}
    for point in pts:
        by_term.setdefault(point.term, []).append(point)
    out = []
    for term, group in by_term.items():
        if group[0].kind == "bound":
            worst = max(group, key=lambda q: q.predicted / q.measured)
            out.append(TermSummary(term, None, len(group), sum(1 for q in group if q.ok), worst, None))
            continue
        errors = sorted(abs(q.error) for q in group)
        worst = max(group, key=lambda q: abs(q.error))
        median = errors[len(errors) // 2] if len(errors) % 2 else (errors[len(errors) // 2 - 1]
                                                                    + errors[len(errors) // 2]) / 2
        out.append(TermSummary(term, group[0].target, len(group), sum(1 for q in group if q.ok), worst, median))
    return out
