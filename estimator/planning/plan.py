"""Capacity planning: rank cards for a serving workload — cards needed, batch and context that fit, speed, cost.

Pure: takes validated specs and a goal, returns a frozen `PlanReport` (JSON = ``model_dump(mode="json")``).
Every per-card figure comes from `estimate` on that card (the same memory and time model), so a plan row and an
``estimate`` run with the row's batch and GPU count agree exactly.

Goals (one of):
- ``concurrency``: serve C sequences at once on the fewest cards that hold them (one tensor-parallel group).
- ``target_tokens_per_s``: reach T generated tokens/s in aggregate: the smallest tensor-parallel group that holds
  the model, the smallest batch that reaches T on it, and data-parallel replicas of that group when one is short.
- latency limits only (``max_ttft_s`` / ``max_tpot_s``): the largest concurrency that meets them, on the smallest
  tensor-parallel group that can meet them at all.
Latency limits also constrain the other two goals: a card that misses them is listed last, with the reason.

Cost: a user prices file sets per-card purchase prices and per-hour rental prices; otherwise the spec's approximate
street price (with its date) is amortised per hour (specs/costs.yaml) and board power is priced per kWh.
$/million tokens = cost per hour of all cards ÷ (aggregate tokens/s × 3600) × 10⁶.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError

from estimator.catalog.architecture import ModelSpec
from estimator.catalog.specs import GpuSpec
from estimator.errors import EstimatorError, SpecInvalid, WorkloadInvalid
from estimator.inference.estimate import estimate
from estimator.inference.report import Report
from estimator.inference.workload import MAX_BATCH, InferenceWorkload
from estimator.model.capacity import gpus_required, largest_true
from estimator.model.parallel import tensor_parallel_degrees
from estimator.notes import Note, NoteCode, note
from estimator.report import Frozen, Versioned

HOURS_PER_YEAR = 8760
SortKey = Literal["cost", "cards", "throughput"]


class CardPrice(Frozen):
    """One card's prices in a user prices file; any field may be left out."""

    usd: float | None = Field(default=None, gt=0)  # purchase price per card
    date: str | None = Field(default=None, pattern=r"^\d{4}-\d{2}$")
    usd_per_hour: float | None = Field(default=None, gt=0)  # rental price per card-hour
    source: str | None = None


class Prices(Frozen):
    """Cost inputs: ownership defaults (specs/costs.yaml) and per-card overrides (a user's --prices file)."""

    amortization_years: float = Field(gt=0, le=50)
    electricity_usd_per_kwh: float = Field(ge=0, le=10)
    gpus: dict[str, CardPrice] = Field(default_factory=dict)  # keyed by catalog name or alias
    sources: tuple[str, ...] = ()


def load_prices(defaults: Mapping[str, Any], user: Mapping[str, Any] | None, *, user_path: Path | None = None,
                resolve: Any = None) -> Prices:
    """Merge the shipped defaults with a user prices mapping; GPU keys are resolved to catalog names by
    ``resolve`` (a name → GpuSpec function), so 'h100' and 'NVIDIA H100 SXM5 80GB' mean the same card."""
    merged: dict[str, Any] = {k: v for k, v in defaults.items() if k in ("amortization_years",
                                                                         "electricity_usd_per_kwh", "sources")}
    where = str(user_path) if user_path else "prices"
    if user is not None:
        unknown = sorted(set(user) - {"amortization_years", "electricity_usd_per_kwh", "gpus"})
        if unknown:
            raise SpecInvalid(f"{where}: unknown keys {', '.join(unknown)} (expected amortization_years, "
                              "electricity_usd_per_kwh, gpus)")
        merged.update({k: v for k, v in user.items() if k != "gpus"})
        gpus = user.get("gpus") or {}
        if not isinstance(gpus, Mapping):
            raise SpecInvalid(f"{where}: 'gpus' must map card names to prices")
        merged["gpus"] = {(resolve(str(k)).name if resolve else str(k)): v for k, v in gpus.items()}
    try:
        return Prices.model_validate(merged)
    except ValidationError as error:
        from estimator.catalog.registry import validation_message

        raise SpecInvalid(f"{where}: {validation_message(error)}") from None


