"""plan: servers and layouts people deploy, headroom kept, serving as engines serve, owned and rented costs apart."""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest

from estimator.catalog.files import read_yaml
from estimator.catalog.registry import Catalog
from estimator.catalog.specs import GpuSpec
from estimator.catalog.systems import SystemSpec
from estimator.errors import SpecInvalid, WorkloadInvalid
from estimator.inference.workload import InferenceWorkload
from estimator.planning.costs import option_cost
from estimator.planning.layouts import Layout, layouts, max_replica_context, replicas_filling, stage_memory
from estimator.planning.plan import HOURS_PER_YEAR, Goal, Prices, Settings, load_prices, plan


def _pairs(catalog: Catalog, *names: str) -> list[tuple[SystemSpec, GpuSpec]]:
    systems = [catalog.systems.get(n) for n in names] if names else list(catalog.systems)
    return [(s, catalog.system_gpu(s)) for s in systems]


def _prices(catalog: Catalog, user: dict[str, object] | None = None) -> Prices:
    return load_prices(read_yaml(catalog.root / "costs.yaml"), user, resolve=catalog.gpus.get,
                       resolve_system=catalog.systems.get)


def test_deepseek_v3_lists_only_layouts_inside_real_servers(shipped_catalog: Catalog) -> None:
    """plan --model deepseek-v3 --dtype fp8 --prompt-tokens 4096 --output-tokens 1024
    --concurrency 64."""
    c = shipped_catalog
    w = InferenceWorkload(weight_format=c.formats.get("fp8"), kv_format=c.formats.get("bf16"),
                          profile=c.profiles.get("optimized"), prompt_tokens=4096, output_tokens=1024)
    report = plan(c.model("deepseek-v3"), _pairs(c), w, Goal(concurrency=64), _prices(c))
    ranked = [o for o in report.options if o.rank is not None]
    assert len(ranked) >= 8
    for o in ranked:
        system = c.systems.get(o.system or "")
        assert o.tensor_parallel is not None and o.tensor_parallel <= system.domain_gpus  # TP inside one domain
        assert o.headroom_fraction is not None and o.headroom_fraction >= 0.10  # engines keep 10 % free
        assert o.concurrency == 64
        if system.intra_node_link == "pcie":
            assert o.tensor_parallel == 1  # no PCIe card at TP > 1, let alone 8
        assert o.servers is not None and o.gpus_bought == o.servers * system.gpus_per_node  # whole servers only
    by = {o.system: o for o in ranked}
    # one HGX H200: EP 8 over the node (8 attention groups: the MLA latent cache is not split by TP, so
    # data-parallel attention reads 1/8 of it per GPU), 32 of the 256 experts per GPU
    assert (by["hgx-h200"].servers, by["hgx-h200"].cards, by["hgx-h200"].pipeline_parallel) == (1, 8, 1)
    assert by["hgx-h200"].expert_parallel == 8 and by["hgx-h200"].experts_per_gpu == 32  # 256 experts ÷ 8
    assert (by["hgx-h100"].servers, by["hgx-h100"].tensor_parallel, by["hgx-h100"].pipeline_parallel) == (2, 8, 2)
    assert (by["mi300x-platform"].cards, by["mi300x-platform"].expert_parallel) == (8, 8)


def test_owned_cost_is_servers_amortised_plus_their_power(catalog: Catalog,
                                                           make_workload: Callable[..., InferenceWorkload]) -> None:
    w = make_workload(prompt_tokens=4096, output_tokens=512)
    report = plan(catalog.model("llama-3.1-70b"), _pairs(catalog, "hgx-h100"), w, Goal(concurrency=32),
                  _prices(catalog))
    o = report.options[0]
    assert (o.servers, o.cards) == (1, 8)
    per_hour = 310_000 / (3 * HOURS_PER_YEAR) + 10_200 / 1000 * 0.13  # server price over 3 y + 10.2 kW at $0.13
    assert o.owned_usd_per_hour == pytest.approx(per_hour, rel=1e-12)
    assert o.rented_usd_per_hour is None and o.usd_per_hour == o.owned_usd_per_hour
    assert o.tokens_per_s is not None
    assert o.owned_usd_per_million_tokens == pytest.approx(per_hour / (o.tokens_per_s * 3600) * 1e6, rel=1e-12)
    assert (o.power_w, o.server_power_w) == (8 * 700, 10_200)


