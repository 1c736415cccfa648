"""Commands for the live GPU: gpu, monitor, calibrate, validate. Registered on the app in `estimator.cli.main`.

NVML is read through `estimator.live.probe` (``make_probe`` is replaced by a fake in tests); torch work lives in
`estimator.live.measure`, imported only when a command needs it, so ``import estimator`` stays light.
"""

from __future__ import annotations

import json
import shlex
import sys
import time
from datetime import datetime, timezone
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from estimator.catalog.registry import Catalog
from estimator.cli.options import OutputFormat, catalog_for, check_format
from estimator.errors import DeviceUnavailable, WorkloadInvalid
from estimator.inference.report import Report
from estimator.live.probe import (
    GpuProbe,
    LiveGpu,
    NvmlProbe,
    Snapshot,
    compare_with_spec,
    gpu_report,
    match_catalog,
)
from estimator.render.formats import write_report
from estimator.units import MIB, format_bytes

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table


LIVE_FORMATS = (OutputFormat.table, OutputFormat.json)  # gpu and validate


class Mode(str, Enum):
    infer = "infer"
    train = "train"


class LogitsChoice(str, Enum):
    last = "last"
    all = "all"
    both = "both"


class TrainDtype(str, Enum):
    amp = "amp"
    bf16 = "bf16"


def make_probe() -> GpuProbe:
    """The probe commands use; tests replace it with a `FakeProbe`."""
    return NvmlProbe()


def _read() -> Snapshot:
    probe = make_probe()
    try:
        return probe.read()
    finally:
        probe.close()


def _mib(n: int | None) -> str:
    return "—" if n is None else f"{n / MIB:,.0f} MiB"


def _opt(value: Any, unit: str = "") -> str:
    return "—" if value is None else f"{value:,}{unit}" if isinstance(value, int) else f"{value}{unit}"


def render_gpu(gpu: LiveGpu, snapshot: Snapshot, catalog: Catalog, console: Console) -> None:
    from rich.table import Table

    console.print(f"[bold]GPU {gpu.index}: {gpu.name}[/]  {gpu.uuid or ''}", highlight=False)
    facts = Table(show_header=False, box=None, pad_edge=False)
    facts.add_row("memory", f"total {_mib(gpu.memory_total_bytes)} ({gpu.memory_total_bytes:,} B), used "
                  f"{_mib(gpu.memory_used_bytes)}, free {_mib(gpu.memory_free_bytes)}, driver-reserved "
                  f"{_mib(gpu.memory_reserved_bytes)}")
    facts.add_row("memory bus", f"{_opt(gpu.bus_width_bits, ' bit')}, max memory clock "
                  f"{_opt(gpu.max_mem_clock_mhz, ' MHz')} (now {_opt(gpu.mem_clock_mhz, ' MHz')})")
    facts.add_row("implied bandwidth", gpu.bandwidth_arithmetic or "—")
    facts.add_row("PCIe", f"gen {_opt(gpu.pcie_gen_max)} x{_opt(gpu.pcie_width_max)}")
    facts.add_row("power limit", _opt(gpu.power_limit_w, " W"))
    facts.add_row("utilisation", f"GPU {_opt(gpu.utilization_gpu_pct, '%')}, memory "
                  f"{_opt(gpu.utilization_memory_pct, '%')}")
    facts.add_row("MIG", "—" if gpu.mig_enabled is None else "enabled" if gpu.mig_enabled else "disabled")
    facts.add_row("driver", f"{snapshot.driver_version or '—'}, CUDA {snapshot.cuda_driver_version or '—'}")
    for proc in gpu.processes:
        facts.add_row("process", f"{proc.pid} {proc.name or ''}: {_mib(proc.used_bytes)}")
    for missing in gpu.unavailable:
        facts.add_row("not available", missing)
    console.print(facts, highlight=False)
    spec = match_catalog(gpu, catalog)
    if spec is None:
        console.print("  catalog: no match (name and memory size); estimates need --gpu", highlight=False)
        return
    table = Table("quantity", "spec", "live", "difference", title=f"catalog match: {spec.name}")
    for c in compare_with_spec(gpu, spec):
        diff = c.difference
        table.add_row(f"{c.quantity} ({c.unit})", "—" if c.spec is None else f"{c.spec:,.0f}",
                      "—" if c.live is None else f"{c.live:,.0f}", "—" if diff is None else f"{diff:+.1%}")
    console.print(table)


