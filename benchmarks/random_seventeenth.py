"""The seventeenth pass of issue 15 (docs/accuracy.md, written by benchmarks/random_report.py): the CUDA-graph decode's
fixed GPU cost counted per operation alone (item 31). Every figure here is computed from tests/data/measured/random:
"before" is the rule as it was (the lean decode's fixed cost per layer, 41 µs or a calibration's reading, plus 1.43 µs
per counted operation), "after" the shipped profiles.

    python benchmarks/random_seventeenth.py      # the section as docs/accuracy.md prints it
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import random_points as rp
from random_thirteenth import _pct, _wrap

from estimator import default_catalog
from estimator.catalog.profiles import EfficiencyProfile
from estimator.catalog.registry import Catalog

PER_OP_BEFORE = 1.43e-6  # hf-graph's gpu_per_op_s beside the per-layer cost (item 19)
TERM = "decode hf-graph"


@dataclass(frozen=True)
class GraphDecode:
    split: str
    family: str
    fp32: bool
    seed: int
    batch: int
    layers: int
    ops: float  # the step's counted operations (the layers' and those outside them)
    layer_ops: float  # the layers' alone, which the rule before counted
    base_s: float  # the prediction without any fixed cost
    per_layer_s: float  # the per-layer figure the profile carried (41 µs, or the calibration's lean reading)
    after_s: float  # the shipped prediction
    measured_s: float

    @property
    def before_s(self) -> float:
        return self.base_s + self.layers * self.per_layer_s + self.layer_ops * PER_OP_BEFORE


def _tweaked(profiles: rp.Profiles, update: dict[str, Any]) -> rp.Profiles:
    return lambda name: profiles(name).model_copy(update=update) if name == "hf-graph" else profiles(name)


def _decode_s(catalog: Catalog, row: dict[str, Any], profiles: rp.Profiles) -> float:
    report = rp._inference(catalog, rp.model_of(row), row, "hf-graph", row["batch"], row["context"], 1,
                           profiles=profiles)
    return float(report.time.decode_step_s)


def _one(catalog: Catalog, row: dict[str, Any], profiles: rp.Profiles, split: str) -> GraphDecode:
    base = _decode_s(catalog, row, _tweaked(profiles, {"gpu_per_op_s": 0.0, "per_layer_step_s": 0.0}))
    unit = _decode_s(catalog, row, _tweaked(profiles, {"gpu_per_op_s": 1e-6, "per_layer_step_s": 0.0}))
    layers_only = _decode_s(catalog, row, _tweaked(profiles, {"gpu_per_op_s": 1e-6, "per_layer_step_s": 0.0,
                                                               "eager_ops_outside_layers": {},
                                                               "eager_ops_per_math_layer": 0}))
    arch = rp.model_of(row).arch
    assert arch is not None
    return GraphDecode(split, arch.model_type, row["dtype"] == "fp32", row.get("seed", 0), row["batch"],
                       arch.num_layers,
                       round((unit - base) / 1e-6), round((layers_only - base) / 1e-6), base,
                       profiles("hf-graph").per_layer_step_s,
                       _decode_s(catalog, row, profiles), row["graph"]["median_s"])


def graph_decodes(data: Path = rp.DATA) -> list[GraphDecode]:
    """Every graph decode of the random rows, a calibrated seed's twice (shipped, then its call's calibration)."""
    catalog = default_catalog()
    shipped: rp.Profiles = catalog.profiles.get
    out = []
    for row in rp.load(sorted(data.glob("*.jsonl"))):
        if row.get("error") or row["kind"] != "model" or row.get("phase") != "decode" or "graph" not in row:
            continue
        split, entry = rp.split_of(row), rp.calibration_of(row.get("seed", 0), data)
        out.append(_one(catalog, row, shipped, split))
        if entry is not None and split != "fit":
            out.append(_one(catalog, row, rp.calibrated(catalog, entry), f"{split} cal"))
    return out


def fit_rows(found: list[GraphDecode]) -> list[GraphDecode]:
    """Seed 0's 14 fit 16-bit graph decodes, on which items 6 and 19 set the cost per operation."""
    return [d for d in found if d.split == "fit" and d.seed == 0 and not d.fp32]


