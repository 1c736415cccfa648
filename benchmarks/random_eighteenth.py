"""The eighteenth pass of issue 15 (docs/accuracy.md, written by benchmarks/random_report.py): every catalog family's
eager operations counted (item 32). The counts come from benchmarks/count_eager_ops.py (tests/data/measured/
eager-ops-cpu.json); "before" is the shipped profiles with only the five families the H200 rows counted, "after" the
shipped profiles. Every figure is computed here.

    python benchmarks/random_eighteenth.py      # the section as docs/accuracy.md prints it
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

from random_thirteenth import _pct, _wrap
from reference_points import _workload

from estimator import default_catalog, estimate
from estimator.catalog.profiles import EfficiencyProfile
from estimator.model.phases import eager_ops

MEASURED = Path(__file__).resolve().parent.parent / "tests" / "data" / "measured"
COUNTS = MEASURED / "eager-ops-cpu.json"
# the catalog's measured runs: one device session each (tests/data/measured/README.md)
SESSIONS = (MEASURED / "h200-2026-11-30.jsonl", MEASURED / "h200-2026-11-30-extra.jsonl",
            MEASURED / "reference" / "h200-measured.jsonl")
GPU_COUNTED = ("llama", "qwen2", "mistral", "gemma2", "gpt2")  # counted on the H200 (tests/data/measured/random)
Profiles = Callable[[str], EfficiencyProfile]


def counted() -> dict[str, dict[str, list[float]]]:
    return dict(json.loads(COUNTS.read_text(encoding="utf-8"))["families"])


def cpu_matches_gpu() -> tuple[int, int]:
    """(numbers the CPU count gives exactly as the H200 rows did, numbers compared) over the five GPU-counted
    families: each family's three per-layer and two outside counts."""
    hf = default_catalog().profiles.get("hf")
    found = counted()
    pairs = [(a, b) for family in GPU_COUNTED
             for a, b in zip([*found[family]["per_layer"], *found[family]["outside"]],
                             [*hf.eager_ops_per_layer[family], *hf.eager_ops_outside_layers[family]], strict=True)]
    return sum(a == b for a, b in pairs), len(pairs)


def before() -> Profiles:
    """The shipped profiles with only the five GPU-counted families' operations (the rule before this pass)."""
    profiles = default_catalog().profiles

    def chosen(name: str) -> EfficiencyProfile:
        p = profiles.get(name)
        return p.model_copy(update={
            "eager_ops_per_layer": {k: v for k, v in p.eager_ops_per_layer.items() if k in GPU_COUNTED},
            "eager_ops_outside_layers": {k: v for k, v in p.eager_ops_outside_layers.items() if k in GPU_COUNTED}})
    return chosen


def _rows() -> list[tuple[str, dict[str, Any]]]:
    return [(path.name, json.loads(line)) for path in SESSIONS
            for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip() and json.loads(line).get("kind") == "model"]


def _predict(row: dict[str, Any], profiles: Profiles) -> tuple[str, float, float]:
    """(case, predicted, measured) of a catalog hf decode or prefill row under ``profiles``."""
    catalog = default_catalog()
    model = catalog.models.get(row["model"])
    if row["phase"] == "decode":
        w = _workload("hf", row["batch"], row["context"], 1).model_copy(update={"profile": profiles("hf")})
        report = estimate(model, catalog.gpus.get("h200"), w)
        return f"decode b{row['batch']} ctx{row['context']}", float(report.time.decode_step_s or 0), \
            row["eager"]["median_s"]
    w = _workload("hf", row["batch"], row["prompt"], 0).model_copy(update={"profile": profiles("hf")})
    report = estimate(model, catalog.gpus.get("h200"), w)
    return f"prefill b{row['batch']} s{row['prompt']}", report.time.prefill_s, row["latency"]["median_s"]


def new_family_rows() -> list[tuple[str, str, float, float]]:
    """(model, case, error before, error after) of every catalog hf eager decode and timed prefill of a family this
    pass counts."""
    catalog, old, new = default_catalog(), before(), default_catalog().profiles.get
    fresh = set(counted()) - set(GPU_COUNTED)
    out = []
    for _, row in _rows():
        arch = catalog.models.get(row["model"]).arch
        if arch is None or arch.model_type not in fresh or row["phase"] not in ("decode", "prefill"):
            continue
        if row["phase"] == "prefill" and "latency" not in row:
            continue
        case, was, measured = _predict(row, old)
        _, now, _ = _predict(row, new)
        out.append((row["model"], case, was / measured - 1, now / measured - 1))
    return out


def per_step_costs() -> list[tuple[str, str, float, float]]:
    """(session file, model, measured ÷ counted operations, measured ÷ layers) of every batch-1 hf eager decode of a
    dense model: what one operation, or one layer, cost the host in that session."""
    catalog = default_catalog()
    out = []
    for name, row in _rows():
        model = catalog.models.get(row["model"])
        if row["phase"] != "decode" or row["batch"] != 1 or model.arch is None or model.arch.moe is not None:
            continue
        ops = eager_ops(model.arch, _workload("hf", 1, row["context"], 1), decode=True)
        step = row["eager"]["median_s"]
        out.append((name, row["model"], step / ops, step / model.arch.num_layers))
    return out


