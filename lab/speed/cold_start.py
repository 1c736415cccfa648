"""Cold start of `estimate`: a new process each run, timed beside a bare ``python -c pass`` on the same machine.

Run from the repository root:  python -m lab.speed.cold_start [--repeats 21]

Each command runs in turn with the baseline (A B A B …) and the ratio is taken pair by pair, so it holds when the
machine's speed drifts (the targets: ``--format json`` ≤ 12 ×, the table ≤ 15 × the baseline). The command
is the `estimate` console script's own entry point, so the figures are what a user's ``estimate …`` costs. Each
ratio is given in wall time (the targets' measure) and in CPU time (user + system of the child process), which
moves less when other jobs share the cores. The commands keep their caches (parsed and built specs) in a folder of
this run's own, warmed by a first run of each (``ESTIMATOR_CACHE_DIR``, unless the shell sets it): a user's warm
cache, never emptied or rewritten meanwhile by another checkout or version sharing the user's cache folder.
See ``python -X importtime -c "from estimator.cli.estimate import estimate_main"`` for a per-module breakdown.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ENTRY = "import sys; from estimator.cli.estimate import estimate_main; sys.argv[0] = 'estimate'; estimate_main()"
ARGS = ["--model", "llama-3.1-70b", "--gpu", "h100", "--gpus", "4"]
BASELINE = ["-c", "pass"]
# The floor of any command that validates and writes a pydantic model: pydantic imported, one two-field model built,
# validated and dumped as JSON, with the plugin search off as the console scripts have it (cli/process.py).
FLOOR = ("import os; os.environ['PYDANTIC_DISABLE_PLUGINS'] = '__all__'\n"
         "from pydantic import BaseModel\n"
         "class A(BaseModel):\n    x: int\n    y: str\n"
         "print(A.model_validate({'x': 1, 'y': 'a'}).model_dump_json())")
COMMANDS = {
    "import typer, pydantic, yaml": ["-c", "import typer, pydantic, yaml"],
    "pydantic: one model (floor)": ["-c", FLOOR],
    "estimate --format json": ["-c", ENTRY, *ARGS, "--format", "json"],
    "estimate (table)": ["-c", ENTRY, *ARGS],
}
TARGETS = {"estimate --format json": 12.0, "estimate (table)": 15.0}
_cache = {"ESTIMATOR_CACHE_DIR": os.environ.get("ESTIMATOR_CACHE_DIR", "")}  # `measure` gives it a folder when unset


def timed(args: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one new process."""
    # An installed package has its modules compiled (pip writes the .pyc files); a shell that sets
    # PYTHONDONTWRITEBYTECODE would make a checkout compile every one of them on every run (1.5 × the whole
    # process measured here): the warm-up run writes them, as installing does.
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    env.update(PYTHONPATH=str(ROOT), COLUMNS="100")
    env.update({key: value for key, value in _cache.items() if value})
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([sys.executable, *args], cwd=ROOT, env=env, stdout=subprocess.DEVNULL, check=True)
    took = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return took, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def paired(args: list[str], repeats: int) -> tuple[list[float], list[float], list[float]]:
    """(command times, command ÷ baseline wall ratios, the same in CPU time), the two run alternately."""
    times, ratios, cpu_ratios = [], [], []
    for _ in range(repeats):
        base, base_cpu = timed(BASELINE)
        took, cpu = timed(args)
        times.append(took)
        ratios.append(took / base)
        cpu_ratios.append(cpu / base_cpu if base_cpu > 0 else float("nan"))
    return times, ratios, cpu_ratios


def measure(repeats: int) -> dict[str, float]:
    """Print each command's figures; return each command's median ratio to the baseline."""
    if _cache["ESTIMATOR_CACHE_DIR"]:
        return _measure(repeats)
    with tempfile.TemporaryDirectory(prefix="cold-start-cache-") as folder:
        _cache["ESTIMATOR_CACHE_DIR"] = folder
        try:
            return _measure(repeats)
        finally:
            _cache["ESTIMATOR_CACHE_DIR"] = ""


def _measure(repeats: int) -> dict[str, float]:
    for args in COMMANDS.values():
        timed(args)  # warm the OS file cache, the .pyc files and the parsed-spec cache: "cold" is a new process
    base = [timed(BASELINE)[0] for _ in range(repeats)]
    print(f"{'python -c pass':28s} median {statistics.median(base):.3f} s  ({repeats} runs)")
    medians = {}
    for name, args in COMMANDS.items():
        times, ratios, cpu_ratios = paired(args, repeats)
        medians[name] = statistics.median(ratios)
        target = TARGETS.get(name)
        met = target is not None and medians[name] <= target
        verdict = "" if target is None else f"  target ≤ {target:g} ×: {'met' if met else 'NOT met'}"
        quartiles = statistics.quantiles(ratios, n=4)
        print(f"{name:28s} median {statistics.median(times):.3f} s  = {medians[name]:5.1f} × baseline "
              f"(pairwise median, quartiles {quartiles[0]:.1f}-{quartiles[2]:.1f}); CPU "
              f"{statistics.median(cpu_ratios):5.1f} ×{verdict}")
    return medians


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=21)
    measure(parser.parse_args().repeats)


if __name__ == "__main__":
    main()
