"""Cold-start time of `estimate`: median wall time of a fresh process over repeats (issue 7 target: ≤ 0.3 s).

Run from the repository root:  python benchmarks/cold_start.py [--repeats 21]
Prints the median and quartiles for the full command and for bare imports, so the cost of each layer shows.
See `python -X importtime -m estimator estimate ...` for a per-module breakdown.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COMMAND = ["-m", "estimator", "estimate", "--model", "llama-3.1-70b", "--gpu", "h100", "--gpus", "4"]
BASELINES = {
    "python -c pass": ["-c", "pass"],
    "import pydantic": ["-c", "import pydantic"],
    "import estimator.cli.main": ["-c", "import estimator.cli.main"],
}


def wall(args: list[str], repeats: int) -> list[float]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run([sys.executable, *args], cwd=ROOT, env=env, stdout=subprocess.DEVNULL, check=True)
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=21)
    repeats = parser.parse_args().repeats
    wall(COMMAND, 2)  # warm the OS file cache and .pyc files: "cold" means a new process, not a cold disk
    for name, args in {**BASELINES, "estimate (table)": COMMAND, "estimate --format json": [*COMMAND, "-f", "json"]
                       }.items():
        t = wall(args, repeats)
        q = statistics.quantiles(t, n=4)
        print(f"{name:28s} median {statistics.median(t):.3f} s  (quartiles {q[0]:.3f}-{q[2]:.3f}, {repeats} runs)")


if __name__ == "__main__":
    main()