def gpu_command(
    output_format: Annotated[OutputFormat, typer.Option("--format", "-f", help="table or json.")]
    = OutputFormat.table,
    specs_dir: Annotated[Path | None, typer.Option("--specs-dir", help="Another specs folder.")] = None,
) -> None:
    """Every visible GPU through NVML, matched to the catalog. Example: estimator gpu --format json"""
    from rich.console import Console

    check_format(output_format, LIVE_FORMATS)
    snapshot = _read()
    catalog = catalog_for(specs_dir)
    if output_format is OutputFormat.json:
        write_report("json", gpu_report(snapshot, catalog))
        return
    console = Console()
    for gpu in snapshot.gpus:
        render_gpu(gpu, snapshot, catalog, console)


# monitor ----------------------------------------------------------------------------------------------------

def expected_report(options: str, snapshot: Snapshot, catalog: Catalog) -> Report:
    """The estimate for ``--expect`` options (those of `estimate`); --gpu defaults to the live card's match."""
    from estimator.cli.estimate import report_for_args

    args = shlex.split(options)
    if "--gpu" not in args and "-g" not in args:
        spec = match_catalog(snapshot.gpus[0], catalog)
        if spec is None:
            raise WorkloadInvalid(f"{snapshot.gpus[0].name} is not in the catalog: give --gpu inside --expect")
        args += ["--gpu", spec.name]
    return report_for_args(args)


def monitor_lines(snapshot: Snapshot, expected: Report | None, stamp: str) -> list[str]:
    """Plain lines of one reading (what a pipe gets): one per GPU, one per process."""
    lines = []
    for gpu in snapshot.gpus:
        line = (f"{stamp} gpu{gpu.index} used {gpu.memory_used_bytes / MIB:,.0f} MiB of "
                f"{gpu.memory_total_bytes / MIB:,.0f} MiB util {_opt(gpu.utilization_gpu_pct, '%')} "
                f"memclk {_opt(gpu.mem_clock_mhz, ' MHz')}")
        if expected is not None and gpu.index == 0:
            predicted = expected.memory.per_gpu_bytes
            gap = gpu.memory_used_bytes - predicted
            line += (f" expected {predicted / MIB:,.0f} MiB gap {gap / MIB:+,.0f} MiB "
                     f"({gap / predicted:+.1%})")
        lines.append(line)
        lines += [f"{stamp} gpu{gpu.index} pid {p.pid} {p.name or '?'} {_mib(p.used_bytes)}" for p in gpu.processes]
    return lines


def monitor_table(snapshot: Snapshot, expected: Report | None, stamp: str) -> Table:
    from rich.table import Table

    table = Table("gpu", "used", "total", "util", "mem clock", "processes", title=f"estimator monitor — {stamp}")
    if expected is not None:
        table.add_column("expected (estimate)")
        table.add_column("gap")
    for gpu in snapshot.gpus:
        procs = ", ".join(f"{p.pid} {p.name or '?'} {_mib(p.used_bytes)}" for p in gpu.processes) or "—"
        cells = [f"{gpu.index} {gpu.name}", _mib(gpu.memory_used_bytes), _mib(gpu.memory_total_bytes),
                 _opt(gpu.utilization_gpu_pct, "%"), _opt(gpu.mem_clock_mhz, " MHz"), procs]
        if expected is not None:
            predicted = expected.memory.per_gpu_bytes
            gap = gpu.memory_used_bytes - predicted
            cells += [_mib(predicted), f"{gap / MIB:+,.0f} MiB ({gap / predicted:+.1%})"] if gpu.index == 0 \
                else ["", ""]
        table.add_row(*cells)
    return table


def monitor_command(
    interval: Annotated[float, typer.Option(help="Seconds between readings.", min=0.05)] = 1.0,
    count: Annotated[int | None, typer.Option(help="Stop after this many readings (default: until Ctrl-C).",
                                              min=1)] = None,
    expect: Annotated[str | None, typer.Option(help="Estimate options; shows the predicted total beside the "
                                               "measured one, e.g. --expect '--model llama-3.1-8b --batch 8'.")]
    = None,
    specs_dir: Annotated[Path | None, typer.Option("--specs-dir", help="Another specs folder.")] = None,
) -> None:
    """Live used memory, utilisation and memory clock, like nvidia-smi -l 1. Example: estimator monitor --count 5"""
    from rich.console import Console
    from rich.live import Live

    probe = make_probe()
    console = Console()
    try:
        snapshot = probe.read()
        expected = None if expect is None else expected_report(expect, snapshot, catalog_for(specs_dir))
        readings = 0

        def stamp() -> str:
            return datetime.now().strftime("%H:%M:%S")

        try:
            if console.is_terminal:
                with Live(monitor_table(snapshot, expected, stamp()), console=console, auto_refresh=False) as live:
                    while True:
                        readings += 1
                        if count is not None and readings >= count:
                            break
                        time.sleep(interval)
                        snapshot = probe.read()
                        live.update(monitor_table(snapshot, expected, stamp()), refresh=True)
            else:
                while True:
                    for line in monitor_lines(snapshot, expected, stamp()):
                        sys.stdout.write(line + "\n")
                    sys.stdout.flush()
                    readings += 1
                    if count is not None and readings >= count:
                        break
                    time.sleep(interval)
                    snapshot = probe.read()
        except KeyboardInterrupt:
            sys.stderr.write(f"stopped after {readings} readings\n")
    finally:
        probe.close()


