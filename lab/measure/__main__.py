"""One entry point for the lab's measurements: ``python -m lab.measure NAME [OPTIONS]`` runs ``lab/measure/NAME.py``
with the options (each measurement's own ``--help`` lists them); with no name, the list of measurements.

Run from the repository root on the machine to be measured (a GPU for all but the ``*_cpu`` traces and the
``count_*`` counts); tests/data/measured/README.md gives the command each committed row file came from.
"""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
HELPERS = {"__init__", "__main__", "needs_torch", "dispatch_timing"}  # imported by the measurements, not run


def measurements() -> list[str]:
    return sorted(p.stem for p in HERE.glob("*.py") if p.stem not in HELPERS)


def main() -> None:
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        for name in measurements():
            first = (HERE / f"{name}.py").read_text(encoding="utf-8").split('"""')[1].strip().splitlines()[0]
            print(f"  {name:24} {first}")
        return
    name = sys.argv[1]
    if name not in measurements():
        raise SystemExit(f"no measurement {name!r}; one of: {', '.join(measurements())}")
    sys.argv = [str(HERE / f"{name}.py"), *sys.argv[2:]]
    runpy.run_module(f"lab.measure.{name}", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
