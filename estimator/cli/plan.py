"""Command line for capacity planning: ``estimator plan`` (``estimator sweep`` is estimator/cli/sweep.py).

Registered in estimator/cli/main.py. Thin: parse, build workloads, call `estimator.planning.plan`, render with
`estimator.render.plan_table`. Heavy imports (numpy, matplotlib, openpyxl)
happen inside the commands, so `estimate`'s cold start does not pay for them.
"""

from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from estimator.cli.options import (
    ForceOption,
    GroupSizeOption,
    Logits,
    LogitsOption,
    OutputFormat,
    OutputOption,
    PlotOption,
    SpecsDir,
    Units,
    catalog_for,
    check_format,
    console,
    inference_workload,
    positive,
    refuse,
    split_list,
)

if TYPE_CHECKING:
    from estimator.catalog.architecture import ModelSpec
    from estimator.catalog.registry import Catalog
    from estimator.catalog.specs import GpuSpec
    from estimator.catalog.systems import SystemSpec
    from estimator.inference.report import Report
    from estimator.planning.costs import Prices
    from estimator.planning.plan import PlanReport

app = typer.Typer()


class SortBy(str, Enum):
    cost = "cost"
    owned = "owned"
    rented = "rented"
    cards = "cards"
    throughput = "throughput"


SpecsDirOption = SpecsDir