class Goal(Frozen):
    concurrency: int | None = Field(default=None, ge=1, le=MAX_BATCH)
    target_tokens_per_s: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    max_ttft_s: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    max_tpot_s: float | None = Field(default=None, gt=0, allow_inf_nan=False)

    def check(self) -> None:
        if self.concurrency is not None and self.target_tokens_per_s is not None:
            raise WorkloadInvalid("give --concurrency or --target-tokens-per-s, not both")
        if self.concurrency is None and self.target_tokens_per_s is None and self.max_ttft_s is None \
                and self.max_tpot_s is None:
            raise WorkloadInvalid("give a goal: --concurrency C, --target-tokens-per-s T, or --max-ttft-s X and/or "
                                  "--max-tpot-s Y")

    @property
    def kind(self) -> str:
        if self.concurrency is not None:
            return "concurrency"
        return "throughput" if self.target_tokens_per_s is not None else "latency"


class PlanOption(Frozen):
    """One card's answer. Memory figures are per GPU; cost and power cover every card of the option."""

    rank: int | None  # 1 = best; None for cards that cannot meet the goal
    gpu: str
    feasible: bool
    reason: str | None
    cards: int | None
    tensor_parallel: int | None
    replicas: int | None
    batch_per_replica: int | None
    concurrency: int | None  # sequences served at once over all replicas
    max_batch: int | None  # per replica, at this prompt + output
    max_context_tokens: int | None  # per sequence, at this batch
    tokens_per_s: float | None  # generated tokens/s, all replicas
    tokens_per_s_per_user: float | None
    time_to_first_token_s: float | None
    time_per_output_token_s: float | None
    weights_per_gpu_bytes: int | None
    kv_cache_per_gpu_bytes: int | None
    activation_per_gpu_bytes: int | None
    overhead_per_gpu_bytes: int | None
    memory_per_gpu_bytes: int | None
    capacity_bytes: int
    headroom_bytes: int | None
    headroom_fraction: float | None
    bandwidth_bytes_per_s: float
    peak_flop_per_s: float | None
    prefill_flops: float | None  # per replica, for the roofline chart
    decode_bytes: float | None
    decode_flops: float | None
    power_w: float | None
    price_usd_per_card: float | None
    price_date: str | None
    price_source: str | None
    usd_per_hour: float | None  # all cards
    cost_basis: str | None
    usd_per_million_tokens: float | None


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
    options: tuple[PlanOption, ...]
    assumptions: tuple[Note, ...]
    warnings: tuple[Note, ...]


def _with(w: InferenceWorkload, **update: int) -> InferenceWorkload:
    return w.model_copy(update=update)


def _tpot(report: Report) -> float | None:
    per_user = report.time.tokens_per_s_per_sequence
    return None if not per_user else 1.0 / per_user


def _latency_miss(report: Report, goal: Goal) -> str | None:
    ttft, tpot = report.time.time_to_first_token_s, _tpot(report)
    if goal.max_ttft_s is not None and ttft > goal.max_ttft_s:
        return f"time to first token {ttft:.3g} s exceeds --max-ttft-s {goal.max_ttft_s:g}"
    if goal.max_tpot_s is not None and (tpot is None or tpot > goal.max_tpot_s):
        shown = "none (no decode)" if tpot is None else f"{tpot:.3g} s"
        return f"time per output token {shown} exceeds --max-tpot-s {goal.max_tpot_s:g}"
    return None