# calibrate --------------------------------------------------------------------------------------------------

def calibrate_command(
    out: Annotated[Path | None, typer.Option(help="Calibration file to write (default: the user config dir's "
                                             "estimator/calibration.yaml, which estimate reads).")] = None,
    specs_dir: Annotated[Path | None, typer.Option("--specs-dir", help="Another specs folder.")] = None,
) -> None:
    """Measure this GPU (bandwidth, FLOP/s, overheads, graph cost) and write a calibration file.
    Example: estimator calibrate --out h200.yaml"""
    from rich.console import Console
    from rich.table import Table

    from estimator.live import measure
    from estimator.live.calibration import GpuCalibration, derive_overrides, save_calibration, user_calibration_path

    measure.require_torch()
    snapshot = _read()
    gpu = snapshot.gpus[0]
    spec = match_catalog(gpu, catalog_for(specs_dir))
    raw = measure.calibrate()
    overrides = derive_overrides(raw, spec, gpu.memory_total_bytes)
    entry = GpuCalibration(
        gpu=gpu.name, catalog_gpu=None if spec is None else spec.name,
        measured_at=datetime.now(timezone.utc).strftime("%Y-%m-%d"),
        software={"torch": str(raw.get("torch")), "cuda": str(raw.get("cuda_runtime")),
                  "driver": snapshot.driver_version or "?"},
        memory_total_bytes=gpu.memory_total_bytes,
        copy_bytes_per_s=raw["copy_bytes_per_s"], read_bytes_per_s=raw["read_bytes_per_s"],
        gemv_bytes_per_s=raw["gemv_bytes_per_s"], matmul_flop_per_s=raw["matmul_flop_per_s"],
        driver_reserved_bytes=raw["driver_reserved_bytes"], cuda_context_bytes=raw["cuda_context_bytes"],
        workspace_bytes=raw["workspace_bytes"], graph_kernel_s=raw["graph_kernel_s"],
        graph_layer_s=raw["graph_layer_s"], graph_bandwidth_bytes_per_s=raw["graph_bandwidth_bytes_per_s"],
        profile_overrides=overrides,
    )
    path = out if out is not None else user_calibration_path()
    save_calibration(path, entry)
    console = Console()
    table = Table("measured", "value", title=f"calibration of {gpu.name} → {path}")
    table.add_row("copy (read + write)", f"{entry.copy_bytes_per_s / 1e9:,.0f} GB/s")
    table.add_row("read (reduction)", f"{entry.read_bytes_per_s / 1e9:,.0f} GB/s")
    table.add_row("bf16 GEMV", f"{entry.gemv_bytes_per_s / 1e9:,.0f} GB/s")
    for dtype, rate in entry.matmul_flop_per_s.items():
        table.add_row(f"matmul {dtype} 8192³", f"{rate / 1e12:,.1f} TFLOP/s")
    table.add_row("driver reserved", format_bytes(entry.driver_reserved_bytes, binary=True))
    table.add_row("CUDA context", format_bytes(entry.cuda_context_bytes, binary=True))
    table.add_row("cuBLAS workspace", format_bytes(entry.workspace_bytes, binary=True))
    table.add_row("graph kernel", f"{entry.graph_kernel_s * 1e6:.2f} µs")
    table.add_row("lean decode per layer", f"{entry.graph_layer_s * 1e6:.1f} µs")
    table.add_row("lean decode bandwidth", f"{entry.graph_bandwidth_bytes_per_s / 1e9:,.0f} GB/s")
    for key, value in overrides.items():
        table.add_row(f"profile: {key}", f"{value:.4g}")
    console.print(table)
    if spec is None:
        console.print(f"{gpu.name} is not in the catalog: efficiency fractions were not derived", highlight=False)


# validate ---------------------------------------------------------------------------------------------------

