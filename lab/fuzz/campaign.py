"""The long fuzz campaign: N seeded command lines and hostile files through the CLI, summarised by problem.

    python -m lab.fuzz.campaign --cases 100000 [--seed 1] [--workers 2] [--write docs/reliability.md]

Each worker runs a contiguous share of the cases in-process (tests/fuzz/campaign.py says what a case is and what
keeping the promise means). Prints the counts; ``--write`` records them in docs/reliability.md with the command.
"""

from __future__ import annotations

import argparse
import collections
import multiprocessing
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def _work(job: tuple[int, int, int]) -> tuple[int, dict[str, int], list[str], float, float, str]:
    seed, start, count = job
    os.environ["ESTIMATOR_NO_CALIBRATION"] = "1"
    os.environ.setdefault("ESTIMATOR_CACHE_DIR", tempfile.mkdtemp(prefix="fuzz-cache-"))
    from tests.fuzz.campaign import generate, run

    kinds: dict[str, int] = collections.Counter()
    examples: list[str] = []
    slowest = slowest_cpu = 0.0
    costliest = ""  # the command line that used the most CPU time
    with tempfile.TemporaryDirectory(prefix="fuzz-") as scratch:
        for index, case in enumerate(generate(seed, start + count)):
            if index < start:
                continue
            outcome = run(case, Path(scratch) / str(index))
            slowest = max(slowest, outcome.seconds)
            if outcome.cpu_seconds > slowest_cpu:
                slowest_cpu, costliest = outcome.cpu_seconds, " ".join(case.args)[:300]
            for problem in outcome.problems:
                kinds[problem.split(":")[0]] += 1
                if len(examples) < 20:
                    examples.append(f"{' '.join(case.args)[:200]} → {problem[:200]}")
    return count, dict(kinds), examples, slowest, slowest_cpu, costliest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--write", type=Path, default=None)
    args = parser.parse_args()
    share = -(-args.cases // args.workers)
    jobs = [(args.seed, k * share, min(share, args.cases - k * share)) for k in range(args.workers)]
    began = time.perf_counter()
    with multiprocessing.get_context("spawn").Pool(args.workers) as pool:
        results = pool.map(_work, [j for j in jobs if j[2] > 0])
    took = time.perf_counter() - began
    kinds: collections.Counter[str] = collections.Counter()
    examples = [e for _, _, ex, _, _, _ in results for e in ex][:20]
    for _, k, _, _, _, _ in results:
        kinds.update(k)
    cases = sum(r[0] for r in results)
    lines = [f"{cases:,} cases (seed {args.seed}) in {took:,.0f} s on {args.workers} workers; "
             f"slowest case {max(r[3] for r in results):.1f} s wall, {max(r[4] for r in results):.1f} s CPU",
             f"cases with a problem, by kind: {dict(kinds) or 'none'}",
             f"the most CPU time: {max(results, key=lambda r: r[4])[5]}"]
    lines += [f"  e.g. {e}" for e in examples]
    print("\n".join(lines))
    if args.write is not None:
        command = f"python -m lab.fuzz.campaign --cases {args.cases} --seed {args.seed} --workers {args.workers}"
        args.write.write_text(_document(command, lines), encoding="utf-8")


def _document(command: str, lines: list[str]) -> str:
    return "\n".join([
        "# Reliability: the fuzz campaign", "",
        "Generated command lines — every command, every option, valid and hostile values (absurd numbers, names",
        "with rich markup, paths that are no paths, broken or adversarial config.json, YAML and calibration files,",
        "output targets in missing folders) — are run through the CLI. A case keeps the promise when bad input",
        "gets one `error:` line and a non-zero exit with nothing on stdout, good input gets output with no NaN,",
        "infinity or negative figure, and nothing raises a traceback or runs longer than 20 s of CPU time or 300 s",
        "of wall time (tests/fuzz/campaign.py says why CPU time). CI runs a 1,000-case slice on every change",
        "(tests/fuzz/test_campaign.py).", "",
        f"Measured with `{command}`:", "", "```", *lines, "```", ""])


if __name__ == "__main__":
    main()
