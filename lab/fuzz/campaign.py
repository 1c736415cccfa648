"""The long fuzz campaign: N seeded command lines and hostile files through the CLI, summarised by problem.

    python -m lab.fuzz.campaign --cases 100000 [--seed 1] [--workers 1] [--every 5000]

Each worker runs a contiguous share of the cases in-process (tests/fuzz/campaign.py says what a case is and what
keeping the promise means) and prints a progress line every ``--every`` of its cases (the counts so far, so a run
stopped early still says what its cases found). At the end it prints the counts: cases by command, problems by
kind, the slowest case in wall and CPU time, and up to 20 examples of problems.
"""

from __future__ import annotations

import argparse
import collections
import multiprocessing
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def _work(job: tuple[int, int, int, int]) -> tuple[int, dict[str, int], list[str], float, float, str, dict[str, int]]:
    seed, start, count, every = job
    os.environ["ESTIMATOR_NO_CALIBRATION"] = "1"
    os.environ.setdefault("ESTIMATOR_CACHE_DIR", tempfile.mkdtemp(prefix="fuzz-cache-"))
    from tests.fuzz.campaign import generate, run

    kinds: collections.Counter[str] = collections.Counter()
    commands: collections.Counter[str] = collections.Counter()
    examples: list[str] = []
    slowest = slowest_cpu = 0.0
    costliest = ""  # the command line that used the most CPU time
    began = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="fuzz-") as scratch:
        for index, case in enumerate(generate(seed, start + count)):
            if index < start:
                continue
            folder = Path(scratch) / str(index)
            outcome = run(case, folder)
            shutil.rmtree(folder, ignore_errors=True)  # a specs copy a case, 100,000 times, would fill the disk
            commands[_command(case.args)] += 1
            slowest = max(slowest, outcome.seconds)
            if outcome.cpu_seconds > slowest_cpu:
                slowest_cpu, costliest = outcome.cpu_seconds, " ".join(case.args)[:300]
            for problem in outcome.problems:
                kinds[problem.split(":")[0]] += 1
                example = f"case {index:,}: {' '.join(case.args)[:200]} → {problem[:300]}"
                print(f"problem: {example}", flush=True)  # at once: a run stopped early still names what it found
                if len(examples) < 20:
                    examples.append(example)
            done = index - start + 1
            if done % every == 0 or done == count:
                print(f"progress: cases {start:,}-{index:,} ({done:,} of {count:,}) in "
                      f"{time.perf_counter() - began:,.0f} s; problems {dict(kinds) or 'none'}; slowest "
                      f"{slowest:.1f} s wall, {slowest_cpu:.1f} s CPU", flush=True)
    return count, dict(kinds), examples, slowest, slowest_cpu, costliest, dict(commands)


def _command(args: tuple[str, ...]) -> str:
    """The front end a case exercises: its subcommand, ``train`` for estimate --mode train, ``HTTP`` for a request,
    ``specs folder`` for any command over a hostile one."""
    if "--specs-dir" in args and "{dir}/specs" in args:
        return "specs folder"
    if args[:1] == ("estimate",) and "train" in args[:3]:
        return "estimate --mode train"
    return args[0] if args and not args[0].startswith("-") else "(no command, --help)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--every", type=int, default=5_000, help="a progress line every this many cases a worker")
    args = parser.parse_args()
    share = -(-args.cases // args.workers)
    jobs = [(args.seed, k * share, min(share, args.cases - k * share), args.every) for k in range(args.workers)]
    began = time.perf_counter()
    with multiprocessing.get_context("spawn").Pool(args.workers) as pool:
        results = pool.map(_work, [j for j in jobs if j[2] > 0])
    took = time.perf_counter() - began
    kinds: collections.Counter[str] = collections.Counter()
    commands: collections.Counter[str] = collections.Counter()
    for result in results:
        kinds.update(result[1])
        commands.update(result[6])
    examples = [e for r in results for e in r[2]][:20]
    cases = sum(r[0] for r in results)
    lines = [f"{cases:,} cases (seed {args.seed}) in {took:,.0f} s on {args.workers} workers; "
             f"slowest case {max(r[3] for r in results):.1f} s wall, {max(r[4] for r in results):.1f} s CPU",
             "cases by command: " + ", ".join(f"{name} {n:,}" for name, n in commands.most_common()),
             f"cases with a problem, by kind: {dict(kinds) or 'none'}",
             f"the most CPU time: {max(results, key=lambda r: r[4])[5]}"]
    lines += [f"  e.g. {e}" for e in examples]
    print("\n".join(lines), flush=True)


if __name__ == "__main__":
    main()
