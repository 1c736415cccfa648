"""Per-term tables of docs/accuracy.md: the catalog models' rows (tests/data/measured/*.jsonl, judged by
`estimator.live.validation`) and the random architectures' rows (tests/data/measured/random, judged by
lab/accuracy/random_points.py), each as cases, within target, median |error| and the worst case."""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from estimator.catalog.registry import Catalog
from estimator.catalog.specs import GpuSpec
from estimator.live.calibration import apply_calibration, entry_for, load_calibration
from estimator.live.validation import Point, Predictor, points, summarize
from lab.accuracy import random_points as rp

# Models any shipped constant was fitted on (specs/profiles/*.yaml, fitted_on): judged apart from the held-out ones.
FITTED_ON = ("llama-3.2-1b", "llama-3.1-8b", "mistral-7b-v0.1")
TIME_TERMS = ("prefill_s", "decode_step_s optimized", "decode_step_s hf")
MEMORY_TERMS = ("weights_bytes", "kv_cache_bytes", "static_cache_bytes", "activation_bytes", "nvml_used_after_load",
                "nvml_used_after_init")
PREFILL_TERMS = ("prefill_s", "prefill bound")
DECODE_TERMS = ("decode_step_s optimized", "decode_step_s hf", "decode bound")
TABLE_HEAD = ["| term | target | cases | within target | median abs error | worst case |",
              "| --- | --- | ---: | ---: | ---: | --- |"]


def pct(x: float) -> str:
    return f"{x:+.1%}"


def signed(x: float) -> str:
    """A signed percentage with a true minus sign (the random-architecture tables' style)."""
    return f"{x:+.1%}".replace("-", "−")