def per_op_fit(found: list[GraphDecode]) -> float:
    """Item 6's procedure: the median over the fit rows of (graph time − the GPU terms) ÷ counted operations."""
    return statistics.median((d.measured_s - d.base_s) / d.ops for d in fit_rows(found))


def both_terms(found: list[GraphDecode]) -> tuple[float, float]:
    """A per-layer and a per-operation cost together, least squares of the relative residual over the fit rows (the
    normal equations of two unknowns): whether the rows hold a per-layer cost beside the operations'."""
    xs = [(d.layers / d.measured_s, d.ops / d.measured_s, 1 - d.base_s / d.measured_s) for d in fit_rows(found)]
    aa, ab, bb = (sum(a * a for a, _, _ in xs), sum(a * b for a, b, _ in xs), sum(b * b for _, b, _ in xs))
    ay, by = sum(a * y for a, _, y in xs), sum(b * y for _, b, y in xs)
    det = aa * bb - ab * ab
    return (bb * ay - ab * by) / det, (aa * by - ab * ay) / det


def _errors(group: list[GraphDecode], when: Callable[[GraphDecode], float]) -> list[float]:
    return [(when(d) - d.measured_s) / d.measured_s for d in group]


def family_medians(found: list[GraphDecode]) -> str:
    """The signed median error of each family's 16-bit graph decodes (every split, shipped profiles), before → after."""
    families = sorted({d.family for d in found})
    out = []
    for family in families:
        group = [d for d in found if d.family == family and not d.fp32 and not d.split.endswith("cal")]
        before = statistics.median(_errors(group, lambda d: d.before_s))
        after = statistics.median(_errors(group, lambda d: d.after_s))
        out.append(f"{family} {_pct(before)} → {_pct(after)} ({len(group)})")
    return ", ".join(out)


def gpt2_range(found: list[GraphDecode]) -> str:
    """GPT-2's 16-bit graph decodes at batch 1 (shipped profiles) before: their range, how many, over which seeds."""
    group = [d for d in found if d.family == "gpt2" and not d.fp32 and d.batch == 1 and not d.split.endswith("cal")]
    errors = _errors(group, lambda d: d.before_s)
    return (f"{_pct(min(errors))} to {_pct(max(errors))} before ({len(group)} steps of {len({d.seed for d in group})} "
            "seeds)")


def signed_medians(found: list[GraphDecode]) -> str:
    """Per split, the 16-bit graph decodes' signed median error, before → after."""
    out = []
    for split in rp.SPLITS:
        group = [d for d in found if d.split == split and not d.fp32]
        if group:
            runs = [statistics.median(_errors(group, when)) for when in (lambda d: d.before_s, lambda d: d.after_s)]
            out.append(f"{split} {_pct(runs[0])} → {_pct(runs[1])}")
    return "; ".join(out)


def within_moves(found: list[GraphDecode]) -> dict[str, int]:
    """How many splits have more, and how many fewer, steps within the target after than before (of how many)."""
    moves = []
    for split in {d.split for d in found}:
        group = [d for d in found if d.split == split]
        runs = [sum(abs(e) <= rp.TARGETS[TERM] for e in _errors(group, when))
                for when in (lambda d: d.before_s, lambda d: d.after_s)]
        moves.append(runs[1] - runs[0])
    return {"better": sum(m > 0 for m in moves), "worse": sum(m < 0 for m in moves), "splits": len(moves)}


def table(found: list[GraphDecode]) -> list[str]:
    lines = ["   | term | split | cases | within ±30%: before → after | median abs error | worst |",
             "   | --- | --- | ---: | ---: | ---: | --- |"]
    for split in rp.SPLITS:
        group = [d for d in found if d.split == split]
        if not group:
            continue
        runs = [_errors(group, lambda d: d.before_s), _errors(group, lambda d: d.after_s)]
        within = " → ".join(str(sum(abs(e) <= rp.TARGETS[TERM] for e in v)) for v in runs)
        median = " → ".join(f"{statistics.median(map(abs, v)):.1%}" for v in runs)
        worst = " → ".join(_pct(max(v, key=abs)) for v in runs)
        lines.append(f"   | {TERM} | {split} | {len(group)} | {within} | {median} | {worst} |")
    return lines


