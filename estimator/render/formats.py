"""Reports → files (JSON, CSV, XLSX: the one writer of each), and the inference table (rich). Renderers format;
they never compute.

Every report reaches a file through `write_report`: JSON is the report's ``model_dump(mode="json")``; CSV and XLSX
are rows (by default the report flattened with dots, one row; plan and sweep give one row per card or point).
"""

from __future__ import annotations

import csv
import io
import json
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TextIO, cast, runtime_checkable

if TYPE_CHECKING:
    from rich.console import Console

    from estimator.planning.sweep import SweepResult

from pydantic import BaseModel

from estimator.errors import FieldInvalid
from estimator.inference.report import MemoryReport, Report, TimeReport
from estimator.notes import Note, word
from estimator.render.engine_table import render_engine
from estimator.render.output import write_text_atomically
from estimator.report import Fix, GpuInfo, flatten
from estimator.units import capacity_label, format_bytes, format_flops, format_rate_bytes, format_seconds

Row = Mapping[str, Any]


def to_json(report: BaseModel) -> str:
    """Any report as the JSON its model_dump gives."""
    return json.dumps(report.model_dump(mode="json"), indent=2)


def write_json(document: BaseModel | Iterable[Row], handle: TextIO) -> int | None:
    """The JSON writer: a report as its model_dump; rows (a sweep) as a list, streamed one row at a time and
    indented by one space (a sweep may hold millions of rows), as ``json.dumps(rows, indent=1)`` writes them.
    Returns the rows written (None for a report, one document)."""
    if isinstance(document, BaseModel):
        handle.write(to_json(document) + "\n")
        return None
    handle.write("[")
    count = 0
    for row in document:
        handle.write(("\n " if count == 0 else ",\n ") + json.dumps(row, indent=1).replace("\n", "\n "))
        count += 1
    handle.write("]\n" if count == 0 else "\n]\n")
    return count


def report_rows(reports: Iterable[BaseModel]) -> tuple[list[str], list[dict[str, Any]]]:
    """One row per report: the JSON fields flattened with dots (`estimator.report.flatten`)."""
    rows = [flatten(r.model_dump(mode="json")) for r in reports]
    return (list(rows[0]) if rows else []), rows


def table_of(document: BaseModel | Iterable[Row],
             table: tuple[Sequence[str], Iterable[Row]] | None) -> tuple[Sequence[str], Iterable[Row]]:
    """The keys and rows CSV and XLSX write: ``table`` when the caller gives one, else the report flattened as one
    row (rows without a table are a caller's bug: their keys are unknown)."""
    if table is not None:
        return table
    if not isinstance(document, BaseModel):
        raise ValueError("rows need table=(keys, rows)")  # a caller's bug
    return report_rows([document])


@runtime_checkable
class BlockRows(Protocol):
    """Rows held as blocks of columns, as a sweep's result holds its points (`estimator.planning.sweep.SweepResult`):
    recognised by what it has, not by its class, so that asking neither imports the sweep's module nor looks it up
    half-built while another thread is still importing it (a server's first requests, a sweep and a CSV at once)."""

    blocks: Sequence[Any]

    def first_error(self) -> tuple[str, str] | None: ...


def write_csv(keys: Sequence[str], rows: Iterable[Row], handle: TextIO) -> int:
    """The CSV writer: one header row, then one line per row, fields in ``keys`` order. A sweep's rows
    (`BlockRows`) are written a column at a time, to the same bytes (`estimator.render.sweep_csv`). Returns the
    rows written, the header aside."""
    if isinstance(rows, BlockRows):
        from estimator.render.sweep_csv import write_sweep_csv

        write_sweep_csv(cast("SweepResult", rows), handle)
        return sum(int(block.size) for block in rows.blocks)
    writer = csv.DictWriter(handle, fieldnames=list(keys), lineterminator="\n")
    writer.writeheader()
    count = 0
    for row in rows:
        writer.writerow(row)
        count += 1
    return count


def to_csv(reports: Iterable[BaseModel]) -> str:
    """One header row, one row per report; the JSON fields flattened with dots."""
    keys, rows = report_rows(reports)
    buffer = io.StringIO()
    if rows:
        write_csv(keys, rows, buffer)
    return buffer.getvalue()


def write_report(output_format: str, document: BaseModel | Iterable[Row], output: Path | None = None, *,
                 table: tuple[Sequence[str], Iterable[Row]] | None = None, sheet: str = "report",
                 notes: Sequence[str] = ()) -> None:
    """Write a report as ``json``, ``csv`` or ``xlsx`` to ``output`` (stdout when None; xlsx needs a file).

    ``table`` is the report's rows for CSV and XLSX (keys, rows); left out, the report flattened is one row.
    ``notes`` (the report's assumptions, worded) go to the XLSX's "assumptions" sheet (`estimator.render.xlsx`).
    """
    if output_format not in ("json", "csv", "xlsx"):
        raise ValueError(f"write_report writes json, csv or xlsx, not {output_format!r}")  # a caller's bug
    if output_format == "json":
        _to_file(output, lambda handle: write_json(document, handle), "JSON")
        return
    keys, rows = table_of(document, table)
    if output_format == "csv":
        _to_file(output, lambda handle: write_csv(keys, rows, handle), "CSV")
    elif output is None:
        raise FieldInvalid("output_format", "{output_format} xlsx needs {output} FILE.xlsx")
    else:
        from estimator.render.xlsx import write_xlsx  # only for --format xlsx

        write_xlsx(keys, rows, output, sheet=sheet, notes=notes)


