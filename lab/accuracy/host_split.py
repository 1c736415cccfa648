"""What sets a random HF prefill's or eager decode's time, by its estimate, and how each side compares with its
measurement (docs/accuracy.md, *Prefill time*, *Decode time* and *Host dispatch*).

Every HF prefill and eager decode of the random rows (tests/data/measured/random) is split by what its estimate says
sets the phase's time — the host's dispatch (the `host-bound` assumption, which states the phase's time at each end of
the host's states) or the GPU — and each part is judged apart: against its target, and a host-bound one against the
span it states. The rows that recorded the host's issue time and a probe of the host's speed just before the case
(``issue``: ``host_s``, ``host_op_s``) show how far one figure per operation can follow the host even where its state
is known.

    python -m lab.accuracy.host_split      # the figures, one line each
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from estimator import default_catalog
from estimator.catalog.registry import Catalog
from lab.accuracy import random_points as rp

PHASES = {"prefill": ("prefill_s", "prefill"), "decode": ("decode hf", "decode step")}


@dataclass(frozen=True)
class PhasePoint:
    """One HF prefill or eager decode beside its `hf` estimate, and the span the estimate states where the host sets
    its time (None where the GPU does)."""

    term: str
    dtype: str
    predicted: float
    measured: float
    span: tuple[float, float] | None
    issue: dict[str, Any]  # the case's host issue time, GPU time and probe, where its row recorded them
    ops: int | None  # the aten operations the case dispatches, where its row (or its model's) counted them

    @property
    def error(self) -> float:
        return self.predicted / self.measured - 1

    @property
    def within_target(self) -> bool:
        return abs(self.error) <= rp.TARGETS[self.term]

    @property
    def in_span(self) -> bool:
        return self.span is not None and self.span[0] <= self.measured <= self.span[1]


def _span(report: Any, phase: str) -> tuple[float, float] | None:
    for found in report.assumptions:
        if found.code.value == "host-bound" and found.values["phase"] == phase:
            return float(found.values["low_s"]), float(found.values["high_s"])
    return None


def _point(catalog: Catalog, row: dict[str, Any], ops: int | None) -> PhasePoint:
    report, (term, phase) = rp.hf_report(catalog, row), PHASES[row["phase"]]
    if row["phase"] == "prefill":
        predicted, measured = report.time.prefill_s, row["latency"]["median_s"]
    else:
        predicted, measured = report.time.decode_step_s, row["eager"]["median_s"]
    return PhasePoint(term, row["dtype"], float(predicted), float(measured), _span(report, phase),
                      row.get("issue", {}), ops)


def phase_points(data: Path = rp.DATA) -> Iterator[PhasePoint]:
    """Every random HF prefill with a latency and every eager decode, with the shipped `hf` profile."""
    catalog = default_catalog()
    for path in sorted(data.glob("*.jsonl")):
        rows = [r for r in rp.load([path]) if r.get("kind") == "model" and not r.get("error")]
        counted = {r["model"]: r["prefill_ops"] for r in rows if "prefill_ops" in r}
        for row in rows:
            if row.get("phase") == "prefill" and "latency" in row:
                yield _point(catalog, row, counted.get(row["model"]))
            elif row.get("phase") == "decode" and "eager" in row:
                yield _point(catalog, row, row.get("decode_ops"))


@dataclass(frozen=True)
class SplitFigures:
    """One term's cases that one side sets, by the estimate."""

    cases: int
    within: int
    median: float
    in_span: int  # host-bound cases whose measurement lies inside the stated span (0 for the GPU's side)


def split_figures(points: list[PhasePoint], term: str, host: bool) -> SplitFigures:
    chosen = [p for p in points if p.term == term and (p.span is not None) == host]
    return SplitFigures(len(chosen), sum(p.within_target for p in chosen),
                        statistics.median(abs(p.error) for p in chosen), sum(p.in_span for p in chosen))


def host_records(points: list[PhasePoint], term: str) -> list[PhasePoint]:
    """The host-bound cases that recorded their host's issue time and the probe before it, and counted their
    operations."""
    return [p for p in points if p.term == term and p.span is not None and p.ops and "host_op_s" in p.issue]


def host_ratios(points: list[PhasePoint], term: str) -> list[float]:
    """Host-bound cases with an issue record: the host's issue time per counted operation ÷ the bare launch probed
    just before the case (the ratio `host_op_bare_ratio` states one figure of)."""
    return [p.issue["host_s"] / p.ops / p.issue["host_op_s"] for p in host_records(points, term)]


def beyond_median_ratio(ratios: list[float]) -> int:
    """How many cases the median ratio × their own probe leaves beyond ±15% of their host time."""
    middle = statistics.median(ratios)
    return sum(abs(r / middle - 1) > 0.15 for r in ratios)


def host_set(point: PhasePoint) -> bool:
    """Whether the case's host issued for at least 0.9 × its GPU's time (the host set the phase)."""
    return point.issue["host_s"] >= 0.9 * point.issue["gpu_s"]


def gpu_misses(points: list[PhasePoint], term: str) -> list[PhasePoint]:
    """The cases the estimate calls GPU-bound that miss their target and recorded their host's issue time."""
    return [p for p in points if p.term == term and p.span is None and not p.within_target and "gpu_s" in p.issue]


def host_set_gpu_misses(points: list[PhasePoint], term: str) -> tuple[int, int]:
    """(GPU-bound misses with an issue record, those of them the host set after all)."""
    missed = gpu_misses(points, term)
    return len(missed), sum(map(host_set, missed))


def train_host_set(data: Path = rp.DATA) -> tuple[int, int, int, int]:
    """Training steps: (cases, beyond ±15%, of those with the host's issue time recorded, of those whose host issued
    for at least 0.85 × the measured step)."""
    catalog, cases, missed, recorded, host_bound = default_catalog(), 0, 0, 0, 0
    for row in rp.load(sorted(data.glob("*.jsonl"))):
        if row.get("kind") != "train" or row.get("error") or "latency" not in row:
            continue
        found = {term: (predicted, measured) for _, term, predicted, measured in rp._train_points(catalog, row)}
        predicted, measured = found["train step"]
        cases += 1
        if abs(predicted / measured - 1) > rp.TARGETS["train step"]:
            missed += 1
            extra = row.get("step_extra")
            recorded += extra is not None
            host_bound += extra is not None and extra["host_s"] >= 0.85 * measured
    return cases, missed, recorded, host_bound


def percentile(values: list[float], q: int) -> float:
    """The q-th percentile (q a multiple of 10) of ``values``, as statistics.quantiles cuts them."""
    return statistics.quantiles(values, n=10)[q // 10 - 1]


def main() -> None:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()  # no options: refuse any given
    points = list(phase_points())
    for term in ("prefill_s", "decode hf"):
        for host in (False, True):
            print(term, "host" if host else "GPU", split_figures(points, term, host))
        ratios = host_ratios(points, term)
        print(term, "host ratio: cases", len(ratios), "median", f"{statistics.median(ratios):.2f}",
              "beyond ±15% of the median", beyond_median_ratio(ratios))
    print("prefill_s GPU-bound misses with an issue record, host-set:", host_set_gpu_misses(points, "prefill_s"))
    print("train steps, missed, recorded, host-set:", train_host_set())


if __name__ == "__main__":
    main()
