"""OomReport → tables (rich). Renderers format; they never compute."""

from __future__ import annotations

from collections.abc import Callable

from rich.console import Console
from rich.markup import escape

from estimator.notes import word
from estimator.oom.report import OomReport
from estimator.render.fit import Column, print_table
from estimator.units import format_bytes

NO_WORKLOAD = ("for what to change, give the job after the input as estimate's options: --model NAME --gpu NAME "
               "--batch N --prompt-tokens N --output-tokens N (serving), or --mode train --batch N --seq-len N and "
               "its --lora-rank, --qlora, --zero, --dp (training); e.g. estimator oom --from err.txt --model "
               "llama-3.1-8b --gpu h100 --mode train --batch 4 --seq-len 4096")


def render_oom(report: OomReport, console: Console, *, binary: bool = True) -> None:
    """The card at the failure, the likely tensor, the estimate's terms and the ranked changes."""

    def b(n: int | None) -> str:
        return "—" if n is None else format_bytes(n, binary=binary)

    c = report.card
    unit = "GiB (2³⁰ B)" if binary else "GB (10⁹ B)"
    rows = [[name, b(value)] for name, value in [
        ("failed request", c.requested_bytes), ("capacity (as CUDA reports it)", c.capacity_bytes),
        ("free", c.free_bytes), ("allocated by PyTorch (tensors)", c.allocated_bytes),
        ("reserved by PyTorch, in no tensor", c.reserved_unallocated_bytes),
        ("this process outside PyTorch", c.outside_pytorch_bytes), ("other processes", c.other_processes_bytes),
        ("largest free cached block (snapshot, after)", c.largest_free_block_bytes)] if value is not None]
    print_table(console, [Column("what", wrap=True), Column("bytes", justify="right")], rows,
                title=f"The card at the failure ({unit}, measured)", title_justify="left")
    p = report.prediction
    if p is not None:
        terms = [[escape(term.name), b(term.bytes)] for term in p.terms]
        terms += [["runtime overhead", b(p.overhead_bytes)],
                  ["[bold]total per GPU[/]", f"[bold]{b(p.per_gpu_bytes)}[/]"],
                  ["capacity", b(p.capacity_bytes) + ("  [green]fits[/]" if p.fits else "  [red]does not fit[/]")]]
        print_table(console, [Column("term", wrap=True), Column("per GPU", justify="right")], terms,
                    title=f"The estimate ({escape(p.options)})", title_justify="left")
    console.print("[bold]Findings[/]")
    for line in report.findings:
        console.print(f"  - {escape(word(line, binary=binary))}", highlight=False)
    if p is None:  # the error text alone: which options give the changes that would fit
        console.print(f"  - {NO_WORKLOAD}", highlight=False, markup=False)
    if report.other_matches:
        console.print("  also the request's size: " + "; ".join(m.name for m in report.other_matches[:6]),
                      highlight=False)
    if report.suggestions:
        _suggestions(report, console, b)


def _suggestions(report: OomReport, console: Console, b: Callable[[int | None], str]) -> None:
    console.print("[bold]What to change[/], best first (those that fit, then by cost: none < time < quality < "
                  "hardware, then memory freed)")
    for i, s in enumerate(report.suggestions, 1):
        after = "" if s.per_gpu_bytes is None else f" → {b(s.per_gpu_bytes)} per GPU"
        time = "" if s.time_factor is None else f", time ×{s.time_factor:.2f}"
        source = "measured" if s.source == "measured" else "estimate re-run"
        freed = f"frees {b(s.frees_bytes)}" if s.frees_bytes >= 0 else f"adds {b(-s.frees_bytes)}"
        console.print(f"  {i}. {escape(s.change)}: {freed}{after}, "
                      f"{'[green]fits[/]' if s.fits else '[red]does not fit[/]'}; cost {s.cost}: "
                      f"{escape(s.cost_detail)}{time} ({source})", highlight=False)
