"""plan: every card ranked, rows agree with estimate, infeasible cards last with a reason, costs from prices."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from estimator.catalog.files import read_yaml
from estimator.catalog.registry import Catalog
from estimator.errors import SpecInvalid, WorkloadInvalid
from estimator.inference.estimate import estimate
from estimator.inference.workload import InferenceWorkload
from estimator.planning.plan import HOURS_PER_YEAR, Goal, Prices, load_prices, plan


@pytest.fixture(scope="module")
def prices(catalog: Catalog) -> Prices:
    return load_prices(read_yaml(catalog.root / "costs.yaml"), None)


def test_concurrency_plan_ranks_every_card(shipped_catalog: Catalog, workload: Callable[..., InferenceWorkload],
                                           prices: Prices) -> None:
    catalog = shipped_catalog  # every shipped card: at least 20 of them serve the 70B model
    w = workload(prompt_tokens=4096, output_tokens=512)
    report = plan(catalog.model("llama-3.1-70b"), list(catalog.gpus), w, Goal(concurrency=32), prices)
    assert len(report.options) == len(catalog.gpus)
    ranked = [o for o in report.options if o.feasible]
    assert len(ranked) >= 20
    assert [o.rank for o in ranked] == list(range(1, len(ranked) + 1))
    assert all(not o.feasible and o.reason for o in report.options[len(ranked):])
    costs = [o.usd_per_million_tokens for o in ranked if o.usd_per_million_tokens is not None]
    assert costs == sorted(costs)
    for option in ranked:  # each row is estimate at its batch and GPU count
        gpu = catalog.gpus.get(option.gpu)
        assert option.tensor_parallel is not None
        assert option.batch_per_replica == 32
        r = estimate(catalog.model("llama-3.1-70b"), gpu, w.model_copy(update={"batch": 32,
                                                                              "tensor_parallel": option.cards}))
        assert r.memory.fits
        assert option.memory_per_gpu_bytes == r.memory.per_gpu_bytes
        assert option.tokens_per_s == r.time.tokens_per_s
        assert option.max_batch == r.memory.max_batch
        assert r.memory.gpus_required == option.cards  # fewest cards


def test_owned_cost_arithmetic(catalog: Catalog, workload: Callable[..., InferenceWorkload], prices: Prices) -> None:
    h100 = catalog.gpus.get("h100")
    report = plan(catalog.model("llama-3.1-8b"), [h100], workload(), Goal(concurrency=8), prices)
    o = report.options[0]
    assert o.cards == 1
    assert h100.price_usd is not None and h100.tdp_w is not None
    assert o.tokens_per_s is not None
    per_hour = h100.price_usd / (prices.amortization_years * HOURS_PER_YEAR) + h100.tdp_w / 1000 * \
        prices.electricity_usd_per_kwh
    assert o.usd_per_hour == pytest.approx(per_hour, rel=1e-15)
    assert o.usd_per_million_tokens == pytest.approx(per_hour / (o.tokens_per_s * 3600) * 1e6, rel=1e-15)


def test_user_prices_override(catalog: Catalog, workload: Callable[..., InferenceWorkload], prices: Prices) -> None:
    user = load_prices(read_yaml(catalog.root / "costs.yaml"),
                       {"gpus": {"h100": {"usd_per_hour": 2.0, "source": "test cloud"}, "l4": {"usd": 2500,
                                                                                                "date": "2025-01"}}},
                       resolve=catalog.gpus.get)
    report = plan(catalog.model("llama-3.1-8b"), [catalog.gpus.get("h100"), catalog.gpus.get("l4")], workload(),
                  Goal(concurrency=1), user)
    by_gpu = {o.gpu: o for o in report.options}
    h100 = by_gpu["NVIDIA H100 SXM5 80GB"]
    assert h100.usd_per_hour == 2.0
    assert h100.cost_basis is not None
    assert "rented" in h100.cost_basis
    assert by_gpu["NVIDIA L4 24GB"].price_usd_per_card == 2500


def test_target_throughput_adds_replicas(catalog: Catalog, workload: Callable[..., InferenceWorkload],
                                         prices: Prices) -> None:
    report = plan(catalog.model("llama-3.1-8b"), [catalog.gpus.get("l4")], workload(),
                  Goal(target_tokens_per_s=50_000), prices)
    o = report.options[0]
    assert o.feasible
    assert o.replicas is not None
    assert o.replicas > 1
    assert o.tokens_per_s is not None
    assert o.tokens_per_s >= 50_000
    assert o.cards == o.replicas * (o.tensor_parallel or 0)


def test_latency_goal_meets_limits(catalog: Catalog, workload: Callable[..., InferenceWorkload],
                                   prices: Prices) -> None:
    report = plan(catalog.model("llama-3.1-8b"), [catalog.gpus.get("h100")], workload(),
                  Goal(max_ttft_s=1.0, max_tpot_s=0.02), prices)
    o = report.options[0]
    assert o.feasible
    assert o.batch_per_replica is not None
    assert o.time_to_first_token_s is not None
    assert o.time_to_first_token_s <= 1.0
    assert o.time_per_output_token_s is not None
    assert o.time_per_output_token_s <= 0.02
    bigger = estimate(catalog.model("llama-3.1-8b"), catalog.gpus.get("h100"),
                      workload(batch=o.batch_per_replica + 1))
    per_user = bigger.time.tokens_per_s_per_sequence
    assert bigger.time.time_to_first_token_s > 1.0 or (per_user is not None and 1 / per_user > 0.02)


def test_goal_needs_one_target() -> None:
    with pytest.raises(WorkloadInvalid, match="give a goal"):
        Goal().check()
    with pytest.raises(WorkloadInvalid, match="not both"):
        Goal(concurrency=1, target_tokens_per_s=10).check()


def test_bad_prices_file(catalog: Catalog) -> None:
    with pytest.raises(SpecInvalid, match="unknown keys"):
        load_prices({"amortization_years": 3, "electricity_usd_per_kwh": 0.1}, {"gpu": {}})
    with pytest.raises(SpecInvalid, match="usd"):
        load_prices({"amortization_years": 3, "electricity_usd_per_kwh": 0.1}, {"gpus": {"h100": {"usd": -1}}},
                    resolve=catalog.gpus.get)
