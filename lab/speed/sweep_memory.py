"""Sweep memory per point: peak memory of `estimator sweep` at two grid sizes, per output format; the slope is the
memory each point costs (the figure behind `estimator.request.sweep.DEFAULT_MAX_POINTS`).

Run from the repository root:  python -m lab.speed.sweep_memory
Grid: llama-3.1-8b on an H100, 100 batches × 100 prompt lengths × N output lengths, N = 10 and 40 (100,000 and
400,000 points), written to a temporary file as CSV and as JSON. Peak memory is the child process's maxrss (the
kernel's own accounting, `os.wait4`), as `/usr/bin/time -v` reports it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def peak_bytes(args: list[str]) -> int:
    """Peak resident memory of ``estimator ARGS`` run as a child process."""
    child = subprocess.Popen([sys.executable, "-m", "estimator", *args], cwd=ROOT, stdout=subprocess.DEVNULL,
                             env={**os.environ, "PYTHONPATH": str(ROOT)})
    _, status, usage = os.wait4(child.pid, 0)
    if status != 0:
        raise SystemExit(f"estimator {' '.join(args[:4])} … failed ({status})")
    return usage.ru_maxrss * 1024  # kilobytes on Linux


def main() -> None:
    batches = ",".join(str(b) for b in range(1, 101))
    prompts = ",".join(str(256 * k) for k in range(1, 101))
    with tempfile.TemporaryDirectory() as scratch:
        for output_format in ("csv", "json"):
            sizes = []
            for outputs in (10, 40):
                points = 100 * 100 * outputs
                out = Path(scratch) / f"grid-{outputs}.{output_format}"
                peak = peak_bytes(["sweep", "--model", "llama-3.1-8b", "--gpu", "h100", "--batch", batches,
                                   "--prompt-tokens", prompts, "--output-tokens",
                                   ",".join(str(8 * k) for k in range(outputs)), "--format", output_format,
                                   "-o", str(out), "--force"])
                out.unlink()
                sizes.append((points, peak))
                print(f"{output_format}: {points:,} points, peak {peak / 1e6:,.0f} MB")
            (n1, m1), (n2, m2) = sizes
            print(f"{output_format}: {(m2 - m1) / (n2 - n1):,.0f} bytes per point (slope)")


if __name__ == "__main__":
    main()