def load_rows(data: Path) -> list[dict[str, Any]]:
    rows = []
    for path in sorted(data.glob("*.jsonl")):
        rows += [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return rows


def best_lean(pts: list[Point]) -> list[Point]:
    """Keep, per lean case, the attention variant with the shorter measured time (what an engine achieves)."""
    best: dict[tuple[str, str, str], Point] = {}
    rest = []
    for p in pts:
        if p.case.startswith("lean decode"):
            base = p.case.rsplit(" ", 1)[0] if p.case.endswith((" flash", " matmul")) else p.case
            key = (p.model, base, p.term)
            if key not in best or p.measured < best[key].measured:
                best[key] = p
        else:
            rest.append(p)
    return rest + list(best.values())


@dataclass(frozen=True)
class CatalogPoints:
    """The catalog rows' comparisons: with the shipped profiles, and the time terms with the card's calibration."""

    shipped: list[Point]
    calibrated: list[Point]
    calibration_note: str

    def held_out(self, calibrated: bool = False) -> list[Point]:
        return [p for p in (self.calibrated if calibrated else self.shipped) if p.model not in FITTED_ON]

    def fitted(self) -> list[Point]:
        return [p for p in self.shipped if p.model in FITTED_ON]


def catalog_points(catalog: Catalog, gpu: GpuSpec, data: Path, rows: list[dict[str, Any]]) -> CatalogPoints:
    predictor = Predictor.default(catalog, gpu)
    shipped = best_lean(list(points(rows, predictor)))
    calibrations = sorted(data.glob("*calibration.yaml"))
    entry = entry_for(load_calibration(calibrations[-1]), gpu) if calibrations else None
    if entry is None:
        return CatalogPoints(shipped, [], "no calibration file found")
    source = calibrations[-1].name
    cal = Predictor(catalog, gpu, apply_calibration(predictor.hf, entry, source),
                    apply_calibration(predictor.optimized, entry, source))
    calibrated = [p for p in best_lean(list(points(rows, cal))) if p.term in TIME_TERMS]
    note = f"`{source}`: " + ", ".join(f"{k} = {v:.4g}" for k, v in entry.profile_overrides.items())
    return CatalogPoints(shipped, calibrated, note)


def summary_table(pts: list[Point], terms: tuple[str, ...]) -> list[str]:
    """One row per term of ``terms`` present in ``pts``, in that order."""
    lines = list(TABLE_HEAD)
    by_term = {s.term: s for s in summarize(pts)}
    for term in (t for t in terms if t in by_term):
        s = by_term[term]
        worst = s.worst
        assert worst is not None
        if s.target is None and s.median_abs_error is None:  # bound
            lines.append(f"| {s.term} (never above measured) | bound ≤ measured | {s.cases} | {s.within} | — | "
                         f"{worst.model} {worst.case}: bound = {worst.predicted / worst.measured:.0%} of measured |")
            continue
        target = "—" if s.target is None else f"±{s.target:.1%}"
        median = "—" if s.median_abs_error is None else f"{s.median_abs_error:.1%}"
        lines.append(f"| {s.term} | {target} | {s.cases} | {s.within if s.target is not None else '—'} | {median} | "
                     f"{worst.model} {worst.case}: {pct(worst.error)} |")
    return [*lines, ""]


def catalog_tables(found: CatalogPoints, terms: tuple[str, ...]) -> list[str]:
    """The held-out models (shipped, then calibrated where a time term is shown) and the fitting models."""
    out = ["Catalog models, held out, shipped profiles:", "", *summary_table(found.held_out(), terms)]
    if any(t in TIME_TERMS for t in terms):
        out += ["Catalog models, held out, profiles calibrated on this card (`estimator calibrate`):", "",
                *summary_table(found.held_out(calibrated=True), terms)]
    out += [f"Catalog models the profiles were fitted on ({', '.join(FITTED_ON)}):", "",
            *summary_table(found.fitted(), terms)]
    return out


def every_case(pts: list[Point]) -> list[str]:
    """Every catalog comparison, one line each (``python -m lab.accuracy.report --cases``)."""
    out = ["| model | case | term | predicted | measured | error | target | |",
           "| --- | --- | --- | ---: | ---: | ---: | ---: | --- |"]
    for p in sorted(pts, key=lambda q: (q.model, q.case, q.term)):
        target = "≤ measured" if p.kind == "bound" else "—" if p.target is None else f"±{p.target:.1%}"
        mark = "" if p.ok is None else "✓" if p.ok else "✗"
        fit = " (fit)" if p.model in FITTED_ON else ""
        out.append(f"| {p.model}{fit} | {p.case} | {p.term} | {p.predicted:.6g} | {p.measured:.6g} | {pct(p.error)} | "
                   f"{target} | {mark} |")
    return out


def random_points(data: Path = rp.DATA) -> list[rp.RandomPoint]:
    return rp.points(rp.load(sorted(data.glob("*.jsonl"))))


def pooled(pts: list[rp.RandomPoint], term: str) -> tuple[tuple[str, int, int, float, rp.RandomPoint], ...]:
    """(split, cases, within target, median |error|, worst) for `fit` and for every other split pooled as `held out`
    (a calibrated seed counted once, with the shipped profiles)."""
    out = []
    for name, chosen in (("fit", lambda s: s == "fit"), ("held out", lambda s: s != "fit" and not s.endswith("cal"))):
        group = [p for p in pts if p.term == term and chosen(p.split)]
        if group:
            out.append((name, len(group), sum(abs(p.error) <= rp.TARGETS[term] for p in group),
                        statistics.median(abs(p.error) for p in group), max(group, key=lambda p: abs(p.error))))
    return tuple(out)


def random_table(pts: list[rp.RandomPoint], terms: tuple[str, ...]) -> list[str]:
    """The random architectures' rows of ``terms``, fit and held out."""
    lines = ["| term | target | split | cases | within target | median abs error | worst case |",
             "| --- | --- | --- | ---: | ---: | ---: | --- |"]
    for term in terms:
        for split, cases, within, median, worst in pooled(pts, term):
            lines.append(f"| {term} | ±{rp.TARGETS[term]:.0%} | {split} | {cases} | {within} | {median:.1%} | "
                         f"{signed(worst.error)} ({worst.model} {worst.case}) |")
    return [*lines, ""]


def per_split_tables(pts: list[rp.RandomPoint]) -> list[str]:
    """Every term by every split (calibrated seeds twice), and the bounds: the full random-architecture figures."""
    out = ["| term | target | split | cases | within target | median abs error | worst case |",
           "| --- | --- | --- | ---: | ---: | ---: | --- |"]
    for term, split, cases, within, median, worst in rp.summary(pts):
        out.append(f"| {term} | ±{rp.TARGETS[term]:.0%} | {split} | {cases} | {within} | {median:.1%} | "
                   f"{signed(worst.error)} ({worst.model} {worst.case}) |")
    out += ["", "Bounds (datasheet peaks, no profile), against every measured time of their case:", "",
            "| bound | split | cases | bound ≤ measured | closest to its measurement |",
            "| --- | --- | ---: | ---: | --- |"]
    out += [f"| {term} | {split} | {n} | {below} | {p.predicted / p.measured:.1%} of measured ({p.model} {p.case}) |"
            for term, split, n, below, p in rp.bound_summary(pts) if not split.endswith(" cal")]
    return out
