"""What would let `plan` serve a model that no server it compared can hold: its options re-run with one change
each (lighter weights, a lighter KV cache, more servers per replica, a shorter context), ranked by cost as
`estimator oom` ranks changes (none < time < quality < hardware), each with the memory per GPU of the best layout
it then finds."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from estimator.errors import EstimatorError
from estimator.report import Cost, Fix

if TYPE_CHECKING:
    from estimator.planning.plan import PlanReport

COSTS: tuple[Cost, ...] = ("none", "time", "quality", "hardware")
LIGHT_WEIGHTS = ("fp8", "awq-int4")  # the weight formats a serving engine offers to shrink a 16-bit model


def plan_changes(report: PlanReport, p: Mapping[str, Any]) -> list[tuple[str, dict[str, Any], Cost, str]]:
    """The changes of plan's options to try: (flags, fields replaced, cost, what it costs)."""
    out: list[tuple[str, dict[str, Any], Cost, str]] = []
    for fmt in LIGHT_WEIGHTS:
        if report.dtype in ("fp32", "fp16", "bf16") and fmt != report.dtype:
            out.append((f"--dtype {fmt}", {"dtype": fmt}, "quality", f"{fmt} weights"))
    if report.kv_dtype not in ("fp8", "int8"):
        out.append(("--kv-dtype fp8", {"kv_dtype": "fp8"}, "quality", "fp8 KV cache, as serving engines offer"))
    nodes = report.settings.max_nodes
    out.append((f"--max-nodes {nodes * 2}", {"max_nodes": str(nodes * 2)}, "hardware",
                f"replicas over up to {nodes * 2} servers"))
    if report.prompt_tokens > 1:
        half = report.prompt_tokens // 2
        out.append((f"--prompt-tokens {half}", {"prompt_tokens": str(half)}, "quality", "half the context"))
    return out


def plan_fixes(report: PlanReport, p: Mapping[str, Any], replan: Callable[[Mapping[str, Any]], PlanReport]
               ) -> tuple[Fix, ...]:
    """When no server can hold the model: each change that lets one, with the memory per GPU of the best layout
    it finds, cheapest first; empty when some server already can."""
    if not held_by_none(report):
        return ()
    changes = sorted(plan_changes(report, p), key=lambda change: COSTS.index(change[2]))
    found = [fix for label, fields, cost, detail in changes
             if (fix := _tried(replan, {**p, **fields}, label, cost, detail)) is not None]
    if found:
        return tuple(found)
    # none alone: the changes one after another, cheapest first (a later one of the same option replaces the
    # earlier), until a server holds the model
    merged: dict[str, Any] = dict(p)
    setters: dict[str, str] = {}  # option field → the change that set it last
    costs: list[Cost] = []
    for label, fields, cost, _ in changes:
        merged.update(fields)
        setters.update(dict.fromkeys(fields, label))
        costs.append(cost)
        fix = _tried(replan, merged, " ".join(dict.fromkeys(setters.values())), max(costs, key=COSTS.index),
                     "these changes together")
        if fix is not None:
            return (fix,)
    return ()


def held_by_none(report: PlanReport) -> bool:
    """No server the plan compared holds the model: none is feasible, and each that was placed failed on memory
    (one sequence does not fit any layout), not on a goal past what a plan holds or a latency limit, which a lighter
    model or a shorter context would not answer (and re-planning such a goal ten times is minutes of search)."""
    placed = [option for option in report.options if option.system is not None]
    return bool(placed) and not any(option.feasible for option in report.options) and all(
        option.reason is not None and ("does not fit" in option.reason or option.reason == "no layout fits")
        for option in placed)


def _tried(replan: Callable[[Mapping[str, Any]], PlanReport], fields: Mapping[str, Any], label: str, cost: Cost,
           detail: str) -> Fix | None:
    """The plan re-run with ``fields``: the Fix its best layout gives, None when still no server holds it."""
    try:
        changed = replan(fields)
    except EstimatorError:
        return None
    best = next((option for option in changed.options if option.feasible), None)
    if best is None or best.memory_per_gpu_bytes is None:
        return None
    return Fix(change=label, frees_bytes=None, per_gpu_bytes=best.memory_per_gpu_bytes, fits=True, cost=cost,
               cost_detail=f"{detail}; best: {best.system or best.gpu}, {best.cards} GPUs", time_factor=None)
