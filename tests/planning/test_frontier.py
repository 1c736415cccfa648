"""The cost-versus-latency frontier of a plan: options no other beats in $/Mtok, TTFT and TPOT at once."""

from __future__ import annotations

from collections.abc import Callable

from estimator.catalog.files import read_yaml
from estimator.catalog.registry import Catalog
from estimator.inference.workload import InferenceWorkload
from estimator.planning.plan import Goal, PlanOption, Prices, frontier, load_prices, plan


def _prices(catalog: Catalog) -> Prices:
    return load_prices(read_yaml(catalog.root / "costs.yaml"), None, resolve=catalog.gpus.get,
                       resolve_system=catalog.systems.get)


def _one(catalog: Catalog, make_workload: Callable[..., InferenceWorkload]) -> PlanOption:
    system = catalog.systems.get("hgx-h100")
    report = plan(catalog.model("llama-3.1-8b"), [(system, catalog.gpus.get(system.gpu))],
                  make_workload(prompt_tokens=1024, output_tokens=128), Goal(concurrency=8), _prices(catalog))
    return report.options[0]


def _at(option: PlanOption, cost: float | None, ttft: float, tpot: float) -> PlanOption:
    return option.model_copy(update={"usd_per_million_tokens": cost, "time_to_first_token_s": ttft,
                                     "time_per_output_token_s": tpot})


def test_frontier_by_hand(catalog: Catalog, make_workload: Callable[..., InferenceWorkload]) -> None:
    o = _one(catalog, make_workload)
    options = [_at(o, 1.0, 0.5, 0.05),   # cheapest: on it
               _at(o, 2.0, 0.2, 0.02),   # dearer but faster in both: on it
               _at(o, 2.5, 0.3, 0.03),   # beaten by the second in all three: off
               _at(o, 3.0, 0.1, 0.04),   # shortest TTFT: on it
               _at(o, 1.0, 0.5, 0.05),   # the same point as the first: neither beats the other, both on it
               _at(o, None, 0.1, 0.01)]  # not priced: no answer
    assert [x.pareto for x in frontier(options)] == [True, True, False, True, True, None]


def test_plan_marks_every_feasible_option(catalog: Catalog, make_workload: Callable[..., InferenceWorkload]) -> None:
    pairs = [(catalog.systems.get(n), catalog.gpus.get(catalog.systems.get(n).gpu)) for n in ("hgx-h100", "hgx-h200")]
    report = plan(catalog.model("llama-3.1-8b"), pairs, make_workload(prompt_tokens=1024, output_tokens=128),
                  Goal(concurrency=8), _prices(catalog))
    priced = [o for o in report.options if o.feasible and o.usd_per_million_tokens is not None]
    assert priced and all(o.pareto is not None for o in priced)
    assert any(o.pareto for o in priced)  # the cheapest option is never beaten on cost
    assert report.options[0].pareto is True  # ranked by cost: the first is the cheapest
