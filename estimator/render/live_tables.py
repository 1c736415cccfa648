"""Tables of the live commands: one GPU as NVML sees it (``estimator gpu``), and predicted against measured
(``estimator validate``). Renderers format; they never compute."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from rich.markup import escape

from estimator.live.probe import LiveGpu, Snapshot, compare_with_spec, match_catalog
from estimator.render.fit import Column, fitted, print_table
from estimator.units import MIB, format_bytes

if TYPE_CHECKING:
    from rich.console import Console, Group

    from estimator.catalog.registry import Catalog
    from estimator.inference.report import Report
    from estimator.live.calibration import GpuCalibration
    from estimator.live.validation import Point


def mib_text(n: int | None) -> str:
    return "—" if n is None else f"{n / MIB:,.0f} MiB"


def optional_text(value: Any, unit: str = "") -> str:
    return "—" if value is None else f"{value:,}{unit}" if isinstance(value, int) else f"{value}{unit}"


def render_gpu(gpu: LiveGpu, snapshot: Snapshot, catalog: Catalog, console: Console) -> None:
    from rich.table import Table

    console.print(f"[bold]GPU {gpu.index}: {gpu.name}[/]  {gpu.uuid or ''}", highlight=False)
    facts = Table(show_header=False, box=None, pad_edge=False)
    facts.add_row("memory", f"total {mib_text(gpu.memory_total_bytes)} ({gpu.memory_total_bytes:,} B), used "
                  f"{mib_text(gpu.memory_used_bytes)}, free {mib_text(gpu.memory_free_bytes)}, driver-reserved "
                  f"{mib_text(gpu.memory_reserved_bytes)}")
    facts.add_row("memory bus", f"{optional_text(gpu.bus_width_bits, ' bit')}, max memory clock "
                  f"{optional_text(gpu.max_mem_clock_mhz, ' MHz')} (now {optional_text(gpu.mem_clock_mhz, ' MHz')})")
    facts.add_row("implied bandwidth", gpu.bandwidth_arithmetic or "—")
    facts.add_row("PCIe", f"gen {optional_text(gpu.pcie_gen_max)} x{optional_text(gpu.pcie_width_max)}")
    facts.add_row("power limit", optional_text(gpu.power_limit_w, " W"))
    facts.add_row("utilisation", f"GPU {optional_text(gpu.utilization_gpu_pct, '%')}, memory "
                  f"{optional_text(gpu.utilization_memory_pct, '%')}")
    facts.add_row("MIG", "—" if gpu.mig_enabled is None else "enabled" if gpu.mig_enabled else "disabled")
    facts.add_row("driver", f"{snapshot.driver_version or '—'}, CUDA {snapshot.cuda_driver_version or '—'}")
    for proc in gpu.processes:
        facts.add_row("process", f"{proc.pid} {proc.name or ''}: {mib_text(proc.used_bytes)}")
    for missing in gpu.unavailable:
        facts.add_row("not available", missing)
    console.print(facts, highlight=False)
    spec = match_catalog(gpu, catalog)
    if spec is None:
        console.print("  catalog: no match (name and memory size); estimates need --gpu", highlight=False)
        return
    rows = [[f"{c.quantity} ({c.unit})", "—" if c.spec is None else f"{c.spec:,.0f}",
             "—" if c.live is None else f"{c.live:,.0f}", "—" if c.difference is None else f"{c.difference:+.1%}"]
            for c in compare_with_spec(gpu, spec)]
    print_table(console, [Column("quantity", wrap=True), Column("spec"), Column("live"), Column("difference")], rows,
                title=f"catalog match: {escape(spec.name)}")


def render_validation(console: Console, title: str, pts: Sequence[Point]) -> None:
    """Predicted against measured, one row per compared term, with the verdict against its target."""
    rows = []
    for p in pts:
        verdict = "" if p.ok is None else " ✓" if p.ok else " ✗"
        if p.kind == "bound":
            rows.append([p.case, p.term, _value(p.term, p.predicted), _value(p.term, p.measured),
                         f"{p.fraction_of_measured:.0%} of measured", "≤ measured" + verdict])
        else:
            target = "" if p.target is None else f"±{p.target:.1%}"
            rows.append([p.case, p.term, _value(p.term, p.predicted), _value(p.term, p.measured),
                         f"{p.error:+.1%}", target + verdict])
    columns = [Column("case", wrap=True), Column("term", wrap=True), Column("predicted"), Column("measured"),
               Column("error", wrap=True), Column("target", wrap=True)]
    print_table(console, columns, [[escape(cell) for cell in row] for row in rows], key=2,
                title=f"{escape(title)}: predicted vs measured")


def monitor_table(snapshot: Snapshot, expected: Report | None, stamp: str, width: int) -> Group:
    """One reading of `estimator monitor` laid out for ``width`` columns (names and processes break between words)."""
    from rich.console import Group

    columns = [Column("gpu", wrap=True), Column("used"), Column("total"), Column("util"), Column("mem clock"),
               Column("processes", wrap=True)]
    if expected is not None:
        columns += [Column("expected (estimate)"), Column("gap")]
    rows = []
    for gpu in snapshot.gpus:
        procs = ", ".join(f"{p.pid} {p.name or '?'} {mib_text(p.used_bytes)}" for p in gpu.processes) or "—"
        cells = [f"{gpu.index} {gpu.name}", mib_text(gpu.memory_used_bytes), mib_text(gpu.memory_total_bytes),
                 optional_text(gpu.utilization_gpu_pct, "%"), optional_text(gpu.mem_clock_mhz, " MHz"), procs]
        if expected is not None:
            predicted = expected.memory.per_gpu_bytes
            gap = gpu.memory_used_bytes - predicted
            cells += [mib_text(predicted), f"{gap / MIB:+,.0f} MiB ({gap / predicted:+.1%})"] if gpu.index == 0 \
                else ["", ""]
        rows.append([escape(cell) for cell in cells])
    return Group(*fitted(width, columns, rows, title=f"estimator monitor — {escape(stamp)}"))


def render_calibration(console: Console, entry: GpuCalibration, path: str) -> None:
    """What `estimator calibrate` measured and the profile values it derived, laid out for the console's width."""
    rows = [["copy (read + write)", f"{entry.copy_bytes_per_s / 1e9:,.0f} GB/s"],
            ["read (reduction)", f"{entry.read_bytes_per_s / 1e9:,.0f} GB/s"],
            ["bf16 GEMV", f"{entry.gemv_bytes_per_s / 1e9:,.0f} GB/s"]]
    rows += [[f"matmul {dtype} 8192³", f"{rate / 1e12:,.1f} TFLOP/s"]
             for dtype, rate in entry.matmul_flop_per_s.items()]
    rows += [["driver reserved", format_bytes(entry.driver_reserved_bytes, binary=True)],
             ["CUDA context", format_bytes(entry.cuda_context_bytes, binary=True)],
             ["cuBLAS workspace", format_bytes(entry.workspace_bytes, binary=True)],
             ["graph kernel", f"{entry.graph_kernel_s * 1e6:.2f} µs"],
             ["lean decode per layer", f"{entry.graph_layer_s * 1e6:.1f} µs"],
             ["lean decode bandwidth", f"{entry.graph_bandwidth_bytes_per_s / 1e9:,.0f} GB/s"]]
    if entry.host_bare_op_s is not None or entry.host_per_op_s is not None:  # files before 2026-12 have neither
        bare, layer = entry.host_bare_op_s, entry.host_per_op_s
        rows += [["host: one bare operation", "—" if bare is None else f"{bare * 1e6:.2f} µs"],
                 ["host: one transformers operation",
                  "not measured (needs transformers)" if layer is None else f"{layer * 1e6:.2f} µs"]]
    rows += [[f"profile: {key}", f"{value:.4g}"] for key, value in entry.profile_overrides.items()]
    print_table(console, [Column("measured", wrap=True), Column("value")], [[escape(c) for c in row] for row in rows],
                title=f"calibration of {escape(entry.gpu)} → {escape(path)}")


def _value(term: str, value: float) -> str:
    return f"{value * 1e3:,.2f} ms" if term.endswith(("_s", "bound", " hf", " optimized")) \
        else format_bytes(value, binary=True)
