"""Plans people can buy: a server's smaller sizes (1, 2 or 4 of its GPUs, as clouds rent and workstations hold
them) priced and powered pro rata, the search filling the GPUs bought, options ranked by what the goal costs per
hour, and how much of each option the goal uses."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from estimator.catalog.files import read_yaml
from estimator.catalog.registry import Catalog
from estimator.catalog.systems import SystemSpec
from estimator.inference.workload import InferenceWorkload
from estimator.planning.costs import node_share, option_cost
from estimator.planning.layouts import Layout, replicas_filling
from estimator.planning.plan import HOURS_PER_YEAR, Goal, Prices, load_prices, plan


def _prices(catalog: Catalog, user: dict[str, object] | None = None) -> Prices:
    return load_prices(read_yaml(catalog.root / "costs.yaml"), user, resolve=catalog.gpus.get,
                       resolve_system=catalog.systems.get)


def _with_parts(system: SystemSpec, parts: tuple[int, ...]) -> SystemSpec:
    return SystemSpec.model_validate({**system.model_dump(), "partial_gpus": parts})


def test_gpus_bought_are_the_smallest_size_that_holds_them_else_whole_servers(catalog: Catalog) -> None:
    hgx = _with_parts(catalog.systems.get("hgx-h100"), (1, 2, 4))
    assert [hgx.bought_gpus(g) for g in (1, 2, 3, 4, 5, 8, 9, 12, 17)] == [1, 2, 4, 4, 8, 8, 16, 16, 24]
    whole = catalog.systems.get("hgx-h100")  # no smaller size: whole servers, as before
    assert [whole.bought_gpus(g) for g in (1, 3, 8, 9)] == [8, 8, 8, 16]


@pytest.mark.parametrize("parts", [(8,), (3,), (4, 2), (2, 2), (0,)])
def test_partial_sizes_must_divide_the_server(catalog: Catalog, parts: tuple[int, ...]) -> None:
    with pytest.raises(ValueError, match="partial_gpus"):
        _with_parts(catalog.systems.get("hgx-h100"), parts)


def test_replicas_fill_the_gpus_bought(catalog: Catalog) -> None:
    hgx = _with_parts(catalog.systems.get("hgx-h100"), (1, 2, 4))
    assert replicas_filling(hgx, Layout(1, 1), 1) == 1  # one GPU bought: one replica
    assert replicas_filling(hgx, Layout(1, 1), 3) == 4  # 3 GPUs are bought as 4: a fourth replica
    assert replicas_filling(hgx, Layout(2, 1), 3) == 4  # 6 GPUs: a whole server, 4 replicas
    assert replicas_filling(hgx, Layout(8, 2), 1) == 1


def test_a_part_of_a_server_is_priced_powered_and_rented_pro_rata(catalog: Catalog) -> None:
    hgx = _with_parts(catalog.systems.get("hgx-h100"), (1, 2, 4))
    gpu = catalog.system_gpu(hgx)
    assert node_share(hgx, 2) == 0.25 and node_share(hgx, 16) == 2
    cost = option_cost(hgx, gpu, node_share(hgx, 2), 2, _prices(catalog, {"systems": {"hgx-h100": {
        "usd_per_hour": 24}}}))
    assert cost.owned is not None and cost.rented is not None
    # 2 of 8 GPUs: a quarter of $310,000 over 3 y + a quarter of 10,200 W at $0.13/kWh
    assert cost.owned.usd_per_hour == pytest.approx(310_000 / 4 / (3 * HOURS_PER_YEAR) + 2.55 * 0.13, rel=1e-12)
    assert "2 of a server's 8 GPUs, pro rata" in cost.owned.basis
    assert cost.rented.usd_per_hour == 6 and "× 2/8 (pro rata)" in cost.rented.basis


def test_the_goal_use_is_the_share_of_the_option_it_takes(catalog: Catalog,
                                                          make_workload: Callable[..., InferenceWorkload]) -> None:
    w = make_workload(prompt_tokens=4096, output_tokens=512)
    system = catalog.systems.get("hgx-h100")
    pairs = [(system, catalog.system_gpu(system))]
    (o,) = plan(catalog.model("llama-3.1-70b"), pairs, w, Goal(concurrency=32), _prices(catalog)).options
    assert o.replicas is not None and o.max_batch is not None
    assert o.goal_use_fraction == 32 / (o.replicas * o.max_batch)
    (t,) = plan(catalog.model("llama-3.1-70b"), pairs, w, Goal(target_tokens_per_s=500), _prices(catalog)).options
    assert t.tokens_per_s is not None and t.goal_use_fraction == 500 / t.tokens_per_s
    (lat,) = plan(catalog.model("llama-3.1-70b"), pairs, w, Goal(max_tpot_s=0.1), _prices(catalog)).options
    assert lat.goal_use_fraction is None


def test_a_small_goal_ranks_a_few_cards_first_and_the_rack_with_its_use(shipped_catalog: Catalog) -> None:
    """plan --model llama-3.1-8b --prompt-tokens 2k --output-tokens 256 --target-tokens-per-s 5000: the goal's
    cost per hour ranks two GPUs of an HGX H100 first, not a 72-GPU rack; the rack stays listed with its use."""
    c = shipped_catalog
    w = InferenceWorkload(weight_format=c.formats.get("bf16"), kv_format=c.formats.get("bf16"),
                          profile=c.profiles.get("optimized"), prompt_tokens=2000, output_tokens=256)
    pairs = [(s, c.system_gpu(s)) for s in (c.systems.get(n) for n in ("hgx-h100", "gb200-nvl72", "hgx-b200"))]
    report = plan(c.model("llama-3.1-8b"), pairs, w, Goal(target_tokens_per_s=5000), _prices(c))
    first = report.options[0]
    assert (first.system, first.servers, first.gpus_bought, first.gpus_per_server) == ("hgx-h100", 1, 2, 8)
    assert (first.cards, first.tensor_parallel, first.pipeline_parallel, first.replicas) == (2, 1, 1, 2)
    assert first.goal_use_fraction is not None and 0.5 < first.goal_use_fraction <= 1
    hours = [o.usd_per_hour for o in report.options]
    assert hours == sorted(h for h in hours if h is not None)
    rack = next(o for o in report.options if o.system == "gb200-nvl72")
    assert (rack.cards, rack.gpus_bought, rack.rank) == (72, 72, 3)  # bought whole: no smaller size
    assert rack.goal_use_fraction is not None and rack.goal_use_fraction < 0.05
    assert report.ranking.startswith("$/h for the goal")