def _spread(values: list[float]) -> str:
    return f"{max(values) / min(values):.2f}×"


def costs_text() -> str:
    found = per_step_costs()
    parts = []
    for session in sorted({s for s, *_ in found}):
        group = [f for f in found if f[0] == session]
        per_op, per_layer = [g[2] for g in group], [g[3] for g in group]
        parts.append(f"`{session}` ({len(group)} decodes of {len({g[1] for g in group})} models): "
                     f"{min(per_op) * 1e6:.1f}–{max(per_op) * 1e6:.1f} µs per operation ({_spread(per_op)}, median "
                     f"{statistics.median(per_op) * 1e6:.1f}) against {min(per_layer) * 1e3:.2f}–"
                     f"{max(per_layer) * 1e3:.2f} ms per layer ({_spread(per_layer)})")
    slowest = max(found, key=lambda f: f[2])
    return "; ".join(parts) + f"; the one outlier per operation is {slowest[1]} ({slowest[2] * 1e6:.1f} µs)"


def counted_family_b1() -> str:
    """The batch-1 hf eager decodes of the GPU-counted families in the newly counted families' two sessions."""
    catalog, shipped = default_catalog(), default_catalog().profiles.get
    out = []
    for session, row in _rows():
        arch = catalog.models.get(row["model"]).arch
        if session in (SESSIONS[0].name, SESSIONS[1].name) and row["phase"] == "decode" and row["batch"] == 1 \
                and arch is not None and arch.model_type in GPU_COUNTED:
            _, predicted, measured = _predict(row, shipped)
            out.append(f"{row['model']} {_pct(predicted / measured - 1)}")
    return ", ".join(out)


def table() -> list[str]:
    lines = ["   | model | case | before | after |", "   | --- | --- | ---: | ---: |"]
    lines += [f"   | {m} | {c} | {_pct(b)} | {_pct(a)} |" for m, c, b, a in new_family_rows()]
    return lines


TEXT = (
    "32. **Every catalog family's operations counted** (the issue: the `hf` profile \"gives the same step for every "
    "model with the same layer count\"; items 22 and 26 counted the operations of the five families the random rows "
    "draw, and every other family still paid 0.966 ms of host time a layer, and `hf-graph` 41 µs of GPU time). "
    "`benchmarks/count_eager_ops.py` counts on the CPU what the H200 rows counted — a TorchDispatchMode around "
    "transformers 5.17's prefill forward and static-cache decode step, random weights — with each catalog family's "
    "config.json made tiny (the operations do not depend on the widths): one layer is a 4-layer model less a "
    "2-layer one over 2. For the five GPU-counted families it gives {exact} of {compared} counts exactly as the "
    "H200 did (`tests/data/measured/eager-ops-cpu.json`), so the `hf` and `hf-graph` profiles now carry its counts "
    "for {fresh} (MoE layers dispatch the same operations whatever experts the tokens pick: transformers 5.17's "
    "grouped_mm forward; a model's first dense layers, DeepSeek's and GLM's, are counted as MoE ones; a family whose "
    "layers repeat a pattern of sliding and full attention is counted over whole periods, so its masks of both kinds "
    "are in). Families not counted keep the figure per layer: gpt_oss (no SDPA path in 5.17), llama4_text (a period "
    "whose mean is "
    "not a whole number), the multimodal text towers and the hybrids of linear attention or Mamba layers. What a step "
    "costs per operation, measured ÷ counted, against per layer, over "
    "each session's batch-1 eager decodes of dense models: {costs}. Where a session ran several families, a cost "
    "per operation spreads less than a cost per layer; what is left is the host's state, one figure per session "
    "(items 5 and 16). The catalog rows of the newly counted families, before → after. Their two sessions' hosts ran "
    "at the medians above, where the profile's 16.09 µs per operation was fitted on seed 0's session, so the dense "
    "families' batch-1 decodes now read high, as the GPU-counted families' models of those sessions do ({counted}); "
    "the 0.966 ms a layer they paid before happened to sit near those hosts' speed:")


def eighteenth_pass() -> str:
    exact, compared = cpu_matches_gpu()
    fresh = [family for family in counted() if family not in GPU_COUNTED]
    text = TEXT.format(exact=exact, compared=compared, costs=costs_text(), counted=counted_family_b1(),
                       fresh=", ".join(fresh[:-1]) + " and " + fresh[-1])
    return "\n".join(["### Eighteenth pass (item 32): every catalog family's operations counted", "",
                      _wrap(text, first=""), "", *table(), ""])


if __name__ == "__main__":
    print(eighteenth_pass())
