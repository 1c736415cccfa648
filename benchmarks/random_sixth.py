"""The sixth pass of issue 15 (docs/accuracy.md, written by benchmarks/random_report.py): the host's two states, read
from the rows' own probes by benchmarks/host_state.py; every figure below is computed from the committed rows."""

from __future__ import annotations

import textwrap
from pathlib import Path

from host_state import RATIOS, SEEDS, compare, fit_ratio, rows_of, states  # benchmarks/host_state.py, beside this file
from random_points import DATA, _inference

from estimator import default_catalog


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:.1f} µs"


def _example() -> str:
    """`estimate --model llama-3.2-1b --gpu h200 --profile hf`'s prefill and its host-bound span."""
    catalog = default_catalog()
    report = _inference(catalog, catalog.models.get("llama-3.2-1b"), {"dtype": "bf16"}, "hf", 1, 128, 0)
    v = next(n.values for n in report.assumptions if n.code.value == "host-bound" and n.values["phase"] == "prefill")
    return f"{v['seconds'] * 1e3:.1f} ms as {v['low_s'] * 1e3:.1f}–{v['high_s'] * 1e3:.1f} ms"  # type: ignore[operator]


def _wrap(text: str) -> str:
    return textwrap.fill(text, width=120, initial_indent="" if text.startswith("16.") else "   ",
                         subsequent_indent="   ", break_on_hyphens=False)


def sixth_pass(data: Path = DATA) -> str:
    rows = rows_of(data=data)
    shipped_us = default_catalog().profiles.get("hf").host_per_op_s * 1e6
    found = [states(rows, seed) for seed in SEEDS]
    ratio = fit_ratio(rows)
    lines = ["### Sixth pass (item 16): the host's two states", "",
             _wrap("16. **A host-bound time follows the host's state, which moves from case to case** (items 5 and 8 "
             "found the host's speed changing within one call; this item measures how, and what it does to the HF "
             "terms). "
             "Every row of seeds 3–6 carries a probe of one bare launch (an in-place add on a one-element tensor) "
             "taken just before its case. Per seed the probes fall into two states, split at the geometric mean of "
             "their 10th and 90th percentiles (`benchmarks/host_state.py`):"), "",
             "   | seed | probes | fast state (median) | slow state (median) | cases in the slow state |",
             "   | --- | ---: | ---: | ---: | ---: |"]
    lines += [f"   | {s.seed} | {s.probes} | {_us(s.fast_s)} | {_us(s.slow_s)} | {s.slow_share:.0%} |" for s in found]
    lines += ["", _wrap(f"A transformers operation's host cost is {ratio:.2f} × the bare launch probed just before its "
              "case (the ratio that fits seed 5's `fit` rows best, prefill and eager decode together, of "
              f"{RATIOS[0]:.2f}–{RATIOS[-1]:.2f}). "
              "With each held-out case's host cost at that ratio × its own probe — what a model that knew the host's "
              f"state at that moment would give — against the shipped profile's fixed {shipped_us:.2f} µs:"), "",
              "   | seed | term | cases | median abs error, shipped | at the case's own probe |",
              "   | --- | --- | ---: | ---: | ---: |"]
    lines += [f"   | {c.seed} | {c.term} | {c.cases} | {c.shipped:.1%} | {c.at_row_probe:.1%} |"
              for c in compare(rows, ratio)]
    shares = [s.slow_share for s in found]
    lines += ["", _wrap("So most of the eager decode's error on these rows is the host's state, which no figure fixed "
              "before the run can follow: the slow state holds "
              f"{min(shares):.0%}–{max(shares):.0%} of a session's cases and costs up to "
              f"{max(s.slow_s / s.fast_s for s in found):.1f}× the fast one. The prefill keeps most of its error at "
              "the "
              "case's own probe: it is "
              "item 8's overlap of host and GPU, not the host's speed. What the estimator does with this: the `hf` "
              "profile states the ratio (`host_op_bare_ratio`) and the span of the states "
              f"(`host_bare_op_range_s`: {_us(min(s.fast_s for s in found))} to {_us(max(s.slow_s for s in found))}, "
              "the fastest fast-state and the slowest slow-state median above), and a phase whose time the host "
              "sets carries an assumption (`host-bound`) with its time at both ends "
              "(`estimator.model.timing.host_state_range`): `estimate --model llama-3.2-1b --gpu h200 --profile hf "
              "--batch 1 "
              "--prompt-tokens 128` "
              f"prints the prefill's {_example()} on that host. A calibration's measured cost per "
              "operation describes the machine it ran on, so it drops the span. "
              "`tests/live/test_host_state_rows.py` checks the shipped figures against these rows."), ""]
    return "\n".join(lines)