def validate_command(
    model: Annotated[str, typer.Option("--model", "-m", help="Catalog model name.")],
    batch: Annotated[int, typer.Option(min=1, help="Sequences.")] = 1,
    prompt_tokens: Annotated[int, typer.Option(min=1, help="Prompt (infer) or sequence (train) length.")] = 2048,
    mode: Annotated[Mode, typer.Option(help="infer or train.")] = Mode.infer,
    logits: Annotated[LogitsChoice, typer.Option(help="Prefill logits: last, all or both.")] = LogitsChoice.both,
    lean: Annotated[bool, typer.Option(help="Also time a lean CUDA-graph decode (optimized profile).")] = True,
    train_dtype: Annotated[TrainDtype, typer.Option(help="amp (fp32 weights, bf16 autocast) or bf16.")]
    = TrainDtype.amp,
    checkpointing: Annotated[bool, typer.Option(help="Gradient checkpointing (train).")] = False,
    gpu: Annotated[str | None, typer.Option(help="Catalog card for predictions (default: the live match).")]
    = None,
    output_format: Annotated[OutputFormat, typer.Option("--format", "-f", help="table or json.")]
    = OutputFormat.table,
    save: Annotated[Path | None, typer.Option(help="Append the measured rows (JSON lines) to this file.")] = None,
    specs_dir: Annotated[Path | None, typer.Option("--specs-dir", help="Another specs folder.")] = None,
) -> None:
    """Run the model on this GPU (random weights) and compare with the estimate.
    Example: estimator validate --model llama-3.1-8b --batch 1 --prompt-tokens 2048"""
    from rich.console import Console
    from rich.table import Table

    from estimator.live import measure
    from estimator.live.validation import Predictor, ValidateReport, points

    check_format(output_format, LIVE_FORMATS)
    catalog = catalog_for(specs_dir)
    spec_model = catalog.models.get(model)
    if spec_model.arch is None:
        raise WorkloadInvalid(f"{model} has no architecture to build")
    measure.require_torch()
    measure.require_cuda()
    measure.require_transformers()
    config = _catalog_config(catalog, spec_model.name)
    if gpu is not None:
        gpu_spec = catalog.gpus.get(gpu)
    else:
        live = _read().gpus[0]
        found = match_catalog(live, catalog)
        if found is None:
            raise DeviceUnavailable(f"{live.name} is not in the catalog: give --gpu for the predictions")
        gpu_spec = found
    if mode is Mode.train:
        row = measure.measure_train(config, mode=train_dtype.value, batch=batch, seq=prompt_tokens,
                                    checkpointing=checkpointing)
        rows = [{**row, "model": spec_model.name}]
    else:
        keeps = {"last": (1,), "all": (0,), "both": (1, 0)}[logits.value]
        rows = measure.inference_rows(spec_model.name, config, prefill=[(batch, prompt_tokens)],
                                      decode=[(batch, prompt_tokens)], lean=[(batch, prompt_tokens)] if lean else [],
                                      logits=keeps)
    if save is not None:
        with save.open("a", encoding="utf-8") as f:
            for row in rows:
                f.write(json.dumps(row) + "\n")
    pts = list(points(rows, Predictor.default(catalog, gpu_spec)))
    errors = [r for r in rows if r.get("error")]
    if output_format is OutputFormat.json:
        write_report("json", ValidateReport(model=spec_model.name, gpu=gpu_spec.name, rows=tuple(rows),
                                            points=tuple(p.record() for p in pts)))
        return
    console = Console()
    table = Table("case", "term", "predicted", "measured", "error", "target",
                  title=f"{spec_model.name} on {gpu_spec.name}: predicted vs measured")
    for p in pts:
        verdict = "" if p.ok is None else " ✓" if p.ok else " ✗"
        if p.kind == "bound":
            table.add_row(p.case, p.term, _value(p.term, p.predicted), _value(p.term, p.measured),
                          f"{p.predicted / p.measured:.0%} of measured", "≤ measured" + verdict)
        else:
            target = "" if p.target is None else f"±{p.target:.1%}"
            table.add_row(p.case, p.term, _value(p.term, p.predicted), _value(p.term, p.measured),
                          f"{p.error:+.1%}", target + verdict)
    console.print(table)
    if mode is Mode.train:
        row = rows[0]
        console.print(f"train {train_dtype.value} b{batch} s{prompt_tokens} checkpointing={checkpointing}: steady "
                      f"peak {format_bytes(row['steady_peak'], binary=True)}, first step peak "
                      f"{format_bytes(row['first_step_peak'], binary=True)}, step {row['latency']['median_s']:.3f} s",
                      highlight=False)
    for row in errors:
        console.print(f"failed: {row.get('phase', row['kind'])} {row['error']}", highlight=False)


def _value(term: str, value: float) -> str:
    return f"{value * 1e3:,.2f} ms" if term.endswith(("_s", "bound", " hf", " optimized")) \
        else format_bytes(value, binary=True)


def _catalog_config(catalog: Catalog, name: str) -> dict[str, Any]:
    """The published config.json of a catalog model (its YAML's ``config:`` mapping)."""
    from estimator.catalog.registry import read_yaml

    for path in sorted((catalog.root / "models").glob("*.yaml")):
        data = read_yaml(path)
        if isinstance(data, dict) and data.get("name", path.stem) == name:
            return dict(data["config"])
    raise WorkloadInvalid(f"{name} has no config in the catalog folder")  # pragma: no cover


