"""Capacity planning: the servers, layout and replicas that serve a workload — memory, speed, power and cost.

Pure: takes validated specs and a goal, returns a frozen `PlanReport` (JSON = ``model_dump(mode="json")``).
Candidates are systems (specs/systems: servers as bought, and the smaller sizes of them sold or rented:
`SystemSpec.partial_gpus`), each with its GPU; a GPU with no system is listed as not deployable, with the reason.
For each system `search.Search` finds the layout a serving engine would deploy — tensor parallel inside one link
domain, pipeline parallel across domains and nodes, expert parallel for MoE over the tensor-parallel GPUs,
data-parallel replicas — keeping the memory headroom engines keep (10 % by default), with TTFT and TPOT from
continuous batching with a step token budget (`serving`).

Goals (one of):
- ``concurrency``: serve C sequences at once: the fewest GPUs bought whose replicas hold them within the limits.
- ``target_tokens_per_s``: reach T generated tokens/s in aggregate.
- latency limits only (``max_ttft_s`` / ``max_tpot_s``): the most sequences one replica serves within them.

Cost: owned (server price amortised + server power, pro rata for a part of a server) and rented (a prices file's
per-hour prices) in separate fields (`costs`). The default ranking is what the goal costs per hour — the cheapest
hardware that meets it — with how much of each option the goal uses (``goal_use_fraction``) beside it; $/Mtoken at
full use stays a column.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

from pydantic import Field

from estimator.catalog.architecture import ModelSpec
from estimator.catalog.specs import GpuSpec
from estimator.catalog.systems import SystemSpec
from estimator.errors import EstimatorError, FieldInvalid
from estimator.inference.workload import MAX_BATCH, InferenceWorkload
from estimator.model.capacity import within_position_limit
from estimator.notes import Note, NoteCode, note
from estimator.planning.costs import (
    HOURS_PER_YEAR,
    CardPrice,
    Prices,
    load_prices,
    node_share,
    option_cost,
    per_million_tokens,
)
from estimator.planning.layouts import experts_per_gpu, max_replica_context, servers_for, stage_memory
from estimator.planning.search import Point, Search, Settings
from estimator.report import Fix, Frozen, Versioned

__all__ = ["HOURS_PER_YEAR", "CardPrice", "Goal", "PlanOption", "PlanReport", "Prices", "Settings", "load_prices",
           "plan"]
SortKey = Literal["cost", "owned", "rented", "cards", "throughput"]


class Goal(Frozen):
    concurrency: int | None = Field(default=None, ge=1, le=MAX_BATCH)
    target_tokens_per_s: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    max_ttft_s: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    max_tpot_s: float | None = Field(default=None, gt=0, allow_inf_nan=False)

    def check(self) -> None:
        if self.concurrency is not None and self.target_tokens_per_s is not None:
            raise FieldInvalid("concurrency", "give {concurrency} or {target_tokens_per_s}, not both")
        if self.concurrency is None and self.target_tokens_per_s is None and self.max_ttft_s is None \
                and self.max_tpot_s is None:
            raise FieldInvalid("concurrency", "give a goal: {concurrency} C, {target_tokens_per_s} T, or {max_ttft_s} "
                               "X and/or {max_tpot_s} Y")

    @property
    def kind(self) -> str:
        if self.concurrency is not None:
            return "concurrency"
        return "throughput" if self.target_tokens_per_s is not None else "latency"


class PlanOption(Frozen):
    """One system's answer. Memory figures are per GPU; power and cost cover the GPUs bought (whole servers, or
    the part of one a smaller size of it holds, pro rata)."""

    rank: int | None  # 1 = best; None for systems that cannot meet the goal
    system: str | None  # None: a GPU no system in specs/systems holds
    gpu: str
    feasible: bool
    reason: str | None
    servers: int | None  # servers touched (a part of one counts as one; gpus_bought says how much of it)
    cards: int | None  # GPUs, all replicas
    gpus_bought: int | None  # GPUs paid for: a smaller size of the server (its partial_gpus) or whole servers
    gpus_per_server: int | None  # the system's GPUs per node (a part of a server: gpus_bought of these)
    tensor_parallel: int | None
    pipeline_parallel: int | None
    expert_parallel: int | None  # MoE: the GPUs a stage deals its experts over (TP × attention groups)
    experts_per_gpu: int | None
    replicas: int | None
    batch_per_replica: int | None
    concurrency: int | None  # sequences served at once over all replicas
    max_batch: int | None  # per replica, at this prompt + output, within the headroom
    max_context_tokens: int | None  # per sequence, at this batch, within the headroom and the model's own limit
    max_context_tokens_by_memory: int | None  # the same within the headroom alone (past the limit where it is)
    tokens_per_s: float | None  # generated tokens/s, all replicas
    tokens_per_s_per_user: float | None
    time_to_first_token_s: float | None
    time_per_output_token_s: float | None
    prefill_busy_fraction: float | None  # of a replica's time, prefilling new prompts
    step_tokens: int
    weights_per_gpu_bytes: int | None
    kv_cache_per_gpu_bytes: int | None
    activation_per_gpu_bytes: int | None
    overhead_per_gpu_bytes: int | None
    state_per_gpu_bytes: int | None  # hybrids' Mamba / DeltaNet state; memory_per_gpu_bytes is the sum of these five
    memory_per_gpu_bytes: int | None
    capacity_bytes: int
    headroom_bytes: int | None
    headroom_fraction: float | None
    bandwidth_bytes_per_s: float
    peak_flop_per_s: float | None
    prefill_flops: float | None  # one prompt chunk, for the roofline chart
    decode_bytes: float | None  # one decode step of a replica
    decode_flops: float | None
    power_per_card_w: float | None  # one GPU board, the datasheet's TDP
    power_w: float | None  # GPU boards, all of them
    server_power_w: float | None  # the servers bought (k/N of one for k of its N GPUs)
    price_usd_per_card: float | None
    price_usd_per_server: float | None
    price_date: str | None
    price_source: str | None
    owned_usd_per_hour: float | None
    owned_basis: str | None
    owned_usd_per_million_tokens: float | None
    rented_usd_per_hour: float | None
    rented_basis: str | None
    rented_usd_per_million_tokens: float | None
    usd_per_hour: float | None  # the ranking's cost: rented where priced, else owned
    cost_basis: str | None
    usd_per_million_tokens: float | None
    # how much of the option the goal uses: sequences wanted ÷ (replicas × max batch), or target tokens/s ÷ the
    # option's tokens/s; None for a latency-only goal (the option is as large as the limits allow)
    goal_use_fraction: float | None = None
    # on the cost-versus-latency frontier: no other option is as cheap per token with TTFT and TPOT as short,
    # and better in one of them (None: not feasible or not priced)
    pareto: bool | None = None


class PlanReport(Versioned):
    model: str
    params: int
    dtype: str
    kv_dtype: str
    profile: str
    prompt_tokens: int
    output_tokens: int
    goal: Goal
    goal_kind: str
    sort: str
    ranking: str  # the ranking in words, for the header
    settings: Settings
    options: tuple[PlanOption, ...]
    assumptions: tuple[Note, ...]
    warnings: tuple[Note, ...]
    logits: str = "last"  # the positions whose logits the prefill computes (--logits), as estimate's workload.logits
    # When no server holds the model: the changes of the options that let one, cheapest first (request.plan_fixes)
    fixes: tuple[Fix, ...] = ()


def _empty(system: SystemSpec | None, gpu: GpuSpec, reason: str, settings: Settings) -> PlanOption:
    fields: dict[str, Any] = dict.fromkeys(PlanOption.model_fields)
    fields.update(system=None if system is None else system.name, gpu=gpu.name, feasible=False, reason=reason,
                  gpus_per_server=None if system is None else system.gpus_per_node,
                  capacity_bytes=gpu.memory_bytes, bandwidth_bytes_per_s=gpu.bandwidth_bytes_per_s,
                  price_usd_per_card=gpu.price_usd, price_date=gpu.price_date, step_tokens=settings.step_tokens)
    return PlanOption(**fields)


def _goal_use(goal: Goal, point: Point, tokens_per_s: float | None) -> float | None:
    """How much of an option the goal takes: sequences wanted ÷ the sequences its replicas hold, or the target
    tokens/s ÷ its tokens/s; None for a latency-only goal."""
    if goal.concurrency is not None:
        return goal.concurrency / (point.replicas * point.max_batch)
    if goal.target_tokens_per_s is not None and tokens_per_s:
        return goal.target_tokens_per_s / tokens_per_s
    return None


def _option(search: Search, point: Point, prices: Prices, goal: Goal) -> PlanOption:
    system, gpu, w, layout, wanted = search.system, search.gpu, search.workload, point.layout, goal.concurrency
    serving = point.serving
    gpus = point.replicas * layout.gpus
    servers, bought = servers_for(system, gpus), system.bought_gpus(gpus)
    nodes = node_share(system, bought)
    concurrency = min(wanted, point.replicas * point.batch) if wanted else point.replicas * point.batch
    tpot = serving.time_per_output_token_s
    tokens_per_s = None if tpot is None else concurrency / tpot
    mem = stage_memory(search.model, gpu, w, layout, point.batch, w.prompt_tokens, w.output_tokens)
    cost = option_cost(system, gpu, nodes, gpus, prices)
    owned, rented = cost.owned, cost.rented
    owned_mtok = per_million_tokens(None if owned is None else owned.usd_per_hour, tokens_per_s)
    rented_mtok = per_million_tokens(None if rented is None else rented.usd_per_hour, tokens_per_s)
    ranked = rented if rented is not None else owned
    moe = search.model.arch is not None and search.model.arch.moe is not None
    decode = point.decode
    by_memory = max_replica_context(search.model, gpu, w, layout, point.batch, w.output_tokens,
                                    search.settings.headroom)
    return PlanOption(
        rank=None, system=system.name, gpu=gpu.name, feasible=True, reason=None, servers=servers, cards=gpus,
        gpus_bought=bought, gpus_per_server=system.gpus_per_node,
        tensor_parallel=layout.tp, pipeline_parallel=layout.pp, expert_parallel=layout.ep if moe else None,
        experts_per_gpu=experts_per_gpu(search.model, layout), replicas=point.replicas,
        batch_per_replica=point.batch, concurrency=concurrency, max_batch=point.max_batch,
        max_context_tokens=within_position_limit(search.model, by_memory), max_context_tokens_by_memory=by_memory,
        tokens_per_s=tokens_per_s, tokens_per_s_per_user=None if tpot is None else 1 / tpot,
        time_to_first_token_s=serving.time_to_first_token_s, time_per_output_token_s=tpot,
        prefill_busy_fraction=serving.prefill_busy_fraction, step_tokens=search.settings.step_tokens,
        weights_per_gpu_bytes=mem.weights, kv_cache_per_gpu_bytes=mem.kv, activation_per_gpu_bytes=mem.activation,
        overhead_per_gpu_bytes=mem.overhead, state_per_gpu_bytes=mem.state,
        memory_per_gpu_bytes=mem.total, capacity_bytes=gpu.memory_bytes,
        headroom_bytes=gpu.memory_bytes - mem.total, headroom_fraction=1 - mem.total / gpu.memory_bytes,
        bandwidth_bytes_per_s=gpu.bandwidth_bytes_per_s, peak_flop_per_s=point.chunk.gpu.peak_flop_per_s,
        prefill_flops=point.chunk.time.prefill_flops, decode_bytes=None if decode is None else decode.time.decode_bytes,
        decode_flops=None if decode is None else decode.time.decode_flops,
        power_per_card_w=gpu.tdp_w, power_w=None if gpu.tdp_w is None else gpu.tdp_w * gpus,
        server_power_w=system.server_power_w * nodes,
        price_usd_per_card=cost.price_usd_per_card, price_usd_per_server=cost.price_usd_per_server,
        price_date=cost.price_date, price_source=cost.price_source,
        owned_usd_per_hour=None if owned is None else owned.usd_per_hour,
        owned_basis=None if owned is None else owned.basis, owned_usd_per_million_tokens=owned_mtok,
        rented_usd_per_hour=None if rented is None else rented.usd_per_hour,
        rented_basis=None if rented is None else rented.basis, rented_usd_per_million_tokens=rented_mtok,
        usd_per_hour=None if ranked is None else ranked.usd_per_hour,
        cost_basis=None if ranked is None else ranked.basis,
        usd_per_million_tokens=rented_mtok if rented is not None else owned_mtok,
        goal_use_fraction=_goal_use(goal, point, tokens_per_s),
    )


_RANKING = {
    "cost": "$/h for the goal (rented where --prices gives a rental price, else owned; systems priced by their "
            "cards alone after priced ones)",
    "owned": "owned $/h (servers amortised + power)", "rented": "rented $/h (--prices)",
    "cards": "fewest GPUs", "throughput": "most tokens/s",
}


def _sort_key(option: PlanOption, sort: SortKey) -> tuple[Any, ...]:
    """What the user pays per hour for the goal first (the cheapest hardware that meets it), then fewer GPUs, then
    more tokens/s; $/Mtoken at full use is a column, not the ranking."""
    chosen = {"owned": option.owned_usd_per_hour, "rented": option.rented_usd_per_hour}.get(
        sort, option.usd_per_hour)
    partial = "host not priced" in ((option.rented_basis if sort == "rented" else option.cost_basis) or "")
    cost = (chosen is None, partial, chosen or 0.0)  # a cost of the cards alone ranks after priced ones
    cards, speed = option.cards or 0, -(option.tokens_per_s or 0.0)
    if sort == "cards":
        return (cards, *cost, speed)
    if sort == "throughput":
        return (speed, cards, *cost)
    return (*cost, cards, speed)


def _costs(o: PlanOption) -> tuple[float, float, float] | None:
    if o.usd_per_million_tokens is None or o.time_to_first_token_s is None or o.time_per_output_token_s is None:
        return None
    return (o.usd_per_million_tokens, o.time_to_first_token_s, o.time_per_output_token_s)


def frontier(options: list[PlanOption]) -> list[PlanOption]:
    """``options`` with ``pareto`` set: True where no other option dominates it in ($/Mtok, TTFT, TPOT) — at most
    as large in all three and smaller in one — False where one does, None where one of the three is unknown."""
    points = [_costs(o) for o in options]
    known = [p for p in points if p is not None]

    def dominated(p: tuple[float, float, float]) -> bool:
        return any(all(a <= b for a, b in zip(q, p, strict=True)) and q != p for q in known)

    return [o.model_copy(update={"pareto": None if p is None else not dominated(p)})
            for o, p in zip(options, points, strict=True)]


def plan(model: ModelSpec, systems: Iterable[tuple[SystemSpec, GpuSpec]], workload: InferenceWorkload, goal: Goal,
         prices: Prices, *, sort: SortKey = "cost", settings: Settings | None = None,
         unplaced: Iterable[GpuSpec] = ()) -> PlanReport:
    """Rank ``systems`` (each with its GPU) for serving ``model`` under ``goal``; systems that cannot meet it, and
    GPUs no system holds (``unplaced``), come last with the reason."""
    goal.check()
    settings = settings or Settings()
    feasible: list[PlanOption] = []
    failed = [_empty(None, gpu, "no server in specs/systems holds this GPU (add one: specs/systems/README.md)",
                     settings) for gpu in unplaced]
    for system, gpu in systems:
        search = Search(model, system, gpu, workload, settings, goal.concurrency, goal.target_tokens_per_s,
                        goal.max_ttft_s, goal.max_tpot_s)
        try:
            point = search.best()
        except EstimatorError as error:  # e.g. a card without the precision the format needs
            failed.append(_empty(system, gpu, str(error), settings))
            continue
        if point is None:
            failed.append(_empty(system, gpu, search.beyond or search.last_reason or "no layout fits", settings))
        else:
            feasible.append(_option(search, point, prices, goal))
    feasible.sort(key=lambda o: _sort_key(o, sort))
    failed.sort(key=lambda o: (o.system is None, o.system or o.gpu))
    ranked = frontier([o.model_copy(update={"rank": i}) for i, o in enumerate(feasible, 1)])
    w = workload
    return PlanReport(
        model=model.name, params=_params(model), dtype=w.weight_format.name, kv_dtype=w.kv_format.name,
        profile=w.profile.name, prompt_tokens=w.prompt_tokens, output_tokens=w.output_tokens, goal=goal,
        goal_kind=goal.kind, sort=sort, ranking=_RANKING[sort], settings=settings, options=(*ranked, *failed),
        assumptions=tuple(_assumptions(w, prices, settings)), warnings=tuple(_warnings(ranked)), logits=w.logits,
    )


def _assumptions(w: InferenceWorkload, prices: Prices, settings: Settings) -> list[Note]:
    return [
        note(NoteCode.PROFILE, profile=w.profile.name, description=w.profile.description),
        note(NoteCode.PLAN_LAYOUT, headroom=settings.headroom, across=settings.allow_tp_across,
             max_nodes=settings.max_nodes),
        note(NoteCode.PLAN_SCHEDULER, step_tokens=settings.step_tokens),
        note(NoteCode.PLAN_TOKENS),
        note(NoteCode.OWNED_COST, years=prices.amortization_years, usd_per_kwh=prices.electricity_usd_per_kwh),
        *(note(NoteCode.PRICE_SOURCE, source=source) for source in prices.sources),
    ]


def _warnings(ranked: list[PlanOption]) -> list[Note]:
    warnings = []
    if not any(o.usd_per_million_tokens for o in ranked):
        warnings.append(note(NoteCode.NO_PRICE))
    return warnings


def _params(model: ModelSpec) -> int:
    from estimator.model.inventory import param_count

    if model.arch is None:
        assert model.generic_params is not None
        return model.generic_params
    return param_count(model.arch)

