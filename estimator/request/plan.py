"""A plan request: the option values of `plan` (or the HTTP API's /v1/plan fields) converted at the door, the
candidate servers chosen from the catalog, and the PlanReport."""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from estimator.request.choices import Logits, SortBy
from estimator.request.convert import choice, count, refuse, split_list
from estimator.request.errors import FieldInvalid, located
from estimator.request.formats import inference_workload
from estimator.request.options import CEILINGS

if TYPE_CHECKING:
    from estimator.catalog.architecture import ModelSpec
    from estimator.catalog.registry import Catalog
    from estimator.catalog.specs import GpuSpec
    from estimator.catalog.systems import SystemSpec
    from estimator.planning.costs import Prices
    from estimator.planning.plan import Goal, PlanReport


def number(field: str, text: str | float | None) -> float | None:
    """A positive finite number (seconds, tokens per second), or None for a field not given."""
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        raise FieldInvalid(field, "{" + field + "} must be a number, got {text}", text=repr(text)) from None
    if not math.isfinite(value) or value <= 0:
        raise FieldInvalid(field, "{" + field + "} must be a positive finite number, got {text}", text=repr(text))
    return value


def fraction(field: str, text: str | float) -> float:
    """A fraction in [0, 1)."""
    value = number(field, text) if str(text).strip() not in ("0", "0.0") else 0.0
    if value is None or not 0 <= value < 1:
        raise FieldInvalid(field, "{" + field + "} must be a fraction in [0, 1), got {text}", text=repr(text))
    return value


def plan_cards(gpu: list[str] | str | None, gpus: str | None) -> list[str] | None:
    """The cards `plan` compares: every ``gpu`` (repeated or comma-separated) and the deprecated ``gpus``; None:
    none named. A number given to ``gpus`` (the tensor-parallel degree elsewhere) is refused: plan searches it."""
    given = [gpu] if isinstance(gpu, str) else list(gpu or [])
    if gpus is not None:
        if all(t.strip().isdigit() for t in split_list("gpus", gpus)):
            raise FieldInvalid("gpus", "{gpus} {text}: plan searches the tensor-parallel degree and the GPU count "
                               "itself; name the cards to compare with {gpu} (e.g. {gpu} h100)", text=gpus)
        given.append(gpus)
    return [name for text in given for name in split_list("gpu", text)] or None


def candidates(catalog: Catalog, gpus: list[str] | None,
               systems: str | None) -> tuple[list[tuple[SystemSpec, GpuSpec]], list[GpuSpec]]:
    """(system, GPU) pairs to compare, and the named GPUs no system holds."""
    chosen = [] if systems is None else [catalog.systems.get(name) for name in split_list("systems", systems)]
    unplaced = []
    for name in gpus or []:
        card = catalog.gpus.get(name)
        found = catalog.systems_for(card)
        chosen += found
        if not found:
            unplaced.append(card)
    if systems is None and gpus is None:
        chosen = list(catalog.systems)
    unique = list({s.name: s for s in chosen}.values())
    return [(s, catalog.system_gpu(s)) for s in unique], unplaced


def _goal(p: Mapping[str, Any]) -> Goal:
    """plan's goal, checked; a value past its bound (``concurrency``) refused at its field."""
    from pydantic import ValidationError

    from estimator.planning.plan import Goal

    try:
        goal = Goal(concurrency=None if p["concurrency"] is None else count("concurrency", p["concurrency"]),
                    target_tokens_per_s=number("target_tokens_per_s", p["target_tokens_per_s"]),
                    max_ttft_s=number("max_ttft_s", p["max_ttft_s"]), max_tpot_s=number("max_tpot_s", p["max_tpot_s"]))
    except ValidationError as error:
        raise located(error, {name: name for name in Goal.model_fields}) from None
    goal.check()
    return goal


def plan_report(catalog: Catalog, model: ModelSpec, p: Mapping[str, Any]) -> PlanReport:
    """The PlanReport for `plan`'s option values ``p`` (field → value as parsed): each converted here, once. When
    no server holds the model, it ends with the changes that let one (`estimator.request.plan_fixes`)."""
    from estimator.request.plan_fixes import plan_fixes

    report = _plan_alone(catalog, model, p)
    found = plan_fixes(report, p, lambda changed: _plan_alone(catalog, model, changed))
    return report.model_copy(update={"fixes": found}) if found else report


def _plan_alone(catalog: Catalog, model: ModelSpec, p: Mapping[str, Any]) -> PlanReport:
    from estimator.planning.plan import Settings, plan

    refuse("plan", {"explain": bool(p.get("explain")), "units": p.get("units") is not None})
    pairs, unplaced = candidates(catalog, plan_cards(p.get("gpu"), p["gpus"]), p["systems"])
    settings = Settings(headroom=fraction("headroom", p["headroom"]), step_tokens=count("step_tokens",
                        p["step_tokens"], at_most=CEILINGS["step_tokens"]),
                        max_nodes=count("max_nodes", p["max_nodes"], at_most=CEILINGS["max_nodes"]),
                        allow_tp_across=bool(p["allow_tp_across_domains"]))
    goal = _goal(p)
    logits = choice("logits", Logits, p.get("logits") or Logits.last)
    assert logits is not None
    workload = inference_workload(catalog, p["dtype"], p["kv_dtype"], p["profile"], group_size=p.get("group_size"),
                                  logits=logits.value, model=model,
                                  prompt_tokens=count("prompt_tokens", p["prompt_tokens"]),
                                  output_tokens=count("output_tokens", p["output_tokens"], allow_zero=True))
    sort = choice("sort", SortBy, p["sort"])
    assert sort is not None
    return plan(model, pairs, workload, goal, price_book(catalog, p["prices"]), sort=sort.value, settings=settings,
                unplaced=unplaced)


def price_book(catalog: Catalog, prices: Path | None) -> Prices:
    """The shipped costs (specs/costs.yaml) under the user's prices file, if any."""
    from estimator.catalog.files import read_mapping
    from estimator.planning.plan import load_prices

    costs = read_mapping(catalog.file("costs.yaml"), "costs file")
    user = None if prices is None else read_mapping(prices, "prices file")
    return load_prices(costs, user, user_path=prices, resolve=catalog.gpus.get, resolve_system=catalog.systems.get)


def plan_notes(report: PlanReport) -> list[str]:
    """The plan's assumptions, worded, for the XLSX's "assumptions" sheet (`plan` and `estimator serve`)."""
    from estimator.notes import word

    return [word(n, binary=False) for n in report.assumptions]