def _to_file(output: Path | None, write: Callable[[TextIO], int | None], kind: str) -> None:
    if output is None:
        write(sys.stdout)
        return
    write_text_atomically(output, write, kind)


def card_memory(gpu: GpuInfo) -> str:
    """A card's memory as people know it, its marketed size, beside the usable memory as the driver reports it,
    each with its unit: ``80 GB card, 79.6 GiB usable`` (an H100 SXM5 reports 81,559 MiB). The driver's figure is
    binary whatever the table's units, as nvidia-smi prints it; a card with no catalog size shows the usable alone."""
    usable = f"{format_bytes(gpu.memory_bytes, binary=True)} usable"
    return usable if gpu.memory_gb is None else f"{gpu.memory_gb:g} GB card, {usable}"


def _bytes(n: int | None, binary: bool) -> str:
    return "not computed" if n is None else format_bytes(n, binary=binary)


def _time(s: float | None) -> str:
    return "—" if s is None else format_seconds(s)


def _capacity_rows(rows: list[list[str]], mem: MemoryReport) -> None:
    """The largest batch and context that fit; where the model's own limit caps the context, memory's figure too."""
    if mem.max_batch is not None:
        rows.append(["max batch (this context)", "", f"{mem.max_batch:,}"])
    if mem.max_context_tokens is not None:
        rows.append(["max prompt + output (this batch)", "", f"{mem.max_context_tokens:,} tok"])
        by_memory = mem.max_context_tokens_by_memory
        if by_memory is not None and by_memory != mem.max_context_tokens:  # capped at the model's own limit
            rows.append(["  memory alone (past its limit)", "", f"{by_memory:,} tok"])


def _time_rows(t: TimeReport) -> list[list[str]]:
    """The time table's rows: each phase's bound and expected time, the rates, and the all-to-all inside them."""
    times = [["prefill / first token", _time(t.prefill_bound_s), _time(t.prefill_s), t.prefill_bound],
             ["decode step", _time(t.decode_step_bound_s), _time(t.decode_step_s), t.bound or "—"]]
    if t.tokens_per_s is not None:
        bound = "" if t.tokens_per_s_bound is None else f"{t.tokens_per_s_bound:,.1f}"
        times.append(["tokens/s (all sequences)", bound, f"{t.tokens_per_s:,.1f}", ""])
        times.append(["tokens/s per sequence", "", f"{t.tokens_per_s_per_sequence:,.1f}", ""])
    if t.all_to_all_s is not None:
        times.append(["MoE all-to-all (prefill + a decode step, inside the above)", "", _time(t.all_to_all_s), ""])
    return times


