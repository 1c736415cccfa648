"""Fuzz-campaign class 'unbounded work' in plan: `--target-tokens-per-s 1e11` and `--concurrency 32Ki` hung past
20 s under load, as the throughput search's work grew with the goal (and 1e11 tokens/s came back "feasible" on
34 million GPUs). A plan holds at most `MAX_REPLICAS` replicas; a goal past them is one reason per system, found
with one evaluation per layout."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from estimator.catalog.files import read_yaml
from estimator.catalog.registry import Catalog
from estimator.inference.estimate import estimate
from estimator.inference.workload import InferenceWorkload
from estimator.planning import search
from estimator.planning.layouts import layouts
from estimator.planning.plan import Goal, Settings, load_prices, plan
from estimator.planning.search import MAX_REPLICAS


def _plan(catalog: Catalog, w: InferenceWorkload, goal: Goal, model: str = "llama-3.1-8b",
          settings: Settings | None = None) -> Any:
    prices = load_prices(read_yaml(catalog.root / "costs.yaml"), None, resolve=catalog.gpus.get,
                         resolve_system=catalog.systems.get)
    system = catalog.systems.get("hgx-h100")
    return plan(catalog.model(model), [(system, catalog.system_gpu(system))], w, goal, prices, settings=settings)


def test_a_throughput_goal_beyond_any_plan_is_one_reason_and_bounded_work(
        catalog: Catalog, make_workload: Callable[..., InferenceWorkload], monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    real = estimate

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(search, "estimate", counted)
    w = make_workload(prompt_tokens=2048, output_tokens=256)
    (option,) = _plan(catalog, w, Goal(target_tokens_per_s=1e11)).options
    assert not option.feasible and option.cards is None
    assert option.reason.startswith("100,000,000,000 tokens/s needs ")
    assert option.reason.endswith(f"more than the {MAX_REPLICAS:,} a plan holds")
    system = catalog.systems.get("hgx-h100")
    count = len(list(layouts(catalog.model("llama-3.1-8b"), system, max_nodes=Settings().max_nodes,
                             allow_tp_across=False)))
    assert len(calls) <= 2 * count  # one prefill chunk and one decode estimate per layout, no search past them


def test_a_concurrency_beyond_any_plan_is_one_reason(catalog: Catalog,
                                                     make_workload: Callable[..., InferenceWorkload]) -> None:
    w = make_workload(prompt_tokens=32768, output_tokens=4096)
    # one server a replica: a 70B model's 36k-token sequences, a few dozen to a TP-8 replica, 1,000,000 of them
    (option,) = _plan(catalog, w, Goal(concurrency=1_000_000), model="llama-3.1-70b",
                      settings=Settings(max_nodes=1)).options
    assert not option.feasible
    assert option.reason.startswith("1,000,000 sequences need ")
    assert option.reason.endswith(f"more than the {MAX_REPLICAS:,} a plan holds")


def test_a_goal_within_the_ceiling_still_plans(catalog: Catalog,
                                               make_workload: Callable[..., InferenceWorkload]) -> None:
    w = make_workload(prompt_tokens=2048, output_tokens=256)
    (option,) = _plan(catalog, w, Goal(target_tokens_per_s=1e6)).options
    assert option.feasible and option.replicas is not None and option.replicas <= MAX_REPLICAS
    assert option.tokens_per_s is not None and option.tokens_per_s >= 1e6