class _Infeasible(Exception):
    def __init__(self, reason: str, report: Report | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.report = report


def _solve(model: ModelSpec, gpu: GpuSpec, w: InferenceWorkload, goal: Goal) -> tuple[Report, int]:
    """The configuration that meets ``goal`` on ``gpu``: (report of one replica, replicas)."""
    def run(batch: int, tp: int) -> Report:
        return estimate(model, gpu, _with(w, batch=batch, tensor_parallel=tp))

    if goal.concurrency is not None:
        tp = gpus_required(model, gpu, w, goal.concurrency, w.prompt_tokens, w.output_tokens)
        if tp is None:
            raise _Infeasible(f"{goal.concurrency} sequences do not fit on any valid tensor-parallel group")
        return run(goal.concurrency, tp), 1
    tp = gpus_required(model, gpu, w, 1, w.prompt_tokens, w.output_tokens)
    if tp is None:
        raise _Infeasible("one sequence does not fit on any valid tensor-parallel group")
    if goal.target_tokens_per_s is not None:
        target = goal.target_tokens_per_s
        top = run(1, tp).memory.max_batch or 1
        best = run(top, tp)
        if best.time.tokens_per_s is None:
            raise _Infeasible("no output tokens to generate")
        replicas = max(1, math.ceil(target / best.time.tokens_per_s))
        share = target / replicas

        def short(batch: int) -> bool:  # tokens/s grows with batch: the decode step is mostly fixed weight reads
            rate = run(batch, tp).time.tokens_per_s
            return rate is not None and rate < share

        batch = min(largest_true(short, 1, top) + 1, top)
        return run(batch, tp), replicas
    # latency limits only: the smallest group that meets them at batch 1, then the largest batch that still does
    last: Report | None = None
    for degree in (d for d in tensor_parallel_degrees(model) if d >= tp):
        last = run(1, degree)
        if _latency_miss(last, goal) is None:
            top = last.memory.max_batch or 1
            batch = largest_true(lambda b: _latency_miss(run(b, degree), goal) is None, 1, top)  # noqa: B023
            return run(batch, degree), 1
    miss = _latency_miss(last, goal) if last is not None else None
    raise _Infeasible(miss or "no valid tensor-parallel group", last)


def _option(gpu: GpuSpec, report: Report | None, replicas: int, prices: Prices, reason: str | None) -> PlanOption:
    price = prices.gpus.get(gpu.name, CardPrice())
    card_usd = price.usd or gpu.price_usd
    date = price.date if price.usd else gpu.price_date
    source = (price.source or "prices file") if price.usd else ("spec, approximate" if gpu.price_usd else None)
    common: dict[str, Any] = {
        "gpu": gpu.name, "capacity_bytes": gpu.memory_bytes, "bandwidth_bytes_per_s": gpu.bandwidth_bytes_per_s,
        "price_usd_per_card": card_usd, "price_date": date, "price_source": source,
    }
    if report is None:
        empty = {k: None for k in PlanOption.model_fields if k not in common}
        return PlanOption(**{**empty, **common, "feasible": False, "reason": reason})
    tp = report.workload.gpus
    cards = tp * replicas
    m, t = report.memory, report.time
    tokens_per_s = None if t.tokens_per_s is None else t.tokens_per_s * replicas
    if price.usd_per_hour is not None:
        per_hour: float | None = price.usd_per_hour * cards
        basis: str | None = f"rented at ${price.usd_per_hour:g}/card-hour ({price.source or 'prices file'})"
    elif card_usd is not None and gpu.tdp_w is not None:
        per_card = card_usd / (prices.amortization_years * HOURS_PER_YEAR)
        power = gpu.tdp_w / 1000 * prices.electricity_usd_per_kwh
        per_hour = (per_card + power) * cards
        basis = (f"owned: ${card_usd:,.0f} over {prices.amortization_years:g} y + {gpu.tdp_w:g} W at "
                 f"${prices.electricity_usd_per_kwh:g}/kWh")
    else:
        per_hour = basis = None
    per_mtok = None if per_hour is None or not tokens_per_s else per_hour / (tokens_per_s * 3600) * 1e6
    return PlanOption(
        **common, rank=None, feasible=reason is None, reason=reason, cards=cards, tensor_parallel=tp,
        replicas=replicas, batch_per_replica=report.workload.batch, concurrency=report.workload.batch * replicas,
        max_batch=m.max_batch, max_context_tokens=m.max_context_tokens, tokens_per_s=tokens_per_s,
        tokens_per_s_per_user=t.tokens_per_s_per_sequence, time_to_first_token_s=t.time_to_first_token_s,
        time_per_output_token_s=_tpot(report), weights_per_gpu_bytes=m.per_gpu_bytes - (m.kv_cache_bytes or 0) // tp
        - (m.activation_bytes or 0) // tp - m.overhead_bytes // tp,
        kv_cache_per_gpu_bytes=None if m.kv_cache_bytes is None else m.kv_cache_bytes // tp,
        activation_per_gpu_bytes=None if m.activation_bytes is None else m.activation_bytes // tp,
        overhead_per_gpu_bytes=m.overhead_bytes // tp, memory_per_gpu_bytes=m.per_gpu_bytes,
        headroom_bytes=m.headroom_bytes, headroom_fraction=m.headroom_bytes / m.capacity_bytes,
        peak_flop_per_s=report.gpu.peak_flop_per_s, prefill_flops=t.prefill_flops, decode_bytes=t.decode_bytes,
        decode_flops=t.decode_flops, power_w=None if gpu.tdp_w is None else gpu.tdp_w * cards,
        usd_per_hour=per_hour, cost_basis=basis,
        usd_per_million_tokens=per_mtok,
    )


def _sort_key(option: PlanOption, sort: SortKey) -> tuple[Any, ...]:
    cost = (option.usd_per_million_tokens is None, option.usd_per_million_tokens or 0.0)
    cards = option.cards or 0
    speed = -(option.tokens_per_s or 0.0)
    if sort == "cards":
        return (cards, *cost, speed)
    if sort == "throughput":
        return (speed, cards, *cost)
    return (*cost, cards, speed)


def plan(model: ModelSpec, gpus: Iterable[GpuSpec], workload: InferenceWorkload, goal: Goal, prices: Prices, *,
         sort: SortKey = "cost") -> PlanReport:
    """Rank ``gpus`` for serving ``model`` under ``goal``; cards that cannot meet it come last, with the reason."""
    goal.check()
    feasible: list[PlanOption] = []
    failed: list[PlanOption] = []
    for gpu in gpus:
        try:
            report, replicas = _solve(model, gpu, workload, goal)
            miss = _latency_miss(report, goal)
            if miss is None and report.time.tokens_per_s is None:
                miss = "the model generates no tokens (encoder, or --output-tokens 0)"
            option = _option(gpu, report, replicas, prices, miss)
        except _Infeasible as error:
            option = _option(gpu, error.report, 1, prices, error.reason)
        except EstimatorError as error:  # e.g. a card without the precision the format needs
            option = _option(gpu, None, 1, prices, str(error))
        (feasible if option.feasible else failed).append(option)
    feasible.sort(key=lambda o: _sort_key(o, sort))
    failed.sort(key=lambda o: o.gpu)
    ranked = [o.model_copy(update={"rank": i}) for i, o in enumerate(feasible, 1)]
    w = workload
    assumptions = [
        note(NoteCode.PROFILE, profile=w.profile.name, description=w.profile.description),
        note(NoteCode.PLAN_TENSOR_PARALLEL), note(NoteCode.PLAN_TTFT), note(NoteCode.PLAN_TOKENS),
        note(NoteCode.OWNED_COST, years=prices.amortization_years, usd_per_kwh=prices.electricity_usd_per_kwh),
        *(note(NoteCode.PRICE_SOURCE, source=source) for source in prices.sources),
    ]
    warnings = []
    if not any(o.usd_per_million_tokens for o in ranked):
        warnings.append(note(NoteCode.NO_PRICE))
    return PlanReport(
        model=model.name, params=_params(model), dtype=w.weight_format.name, kv_dtype=w.kv_format.name,
        profile=w.profile.name, prompt_tokens=w.prompt_tokens, output_tokens=w.output_tokens, goal=goal,
        goal_kind=goal.kind, sort=sort, options=(*ranked, *failed), assumptions=tuple(assumptions),
        warnings=tuple(warnings),
    )


def _params(model: ModelSpec) -> int:
    from estimator.model.inventory import param_count

    if model.arch is None:
        assert model.generic_params is not None
        return model.generic_params
    return param_count(model.arch)