def test_a_server_without_a_price_is_costed_from_its_cards(catalog: Catalog) -> None:
    rtx = catalog.systems.get("pcie-rtx-4090")
    cost = option_cost(rtx, catalog.system_gpu(rtx), 2, 16, _prices(catalog))
    # 16 cards × $1,599 over 3 y + 2 × 5,800 W at $0.13/kWh
    assert cost.owned is not None
    assert cost.owned.usd_per_hour == pytest.approx(16 * 1599 / (3 * 8760) + 11.6 * 0.13, rel=1e-12)
    assert "host not priced" in cost.owned.basis


def test_rented_prices_per_server_or_per_card(catalog: Catalog) -> None:
    hgx = catalog.systems.get("hgx-h100")
    gpu = catalog.system_gpu(hgx)
    by_server = option_cost(hgx, gpu, 2, 16, _prices(catalog, {"systems": {"dgx-h100": {"usd_per_hour": 25}}}))
    assert by_server.rented is not None and by_server.rented.usd_per_hour == 50  # 2 servers × $25
    by_card = option_cost(hgx, gpu, 2, 12, _prices(catalog, {"gpus": {"h100": {"usd_per_hour": 2.5}}}))
    assert by_card.rented is not None and by_card.rented.usd_per_hour == 30  # 12 GPUs × $2.50
    assert by_card.owned is not None  # owned stays, in its own field


def test_prices_file_replaces_the_default_sources(catalog: Catalog) -> None:
    prices = _prices(catalog, {"amortization_years": 5})
    assert prices.amortization_years == 5
    assert prices.sources[0] == "amortization_years: 5 from prices"
    assert prices.sources[1].startswith("electricity_usd_per_kwh: US commercial-sector")


def test_concurrency_with_a_ttft_limit_adds_replicas(catalog: Catalog,
                                                    make_workload: Callable[..., InferenceWorkload]) -> None:
    """--concurrency 64 --max-ttft-s 1 finds options."""
    w = make_workload(prompt_tokens=4096, output_tokens=1024)
    report = plan(catalog.model("llama-3.1-8b"), _pairs(catalog, "hgx-h100", "hgx-h200"), w,
                  Goal(concurrency=64, max_ttft_s=1.0), _prices(catalog))
    for o in report.options:
        assert o.feasible, o.reason
        assert o.time_to_first_token_s is not None and o.time_to_first_token_s <= 1.0
        assert o.replicas is not None and o.replicas > 1  # TP 1 replicas fill the 8-GPU server
        assert o.batch_per_replica == math.ceil(64 / o.replicas)


def test_target_throughput_adds_replicas(catalog: Catalog, make_workload: Callable[..., InferenceWorkload]) -> None:
    w = make_workload(prompt_tokens=2048, output_tokens=256)
    report = plan(catalog.model("llama-3.1-70b"), _pairs(catalog, "hgx-h100"), w,
                  Goal(target_tokens_per_s=20_000), _prices(catalog))
    o = report.options[0]
    assert o.feasible and o.replicas is not None and o.replicas > 1
    assert o.tokens_per_s is not None and o.tokens_per_s >= 20_000
    assert o.cards == o.replicas * (o.tensor_parallel or 0) * (o.pipeline_parallel or 0)


def test_latency_goal_meets_limits(catalog: Catalog, make_workload: Callable[..., InferenceWorkload]) -> None:
    w = make_workload(prompt_tokens=1024, output_tokens=256)
    report = plan(catalog.model("llama-3.1-8b"), _pairs(catalog, "hgx-h100"), w,
                  Goal(max_ttft_s=0.5, max_tpot_s=0.02), _prices(catalog))
    o = report.options[0]
    assert o.feasible
    assert o.time_to_first_token_s is not None and o.time_to_first_token_s <= 0.5
    assert o.time_per_output_token_s is not None and o.time_per_output_token_s <= 0.02


def test_tp_stays_inside_a_domain_unless_asked(catalog: Catalog) -> None:
    model = catalog.model("llama-3.1-70b")
    hgx = catalog.systems.get("hgx-h100")
    assert max(lay.tp for lay in layouts(model, hgx, max_nodes=2, allow_tp_across=False)) == 8
    assert max(lay.tp for lay in layouts(model, hgx, max_nodes=2, allow_tp_across=True)) == 16
    pcie = catalog.systems.get("pcie-rtx-4090")
    assert {lay.tp for lay in layouts(model, pcie, max_nodes=4, allow_tp_across=False)} == {1}


