"""The plan's rows for spreadsheets (CSV, XLSX: written by `estimator.render.formats`) and its table. Renderers
format; they never compute."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from estimator.notes import word
from estimator.render.fit import Column, print_table
from estimator.report import flatten
from estimator.units import format_bytes, format_seconds

if TYPE_CHECKING:
    from rich.console import Console

    from estimator.planning.plan import PlanOption, PlanReport


def plan_rows(report: PlanReport) -> tuple[list[str], list[dict[str, Any]]]:
    """One row per option: the PlanOption fields, with the workload repeated so each row stands alone."""
    head = {"model": report.model, "dtype": report.dtype, "kv_dtype": report.kv_dtype, "profile": report.profile,
            "prompt_tokens": report.prompt_tokens, "output_tokens": report.output_tokens,
            **flatten(report.goal.model_dump(mode="json"), "goal.")}
    rows = [{**head, **o.model_dump(mode="json")} for o in report.options]
    return list(rows[0]) if rows else list(head), rows


def _num(value: float | None, spec: str = ",.0f") -> str:
    return "—" if value is None else format(value, spec)


def _servers(option: PlanOption) -> str:
    """Servers bought, or the part of one: "2/8" is 2 GPUs of an 8-GPU server (a smaller size it is sold in)."""
    bought, per = option.gpus_bought, option.gpus_per_server
    if bought is not None and per is not None and bought < per:
        return f"{bought}/{per}"
    return _num(option.servers)


def _share(fraction: float | None) -> str:
    """How much of the option the goal uses: whole percent, one decimal below 10 %."""
    if fraction is None:
        return "—"
    return f"{fraction:.0%}" if fraction >= 0.1 else f"{fraction:.1%}"


def _ep(option: PlanOption) -> str:
    """An " EP n" suffix where a stage's experts spread over more GPUs than its TP group (data-parallel attention)."""
    ep, tp = option.expert_parallel, option.tensor_parallel
    return f" EP{ep}" if ep is not None and tp is not None and ep > tp else ""


def render_plan(report: PlanReport, console: Console) -> None:
    from rich.markup import escape  # the model's name comes from its config.json: text, never markup

    goal = report.goal
    if goal.concurrency is not None:
        wanted = f"{goal.concurrency} concurrent requests"
    elif goal.target_tokens_per_s is not None:
        wanted = f"{goal.target_tokens_per_s:,.0f} tokens/s aggregate"
    else:
        wanted = "the most concurrent requests"
    limits = ([f"TTFT ≤ {goal.max_ttft_s:g} s"] if goal.max_ttft_s else []) + (
        [f"TPOT ≤ {goal.max_tpot_s:g} s"] if goal.max_tpot_s else [])
    console.print(f"[bold]Plan[/]  {escape(report.model)} ({report.params / 1e9:,.1f} B params), weights "
                  f"{report.dtype}, KV "
                  f"{report.kv_dtype}, prompt {report.prompt_tokens:,} + output {report.output_tokens:,} tokens; "
                  f"goal: {wanted}" + (f" with {', '.join(limits)}" if limits else "")
                  + f"; ranked by {report.ranking}; {report.settings.headroom:.0%} memory headroom",
                  highlight=False)
    columns = [Column("#", "right"), Column("system"), *(Column(name, "right") for name in (
        "servers", "GPUs", "TP×PP×rep", "batch", "tok/s", "use", "TTFT", "TPOT", "mem/GPU", "free", "GPU W", "server W",
        "owned $/h", "rented $/h")), Column("$/Mtok", "right", wrap=True)]  # the last holds a reason where no fit
    rows: list[list[str]] = []
    for o in report.options:
        name = o.system or o.gpu
        if not o.feasible and o.cards is None:
            rows.append(["—", escape(name), *[""] * 14, f"[red]{escape(o.reason or '')}[/]"])
            continue
        row = [str(o.rank) if o.rank else "—", escape(name), _servers(o), str(o.cards),
               f"{o.tensor_parallel}×{o.pipeline_parallel}×{o.replicas}" + _ep(o), _num(o.batch_per_replica),
               _num(o.tokens_per_s), _share(o.goal_use_fraction),
               "—" if o.time_to_first_token_s is None else format_seconds(o.time_to_first_token_s),
               "—" if o.time_per_output_token_s is None else format_seconds(o.time_per_output_token_s),
               "—" if o.memory_per_gpu_bytes is None else format_bytes(o.memory_per_gpu_bytes, binary=False),
               "—" if o.headroom_fraction is None else f"{o.headroom_fraction:.0%}",
               _num(o.power_w), _num(o.server_power_w), _num(o.owned_usd_per_hour, ",.2f")
               + ("*" if o.owned_basis and "host not priced" in o.owned_basis else ""),
               _num(o.rented_usd_per_hour, ",.2f"), _num(o.usd_per_million_tokens, ",.2f")]
        if not o.feasible:
            row[-1] = f"[red]{escape(o.reason or '')}[/]"
        rows.append(row)
    print_table(console, columns, rows, key=2, title_justify="left", show_lines=False)
    console.print("Owned: server price amortised + server power, pro rata for a part of a server (servers 2/8: "
                  "2 of its 8 GPUs; * cards alone: the server has no price); rented: --prices. use: how much of the "
                  "option the goal takes. Prices are approximate, with their date in the JSON/CSV (price_date, "
                  "cost_basis).", highlight=False)
    on = [str(o.rank) for o in report.options if o.pareto]
    if len(on) > 1:
        console.print(f"Cost-versus-latency frontier ($/Mtok, TTFT, TPOT; none of them beaten by another option "
                      f"in all three): {', '.join('#' + r for r in on)} (pareto in the JSON/CSV).", highlight=False)
    for warning in report.warnings:
        console.print(f"[yellow]warning:[/] {escape(word(warning, binary=False))}")
    if report.fixes:  # no server holds the model: what would let one
        from estimator.render.formats import render_fixes

        render_fixes(console, report.fixes, binary=False)