def _number(option: str, text: str | None) -> float | None:
    import math

    from estimator.errors import WorkloadInvalid

    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        raise WorkloadInvalid(f"{option} must be a number, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise WorkloadInvalid(f"{option} must be a positive finite number, got {text!r}")
    return value


def plan_cards(gpu: list[str] | str | None, gpus: str | None) -> list[str] | None:
    """The cards `plan` compares: every --gpu (repeated or comma-separated) and the deprecated --gpus; None: none
    named. A number given to --gpus (the tensor-parallel degree elsewhere) is refused: plan searches it."""
    from estimator.errors import WorkloadInvalid

    given = [gpu] if isinstance(gpu, str) else list(gpu or [])
    if gpus is not None:
        if all(t.strip().isdigit() for t in split_list(gpus)):
            raise WorkloadInvalid(f"--gpus {gpus}: plan searches the tensor-parallel degree and the GPU count "
                                  "itself; name the cards to compare with --gpu (e.g. --gpu h100)")
        given.append(gpus)
    return [name for text in given for name in split_list(text)] or None


def _candidates(catalog: Catalog, gpus: list[str] | None,
                systems: str | None) -> tuple[list[tuple[SystemSpec, GpuSpec]], list[GpuSpec]]:
    """(system, GPU) pairs to compare, and the named GPUs no system holds."""
    chosen = [] if systems is None else [catalog.systems.get(name) for name in split_list(systems)]
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


def _fraction(option: str, text: str) -> float:
    value = _number(option, text) if text.strip() not in ("0", "0.0") else 0.0
    if value is None or not 0 <= value < 1:
        from estimator.errors import WorkloadInvalid

        raise WorkloadInvalid(f"{option} must be a fraction in [0, 1), got {text!r}")
    return value


def estimate_plot(report: Report, path: Path) -> None:
    """`estimate --plot`: memory breakdown and roofline (imports matplotlib only when asked)."""
    from estimator.render.plot import estimate_chart

    estimate_chart(report, path)


@app.command("plan")
def plan_command(
    model: Annotated[str, typer.Option("--model", "-m", help="Catalog name, config.json, or a size such as 70b.")],
    prompt_tokens: Annotated[str, typer.Option(help="Prompt length per request.")] = "2048",
    output_tokens: Annotated[str, typer.Option(help="Generated tokens per request (default 256, a typical reply, "
                                               "as sweep; estimate defaults to 0, the prompt alone).")] = "256",
    concurrency: Annotated[str | None, typer.Option(help="Requests served at once.")] = None,
    target_tokens_per_s: Annotated[str | None, typer.Option(help="Aggregate generated tokens/s to reach.")] = None,
    max_ttft_s: Annotated[str | None, typer.Option(help="Limit on time to first token, seconds.")] = None,
    max_tpot_s: Annotated[str | None, typer.Option(help="Limit on time per output token, seconds.")] = None,
    gpu: Annotated[list[str] | None, typer.Option("--gpu", "-g", help="Cards to compare, repeatable or "
                                                  "comma-separated (--gpu a100 --gpu h100, --gpu a100,h100,l40s), "
                                                  "each in every server of specs/systems that holds it (default: "
                                                  "every system).")] = None,
    gpus: Annotated[str | None, typer.Option(help="Deprecated here: the old spelling of --gpu (cards). In estimate "
                                             "and sweep --gpus is the tensor-parallel degree; plan searches that "
                                             "itself. Still read, with a warning.")] = None,
    systems: Annotated[str | None, typer.Option(help="Servers to compare, e.g. hgx-h100,gb200-nvl72,pcie-l40s "
                                                "(`estimator systems`).")] = None,
    headroom: Annotated[str, typer.Option(help="Fraction of GPU memory kept free, as engines keep it (0.10).")]
    = "0.10",
    step_tokens: Annotated[str, typer.Option(help="Token budget per engine step: decodes + prefill chunks "
                                             "(8192, vLLM's max_num_batched_tokens).")] = "8192",
    max_nodes: Annotated[str, typer.Option(help="Most servers one replica may span (8).")] = "8",
    allow_tp_across_domains: Annotated[bool, typer.Option("--allow-tp-across-domains", help="Let tensor "
                                                          "parallel cross NVLink domains (PCIe, network).")]
    = False,
    dtype: Annotated[str, typer.Option(help="Weight format (bf16, fp8, awq-int4...).")] = "bf16",
    kv_dtype: Annotated[str | None, typer.Option(help="KV-cache format (default as estimate).")] = None,
    profile: Annotated[str, typer.Option(help="Efficiency profile: optimized or hf.")] = "optimized",
    prices: Annotated[Path | None, typer.Option(help="YAML file of card prices (docs/planning.md).")] = None,
    sort: Annotated[SortBy, typer.Option(help="Rank by cost ($/Mtoken: rented where priced, else owned), owned, "
                                          "rented, cards, or throughput.")] = SortBy.cost,
    output_format: Annotated[OutputFormat, typer.Option("--format", "-f", help="table, json, csv or xlsx.")]
    = OutputFormat.table,
    output: OutputOption = None,
    logits: LogitsOption = Logits.last,
    group_size: GroupSizeOption = None,
    explain: Annotated[bool, typer.Option("--explain", help="Not taken here: see estimate --explain.")] = False,
    units: Annotated[Units | None, typer.Option(help="Not taken here: plan's table is in GB; --format json gives "
                                                "bytes.")] = None,
    plot: PlotOption = None,
    force: ForceOption = False,
    specs_dir: SpecsDirOption = None,
) -> None:
    """Rank servers and layouts for a serving workload.

    \b
    Examples:
      estimator plan --model llama-3.1-70b --prompt-tokens 4096 --output-tokens 512 --concurrency 32
      estimator plan --model llama-3.1-8b --target-tokens-per-s 50000 --gpu l40s --gpu h100
      estimator plan --model qwen3-32b --max-ttft-s 1 --max-tpot-s 0.05 --concurrency 64 -f xlsx -o plan.xlsx
    """
    check_format(output_format, list(OutputFormat), output)
    params = dict(locals())  # every option by parameter name, as `command_params` gives them
    catalog = catalog_for(specs_dir)
    report = plan_report(catalog, catalog.model(model), params)
    _show_plan(report, output_format, output, plot)
    if gpus is not None:  # once all went well: a refused input stays one line, with no warning before it
        sys.stderr.write(f"warning: plan --gpus is deprecated and will be removed: use --gpu {gpus} (--gpus is the "
                         "tensor-parallel degree in estimate and sweep)\n")


def plan_report(catalog: Catalog, model_spec: ModelSpec, p: dict[str, Any]) -> PlanReport:
    """The PlanReport that `plan` prints for its parameters ``p`` (parameter name → value, as typed): the one
    conversion of its options, which the command and `estimator serve` share."""
    from estimator.planning.plan import Goal, Settings, plan

    refuse("plan", {"--explain": bool(p.get("explain")), "--units": p.get("units") is not None})
    systems, concurrency = p["systems"], p["concurrency"]
    target_tokens_per_s, max_ttft_s, max_tpot_s = p["target_tokens_per_s"], p["max_ttft_s"], p["max_tpot_s"]
    headroom, step_tokens, max_nodes = p["headroom"], p["step_tokens"], p["max_nodes"]
    allow_tp_across_domains, dtype, kv_dtype, profile = (p["allow_tp_across_domains"], p["dtype"], p["kv_dtype"],
                                                         p["profile"])
    prompt_tokens, output_tokens, prices, sort = p["prompt_tokens"], p["output_tokens"], p["prices"], p["sort"]
    candidates, unplaced = _candidates(catalog, plan_cards(p.get("gpu"), p["gpus"]), systems)
    fraction = _fraction("--headroom", headroom)
    settings = Settings(headroom=fraction, step_tokens=positive("--step-tokens", step_tokens),
                        max_nodes=positive("--max-nodes", max_nodes), allow_tp_across=allow_tp_across_domains)
    goal = Goal(concurrency=None if concurrency is None else positive("--concurrency", concurrency),
                target_tokens_per_s=_number("--target-tokens-per-s", target_tokens_per_s),
                max_ttft_s=_number("--max-ttft-s", max_ttft_s), max_tpot_s=_number("--max-tpot-s", max_tpot_s))
    goal.check()
    workload = inference_workload(catalog, dtype, kv_dtype, profile, p,
                                  prompt_tokens=positive("--prompt-tokens", prompt_tokens),
                                  output_tokens=positive("--output-tokens", output_tokens, allow_zero=True))
    return plan(model_spec, candidates, workload, goal, _price_book(catalog, prices), sort=SortBy(sort).value,
                settings=settings, unplaced=unplaced)


def _price_book(catalog: Catalog, prices: Path | None) -> Prices:
    """The shipped costs (specs/costs.yaml) under the user's --prices file, if any."""
    from estimator.catalog.files import read_yaml
    from estimator.planning.plan import load_prices

    costs = read_yaml(catalog.root / "costs.yaml", "costs file")
    user = None if prices is None else read_yaml(prices, "prices file")
    if user is not None and not isinstance(user, dict):
        from estimator.errors import SpecInvalid

        raise SpecInvalid(f"{prices}: expected a mapping of keys")
    return load_prices(costs, user, user_path=prices, resolve=catalog.gpus.get, resolve_system=catalog.systems.get)


def _show_plan(report: PlanReport, output_format: OutputFormat, output: Path | None, plot: Path | None) -> None:
    """The chart (--plot), then the table or the chosen file format."""
    from estimator.render.formats import write_report
    from estimator.render.plan_table import plan_rows, render_plan

    if plot is not None:
        from estimator.render.plot import plan_chart

        plan_chart(report, plot)
    if output_format is OutputFormat.table:
        render_plan(report, console(record=output is not None, width=200 if output else None), record_to=output)
    else:
        write_report(output_format.value, report, output, table=plan_rows(report), sheet="plan",
                     notes=plan_notes(report))


def plan_notes(report: PlanReport) -> list[str]:
    """The plan's assumptions, worded, for the XLSX's "assumptions" sheet (`plan` and `estimator serve`)."""
    from estimator.notes import word

    return [word(n, binary=False) for n in report.assumptions]