def test_pipeline_splits_weights_and_kv(catalog: Catalog, make_workload: Callable[..., InferenceWorkload]) -> None:
    model, gpu = catalog.model("llama-3.1-70b"), catalog.gpus.get("h100")
    w = make_workload()
    one, two = (stage_memory(model, gpu, w, Layout(8, pp), 16, 2048, 256) for pp in (1, 2))
    assert two.weights == math.ceil(one.weights / 2)
    assert one.kv is not None and two.kv == math.ceil(one.kv / 2)
    assert two.activation == one.activation  # a stage still holds one layer's peak


def test_servers_are_bought_whole(catalog: Catalog) -> None:
    hgx = catalog.systems.get("hgx-h100")
    assert replicas_filling(hgx, Layout(2, 1), 1) == 4  # a TP 2 replica leaves 6 GPUs: 3 more replicas
    assert replicas_filling(hgx, Layout(8, 2), 1) == 1
    assert replicas_filling(hgx, Layout(4, 1), 3) == 4  # 3 × 4 GPUs need 2 servers: they hold 4


def test_headroom_is_kept(catalog: Catalog, make_workload: Callable[..., InferenceWorkload]) -> None:
    w = make_workload(prompt_tokens=4096, output_tokens=512)
    pairs = _pairs(catalog, "hgx-h100")
    loose = plan(catalog.model("llama-3.1-70b"), pairs, w, Goal(concurrency=32), _prices(catalog),
                 settings=Settings(headroom=0.0))
    tight = plan(catalog.model("llama-3.1-70b"), pairs, w, Goal(concurrency=32), _prices(catalog),
                 settings=Settings(headroom=0.5))
    assert (loose.options[0].max_batch or 0) > (tight.options[0].max_batch or 0)
    assert (tight.options[0].headroom_fraction or 0) >= 0.5


def test_a_gpu_without_a_server_is_listed_with_the_reason(catalog: Catalog,
                                                          make_workload: Callable[..., InferenceWorkload]) -> None:
    w = make_workload()
    report = plan(catalog.model("llama-3.1-8b"), [], w, Goal(concurrency=1), _prices(catalog),
                  unplaced=[catalog.gpus.get("v100")])
    assert not report.options[0].feasible
    assert "no server in specs/systems" in (report.options[0].reason or "")


def test_goal_needs_one_target() -> None:
    with pytest.raises(WorkloadInvalid, match="give a goal"):
        Goal().check()
    with pytest.raises(WorkloadInvalid, match="not both"):
        Goal(concurrency=1, target_tokens_per_s=10).check()


def test_bad_prices_file(catalog: Catalog) -> None:
    defaults = read_yaml(catalog.root / "costs.yaml")
    with pytest.raises(SpecInvalid, match="unknown keys"):
        load_prices(defaults, {"gpu": {}})
    with pytest.raises(SpecInvalid, match="usd"):
        load_prices(defaults, {"gpus": {"h100": {"usd": -1}}}, resolve=catalog.gpus.get)
    with pytest.raises(SpecInvalid, match="'systems' must map"):
        load_prices(defaults, {"systems": [1]})


def test_max_context_is_capped_at_the_model_limit_like_estimate(shipped_catalog: Catalog) -> None:
    """A plan's max_context_tokens stops at the model's 4,096-token window (Llama-2-7B), as estimate's
    does; max_context_tokens_by_memory is memory's figure, the search within the headroom alone."""
    c = shipped_catalog
    w = InferenceWorkload(weight_format=c.formats.get("bf16"), kv_format=c.formats.get("bf16"),
                          profile=c.profiles.get("optimized"), prompt_tokens=1024, output_tokens=256)
    model = c.model("llama-2-7b")
    assert model.arch is not None and model.arch.max_position_embeddings == 4096
    report = plan(model, _pairs(c, "hgx-h200"), w, Goal(concurrency=1), _prices(c))
    o = report.options[0]
    assert o.max_context_tokens == 4096
    assert o.max_context_tokens_by_memory is not None and o.max_context_tokens_by_memory > 4096
    layout = Layout(tp=o.tensor_parallel or 0, pp=o.pipeline_parallel or 0)
    assert o.max_context_tokens_by_memory == max_replica_context(model, c.gpus.get("h200"), w, layout,
                                                                 o.batch_per_replica or 0, 256, 0.10)