def render_table(report: Report, console: Console, *, binary: bool = False, explain: bool = False) -> None:
    """The human view: which card was chosen, where every byte goes, how long each phase takes and why."""
    from rich.markup import escape  # names come from config.json and spec files: shown as text, never markup

    from estimator.render.fit import Column, print_table  # rich loads only for tables: JSON and CSV start faster
    m, g, w, mem, t = report.model, report.gpu, report.workload, report.memory, report.time
    unit = "GiB (2³⁰ B)" if binary else "GB (10⁹ B)"
    chosen = escape(g.name) + (f"  (from '{escape(g.requested_as)}')" if g.requested_as != g.name else "")
    console.print(f"[bold]Model[/]  {escape(m.name)}: {m.params:,} params"
                  + (f" ({m.active_params:,} active)" if m.active_params != m.params else "")
                  + (f", {m.architecture}, {m.layers} layers" if m.architecture else ", generic (size only)"))
    console.print(f"[bold]GPU[/]    {chosen}: {card_memory(g)}, {g.memory_type}, "
                  f"{format_rate_bytes(g.bandwidth_bytes_per_s)}, {format_flops(g.peak_flop_per_s)} "
                  f"{g.compute_dtype} × {w.gpus}")
    console.print(f"[bold]Job[/]    batch {w.batch}, prompt {w.prompt_tokens:,} + output {w.output_tokens:,} tokens, "
                  f"weights {w.dtype}, KV {w.kv_dtype}, profile {w.profile}"
                  + (f", MLA cache {w.mla_cache}" if w.mla_cache else "")
                  + (f", expert parallel {w.expert_parallel} ({w.attention_groups} attention group(s) of "
                     f"{w.gpus // (w.attention_groups or 1)} GPU(s), batch split over them)"
                     if w.expert_parallel else ""))

    rows = [["weights", _bytes(mem.weights_bytes, binary), _bytes(mem.weights_per_gpu_bytes, binary)]]
    for part in mem.weights_by_role:
        rows.append([f"  {part.role} @ {part.bits_per_weight:g} bit", _bytes(part.bytes, binary), ""])
    if mem.experts_per_gpu is not None:
        rows.append([f"  experts held ({mem.experts_per_gpu} per MoE layer per GPU)", "",
                     _bytes(mem.expert_weights_per_gpu_bytes, binary)])
    if mem.weights_replicated_bytes:  # so that the total column adds up: the copies beyond the model's one
        rows.append(["weights held again (replicated)", _bytes(mem.weights_replicated_bytes, binary), ""])
    rows.append(["KV cache", _bytes(mem.kv_cache_bytes, binary), _bytes(mem.kv_cache_per_gpu_bytes, binary)])
    for kv in mem.kv_by_window:
        span = "global" if kv.window is None else f"window {kv.window:,}"
        rows.append([f"  {kv.layers} layers {span} × {kv.tokens:,} tok", _bytes(kv.total_bytes, binary), ""])
    if mem.state_bytes:
        cross = any(part.kind == "cross_attention" for part in mem.state_by_kind)  # mllama: image K/V, not recurrent
        label = "fixed state (per sequence)" if cross else "recurrent state"
        rows.append([label, _bytes(mem.state_bytes, binary), _bytes(mem.state_per_gpu_bytes, binary)])
        if cross:
            rows += [[f"  {part.layers} {part.kind} layers", _bytes(part.bytes_per_sequence * w.batch, binary), ""]
                     for part in mem.state_by_kind]
    verdict = "[green]fits[/]" if mem.fits else "[red]does not fit[/]"
    rows += [["activations (prefill peak)", _bytes(mem.activation_bytes, binary),
              _bytes(mem.activation_per_gpu_bytes, binary)],
             ["runtime overhead", _bytes(mem.overhead_bytes, binary), _bytes(mem.overhead_per_gpu_bytes, binary)],
             ["[bold]total[/]", _bytes(mem.total_bytes, binary), f"[bold]{_bytes(mem.per_gpu_bytes, binary)}[/]"],
             [capacity_label(mem.capacity_bytes, binary=binary), "", _bytes(mem.capacity_bytes, binary)],
             ["headroom", "", f"{_bytes(mem.headroom_bytes, binary)}  {verdict}"],
             ["GPUs required", "", "no group fits" if mem.gpus_required is None else str(mem.gpus_required)]]
    _capacity_rows(rows, mem)
    print_table(console, [Column("term", wrap=True), Column("total", "right"), Column("per GPU", "right")], rows,
                title=f"Memory per GPU ({unit})", title_justify="left")

    times = _time_rows(t)
    print_table(console, [Column("phase", wrap=True), Column("bound (peak)", "right"),
                          Column(f"expected ({w.profile})", "right"), Column("limited by")], times,
                title="Time (hypothetical: does not fit)" if t.hypothetical else "Time", title_justify="left")
    render_engine(console, report.engine)
    render_notes(console, report.warnings, [("Arithmetic", report.explain, "  "),
                                            ("Assumptions", report.assumptions, "  - ")] if explain else [],
                 binary=binary)
    render_fixes(console, report.fixes, binary=binary)


def render_fixes(console: Console, fixes: Sequence[Fix], *, binary: bool) -> None:
    """A job that does not fit ends with what would make it fit: each change with the memory per GPU it gives,
    ranked as `estimator oom` ranks them (`estimator.request.fixes`)."""
    from rich.markup import escape

    if not fixes:
        return
    console.print("[bold]What would fit[/], best first (those that fit, then by cost: none < time < quality < "
                  "hardware)")
    for i, fix in enumerate(fixes, 1):
        after = "" if fix.per_gpu_bytes is None else f"{format_bytes(fix.per_gpu_bytes, binary=binary)} per GPU, "
        verdict = "[green]fits[/]" if fix.fits else "[red]does not fit[/]"
        time = "" if fix.time_factor is None else f", time ×{fix.time_factor:.2f}"
        console.print(f"  {i}. {escape(fix.change)}: {after}{verdict}; cost {fix.cost}: {escape(fix.cost_detail)}"
                      f"{time}", highlight=False)


def render_notes(console: Console, warnings: Iterable[Note],
                 sections: Iterable[tuple[str, Iterable[Note | str], str]], *, binary: bool) -> None:
    """Warnings, then titled sections of lines (the arithmetic, the assumptions) under any report's table, notes
    worded with byte counts in GiB when ``binary`` else GB. Lines are printed without rich markup: they hold
    brackets such as ``weights[mlp]``."""
    from rich.markup import escape

    for warning in warnings:
        console.print(f"[yellow]warning:[/] {escape(word(warning, binary=binary))}", highlight=False)
    for title, lines, prefix in sections:
        console.print(f"[bold]{title}[/]")
        for line in lines:
            text = line if isinstance(line, str) else word(line, binary=binary)
            console.print(f"{prefix}{text}", highlight=False, markup=False)
