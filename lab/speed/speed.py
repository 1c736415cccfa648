"""The four speed figures against their targets in one run: the cold start of `estimate` (``--format json`` and the
table) beside a bare ``python -c pass``, and the sweep's evaluation rate and million-row CSV.

Run from the repository root:  python -m lab.speed.speed [--repeats 21] [--csv OUT.csv]

The cold starts are timed as lab/speed/cold_start.py times them (a new process each run, paired with the
baseline, the ratio's median); the sweep as lab/speed/sweep_speed.py does (a 1,000,000-point grid, evaluation and
CSV timed apart, wall and CPU seconds). Targets: json ≤ 12 ×, table ≤ 15 ×, ≥ 1,000,000 configurations
per second on one core, the CSV in ≤ 10 s.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from lab.speed import cold_start, sweep_speed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=21, help="cold-start runs of each command")
    parser.add_argument("--csv", type=Path, help="write the sweep's rows to this CSV file (default: a temporary file)")
    args = parser.parse_args()
    ratios = cold_start.measure(args.repeats)
    figures = sweep_speed.measure(args.csv)
    print()
    print("targets, this run:")
    for name, target in cold_start.TARGETS.items():
        verdict = "met" if ratios[name] <= target else "NOT met"
        print(f"  {name:26s} {ratios[name]:10.1f} × python -c pass   target ≤ {target:g} ×: {verdict}")
    cpu_rate, wall_rate = figures["per_cpu_s"], figures["per_wall_s"]
    print(f"  {'sweep evaluation':26s} {cpu_rate:10,.0f} per CPU second ({wall_rate:,.0f} per wall second)   "
          f"target ≥ 1,000,000 on one core: {'met' if cpu_rate >= 1e6 else 'NOT met'} in CPU time, "
          f"{'met' if wall_rate >= 1e6 else 'NOT met'} in wall time")
    wall, cpu = figures["csv_wall_s"], figures["csv_cpu_s"]
    print(f"  {'million-row CSV':26s} {wall:10.1f} s wall ({cpu:.1f} s CPU)   target ≤ 10 s: "
          f"{'met' if wall <= 10 else 'NOT met'} in wall time, {'met' if cpu <= 10 else 'NOT met'} in CPU time")


if __name__ == "__main__":
    main()
