"""Fit the `hf` profile's ``host_op_bare_ratio`` and ``host_bare_op_range_s``: the host's two states on the measured
H200 host, read from the random-architecture rows (tests/data/measured/random), and how far a host-bound time
follows the bare dispatch probed beside each case.

Every row of seeds 3–6 carries the host's speed just before its case (`host_op_before_s`; seeds 5–6 also
`issue.host_op_s`, taken right before the case's timed repeats): the median seconds of one in-place add on a
one-element tensor (`estimator.live.host_cost.bare_op_s`). Two things are printed:

- per seed, the probes split into the host's two states (`states`): a fast one near 7–9 µs and a slow one near
  13–15 µs per bare launch, and the share of cases the slow one held;
- the HF prefill and eager decode times predicted with the `hf` profile as shipped, beside the same predictions with
  the host's cost per operation set to ``k`` × the bare launch measured before that very case (`row_points`), ``k``
  fitted on seed 5's `fit` rows alone (`fit_ratio`): how much of those terms' error is the host's state.

    python -m lab.fit.host_op_bare_ratio
"""

from __future__ import annotations

import statistics
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from estimator import default_catalog
from estimator.catalog.profiles import EfficiencyProfile
from estimator.catalog.registry import Catalog
from estimator.live.calibration import host_update
from lab.accuracy.random_points import DATA, RandomPoint, _model_points, load, split_of

SEEDS = (3, 4, 5, 6)  # the seeds whose rows carry the host probe
FIT_SEED = 5  # its `fit` rows set the ratio; every other row is held out for it
TERMS = ("prefill_s", "decode hf")
RATIOS = tuple(round(1.4 + 0.02 * i, 2) for i in range(51))  # 1.40 … 2.40, the ratios `fit_ratio` tries


@dataclass(frozen=True)
class States:
    """One seed's bare-launch probes split at ``split_s`` into the fast and the slow state."""

    seed: int
    probes: int
    split_s: float
    fast_s: float  # median of the fast state's probes
    slow_s: float  # median of the slow state's probes
    slow_share: float  # the share of probes in the slow state


def probe_of(row: dict[str, Any]) -> float | None:
    """The host's seconds per bare launch just before the row's case: the probe before its timed repeats where the
    row has one, else the one before the case."""
    found = (row.get("issue") or {}).get("host_op_s") or row.get("host_op_before_s")
    return float(found) if found else None


def rows_of(seeds: Iterable[int] = SEEDS, data: Path = DATA) -> list[dict[str, Any]]:
    return [row for seed in seeds for row in load(sorted(data.glob(f"*-seed{seed}.jsonl")))]


def states(rows: list[dict[str, Any]], seed: int) -> States:
    """The probes of ``seed`` split where the gap between the two states lies: at the geometric mean of the 10th and
    90th percentiles (each state's probes sit on one side of it; the states are 1.4–1.8× apart). The slow side always
    holds the 90th percentile; the fast side holds the 10th unless that equals the split."""
    probes = sorted(p for row in rows if row.get("seed") == seed and (p := row.get("host_op_before_s")))
    low, high = probes[len(probes) // 10], probes[len(probes) * 9 // 10]
    split = (low * high) ** 0.5
    fast, slow = [p for p in probes if p < split], [p for p in probes if p >= split]
    return States(seed, len(probes), split, statistics.median(fast), statistics.median(slow), len(slow) / len(probes))


def _with_hf(catalog: Catalog, hf: EfficiencyProfile) -> Callable[[str], EfficiencyProfile]:
    """The catalog's profiles by name, with ``hf`` in place of its `hf`."""
    return lambda name: hf if name == "hf" else catalog.profiles.get(name)


def row_points(rows: list[dict[str, Any]], ratio: float | None, catalog: Catalog | None = None
               ) -> list[RandomPoint]:
    """HF prefill and eager decode points of ``rows`` (those with a probe): with the shipped `hf` profile where
    ``ratio`` is None, else with its host figures at ``ratio`` × the row's own probe (`calibration.host_update`, as
    a calibration's measured cost per operation is applied)."""
    catalog = catalog or default_catalog()
    hf = catalog.profiles.get("hf")
    out = []
    for row in rows:
        probe = probe_of(row)
        if row.get("kind") != "model" or row.get("phase") not in ("prefill", "decode") or row.get("error") \
                or probe is None:
            continue
        profile = hf if ratio is None else hf.model_copy(update=host_update(hf, ratio * probe))
        for case, term, predicted, measured in _model_points(catalog, row, _with_hf(catalog, profile)):
            if term in TERMS:
                out.append(RandomPoint(f"s{row['seed']}/{row['model']}", row["config"]["model_type"],
                                       row.get("dtype", "bf16"), case, term, float(predicted), float(measured),
                                       split_of(row)))
    return out


def median_error(points: list[RandomPoint]) -> float:
    return statistics.median(abs(p.error) for p in points)


def fit_ratio(rows: list[dict[str, Any]], catalog: Catalog | None = None) -> float:
    """The ratio of a counted operation's host cost to a bare launch that gives seed 5's `fit` rows (both terms
    together) the least median |error|; the first of `RATIOS` on a tie."""
    fit = [row for row in rows if row.get("seed") == FIT_SEED and split_of(row) == "fit"]
    catalog = catalog or default_catalog()
    return min(RATIOS, key=lambda r: median_error(row_points(fit, r, catalog)))


@dataclass(frozen=True)
class Comparison:
    """One seed's term: cases, median |error| shipped, and with the host at the row's own probe."""

    seed: int
    term: str
    cases: int
    shipped: float
    at_row_probe: float


def compare(rows: list[dict[str, Any]], ratio: float, catalog: Catalog | None = None) -> list[Comparison]:
    """Per seed and term, the held-out rows only (seed 5's `fit` rows set ``ratio``)."""
    catalog = catalog or default_catalog()
    held = [row for row in rows if not (row.get("seed") == FIT_SEED and split_of(row) == "fit")]
    shipped, probed = row_points(held, None, catalog), row_points(held, ratio, catalog)
    out = []
    for seed in SEEDS:
        for term in TERMS:
            a = [p for p in shipped if p.term == term and p.model.startswith(f"s{seed}/")]
            b = [p for p in probed if p.term == term and p.model.startswith(f"s{seed}/")]
            if a:
                out.append(Comparison(seed, term, len(a), median_error(a), median_error(b)))
    return out


def main() -> None:
    rows = rows_of()
    for seed in SEEDS:
        s = states(rows, seed)
        print(f"seed {seed}: {s.probes} probes, fast {s.fast_s * 1e6:.1f} us, slow {s.slow_s * 1e6:.1f} us "
              f"(split at {s.split_s * 1e6:.1f}), slow share {s.slow_share:.0%}")
    ratio = fit_ratio(rows)
    print(f"host cost per counted operation = {ratio:.2f} x the bare launch (seed {FIT_SEED}'s fit rows)")
    for c in compare(rows, ratio):
        print(f"seed {c.seed} {c.term:10} cases {c.cases:3} median |error| shipped {c.shipped:6.1%} "
              f"at the row's probe {c.at_row_probe:6.1%}")


if __name__ == "__main__":
    main()