def _check_profile(fitted: float) -> EfficiencyProfile:
    graph = default_catalog().profiles.get("hf-graph")
    assert round(fitted, 8) == graph.gpu_per_op_s, (fitted, graph.gpu_per_op_s)
    return graph


TEXT = (
    "31. **The CUDA-graph decode's fixed cost, counted once** (GPT-2's 16-bit graph decodes at batch 1 read {gpt2}, "
    "while Gemma 2's read low). Item 6 gave the `hf-graph` profile a GPU cost per counted aten operation of the "
    "layers — a small kernel's launch and tail, which a graph keeps — and left beside it the lean decode's fixed cost "
    "per layer (41 µs, `per_layer_step_s`, fitted on the optimized engine's graph decode, whose few kernels it stands "
    "for). The count already holds those kernels, so a layer paid its kernels' floor twice, and a family with few "
    "operations a layer (GPT-2: 41 against Llama's 57–63 and Gemma 2's 81–87) paid most for it; and the operations "
    "outside the layers (embedding, masks, final norm, head: 32–85 a step), which the `hf` profile counts since item "
    "26 and the graph replays too, were not counted. Fitted together by least squares over the fit rows, a per-layer "
    "and a per-operation cost come out at {both_layer} a layer and {both_op} an operation: the rows hold no "
    "per-layer cost. So a family whose operations are counted now pays its operations alone, the layers' and those "
    "outside them (`timing.fixed_gpu_s`; `hf-graph` takes the `hf` profile's outside counts), and the per-layer "
    "figure stays for families not counted; `--explain` names which (\"N operations' fixed cost\"). The cost per "
    "operation, fitted again by item 6's procedure (the median over seed 0's 14 fit 16-bit graph decodes of the time "
    "beyond the GPU terms, over the counted operations): 1.43 µs → {per_op}. `calibrate`'s reading of the lean "
    "decode's cost per layer replaces the per-layer figure only: it times the lean engine's kernels, not "
    "transformers' (all three calibrated calls read 37.9–38.4 µs against 41, while their sessions' graph decodes ran "
    "from 5% fast to 8% slow against the fit rows). Each family's 16-bit graph decodes, signed median before → after "
    "(cases): {families}. The decode rows, before → after (every split was measured before this was written; only "
    "seed 0's fit rows set the figure):")


LEFT = (
    "More steps fall within ±30% in {better} of the {splits} splits, fewer in {worse}; the medians move both ways, by "
    "how fast each session's GPU ran a small kernel against seed 0's fit rows — the 16-bit steps' signed median per "
    "split, before → after: {signed}. What was left at the ends when this pass landed was not the fixed cost: fp32 "
    "steps at batch 8–32 read low (PyTorch's fp32 GEMMs of a few rows take 2–4 × their weights' read, item 19's note) "
    "and seed 4's fp32 multi-query step at batch 32 high (the view of one KV head walked by every query head); item 33 "
    "times both, and the table above is recomputed with it.")


def seventeenth_pass(data: Path = rp.DATA) -> str:
    found = graph_decodes(data)
    fitted = per_op_fit(found)
    _check_profile(fitted)
    layer_s, op_s = both_terms(found)
    text = TEXT.format(both_layer=f"{layer_s * 1e6:+.1f} µs".replace("-", "−"), both_op=f"{op_s * 1e6:.2f} µs",
                       per_op=f"{fitted * 1e6:.2f} µs", families=family_medians(found), gpt2=gpt2_range(found))
    lines = ["### Seventeenth pass (item 31): the graph decode's fixed cost, counted once", "",
             _wrap(text, first=""), "", *table(found), "",
             _wrap(LEFT.format(signed=signed_medians(found), **within_moves(found))), ""]
    return "\n".join(lines)


if __name__ == "__main__":
    print(seventeenth_pass())
